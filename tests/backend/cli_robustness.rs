//! The command line under mutated inputs: the `tilec compile` binary on
//! the robustness generator's programs (mutated, or as written so that
//! config selection has a program to choose for) with random `--shape`,
//! `--param`, `--cluster`, `--candidate`, `--ranking` and `--target` flags,
//! to MLIR, or to an artifact and, where ptxas is found, `--verify-ptx`.
//! The rules: no panic (exit 101 or "panicked"), no crash by a signal, every
//! rejection of the input (exit 1) a located `FILE:LINE:COL: error:` inside
//! it, every usage error (exit 2) clap's `error:` about the command line,
//! and no input over the time bound.
//!
//! CI runs a fixed seed and a few inputs; `TILEC_CLI_FUZZ_COUNT`,
//! `TILEC_CLI_FUZZ_SEED`, `TILEC_CLI_FUZZ_JOBS` run more, and
//! `TILEC_CLI_FUZZ_JSON=PATH` writes the figures, e.g.
//! `TILEC_CLI_FUZZ_COUNT=10000 cargo test --release --test backend cli_robustness -- --nocapture`.

use crate::robustness::mutate::{Mutator, Rng};
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What the issue asks of every input, a build to PTX included.
const TIME_BOUND: Duration = Duration::from_secs(10);
/// Past this the child is killed and counted as over the bound.
const KILL_AFTER: Duration = Duration::from_secs(60);
const FILE: &str = "fuzz.tile";

/// A number from the environment, decimal or `0x` hexadecimal.
fn env_or(name: &str, default: u64) -> u64 {
    let parse = |v: String| match v.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => v.parse().ok(),
    };
    std::env::var(name).ok().and_then(parse).unwrap_or(default)
}

/// Dimensions of every kind: aligned and not (rows of 60 BF16 or 100 FP8
/// elements), one tile or many, up to the kernels' i32 limit.
const DIMS: [&str; 21] = [
    "1", "7", "8", "16", "60", "64", "100", "121", "128", "129", "200", "256", "512", "1000", "2112", "4096", "4100", "7168", "16384", "65536", "2147483647",
];
/// Each pin with values the passes build, and values out of its range
/// (drawn as rarely as [`BAD`]).
const PARAMS: [(&str, &[&str], &[&str]); 4] = [
    ("BLOCK_M", &["64", "128", "256"], &["96", "512"]),
    ("BLOCK_N", &["16", "32", "48", "64", "112", "128", "144", "192", "208", "256"], &["100", "272"]),
    ("BLOCK_K", &["16", "32", "64", "128"], &["48", "256"]),
    ("STAGES", &["1", "2", "3", "4", "5", "8", "16"], &["17", "64"]),
];
const CLUSTERS: [&str; 3] = ["m", "n", "none"];
/// Values no flag takes, one in [`BAD_ONE_IN`] draws.
const BAD: [&str; 6] = ["0", "-8", "2147483648", "x", "", "BLOCK_Q"];
const BAD_ONE_IN: usize = 40;

/// The flags of one run, drawn from `rng`.
fn flags(rng: &mut Rng) -> Vec<String> {
    let mut out = Vec::new();
    let pick = |rng: &mut Rng, items: &[&str]| {
        let items = if rng.below(BAD_ONE_IN) == 0 { &BAD[..] } else { items };
        items[rng.below(items.len())].to_string()
    };
    if rng.below(5) > 0 {
        let dims: Vec<String> = (0..3).map(|_| pick(rng, &DIMS)).collect();
        out.extend(["--shape".to_string(), dims.join("x")]);
    }
    // Distinct names, from a rotation of the list (a repeated name is a
    // usage error of its own, drawn as often as any other bad value).
    let first = rng.below(PARAMS.len());
    let repeat = rng.below(BAD_ONE_IN) == 0;
    for j in 0..rng.below(PARAMS.len() + 1) {
        let (name, good, out_of_range) = PARAMS[if repeat { first } else { (first + j) % PARAMS.len() }];
        let value = if rng.below(BAD_ONE_IN) == 0 { out_of_range[rng.below(out_of_range.len())].to_string() } else { pick(rng, good) };
        out.extend(["--param".to_string(), format!("{name}={value}")]);
    }
    if rng.below(3) == 0 {
        out.extend(["--cluster".to_string(), pick(rng, &CLUSTERS)]);
    }
    if rng.below(8) == 0 {
        out.extend(["--candidate".to_string(), (1 + rng.below(12)).to_string()]);
    }
    if rng.below(8) == 0 {
        out.extend(["--ranking".to_string(), pick(rng, &["model", "rules"])]);
    }
    if rng.below(8) == 0 {
        out.extend(["--target".to_string(), pick(rng, &["h100", "h200"])]);
    }
    out
}

