//! `tilec compile FILE.tile [-o DIR] [--emit=STAGE] ...`: parse, run the
//! tile/nv pass pipeline, lower the nv IR to MLIR (the tilec-lower crate), run the
//! MLIR -> PTX back end (`tilec-backend`) and write the artifact.
//! `tilec bench-compile` (bench_compile.rs) times the same steps.
//! When the back end fails, a reproducer (the generated MLIR and the upstream
//! pipeline, backend/src/reproducer.rs) is written for upstream `mlir-opt`.

use crate::source::read_source;
use tilec::api::{backend_error, backend_options, lower, parse_and_verify, run_tile_passes};
use tilec::config_select::{self, parse_candidate, parse_param, parse_shape, ConfigRequest};
use tilec_backend::{self as backend, BackendOptions};
use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use tilec_cli::{exit_code, CompletionArgs, Failure, PassFlags};
use tilec_dialects::{print_module, Module, PrintOptions};
use tilec_target::Target;

/// The Hopper GEMM compiler driver.
#[derive(Parser, Debug)]
#[command(name = "tilec", version, about = "Compiles tile IR GEMMs to PTX for NVIDIA Hopper")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    completions: CompletionArgs,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Compile a tile program to a PTX artifact, or print one of its stages
    #[command(after_help = "Without --pass-pipeline, tile-select-config runs first and the passes the config it \
chose asks for follow (a file whose tile.config already names a schedule compiles as written, unless \
--shape, --param, --candidate, --cluster or --ranking ask for a new selection); a given pipeline gets tile-select-config in front when the program has parameters or \
config flags are given. The IR printing flags also name upstream MLIR passes (--mlir-print-ir-after=convert-nvgpu-to-nvvm); --mlir-print-ir-after-all prints after \
every tile/nv and every upstream pass.")]
    Compile(CompileArgs),
    /// Measure compile time, stage by stage
    BenchCompile(crate::bench_compile::Args),
    /// Judge the cost model against measured kernels, or fit its constants to them
    Calibrate(crate::calibrate::Args),
}

#[derive(Args, Debug)]
struct CompileArgs {
    /// Input file; '-' or none reads stdin
    input: Option<String>,
    /// Write the artifact (DIR/kernel.ptx, DIR/manifest.json)
    #[arg(short = 'o', value_name = "DIR")]
    output: Option<String>,
    /// Print a stage to stdout
    #[arg(long, value_enum, value_name = "STAGE")]
    emit: Option<Emit>,
    #[command(flatten)]
    passes: PassFlags,
    /// Replace the upstream MLIR pipeline (textual, without 'builtin.module(...)')
    #[arg(long = "upstream-pass-pipeline", value_name = "PIPELINE")]
    upstream_pipeline: Option<String>,
    /// Replace the LLVM pass pipeline (LLVM's textual form, as `opt -passes`; default: the
    /// kernel pipeline, O3 less the passes that change nothing in tilec's kernels)
    #[arg(long = "llvm-pass-pipeline", value_name = "PIPELINE")]
    llvm_pipeline: Option<String>,
    /// Verify the MLIR module after every upstream pass, to find the one that broke it (by
    /// default once, after the last)
    #[arg(long = "verify-each-upstream")]
    verify_each_upstream: bool,
    /// Where to write the reproducer when the back end fails (default: the temporary folder)
    #[arg(long = "mlir-pass-pipeline-crash-reproducer", value_name = "FILE")]
    reproducer: Option<String>,
    /// Assemble the PTX with ptxas (TILEC_PTXAS or PATH) and make its errors, register spills and
    /// wgmma serialisation (C7509-C7520) compile errors
    #[arg(long = "verify-ptx")]
    verify_ptx: bool,
    #[command(flatten)]
    config: ConfigArgs,
}

