//! mbarriers and TMA loads: `nv.alloc_mbarriers`, `nv.mbarrier_expect_tx`,
//! `nv.mbarrier_wait`, `nv.mbarrier_arrive` and `nv.tma_load`, with `nvvm` ops on plain pointers
//! into the dynamic shared memory (docs/backend.md, "Kernel ABI").

use super::emitter::Emitter;
use super::plan::{Barriers, Buffer, MBARRIER_BYTES};

/// `%smem + offset + index * stride` as an `!llvm.ptr<3>`; `index` is an
/// `i32` SSA value.
pub(crate) fn smem_ptr(em: &mut Emitter, smem: &str, offset: i64, index: &str, stride: i64, hint: &str) -> String {
    let c = em.i32(stride);
    let scaled = em.binop("off", "arith.muli", index, &c, "i32");
    let off = em.add_const("off", &scaled, offset, "i32");
    em.assign(hint, format!("llvm.getelementptr {smem}[{off}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8"))
}

/// The address of barrier `index` of a group.
pub(crate) fn barrier_ptr(em: &mut Emitter, smem: &str, bars: &Barriers, index: &str) -> String {
    smem_ptr(em, smem, bars.offset, index, MBARRIER_BYTES, "bar")
}

/// Thread 0 initialises every barrier of the group with its arrival count
/// and makes the initialisation visible to the async proxy (TMA) and, in a
/// cluster, to the other CTAs (their remote arrivals and multicast copies;
/// they start only after a cluster barrier); then the CTA meets so that no
/// thread uses a barrier before it exists.
pub(crate) fn init_barriers(em: &mut Emitter, smem: &str, bars: &Barriers, is_leader: &str, clustered: bool) {
    em.open(format!("scf.if {is_leader} {{"));
    let count = em.i32(bars.arrivals);
    for i in 0..bars.count {
        let p = em.assign(
            "bar",
            format!("llvm.getelementptr {smem}[{}] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8", bars.offset + i * MBARRIER_BYTES),
        );
        em.line(format!("nvvm.mbarrier.init {p}, {count} : !llvm.ptr<3>, i32"));
    }
    em.line("nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}");
    if clustered {
        em.line("nvvm.fence.mbarrier.init");
    }
    em.close("}");
    em.line("gpu.barrier");
}

pub(crate) fn expect_tx(em: &mut Emitter, bar: &str, bytes: i64) {
    let b = em.i32(bytes);
    em.line(format!("nvvm.mbarrier.arrive.expect_tx {bar}, {b} : !llvm.ptr<3>, i32"));
}

/// Every thread waits for the phase of parity `phase` (`i32`) to complete.
pub(crate) fn wait(em: &mut Emitter, bar: &str, phase: &str) {
    // Suspend-time hint in ns, as upstream nvgpu uses; try_wait loops.
    let ticks = em.i32(10_000_000);
    em.line(format!("nvvm.mbarrier.try_wait.parity {bar}, {phase}, {ticks} : !llvm.ptr<3>, i32, i32"));
}

/// The executing thread arrives once on `bar` (release semantics at CTA
/// scope: its earlier reads of the stage are ordered before the producer's
/// refill).
pub(crate) fn arrive(em: &mut Emitter, bar: &str) {
    em.line(format!("nvvm.mbarrier.arrive {bar} : !llvm.ptr<3>"));
}

/// Where a TMA load lands: a buffer stage, moved by `row_off` bytes (`i32`)
/// for a row window; with `multicast` (an `i16` CTA mask), in that stage of
/// every CTA of the mask, completing each one's barrier at the same offset.
pub(crate) struct Destination<'a> {
    pub smem: &'a str,
    pub buffer: &'a Buffer,
    pub row_off: Option<&'a str>,
    pub stage: &'a str,
    pub multicast: Option<&'a str>,
}

/// One TMA copy per column block of the buffer's layout: block `j` comes
/// from columns `col + j * block_cols` and fills the box's bytes at
/// `j * block_bytes`. Coordinates go innermost first: `col`, then `outer`
/// (the row, then any leading dimensions of a rank-3 tensor).
pub(crate) fn load(em: &mut Emitter, to: &Destination<'_>, desc: &str, bar: &str, col: &str, outer: &[String]) {
    let g = &to.buffer.geom;
    let outer = outer.join(", ");
    let mut dst = smem_ptr(em, to.smem, to.buffer.offset, to.stage, g.stage_bytes(), "dst");
    if let Some(off) = to.row_off {
        dst = em.assign("dst", format!("llvm.getelementptr {dst}[{off}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8"));
    }
    let multicast = to.multicast.map_or(String::new(), |mask| format!(" multicast_mask = {mask}"));
    for j in 0..g.col_blocks() {
        let p = if j == 0 {
            dst.clone()
        } else {
            em.assign("dst", format!("llvm.getelementptr {dst}[{}] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8", j * g.block_bytes()))
        };
        // TMA writes shared::cluster addresses; a CTA's own window is valid there.
        let p7 = em.assign("dst_cl", format!("llvm.addrspacecast {p} : !llvm.ptr<3> to !llvm.ptr<7>"));
        let c = em.add_const("col", col, j * g.block_cols(), "i32");
        em.line(format!(
            "nvvm.cp.async.bulk.tensor.shared.cluster.global {p7}, {desc}, {bar}, box[{c}, {outer}]{multicast} : !llvm.ptr<7>, !llvm.ptr"
        ));
    }
}

/// The elected TMA store of one stage: one copy per column block (block `j`
/// to columns `col + j * block_cols`), one bulk group, and a wait until the
/// copies have read shared memory (the buffer may then be reused and the
/// CTA may exit). Coordinates go innermost first: `col`, then `outer` (the
/// row, then any leading dimensions of a rank-3 tensor).
pub(crate) fn store(em: &mut Emitter, smem: &str, buffer: &Buffer, stage: &str, desc: &str, col: &str, outer: &[String]) {
    let g = &buffer.geom;
    let row = outer.join(", ");
    let src = smem_ptr(em, smem, buffer.offset, stage, g.stage_bytes(), "src");
    for j in 0..g.col_blocks() {
        let p = if j == 0 {
            src.clone()
        } else {
            em.assign("src", format!("llvm.getelementptr {src}[{}] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8", j * g.block_bytes()))
        };
        let c = em.add_const("col", col, j * g.block_cols(), "i32");
        em.line(format!("nvvm.cp.async.bulk.tensor.global.shared.cta {desc}, {p}, box[{c}, {row}] : !llvm.ptr, !llvm.ptr<3>"));
    }
    em.line("nvvm.cp.async.bulk.commit.group");
    em.line("nvvm.cp.async.bulk.wait_group 0 {read}");
}
