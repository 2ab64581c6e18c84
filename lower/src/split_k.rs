//! Split-K's reduction through a global workspace (`tile.reduce_splits`):
//! the runtime allocates the workspace, zeroed, and passes it as the
//! kernel's last parameter (the manifest's `workspace` parameter), so two
//! launches with their own workspaces never share one, and a launch needs
//! no CTA to wait for another.
//!
//! Each output tile (x, y) of the grid has a region of
//! `16 + splits * slot_bytes` bytes at `(x + y * grid_x) * region_bytes`:
//! one arrival counter (u32) per holder group (the CTA, or each consumer
//! warpgroup of a warp-specialised kernel; padded to 16 bytes), then one
//! slot per split holding its f32 tile in the order of the holders'
//! fragments (holder p's j-th group of four values at `(j * holders + p) *
//! 16`, so a warp's vector stores and loads are 512 contiguous bytes).
//! Every group of every split stores its part of the tile in its slot,
//! meets at its barrier, and its first thread adds one to the group's
//! counter (acquire-release): the group that sees `splits - 1` arrived
//! last, when every other split's part is in place. As for stream-K's
//! hand-over (`stream_k.rs`), the barriers and the first thread's
//! acquire-release order every thread's stores and loads; no thread
//! fences on its own. It sets the
//! counter back to zero for the next launch, and adds the slots in the
//! order of the splits (its own too, read back), so the sum does not depend
//! on which split came last. The groups of a CTA decide apart: each holds
//! its own rows. The last reads the slots in groups ([`slots_in_flight`]),
//! so that it waits for L2 once a group.
//!
//! With `spread`, one CTA reading every slot is what the reduction costs
//! (docs/evidence.md, lower/src/split_k.rs): a launch whose grid is no
//! larger than the SMs, all of whose CTAs are therefore resident at once,
//! has every split count itself in and wait until the count reaches
//! `splits`, then add its share of each thread's vectors (split z the
//! z-th of `splits` even runs of them) over every slot, in the order of the
//! splits, and store those sums in one more slot after the splits'. Each
//! then counts itself in again; the one that sees `2 * splits - 1` read
//! the summed tile back, sets the count to zero and stores the tile. The
//! values are added in the same order as by the last split alone, so both
//! give the same bits. A larger grid (another shape of a kernel family)
//! adds as above: a split waiting for a CTA that is not resident would
//! wait forever.

use super::emitter::Emitter;
use super::fragment::Frag;
use super::holders::{is_first, meet, meet_and_vote, open_first, Holders, MAX_GROUPS};
use super::plan::{Workspace, SPLIT_K_COUNTER_BYTES};
use super::stream_k::{asm, store_vectors, vectors};
use tilec_dialects::tile::reduce::{slots_in_flight, MAX_VALUES_IN_FLIGHT};

// A region's counters hold one u32 per holder group.
const _: () = assert!(MAX_GROUPS * 4 <= SPLIT_K_COUNTER_BYTES);

/// What the reduction needs of the kernel, as emitted values.
pub(crate) struct Reduction<'a> {
    /// The workspace parameter (`!llvm.ptr`).
    pub workspace: &'a str,
    /// The threads that together hold the tile.
    pub holders: &'a Holders,
    /// The splits that share each tile.
    pub splits: i64,
    /// Where the splits add in shares (`spread`): the most CTAs a grid may
    /// have to do so (the SMs, each holding at least one).
    pub spread: Option<i64>,
    /// Where they do, whether each split keeps its share's sums to store
    /// them itself (the kernel stores the tile directly, element by
    /// element, after element-wise ops only) instead of the last reading
    /// the summed tile back.
    pub store_shares: bool,
}

/// What `tile.reduce_splits` gives the kernel.
pub(crate) struct Reduced {
    /// The summed tile where `stores` holds (or its share of it), else
    /// the split's own or an undefined tile.
    pub frag: Frag,
    /// Whether this split stores (an i1).
    pub stores: String,
    /// Where the splits store in shares: the vectors of each thread's tile
    /// this split stores, from the first (i64) to before the second, in
    /// the order of [`vectors`]; `None` where one split stores them all.
    pub share: Option<(String, String)>,
}

