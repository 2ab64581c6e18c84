//! The command-line contract of tilec-bench, tilec-gpu-test and tilec-tp: `--version`,
//! `--help` and completions exit 0; a usage error exits 2 and names the bad
//! argument; an input that cannot be used exits 1. None of these needs a GPU.

use std::process::{Command, Output};

fn run(tool: &str, args: &[&str]) -> Output {
    Command::new(tool).args(args).output().expect("the tool runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const BENCH: &str = env!("CARGO_BIN_EXE_tilec-bench");
const GPU_TEST: &str = env!("CARGO_BIN_EXE_tilec-gpu-test");
const TP: &str = env!("CARGO_BIN_EXE_tilec-tp");
/// A bf16 GEMM artifact (`A[M,K]`, `B[N,K]`, `C[M,N]`).
const GEMM: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/naive_gemm");

#[test]
fn version_help_and_completions_exit_0() {
    for (tool, name) in [(BENCH, "tilec-bench"), (GPU_TEST, "tilec-gpu-test"), (TP, "tilec-tp")] {
        let o = run(tool, &["--version"]);
        assert_eq!(o.status.code(), Some(0), "{tool}");
        assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), format!("{name} {}", env!("CARGO_PKG_VERSION")));
        let o = run(tool, &["--help"]);
        assert_eq!(o.status.code(), Some(0), "{tool}");
        assert!(String::from_utf8_lossy(&o.stdout).contains("Exit status:"), "{tool}");
        let o = run(tool, &["--completions", "bash"]);
        assert_eq!(o.status.code(), Some(0), "{tool}");
        assert!(String::from_utf8_lossy(&o.stdout).contains(&name.replace('-', "__")), "{tool}");
    }
}

#[test]
fn usage_errors_exit_2_and_name_the_bad_argument() {
    let o = run(BENCH, &["--bogus", "x"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("'--bogus'"), "{}", stderr(&o));
    let o = run(BENCH, &["--reps", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--reps"), "{}", stderr(&o));
    let o = run(BENCH, &["--shapes", "1x2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("bad shape `1x2`"), "{}", stderr(&o));
    let o = run(GPU_TEST, &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("ARTIFACT_DIR"), "{}", stderr(&o));
    let o = run(GPU_TEST, &["dir", "--threshold", "x"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--threshold"), "{}", stderr(&o));
    let o = run(GPU_TEST, &["dir", "--sms", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--sms"), "{}", stderr(&o));
    let o = run(TP, &["--kernel", GEMM, "--mode", "x", "--shape", "8x8x8"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("want ag or rs, found `x`"), "{}", stderr(&o));
    let o = run(TP, &["--kernel", GEMM, "--mode", "ag", "--shape", "8x8"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("bad shape `8x8`: want MxNxK"), "{}", stderr(&o));
    // A split that is not whole is found before any GPU is touched.
    let o = run(TP, &["--kernel", GEMM, "--mode", "rs", "--shape", "64x64x63", "--gpus", "2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("K = 63 does not split into 2 ranks"), "{}", stderr(&o));
    let o = run(TP, &["--kernel", GEMM, "--mode", "ag", "--shape", "100x64x64", "--gpus", "2", "--chunks", "4"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("M = 100 does not split into 2 ranks x 4 chunks"), "{}", stderr(&o));
}

/// tilec-gpu-test's default shapes are ones the artifact takes: a C stored by
/// TMA (`tilec compile examples/gemm_bf16.tile` with
/// `tile-lower-to-nv{epilogue=tma}`, 128x128 tiles) needs rows of a multiple
/// of 16 bytes, so the default odd N rounds up, and the tool says so before
/// it looks for a GPU; with shapes given, none is changed.
#[test]
fn default_shapes_fit_a_c_stored_by_tma() {
    let tma_store = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/gemm_tma_store");
    let note = "C stored by TMA in rows of a multiple of 8 elements (16 bytes): default shapes with N rounded up to a multiple of 8";
    // What it checks is printed before a GPU is looked for: the tool's own
    // skip of the run without one is not this test's, so it is not logged.
    let stdout = |args: &[&str]| {
        let o = Command::new(GPU_TEST).args(args).env_remove(tilec_cli::SKIP_LOG_ENV).output().expect("the tool runs");
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let out = stdout(&[tma_store]);
    assert!(out.contains(note), "{out}");
    let out = stdout(&[GEMM]);
    assert!(!out.contains("rounded up"), "{out}");
    let out = stdout(&[tma_store, "--shapes", "129x264x192"]);
    assert!(!out.contains("rounded up"), "{out}");
}

#[test]
fn unusable_inputs_exit_1() {
    let missing = concat!(env!("CARGO_TARGET_TMPDIR"), "/no-such-artifact");
    let o = run(GPU_TEST, &[missing]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no-such-artifact"), "{}", stderr(&o));
    // --sms sets a GEMM's persistent grid: a copy kernel has none.
    let copy = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tma_copy");
    let o = run(GPU_TEST, &[copy, "--sms", "4"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("--sms sets a GEMM kernel's persistent grid; this artifact is not a GEMM"), "{}", stderr(&o));
    let o = run(BENCH, &["--artifact", missing]);
    assert_eq!(o.status.code(), Some(1));
    let o = run(BENCH, &["--from-json", missing]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no-such-artifact"), "{}", stderr(&o));
    // A residual is not split across ranks: refused before any GPU is touched.
    let residual = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/naive_gemm_residual");
    let o = run(TP, &["--kernel", residual, "--mode", "ag", "--shape", "64x64x64", "--gpus", "2"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains(r#"the kernel's epilogue reads matrices ["R"]"#), "{}", stderr(&o));
    // Nor are interleaved parts of the product (SwiGLU's gate and up).
    let swiglu = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/naive_gemm_swiglu");
    let o = run(TP, &["--kernel", swiglu, "--mode", "ag", "--shape", "64x256x64", "--gpus", "2"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("the kernel's epilogue reads 2 interleaved parts of the product (C[M,H])"), "{}", stderr(&o));
    let o = run(TP, &["--kernel", missing, "--mode", "ag", "--shape", "8x8x8"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no-such-artifact"), "{}", stderr(&o));
}
