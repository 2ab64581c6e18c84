//! `tilec bench-compile FILE... [--runs N] [--shape S] [--processes P] [--pass-pipeline=P]
//! [--json OUT]`: compile time, stage by stage. Each file is compiled N times in this one
//! process, exactly as `tilec compile` does it (same front end, same back end, a fresh MLIR
//! context per compile), and the median, min and max of every stage are printed, with the PTX
//! size; with `--processes`, also `tilec compile` as a whole process, start-up included.
//!
//! The MLIR context setup is kept out of the stage table: its first creation in a process
//! pays one-time registration (passes, translations, LLVM targets) that no later compile
//! does, so it is reported as "first run" against the later runs.

use tilec_backend::{self as backend, BackendContext, Timings};
use tilec::config_select::ConfigRequest;
use tilec::api::{backend_error, backend_options, lower, parse_and_verify, run_tile_passes};
use std::fmt::Write as _;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tilec_cli::{Failure, PassFlags};

/// Schema name of the `--json` report.
pub const SCHEMA: &str = "tilec-compile-time/1";

/// The timed stages, in compile order: (JSON key, table label).
const STAGES: [(&str, &str); 7] = [
    ("parse", "parse + verify"),
    ("passes", "tile/nv passes"),
    ("lower", "lower nv -> MLIR (+ MLIR parse)"),
    ("mlir_pipeline", "MLIR pass pipeline"),
    ("translate", "MLIR -> LLVM IR"),
    ("llvm_opt", "LLVM opt (kernel pipeline)"),
    ("codegen", "NVPTX codegen"),
];

/// `tilec bench-compile`'s arguments.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Files to compile
    #[arg(required = true, value_name = "FILE")]
    inputs: Vec<String>,
    /// Compiles per file, all in this process
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
    /// tile/nv passes to run (default: tilec compile's: config selection, then the passes its config asks for)
    #[arg(long = "pass-pipeline", value_name = "PIPELINE")]
    pipeline: Option<String>,
    /// Also write the report as JSON (schema tilec-compile-time/1)
    #[arg(long, value_name = "OUT")]
    json: Option<String>,
    /// Also time `tilec compile FILE -o DIR` N times, each a process of its own (what a
    /// build that compiles one kernel per process waits for)
    #[arg(long, default_value_t = 0, value_name = "N")]
    processes: u32,
    /// Choose the config for this problem shape, as `tilec compile --shape` does
    #[arg(long, value_name = "MxNxK", value_parser = tilec::config_select::parse_shape)]
    shape: Option<tilec::config_select::Shape>,
}

/// One compile: the stage times (in [`STAGES`] order), the total and the PTX size.
struct Sample {
    stages: [Duration; STAGES.len()],
    total: Duration,
    ptx_bytes: usize,
}

/// Compiles `text` once in `ctx`, for the default target. The total is the wall time of
/// the whole compile, so it includes the glue between stages that no stage owns.
fn compile_once(ctx: &BackendContext, text: &str, name: &str, args: &Args) -> Result<Sample, String> {
    let request = ConfigRequest { shape: args.shape, ..ConfigRequest::default() };
    let pipeline = args.pipeline.as_deref();
    let start = Instant::now();
    let mut module = parse_and_verify(text, name)?;
    let parsed = Instant::now();
    run_tile_passes(&mut module, pipeline, &request, &PassFlags::default(), name, text)?;
    let passed = Instant::now();
    let kernel = lower(&module, text, name, request.target, request.shape.as_slice())?;
    let lowered = Instant::now();
    let opts = backend_options(name, request.target);
    let mut t = Timings::default();
    let ptx = backend::mlir_to_ptx_in(ctx, &kernel.mlir, &opts, &mut t)
        .map_err(|e| backend_error(name, &e))?;
    let total = start.elapsed();
    Ok(Sample {
        stages: [
            parsed - start,
            passed - parsed,
            // The MLIR text is only a hand-over format: parsing it back is part of lowering.
            (lowered - passed) + t.parse,
            t.pipeline,
            t.translate,
            t.optimize,
            t.codegen,
        ],
        total,
        ptx_bytes: ptx.text.len(),
    })
}

/// Median, min and max of a set of durations, in milliseconds.
#[derive(Clone, Copy)]
struct Stats {
    median: f64,
    min: f64,
    max: f64,
}

