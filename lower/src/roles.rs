//! `nv.warp_specialize`: the role split of a warp-specialised kernel.
//!
//! ```text
//! %is_producer = arith.cmpi eq, %wg, 0        // %wg = tid / 128, from lane 0
//! scf.if %is_producer {
//!   nvvm.setmaxregister decrease <producer_regs>
//!   <producer>
//! } else {
//!   nvvm.setmaxregister increase <consumer_regs>
//!   %c = %wg - 1
//!   <consumer>
//! }
//! ```
//!
//! ptxas honours `setmaxnreg` only when the kernel has a register cap at
//! entry (`.maxntid` with `.minnctapersm 1`, see [`MIN_CTAS_ATTR`]) and each
//! warpgroup's role is one branch of a single if/else; otherwise it ignores
//! the instruction with warning C7508.

use super::emitter::Emitter;

/// The `gpu.func` attribute giving the kernel `.minnctapersm 1`: with
/// `.maxntid` it caps the registers at entry (65536 / threads), which
/// `setmaxnreg` needs. `convert-gpu-to-nvvm` keeps it on the `llvm.func`.
pub(crate) const MIN_CTAS_ATTR: &str = "nvvm.minctasm = 1 : i32";

/// The register budgets of one `nv.warp_specialize`.
pub(crate) struct Budgets {
    pub producer_regs: i64,
    pub consumer_regs: i64,
}

/// Opens the producer branch: warpgroup 0 gives registers back.
pub(crate) fn open_producer(em: &mut Emitter, wg: &str, budgets: &Budgets) {
    let c0 = em.i32(0);
    let is_producer = em.assign("is_producer", format!("arith.cmpi eq, {wg}, {c0} : i32"));
    em.open(format!("scf.if {is_producer} {{"));
    em.line(format!("nvvm.setmaxregister decrease {}", budgets.producer_regs));
}

/// Closes the producer branch and opens the consumers' one: every other
/// warpgroup takes registers and computes its consumer index `%c = wg - 1`,
/// which it returns.
pub(crate) fn open_consumer(em: &mut Emitter, wg: &str, budgets: &Budgets) -> String {
    em.middle("} else {");
    em.line(format!("nvvm.setmaxregister increase {}", budgets.consumer_regs));
    let c1 = em.i32(1);
    em.binop("consumer", "arith.subi", wg, &c1, "i32")
}

pub(crate) fn close(em: &mut Emitter) {
    em.close("}");
}

/// Opens a region only warp `warp` of the CTA runs (closed with
/// [`close`]); returns the thread's lane in it (i32). A thread of an
/// earlier warp has a negative lane, which the unsigned comparison takes
/// as a large one, so one comparison bounds the warp on both sides.
pub(crate) fn open_warp(em: &mut Emitter, tid: &str, warp: i64) -> String {
    let first = em.i32(warp * WARP_THREADS);
    let lane = em.binop("lane", "arith.subi", tid, &first, "i32");
    let c32 = em.i32(WARP_THREADS);
    let in_warp = em.assign("in_warp", format!("arith.cmpi ult, {lane}, {c32} : i32"));
    em.open(format!("scf.if {in_warp} {{"));
    lane
}

/// Opens a region only lane 0 of each warp runs, to act once for its warp
/// (closed with [`close`]). The warp's lanes meet first (`bar.warp.sync`),
/// so that what each did before, its shared-memory reads included, comes
/// before what lane 0 does for them.
pub(crate) fn open_first_lane(em: &mut Emitter, tid: &str) {
    let all_lanes = em.i32(-1);
    em.line(format!("nvvm.bar.warp.sync {all_lanes} : i32"));
    let first = first_of(em, tid, WARP_THREADS, ["lane", "is_lane0"]);
    em.open(format!("scf.if {first} {{"));
}

/// Opens a region only the first thread of each warpgroup runs (closed with
/// [`close`]): where a consumer warpgroup issues the elected ops of its own
/// epilogue.
pub(crate) fn open_warpgroup_leader(em: &mut Emitter, tid: &str) {
    let first = warpgroup_leader(em, tid);
    em.open(format!("scf.if {first} {{"));
}

/// Whether `tid` is the first thread of its warpgroup (i1).
pub(crate) fn warpgroup_leader(em: &mut Emitter, tid: &str) -> String {
    first_of(em, tid, WARPGROUP_THREADS, ["wg_thread", "is_wg_leader"])
}

/// Threads per warp.
const WARP_THREADS: i64 = 32;
/// Threads per warpgroup: a warpgroup barrier's thread count.
pub(crate) const WARPGROUP_THREADS: i64 = 128;

/// Whether `tid % group == 0` (`group` a power of two; an i1), naming the
/// thread's index in its group and the condition `names`.
fn first_of(em: &mut Emitter, tid: &str, group: i64, names: [&str; 2]) -> String {
    let mask = em.i32(group - 1);
    let within = em.binop(names[0], "arith.andi", tid, &mask, "i32");
    let c0 = em.i32(0);
    em.assign(names[1], format!("arith.cmpi eq, {within}, {c0} : i32"))
}

/// The named barrier (i32) of the warpgroup `wg`: `1 + wg`.
pub(crate) fn warpgroup_barrier_id(em: &mut Emitter, wg: &str) -> String {
    let c1 = em.i32(1);
    em.binop("bar_id", "arith.addi", wg, &c1, "i32")
}

/// The threads of the warpgroup `wg` (none: the kernel's only warpgroup)
/// meet at named barrier `1 + wg` (0 is the CTA's `bar.sync 0`).
pub(crate) fn warpgroup_barrier(em: &mut Emitter, wg: Option<&str>) {
    let id = match wg {
        Some(wg) => warpgroup_barrier_id(em, wg),
        None => em.i32(1),
    };
    let threads = em.i32(WARPGROUP_THREADS);
    // The generic form: in MLIR 22 the custom one (`nvvm.barrier id = ..
    // number_of_threads = ..`) takes the next line's result name for its
    // optional reduction predicate and fails to parse.
    em.line(format!("\"nvvm.barrier\"({id}, {threads}) <{{operandSegmentSizes = array<i32: 1, 1, 0>}}> : (i32, i32) -> ()"));
}
