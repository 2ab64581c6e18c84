//! Generates each dialect's ops from its definition file (`src/*/ops.ods`)
//! with tilec-odsgen; the dialect modules `include!` the result.

use std::path::PathBuf;

const DIALECTS: [(&str, &str, &str); 2] =
    [("src/tile/ops.ods", "crate::tile", "tile_ops.rs"), ("src/nv/ops.ods", "crate::nv", "nv_ops.rs")];

fn main() {
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let sources: Vec<String> = DIALECTS
        .iter()
        .map(|(path, _, _)| {
            println!("cargo:rerun-if-changed={path}");
            std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"))
        })
        .collect();
    let inputs: Vec<(&str, &str)> = sources.iter().zip(DIALECTS).map(|(src, (_, module, _))| (src.as_str(), module)).collect();
    let generated = tilec_odsgen::generate(&inputs).unwrap_or_else(|e| panic!("op definitions: {e}"));
    std::fs::write(out.join("opcode.rs"), generated.opcodes).expect("writing opcode.rs");
    for (code, (_, _, file)) in generated.dialects.iter().zip(DIALECTS) {
        std::fs::write(out.join(file), code).unwrap_or_else(|e| panic!("writing {file}: {e}"));
    }
}
