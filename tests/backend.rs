//! Back-end integration tests: the hand-written Hopper GEMM (examples/mlir) to PTX, checked for
//! the instructions and ABI it must have and, when a `ptxas` is available, assembled for sm_90a.
//! One binary on purpose: each test binary that links MLIR is hundreds of MB; the
//! command-line contract of the tools that link it is here too (`cli`).

#[path = "backend/api.rs"]
mod api;
#[path = "backend/cli.rs"]
mod cli;
// The README's and the tutorial's commands, run through the tools.
#[path = "backend/docs.rs"]
mod docs;
#[path = "backend/elementwise_ops.rs"]
mod elementwise_ops;
#[path = "backend/explain.rs"]
mod explain;
// The pipeline's fuzzing lowers to MLIR and PTX, so it lives in this binary.
#[path = "robustness/mod.rs"]
mod robustness;
#[path = "support/ptxas.rs"]
mod ptxas;
// The command line under mutated inputs and flags, with the same generator.
#[path = "backend/cli_robustness.rs"]
mod cli_robustness;

use std::{
    path::Path,
    process::Command,
};
use tilec_backend::{
    default_pipeline, emit, mlir_to_ptx, split_pipeline, BackendError, BackendOptions, Stage,
};

const GEMM: &str = "examples/mlir/gemm_bf16_tma_wgmma.mlir";
const ENTRY: &str = "gemm_bf16_tma_wgmma";

fn gemm_source() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(GEMM);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

fn gemm_opts() -> BackendOptions {
    BackendOptions { source_name: GEMM.into(), ..BackendOptions::default() }
}

#[test]
fn gemm_compiles_to_hopper_ptx() {
    let ptx = mlir_to_ptx(&gemm_source(), &gemm_opts()).unwrap_or_else(|e| panic!("{e}"));
    let text = &ptx.text;
    assert_eq!(ptx.entries, [ENTRY]);
    assert!(text.contains(".target sm_90a"), "no sm_90a target");
    assert!(text.contains(".version 8.0"), "expected PTX ISA 8.0 (+ptx80)");
    // 4 k16 steps x 2 m64 halves per K tile.
    assert_eq!(text.matches("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16").count(), 8);
    for needle in [
        "wgmma.fence.sync.aligned",
        "wgmma.commit_group.sync.aligned",
        "wgmma.wait_group.sync.aligned",
        "cp.async.bulk.tensor.2d.shared::cluster.global",
        "mbarrier.init.shared",
        "mbarrier.arrive.expect_tx.shared",
        "mbarrier.try_wait.parity.shared",
        ".extern .shared .align 1024 .b8 __tilec_dyn_smem[]",
    ] {
        assert!(text.contains(needle), "PTX lacks `{needle}`");
    }
    // TMA descriptors: 128-byte, 64-aligned by-value params; as grid constants their generic
    // address is taken in place (cvta.param) instead of being copied to a local stack.
    for i in 0..2 {
        let param = format!(".param .align 64 .b8 {ENTRY}_param_{i}[128]");
        assert!(text.contains(&param), "PTX lacks `{param}`");
    }
    assert!(text.contains("cvta.param.u64"), "grid-constant params should be addressed with cvta.param");
    assert!(!text.contains("__local_depot"), "descriptor copied to local memory: not a grid constant");
    assert!(!text.contains("__nv_"), "unresolved libdevice call");

    run_ptxas(text);
}

#[test]
fn tma_params_are_byval_grid_constants_in_llvm_ir() {
    let ir = emit(&gemm_source(), &gemm_opts(), Stage::LlvmIr).unwrap_or_else(|e| panic!("{e}"));
    let sig = ir.lines().find(|l| l.starts_with("define ptx_kernel void @gemm_bf16_tma_wgmma(")).expect("kernel");
    let tma = r#"ptr byval([128 x i8]) align 64 "nvvm.grid_constant""#;
    assert_eq!(sig.matches(tma).count(), 2, "{sig}");
    assert!(ir.contains("target triple = \"nvptx64-nvidia-cuda\""));

    let mlir = emit(&gemm_source(), &gemm_opts(), Stage::Mlir).unwrap_or_else(|e| panic!("{e}"));
    assert!(mlir.contains("nvvm.grid_constant"));
    assert!(!mlir.contains("tilec.tma_params"), "the ABI marker must be consumed");
}

