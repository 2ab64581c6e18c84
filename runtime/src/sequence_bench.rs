//! `tilec-bench --sequence`: a model's layer of BF16 GEMMs, repeated over
//! layers with weights of their own, launched back to back on one stream
//! ([`crate::sequence::Chain`]) and timed as one run per round three ways,
//! interleaved: our kernels without programmatic dependent launch, the same
//! with it, and cuBLAS. Before timing, each way runs the chain once with
//! every output poisoned and each step is checked against FP64 on sampled
//! rows of what it read. The report is `tilec-report`'s
//! [`SequenceReport`].

use crate::artifact::Artifact;
use crate::check::seed_from_time;
use crate::error::{Result, RuntimeError};
use crate::sequence::{launch_all, Chain, StepCheck};
use crate::timing::RunOptions;
use crate::{Cublas, Gemm, GemmSize, Gpu};
use tilec_report::kinds::sequence::{SequenceReport, SequenceRun, SequenceStep, CUBLAS, SCHEMA, TILEC, TILEC_PDL};
use tilec_report::schema::{date_utc, tflops, Stats};

/// What `tilec-bench --sequence` was asked for.
#[derive(Debug, Clone)]
pub struct SequenceArgs<'a> {
    /// How the ways are checked, timed and reported.
    pub run: RunOptions<'a>,
    /// One layer's GEMMs, in order.
    pub sizes: Vec<GemmSize>,
    /// The kernel of each step (folder name, artifact), in the same order.
    pub artifacts: Vec<(String, Artifact)>,
    /// Times the layer runs, each on weights of its own.
    pub layers: usize,
    /// The inputs' seed (from the clock when absent).
    pub seed: Option<u64>,
    /// The commit tilec-bench was built from.
    pub commit: Option<String>,
}

/// The check of one way: the worst step's error, and whether every step
/// passed (within the threshold, no element left non-finite).
fn verdict(checks: &[StepCheck], threshold: f64) -> (f64, bool) {
    (checks.iter().map(|c| c.rel_err).fold(0.0, f64::max), checks.iter().all(|c| c.pass(threshold)))
}

/// Runs the sequence on GPU 0, prints its table and writes the JSON report when asked.
pub fn run_sequence(args: &SequenceArgs) -> Result<SequenceReport> {
    if args.artifacts.len() != args.sizes.len() {
        return Err(RuntimeError::Other(format!("a sequence of {} steps needs one artifact per step, not {}", args.sizes.len(), args.artifacts.len())));
    }
    if args.layers == 0 {
        return Err(RuntimeError::Other("a sequence runs at least one layer".into()));
    }
    let gpu = Gpu::new(0)?;
    let timer = args.run.timer(&gpu);
    let blas = Cublas::new(gpu.stream.clone())?;
    let gemms = args.artifacts.iter().map(|(_, a)| Gemm::from_artifact(&gpu, a)).collect::<Result<Vec<_>>>()?;
    let seed = args.seed.unwrap_or_else(seed_from_time);
    let sizes: Vec<GemmSize> = (0..args.layers).flat_map(|_| args.sizes.iter().copied()).collect();
    let mut chain = Chain::new(&gpu, &sizes, seed)?;
    let mut bound = (0..chain.len()).map(|i| chain.bind(&gpu, i, &gemms[i % gemms.len()])).collect::<Result<Vec<_>>>()?;
    let created = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let mut report = SequenceReport {
        schema: SCHEMA.into(),
        device: gpu.name.clone(),
        date_utc: date_utc(created),
        commit: args.commit.clone(),
        command_line: args.run.command_line.to_vec(),
        seed,
        warmup: args.run.warmup,
        reps: args.run.reps,
        threshold: args.run.threshold,
        layers: args.layers,
        steps: args
            .sizes
            .iter()
            .zip(&args.artifacts)
            .map(|(s, (name, a))| SequenceStep { m: s.m, n: s.n, k: s.k, artifact: name.clone(), config: a.manifest.config.clone() })
            .collect(),
        chained: chain.chained(),
        runs: Vec::new(),
    };
    let stream = gpu.stream.clone();
    // Each way checked once, every output poisoned first.
    for name in [TILEC, TILEC_PDL, CUBLAS] {
        chain.poison(&gpu)?;
        match name {
            CUBLAS => chain.launch_cublas(&blas)?,
            _ => launch_all(&mut bound, &stream, name == TILEC_PDL)?,
        }
        gpu.sync(name)?;
        let (worst, pass) = verdict(&chain.check(&gpu)?, args.run.threshold);
        report.runs.push(SequenceRun { name: name.into(), worst_rel_err: Some(worst), pass, round_ms: Vec::new(), stats: None, tflops: None, error: None });
    }
    if report.runs.iter().all(|r| r.pass) {
        // Both of our ways launch the same bound kernels.
        let bound = std::cell::RefCell::new(&mut bound);
        let mut off = |_| launch_all(&mut bound.borrow_mut()[..], &stream, false);
        let mut on = |_| launch_all(&mut bound.borrow_mut()[..], &stream, true);
        let mut vendor = |_| chain.launch_cublas(&blas);
        let rounds = timer.time_rounds(args.run.warmup, args.run.reps, &mut [&mut off, &mut on, &mut vendor])?;
        let flops = report.flops();
        for (run, round_ms) in report.runs.iter_mut().zip(rounds) {
            run.stats = Stats::from_samples(&round_ms);
            run.tflops = run.stats.as_ref().map(|s| tflops(flops, s.median_ms));
            run.round_ms = round_ms;
        }
    } else {
        for run in report.runs.iter_mut().filter(|r| r.pass) {
            run.error = Some("not timed: another way failed its check".into());
        }
    }
    print!("{}", report.table());
    if let Some(path) = args.run.json {
        let text = serde_json::to_string_pretty(&report).map_err(|e| RuntimeError::Other(format!("sequence report: {e}")))?;
        std::fs::write(path, text).map_err(|e| RuntimeError::Other(format!("writing {path}: {e}")))?;
        println!("wrote {path}");
    }
    Ok(report)
}
