//! `tile-opt`: reads tile IR, runs a pass pipeline, prints the result, as
//! `mlir-opt` does.

use std::io::{Read, Write};
use std::process::ExitCode;
use tilec_dialects::{parse_module, print_module, verify_module, PrintOptions};
use tilec_passes::{Instrumentation, PassManager, PASSES};

const USAGE: &str = "usage: tile-opt FILE|- [options]

  --pass-pipeline=PIPELINE   passes to run, e.g. 'tile-canonicalize,tile-foo{opt=3}'
  --PASS[=\"OPTIONS\"]         append one registered pass (e.g. --tile-canonicalize)
  -o FILE                    write the output to FILE instead of stdout
  --print-generic            print ops in MLIR's generic form
  --verify-each=BOOL         verify the IR after every pass (default true)
  --print-ir-after-all       print the IR to stderr after every pass
  --print-ir-after=PASS      print the IR to stderr after the named pass
  --print-ir-after-failure=BOOL  print the IR after a failing pass (default true)
  --pass-timing              print each pass's wall time to stderr
  --list-passes              list the registered passes and their options";

#[derive(Default)]
struct Args {
    input: Option<String>,
    output: Option<String>,
    pipeline: Vec<String>,
    instrumentation: Instrumentation,
}

fn parse_bool(flag: &str, value: &str) -> Result<bool, String> {
    match value {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err(format!("{flag} expects true or false, found '{value}'")),
    }
}

fn parse_args(raw: &[String]) -> Result<Option<Args>, String> {
    let mut args = Args::default();
    let mut it = raw.iter();
    while let Some(arg) = it.next() {
        let (flag, value) = crate::cli::split_flag(arg);
        match (flag, value) {
            ("-h" | "--help", None) => return Ok(None),
            ("--list-passes", None) => {
                list_passes();
                std::process::exit(0);
            }
            ("--pass-pipeline", Some(p)) => args.pipeline.push(p.to_string()),
            ("-o", None) => args.output = Some(it.next().ok_or("-o needs a file name")?.clone()),
            ("--print-generic", None) => args.instrumentation.print.generic = true,
            ("--verify-each", Some(v)) => args.instrumentation.verify_each = parse_bool(flag, v)?,
            ("--print-ir-after-all", None) => args.instrumentation.print_after_all = true,
            ("--print-ir-after", Some(p)) => args.instrumentation.print_after.push(p.to_string()),
            ("--print-ir-after-failure", Some(v)) => args.instrumentation.print_after_failure = parse_bool(flag, v)?,
            ("--pass-timing", None) => args.instrumentation.timing = true,
            (f, v) if f.starts_with("--") && PASSES.iter().any(|p| p.name == &f[2..]) => {
                let name = &f[2..];
                args.pipeline.push(match v {
                    Some(opts) => format!("{name}{{{}}}", opts.trim_matches('"')),
                    None => name.to_string(),
                });
            }
            (f, _) if f.starts_with('-') && f != "-" => return Err(format!("unknown option '{arg}'")),
            _ if args.input.is_none() => args.input = Some(arg.clone()),
            _ => return Err(format!("unexpected extra input '{arg}'")),
        }
    }
    Ok(Some(args))
}

fn list_passes() {
    for pass in PASSES {
        println!("{}: {}", pass.name, pass.summary);
        for option in pass.options {
            println!("    {}={} ({:?}): {}", option.name, option.default, option.kind, option.help);
        }
    }
}

fn read_input(path: &str) -> Result<(String, String), String> {
    if path == "-" {
        let mut bytes = Vec::new();
        std::io::stdin().read_to_end(&mut bytes).map_err(|e| format!("cannot read stdin: {e}"))?;
        let text = tilec_dialects::syntax::decode_source(&bytes, "<stdin>").map_err(|d| d.to_string())?;
        return Ok((text, "<stdin>".to_string()));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read '{path}': {e}"))?;
    let text = tilec_dialects::syntax::decode_source(&bytes, path).map_err(|d| d.to_string())?;
    Ok((text, path.to_string()))
}

/// Runs `tile-opt` with `raw` arguments (without the program name).
pub fn main(raw: &[String]) -> ExitCode {
    match run(raw) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}

fn run(raw: &[String]) -> Result<(), String> {
    let Some(args) = parse_args(raw).map_err(|e| format!("tile-opt: {e}\n{USAGE}"))? else {
        println!("{USAGE}");
        return Ok(());
    };
    let input = args.input.as_deref().ok_or_else(|| format!("tile-opt: no input file\n{USAGE}"))?;
    let (text, name) = read_input(input)?;
    let mut module = parse_module(&text, &name).map_err(|d| d.to_string())?;
    verify_module(&module).map_err(|d| d.to_string())?;
    let print = args.instrumentation.print;
    let mut pm = PassManager::from_pipeline(&args.pipeline.join(","), args.instrumentation).map_err(|e| e.to_string())?;
    pm.run(&mut module, &mut std::io::stderr()).map_err(|e| e.to_string())?;
    write_output(args.output.as_deref(), &print_module(&module, PrintOptions { generic: print.generic }))
}

fn write_output(path: Option<&str>, text: &str) -> Result<(), String> {
    match path {
        None | Some("-") => std::io::stdout().write_all(text.as_bytes()).map_err(|e| format!("cannot write stdout: {e}")),
        Some(p) => std::fs::write(p, text).map_err(|e| format!("cannot write '{p}': {e}")),
    }
}
