//! `tile-opt`: reads tile IR, runs a pass pipeline, prints the result, as
//! `mlir-opt` does, with mlir-opt's flags (`--split-input-file`,
//! `--verify-diagnostics`, `--mlir-print-ir-after=...`, ...). Each registered
//! pass is also a flag of its own: `--tile-pipeline="stages=3"`.

use crate::source::read_source;
use crate::split_input;
use crate::verify_diagnostics::{verify, Emitted};
use tilec::pass_runner::{describe_pipeline, pass_diagnostic, render_pass_error, run_pipeline};
use clap::{Arg, ArgAction, ArgMatches, CommandFactory, FromArgMatches, Parser};
use std::io::Write;
use std::process::ExitCode;
use tilec_cli::{exit_code, CompletionArgs, Failure, PassFlags};
use tilec_dialects::{parse_module, print_module, verify_module, Diagnostic, Diagnostics, PrintOptions};
use tilec_passes::{OptionKind, PASSES};

/// The tile IR optimizer driver: parse, verify, run passes, print.
#[derive(Parser, Debug)]
#[command(name = "tile-opt", version, about = "Runs tile/nv IR passes, as mlir-opt does", after_help = "Each registered pass is also a flag: --PASS or --PASS=\"key=value ...\" appends it to the pipeline (see --list-passes).")]
struct Cli {
    /// Input file; '-' or none reads stdin
    input: Option<String>,
    /// Write the output to FILE instead of stdout
    #[arg(short = 'o', value_name = "FILE")]
    output: Option<String>,
    #[command(flatten)]
    passes: PassFlags,
    /// Print ops in MLIR's generic form
    #[arg(long = "mlir-print-op-generic")]
    print_generic: bool,
    /// Split the input at MARKER lines ('// -----' if none is given) and process each chunk on its own
    #[arg(long = "split-input-file", value_name = "MARKER", num_args = 0..=1, require_equals = true,
          default_missing_value = split_input::SEPARATOR)]
    split_input_file: Option<String>,
    /// The line written between the outputs of the chunks of --split-input-file
    #[arg(long = "output-split-marker", value_name = "MARKER", default_value = split_input::SEPARATOR)]
    output_split_marker: String,
    /// Check the diagnostics against the input's 'expected-error' comments instead of printing them
    #[arg(long = "verify-diagnostics")]
    verify_diagnostics: bool,
    /// List the registered passes and their options
    #[arg(long = "list-passes")]
    list_passes: bool,
    #[command(flatten)]
    completions: CompletionArgs,
}

/// The clap command with one flag per registered pass.
fn command() -> clap::Command {
    PASSES.iter().fold(Cli::command(), |cmd, pass| {
        cmd.arg(
            Arg::new(pass.name)
                .long(pass.name)
                .help(pass.summary)
                .value_name("OPTIONS")
                .num_args(0..=1)
                .require_equals(true)
                .default_missing_value("")
                .action(ArgAction::Append)
                .help_heading("Passes"),
        )
    })
}

/// The pipeline: `--pass-pipeline` followed by the per-pass flags in command-line order.
fn pipeline(cli: &Cli, matches: &ArgMatches) -> String {
    let mut flagged: Vec<(usize, String)> = Vec::new();
    for pass in PASSES {
        let (Some(indices), Some(values)) = (matches.indices_of(pass.name), matches.get_many::<String>(pass.name)) else { continue };
        for (index, options) in indices.zip(values) {
            let options = options.trim_matches('"');
            flagged.push((index, if options.is_empty() { pass.name.to_string() } else { format!("{}{{{options}}}", pass.name) }));
        }
    }
    flagged.sort();
    cli.passes.pass_pipeline.iter().cloned().filter(|p| !p.is_empty()).chain(flagged.into_iter().map(|(_, p)| p)).collect::<Vec<_>>().join(",")
}

/// Runs `tile-opt` on the process's arguments.
pub fn main() -> ExitCode {
    let matches = command().get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    exit_code("tile-opt", run(&cli, &matches))
}

