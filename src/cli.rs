//! What `tile-opt` and `tilec` share beyond the `tilec-cli` conventions: the
//! pass list and pipeline as text, instrumentation from the mlir-opt flags,
//! and errors rendered with their source line.

use tilec_cli::PassFlags;
use tilec_dialects::{Diagnostic, PrintOptions};
use tilec_passes::{parse_pipeline, Instrumentation, OptionKind, PassError, PassOptions, PASSES};

/// The tile/nv pass instrumentation the flags ask for.
pub fn instrumentation(flags: &PassFlags, print: PrintOptions) -> Instrumentation {
    Instrumentation {
        verify_each: flags.verify_each,
        print_after_all: flags.print_ir_after_all,
        print_after: flags.print_ir_after.clone(),
        print_after_failure: flags.print_ir_after_failure,
        timing: flags.timing,
        print,
    }
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

/// One option's resolved value, as a pipeline writes it.
fn option_value(options: &PassOptions, name: &str, kind: OptionKind) -> String {
    match kind {
        OptionKind::Int { .. } => options.int(name).to_string(),
        OptionKind::Bool => options.bool(name).to_string(),
        OptionKind::Enum(_) => options.word(name).to_string(),
    }
}

/// `--dump-pass-pipeline`: the pipeline with every option spelled out, as
/// mlir-opt prints it.
pub fn describe_pipeline(pipeline: &str) -> Result<String, String> {
    let entries = parse_pipeline(pipeline).map_err(|e| format!("invalid pass pipeline: {e}"))?;
    let passes: Vec<String> = entries
        .iter()
        .map(|e| {
            let options: Vec<String> =
                e.info.options.iter().map(|o| format!("{}={}", o.name, option_value(&e.options, o.name, o.kind))).collect();
            if options.is_empty() {
                e.info.name.to_string()
            } else {
                format!("{}{{{}}}", e.info.name, options.join(" "))
            }
        })
        .collect();
    Ok(format!("Pass Manager with {} passes:\nbuiltin.module({})\n", entries.len(), passes.join(",")))
}

/// The located error of a failed pass, if it has one.
pub fn pass_diagnostic(e: &PassError) -> Option<&Diagnostic> {
    match e {
        PassError::Pipeline(_) => None,
        PassError::PassFailed { diagnostic, .. } | PassError::VerificationFailed { diagnostic, .. } => Some(diagnostic),
    }
}

/// A pass error as the tools print it: the diagnostic with its source line
/// (`file`'s text is `text`), then which pass failed.
pub fn render_pass_error(e: &PassError, file: &str, text: &str) -> String {
    match e {
        PassError::Pipeline(_) => e.to_string(),
        PassError::PassFailed { pass, diagnostic } => format!("{}\nnote: pass '{pass}' failed", diagnostic.render(file, text)),
        PassError::VerificationFailed { pass, diagnostic } => {
            format!("{}\nnote: the IR failed verification after pass '{pass}'", diagnostic.render(file, text))
        }
    }
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

    #[test]
    fn dump_pass_pipeline_fills_in_defaults() {
        let text = describe_pipeline("tile-canonicalize,tile-licm").unwrap();
        assert_eq!(text, "Pass Manager with 2 passes:\nbuiltin.module(tile-canonicalize{max-iterations=10},tile-licm)\n");
        assert!(describe_pipeline("tile-bogus").unwrap_err().contains("unknown pass 'tile-bogus'"));
    }
}
