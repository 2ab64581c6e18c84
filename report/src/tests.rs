//! Unit tests of the report: schema, summary, tables, comparison, chart.

use crate::compare::format_compare;
use crate::schema::*;
use crate::summary::*;
use crate::table::*;
use tilec_target::Target;

#[test]
fn flop_and_byte_counts() {
    let s = Shape::new(4096, 4096, 4096);
    assert_eq!(s.flops(), 2.0 * 4096f64.powi(3));
    // bf16: A, B read once (2 B each), C written once (2 B).
    assert_eq!(s.min_bytes(BenchDtype::Bf16), 3 * 4096 * 4096 * 2);
    // fp8: A and B one byte, C bf16.
    assert_eq!(s.min_bytes(BenchDtype::Fp8), 2 * 4096 * 4096 + 4096 * 4096 * 2);
    let d = Shape::new(64, 2112, 7168);
    assert_eq!(d.min_bytes(BenchDtype::Bf16), (64 * 7168 + 2112 * 7168) * 2 + 64 * 2112 * 2);
    assert!(d.is_small_m() && !s.is_small_m());
    // 1 ms for 2*4096^3 flops is 137.4 TFLOP/s; 1 GB in 1 ms is 1000 GB/s.
    assert!((tflops(s.flops(), 1.0) - 137.438953472).abs() < 1e-9);
    assert!((gbps(1_000_000_000, 1.0) - 1000.0).abs() < 1e-9);
}

#[test]
fn stats_and_percentiles() {
    let v: Vec<f64> = (1..=11).map(|x| x as f64).collect();
    assert_eq!(percentile(&v, 0.5), 6.0);
    assert_eq!(percentile(&v, 0.0), 1.0);
    assert_eq!(percentile(&v, 1.0), 11.0);
    assert!((percentile(&v, 0.1) - 2.0).abs() < 1e-12);
    assert!((percentile(&[1.0, 2.0], 0.5) - 1.5).abs() < 1e-12);
    assert!(percentile(&[], 0.5).is_nan());
    // Unsorted input with an outlier.
    let s = Stats::from_samples(&[5.0, 1.0, 3.0, 2.0, 4.0, 100.0]).unwrap();
    assert_eq!(s.reps, 6);
    assert_eq!(s.min_ms, 1.0);
    assert_eq!(s.max_ms, 100.0);
    assert!((s.median_ms - 3.5).abs() < 1e-12);
    assert!((s.mean_ms - 115.0 / 6.0).abs() < 1e-12);
    assert!(s.p10_ms <= s.p25_ms && s.p25_ms <= s.median_ms && s.median_ms <= s.p75_ms && s.p75_ms <= s.p90_ms);
    assert!(Stats::from_samples(&[]).is_none());
    assert!(Stats::from_samples(&[1.0, f64::NAN]).is_none());
    let one = Stats::from_samples(&[2.0]).unwrap();
    assert_eq!((one.median_ms, one.p10_ms, one.p90_ms, one.spread()), (2.0, 2.0, 2.0, 0.0));
}

fn run_with_rounds(name: &str, kind: RunKind, rounds: &[f64], shape: Shape) -> RunResult {
    let mut r = RunResult::new(name, kind);
    r.check = Some(Check { reference: "cublas".into(), rel_err: Some(1e-3), threshold: 1e-2, pass: true });
    r.set_rounds(rounds.to_vec(), shape, BenchDtype::Bf16);
    r
}

fn failed_run(name: &str, kind: RunKind) -> RunResult {
    let mut r = RunResult::new(name, kind);
    r.check = Some(Check { reference: "cublas".into(), rel_err: None, threshold: 1e-2, pass: false });
    r.error = Some("check failed; not timed".into());
    r
}

/// Three shapes: one timed in rounds with a failed candidate of ours and a
/// failed baseline, one with only failed candidates, one of baselines only.
fn sample_report() -> Report {
    let peaks = Peaks::of(&Target::H100);
    let small = Shape::new(64, 2112, 7168);
    let mut r = ShapeResult::new(small, BenchDtype::Bf16);
    r.rotate_sets = 7;
    r.seed = 42;
    r.runs = vec![
        run_with_rounds("cublas", RunKind::Baseline, &[1.5, 1.6, 1.5, 1.4, 1.5], small),
        failed_run("cublaslt", RunKind::Baseline),
        run_with_rounds("artifacts/gemm_128x128", RunKind::Ours, &[2.0, 2.0, 2.2, 1.8, 2.0], small),
        failed_run("artifacts/bad", RunKind::Ours),
    ];
    r.summarize(&peaks);
    let square = Shape::new(4096, 4096, 4096);
    let mut only_failed = ShapeResult::new(square, BenchDtype::Bf16);
    only_failed.runs = vec![
        run_with_rounds("cublas", RunKind::Baseline, &[0.2, 0.2, 0.2], square),
        failed_run("artifacts/bad", RunKind::Ours),
    ];
    only_failed.summarize(&peaks);
    let mut f = ShapeResult::new(square, BenchDtype::Fp8);
    let mut fl = RunResult::new("cublaslt-fp8", RunKind::Baseline);
    fl.set_rounds(vec![0.1, 0.1, 0.1], square, BenchDtype::Fp8);
    f.runs = vec![fl];
    f.summarize(&peaks);
    Report {
        schema: SCHEMA.into(),
        created_unix: 1,
        date_utc: date_utc(1),
        commit: Some("0123456789abcdef0123456789abcdef01234567".into()),
        command_line: vec!["tilec-bench".into(), "--artifact".into(), "artifacts/gemm_128x128".into()],
        device: DeviceInfo {
            name: "NVIDIA H100 80GB HBM3".into(),
            target: "h100".into(),
            sm: "sm_90".into(),
            num_sms: 132,
            l2_bytes: 50 << 20,
            memory_bytes: 85_017_493_504,
            driver: "13.0".into(),
            cublas_version: None,
            cublaslt_version: None,
        },
        config: BenchConfig {
            warmup: 10,
            reps: 100,
            dtypes: vec![BenchDtype::Bf16, BenchDtype::Fp8],
            threshold: 1e-2,
            l2_factor: 4.0,
            max_sets: 64,
            max_run_ms: 3000.0,
            baseline_only: false,
            jit_cache_disabled: true,
            spin_kernel: true,
            interleaved: true,
            fp8_scale_a: 0.5,
            fp8_scale_b: 0.25,
            seed: 42,
        },
        peaks,
        artifacts: vec![ArtifactInfo {
            dir: "artifacts/gemm_128x128".into(),
            entry: "gemm".into(),
            kernel_name: "gemm".into(),
            dtype: Some(BenchDtype::Bf16),
            block: [384, 1, 1],
            cluster: [2, 1, 1],
            dynamic_smem_bytes: 200000,
            config: Some(KernelConfig {
                target: "sm_90a".into(),
                grid: serde_json::json!({"rule": "tiles", "block_m": 128, "block_n": 128}),
                tma_boxes: vec![TmaBox { tensor: "A".into(), box_dims: vec![128, 64], swizzle: "128B".into() }],
            }),
            module_load_ms: Some(110.0),
            first_launch_ms: None,
            num_regs: Some(168),
            static_smem_bytes: Some(0),
            error: None,
        }],
        results: vec![r, only_failed, f],
    }
}

