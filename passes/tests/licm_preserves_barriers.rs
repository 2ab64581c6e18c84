//! `tile-licm` declares that it preserves what the barrier verifier reads,
//! so the pass manager skips the barrier check after it: the verifier's
//! verdict on each kernel must be the same before and after the pass, on
//! kernels where it hoists ops out of a loop that holds barriers (a
//! persistent warp-specialised kernel, its deferred epilogue, stream-K, a
//! block-scaled FP8 cluster, and a plain pipeline split through the
//! workspace).

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
fn the_barrier_verifiers_verdict_is_the_same_before_and_after_hoisting() {
    let kernels = [
        ("gemm_bf16.tile", "tile-select-config{m=4096 n=4096 k=4096},tile-canonicalize,tile-assign-layouts,tile-persistent,tile-licm,tile-warp-specialize,tile-lower-to-nv,tile-defer-epilogue,tile-canonicalize"),
        ("gemm_bf16.tile", "tile-select-config{m=8192 n=8192 k=8192},tile-canonicalize,tile-assign-layouts,tile-persistent,tile-licm,tile-stream-k,tile-warp-specialize,tile-lower-to-nv,tile-canonicalize"),
        ("gemm_fp8_blockscaled.tile", "tile-select-config{m=4096 n=7168 k=16384},tile-canonicalize,tile-assign-layouts,tile-persistent,tile-licm,tile-warp-specialize,tile-cluster-split,tile-lower-to-nv,tile-canonicalize"),
        ("gemm_bf16.tile", "tile-select-config{block-m=128 block-n=128},tile-canonicalize,tile-assign-layouts,tile-split-k{splits=8 reduce=workspace},tile-pipeline{stages=6},tile-lower-to-nv,tile-canonicalize"),
    ];
    for (file, pipeline) in kernels {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples").join(file);
        let src = std::fs::read_to_string(&path).expect("read the example");
        let mut module = parse_module(&src, file).expect("parse");
        run(&mut module, pipeline);
        let (before, text) = (verdicts(&module), print_module(&module, PrintOptions::default()));
        run(&mut module, "tile-licm");
        assert_ne!(print_module(&module, PrintOptions::default()), text, "{file} ({pipeline}): the pass hoisted nothing, so this test proves nothing");
        assert_eq!(verdicts(&module), before, "{file} ({pipeline})");
    }
}
