//! What `--explain` shows of a candidate is what its compiled kernel gets.
//!
//! Shared memory: config selection counts it as the lowering lays it out,
//! for every candidate it ranks (plain pipelines, warp-specialised and
//! ping-pong consumers, TMA or direct stores, staged FP8 scales, clusters,
//! split-K's partial tile). An estimate under the allocation picks kernels
//! that do not fit.
//!
//! SMs: a persistent candidate's `sms` figure is the grid the launcher
//! starts at that shape (the balanced grid of `wave_tile`, or every SM
//! for stream-K), so the waves config selection ranks by are the waves
//! that run.

use std::process::Command;
use tilec_artifact::{GridRule, Manifest};
use tilec_runtime::{compute_grid, Problem};

const TILEC: &str = env!("CARGO_BIN_EXE_tilec");

fn tilec(args: &[&str]) -> String {
    let o = Command::new(TILEC).args(args).current_dir(env!("CARGO_MANIFEST_DIR")).output().expect("tilec runs");
    assert!(o.status.success(), "tilec {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

/// The manifest of the artifact compiled into `dir`.
fn artifact_manifest(dir: &std::path::Path) -> Manifest {
    let text = std::fs::read_to_string(dir.join("manifest.json")).expect("the artifact has a manifest");
    Manifest::from_json_str(&text).expect("the manifest parses")
}

/// The first `count` ranked candidates' rows of `--explain`.
fn ranked_rows(program: &str, shape: &str, count: usize) -> Vec<String> {
    let explain = tilec(&["compile", program, "--shape", shape, "--explain"]);
    explain.lines().filter(|l| l.split_whitespace().next().is_some_and(|w| w.parse::<usize>().is_ok())).take(count).map(str::to_owned).collect()
}

/// The shared-memory column of each ranked candidate of `--explain`.
fn ranked_smem(program: &str, shape: &str, count: usize) -> Vec<i64> {
    ranked_rows(program, shape, count)
        .iter()
        .map(|row| {
            let fields: Vec<&str> = row.split("  ").map(str::trim).filter(|f| !f.is_empty()).collect();
            // The columns end smem, predicted time, bound, reason.
            let smem = fields.len().checked_sub(4).map(|i| fields[i]).expect("a smem column before the prediction and the reason");
            smem.parse().unwrap_or_else(|e| panic!("smem in `{row}`: {e}"))
        })
        .collect()
}

#[test]
fn the_estimate_is_the_allocation() {
    let dir = std::env::temp_dir().join(format!("tilec-smem-{}", std::process::id()));
    for (program, shape) in [("examples/gemm_bf16.tile", "4096x4096x4096"), ("examples/gemm_bf16.tile", "64x2112x7168"), ("examples/gemm_fp8_blockscaled.tile", "4096x4096x4096"), ("examples/gemm_fp8_blockscaled.tile", "64x32768x512"), ("examples/gemm_fp8_blockscaled.tile", "64x2112x7168")] {
        for (rank, estimate) in ranked_smem(program, shape, 5).into_iter().enumerate() {
            let candidate = (rank + 1).to_string();
            let out = dir.join(&candidate);
            tilec(&["compile", program, "--shape", shape, "--candidate", &candidate, "-o", out.to_str().unwrap()]);
            let allocated = artifact_manifest(&out).dynamic_smem_bytes as i64;
            assert_eq!(allocated, estimate, "{program} at {shape}, candidate {candidate}");
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_persistent_candidates_sms_are_its_launch_grid() {
    const H100_SMS: u32 = 132;
    let dir = std::env::temp_dir().join(format!("tilec-grid-{}", std::process::id()));
    let mut persistent = 0;
    for (program, shape) in [
        ("examples/gemm_bf16.tile", "4096x4096x4096"),
        ("examples/gemm_bf16.tile", "8192x8192x8192"),
        ("examples/gemm_bf16.tile", "4096x32768x512"),
        ("examples/gemm_bf16.tile", "128x4096x7168"),
        ("examples/gemm_fp8_blockscaled.tile", "4096x32768x512"),
        ("examples/gemm_fp8_blockscaled.tile", "64x7168x16384"),
    ] {
        let [m, n, k]: [u64; 3] = shape.split('x').map(|d| d.parse().unwrap()).collect::<Vec<_>>().try_into().unwrap();
        for (rank, row) in ranked_rows(program, shape, 5).iter().enumerate() {
            let sms: u64 = row.split_whitespace().find_map(|w| w.strip_prefix("sms=")).and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("no sms= in `{row}`"));
            let candidate = (rank + 1).to_string();
            let out = dir.join(format!("{shape}-{candidate}"));
            tilec(&["compile", program, "--shape", shape, "--candidate", &candidate, "-o", out.to_str().unwrap()]);
            let manifest = artifact_manifest(&out);
            if !matches!(manifest.grid, GridRule::Sms { .. }) {
                continue;
            }
            persistent += 1;
            let grid = compute_grid(&manifest, &Problem::gemm(m, n, k), H100_SMS).unwrap();
            let ctas: u64 = grid.iter().map(|&d| d as u64).product();
            assert_eq!(ctas, sms, "{program} at {shape}, candidate {candidate}: `{row}`");
        }
    }
    assert!(persistent >= 12, "only {persistent} persistent candidates checked");
    std::fs::remove_dir_all(&dir).ok();
}
