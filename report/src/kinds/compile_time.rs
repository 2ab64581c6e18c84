//! The compile-time report (`tilec-compile-time/1`), which `tilec
//! bench-compile --json` writes (src/bin/tilec/bench_compile.rs): per input file,
//! each compile stage's time over the runs, and the MLIR context's setup.

use crate::table::opt;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// The schema of a compile-time report.
pub const SCHEMA: &str = "tilec-compile-time/1";

/// A compile-time report ([`SCHEMA`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompileTime {
    /// [`SCHEMA`].
    pub schema: String,
    /// Seconds since the Unix epoch when the report was written.
    pub created_unix: u64,
    /// The command, `tilec bench-compile` first.
    pub command_line: Vec<String>,
    /// The machine that compiled.
    pub host: Host,
    /// Compiles per file.
    pub runs: u32,
    /// The `--shape` config selection chose for (`MxNxK`), or `None` for
    /// the program's default; records before the option have none.
    #[serde(default)]
    pub shape: Option<String>,
    /// The pass pipeline, or `default (config selection)`.
    pub pass_pipeline: String,
    /// Creating the MLIR and LLVM context.
    pub context_setup: ContextSetup,
    /// One entry per input file.
    pub files: Vec<FileTimes>,
}

/// The machine that compiled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Host {
    /// Its hardware threads.
    pub nproc: u32,
    /// Its CPU model (`None` off Linux: the writer reads /proc/cpuinfo).
    pub cpu: Option<String>,
}

/// The context's setup: the first one and the later ones.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextSetup {
    /// The first setup, ms (it loads the dialects).
    pub first_ms: f64,
    /// The others (`None` after a single compile).
    pub later: Option<Timing>,
}

/// Median, extremes and samples of one stage's time, ms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    /// Median, ms.
    pub median_ms: f64,
    /// Fastest, ms.
    pub min_ms: f64,
    /// Slowest, ms.
    pub max_ms: f64,
    /// Every run's time, ms.
    pub samples_ms: Vec<f64>,
}

/// One input file's compiles.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileTimes {
    /// The tile program.
    pub file: String,
    /// Size of the PTX it compiles to.
    pub ptx_bytes: u64,
    /// Each stage's time.
    pub stages: Stages,
    /// `tilec compile FILE -o DIR` as a whole process, each run a process of
    /// its own (`--processes`; records before the option have none).
    #[serde(default)]
    pub process: Option<Timing>,
}

/// The compile's stages, in the order they run, and the whole.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stages {
    /// Parse and verify.
    pub parse: Timing,
    /// The tile/nv passes.
    pub passes: Timing,
    /// Lowering nv to MLIR, with MLIR's parse.
    pub lower: Timing,
    /// The MLIR pass pipeline.
    pub mlir_pipeline: Timing,
    /// MLIR to LLVM IR.
    pub translate: Timing,
    /// LLVM's `default<O3>`.
    pub llvm_opt: Timing,
    /// NVPTX code generation.
    pub codegen: Timing,
    /// The whole compile.
    pub total: Timing,
}

impl Stages {
    /// Each stage by name, in order, `total` last.
    pub fn named(&self) -> [(&'static str, &Timing); 8] {
        [
            ("parse", &self.parse),
            ("passes", &self.passes),
            ("lower", &self.lower),
            ("mlir_pipeline", &self.mlir_pipeline),
            ("translate", &self.translate),
            ("llvm_opt", &self.llvm_opt),
            ("codegen", &self.codegen),
            ("total", &self.total),
        ]
    }
}

impl CompileTime {
    /// The command and host, the context's setup, then per file each
    /// stage's median, fastest and slowest time.
    pub fn table(&self) -> String {
        let mut s = format!("{}: {}\n", self.schema, self.command_line.join(" "));
        let _ = writeln!(s, "host: {} threads, {}; {} runs per file; passes: {}", self.host.nproc, self.host.cpu.as_deref().unwrap_or("CPU unknown"), self.runs, self.pass_pipeline);
        let later = self.context_setup.later.as_ref().map(|t| t.median_ms);
        let _ = writeln!(s, "MLIR context setup: first {:.3} ms, later median {} ms", self.context_setup.first_ms, opt(later, 3));
        for f in &self.files {
            let _ = writeln!(s, "\n{} ({} bytes of PTX)", f.file, f.ptx_bytes);
            let _ = writeln!(s, "  {:<16} {:>10} {:>10} {:>10}", "stage (ms)", "median", "min", "max");
            for (name, t) in f.stages.named() {
                let _ = writeln!(s, "  {name:<16} {:>10.3} {:>10.3} {:>10.3}", t.median_ms, t.min_ms, t.max_ms);
            }
            if let Some(t) = &f.process {
                let _ = writeln!(s, "  {:<16} {:>10.3} {:>10.3} {:>10.3}", "whole process", t.median_ms, t.min_ms, t.max_ms);
            }
        }
        s
    }
}
