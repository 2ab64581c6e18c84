//! mbarriers and TMA copies: `nv.alloc_mbarriers`, `nv.mbarrier_expect_tx`,
//! `nv.mbarrier_arrive`, `nv.tma_load` and `nv.tma_store`, as `nvgpu` ops
//! on typed views (`nvgpu.rs`) of the dynamic shared memory and the descriptor parameters
//! (docs/backend.md, "Kernel ABI"); fences and bulk-group waits, which `nvgpu` has no op for,
//! as `nvvm`; `nv.mbarrier_wait` as a loop of single `try_wait`s ([`wait`]).

use super::emitter::Emitter;
use super::nvgpu;
use super::plan::{Barriers, Buffer, SmemGeom, MBARRIER_BYTES};
use tilec_dialects::ElemType;

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

/// One barrier of a group: the group (`!nvgpu.mbarrier.group`), its type,
/// and the barrier's index in it (`index`).
pub(crate) struct BarrierRef {
    pub group: String,
    pub ty: String,
    pub index: String,
}

/// Thread 0 initialises every barrier of the group with its arrival count
/// and makes the initialisation visible to the async proxy (TMA) and, in a
/// cluster, to the other CTAs (their remote arrivals and multicast copies;
/// they start only after a cluster barrier); then the CTA meets so that no
/// thread uses a barrier before it exists. Returns the group, which every
/// later use of its barriers indexes, named `hint`.
pub(crate) fn init_barriers(em: &mut Emitter, smem: &str, bars: &Barriers, is_leader: &str, clustered: bool, hint: &str) -> String {
    let group = nvgpu::barrier_group(em, smem, bars, hint);
    let ty = nvgpu::group_type(bars.count);
    em.open(format!("scf.if {is_leader} {{"));
    let count = em.const_int(bars.arrivals, "index");
    for i in 0..bars.count {
        let index = em.const_int(i, "index");
        em.line(format!("nvgpu.mbarrier.init {group}[{index}], {count} : {ty}"));
    }
    em.line("nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}");
    if clustered {
        em.line("nvvm.fence.mbarrier.init");
    }
    em.close("}");
    em.line("gpu.barrier");
    group
}

/// One arrival on `bar` that also expects `bytes` (an `index` value)
/// transaction bytes.
pub(crate) fn expect_tx(em: &mut Emitter, bar: &BarrierRef, bytes: &str) {
    em.line(format!("nvgpu.mbarrier.arrive.expect_tx {}[{}], {bytes} : {}", bar.group, bar.index, bar.ty));
}

/// Every thread waits for the phase of parity `phase` (`i32`) of the
/// barrier at `bar` (`!llvm.ptr<3>`) to complete: one `try_wait` an
/// iteration of a loop LLVM builds itself. `nvgpu`'s wait is inline PTX
/// holding its own loop, whose `bra.uni` assumes a converged warp; where
/// LLVM gives each side of a branch its own copy of that loop (an elected
/// op just before the wait), a parted warp runs it and the kernel can hang
/// (docs/lowering.md, "Barrier waits"). Here the loop's branch is LLVM's,
/// which marks it uniform only where it proves the warp converged.
pub(crate) fn wait(em: &mut Emitter, bar: &str, phase: &str) {
    let address = em.assign("bar_addr", format!("llvm.ptrtoint {bar} : !llvm.ptr<3> to i32"));
    let one = em.i32(1);
    let parity = em.assign("parity", format!("arith.andi {phase}, {one} : i32"));
    // Suspend-time hint in ns, as upstream nvgpu uses.
    let ticks = em.i32(10_000_000);
    let zero = em.i32(0);
    em.open("scf.while : () -> () {");
    let done = em.assign(
        "done",
        format!(
            "llvm.inline_asm has_side_effects asm_dialect = att \"{{\\0A.reg .pred p;\\0Ambarrier.try_wait.parity.shared::cta.b64 p, [$1], $2, $3;\\0Aselp.u32 $0, 1, 0, p;\\0A}}\", \"=r,r,r,r\" {address}, {parity}, {ticks} : (i32, i32, i32) -> i32"
        ),
    );
    let waiting = em.assign("waiting", format!("arith.cmpi eq, {done}, {zero} : i32"));
    em.line(format!("scf.condition({waiting})"));
    em.middle("} do {");
    em.line("scf.yield");
    em.close("}");
}

/// The executing thread arrives once on `bar` (release semantics at CTA
/// scope: its earlier reads of the stage are ordered before the producer's
/// refill).
pub(crate) fn arrive(em: &mut Emitter, bar: &BarrierRef) {
    em.assign("token", format!("nvgpu.mbarrier.arrive {}[{}] : {} -> !nvgpu.mbarrier.token", bar.group, bar.index, bar.ty));
}

