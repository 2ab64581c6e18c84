//! What `tile-opt` and `tilec` share beyond the `tilec-cli` conventions and
//! the pass runner (`pass_runner.rs`): the input as source text, the pass
//! list, and `--target`'s values.

use tilec_cli::{read_input, Failure};
use tilec_passes::{OptionKind, PASSES};

/// The input named on the command line as source text: a byte that is not
/// UTF-8 is a located error.
pub fn read_source(path: Option<&str>) -> Result<(String, String), Failure> {
    let (bytes, name) = read_input(path)?;
    let text = tilec_dialects::syntax::decode_source(&bytes, &name).map_err(|d| Failure::Error(d.to_string()))?;
    Ok((text, name))
}

/// How an option's values are written in `--list-passes`: `<int 1..1000>`.
fn kind_text(kind: OptionKind) -> String {
    match kind {
        OptionKind::Int { min, max } => format!("<int {min}..{max}>"),
        OptionKind::Bool => "<bool>".to_string(),
        OptionKind::Enum(words) => format!("<{}>", words.join("|")),
    }
}

/// `--list-passes`: every registered pass, its summary and its options.
pub fn list_passes() -> String {
    let width = PASSES.iter().map(|p| p.name.len()).max().unwrap_or(0);
    let mut out = String::from("Available passes:\n");
    for pass in PASSES {
        out.push_str(&format!("  {:<width$}  {}\n", pass.name, pass.summary));
        for o in pass.options {
            out.push_str(&format!("      --{}={}  {} (default {})\n", o.name, kind_text(o.kind), o.help, o.default));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_passes_is_readable() {
        let text = list_passes();
        assert!(text.contains("--max-iterations=<int 1..1000>"), "{text}");
        assert!(!text.contains("Int {"), "no Rust Debug text: {text}");
        for pass in PASSES {
            assert!(text.contains(pass.name), "{}", pass.name);
        }
    }
}

/// `--target`'s values, listed in `--help` and in the error for any other
/// (`tilec compile`, `tilec calibrate`).
pub(crate) fn target_parser() -> impl clap::builder::TypedValueParser<Value = &'static tilec_target::Target> {
    use clap::builder::{PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new(tilec_target::Target::NAMES).try_map(|name| tilec_target::Target::from_name(&name))
}