/// A tile's region of the workspace: its global address (i64) and the
/// bytes of each of its slots.
struct Region {
    at: String,
    slot_bytes: i64,
}

/// The global address (i64) of this CTA's tile region.
fn region_at(em: &mut Emitter, r: &Reduction, region_bytes: i64) -> String {
    let ws = em.assign("ws", format!("llvm.addrspacecast {} : !llvm.ptr to !llvm.ptr<1>", r.workspace));
    let ws = em.assign("ws_addr", format!("llvm.ptrtoint {ws} : !llvm.ptr<1> to i64"));
    let [x, y, nx] = ["gpu.block_id x", "gpu.block_id y", "gpu.grid_dim x"].map(|q| {
        let i = em.assign("tile_id", q);
        em.assign("tile_id", format!("arith.index_cast {i} : index to i64"))
    });
    let row = em.binop("tile_index", "arith.muli", &y, &nx, "i64");
    let tile = em.binop("tile_index", "arith.addi", &x, &row, "i64");
    let bytes = em.i64(region_bytes);
    let at = em.binop("region_at", "arith.muli", &tile, &bytes, "i64");
    em.binop("region", "arith.addi", &ws, &at, "i64")
}

/// The address (i64) of this thread's first vector in slot `split` (i64).
fn thread_slot(em: &mut Emitter, region: &Region, split: &str, r: &Reduction) -> String {
    let bytes = em.i64(region.slot_bytes);
    let at = em.binop("slot_at", "arith.muli", split, &bytes, "i64");
    let at = em.add_const("slot_at", &at, SPLIT_K_COUNTER_BYTES, "i64");
    let p = em.assign("holder", format!("arith.extui {} : i32 to i64", r.holders.index));
    let c16 = em.i64(16);
    let mine = em.binop("holder_at", "arith.muli", &p, &c16, "i64");
    let at = em.binop("slot_at", "arith.addi", &at, &mine, "i64");
    em.binop("slot_at", "arith.addi", &region.at, &at, "i64")
}

/// This thread's vector `j` of the slot whose first vector is at `at`:
/// its four values.
fn load_vector(em: &mut Emitter, at: &str, j: usize, r: &Reduction) -> [String; 4] {
    let offset = em.i64(j as i64 * r.holders.count * 16);
    let addr = em.binop("slot_v", "arith.addi", at, &offset, "i64");
    load_at(em, &addr)
}

/// The four f32 values at the global address `addr` (i64), read through L2.
fn load_at(em: &mut Emitter, addr: &str) -> [String; 4] {
    let v = em.assign(
        "slot_v",
        format!("llvm.inline_asm has_side_effects asm_dialect = att \"ld.global.cg.v4.f32 {{$0, $1, $2, $3}}, [$4];\", \"=f,=f,=f,=f,l\" {addr} : (i64) -> !llvm.struct<(f32, f32, f32, f32)>"),
    );
    [0, 1, 2, 3].map(|i| em.assign("slot_x", format!("llvm.extractvalue {v}[{i}] : !llvm.struct<(f32, f32, f32, f32)>")))
}