#[test]
fn summary_picks_usable_best_and_ratio_per_round() {
    let rep = sample_report();
    let r = &rep.results[0];
    // cuBLASLt failed its check, so cuBLAS is the best baseline.
    assert_eq!(r.best_ours.as_deref(), Some("artifacts/gemm_128x128"));
    assert_eq!(r.best_baseline.as_deref(), Some("cublas"));
    // Per-round ratios 0.75, 0.8, 0.682, 0.778, 0.75: median 0.75.
    let q = r.ratio_stats.as_ref().unwrap();
    assert_eq!(q.from, "rounds");
    assert!((r.ratio.unwrap() - 0.75).abs() < 1e-12);
    assert!((q.p10 - (1.5 / 2.2 * 0.6 + 0.75 * 0.4)).abs() < 1e-12, "{q:?}");
    assert!((q.p90 - (0.7 / 0.9 * 0.4 + 0.8 * 0.6)).abs() < 1e-12, "{q:?}");
    // Percent of peak and of HBM bandwidth from the median time.
    let ours = r.run("artifacts/gemm_128x128").unwrap();
    assert!((ours.pct_peak.unwrap() - ours.tflops.unwrap() / 989.0 * 100.0).abs() < 1e-9);
    assert!((ours.pct_hbm.unwrap() - ours.gbps.unwrap() / 3350.0 * 100.0).abs() < 1e-9);
    // 64x2112x7168 BF16 is memory-bound on the H100: its roofline is what
    // 3.35 TB/s allows with A, B and C moved once.
    let bytes = ((64 * 7168 + 2112 * 7168) * 2 + 64 * 2112 * 2) as f64;
    let roofline = 2.0 * 64.0 * 2112.0 * 7168.0 * 3350e9 / bytes / 1e12;
    assert!(roofline < 989.0);
    assert!((ours.pct_roofline.unwrap() - ours.tflops.unwrap() / roofline * 100.0).abs() < 1e-9);
    // A failed candidate does not make the row fail: its kernel passed.
    assert!(r.any_check_failed());
    assert_eq!(r.row_check(), RowCheck::Ok);
    // No candidate of ours passed: the row fails.
    assert_eq!(rep.results[1].row_check(), RowCheck::Fail);
    assert_eq!(rep.results[1].ratio, None);
    let f = &rep.results[2];
    assert_eq!((f.best_ours.as_deref(), f.best_baseline.as_deref()), (None, Some("cublaslt-fp8")));
    assert_eq!((f.ratio, f.row_check()), (None, RowCheck::NoOurs));
    // An error beats everything else.
    let mut e = rep.results[0].clone();
    e.error = Some("out of memory".into());
    assert_eq!(e.row_check(), RowCheck::Error);
}

#[test]
fn ratio_from_medians_without_rounds() {
    let shape = Shape::new(128, 7168, 2048);
    let mut r = ShapeResult::new(shape, BenchDtype::Bf16);
    let mut ours = run_with_rounds("ours", RunKind::Ours, &[2.0, 1.0, 4.0, 2.0, 2.0], shape);
    let base = run_with_rounds("cublas", RunKind::Baseline, &[1.0, 1.0, 1.0], shape);
    ours.round_ms.clear();
    r.runs = vec![ours, base];
    r.summarize(&Peaks::of(&Target::H100));
    let q = r.ratio_stats.unwrap();
    assert_eq!(q.from, "medians");
    assert_eq!(q.median, 0.5);
    let st = r.runs[0].stats.as_ref().unwrap();
    assert_eq!((q.p10, q.p90), (1.0 / st.p90_ms, 1.0 / st.p10_ms));
}

#[test]
fn json_round_trip_and_older_schema() {
    let rep = sample_report();
    let text = rep.to_json();
    let back = Report::from_json(&text).unwrap();
    assert_eq!(back, rep);
    // Field names other tools read.
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["schema"], "tilec-bench/3");
    assert_eq!(v["commit"], "0123456789abcdef0123456789abcdef01234567");
    assert_eq!(v["date_utc"], "1970-01-01 00:00:01");
    assert_eq!(v["peaks"]["bf16_tflops"], 989.0);
    assert_eq!(v["peaks"]["hbm_gbps"], 3350.0);
    assert_eq!(v["device"]["target"], "h100");
    assert_eq!(v["results"][0]["dtype"], "bf16");
    assert_eq!(v["results"][2]["dtype"], "fp8");
    assert_eq!(v["results"][0]["runs"][2]["kind"], "ours");
    assert_eq!(v["results"][0]["runs"][2]["round_ms"].as_array().unwrap().len(), 5);
    assert!(v["results"][0]["runs"][1]["check"]["rel_err"].is_null(), "NaN error is written as null");
    assert_eq!(v["artifacts"][0]["config"]["grid"]["block_m"], 128);
    assert_eq!(v["results"][0]["ratio_stats"]["from"], "rounds");
    // A plain shape writes no epilogue.
    assert!(v["results"][0].get("epilogue").is_none());
    // The previous schemas still load; an unknown one does not.
    for older in ["tilec-bench/2", "tilec-bench/1"] {
        let old = text.replace("tilec-bench/3", older);
        assert_eq!(Report::from_json(&old).unwrap().results, rep.results);
    }
    assert!(Report::from_json(&text.replace("tilec-bench/3", "tilec-bench/0")).is_err());
}

