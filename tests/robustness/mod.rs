//! Structure-aware fuzzing of the whole pipeline: tile programs that look
//! valid but are wrong (the examples and nv-level kernels with shapes,
//! element types, attributes, literals, operands and lines mutated, run
//! through real and shuffled pass orders), and the nesting cases. Each input
//! goes through parsing, verification, the passes (verifying after each),
//! the lowering to MLIR and, for a sample of those that lower, PTX. The
//! rules: no panic, no abort, every error located at a real `line:col` of
//! the input, each input within a time bound.
//!
//! CI runs a fixed seed and 2,000 inputs (about 20 seconds unoptimised);
//! `TILEC_FUZZ_COUNT` and `TILEC_FUZZ_SEED` run more, e.g.
//! `TILEC_FUZZ_COUNT=10000 cargo test --test backend robustness -- --nocapture`.

pub mod mutate;

use mutate::{Rng, Mutator};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::time::{Duration, Instant};
use tilec_backend::{mlir_to_ptx, BackendOptions};
use tilec_lower::lower_module;
use tilec_dialects::syntax::decode_source;
use tilec_dialects::{parse_module, verify_module, Diagnostic};
use tilec_passes::{Instrumentation, PassError, PassManager};

/// Per input: above the slowest input measured, optimised and unoptimised,
/// with the cores busy (docs/evidence.md, robustness/mod.rs, TIME_BOUND).
/// The bound catches a blow-up, not a slow build or a busy machine.
const TIME_BOUND: Duration = Duration::from_secs(if cfg!(debug_assertions) { 30 } else { 5 });
/// The stack of the tools' main thread.
const STACK: usize = 8 << 20;
const FILE: &str = "fuzz.tile";

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// How one input ended.
enum Outcome {
    Compiled,
    /// Every error it was rejected with.
    Rejected(Vec<Diagnostic>),
    /// An error without a location in the input, a panic, or a back-end
    /// rejection of the generated MLIR: a tilec bug.
    Bug(String),
}

/// Parses, verifies, runs `pipeline` and lowers `bytes`; PTX too when `ptx`.
fn compile(bytes: &[u8], pipeline: &str, ptx: bool) -> Outcome {
    let text = match decode_source(bytes, FILE) {
        Ok(t) => t,
        Err(d) => return Outcome::Rejected(vec![d]),
    };
    let module = parse_module(&text, FILE).map_err(|d| vec![d]).and_then(|m| verify_module(&m).map(|()| m).map_err(|all| all.0));
    let mut module = match module {
        Ok(m) => m,
        Err(all) => return Outcome::Rejected(all),
    };
    let mut pm = match PassManager::from_pipeline(pipeline, Instrumentation::default()) {
        Ok(pm) => pm,
        Err(e) => return Outcome::Bug(format!("the generated pipeline '{pipeline}' is invalid: {e}")),
    };
    match pm.run(&mut module, &mut std::io::sink()) {
        Ok(()) => {}
        Err(
            PassError::Order(diagnostic)
            | PassError::PassFailed { diagnostic, .. }
            | PassError::VerificationFailed { diagnostic, .. },
        ) => return Outcome::Rejected(vec![diagnostic]),
        Err(e) => return Outcome::Bug(e.to_string()),
    }
    if module.functions.is_empty() {
        return Outcome::Compiled;
    }
    let kernel = match lower_module(&module, &tilec::target::Target::DEFAULT) {
        Ok(k) => k,
        Err(d) => return Outcome::Rejected(vec![d]),
    };
    if ptx {
        let opts = BackendOptions { source_name: FILE.into(), ..BackendOptions::default() };
        if let Err(e) = mlir_to_ptx(&kernel.mlir, &opts) {
            return Outcome::Bug(format!("the back end rejected the generated MLIR: {e}"));
        }
    }
    Outcome::Compiled
}

/// The input's lines, to check that an error points into it.
fn located(d: &Diagnostic, bytes: &[u8]) -> bool {
    let lines = bytes.split(|&b| b == b'\n').count() as u32;
    &*d.loc.file == FILE && d.loc.line >= 1 && d.loc.line <= lines.max(1) && d.loc.col >= 1
}

#[derive(Default)]
struct Figures {
    inputs: u64,
    compiled: u64,
    rejected: u64,
    ptx: u64,
    /// The longest an input took, and its name.
    slowest: (Duration, String),
    failures: Vec<String>,
}

