//! `tile-fit-tma-boxes` declares that it preserves what the barrier verifier
//! reads, so the pass manager skips the barrier check after it: the
//! verifier's verdict on each kernel must be the same before and after the
//! pass, on kernels where it fits loads (plain pipeline, a warp-specialised
//! cluster that multicasts A, block-scaled FP8 in the plain pipeline and
//! split through the workspace under two consumers).

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
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples").join(file);
        let src = std::fs::read_to_string(&path).expect("read the example");
        let mut module = parse_module(&src, file).expect("parse");
        run(&mut module, pipeline);
        let before = verdicts(&module);
        run(&mut module, "tile-fit-tma-boxes");
        let text = print_module(&module, PrintOptions::default());
        assert!(text.contains("fit_rows"), "{file} ({pipeline}): the pass fitted no load, so this test proves nothing");
        assert_eq!(verdicts(&module), before, "{file} ({pipeline})");
    }
}