#[test]
fn invalid_mlir_reports_location() {
    let opts = BackendOptions { source_name: "bad.mlir".into(), ..BackendOptions::default() };
    let err = mlir_to_ptx("module {\n  %0 = arith.constant 1 : i32\n  foo.bar\n}\n", &opts).unwrap_err();
    assert!(matches!(err, BackendError::Parse { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("bad.mlir:3:"), "no location in: {msg}");
    assert!(msg.contains("error:"), "{msg}");

    let err = mlir_to_ptx("this is not MLIR", &opts).unwrap_err();
    assert!(err.to_string().contains("bad.mlir:1:"), "{err}");
}

#[test]
fn failing_pass_names_the_pass_and_can_carry_ir() {
    // `tilec.tma_params` on a non-pointer parameter and a module without gpu.module are caught
    // after the pipeline.
    let src = r#"module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @k(%a: i32) kernel attributes {tilec.tma_params = array<i32: 0>} { gpu.return }
  }
}"#;
    let err = mlir_to_ptx(src, &BackendOptions::default()).unwrap_err();
    assert!(matches!(err, BackendError::KernelAbi(_)), "{err}");
    assert!(err.to_string().contains("!llvm.ptr"), "{err}");

    let err = mlir_to_ptx("module {}", &BackendOptions::default()).unwrap_err();
    assert!(matches!(err, BackendError::Input(_)), "{err}");

    let opts = BackendOptions {
        print_ir_after_failure: true,
        pipeline: Some("gpu.module(convert-gpu-to-nvvm),convert-func-to-llvm{index-bitwidth=7x}".into()),
        ..BackendOptions::default()
    };
    let err = mlir_to_ptx("module {}", &opts).unwrap_err();
    assert!(matches!(err, BackendError::PipelineSyntax { .. } | BackendError::Pass { .. }), "{err}");

    // A real pass failure (a DESIGN 4 fact): nvgpu types on a hand-written gpu.func do not
    // legalise in convert-gpu-to-nvvm.
    let src = r#"module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @k(%a: !nvgpu.tensormap.descriptor<tensor = memref<128x64xbf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>) kernel {
      gpu.return
    }
  }
}"#;
    let opts = BackendOptions {
        print_ir_after_failure: true,
        source_name: "nvgpu_arg.mlir".into(),
        ..BackendOptions::default()
    };
    let err = mlir_to_ptx(src, &opts).unwrap_err();
    match &err {
        BackendError::Pass { pass, diagnostics, ir_after_failure } => {
            assert!(pass.starts_with("gpu.module(convert-gpu-to-nvvm"), "{pass}");
            let d = diagnostics.to_string();
            assert!(d.contains("nvgpu_arg.mlir:3:5: error: failed to legalize operation 'gpu.func'"), "{d}");
            assert!(ir_after_failure.as_deref().unwrap_or("").contains("gpu.module @m"));
        }
        other => panic!("expected a pass failure, got {other}"),
    }
}

#[test]
fn pipeline_splits_into_single_passes() {
    let steps = split_pipeline("a,b{x=1 y=2},gpu.module(c,d{z=3}),e");
    assert_eq!(steps, ["a", "b{x=1 y=2}", "gpu.module(c)", "gpu.module(d{z=3})", "e"]);
    let steps = split_pipeline(&default_pipeline(&BackendOptions::default()));
    assert_eq!(steps.len(), 18);
    assert!(steps.iter().any(|s| s == "nvvm-attach-target{chip=sm_90a features=+ptx80 O=3}"));
    assert!(steps.iter().any(|s| s == "gpu.module(convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=1})"));
}

/// Writes to stderr past libtest's output capture (which only intercepts `eprint!`), so a
/// skipped ptxas step and the ptxas report show up in a plain `cargo test`.
fn say(msg: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(msg.as_bytes());
}

/// Assembles `ptx` where ptxas is installed (a counted skip where it is
/// not; a failure where scripts/setup.sh installed it and it is not found).
fn run_ptxas(ptx: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let Some(ptxas) = ptxas::find(root).unwrap_or_else(|e| panic!("{e}")) else {
        tilec_cli::report_skip("backend ptxas step", "no ptxas (scripts/setup.sh installs it; see docs/build-deps.md)");
        return;
    };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let ptx_path = dir.join("gemm_bf16_tma_wgmma.ptx");
    std::fs::write(&ptx_path, ptx).unwrap();
    let out = Command::new(&ptxas)
        .args(["--gpu-name", "sm_90a", "-v"])
        .arg(&ptx_path)
        .arg("-o")
        .arg(dir.join("gemm_bf16_tma_wgmma.cubin"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", ptxas.display()));
    let log = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    say(&format!("ptxas ({}) -v:\n{log}", ptxas.display()));
    assert!(out.status.success(), "ptxas failed ({}):\n{log}", out.status);
    for code in ["C7519", "C7517"] {
        assert!(!log.contains(code), "ptxas serialised wgmma ({code}):\n{log}");
    }
    assert!(!log.contains("error"), "{log}");
    assert!(log.contains("0 bytes spill stores"), "spills:\n{log}");
}
