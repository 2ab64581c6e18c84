//! Passes that declare they preserve what the barrier verifier reads
//! (`Pass::preserves_barriers`), so that the pass manager skips the barrier
//! check after them: the verifier's verdict on each kernel must be the same
//! before and after the pass, on kernels where the pass changes something.
//! `tile-fit-tma-boxes` fits loads (plain pipeline, a warp-specialised
//! cluster that multicasts A, block-scaled FP8 in the plain pipeline and
//! split through the workspace under two consumers); `tile-licm` hoists ops
//! out of loops that hold barriers (a persistent warp-specialised kernel, its
//! deferred epilogue, stream-K, a block-scaled FP8 cluster, and a plain
//! pipeline split through the workspace).

use std::path::Path;
use tilec_dialects::{parse_module, print_module, Module, PrintOptions};
use tilec_passes::analysis::barriers::verify_barriers;
use tilec_passes::{Instrumentation, PassManager};

fn run(module: &mut Module, pipeline: &str) {
    let instrumentation = Instrumentation { verify_each: true, ..Instrumentation::default() };
    let mut pm = PassManager::from_pipeline(pipeline, instrumentation).expect("pipeline");
    pm.run(module, &mut std::io::sink()).expect("the pipeline compiles");
}

fn verdicts(module: &Module) -> Vec<String> {
    module.functions.iter().map(|f| format!("{:?}", verify_barriers(f).map_err(|d| d.to_string()))).collect()
}

/// The example `file` after `pipeline`.
fn compiled(file: &str, pipeline: &str) -> Module {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples").join(file);
    let src = std::fs::read_to_string(&path).expect("read the example");
    let mut module = parse_module(&src, file).expect("parse");
    run(&mut module, pipeline);
    module
}

#[test]
fn the_barrier_verifiers_verdict_is_the_same_before_and_after_fitting() {
    let kernels = [
        ("gemm_bf16.tile", "tile-select-config{block-m=64 block-n=80},tile-canonicalize,tile-assign-layouts,tile-pipeline{stages=4},tile-lower-to-nv"),
        (
            "gemm_bf16.tile",
            "tile-select-config{block-m=128 block-n=128 cluster=n},tile-canonicalize,tile-assign-layouts,tile-persistent,tile-licm,tile-warp-specialize,tile-cluster-split,tile-lower-to-nv",
        ),
        ("gemm_fp8_blockscaled.tile", "tile-select-config{block-m=64 block-n=64},tile-canonicalize,tile-assign-layouts,tile-pipeline{stages=8},tile-lower-to-nv"),
        (
            "gemm_fp8_blockscaled.tile",
            "tile-select-config{block-m=128 block-n=64},tile-canonicalize,tile-assign-layouts{num-warps=8},tile-split-k{splits=4 reduce=workspace},tile-warp-specialize{pingpong=false consumers=2 stages=8},tile-lower-to-nv",
        ),
    ];
    for (file, pipeline) in kernels {
        let mut module = compiled(file, pipeline);
        let before = verdicts(&module);
        run(&mut module, "tile-fit-tma-boxes");
        let text = print_module(&module, PrintOptions::default());
        assert!(text.contains("fit_rows"), "{file} ({pipeline}): the pass fitted no load, so this test proves nothing");
        assert_eq!(verdicts(&module), before, "{file} ({pipeline})");
    }
}

#[test]
fn the_barrier_verifiers_verdict_is_the_same_before_and_after_hoisting() {
    let kernels = [
        ("gemm_bf16.tile", "tile-select-config{m=4096 n=4096 k=4096},tile-canonicalize,tile-assign-layouts,tile-persistent,tile-licm,tile-warp-specialize,tile-lower-to-nv,tile-defer-epilogue,tile-canonicalize"),
        ("gemm_bf16.tile", "tile-select-config{m=8192 n=8192 k=8192 cluster=none},tile-canonicalize,tile-assign-layouts,tile-persistent,tile-licm,tile-stream-k,tile-warp-specialize,tile-lower-to-nv,tile-canonicalize"),
        ("gemm_fp8_blockscaled.tile", "tile-select-config{m=4096 n=7168 k=16384},tile-canonicalize,tile-assign-layouts,tile-persistent,tile-licm,tile-warp-specialize,tile-cluster-split,tile-lower-to-nv,tile-canonicalize"),
        ("gemm_bf16.tile", "tile-select-config{block-m=128 block-n=128},tile-canonicalize,tile-assign-layouts,tile-split-k{splits=8 reduce=workspace},tile-pipeline{stages=6},tile-lower-to-nv,tile-canonicalize"),
    ];
    for (file, pipeline) in kernels {
        let mut module = compiled(file, pipeline);
        let (before, text) = (verdicts(&module), print_module(&module, PrintOptions::default()));
        run(&mut module, "tile-licm");
        assert_ne!(print_module(&module, PrintOptions::default()), text, "{file} ({pipeline}): the pass hoisted nothing, so this test proves nothing");
        assert_eq!(verdicts(&module), before, "{file} ({pipeline})");
    }
}