/// Config selection: which problem the kernel is for, and what the user pins.
#[derive(Args, Debug)]
struct ConfigArgs {
    /// Choose the config for this problem shape (default: 4096^3 with direct stores, so the kernel serves any N)
    #[arg(long, value_name = "MxNxK", value_parser = parse_shape)]
    shape: Option<config_select::Shape>,
    /// Pin BLOCK_M, BLOCK_N, BLOCK_K or STAGES (repeatable)
    #[arg(long, value_name = "NAME=VALUE", value_parser = parse_param)]
    param: Vec<(String, i64)>,
    /// Print the config candidates weighed, best first, to stderr
    #[arg(long)]
    explain: bool,
    /// With --explain: how many candidates to print, a count or 'all' (default 12)
    #[arg(long, value_name = "N", value_parser = config_select::parse_explain_rows, requires = "explain")]
    explain_rows: Option<usize>,
    /// Compile the R-th ranked config instead of the pick (for sweeps)
    #[arg(long, value_name = "R", value_parser = parse_candidate)]
    candidate: Option<i64>,
    /// Pin clusters along M (sharing B) or N (sharing A), of two CTAs or of the count after the
    /// letter (n4: four along N), or none
    #[arg(long, value_name = "AXIS", value_parser = ["m", "n", "none", "m4", "n4", "m8", "n8"])]
    cluster: Option<String>,
    /// Order the candidates by the cost model's predicted time (model), or by config selection's
    /// policies with the model's alternatives after them (rules), for comparing the two
    #[arg(long, value_name = "ORDER", value_parser = ["model", "rules"])]
    ranking: Option<String>,
    /// The GPU to compile for: config selection chooses for it, and the artifact's manifest names
    /// it, so that the runtime refuses the kernel on another GPU
    #[arg(long, value_name = "GPU", default_value = Target::DEFAULT.name, value_parser = target_parser())]
    target: &'static Target,
    /// Take the configuration a tuning file (tilec-bench --tuning) measured fastest for the shape, where
    /// it has the shape; the cost model's pick elsewhere
    #[arg(long, value_name = "FILE")]
    tuning: Option<String>,
    /// Build a kernel family into -o DIR: the distinct kernels config selection picks for these shapes,
    /// compiled in parallel, and DIR/family.json, the runtime's dispatch table
    #[arg(long, value_name = "MxNxK,...", value_parser = parse_shape_list, conflicts_with_all = ["shape", "emit"])]
    shapes: Option<ShapeList>,
}

/// The shapes of `--shapes`, one value on the command line.
#[derive(Clone, Debug)]
struct ShapeList(Vec<config_select::Shape>);

fn parse_shape_list(text: &str) -> Result<ShapeList, String> {
    config_select::parse_shapes(text).map(ShapeList)
}

impl ConfigArgs {
    fn request(&self) -> Result<ConfigRequest, String> {
        let tuning = self.tuning.as_deref().map(|path| config_select::load_tuning(path, self.target)).transpose()?;
        Ok(ConfigRequest {
            shape: self.shape,
            params: self.param.clone(),
            candidate: self.candidate,
            cluster: self.cluster.clone(),
            target: self.target,
            ranking: self.ranking.clone(),
            tuning,
        })
    }
}

/// A stage `--emit` prints, in compile order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
enum Emit {
    /// tile/nv IR after the passes
    Nv,
    /// the generated MLIR
    Mlir,
    /// the generated MLIR with the upstream pipeline, replayable with mlir-opt
    Reproducer,
    /// MLIR after the upstream pipeline
    MlirLowered,
    /// optimised LLVM IR
    Llvm,
    /// PTX
    Ptx,
}

/// Runs `tilec` on the process's arguments: exit 0 on success, 1 on a
/// compile error (printed to stderr, located where the input caused it), 2 on
/// a usage error.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.completions.print_if_asked::<Cli>() {
        return ExitCode::SUCCESS;
    }
    let result = match &cli.command {
        Some(Command::Compile(args)) => compile(args),
        Some(Command::BenchCompile(args)) => crate::bench_compile::run(args),
        Some(Command::Calibrate(args)) => crate::calibrate::run(args),
        None => Cli::command().error(clap::error::ErrorKind::MissingSubcommand, "a command is required: 'compile', 'bench-compile' or 'calibrate'").exit(),
    };
    exit_code("tilec", result)
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

/// `--explain`: the candidates config selection weighs for the request, or
/// for a file that already holds a decision and no config flag, that it
/// compiles as written.
fn explain_config(module: &Module, request: &ConfigRequest, rows: usize) -> Result<String, String> {
    if config_select::compiles_as_written(module, request) {
        return Ok(module
            .functions
            .iter()
            .map(|f| format!("config of @{}: its tile.config names a schedule, so it compiles as written (--shape, --param, --candidate or --cluster select again, keeping only its block sizes and stages)\n", f.name))
            .collect());
    }
    let entries = tilec_passes::parse_pipeline(&request.select_pass(None)).map_err(|e| format!("tilec: {e}"))?;
    let select = tilec_passes::transforms::select_config::SelectConfig::from_options(&entries[0].options);
    config_select::explain(module, &select, rows)
}

fn print_stdout(text: &str) -> Result<(), String> {
    std::io::stdout().write_all(text.as_bytes()).map_err(|e| format!("cannot write stdout: {e}"))
}