/// Adds the `group` slots from `first` (i64) on, in order, to `acc` (to
/// the first of them, without one). It reads the slots a batch of vectors
/// at a time, every slot's vectors of a batch before adding any, with at
/// most `in_flight` values a thread in flight (or one vector of each
/// slot): beside a parked tile that stays live ([`MAX_VALUES_IN_FLIGHT`])
/// a tile of many values a thread is not read whole beside the sum, which
/// would take as many registers again.
#[allow(clippy::too_many_arguments)]
fn add_group(em: &mut Emitter, frag: &Frag, region: &Region, first: &str, group: i64, acc: Option<&[String]>, in_flight: i64, r: &Reduction) -> Vec<String> {
    let ty = frag.chunk_type(em);
    let slots: Vec<String> = (0..group)
        .map(|g| {
            let s = em.add_const("split", first, g, "i64");
            thread_slot(em, region, &s, r)
        })
        .collect();
    let mut sum: Vec<String> = match acc {
        Some(acc) => acc.to_vec(),
        None => frag.chunks.iter().map(|_| em.assign("slot_tile", format!("llvm.mlir.undef : {ty}"))).collect(),
    };
    let per_batch = usize::try_from(in_flight / (4 * group)).unwrap_or(0).max(1);
    let all: Vec<(usize, (usize, usize))> = vectors(frag).enumerate().collect();
    for batch in all.chunks(per_batch) {
        let loaded: Vec<Vec<[String; 4]>> = slots.iter().map(|at| batch.iter().map(|&(j, _)| load_vector(em, at, j, r)).collect()).collect();
        for (v, &(_, (c, first_value))) in batch.iter().enumerate() {
            for i in 0..4 {
                let mut x = match acc {
                    Some(_) => em.assign("e", format!("llvm.extractvalue {}[{}] : {ty}", sum[c], first_value + i)),
                    None => loaded[0][v][i].clone(),
                };
                let skip = usize::from(acc.is_none());
                for theirs in &loaded[skip..] {
                    x = em.binop("e", "arith.addf", &x, &theirs[v][i], "f32");
                }
                sum[c] = em.assign("sum", format!("llvm.insertvalue {x}, {}[{}] : {ty}", sum[c], first_value + i));
            }
        }
    }
    sum
}

/// `tile.reduce_splits`: parks `frag` in this split's slot and, in the
/// split whose group arrives last (or, spread, finishes its share last),
/// gives the sum of every slot (elsewhere `frag` itself) and an i1 that is
/// true there; or, where the splits store in shares, every split's share of
/// the sums, all of them storing.
pub(crate) fn reduce(em: &mut Emitter, frag: &Frag, slot_bytes: i64, r: &Reduction) -> Reduced {
    let h = r.holders;
    em.line("// split-K: park the partial tile in this split's slot of the workspace.");
    let at = region_at(em, r, Workspace::split_k_region_bytes(r.splits, r.spread.is_some(), slot_bytes));
    let region = Region { at, slot_bytes };
    let z = em.assign("split", "gpu.block_id z");
    let z = em.assign("split", format!("arith.index_cast {z} : index to i64"));
    let mine = thread_slot(em, &region, &z, r);
    store_vectors(em, frag, &mine, h.count);
    meet(em, h);
    let group = em.assign("group", format!("arith.extui {} : i32 to i64", h.group));
    let c4 = em.i64(4);
    let counter = em.binop("counter_at", "arith.muli", &group, &c4, "i64");
    let counter = em.binop("counter_at", "arith.addi", &region.at, &counter, "i64");
    let Some(sms) = r.spread else {
        let (frag, stores) = last_adds(em, frag, &region, &counter, r, true);
        return Reduced { frag, stores, share: None };
    };

    em.line("// A grid no larger than the SMs is resident at once: its splits add in shares.");
    let [x, y, along_z] = ["x", "y", "z"].map(|d| em.assign("grid", format!("gpu.grid_dim {d}")));
    let most = em.assign("most_ctas", format!("arith.constant {sms} : index"));
    // Each extent first, so that the product of a huge grid cannot wrap
    // the 32-bit index into a small one (z is at most the 64 splits).
    let fits = |em: &mut Emitter, extent: &str| em.assign("fits", format!("arith.cmpi ule, {extent}, {most} : index"));
    let (x_fits, y_fits) = (fits(em, &x), fits(em, &y));
    let ctas = em.binop("grid_ctas", "arith.muli", &x, &y, "index");
    let ctas = em.binop("grid_ctas", "arith.muli", &ctas, &along_z, "index");
    let all_fit = fits(em, &ctas);
    let resident = em.binop("resident", "arith.andi", &x_fits, &y_fits, "i1");
    let resident = em.binop("resident", "arith.andi", &resident, &all_fit, "i1");
    let ty = frag.chunk_type(em);
    let n = frag.chunks.len();
    let types = vec![ty; n].join(", ");
    let out = em.fresh("split_out");
    let chunks = (0..n).map(|i| format!("{out}#{i}")).collect();
    let summed = Frag { geom: frag.geom.clone(), elem: frag.elem, chunks };
    // Stored in shares, each path also gives the vectors its split stores.
    let bounds = if r.store_shares { ", i64, i64" } else { "" };
    em.open(format!("{out}:{} = scf.if {resident} -> ({types}, i1{bounds}) {{", n + if r.store_shares { 3 } else { 1 }));
    if r.store_shares {
        let (share, lo, hi) = shares_kept(em, frag, &region, &counter, &z, r);
        let stores = em.assign("stores", "arith.constant true");
        em.line(format!("scf.yield {}, {stores}, {lo}, {hi} : {types}, i1{bounds}", share.chunks.join(", ")));
    } else {
        let (sums, last) = shares_add(em, frag, &region, &counter, &z, r);
        em.line(format!("scf.yield {}, {last} : {types}, i1", sums.chunks.join(", ")));
    }
    em.middle("} else {");
    let (sums, last) = last_adds(em, frag, &region, &counter, r, !r.store_shares);
    let everything = if r.store_shares {
        let (lo, hi) = (em.i64(0), em.i64(frag.geom.values_per_thread() / 4));
        format!(", {lo}, {hi}")
    } else {
        String::new()
    };
    em.line(format!("scf.yield {}, {last}{everything} : {types}, i1{bounds}", sums.chunks.join(", ")));
    em.close("}");
    let share = r.store_shares.then(|| (format!("{out}#{}", n + 1), format!("{out}#{}", n + 2)));
    Reduced { frag: summed, stores: format!("{out}#{n}"), share }
}