/// How one run ended.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Outcome {
    Compiled,
    Rejected,
    Usage,
    /// `--verify-ptx` refused the PTX of an input that compiled (spills or
    /// serialised wgmma): a finding about the code generated, counted and
    /// listed apart, since the lit suite's ptxas tests are where the code a
    /// config must get is asserted.
    PtxasFinding,
    /// A panic, a crash, an unlocated error or any other exit status.
    Bug,
}

/// One run's result.
struct Run {
    outcome: Outcome,
    ptx: bool,
    took: Duration,
    why: Option<String>,
    /// ptxas's first line, for a [`Outcome::PtxasFinding`].
    ptxas_says: String,
}

/// The severity of `line` when it is a diagnostic located inside an input
/// of `lines` lines (`FILE:LINE:COL: error: ...`).
fn located(line: &str, lines: usize) -> Option<&str> {
    let rest = line.strip_prefix(&format!("{FILE}:"))?;
    let mut parts = rest.splitn(3, ':');
    let (l, c, tail) = (parts.next()?.parse::<usize>().ok()?, parts.next()?.parse::<usize>().ok()?, parts.next()?);
    let severity = ["error", "warning", "note"].into_iter().find(|s| tail.starts_with(&format!(" {s}: ")))?;
    ((1..=lines.max(1)).contains(&l) && c >= 1).then_some(severity)
}

/// Whether a rejection says why only at places in the input: at least one
/// located error, and no diagnostic without a place (the echoed source
/// lines and carets between them aside).
fn rejected_in_place(stderr: &str, lines: usize) -> bool {
    let mut errors = 0;
    for line in stderr.lines() {
        match located(line, lines) {
            Some(severity) => errors += usize::from(severity == "error"),
            None if line.starts_with(FILE) || line.starts_with("error:") || line.starts_with("tilec:") => return false,
            None => {}
        }
    }
    errors > 0
}