/// Writes the reproducer of a failed back end and says how to replay it.
fn write_reproducer(mlir: &str, opts: &BackendOptions, path: Option<&str>) -> String {
    let path = path.map(String::from).unwrap_or_else(|| {
        std::env::temp_dir().join(format!("tilec-reproducer-{}.mlir", std::process::id())).display().to_string()
    });
    match std::fs::write(&path, backend::reproducer(mlir, opts)) {
        Ok(()) => format!("note: reproducer written to {path}; replay with:\n  {}", backend::mlir_opt_command(opts, &path)),
        Err(e) => format!("note: cannot write the reproducer to '{path}': {e}"),
    }
}

fn compile(args: &CompileArgs) -> Result<(), Failure> {
    if args.output.is_none() && args.emit.is_none() && !args.config.explain && !args.verify_ptx {
        return Err(Failure::Usage("nothing to do: give -o DIR and/or --emit=STAGE (or --explain, --verify-ptx)".into()));
    }
    if args.config.shapes.is_some() && (args.output.is_none() || args.passes.pass_pipeline.is_some()) {
        return Err(Failure::Usage("--shapes builds a kernel family: give -o DIR and no --pass-pipeline".into()));
    }
    if let Some(message) = config_select::repeated_param(&args.config.param) {
        return Err(Failure::Usage(message));
    }
    let mut timer = Timer { on: args.passes.timing, phases: Vec::new() };
    let (text, input) = read_source(args.input.as_deref())?;
    let request = args.config.request()?;
    if let (Some(shapes), Some(dir)) = (&args.config.shapes, &args.output) {
        timer.time("kernel family", || tilec::family::compile_family_into(&text, &input, &shapes.0, &request, dir))?;
        timer.report();
        return Ok(());
    }
    let mut module = timer.time("parse + verify", || parse_and_verify(&text, &input))?;
    if args.config.explain {
        eprint!("{}", explain_config(&module, &request, args.config.explain_rows.unwrap_or(config_select::EXPLAIN_ROWS))?);
    }
    let pipeline = args.passes.pass_pipeline.as_deref();
    timer.time("tile/nv passes", || run_tile_passes(&mut module, pipeline, &request, &args.passes, &input, &text))?;
    if args.output.is_none() && args.emit.is_none() && !args.verify_ptx {
        timer.report();
        return Ok(());
    }
    if args.emit == Some(Emit::Nv) {
        print_stdout(&print_module(&module, PrintOptions::default()))?;
    }
    let want_ptx = args.output.is_some() || args.emit == Some(Emit::Ptx) || args.verify_ptx;
    if !want_ptx && args.emit <= Some(Emit::Nv) {
        timer.report();
        return Ok(());
    }

    let kernel = timer.time("lower nv -> MLIR", || lower(&module, &text, &input, request.target, request.shape.as_slice()))?;
    let opts = BackendOptions {
        pipeline: args.upstream_pipeline.clone(),
        llvm_pipeline: args.llvm_pipeline.clone(),
        verify_each: args.verify_each_upstream,
        print_ir_after_all: args.passes.print_ir_after_all,
        print_ir_after: args.passes.print_ir_after.clone(),
        ..backend_options(&input, request.target)
    };
    match args.emit {
        Some(Emit::Mlir) => print_stdout(&kernel.mlir)?,
        Some(Emit::Reproducer) => print_stdout(&backend::reproducer(&kernel.mlir, &opts))?,
        _ => {}
    }
    let backend_err = |e: backend::BackendError| {
        format!("{}\n{}", backend_error(&input, &e), write_reproducer(&kernel.mlir, &opts, args.reproducer.as_deref()))
    };
    match args.emit {
        Some(Emit::MlirLowered) => {
            let t = timer.time("MLIR pipeline", || backend::lower_mlir(&kernel.mlir, &opts)).map_err(backend_err)?;
            print_stdout(&t)?;
        }
        Some(Emit::Llvm) => {
            let t = timer.time("MLIR -> LLVM IR (optimised)", || backend::mlir_to_llvm_ir(&kernel.mlir, &opts)).map_err(backend_err)?;
            print_stdout(&t)?;
        }
        _ => {}
    }
    if want_ptx {
        let ptx = timer.time("MLIR -> PTX", || backend::mlir_to_ptx(&kernel.mlir, &opts)).map_err(backend_err)?;
        if args.verify_ptx {
            timer.time("ptxas", || backend::verify_ptx(&ptx.text, &opts.chip)).map_err(|e| format!("{input}: error: --verify-ptx: {e}"))?;
        }
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
/// `--target`'s values, listed in `--help` and in the error for any other
/// (`tilec compile`, `tilec calibrate`).
pub(crate) fn target_parser() -> impl clap::builder::TypedValueParser<Value = &'static tilec_target::Target> {
    use clap::builder::{PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new(tilec_target::Target::NAMES).try_map(|name| tilec_target::Target::from_name(&name))
}