/// The group's first thread adds one to the group's `counter`
/// (acquire-release); the group that sees `last_at` arrived last, and its
/// first thread sets the counter back to zero for the next launch. Every
/// thread of the group learns whether it is that group (an i1).
fn count_in(em: &mut Emitter, h: &Holders, counter: &str, last_at: i64) -> String {
    let first = is_first(em, h);
    let arrived = em.fresh("arrived_last");
    em.open(format!("{arrived} = scf.if {first} -> (i32) {{"));
    let before = em.assign(
        "arrived",
        format!("llvm.inline_asm has_side_effects asm_dialect = att \"atom.add.acq_rel.gpu.global.u32 $0, [$1], 1;\", \"=r,l\" {counter} : (i64) -> i32"),
    );
    let last_at = em.i32(last_at);
    let last = em.assign("is_last", format!("arith.cmpi eq, {before}, {last_at} : i32"));
    em.open(format!("scf.if {last} {{"));
    asm(em, "st.relaxed.gpu.global.u32 [$0], 0;", "l", &[counter.to_string()], &["i64"]);
    em.close("}");
    let flag = em.assign("is_last", format!("arith.extui {last} : i1 to i32"));
    em.line(format!("scf.yield {flag} : i32"));
    em.middle("} else {");
    let zero = em.i32(0);
    em.line(format!("scf.yield {zero} : i32"));
    em.close("}");
    meet_and_vote(em, h, &arrived, "is_last_split")
}

/// In the group that `is_last`, the tile `read` gives (emitted there);
/// elsewhere `frag`, or, where not `kept`, an undefined tile, so that the
/// parked tile's registers are free once it is parked.
fn in_last(em: &mut Emitter, frag: &Frag, is_last: &str, kept: bool, read: impl FnOnce(&mut Emitter) -> Vec<String>) -> Frag {
    let ty = frag.chunk_type(em);
    let n = frag.chunks.len();
    let types = vec![ty.clone(); n].join(", ");
    let summed = em.fresh("split_sum");
    em.open(format!("{summed}:{n} = scf.if {is_last} -> ({types}) {{"));
    let total = read(em);
    em.line(format!("scf.yield {} : {types}", total.join(", ")));
    em.middle("} else {");
    let elsewhere: Vec<String> = if kept { frag.chunks.clone() } else { (0..n).map(|_| em.assign("undefined", format!("llvm.mlir.undef : {ty}"))).collect() };
    em.line(format!("scf.yield {} : {types}", elsewhere.join(", ")));
    em.close("}");
    let chunks = (0..n).map(|i| format!("{summed}#{i}")).collect();
    Frag { geom: frag.geom.clone(), elem: frag.elem, chunks }
}

