#![warn(missing_docs)]
//! tilec's op definition generator, in the manner of MLIR's ODS: each
//! dialect declares its ops once in a `.ods` file (operands, results,
//! attributes, traits, an assembly format), and this crate writes the Rust
//! that `dialects/build.rs` puts in `OUT_DIR`: the `Opcode` enum, the op
//! tables, a typed view and builder per op, and the parser, printer and
//! structural verifier each format implies. Hand-written code keeps only
//! what a definition cannot say: custom syntax and semantic checks.
//!
//! ```
//! let src = "dialect toy\n\
//!            op toy.neg Neg {\n\
//!              summary: the negation of a scalar\n\
//!              traits: pure\n\
//!              operands: input: any\n\
//!              results: result: any\n\
//!              types-match: input, result\n\
//!              format: $input attr-dict `:` type($result)\n\
//!            }\n";
//! let generated = tilec_odsgen::generate(&[(src, "crate::toy")]).unwrap();
//! assert!(generated.opcodes.contains("/// `toy.neg`: the negation of a scalar\n    ToyNeg,"));
//! assert!(generated.dialects[0].contains("pub struct Neg(Op);"));
//!
//! let misspelt = src.replace("summary", "sumary");
//! let err = tilec_odsgen::generate(&[(&misspelt, "crate::toy")]).map(drop).unwrap_err();
//! assert_eq!(err, "definition file #0: line 3: unknown key 'sumary'");
//! ```

pub mod def;
pub mod format;
pub mod gen;

pub use def::{parse_dialect, Dialect};

/// Generated sources: the `Opcode` enum and one file per dialect.
pub struct Generated {
    /// The `Opcode` enum over every dialect.
    pub opcodes: String,
    /// Each dialect's op table, views, builders, parsers and printers, in input order.
    pub dialects: Vec<String>,
}

/// Reads each `(source, module path)` and generates its code; an error names
/// the file's position in `inputs` and the line.
pub fn generate(inputs: &[(&str, &str)]) -> Result<Generated, String> {
    let dialects: Vec<Dialect> =
        inputs.iter().enumerate().map(|(i, (src, _))| parse_dialect(src).map_err(|e| format!("definition file #{i}: {e}"))).collect::<Result<_, _>>()?;
    let pairs: Vec<(&Dialect, &str)> = dialects.iter().zip(inputs.iter().map(|(_, m)| *m)).collect();
    let mut names = std::collections::HashSet::new();
    for d in &dialects {
        for op in &d.ops {
            if !names.insert(op.name.as_str()) {
                return Err(format!("op '{}' is defined twice", op.name));
            }
        }
    }
    Ok(Generated { opcodes: gen::opcodes(&pairs), dialects: dialects.iter().map(gen::dialect).collect() })
}
