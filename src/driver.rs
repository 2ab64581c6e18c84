//! `tilec compile FILE.tile [-o DIR] [--emit=STAGE] ...`: parse, run the
//! tile/nv pass pipeline, lower the nv IR to MLIR (src/lower), run the
//! MLIR -> PTX back end (src/backend) and write the artifact.
//! `tilec bench-compile` (src/bench_compile.rs) times the same steps.

use crate::backend::{self, BackendOptions};
use crate::config_select::{self, parse_candidate, parse_param, parse_shape, ConfigRequest};
use crate::lower;
use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use tilec_dialects::{parse_module, print_module, verify_module, Module, PrintOptions};
use tilec_passes::{Instrumentation, PassManager};

/// The tile/nv pipeline of `tilec compile` for input with no GEMM to
/// configure: nv-level input passes through it unchanged (up to
/// canonicalisation) and is lowered as it stands. A tile-level GEMM gets
/// `tile-select-config` and the passes its `tile.config` asks for
/// (src/config_select.rs).
pub const DEFAULT_PIPELINE: &str = "tile-canonicalize,tile-assign-layouts,tile-pipeline{stages=4},tile-lower-to-nv,tile-canonicalize";

/// The pipeline `tilec compile` runs without `--pass-pipeline`.
pub fn default_pipeline() -> &'static str {
    DEFAULT_PIPELINE
}

const USAGE: &str = "usage: tilec compile FILE.tile [options]
       tilec bench-compile FILE... [options]   (compile-time measurement; --help for its options)

  -o DIR                    write the artifact (DIR/kernel.ptx, DIR/manifest.json)
  --emit=STAGE              print a stage to stdout: nv (tile/nv IR after the passes),
                            mlir (generated MLIR), mlir-lowered (after the upstream MLIR
                            pipeline), llvm (optimised LLVM IR), ptx
  --pass-pipeline=PIPELINE  tile/nv passes to run (default: tile-select-config, then the
                            passes the chosen config asks for); a parametric program gets
                            tile-select-config in front unless the pipeline has it
  --shape=MxNxK             choose the config for this problem shape (default: 4096^3,
                            keeping direct stores so that the kernel serves any N)
  --param NAME=VALUE        pin BLOCK_M, BLOCK_N, BLOCK_K or STAGES (repeatable)
  --explain                 print the config candidates weighed, best first, to stderr
  --candidate R             compile the R-th ranked config instead of the pick (sweeps)
  --shapes=MxNxK,...        build a kernel family into -o DIR: the distinct kernels config
                            selection picks for the shapes, compiled in parallel, and
                            DIR/family.json, the runtime's dispatch table
  --print-ir-after-all      print the IR to stderr after every tile/nv pass
  --timing                  print the time of each phase to stderr";

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Emit {
    Nv,
    Mlir,
    MlirLowered,
    Llvm,
    Ptx,
}

impl Emit {
    fn parse(s: &str) -> Result<Emit, String> {
        Ok(match s {
            "nv" => Emit::Nv,
            "mlir" => Emit::Mlir,
            "mlir-lowered" => Emit::MlirLowered,
            "llvm" => Emit::Llvm,
            "ptx" => Emit::Ptx,
            _ => return Err(format!("unknown --emit stage '{s}' (nv, mlir, mlir-lowered, llvm, ptx)")),
        })
    }
}

#[derive(Default)]
struct Args {
    input: Option<String>,
    output: Option<String>,
    pipeline: Option<String>,
    emit: Option<Emit>,
    print_after_all: bool,
    timing: bool,
    config: ConfigRequest,
    explain: bool,
    shapes: Option<Vec<config_select::Shape>>,
}