/// The last split to arrive adds every slot, in the order of the splits;
/// the others keep their own tile where `kept` (see [`in_last`]).
fn last_adds(em: &mut Emitter, frag: &Frag, region: &Region, counter: &str, r: &Reduction, kept: bool) -> (Frag, String) {
    em.line("// The group's first thread counts it in; the last split resets the count for the next launch.");
    let is_last = count_in(em, r.holders, counter, r.splits - 1);
    em.line("// The last split adds every slot in the order of the splits, reading a group of slots at once.");
    let group = slots_in_flight(frag.geom.values_per_thread(), r.splits);
    let summed = in_last(em, frag, &is_last, kept, |em| {
        let first = em.i64(0);
        let init = add_group(em, frag, region, &first, group, None, MAX_VALUES_IN_FLIGHT, r);
        if group == r.splits {
            return init;
        }
        let ty = frag.chunk_type(em);
        let n = frag.chunks.len();
        let types = vec![ty; n].join(", ");
        let (lb, ub, step) = (em.i32(group), em.i32(r.splits), em.i32(group));
        let looped = em.fresh("split_acc");
        let iv = em.fresh("s");
        let args: Vec<String> = (0..n).map(|_| em.fresh("acc")).collect();
        let iter: Vec<String> = args.iter().zip(&init).map(|(a, i)| format!("{a} = {i}")).collect();
        em.open(format!("{looped}:{n} = scf.for {iv} = {lb} to {ub} step {step} iter_args({}) -> ({types}) : i32 {{", iter.join(", ")));
        let s = em.assign("split", format!("arith.extui {iv} : i32 to i64"));
        let next = add_group(em, frag, region, &s, group, Some(&args), MAX_VALUES_IN_FLIGHT, r);
        em.line(format!("scf.yield {} : {types}", next.join(", ")));
        em.close("}");
        (0..n).map(|i| format!("{looped}#{i}")).collect()
    });
    (summed, is_last)
}

/// The group's first thread counts it in and waits until every split's
/// group has (the count reaches `splits`); then the group meets. `after`
/// is PTX the first thread runs once the count is reached (`$0` the
/// counter's address).
fn wait_for_splits(em: &mut Emitter, h: &Holders, counter: &str, splits: i64, after: &str) {
    em.line("// Count in, and wait until every split has parked its tile.");
    open_first(em, h);
    let wait = format!(
        "{{\\0A.reg .pred p;\\0A.reg .b32 n;\\0Aatom.add.acq_rel.gpu.global.u32 n, [$0], 1;\\0ASPLIT_WAIT:\\0Ald.acquire.gpu.global.u32 n, [$0];\\0Asetp.ge.u32 p, n, {splits};\\0A@p bra SPLIT_ALL;\\0Ananosleep.u32 64;\\0Abra SPLIT_WAIT;\\0ASPLIT_ALL:\\0A{after}}}\\0A"
    );
    asm(em, &wait, "l", &[counter.to_string()], &["i64"]);
    em.close("}");
    meet(em, h);
}