#[test]
fn a_shape_names_its_epilogue_baseline() {
    let mut rep = sample_report();
    rep.results[0].epilogue = Some(EpilogueBaseline {
        kind: "bias_gelu".into(),
        baselines: vec!["cublaslt-gelu-bias".into()],
        fused: true,
        note: None,
    });
    let text = rep.to_json();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["results"][0]["epilogue"]["kind"], "bias_gelu");
    assert_eq!(v["results"][0]["epilogue"]["baselines"][0], "cublaslt-gelu-bias");
    assert!(v["results"][0]["epilogue"].get("note").is_none());
    assert_eq!(Report::from_json(&text).unwrap(), rep);
    // A gated epilogue (SwiGLU's interleaved gate and up): the GEMM to a scratch product, then the element-wise kernel.
    rep.results[0].epilogue = Some(EpilogueBaseline {
        kind: "gated".into(),
        baselines: vec!["cublaslt+nvrtc-epilogue".into()],
        fused: false,
        note: Some("2 parts interleaved in runs of 128 columns".into()),
    });
    let text = rep.to_json();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["results"][0]["epilogue"]["kind"], "gated");
    assert_eq!(v["results"][0]["epilogue"]["fused"], false);
    assert_eq!(v["results"][0]["epilogue"]["baselines"][0], "cublaslt+nvrtc-epilogue");
    assert_eq!(Report::from_json(&text).unwrap(), rep);
}

const H100_2026_11_22: &str = include_str!("../../docs/benchmarks/2026-11-22-h100.json");

/// Every `tilec-bench` report committed under docs/benchmarks still loads;
/// they predate the device's target, which reads as unknown.
#[test]
fn committed_reports_load_with_an_unknown_target() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/benchmarks");
    let mut loaded = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        let text = match path.extension().and_then(|e| e.to_str()) {
            Some("json") => std::fs::read_to_string(&path).unwrap(),
            _ => continue,
        };
        if !text.contains("\"schema\": \"tilec-bench/") {
            continue;
        }
        let rep = Report::from_json(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(rep.device.target, UNKNOWN_TARGET, "{}", path.display());
        loaded += 1;
    }
    assert!(loaded >= 8, "only {loaded} reports found in {}", dir.display());
}

#[test]
fn old_report_loads_with_every_row_ok() {
    let rep = Report::from_json(H100_2026_11_22).unwrap();
    assert_eq!(rep.schema, "tilec-bench/1");
    assert_eq!(rep.date_utc, date_utc(rep.created_unix));
    assert_eq!(rep.results.len(), 20);
    // One candidate failed its check on 16 shapes; every row's kernel passed.
    assert_eq!(rep.results.iter().filter(|r| r.any_check_failed()).count(), 16);
    assert!(rep.results.iter().all(|r| r.row_check() == RowCheck::Ok));
    // Without rounds the ratio is that of the medians, as the run printed it.
    let first = &rep.results[0];
    assert_eq!(first.ratio_stats.as_ref().unwrap().from, "medians");
    assert!((first.ratio.unwrap() - 0.872621024407043).abs() < 1e-6);
    let means = group_means(&rep.results);
    let labels: Vec<String> = means.iter().map(GroupMean::label).collect();
    assert_eq!(labels, ["bf16 square", "bf16 M=64", "bf16 M=128", "bf16 M=4096", "bf16 all"]);
    assert_eq!(means.iter().map(|m| m.shapes).collect::<Vec<_>>(), [2, 6, 6, 6, 20]);
}

#[test]
fn groups_and_geomeans() {
    assert_eq!(ShapeGroup::of(Shape::new(4096, 4096, 4096)), ShapeGroup::Square);
    assert_eq!(ShapeGroup::of(Shape::new(64, 64, 64)), ShapeGroup::Square);
    assert_eq!(ShapeGroup::of(Shape::new(64, 2112, 7168)), ShapeGroup::M64);
    assert_eq!(ShapeGroup::of(Shape::new(128, 2112, 7168)), ShapeGroup::M128);
    assert_eq!(ShapeGroup::of(Shape::new(4096, 2112, 7168)), ShapeGroup::M4096);
    assert_eq!(ShapeGroup::of(Shape::new(100, 2112, 7168)), ShapeGroup::Other);
    assert!((geomean(&[0.5, 2.0]).unwrap() - 1.0).abs() < 1e-12);
    assert!((geomean(&[0.8]).unwrap() - 0.8).abs() < 1e-12);
    assert_eq!(geomean(&[]), None);
    assert_eq!(geomean(&[1.0, 0.0]), None);
    assert_eq!(geomean(&[1.0, f64::NAN]), None);
    let means = group_means(&sample_report().results);
    // Only the M=64 shape has a ratio; the fp8 shape has none.
    assert_eq!(means.len(), 2);
    assert_eq!((means[0].group, means[0].shapes), (Some(ShapeGroup::M64), 1));
    assert_eq!((means[1].group, means[1].label()), (None, "bf16 all".to_string()));
    assert!((means[1].geomean - 0.75).abs() < 1e-12);
}