impl Stats {
    fn of(samples: &[Duration]) -> Stats {
        let mut ms: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e3).collect();
        ms.sort_by(f64::total_cmp);
        let n = ms.len();
        let median = if n % 2 == 1 { ms[n / 2] } else { (ms[n / 2 - 1] + ms[n / 2]) / 2.0 };
        Stats { median, min: ms[0], max: ms[n - 1] }
    }

    fn json(&self, samples: &[Duration]) -> String {
        let list: Vec<String> = samples.iter().map(|d| format!("{:.4}", d.as_secs_f64() * 1e3)).collect();
        format!(
            "{{\"median_ms\": {:.4}, \"min_ms\": {:.4}, \"max_ms\": {:.4}, \"samples_ms\": [{}]}}",
            self.median,
            self.min,
            self.max,
            list.join(", ")
        )
    }
}

struct FileReport {
    file: String,
    samples: Vec<Sample>,
    /// Whole-process compiles (`--processes`).
    processes: Vec<Duration>,
}

impl FileReport {
    fn stage(&self, i: usize) -> Vec<Duration> {
        self.samples.iter().map(|s| s.stages[i]).collect()
    }

    fn totals(&self) -> Vec<Duration> {
        self.samples.iter().map(|s| s.total).collect()
    }

    /// The PTX size, of the first run (every run compiles the same text the same way).
    fn ptx_bytes(&self) -> usize {
        self.samples[0].ptx_bytes
    }

    fn print(&self) {
        println!("===- tilec bench-compile: {} ({} runs) -===", self.file, self.samples.len());
        println!("  {:<34}{:>10}{:>10}{:>10}", "stage (ms)", "median", "min", "max");
        let row = |label: &str, s: Stats| println!("  {label:<34}{:>10.3}{:>10.3}{:>10.3}", s.median, s.min, s.max);
        for (i, (_, label)) in STAGES.iter().enumerate() {
            row(label, Stats::of(&self.stage(i)));
        }
        row("Total", Stats::of(&self.totals()));
        if !self.processes.is_empty() {
            row(&format!("whole process ({} runs)", self.processes.len()), Stats::of(&self.processes));
        }
        println!("  PTX size: {} bytes", self.ptx_bytes());
    }
}

/// Creates a back-end context and returns it with the time that took.
fn timed_context() -> (BackendContext, Duration) {
    let start = Instant::now();
    let ctx = BackendContext::new();
    (ctx, start.elapsed())
}

/// `tilec bench-compile`.
pub fn run(args: &Args) -> Result<(), Failure> {
    // Read every input before timing anything, so a missing file fails at once.
    let texts = args
        .inputs
        .iter()
        .map(|f| std::fs::read_to_string(f).map_err(|e| format!("tilec bench-compile: cannot read '{f}': {e}")))
        .collect::<Result<Vec<_>, _>>()?;

    let mut contexts = Vec::new();
    let mut reports = Vec::new();
    for (file, text) in args.inputs.iter().zip(&texts) {
        let mut samples = Vec::with_capacity(args.runs as usize);
        for _ in 0..args.runs {
            // A fresh context per compile, as `tilec compile` has; its setup is timed apart.
            let (ctx, setup) = timed_context();
            contexts.push(setup);
            samples.push(compile_once(&ctx, text, file, args)?);
        }
        let processes = (0..args.processes).map(|_| time_process(file, args)).collect::<Result<Vec<_>, _>>()?;
        let report = FileReport { file: file.clone(), samples, processes };
        report.print();
        reports.push(report);
    }
    let (first, later) = contexts.split_first().expect("at least one compile");
    print!("MLIR context setup: first run {:.3} ms", ms(*first));
    if later.is_empty() {
        println!();
    } else {
        let s = Stats::of(later);
        println!("; later runs median {:.3} ms (min {:.3}, max {:.3}, {} runs)", s.median, s.min, s.max, later.len());
    }

    if let Some(out) = &args.json {
        let raw: Vec<String> = std::env::args().skip(2).collect();
        let json = to_json(&raw, args, &reports, *first, later);
        std::fs::write(out, json).map_err(|e| format!("tilec bench-compile: cannot write '{out}': {e}"))?;
    }
    Ok(())
}