/// Every split counts itself in and waits for the others, then keeps the
/// sums of its share of each thread's vectors over the slots, in the order
/// of the splits, in its registers (the other vectors undefined): split z
/// the z-th of `splits` even runs of them, a case of a switch on z so that
/// each share's vectors are registers known when compiling. Each counts
/// itself in once more, past the wait, so that the last to do so can set
/// the count to zero for the next launch when no split still waits on it.
/// Gives the tile and the share's first vector and the one past its last
/// (i64).
fn shares_kept(em: &mut Emitter, frag: &Frag, region: &Region, counter: &str, z: &str, r: &Reduction) -> (Frag, String, String) {
    let (h, splits) = (r.holders, r.splits);
    let recount = format!("atom.add.relaxed.gpu.global.u32 n, [$0], 1;\\0Asetp.eq.u32 p, n, {};\\0A@p st.relaxed.gpu.global.u32 [$0], 0;\\0A", 2 * splits - 1);
    wait_for_splits(em, h, counter, splits, &recount);

    em.line("// Keep this split's share of every thread's vectors summed over the slots, in the order of the splits.");
    let values = frag.geom.values_per_thread();
    let vectors_per_thread = values / 4;
    let ty = frag.chunk_type(em);
    let n = frag.chunks.len();
    let types = vec![ty.clone(); n];
    let base = {
        let zero = em.i64(0);
        thread_slot(em, region, &zero, r)
    };
    let stride = r.holders.count * 16;
    let all: Vec<(usize, usize)> = vectors(frag).collect();
    // The share's sums stay live beside the batch in flight: a batch holds
    // half the values the parked tile did, or one vector of a group of
    // slots.
    let in_flight = values / 2;
    let per_batch = usize::try_from(in_flight / (4 * splits)).unwrap_or(0).max(1);
    let slots_at_once = if 4 * splits <= in_flight { splits } else { slots_in_flight(4, splits) };
    let z32 = em.assign("split", format!("arith.trunci {z} : i64 to i32"));
    let undefined: Vec<String> = (0..n).map(|_| em.assign("undefined", format!("llvm.mlir.undef : {ty}"))).collect();
    let switched = em.index_switch("share", &z32, &types);
    for split in 0..splits {
        em.open(format!("case {split} {{"));
        let mut chunks = undefined.clone();
        let share: Vec<usize> = (share_start(split, vectors_per_thread, splits)..share_start(split + 1, vectors_per_thread, splits)).map(|j| j as usize).collect();
        for batch in share.chunks(per_batch) {
            let sums = sum_over_slots(em, splits, slots_at_once, |em, s| {
                batch.iter().map(|&j| {
                    let addr = em.add_const("share_at", &base, s * region.slot_bytes + j as i64 * stride, "i64");
                    load_at(em, &addr)
                }).collect()
            });
            for (&j, sum) in batch.iter().zip(sums) {
                let (c, first_value) = all[j];
                for (i, x) in sum.iter().enumerate() {
                    chunks[c] = em.assign("share_tile", format!("llvm.insertvalue {x}, {}[{}] : {ty}", chunks[c], first_value + i));
                }
            }
        }
        em.yield_values(&chunks, &types);
        em.close("}");
    }
    em.trap_default(&undefined, &types);
    let (lo, hi) = share_bounds(em, z, vectors_per_thread, splits);
    (Frag { geom: frag.geom.clone(), elem: frag.elem, chunks: switched }, lo, hi)
}

/// The sums over every slot, in the order of the splits, of the vectors
/// `load` reads from each (`load(em, s)`: the same vectors of slot `s`),
/// `slots_at_once` slots' (a divisor of `splits`) loaded before any is
/// added, so that their loads wait for L2 once.
fn sum_over_slots(em: &mut Emitter, splits: i64, slots_at_once: i64, mut load: impl FnMut(&mut Emitter, i64) -> Vec<[String; 4]>) -> Vec<[String; 4]> {
    let mut sums: Vec<Option<[String; 4]>> = Vec::new();
    for first in (0..splits).step_by(slots_at_once as usize) {
        let loaded: Vec<Vec<[String; 4]>> = (first..first + slots_at_once).map(|s| load(em, s)).collect();
        sums.resize(loaded[0].len(), None);
        for (v, sum) in sums.iter_mut().enumerate() {
            for slot in &loaded {
                *sum = Some(match sum.take() {
                    None => slot[v].clone(),
                    Some(acc) => [0, 1, 2, 3].map(|i| em.binop("e", "arith.addf", &acc[i], &slot[v][i], "f32")),
                });
            }
        }
    }
    sums.into_iter().map(|sum| sum.expect("at least one slot")).collect()
}

/// The first of split `split`'s even run of `vectors` among `splits`.
fn share_start(split: i64, vectors: i64, splits: i64) -> i64 {
    split * vectors / splits
}

