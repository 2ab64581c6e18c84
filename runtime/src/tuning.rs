//! `tilec-bench --tuning FILE`: the benchmark's run of several candidate
//! kernels of a problem recorded as that problem's entry of a tuning file
//! (`tilec_artifact::Tuning`): the fastest kernel whose output passed its
//! check, by the configuration its manifest names, which `tilec compile
//! --tuning FILE` then takes for the shape.

use std::collections::HashMap;
use tilec_artifact::{TunedShape, Tuning};
use tilec_report::schema::{RunKind, RunResult, ShapeResult};

/// The entries a benchmark's `results` measure: for each (dtype, shape),
/// the fastest of our runs that passed a check and whose artifact names its
/// config (`configs`: artifact directory to the config its manifest names).
/// Shapes whose kernels fuse an epilogue are left out: a tuning entry is a
/// plain GEMM's (dtype and shape), which an epilogue's best config need not be.
pub fn tuned_shapes(results: &[ShapeResult], configs: &HashMap<String, String>) -> Vec<TunedShape> {
    let median = |r: &RunResult| r.stats.as_ref().map(|s| s.median_ms);
    let tuned = |r: &&RunResult| r.kind == RunKind::Ours && r.usable() && r.check.as_ref().is_some_and(|c| c.pass) && configs.contains_key(&r.name);
    results
        .iter()
        .filter(|shape| shape.epilogue.is_none())
        .filter_map(|shape| {
            let ours: Vec<&RunResult> = shape.runs.iter().filter(tuned).collect();
            let best = ours.iter().filter_map(|r| Some((median(r)?, *r))).min_by(|a, b| a.0.total_cmp(&b.0))?;
            let vendor = shape.runs.iter().filter(|r| r.kind == RunKind::Baseline && r.usable()).filter_map(median).min_by(f64::total_cmp);
            Some(TunedShape {
                dtype: shape.dtype.name().into(),
                m: shape.m,
                n: shape.n,
                k: shape.k,
                config: configs[&best.1.name].clone(),
                median_ms: best.0,
                vendor_ms: vendor,
                candidates: ours.len(),
            })
        })
        .collect()
}

/// Adds the entries `results` measure to `tuning`, replacing older ones
/// for the same problems; how many it added.
pub fn record(tuning: &mut Tuning, results: &[ShapeResult], configs: &HashMap<String, String>) -> usize {
    let entries = tuned_shapes(results, configs);
    let count = entries.len();
    entries.into_iter().for_each(|e| tuning.upsert(e));
    count
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilec_report::schema::{BenchDtype, Check, Peaks, Shape};

    fn run(name: &str, kind: RunKind, ms: f64, pass: bool, shape: Shape) -> RunResult {
        let mut r = RunResult::new(name, kind);
        r.check = Some(Check { reference: "cublas".into(), rel_err: Some(if pass { 1e-4 } else { 1.0 }), threshold: 1e-2, pass });
        if pass {
            r.set_rounds(vec![ms; 5], shape, BenchDtype::Bf16);
        }
        r
    }

    #[test]
    fn the_fastest_checked_kernel_with_a_config_is_the_entry() {
        let shape = Shape::new(512, 512, 65536);
        let mut result = ShapeResult::new(shape, BenchDtype::Bf16);
        result.runs = vec![
            run("cublas", RunKind::Baseline, 0.05, true, shape),
            run("a/r1", RunKind::Ours, 0.07, true, shape),
            run("a/r2", RunKind::Ours, 0.06, true, shape),
            run("a/r3", RunKind::Ours, 0.01, false, shape),
            run("a/r4", RunKind::Ours, 0.04, true, shape),
        ];
        result.summarize(&Peaks::of(&tilec_target::Target::H200));
        // r4 names no config: it cannot be taken by a compile.
        let configs: HashMap<String, String> = ["a/r1", "a/r2", "a/r3"].iter().map(|d| (d.to_string(), format!("config of {d}"))).collect();
        let entries = tuned_shapes(std::slice::from_ref(&result), &configs);
        assert_eq!(entries.len(), 1);
        let e = &entries[0];
        assert_eq!((e.dtype.as_str(), e.m, e.n, e.k, e.config.as_str(), e.candidates), ("bf16", 512, 512, 65536, "config of a/r2", 2));
        assert!((e.median_ms - 0.06).abs() < 1e-12 && e.vendor_ms.is_some_and(|v| (v - 0.05).abs() < 1e-12));
        let mut tuning = Tuning::new(&tilec_target::Target::H200);
        assert_eq!(record(&mut tuning, std::slice::from_ref(&result), &configs), 1);
        assert_eq!(tuning.validate(), Ok(()));
        // The same runs of a fused epilogue are no plain GEMM's tuning.
        result.epilogue = Some(tilec_report::schema::EpilogueBaseline {
            kind: "bias_gelu".into(),
            baselines: vec!["cublaslt-gelu-bias".into()],
            fused: true,
            note: None,
        });
        assert!(tuned_shapes(&[result], &configs).is_empty());
    }
}
