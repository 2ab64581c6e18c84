//! Config selection counts shared memory as the lowering lays it out: for
//! every candidate it ranks (plain pipelines, warp-specialised and
//! ping-pong consumers, TMA or direct stores, staged FP8 scales, clusters,
//! split-K's partial tile),
//! the bytes `--explain` shows are the bytes the compiled kernel asks for.
//! An estimate under the allocation picks kernels that do not fit.

use std::process::Command;

const TILEC: &str = env!("CARGO_BIN_EXE_tilec");

fn tilec(args: &[&str]) -> String {
    let o = Command::new(TILEC).args(args).current_dir(env!("CARGO_MANIFEST_DIR")).output().expect("tilec runs");
    assert!(o.status.success(), "tilec {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

/// The shared-memory column of each ranked candidate of `--explain`.
fn ranked_smem(program: &str, shape: &str, count: usize) -> Vec<i64> {
    let explain = tilec(&["compile", program, "--shape", shape, "--explain"]);
    let rows = explain.lines().filter(|l| l.split_whitespace().next().is_some_and(|w| w.parse::<usize>().is_ok()));
    rows.take(count)
        .map(|row| {
            let fields: Vec<&str> = row.split("  ").map(str::trim).filter(|f| !f.is_empty()).collect();
            let smem = fields.len().checked_sub(2).map(|i| fields[i]).expect("a smem column before the reason");
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
            let manifest = std::fs::read_to_string(out.join("manifest.json")).expect("the artifact has a manifest");
            let allocated = manifest.split("\"dynamic_smem_bytes\":").nth(1).and_then(|t| t.split([',', '}']).next()).and_then(|v| v.trim().parse::<i64>().ok());
            assert_eq!(allocated, Some(estimate), "{program} at {shape}, candidate {candidate}");
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}