fn parse_args(raw: &[String]) -> Result<Option<Args>, String> {
    let mut it = raw.iter();
    match it.next().map(String::as_str) {
        Some("compile") => {}
        Some("-h" | "--help") | None => return Ok(None),
        Some(other) => return Err(format!("unknown command '{other}' (expected 'compile' or 'bench-compile')")),
    }
    let mut args = Args::default();
    while let Some(arg) = it.next() {
        let (flag, value) = crate::cli::split_flag(arg);
        match (flag, value) {
            ("-h" | "--help", None) => return Ok(None),
            ("-o", None) => args.output = Some(it.next().ok_or("-o needs a directory")?.clone()),
            ("--pass-pipeline", Some(p)) => args.pipeline = Some(p.to_string()),
            ("--emit", Some(s)) => args.emit = Some(Emit::parse(s)?),
            ("--print-ir-after-all", None) => args.print_after_all = true,
            ("--timing", None) => args.timing = true,
            ("--shape", v) => args.config.shape = Some(parse_shape(flag_value(v, &mut it, "--shape")?)?),
            ("--param", v) => args.config.params.push(parse_param(flag_value(v, &mut it, "--param")?)?),
            ("--explain", None) => args.explain = true,
            ("--shapes", v) => args.shapes = Some(config_select::parse_shapes(flag_value(v, &mut it, "--shapes")?)?),
            ("--candidate", v) => args.config.candidate = Some(parse_candidate(flag_value(v, &mut it, "--candidate")?)?),
            (f, _) if f.starts_with('-') => return Err(format!("unknown option '{arg}'")),
            _ if args.input.is_none() => args.input = Some(arg.clone()),
            _ => return Err(format!("unexpected extra input '{arg}'")),
        }
    }
    if args.input.is_none() {
        return Err("no input file".into());
    }
    if args.shapes.is_some() && (args.output.is_none() || args.emit.is_some() || args.pipeline.is_some() || args.config.shape.is_some()) {
        return Err("--shapes builds a kernel family: give -o DIR, and neither --emit, --pass-pipeline nor --shape".into());
    }
    if args.output.is_none() && args.emit.is_none() && !args.explain {
        return Err("nothing to do: give -o DIR and/or --emit=STAGE".into());
    }
    Ok(Some(args))
}

/// The value of `--flag=value` or `--flag value`.
fn flag_value<'a>(inline: Option<&'a str>, rest: &mut std::slice::Iter<'a, String>, flag: &str) -> Result<&'a str, String> {
    match inline {
        Some(v) => Ok(v),
        None => rest.next().map(String::as_str).ok_or_else(|| format!("{flag} needs a value")),
    }
}