/// [`share_start`] of split `z` (i64) and of the next: its share's first
/// vector and the one past its last.
fn share_bounds(em: &mut Emitter, z: &str, vectors: i64, splits: i64) -> (String, String) {
    let start = |em: &mut Emitter, split: &str| {
        let v = em.i64(vectors);
        let at = em.binop("share", "arith.muli", split, &v, "i64");
        let n = em.i64(splits);
        em.binop("share", "arith.divui", &at, &n, "i64")
    };
    let lo = start(em, z);
    let next = em.add_const("split", z, 1, "i64");
    (lo, start(em, &next))
}

/// Every split counts itself in and waits for the others, adds its share
/// of the slots' vectors into the sum slot, and counts itself in again;
/// the last to do so reads the sum slot.
fn shares_add(em: &mut Emitter, frag: &Frag, region: &Region, counter: &str, z: &str, r: &Reduction) -> (Frag, String) {
    let (h, splits) = (r.holders, r.splits);
    wait_for_splits(em, h, counter, splits, "");

    em.line("// Add this split's share of every thread's vectors over the slots, in the order of the splits.");
    let vectors = frag.geom.values_per_thread() / 4;
    let per_share = (vectors + splits - 1) / splits;
    let (lo, hi) = share_bounds(em, z, vectors, splits);
    let zero = em.i64(0);
    let base = thread_slot(em, region, &zero, r);
    let sum_slot = em.i64(splits);
    let sums_at = thread_slot(em, region, &sum_slot, r);
    let stride = em.i64(h.count * 16);
    let last_vector = em.i64(vectors - 1);
    // The parked tile's registers are free (`in_last`): a batch holds as
    // many values as it did, or one vector of a group of slots.
    let values = frag.geom.values_per_thread();
    let per_batch = usize::try_from(values / (4 * splits)).unwrap_or(0).max(1);
    let slots_at_once = if 4 * splits <= values { splits } else { slots_in_flight(4, splits) };
    let steps: Vec<i64> = (0..per_share).collect();
    for batch in steps.chunks(per_batch) {
        // Vector lo + i where it is in the share, else a vector of the
        // tile whose sum is not stored.
        let at: Vec<(String, String)> = batch
            .iter()
            .map(|&i| {
                let j = em.add_const("share_v", &lo, i, "i64");
                let kept = em.assign("share_kept", format!("arith.cmpi ult, {j}, {hi} : i64"));
                let j = em.assign("share_v", format!("arith.minui {j}, {last_vector} : i64"));
                (em.binop("share_at", "arith.muli", &j, &stride, "i64"), kept)
            })
            .collect();
        let sums = sum_over_slots(em, splits, slots_at_once, |em, s| {
            let slot = em.add_const("slot_at", &base, s * region.slot_bytes, "i64");
            at.iter().map(|(offset, _)| {
                let addr = em.binop("share_at", "arith.addi", &slot, offset, "i64");
                load_at(em, &addr)
            }).collect()
        });
        for ((offset, kept), sum) in at.iter().zip(sums) {
            let addr = em.binop("share_at", "arith.addi", &sums_at, offset, "i64");
            let kept = em.assign("share_kept", format!("arith.extui {kept} : i1 to i32"));
            let mut operands = vec![addr];
            operands.extend(sum);
            operands.push(kept);
            asm(
                em,
                "{\\0A.reg .pred p;\\0Asetp.ne.b32 p, $5, 0;\\0A@p st.global.v4.f32 [$0], {$1, $2, $3, $4};\\0A}\\0A",
                "l,f,f,f,f,r",
                &operands,
                &["i64", "f32", "f32", "f32", "f32", "i32"],
            );
        }
    }
    meet(em, h);

    em.line("// The split that adds its share last reads the summed tile; it resets the count for the next launch.");
    let is_last = count_in(em, h, counter, 2 * splits - 1);
    let summed = in_last(em, frag, &is_last, false, |em| {
        let sum_slot = em.i64(splits);
        add_group(em, frag, region, &sum_slot, 1, None, values, r)
    });
    (summed, is_last)
}