impl Figures {
    /// Runs one input on a thread with the tools' stack and checks the rules.
    fn run(&mut self, name: &str, bytes: Vec<u8>, pipeline: String, ptx: bool) {
        self.inputs += 1;
        let start = Instant::now();
        let worker = std::thread::Builder::new().stack_size(STACK).spawn(move || {
            let outcome = catch_unwind(AssertUnwindSafe(|| compile(&bytes, &pipeline, ptx)))
                .unwrap_or_else(|p| Outcome::Bug(format!("panic: {}", p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default())));
            (outcome, bytes, pipeline)
        });
        let (outcome, bytes, pipeline) = worker.expect("spawn").join().expect("the worker catches panics");
        let took = start.elapsed();
        if took > self.slowest.0 {
            self.slowest = (took, name.to_string());
        }
        let failure = match outcome {
            Outcome::Compiled => {
                self.compiled += 1;
                self.ptx += u64::from(ptx);
                None
            }
            Outcome::Rejected(all) if all.iter().all(|d| located(d, &bytes)) => {
                self.rejected += 1;
                None
            }
            Outcome::Rejected(all) => Some(format!("unlocated error: {}", all.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("\n"))),
            Outcome::Bug(e) => Some(e),
        };
        let failure = failure.or_else(|| (took > TIME_BOUND).then(|| format!("took {took:?}")));
        if let Some(why) = failure {
            let text = String::from_utf8_lossy(&bytes);
            self.failures.push(format!("{name} with '{pipeline}': {why}\n--- input ---\n{text}\n-------------"));
        }
    }
}

/// Deep nesting of each kind, just under and far over the limit.
fn nesting_cases() -> Vec<(String, String)> {
    let ifs = |n: usize| format!("tile.func @f(%c: i1) {{\n{}{}tile.return\n}}\n", "tile.if %c {\n".repeat(n), "tile.yield\n}\n".repeat(n));
    let fors = |n: usize| {
        let open: String = (0..n).map(|i| format!("tile.for %i{i} = %c0 to %n step %n {{\n")).collect();
        format!("tile.func @f(%n: index) {{\n%c0 = tile.constant 0 : index\n{open}{}tile.return\n}}\n", "tile.yield\n}\n".repeat(n))
    };
    let attrs = |n: usize| format!("tile.func @f() attributes {{x = {}{}}} {{\ntile.return\n}}\n", "[".repeat(n), "]".repeat(n));
    let mut cases = Vec::new();
    for n in [127, 128, 3563, 5455, 100_000] {
        cases.push((format!("{n} nested tile.if"), ifs(n.min(20_000))));
        cases.push((format!("{n} nested tile.for"), fors(n.min(20_000))));
        cases.push((format!("{n} nested brackets"), attrs(n)));
    }
    cases
}

#[test]
fn robustness() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let count = env_or("TILEC_FUZZ_COUNT", 2000);
    let seed = env_or("TILEC_FUZZ_SEED", 0x7113c);
    let mutator = Mutator::new(root);
    let mut rng = Rng::new(seed);
    let mut figures = Figures::default();
    let pipeline = format!("tile-select-config,{}", tilec_passes::DEFAULT_PIPELINE);
    for (name, text) in nesting_cases() {
        figures.run(&name, text.into_bytes(), pipeline.clone(), false);
    }
    for i in 0..count {
        let (name, bytes, pipeline) = mutator.generate(&mut rng);
        // PTX costs far more than the rest: one input in 20.
        figures.run(&format!("input {i} ({name})"), bytes, pipeline, i % 20 == 0);
    }
    println!(
        "robustness: {} inputs (seed {seed:#x}): {} compiled ({} to PTX), {} rejected with a located error, {} failures; slowest {:?} ({})",
        figures.inputs,
        figures.compiled,
        figures.ptx,
        figures.rejected,
        figures.failures.len(),
        figures.slowest.0,
        figures.slowest.1
    );
    assert!(figures.compiled > 0 && figures.rejected > 0, "the generator must produce both valid and invalid programs");
    assert!(figures.failures.is_empty(), "{} failure(s):\n{}", figures.failures.len(), figures.failures[..figures.failures.len().min(5)].join("\n"));
}