/// Runs `tilec compile` on `bytes` in `dir` with `flags`.
fn run(tilec: &Path, dir: &Path, bytes: &[u8], flags: &[String], ptx: bool, ptxas: Option<&str>) -> Run {
    std::fs::write(dir.join(FILE), bytes).expect("write the input");
    let mut cmd = Command::new(tilec);
    cmd.current_dir(dir).args(["compile", FILE]).args(flags);
    if ptx {
        cmd.args(["-o", "out"]);
        if let Some(ptxas) = ptxas {
            cmd.arg("--verify-ptx").env("TILEC_PTXAS", ptxas);
        }
    } else {
        cmd.arg("--emit=mlir");
    }
    let start = Instant::now();
    let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("start tilec");
    let mut stderr = child.stderr.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        stderr.read_to_string(&mut text).map(|_| text).unwrap_or_default()
    });
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for tilec") {
            break Some(status);
        }
        if start.elapsed() > KILL_AFTER {
            child.kill().expect("kill tilec");
            child.wait().expect("reap tilec");
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let took = start.elapsed();
    let stderr = reader.join().expect("the reader thread");
    let lines = bytes.split(|&b| b == b'\n').count();
    let first = stderr.lines().next().unwrap_or("");
    // ptxas's refusal, after any located warnings the compile printed.
    let verify_ptx = stderr.lines().find(|l| l.starts_with(&format!("{FILE}: error: "))).filter(|l| l.starts_with(&format!("{FILE}: error: --verify-ptx: ")));
    let (outcome, why) = match status.map(|s| s.code()) {
        _ if stderr.contains("panicked") => (Outcome::Bug, Some("panicked".to_string())),
        None => (Outcome::Bug, Some(format!("killed after {KILL_AFTER:?}"))),
        Some(None) => (Outcome::Bug, Some("ended by a signal".to_string())),
        Some(Some(0)) => (Outcome::Compiled, None),
        Some(Some(1)) if rejected_in_place(&stderr, lines) => (Outcome::Rejected, None),
        Some(Some(1)) if ptxas.is_some() && verify_ptx.is_some() => (Outcome::PtxasFinding, None),
        Some(Some(1)) => (Outcome::Bug, Some("unlocated error".to_string())),
        Some(Some(2)) if first.starts_with("error: ") || first.starts_with("tilec: error: ") => (Outcome::Usage, None),
        Some(Some(code)) => (Outcome::Bug, Some(format!("exit status {code}"))),
    };
    let why = why.or_else(|| (took > TIME_BOUND).then(|| format!("took {took:?}"))).map(|w| format!("{w}:\n{stderr}"));
    let outcome = if why.is_some() { Outcome::Bug } else { outcome };
    let ptxas_says = if outcome == Outcome::PtxasFinding { verify_ptx.unwrap_or_default().to_string() } else { String::new() };
    Run { outcome, ptx: ptx && outcome == Outcome::Compiled, took, why, ptxas_says }
}

/// The per-input generator: the same inputs whichever worker runs them.
fn input_rng(seed: u64, i: u64) -> Rng {
    let mut z = seed ^ i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    Rng::new(z ^ (z >> 31))
}

#[derive(Default)]
struct Figures {
    compiled: u64,
    rejected: u64,
    usage: u64,
    ptx: u64,
    verified: u64,
    ptxas_findings: Vec<String>,
    panics: u64,
    unlocated: u64,
    over_time: u64,
    other: u64,
    slowest: (Duration, String),
    failures: Vec<String>,
}