#[test]
fn the_roofline_is_the_lower_of_the_peak_and_the_bandwidths_bound() {
    let peaks = Peaks::of(&Target::H200);
    // Large and square: the tensor peak bounds it.
    let square = Shape { m: 8192, n: 8192, k: 8192 };
    assert_eq!(peaks.roofline_tflops(square, BenchDtype::Bf16), peaks.bf16_tflops);
    assert_eq!(peaks.roofline_tflops(square, BenchDtype::Fp8), peaks.fp8_tflops);
    // Decode-sized: HBM does, with FP8's block scales counted (one f32 per
    // row of A and 128 of K, one per 128x128 block of B).
    let decode = Shape { m: 1, n: 4096, k: 4096 };
    assert_eq!(decode.roofline_bytes(BenchDtype::Bf16), decode.min_bytes(BenchDtype::Bf16));
    let fp8_bytes = (4096 + 4096 * 4096) + 4096 * 2 + (32 + 32 * 32) * 4;
    assert_eq!(decode.roofline_bytes(BenchDtype::Fp8), fp8_bytes);
    let expected = 2.0 * 4096.0 * 4096.0 * 4800e9 / fp8_bytes as f64 / 1e12;
    assert!((peaks.roofline_tflops(decode, BenchDtype::Fp8) - expected).abs() < 1e-9);
}

#[test]
fn table_formatting() {
    let rep = sample_report();
    let t = format_table(&rep.results);
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines.len(), 5, "{t}");
    assert!(lines[0].starts_with("shape (MxNxK)"));
    for col in ["ours_TF", "cublas_TF", "lt_TF", "ratio", "p10..p90", "of peak", "roofline", "check"] {
        assert!(lines[0].contains(col), "{col}");
    }
    let row = lines[1];
    assert!(row.starts_with("64x2112x7168") && row.contains(" bf16 "), "{row}");
    assert!(row.contains("0.750") && row.contains("0.709..0.791"), "{row}");
    assert!(row.contains("% HBM"), "small M shows percent of HBM bandwidth: {row}");
    assert!(row.contains(" ok "), "its kernel passed: {row}");
    assert!(row.trim_end().ends_with("gemm_128x128"));
    // cuBLASLt failed, so its column is empty.
    let fields: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(fields[4], "-");
    assert!(lines[2].starts_with("4096x4096x4096") && lines[2].contains("FAIL"), "{}", lines[2]);
    assert!(lines[3].contains(" fp8 ") && !lines[3].contains("FAIL") && lines[3].contains(" - "), "{}", lines[3]);
    assert_eq!(lines[4], "check failed (not timed, not in the rows above): bad on 2 shape(s)");
    // The numeric columns line up with the header.
    assert_eq!(lines[0].find("ratio").map(|p| p + 5), row.find("0.750 ").map(|p| p + 5));
    let means = format_means(&group_means(&rep.results));
    assert_eq!(means.lines().nth(2).unwrap().split_whitespace().collect::<Vec<_>>(), ["bf16", "all", "1", "0.750"]);
}

#[test]
fn compare_two_reports() {
    let a = sample_report();
    let mut b = sample_report();
    let ours = b.results[0].runs.iter_mut().find(|r| r.name == "artifacts/gemm_128x128").unwrap();
    let shape = Shape::new(64, 2112, 7168);
    ours.set_rounds(vec![1.5, 1.6, 1.5, 1.4, 1.5], shape, BenchDtype::Bf16);
    b.results[0].summarize(&Peaks::of(&Target::H100));
    b.results.remove(2);
    b.results.push(ShapeResult::new(Shape::new(8192, 8192, 8192), BenchDtype::Bf16));
    let t = format_compare(&a, &b);
    let row = t.lines().find(|l| l.starts_with("64x2112x7168")).unwrap();
    let f: Vec<&str> = row.split_whitespace().collect();
    // ratio 0.75 -> 1.0 is +33.3%; our TF/s rise by 2.0/1.5.
    assert_eq!(&f[2..5], ["0.750", "1.000", "+33.3%"], "{row}");
    assert_eq!(f[7], "+33.3%", "{row}");
    // A shape only in A, and one only in B, each with `-` on the other side.
    assert!(t.lines().any(|l| l.starts_with("4096x4096x4096") && l.contains(" fp8 ")));
    assert!(t.lines().any(|l| l.starts_with("8192x8192x8192")));
    let mean = t.lines().find(|l| l.starts_with("bf16 all")).unwrap();
    assert_eq!(mean.split_whitespace().collect::<Vec<_>>(), ["bf16", "all", "0.750", "1.000", "+33.3%"]);
}

#[test]
fn dates_in_utc() {
    assert_eq!(date_utc(0), "1970-01-01 00:00:00");
    assert_eq!(date_utc(951_868_799), "2000-02-29 23:59:59");
    assert_eq!(date_utc(1_795_313_180), "2026-11-22 02:06:20");
}

#[cfg(feature = "svg")]
#[test]
fn chart_draws_every_ratio_and_the_means() {
    let rep = Report::from_json(H100_2026_11_22).unwrap();
    let svg = crate::chart::ratio_chart_svg(&rep).unwrap();
    assert!(svg.starts_with("<svg"));
    for r in &rep.results {
        assert!(svg.contains(&format!("{}\n", r.shape())), "label of {}", r.shape());
    }
    for label in ["bf16 square: 0.912 (2 shapes)", "bf16 M=64: 0.896", "bf16 M=4096: 0.781", "bf16 all: 0.850 (20 shapes)"] {
        assert!(svg.contains(label), "{label}");
    }
    assert!(svg.contains("1.00"), "the 1.0 tick");
    assert!(svg.contains("baseline median time over our"), "says what the bars are");
    // A report without any ratio has nothing to draw.
    let mut empty = rep.clone();
    empty.results.iter_mut().for_each(|r| r.runs.retain(|x| x.kind == RunKind::Baseline));
    empty.results.iter_mut().for_each(|r| r.summarize(&Peaks::of(&Target::H100)));
    assert!(crate::chart::ratio_chart_svg(&empty).is_err());
}

#[test]
fn short_names() {
    assert_eq!(short_name("a/b/gemm_x/"), "gemm_x");
    assert_eq!(short_name("gemm"), "gemm");
}