/// Runs `tilec compile FILE [--shape S] [--pass-pipeline P] -o DIR` (this executable) as a
/// process of its own and returns its wall time; the artifact goes to a scratch folder.
fn time_process(file: &str, args: &Args) -> Result<Duration, String> {
    let exe = std::env::current_exe().map_err(|e| format!("tilec bench-compile: cannot find its own executable: {e}"))?;
    let dir = std::env::temp_dir().join(format!("tilec-bench-compile-{}", std::process::id()));
    let mut command = std::process::Command::new(exe);
    command.arg("compile").arg(file).arg("-o").arg(&dir);
    if let Some((m, n, k)) = args.shape {
        command.arg(format!("--shape={m}x{n}x{k}"));
    }
    if let Some(pipeline) = &args.pipeline {
        command.arg(format!("--pass-pipeline={pipeline}"));
    }
    let start = Instant::now();
    let output = command.output().map_err(|e| format!("tilec bench-compile: cannot run tilec compile: {e}"))?;
    let elapsed = start.elapsed();
    let _ = std::fs::remove_dir_all(&dir);
    if !output.status.success() {
        return Err(format!("tilec bench-compile: tilec compile {file} failed:\n{}", String::from_utf8_lossy(&output.stderr)));
    }
    Ok(elapsed)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn to_json(raw: &[String], args: &Args, reports: &[FileReport], first: Duration, later: &[Duration]) -> String {
    let created = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let command: Vec<String> = ["tilec", "bench-compile"].into_iter().chain(raw.iter().map(String::as_str)).map(json_string).collect();
    let mut j = String::new();
    let _ = writeln!(j, "{{\n  \"schema\": {},", json_string(SCHEMA));
    let _ = writeln!(j, "  \"created_unix\": {created},");
    let _ = writeln!(j, "  \"command_line\": [{}],", command.join(", "));
    let _ = writeln!(j, "  \"host\": {{\"nproc\": {}, \"cpu\": {}}},", nproc(), cpu_model().as_deref().map_or("null".into(), json_string));
    let _ = writeln!(j, "  \"runs\": {},", args.runs);
    let shape = args.shape.map_or("null".into(), |(m, n, k)| json_string(&format!("{m}x{n}x{k}")));
    let _ = writeln!(j, "  \"shape\": {shape},");
    let _ = writeln!(j, "  \"pass_pipeline\": {},", json_string(args.pipeline.as_deref().unwrap_or("default (config selection)")));
    let later_json = if later.is_empty() { "null".to_string() } else { Stats::of(later).json(later) };
    let _ = writeln!(j, "  \"context_setup\": {{\"first_ms\": {:.4}, \"later\": {later_json}}},", ms(first));
    j.push_str("  \"files\": [\n");
    for (n, r) in reports.iter().enumerate() {
        let _ = writeln!(j, "    {{\"file\": {}, \"ptx_bytes\": {},", json_string(&r.file), r.ptx_bytes());
        j.push_str("     \"stages\": {\n");
        for (i, (key, _)) in STAGES.iter().enumerate() {
            let samples = r.stage(i);
            let _ = writeln!(j, "       {}: {},", json_string(key), Stats::of(&samples).json(&samples));
        }
        let totals = r.totals();
        let _ = writeln!(j, "       \"total\": {}", Stats::of(&totals).json(&totals));
        let process = if r.processes.is_empty() { "null".to_string() } else { Stats::of(&r.processes).json(&r.processes) };
        let _ = writeln!(j, "     }},\n     \"process\": {process}}}{}", if n + 1 < reports.len() { "," } else { "" });
    }
    j.push_str("  ]\n}\n");
    j
}

fn nproc() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The CPU model from /proc/cpuinfo (Linux); `None` elsewhere.
fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines().find_map(|l| l.strip_prefix("model name")?.split_once(':').map(|(_, v)| v.trim().to_string()))
}

fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_median_min_max() {
        let ms = |v: &[u64]| v.iter().map(|&m| Duration::from_millis(m)).collect::<Vec<_>>();
        let odd = Stats::of(&ms(&[5, 1, 3]));
        assert_eq!((odd.median, odd.min, odd.max), (3.0, 1.0, 5.0));
        assert_eq!(Stats::of(&ms(&[4, 1, 2, 8])).median, 3.0);
    }

    #[test]
    fn json_strings_are_escaped() {
        assert_eq!(json_string("a\"b\\c\nd\u{1}"), r#""a\"b\\c\nd\u0001""#);
    }

    #[derive(clap::Parser)]
    struct Cmd {
        #[command(flatten)]
        args: Args,
    }

    #[test]
    fn runs_must_be_positive() {
        use clap::Parser;
        let args = |v: &[&str]| Cmd::try_parse_from(std::iter::once("bench-compile").chain(v.iter().copied())).map(|c| c.args);
        assert!(args(&["f.tile", "--runs", "0"]).is_err());
        assert!(args(&["f.tile", "--runs=x"]).is_err());
        assert!(args(&[]).is_err(), "an input is required");
        assert_eq!(args(&["f.tile", "--runs=3"]).unwrap().runs, 3);
        assert_eq!(args(&["f.tile"]).unwrap().runs, 10);
}
}
