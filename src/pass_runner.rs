//! Running a tile/nv pipeline the way the tools and the library do: with
//! mlir-opt's instrumentation from the pass flags, the passes' warnings and
//! remarks collected, the pipeline spelled out for `--dump-pass-pipeline`,
//! and a pass's failure rendered with its source line.

use std::io::Write;
use tilec_cli::PassFlags;
use tilec_dialects::{print_module, Diagnostic, Module, PrintOptions, Severity};
use tilec_passes::manager::add_diagnostics;
use tilec_passes::{parse_pipeline, Instrumentation, OptionKind, PassError, PassManager, PassOptions};

/// The tile/nv pass instrumentation the flags ask for.
pub fn instrumentation(flags: &PassFlags, print: PrintOptions) -> Instrumentation {
    Instrumentation {
        verify_each: flags.verify_each,
        print_after_all: flags.print_ir_after_all,
        print_after: flags.print_ir_after.clone(),
        print_after_failure: flags.print_ir_after_failure,
        timing: flags.timing,
        statistics: flags.statistics,
        print,
    }
}

/// Runs the tile/nv `pipeline` on `module` with the instrumentation `flags`
/// ask for; IR dumps and timing go to `log`, the passes' warnings (each
/// once) and, with `flags.remarks`, their remarks to `diagnostics`, also
/// when the pipeline fails. Printing before a
/// pass, or only after a change, runs one pass manager per pass, printing
/// around each. With `start_at_input_phase`, each function skips the
/// passes its input is already past (the default pipeline takes nv-level
/// input too).
pub fn run_pipeline(
    module: &mut Module,
    pipeline: &str,
    flags: &PassFlags,
    print: PrintOptions,
    start_at_input_phase: bool,
    log: &mut dyn Write,
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<(), PassError> {
    let mut keep = |new: Vec<Diagnostic>| {
        let asked = new.into_iter().filter(|d| flags.remarks || d.severity != Severity::Remark).collect();
        add_diagnostics(diagnostics, asked)
    };
    let instrumentation = instrumentation(flags, print);
    let mut whole = PassManager::from_pipeline(pipeline, instrumentation.clone())?;
    if start_at_input_phase {
        whole.start_at_input_phase();
    }
    if !flags.steps_passes() {
        let ran = whole.run(module, log);
        keep(whole.take_diagnostics());
        return ran;
    }
    // Stepping runs one manager per pass: the order is checked as a whole first.
    whole.check_order(module)?;
    let step_instrumentation = Instrumentation { print_after_all: false, print_after: Vec::new(), ..instrumentation };
    for entry in parse_pipeline(pipeline).map_err(PassError::Pipeline)? {
        let name = entry.info.name;
        let before = print_module(module, print);
        if flags.print_ir_before_all || flags.print_ir_before.iter().any(|p| p == name) {
            dump(log, &format!("IR Dump Before {name}"), &before);
        }
        let mut pm = PassManager::new(step_instrumentation.clone());
        pm.add((entry.info.create)(&entry.options), &entry.info.phases);
        if start_at_input_phase {
            pm.start_at_input_phase();
        }
        let ran = pm.run(module, log);
        keep(pm.take_diagnostics());
        ran?;
        if flags.print_ir_after_all || flags.print_ir_after.iter().any(|p| p == name) {
            let after = print_module(module, print);
            if !flags.print_ir_after_change || after != before {
                dump(log, &format!("IR Dump After {name}"), &after);
            }
        }
    }
    Ok(())
}

/// One IR dump, headed as MLIR heads them.
fn dump(log: &mut dyn Write, title: &str, ir: &str) {
    // A log that cannot be written is not worth failing the compile over.
    let _ = writeln!(log, "// -----// {title} //----- //\n{ir}");
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
    let passes = spell_out(pipeline)?;
    Ok(format!("Pass Manager with {} passes:\nbuiltin.module({})\n", passes.len(), passes.join(",")))
}

/// `--dump-pass-pipeline` for the passes a `tile.config` asks for: the
/// selection pass spelled out where it runs (none for a file that already
/// holds a decision), then the passes the config names as they run, without
/// options, since each reads the ones it is not given from the function's
/// `tile.config` (default values would misstate them).
pub fn describe_config_pipeline(select: Option<&str>, rest: &str) -> Result<String, String> {
    let mut passes = match select {
        Some(select) => spell_out(select)?,
        None => Vec::new(),
    };
    passes.extend(parse_pipeline(rest).map_err(|e| format!("invalid pass pipeline: {e}"))?.iter().map(|e| e.info.name.to_string()));
    Ok(format!("Pass Manager with {} passes (options left out come from tile.config):\nbuiltin.module({})\n", passes.len(), passes.join(",")))
}

/// Each pass of `pipeline` with every option spelled out.
fn spell_out(pipeline: &str) -> Result<Vec<String>, String> {
    let entries = parse_pipeline(pipeline).map_err(|e| format!("invalid pass pipeline: {e}"))?;
    Ok(entries
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
        .collect())
}

/// The located error of a failed pass, if it has one.
pub fn pass_diagnostic(e: &PassError) -> Option<&Diagnostic> {
    match e {
        PassError::Pipeline(_) => None,
        PassError::Order(diagnostic)
        | PassError::PassFailed { diagnostic, .. }
        | PassError::VerificationFailed { diagnostic, .. } => Some(diagnostic),
    }
}

/// A pass error as the tools print it: the diagnostic with its source line
/// (`file`'s text is `text`), then which pass failed.
pub fn render_pass_error(e: &PassError, file: &str, text: &str) -> String {
    match e {
        PassError::Pipeline(_) => e.to_string(),
        PassError::Order(diagnostic) => diagnostic.render(file, text),
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
    fn dump_pass_pipeline_fills_in_defaults() {
        let text = describe_pipeline("tile-canonicalize,tile-licm").unwrap();
        assert_eq!(text, "Pass Manager with 2 passes:\nbuiltin.module(tile-canonicalize{max-iterations=10},tile-licm)\n");
        assert!(describe_pipeline("tile-bogus").unwrap_err().contains("unknown pass 'tile-bogus'"));
    }
}
