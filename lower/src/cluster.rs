//! Clusters: the kernel's cluster shape, the CTA's rank, cluster barriers,
//! arrivals on a peer CTA's mbarrier, the CTA mask of a multicast copy and
//! split-K's sum over the cluster's shared memory, as `nvvm` ops
//! (docs/lowering.md says why not `nvgpu`).

use super::emitter::Emitter;
use super::fragment::{self, Frag};
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
/// time, which slowed a pipelined kernel with one per K step by nearly half
/// (measured: docs/evidence.md, lower/src/cluster.rs, barrier).
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
/// writes, cost a warp-specialised kernel a third of its speed (measured:
/// docs/evidence.md, lower/src/cluster.rs, arrive_remote).
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

/// Split-K's sum (`nv.cluster_sum`) of `frag` (f32) over the `ctas` CTAs of
/// the cluster. Each thread parks its values in this CTA's buffer at
/// `base`, four at a time at byte ((v / 4) * threads + tid) * 16, so a
/// warp's 16-byte stores and loads are consecutive; the cluster meets, the
/// arrive releasing those writes and the wait acquiring the peers'; then in
/// rank 0 each thread reads the same slots of ranks 1, 2, ... through the
/// cluster's shared-memory window (`mapa` of the generic address) and adds
/// them to its own values in rank order, the same order on every run. The
/// other ranks keep their own values: the sum is defined in rank 0 only.
pub(crate) fn sum(em: &mut Emitter, frag: &Frag, tid: &str, base: &str, threads: i64, ctas: i64) -> Frag {
    const QUAD: usize = 4;
    let ty = frag.chunk_type(em);
    let quads = frag.geom.chunk_len() / QUAD;
    let vec = "vector<4xf32>";
    let c16 = em.i32(16);
    let tid_bytes = em.binop("slot", "arith.muli", tid, &c16, "i32");
    let slot = |em: &mut Emitter, chunk: usize, quad: usize| em.add_const("slot", &tid_bytes, ((chunk * quads + quad) as i64) * threads * 16, "i32");
    for (c, chunk) in frag.chunks.iter().enumerate() {
        for q in 0..quads {
            let mut v = em.assign("quad", format!("llvm.mlir.undef : {vec}"));
            for e in 0..QUAD {
                let x = em.assign("x", format!("llvm.extractvalue {chunk}[{}] : {ty}", QUAD * q + e));
                let at = em.i32(e as i64);
                v = em.assign("quad", format!("llvm.insertelement {x}, {v}[{at} : i32] : {vec}"));
            }
            let off = slot(em, c, q);
            let p = em.assign("park", format!("llvm.getelementptr {base}[{off}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8"));
            em.line(format!("llvm.store {v}, {p} {{alignment = 16 : i64}} : {vec}, !llvm.ptr<3>"));
        }
    }
    em.line("nvvm.cluster.arrive {aligned}");
    em.line("nvvm.cluster.wait {aligned}");
    let r = rank(em, "rank");
    let c0 = em.i32(0);
    let is_first = em.assign("is_rank0", format!("arith.cmpi eq, {r}, {c0} : i32"));
    let n = frag.chunks.len();
    let name = em.fresh("split_sum");
    let types = vec![ty.clone(); n].join(", ");
    em.open(format!("{name}:{n} = scf.if {is_first} -> ({types}) {{"));
    let generic = em.assign("parked", format!("llvm.addrspacecast {base} : !llvm.ptr<3> to !llvm.ptr"));
    let mut total = frag.clone();
    for peer in 1..ctas {
        let cta = em.i32(peer);
        let window = em.assign("peer_parked", format!("nvvm.mapa {generic}, {cta} : !llvm.ptr -> !llvm.ptr"));
        let chunks = (0..frag.chunks.len())
            .map(|c| {
                let mut s = em.assign("undef", format!("llvm.mlir.undef : {ty}"));
                for q in 0..quads {
                    let off = slot(em, c, q);
                    let p = em.assign("peer_slot", format!("llvm.getelementptr {window}[{off}] : (!llvm.ptr, i32) -> !llvm.ptr, i8"));
                    let v = em.assign("peer_quad", format!("llvm.load {p} {{alignment = 16 : i64}} : !llvm.ptr -> {vec}"));
                    for e in 0..QUAD {
                        let at = em.i32(e as i64);
                        let x = em.assign("peer_x", format!("llvm.extractelement {v}[{at} : i32] : {vec}"));
                        s = em.assign("peer", format!("llvm.insertvalue {x}, {s}[{}] : {ty}", QUAD * q + e));
                    }
                }
                s
            })
            .collect();
        let theirs = Frag { geom: frag.geom.clone(), elem: frag.elem, chunks };
        total = fragment::map(em, &[&total, &theirs], frag.elem, |em, v| em.assign("acc", format!("arith.addf {}, {} : f32", v[0], v[1])));
    }
    em.line(format!("scf.yield {} : {types}", total.chunks.join(", ")));
    em.middle("} else {");
    em.line(format!("scf.yield {} : {types}", frag.chunks.join(", ")));
    em.close("}");
    Frag { geom: frag.geom.clone(), elem: frag.elem, chunks: (0..n).map(|i| format!("{name}#{i}")).collect() }
}
