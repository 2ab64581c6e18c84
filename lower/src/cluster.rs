//! Clusters: the kernel's cluster shape, the CTA's rank, cluster barriers,
//! arrivals on a peer CTA's mbarrier and the CTA mask of a multicast copy,
//! as `nvvm` ops (docs/lowering.md says why not `nvgpu`).

use super::emitter::Emitter;
use super::roles;

/// The `gpu.func` attribute that fixes the cluster shape (PTX
/// `.reqnctapercluster`): the kernel is only ever launched in such clusters.
pub(crate) fn dims_attr(dims: [i64; 3]) -> String {
    format!("nvvm.cluster_dim = array<i32: {}, {}, {}>", dims[0], dims[1], dims[2])
}

/// The CTA's rank in its cluster (`%cluster_ctarank`), as an `i32` named `hint`.
pub(crate) fn rank(em: &mut Emitter, hint: &str) -> String {
    em.assign(hint, "nvvm.read.ptx.sreg.cluster.ctarank : i32")
}

/// Every thread of every CTA of the cluster meets. The arrive is relaxed:
/// what a cluster barrier orders needs no release of its own (mbarrier
/// initialisation has its own fence, `fence.mbarrier_init`, and a stage's
/// wgmma reads are complete before the barrier that frees it), and a
/// releasing arrive costs a wait for this thread's outstanding writes every
/// time: on the H100 a pipelined kernel with one per K step ran at 56% of
/// its speed (2026-11-25, docs/gpu-notes.md).
pub(crate) fn barrier(em: &mut Emitter) {
    em.line("nvvm.cluster.arrive.relaxed {aligned}");
    em.line("nvvm.cluster.wait {aligned}");
}

/// Lane 0 of each warp arrives once on the barrier at the same shared
/// address `bar` in CTA `cta` (`i32`) of the cluster. The warp's wgmma
/// reads of the stage are complete when its `wgmma.wait_group` returns, so
/// one arrival speaks for the warp and nothing needs releasing beyond the
/// CTA (the default `.release.cta`, as CUTLASS's cluster barriers arrive):
/// a `.release.cluster` arrive, which waits for the thread's outstanding
/// writes, cut a warp-specialised kernel to 66% of its speed on the H100.
pub(crate) fn arrive_remote(em: &mut Emitter, tid: &str, bar: &str, cta: &str) {
    roles::open_first_lane(em, tid);
    let remote = em.assign("peer_bar", format!("nvvm.mapa {bar}, {cta} : !llvm.ptr<3> -> !llvm.ptr<7>"));
    em.line(format!("nvvm.mbarrier.arrive {remote} : !llvm.ptr<7>"));
    roles::close(em);
}

/// The `i16` mask of every CTA of a cluster of `size`: a multicast copy
/// lands in all of them.
pub(crate) fn all_ctas_mask(em: &mut Emitter, size: i64) -> String {
    em.const_int((1 << size) - 1, "i16")
}