/// Runs `tilec` with `raw` arguments (without the program name). Errors are
/// printed to stderr, located where the input caused them; exit status 1.
pub fn main(raw: &[String]) -> ExitCode {
    let result = match raw.first().map(String::as_str) {
        Some("bench-compile") => crate::bench_compile::run(&raw[1..]),
        _ => run(raw),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}

struct Timer {
    on: bool,
    phases: Vec<(&'static str, Duration)>,
}

impl Timer {
    fn time<T>(&mut self, name: &'static str, f: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let r = f();
        self.phases.push((name, start.elapsed()));
        r
    }

    fn report(&self) {
        if !self.on {
            return;
        }
        let total: Duration = self.phases.iter().map(|(_, d)| *d).sum();
        eprintln!("===- tilec compile timing -===");
        for (name, d) in &self.phases {
            eprintln!("  {:>10.3} ms  {name}", d.as_secs_f64() * 1e3);
        }
        eprintln!("  {:>10.3} ms  Total", total.as_secs_f64() * 1e3);
    }
}

/// Parses and verifies tile/nv text; `name` locates the diagnostics.
pub(crate) fn parse_and_verify(text: &str, name: &str) -> Result<Module, String> {
    let m = parse_module(text, name).map_err(|d| d.to_string())?;
    verify_module(&m).map_err(|d| d.to_string())?;
    Ok(m)
}

/// Runs the textual tile/nv `pipeline` on `module`; instrumentation output goes to stderr.
pub(crate) fn run_passes(module: &mut Module, pipeline: &str, instrumentation: Instrumentation) -> Result<(), String> {
    let mut pm = PassManager::from_pipeline(pipeline, instrumentation).map_err(|e| e.to_string())?;
    pm.run(module, &mut std::io::stderr()).map_err(|e| e.to_string())
}

/// `--explain`: the candidates `tile-select-config` weighs for `module`.
fn explain_config(module: &Module, request: &ConfigRequest) -> Result<String, String> {
    let entries = tilec_passes::parse_pipeline(&request.select_pass(None)).map_err(|e| format!("tilec: {e}"))?;
    let select = tilec_passes::transforms::select_config::SelectConfig::from_options(&entries[0].options);
    config_select::explain(module, &select, 12)
}

/// The tile/nv passes: the user's pipeline (behind `tile-select-config` when
/// the program has parameters or the flags ask for a config), or config
/// selection followed by the passes the chosen config names.
pub(crate) fn run_tile_passes(module: &mut Module, pipeline: Option<&str>, request: &ConfigRequest, instrumentation: Instrumentation) -> Result<(), String> {
    let select = request.select_pass(None);
    match pipeline {
        Some(p) if p.contains("tile-select-config") || !(request.is_given() || config_select::is_parametric(module)) => {
            run_passes(module, p, instrumentation)
        }
        Some(p) => run_passes(module, &format!("{select},{p}"), instrumentation),
        None => {
            run_passes(module, &select, instrumentation.clone())?;
            let rest = config_select::pipeline_after_config(module, DEFAULT_PIPELINE).map_err(|e| format!("tilec: {e}"))?;
            run_passes(module, &rest, instrumentation)
        }
    }
}

fn print_stdout(text: &str) -> Result<(), String> {
    std::io::stdout().write_all(text.as_bytes()).map_err(|e| format!("cannot write stdout: {e}"))
}

fn run(raw: &[String]) -> Result<(), String> {
    let Some(args) = parse_args(raw).map_err(|e| format!("tilec: {e}\n{USAGE}"))? else {
        println!("{USAGE}");
        return Ok(());
    };
    let input = args.input.as_deref().expect("checked");
    let mut timer = Timer { on: args.timing, phases: Vec::new() };

    let text = std::fs::read_to_string(input).map_err(|e| format!("tilec: cannot read '{input}': {e}"))?;
    if let (Some(shapes), Some(dir)) = (&args.shapes, &args.output) {
        timer.time("kernel family", || crate::family::compile_family(&text, input, shapes, &args.config, dir))?;
        timer.report();
        return Ok(());
    }
    let mut module = timer.time("parse + verify", || parse_and_verify(&text, input))?;

    let instrumentation = Instrumentation { print_after_all: args.print_after_all, ..Instrumentation::default() };
    if args.explain {
        eprint!("{}", explain_config(&module, &args.config)?);
    }
    timer.time("tile/nv passes", || run_tile_passes(&mut module, args.pipeline.as_deref(), &args.config, instrumentation))?;
    if args.emit == Some(Emit::Nv) {
        print_stdout(&print_module(&module, PrintOptions::default()))?;
    }
    let want_ptx = args.output.is_some() || args.emit == Some(Emit::Ptx);
    if !want_ptx && args.emit <= Some(Emit::Nv) {
        timer.report();
        return Ok(());
    }

    let kernel = timer.time("lower nv -> MLIR", || lower::lower_module(&module)).map_err(|d| d.to_string())?;
    if args.emit == Some(Emit::Mlir) {
        print_stdout(&kernel.mlir)?;
    }
    let opts = BackendOptions { source_name: format!("{input} (generated MLIR)"), ..BackendOptions::default() };
    let backend_err = |e: backend::BackendError| format!("{input}: error: the back end rejected the generated MLIR (a tilec bug):\n{e}");
    match args.emit {
        Some(Emit::MlirLowered) => {
            let t = timer.time("MLIR pipeline", || backend::lower_mlir(&kernel.mlir, &opts)).map_err(backend_err)?;
            print_stdout(&t)?;
        }
        Some(Emit::Llvm) => {
            let t = timer.time("MLIR -> LLVM IR (O3)", || backend::mlir_to_llvm_ir(&kernel.mlir, &opts)).map_err(backend_err)?;
            print_stdout(&t)?;
        }
        _ => {}
    }
    if want_ptx {
        let ptx = timer.time("MLIR -> PTX", || backend::mlir_to_ptx(&kernel.mlir, &opts)).map_err(backend_err)?;
        if args.emit == Some(Emit::Ptx) {
            print_stdout(&ptx.text)?;
        }
        if let Some(dir) = &args.output {
            timer.time("write artifact", || tilec_artifact::Artifact::write(dir, &kernel.manifest, &ptx.text))
                .map_err(|e| format!("tilec: {e}"))?;
        }
    }
    timer.report();
    Ok(())
}