const GROUPED_SNIPPET: &str = r#"{
  "schema": "tilec-bench-grouped/1",
  "device": "NVIDIA H100 80GB HBM3",
  "date_utc": "2026-11-23 20:56:07",
  "command_line": ["bin/tilec-bench", "--grouped"],
  "seed": 7, "warmup": 10, "reps": 3, "threshold": 0.01,
  "results": [{
    "problem": "contig:8:4096:7168:512", "label": "contig G=8 4096x7168 rows=4096",
    "groups": 8, "n": 4096, "k": 7168, "total_rows": 4096, "flops": 2.4e11, "seed": 7,
    "runs": [
      {"name": "cublas-loop", "rel_err": 0.00166, "pass": true, "round_ms": [1.0, 1.0, 1.0],
       "stats": {"reps": 3, "median_ms": 1.0, "mean_ms": 1.0, "min_ms": 1.0, "p10_ms": 1.0,
                 "p25_ms": 1.0, "p75_ms": 1.0, "p90_ms": 1.0, "max_ms": 1.0},
       "tflops": 240.0, "error": null},
      {"name": "artifacts/grouped_contig_bf16/", "rel_err": 0.00166, "pass": true, "round_ms": [0.8, 0.8, 0.8],
       "stats": {"reps": 3, "median_ms": 0.8, "mean_ms": 0.8, "min_ms": 0.8, "p10_ms": 0.8,
                 "p25_ms": 0.8, "p75_ms": 0.8, "p90_ms": 0.8, "max_ms": 0.8},
       "tflops": 300.0, "error": null},
      {"name": "bad", "rel_err": null, "pass": false, "round_ms": [], "stats": null,
       "tflops": null, "error": "launch failed"}
    ],
    "error": null
  }]
}"#;

const TP_SNIPPET: &str = r#"{
  "dtype": "bf16", "gpus": 2, "kernel": "artifacts/tp_bf16_ag_down", "mode": "ag",
  "rows": [{"chunks": 2, "comm_sms": 0, "error": 0.0, "pass": true,
            "ms": [[4.0, 4.0, 4.0], [1.0, 1.0, 1.0], [3.0, 3.0, 3.0], [5.0, 5.0, 5.0]]}],
  "schema": "tilec-tp/1", "seed": 1, "shape": [1024, 1024, 1024],
  "ways": ["overlapped", "comm alone", "gemm alone", "sequential"]
}"#;

#[test]
fn grouped_reports_dispatch_and_tabulate() {
    let rep = match crate::kinds::AnyReport::from_json(GROUPED_SNIPPET).unwrap() {
        crate::kinds::AnyReport::Grouped(g) => g,
        other => panic!("not grouped: {other:?}"),
    };
    assert_eq!((rep.device.as_str(), rep.results[0].runs.len()), ("NVIDIA H100 80GB HBM3", 3));
    let t = format_grouped_table(&rep);
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines[0], "tilec-bench-grouped/1 on NVIDIA H100 80GB HBM3, 2026-11-23 20:56:07");
    assert!(lines[1].starts_with("problem"), "{t}");
    // Ours at 0.8 ms against the loop's 1.0 ms: 1.25 times as fast.
    let ours = lines.iter().find(|l| l.contains(" grouped_contig_bf16 ")).unwrap_or_else(|| panic!("{t}"));
    assert!(ours.contains("0.800") && ours.contains("300.0") && ours.contains("1.250") && ours.contains("1.66e-3"), "{ours}");
    assert!(lines.iter().any(|l| l.contains(" bad ") && l.ends_with("ERROR launch failed")), "{t}");
}

#[test]
fn tp_reports_dispatch_and_tabulate() {
    let rep = match crate::kinds::AnyReport::from_json(TP_SNIPPET).unwrap() {
        crate::kinds::AnyReport::Tp(t) => t,
        other => panic!("not tensor-parallel: {other:?}"),
    };
    assert_eq!(rep.way(&rep.rows[0], "gemm alone"), Some(&[3.0, 3.0, 3.0][..]));
    assert_eq!(rep.way(&rep.rows[0], "nonsense"), None);
    let t = format_tp_table(&rep);
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines[0], "tilec-tp/1: 2 GPUs, ag 1024x1024x1024 bf16, kernel tp_bf16_ag_down, seed 0x1");
    // overlapped 4, comm 1, gemm 3, sequential 5: ideal 3, ideal/ov 0.75, seq/ov 1.25,
    // 2*1024^3 flops in 4 ms is 0.537 TFLOP/s (rounds to 1).
    let row: Vec<&str> = lines[2].split_whitespace().collect();
    assert_eq!(row, ["2", "0", "4.000", "1.000", "3.000", "5.000", "3.000", "0.750", "1.250", "1", "0.00e0", "pass"]);
}