#[test]
fn cli_robustness() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tilec = Path::new(env!("CARGO_BIN_EXE_tilec"));
    let count = env_or("TILEC_CLI_FUZZ_COUNT", 60);
    let seed = env_or("TILEC_CLI_FUZZ_SEED", 0xc11);
    let jobs = env_or("TILEC_CLI_FUZZ_JOBS", 2).max(1);
    // Without ptxas the artifacts go unassembled, as the JSON's `ptxas` says.
    let ptxas = crate::ptxas::find(root).unwrap_or_else(|e| panic!("{e}")).map(|p| p.display().to_string());
    let mutator = Mutator::new(root);
    let started = Instant::now();
    let figures = std::sync::Mutex::new(Figures::default());
    std::thread::scope(|scope| {
        for job in 0..jobs {
            let (mutator, figures, ptxas) = (&mutator, &figures, &ptxas);
            scope.spawn(move || {
                let dir = std::env::temp_dir().join(format!("tilec-cli-fuzz-{}-{job}", std::process::id()));
                std::fs::create_dir_all(&dir).expect("a scratch folder");
                for i in (job..count).step_by(jobs as usize) {
                    let mut rng = input_rng(seed, i);
                    // Half the inputs as written, so that the flags reach
                    // config selection and the passes after it.
                    let (name, bytes) = if rng.below(2) == 0 { mutator.original(&mut rng) } else { mutator.mutated(&mut rng) };
                    let flags = flags(&mut rng);
                    // An artifact, PTX through LLVM, costs the most: one in four.
                    let ptx = rng.below(4) == 0;
                    let verify = ptx && ptxas.is_some() && rng.below(2) == 0;
                    let r = run(tilec, &dir, &bytes, &flags, ptx, ptxas.as_deref().filter(|_| verify));
                    let mut f = figures.lock().expect("no worker panics holding it");
                    match r.outcome {
                        Outcome::Compiled => f.compiled += 1,
                        Outcome::Rejected => f.rejected += 1,
                        Outcome::Usage => f.usage += 1,
                        Outcome::PtxasFinding | Outcome::Bug => {}
                    }
                    f.ptx += u64::from(r.ptx);
                    f.verified += u64::from(r.ptx && verify);
                    let label = format!("input {i} ({name}) with {}", flags.join(" "));
                    if r.outcome == Outcome::PtxasFinding {
                        f.ptxas_findings.push(format!("{label}: {}", r.ptxas_says));
                    }
                    if r.took > f.slowest.0 {
                        f.slowest = (r.took, label.clone());
                    }
                    if let Some(why) = r.why {
                        match why.split(':').next().unwrap_or("") {
                            "panicked" => f.panics += 1,
                            "unlocated error" => f.unlocated += 1,
                            w if w.starts_with("took") || w.starts_with("killed") => f.over_time += 1,
                            _ => f.other += 1,
                        }
                        f.failures.push(format!("{label}: {why}--- input ---\n{}\n-------------", String::from_utf8_lossy(&bytes)));
                    }
                }
                std::fs::remove_dir_all(&dir).ok();
            });
        }
    });
    let f = figures.into_inner().expect("no worker panicked");
    let elapsed = started.elapsed();
    println!(
        "cli robustness: {count} inputs (seed {seed:#x}): {} compiled ({} to an artifact, {} through ptxas), {} rejected with a located error, {} usage errors, {} refused by ptxas; {} panics, {} unlocated errors, {} over {TIME_BOUND:?}, {} other failures; slowest {:?} ({}); {:.0} s",
        f.compiled, f.ptx, f.verified, f.rejected, f.usage, f.ptxas_findings.len(), f.panics, f.unlocated, f.over_time, f.other, f.slowest.0, f.slowest.1, elapsed.as_secs_f64()
    );
    if let Ok(path) = std::env::var("TILEC_CLI_FUZZ_JSON") {
        let json = serde_json::json!({
            // tilec-report reads the figures by this schema.
            "schema": "tilec-cli-robustness/1",
            "test": "tests/backend/cli_robustness.rs",
            "command": format!("TILEC_CLI_FUZZ_COUNT={count} TILEC_CLI_FUZZ_SEED={seed} TILEC_CLI_FUZZ_JOBS={jobs} cargo test --release --test backend cli_robustness"),
            "seed": seed,
            "inputs": count,
            "jobs": jobs,
            "ptxas": ptxas,
            "compiled": f.compiled,
            "compiled_to_artifact": f.ptx,
            "assembled_by_ptxas": f.verified,
            "rejected_located": f.rejected,
            "usage_errors": f.usage,
            "refused_by_ptxas": f.ptxas_findings.len(),
            "ptxas_findings": f.ptxas_findings,
            "panics": f.panics,
            "unlocated_errors": f.unlocated,
            "over_time_bound": f.over_time,
            "other_failures": f.other,
            "time_bound_s": TIME_BOUND.as_secs(),
            "slowest_s": f.slowest.0.as_secs_f64(),
            "slowest_input": f.slowest.1,
            "elapsed_s": elapsed.as_secs_f64(),
        });
        std::fs::write(&path, serde_json::to_string_pretty(&json).expect("JSON") + "\n").expect("write the figures");
    }
    for finding in &f.ptxas_findings {
        println!("cli robustness: ptxas finding: {finding}");
    }
    assert!(f.compiled > 0 && f.rejected > 0, "the generator must produce inputs that compile and inputs that are rejected");
    assert!(f.failures.is_empty(), "{} failure(s):\n{}", f.failures.len(), f.failures[..f.failures.len().min(5)].join("\n"));
}