/// A TMA descriptor parameter: the kernel parameter (`!llvm.ptr`, as
/// `nvvm` takes it), the typed value `nvgpu` takes, its type, and the box
/// (outer to inner) each copy moves.
#[derive(Clone)]
pub(crate) struct Descriptor {
    pub param: String,
    pub value: String,
    pub ty: String,
    pub box_dims: Vec<i64>,
    pub elem: ElemType,
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
pub(crate) fn load(em: &mut Emitter, to: &Destination<'_>, desc: &Descriptor, bar: &BarrierRef, col: &str, outer: &[String]) {
    let g = &to.buffer.geom;
    let mut dst = smem_ptr(em, to.smem, to.buffer.offset, to.stage, g.stage_bytes(), "dst");
    if let Some(off) = to.row_off {
        dst = em.assign("dst", format!("llvm.getelementptr {dst}[{off}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8"));
    }
    let multicast = to.multicast.map_or(String::new(), |mask| format!(" multicast_mask = {mask}"));
    let memref = nvgpu::memref_type(&desc.box_dims, desc.elem);
    for copy in block_copies(em, &dst, "dst", g, desc, col, outer) {
        em.line(format!(
            "nvgpu.tma.async.load {}[{}], {}[{}] to {}{multicast} : {}, {} -> {memref}",
            desc.value, copy.coords, bar.group, bar.index, copy.boxed, desc.ty, bar.ty
        ));
    }
}

/// An L2 prefetch of the boxes [`load`] would copy for a buffer of `g`'s
/// geometry from the same coordinates: one per column block, as the copies.
/// `nvgpu` has no op for it.
pub(crate) fn prefetch(em: &mut Emitter, g: &SmemGeom, desc: &Descriptor, col: &str, outer: &[String]) {
    for j in 0..g.col_blocks() {
        let c = em.add_const("col", col, j * g.block_cols(), "i32");
        let coords = std::iter::once(c).chain(outer.iter().cloned()).collect::<Vec<_>>().join(", ");
        em.line(format!("nvvm.cp.async.bulk.tensor.prefetch {}, box[{coords}] : !llvm.ptr", desc.param));
    }
}

/// The elected TMA store of one stage: one copy per column block (block `j`
/// to columns `col + j * block_cols`), committed as one bulk group that
/// [`store_wait`] waits for. Coordinates go innermost first: `col`, then
/// `outer` (the row, then any leading dimensions of a rank-3 tensor).
pub(crate) fn store(em: &mut Emitter, smem: &str, buffer: &Buffer, stage: &str, desc: &Descriptor, col: &str, outer: &[String]) {
    let g = &buffer.geom;
    let src = smem_ptr(em, smem, buffer.offset, stage, g.stage_bytes(), "src");
    let memref = nvgpu::memref_type(&desc.box_dims, desc.elem);
    for copy in block_copies(em, &src, "src", g, desc, col, outer) {
        em.line(format!("nvgpu.tma.async.store {} to {}[{}] : {memref} -> {}", copy.boxed, desc.value, copy.coords, desc.ty));
    }
    em.line("nvvm.cp.async.bulk.commit.group");
}

/// `nv.tma_store_wait`: the electing thread waits until its bulk groups have
/// read shared memory (their stages may then be rewritten and the CTA may
/// exit; the writes to global memory complete on their own).
pub(crate) fn store_wait(em: &mut Emitter) {
    em.line("nvvm.cp.async.bulk.wait_group 0 {read}");
}

/// One TMA copy of a column block: its box in shared memory (a memref) and
/// its tensor coordinates, innermost first, as `nvgpu` takes them.
struct BlockCopy {
    boxed: String,
    coords: String,
}

/// The copies of a stage at `base`, one per column block of `g`: block `j`'s
/// box starts `j * block_bytes` into the stage (named `hint`), at columns
/// `col + j * block_cols`, then `outer`.
fn block_copies(em: &mut Emitter, base: &str, hint: &str, g: &SmemGeom, desc: &Descriptor, col: &str, outer: &[String]) -> Vec<BlockCopy> {
    let outer: Vec<String> = outer.iter().map(|c| nvgpu::index(em, c)).collect();
    (0..g.col_blocks())
        .map(|j| {
            let p = if j == 0 {
                base.to_string()
            } else {
                em.assign(hint, format!("llvm.getelementptr {base}[{}] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8", j * g.block_bytes()))
            };
            let boxed = nvgpu::shared_memref(em, &p, &desc.box_dims, desc.elem);
            let c = em.add_const("col", col, j * g.block_cols(), "i32");
            let c = nvgpu::index(em, &c);
            let coords = std::iter::once(c).chain(outer.iter().cloned()).collect::<Vec<_>>().join(", ");
            BlockCopy { boxed, coords }
        })
        .collect()
}