/// What one chunk of input came to, besides its warnings.
enum Outcome {
    Output(String),
    /// A located error (with the rendered text for when it is printed).
    Diagnostic(Vec<Emitted>, String),
}

fn run(cli: &Cli, matches: &ArgMatches) -> Result<(), Failure> {
    if cli.completions.print_for(command()) {
        return Ok(());
    }
    if cli.list_passes {
        print!("{}", list_passes());
        return Ok(());
    }
    let pipeline = pipeline(cli, matches);
    // A bad pipeline is an error of the command, not of any one chunk.
    let described = describe_pipeline(&pipeline).map_err(Failure::Error)?;
    if cli.passes.dump_pass_pipeline {
        eprint!("{described}");
    }
    let (text, name) = read_source(cli.input.as_deref())?;
    let chunks = match &cli.split_input_file {
        Some(marker) => split_input::split(&text, marker),
        None => vec![text.clone()],
    };
    let mut outputs = Vec::new();
    let mut failed = false;
    for chunk in &chunks {
        let mut diagnostics = Vec::new();
        let outcome = run_chunk(cli, &pipeline, chunk, &name, &mut diagnostics)?;
        let mut emitted: Vec<Emitted> = diagnostics.iter().flat_map(Emitted::from_diagnostic).collect();
        if !cli.verify_diagnostics {
            diagnostics.iter().for_each(|d| eprintln!("{}", d.render(&name, chunk)));
        }
        match outcome {
            Outcome::Output(out) => outputs.push(out),
            Outcome::Diagnostic(errors, rendered) => {
                if !cli.verify_diagnostics {
                    eprintln!("{rendered}");
                    failed = true;
                }
                emitted.extend(errors);
            }
        }
        if cli.verify_diagnostics {
            // Every chunk is checked: one that compiled must not expect a diagnostic either.
            let problems = verify(&name, chunk, &emitted);
            failed |= !problems.is_empty();
            problems.iter().for_each(|p| eprintln!("{p}"));
        }
    }
    write_output(cli.output.as_deref(), &outputs.join(&format!("{}\n", cli.output_split_marker)))?;
    if failed {
        return Err(Failure::Reported);
    }
    Ok(())
}

/// Parses, verifies and runs the pipeline on one chunk; the passes'
/// warnings (and remarks, with `--remarks`) go to `diagnostics`.
fn run_chunk(cli: &Cli, pipeline: &str, text: &str, name: &str, diagnostics: &mut Vec<Diagnostic>) -> Result<Outcome, Failure> {
    let parsed = parse_module(text, name).map_err(Diagnostics::from);
    let mut module = match parsed.and_then(|m| verify_module(&m).map(|()| m)) {
        Ok(m) => m,
        Err(all) => {
            let emitted = all.0.iter().flat_map(Emitted::from_diagnostic).collect();
            return Ok(Outcome::Diagnostic(emitted, all.render(name, text)));
        }
    };
    let print = PrintOptions { generic: cli.print_generic };
    let mut flags = cli.passes.clone();
    // An expected failure is checked, not shown: no IR dump for it.
    flags.print_ir_after_failure &= !cli.verify_diagnostics;
    if let Err(e) = run_pipeline(&mut module, pipeline, &flags, print, false, &mut std::io::stderr(), diagnostics) {
        let rendered = render_pass_error(&e, name, text);
        return Ok(match pass_diagnostic(&e) {
            Some(d) => Outcome::Diagnostic(Emitted::from_diagnostic(d), rendered),
            None => return Err(Failure::Error(rendered)),
        });
    }
    Ok(Outcome::Output(print_module(&module, print)))
}

fn write_output(path: Option<&str>, text: &str) -> Result<(), Failure> {
    let result = match path {
        None | Some("-") => std::io::stdout().write_all(text.as_bytes()).map_err(|e| format!("cannot write stdout: {e}")),
        Some(p) => std::fs::write(p, text).map_err(|e| format!("cannot write '{p}': {e}")),
    };
    result.map_err(Failure::Error)
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

