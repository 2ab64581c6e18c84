//! The barrier verifier a pass manager keeps for a run skips the simulations it has seen
//! pass, and only those: the same kernel checked twice passes twice, and the kernel with a
//! bug only the round-by-round simulation finds (a wgmma wait that leaves the group reading
//! a stage in flight past its release) still fails after the good one passed.

use std::path::Path;
use tilec_dialects::parse_module;
use tilec_passes::analysis::barriers::{verify_barriers, BarrierVerifier};

fn kernel() -> String {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/lit/nv/gemm_bf16_ws_nv.tile");
    std::fs::read_to_string(file).expect("read the warp-specialised nv kernel")
}

#[test]
fn a_passed_simulation_is_remembered_and_a_changed_barrier_is_not() {
    let good = kernel();
    let module = parse_module(&good, "good.tile").expect("parse");
    let mut verifier = BarrierVerifier::default();
    for _ in 0..2 {
        verifier.verify(&module.functions[0]).expect("the kernel's barriers are right");
    }
    let bad = good.replace("%acc_out = nv.wgmma_wait 1, %d", "%acc_out = nv.wgmma_wait 2, %d");
    assert_ne!(bad, good, "the seeded bug must apply");
    let module = parse_module(&bad, "bad.tile").expect("parse");
    let fresh = verify_barriers(&module.functions[0]).map(|_| ()).map_err(|d| d.to_string());
    let remembered = verifier.verify(&module.functions[0]).map(|_| ()).map_err(|d| d.to_string());
    assert!(fresh.as_ref().is_err_and(|e| e.contains("overwrites")), "a fresh verifier's simulation must reject the seeded bug: {fresh:?}");
    assert_eq!(remembered, fresh, "the verifier that passed the good kernel must reject it the same way");
}