#[test]
fn unknown_and_missing_schemas_are_one_line_errors() {
    use crate::kinds::{known_schemas, AnyReport, LoadError};
    let unknown = AnyReport::from_json(r#"{"schema": "tilec-nonsense/1", "rows": []}"#).unwrap_err();
    let LoadError::UnknownSchema(m) = &unknown else { panic!("{unknown:?}") };
    assert!(m.starts_with("schema `tilec-nonsense/1` is not one tilec-report reads (") && !m.contains('\n'), "{m}");
    for known in known_schemas() {
        assert!(m.contains(known), "{m}");
    }
    for missing in [r#"{"created_unix": 1, "results": []}"#, "[1, 2]", "\"text\""] {
        let e = AnyReport::from_json(missing).unwrap_err();
        let LoadError::UnknownSchema(m) = &e else { panic!("{missing}: {e:?}") };
        assert!(m.starts_with("no `schema` field") && m.contains("tilec-judge/1") && !m.contains('\n'), "{m}");
    }
    // A known schema whose body is wrong, or no JSON at all, is unreadable, in one line.
    let bad = AnyReport::from_json(r#"{"schema": "tilec-tp/1"}"#).unwrap_err();
    assert!(matches!(&bad, LoadError::Unreadable(m) if m.starts_with("tilec-tp/1 report: missing field")), "{bad:?}");
    let bad = AnyReport::from_json(r#"{"schema": "tilec-judge/1", "measurements": [], "summary": [], "rows": [{"dtype": "int4"}]}"#).unwrap_err();
    assert!(matches!(&bad, LoadError::Unreadable(m) if m.starts_with("tilec-judge/1 report: unknown variant `int4`") && !m.contains('\n')), "{bad:?}");
    let bad = AnyReport::from_json(r#"{"schema": "tilec-tuning/1", "target": "h200", "entries": [{"dtype": "bf16", "m": 0, "n": 1, "k": 1, "config": "", "median_ms": 1.0, "candidates": 1}]}"#).unwrap_err();
    assert!(matches!(&bad, LoadError::Unreadable(m) if m.starts_with("tilec-tuning/1 report: ")), "{bad:?}");
    assert!(matches!(AnyReport::from_json("{\"schema\": "), Err(LoadError::Unreadable(_))));
    // The file's path leads the message.
    let dir = std::env::temp_dir().join(format!("tilec-report-unknown-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("r.json");
    std::fs::write(&path, r#"{"schema": "tilec-nonsense/1"}"#).unwrap();
    let p = path.to_str().unwrap();
    let e = AnyReport::load(p).unwrap_err();
    assert!(matches!(&e, LoadError::UnknownSchema(m) if m.starts_with(&format!("{p}: schema `tilec-nonsense/1`")) && !m.contains('\n')), "{e:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn gemm_reports_dispatch_to_the_gemm_report() {
    let any = crate::kinds::AnyReport::from_json(H100_2026_11_22).unwrap();
    assert_eq!(any, crate::kinds::AnyReport::Gemm(Box::new(Report::from_json(H100_2026_11_22).unwrap())));
    assert_eq!(any.schema(), "tilec-bench/1");
    assert_eq!(any.table(), format_report_tables(&Report::from_json(H100_2026_11_22).unwrap().results));
}

/// Every JSON file under docs/benchmarks loads as a kind tilec-report
/// reads and renders a table: a record of a new kind fails here until it
/// is read.
#[test]
fn every_committed_report_loads_and_tabulates() {
    use crate::kinds::{known_schemas, AnyReport};
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "json") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/benchmarks"), &mut files);
    assert!(files.len() >= 100, "only {} JSON files under docs/benchmarks", files.len());
    let mut seen = std::collections::BTreeSet::new();
    for path in &files {
        let p = path.to_str().unwrap();
        let rep = AnyReport::load(p).unwrap_or_else(|e| panic!("{e}"));
        assert!(rep.table().lines().count() >= 2, "{p}: {}", rep.table());
        seen.insert(rep.schema().to_string());
    }
    // Every kind but the oldest GEMM schemas has a committed record.
    for schema in known_schemas() {
        assert!(seen.contains(schema) || schema == crate::schema::SCHEMA, "no committed {schema} record");
    }
}

/// A judge report with `rows` (`dtype shape group config ratio`, ratio `-`
/// for an unmeasured pick) against `cublas`, and its summary computed as
/// scripts/judge-picks.py does.
fn judge_report(rows: &[(&str, &str, &str, &str, Option<f64>)]) -> crate::kinds::judge::JudgeReport {
    use crate::kinds::judge::{JudgeReport, JudgeRow, JudgeSummary};
    let rows: Vec<JudgeRow> = rows
        .iter()
        .map(|&(dtype, shape, group, config, ratio)| JudgeRow {
            dtype: BenchDtype::parse(dtype).unwrap(),
            shape: shape.into(),
            group: group.into(),
            config: config.into(),
            measured: ratio.is_some(),
            ratios: ratio.map(|r| ("cublas".to_string(), r)).into_iter().collect(),
        })
        .collect();
    let mut summary: Vec<JudgeSummary> = Vec::new();
    for r in &rows {
        if summary.iter().any(|s| s.group == r.group) {
            continue;
        }
        let members: Vec<&JudgeRow> = rows.iter().filter(|x| x.group == r.group).collect();
        let xs: Vec<f64> = members.iter().filter_map(|x| x.ratios.get("cublas").copied()).collect();
        summary.push(JudgeSummary {
            dtype: r.dtype,
            group: r.group.clone(),
            baseline: "cublas".into(),
            shapes: members.len(),
            compared: xs.len(),
            unmeasured: members.len() - xs.len(),
            geomean: geomean(&xs),
            lowest: xs.iter().copied().reduce(f64::min),
        });
    }
    JudgeReport { schema: "tilec-judge/1".into(), measurements: vec!["m.json".into()], summary, rows }
}

#[test]
fn judge_reports_compare_per_shape_and_group() {
    use crate::kinds::judge::{format_judge_compare, group_rows, ratio_rows};
    let a = judge_report(&[
        ("bf16", "64x64x64", "small", "p1", Some(0.5)),
        ("bf16", "128x64x64", "small", "p2", Some(2.0)),
        ("bf16", "4096x4096x4096", "big", "p3", None),
    ]);
    let b = judge_report(&[
        ("bf16", "64x64x64", "small", "p1", Some(1.0)),
        ("bf16", "128x64x64", "small", "p9", Some(2.0)),
        ("bf16", "4096x4096x4096", "big", "p3", Some(0.9)),
        ("bf16", "8x8x8", "small", "p4", Some(4.0)),
    ]);
    // A round trip through JSON keeps the report.
    let json = serde_json::to_string(&a).unwrap();
    assert_eq!(crate::kinds::AnyReport::from_json(&json).unwrap(), crate::kinds::AnyReport::Judge(Box::new(a.clone())));
    let rows = ratio_rows(&[&a, &b]);
    let got: Vec<(&str, Option<f64>, Option<f64>)> = rows.iter().map(|r| (r.shape, r.ratios[0], r.ratios[1])).collect();
    assert_eq!(
        got,
        [("64x64x64", Some(0.5), Some(1.0)), ("128x64x64", Some(2.0), Some(2.0)), ("8x8x8", None, Some(4.0)), ("4096x4096x4096", None, Some(0.9))]
    );
    let groups = group_rows(&[&a, &b], &rows);
    assert_eq!(groups.iter().map(|g| g.group).collect::<Vec<_>>(), ["small", "big"]);
    // small: A sqrt(0.5 * 2) = 1 over 2 shapes, B (1 * 2 * 4)^(1/3) = 2 over 3; over the 2 both have, 1 and sqrt(2).
    let small = &groups[0];
    let means: Vec<f64> = small.summaries.iter().map(|s| s.unwrap().geomean.unwrap()).collect();
    assert!((means[0] - 1.0).abs() < 1e-12 && (means[1] - 2.0).abs() < 1e-12, "{means:?}");
    assert_eq!(small.common, 2);
    assert!((small.common_geomeans[0].unwrap() - 1.0).abs() < 1e-12 && (small.common_geomeans[1].unwrap() - 2f64.sqrt()).abs() < 1e-12);
    // big: A compared nothing; B 0.9.
    assert_eq!((groups[1].summaries[0].unwrap().geomean, groups[1].common, groups[1].common_geomeans[0]), (None, 0, None));

    let t = format_judge_compare(&a, &b);
    let line = |shape: &str| t.lines().find(|l| l.split_whitespace().nth(1) == Some(shape)).unwrap_or_else(|| panic!("{shape}: {t}"));
    assert_eq!(line("64x64x64").split_whitespace().collect::<Vec<_>>(), ["bf16", "64x64x64", "small", "cublas", "0.500", "1.000", "+100.0%", "same"]);
    assert!(line("128x64x64").ends_with("+0.0%  p2 -> p9"), "{t}");
    assert!(line("8x8x8").ends_with("-  - -> p4"), "{t}");
    let small = t.lines().find(|l| l.starts_with("bf16  small ")).unwrap();
    assert_eq!(small.split_whitespace().collect::<Vec<_>>(), ["bf16", "small", "cublas", "1.000", "(2)", "2.000", "(3)", "+100.0%", "2", "1.000", "1.414"]);
    let big = t.lines().find(|l| l.starts_with("bf16  big ")).unwrap();
    assert_eq!(big.split_whitespace().collect::<Vec<_>>(), ["bf16", "big", "cublas", "-", "(0)", "0.900", "(1)", "-", "0", "-", "-"]);
}

#[test]
fn judge_chart_draws_both_reports_and_the_means() {
    use crate::judge_chart::judge_chart_svg;
    let a = judge_report(&[("fp8", "64x64x64", "small", "p1", Some(0.5)), ("fp8", "128x64x64", "small", "p2", Some(2.0))]);
    let b = judge_report(&[("fp8", "64x64x64", "small", "p1", Some(1.0)), ("fp8", "128x64x64", "small", "p2", Some(2.0))]);
    let svg = judge_chart_svg(&[("dir/a.json", &a), ("dir/b.json", &b)]).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("64x64x64") && svg.contains("128x64x64"), "{svg}");
    assert!(svg.contains("A: a.json") && svg.contains("B: b.json"), "{svg}");
    assert!(svg.contains("fp8 small vs cublas: 1.000 (2) -&gt; 1.414 (2)") || svg.contains("fp8 small vs cublas: 1.000 (2) -> 1.414 (2)"), "{svg}");
    // One report alone, and nothing measured.
    assert!(judge_chart_svg(&[("a.json", &a)]).unwrap().contains("fp8 small vs cublas: 1.000 (2)"));
    let none = judge_report(&[("fp8", "64x64x64", "small", "p1", None)]);
    assert!(judge_chart_svg(&[("n.json", &none)]).unwrap_err().contains("nothing to plot"));
}

#[test]
fn a_sequence_report_gives_per_round_ratios_flops_and_its_table() {
    use crate::kinds::sequence::{SequenceReport, SequenceRun, SequenceStep, CUBLAS, SCHEMA, TILEC, TILEC_PDL};
    let run = |name: &str, round_ms: &[f64], pass: bool| SequenceRun {
        name: name.into(),
        worst_rel_err: Some(1e-3),
        pass,
        round_ms: round_ms.to_vec(),
        stats: Stats::from_samples(round_ms),
        tflops: None,
        error: None,
    };
    let step = |m, n, k| SequenceStep { m, n, k, artifact: "a".into(), config: None };
    let report = SequenceReport {
        schema: SCHEMA.into(),
        device: "gpu".into(),
        date_utc: "today".into(),
        commit: None,
        command_line: Vec::new(),
        seed: 1,
        warmup: 1,
        reps: 3,
        threshold: 1e-2,
        layers: 2,
        steps: vec![step(64, 128, 256), step(64, 256, 128)],
        chained: 3,
        // Round 2 is slow for all: per-round ratios are 2, 2, 2 for on over off, not the medians' 1.5.
        runs: vec![run(TILEC, &[2.0, 8.0, 2.0], true), run(TILEC_PDL, &[1.0, 4.0, 1.0], true), run(CUBLAS, &[3.0, 3.0, 3.0], false)],
    };
    assert_eq!(report.flops(), 2.0 * 2.0 * (64.0 * 128.0 * 256.0 * 2.0));
    assert_eq!(report.ratio(TILEC_PDL, TILEC).unwrap().median, 2.0);
    assert_eq!(report.ratio(TILEC, CUBLAS).unwrap().median, 1.5);
    assert!(report.ratio(TILEC, "nobody").is_none());
    let table = report.table();
    assert!(table.contains("2 layers of 64x128x256, 64x256x128 (3 of 4 steps chained)"), "{table}");
    assert!(table.contains("programmatic launch on over off: 2.000x"), "{table}");
    assert!(table.lines().any(|l| l.starts_with("cublas") && l.ends_with("FAIL")), "{table}");
}

/// A DeepGEMM run's table gives each shape's median, the per-tensor
/// baseline's, DeepGEMM's speed over it and the profiled time; a field
/// its writer does not emit is refused.
#[test]
fn a_deepgemm_run_tabulates_its_shapes() {
    use crate::kinds::AnyReport;
    let json = r#"{"schema": "tilec-deepgemm-run/1", "gpu": "NVIDIA H200", "torch": "2.11.0", "versions": "DeepGEMM 83aa960, CUTLASS eefa171", "deep_gemm_sms": 132,
      "records": [{"m": 64, "n": 2112, "k": 7168, "config": "64x16x128 stages=8 multicast=1", "check": "pass",
        "events_ms": {"deepgemm": 0.0122, "cublaslt_per_tensor": 0.0112}, "events_samples_ms": {"deepgemm": [0.0122]}, "kineto_ms": 0.0107}]}"#;
    let table = AnyReport::from_json(json).unwrap().table();
    let row = table.lines().find(|l| l.starts_with("64x2112x7168")).expect("the shape's row");
    assert!(row.contains("0.0122") && row.contains("0.0112") && row.contains("0.918") && row.contains("0.0107") && row.contains("pass"), "{row}");
    assert!(AnyReport::from_json(&json.replace("\"deep_gemm_sms\"", "\"sms\"")).is_err());
}

/// An anchor comparison's table gives both ratios a shape and each
/// group's geometric means.
#[test]
fn an_anchor_comparison_tabulates_both_kernels() {
    use crate::kinds::AnyReport;
    let json = r#"{"schema": "tilec-anchor-deepgemm/1", "gpu": "NVIDIA H200", "torch": "2.11.0", "tilec_set": "the FP8 picks",
      "summary": {"m_64_128": {"shapes": 1, "tilec_over_per_tensor": 0.95, "deepgemm_over_per_tensor": 0.919, "tilec_roofline": 0.258, "deepgemm_roofline": 0.271}},
      "records": [{"m": 64, "n": 2112, "k": 7168, "tilec_config": "64x64x128", "deepgemm_config": "64x16x128", "tilec_ms": 0.0128, "tilec_per_tensor_ms": 0.0122,
        "deepgemm_ms": 0.0122, "deepgemm_per_tensor_ms": 0.0112, "tilec_over_per_tensor": 0.95, "deepgemm_over_per_tensor": 0.919, "tilec_roofline": 0.258,
        "deepgemm_roofline": 0.271, "deepgemm_kineto_tflops": 181.0, "ncu_tilec_us": 11.14, "ncu_deepgemm_us": 10.4, "deepgemm_published_h800_tflops": 206}]}"#;
    let table = AnyReport::from_json(json).unwrap().table();
    let row = table.lines().find(|l| l.starts_with("64x2112x7168")).expect("the shape's row");
    assert!(row.contains("0.950") && row.contains("0.919") && row.contains("11.1") && row.contains("10.4"), "{row}");
    assert!(table.contains("m_64_128 (1 shapes): tilec 0.950 DeepGEMM 0.919"), "{table}");
}

/// A stream-ceiling run's table gives each shape's roofline, the faster
/// copy, the vendor and an empty launch with the fractions, and each
/// dtype's means; a field its writer does not emit is refused.
#[test]
fn a_stream_ceiling_run_tabulates_the_fastest_copy() {
    use crate::kinds::AnyReport;
    let json = r#"{"schema": "tilec-stream-ceiling/1", "gpu": "NVIDIA H200", "torch": "2.11.0", "triton": "3.5.0", "hbm_bytes_per_s": 4.8e12,
      "summary": {"fp8": {"shapes": 1, "copy_roofline": 0.414, "vendor_roofline": 0.29, "bound_roofline": 0.5}},
      "records": [{"m": 64, "n": 2112, "k": 7168, "dtype": "fp8", "read_bytes": 15600000, "written_bytes": 270336, "roofline_ms": 0.0033,
        "events_ms": {"copy_2048": 0.0080, "copy_8192": 0.0091, "cublaslt_per_tensor": 0.0114, "empty": 0.0033},
        "copy_roofline": 0.414, "vendor_roofline": 0.29, "bound_roofline": 0.5}]}"#;
    let table = AnyReport::from_json(json).unwrap().table();
    let row = table.lines().find(|l| l.starts_with("64x2112x7168")).expect("the shape's row");
    assert!(row.contains(" 8.0 ") && row.contains("11.4") && row.contains("0.414") && row.contains("0.500"), "{row}");
    assert!(table.contains("fp8 (1 shapes): copy 0.414 vendor 0.290 bound 0.500"), "{table}");
    assert!(AnyReport::from_json(&json.replace("\"triton\"", "\"compiler\"")).is_err());
}

/// A clustered-twins report's table gives each set and group's pairs and
/// gain, then each pair; a field its writer does not emit is refused.
#[test]
fn a_cluster_twins_report_tabulates_groups_and_pairs() {
    use crate::kinds::AnyReport;
    let json = r#"{"schema": "tilec-cluster-twins/1", "dtype": "fp8",
      "summary": [{"set": "other", "group": "ws2 wide, short K, rows off the sectors", "pairs": 2, "gain_geomean": 1.159, "faster_by_5pct": 2, "slower_by_5pct": 0}],
      "pairs": [{"shape": "645x23944x3184", "config": "128x192x128 stages=4 warps=12 ws2 persistent epilogue=tma scales=staged cluster=m sms=130", "set": "other",
        "group": "ws2 wide, short K, rows off the sectors", "waves": 5.73, "gain": 1.1835, "files": ["docs/benchmarks/cost-model/x.json"]}]}"#;
    let table = AnyReport::from_json(json).unwrap().table();
    assert!(table.contains("rows off the sectors") && table.contains("1.159x") && table.contains("2 over 5% faster"), "{table}");
    let row = table.lines().find(|l| l.starts_with("645x23944x3184")).expect("the pair's row");
    assert!(row.contains("5.7 waves") && row.contains("1.183") && row.contains("cluster=m"), "{row}");
    assert!(AnyReport::from_json(&json.replace("\"dtype\"", "\"precision\"")).is_err());
}
