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

use super::emitter::Emitter;
use super::fragment::Frag;
use super::holders::{is_first, meet, meet_and_vote, Holders, MAX_GROUPS};
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
    let v = em.assign(
        "slot_v",
        format!("llvm.inline_asm has_side_effects asm_dialect = att \"ld.global.cg.v4.f32 {{$0, $1, $2, $3}}, [$4];\", \"=f,=f,=f,=f,l\" {addr} : (i64) -> !llvm.struct<(f32, f32, f32, f32)>"),
    );
    [0, 1, 2, 3].map(|i| em.assign("slot_x", format!("llvm.extractvalue {v}[{i}] : !llvm.struct<(f32, f32, f32, f32)>")))
}

/// Adds the `group` slots from `first` (i64) on, in order, to `acc` (to
/// the first of them, without one). It reads the slots a batch of vectors
/// at a time, every slot's vectors of a batch before adding any, with at
/// most [`MAX_VALUES_IN_FLIGHT`] values a thread in flight (or one vector
/// of each slot): a tile of many values a thread is not read whole beside
/// the sum, which would take as many registers again.
fn add_group(em: &mut Emitter, frag: &Frag, region: &Region, first: &str, group: i64, acc: Option<&[String]>, r: &Reduction) -> Vec<String> {
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
    let per_batch = usize::try_from(MAX_VALUES_IN_FLIGHT / (4 * group)).unwrap_or(0).max(1);
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
/// split whose group arrives last, gives the sum of every slot (elsewhere
/// `frag` itself) and an i1 that is true there.
pub(crate) fn reduce(em: &mut Emitter, frag: &Frag, slot_bytes: i64, r: &Reduction) -> (Frag, String) {
    let ty = frag.chunk_type(em);
    let h = r.holders;
    em.line("// split-K: park the partial tile in this split's slot of the workspace.");
    let at = region_at(em, r, Workspace::split_k_region_bytes(r.splits, slot_bytes));
    let region = Region { at, slot_bytes };
    let z = em.assign("split", "gpu.block_id z");
    let z = em.assign("split", format!("arith.index_cast {z} : index to i64"));
    let mine = thread_slot(em, &region, &z, r);
    store_vectors(em, frag, &mine, h.count);
    meet(em, h);

    em.line("// The group's first thread counts it in; the last split resets the count for the next launch.");
    let group = em.assign("group", format!("arith.extui {} : i32 to i64", h.group));
    let c4 = em.i64(4);
    let counter = em.binop("counter_at", "arith.muli", &group, &c4, "i64");
    let counter = em.binop("counter_at", "arith.addi", &region.at, &counter, "i64");
    let first = is_first(em, h);
    let arrived = em.fresh("arrived_last");
    em.open(format!("{arrived} = scf.if {first} -> (i32) {{"));
    let before = em.assign(
        "arrived",
        format!("llvm.inline_asm has_side_effects asm_dialect = att \"atom.add.acq_rel.gpu.global.u32 $0, [$1], 1;\", \"=r,l\" {counter} : (i64) -> i32"),
    );
    let all_but_one = em.i32(r.splits - 1);
    let last = em.assign("is_last", format!("arith.cmpi eq, {before}, {all_but_one} : i32"));
    em.open(format!("scf.if {last} {{"));
    asm(em, "st.relaxed.gpu.global.u32 [$0], 0;", "l", std::slice::from_ref(&counter), &["i64"]);
    em.close("}");
    let flag = em.assign("is_last", format!("arith.extui {last} : i1 to i32"));
    em.line(format!("scf.yield {flag} : i32"));
    em.middle("} else {");
    let zero = em.i32(0);
    em.line(format!("scf.yield {zero} : i32"));
    em.close("}");
    let is_last = meet_and_vote(em, h, &arrived, "is_last_split");

    em.line("// The last split adds every slot in the order of the splits, reading a group of slots at once.");
    let n = frag.chunks.len();
    let types = vec![ty.clone(); n].join(", ");
    let group = slots_in_flight(frag.geom.values_per_thread(), r.splits);
    let summed = em.fresh("split_sum");
    em.open(format!("{summed}:{n} = scf.if {is_last} -> ({types}) {{"));
    let first = em.i64(0);
    let init = add_group(em, frag, &region, &first, group, None, r);
    let total = if group == r.splits {
        init
    } else {
        let (lb, ub, step) = (em.i32(group), em.i32(r.splits), em.i32(group));
        let looped = em.fresh("split_acc");
        let iv = em.fresh("s");
        let args: Vec<String> = (0..n).map(|_| em.fresh("acc")).collect();
        let iter: Vec<String> = args.iter().zip(&init).map(|(a, i)| format!("{a} = {i}")).collect();
        em.open(format!("{looped}:{n} = scf.for {iv} = {lb} to {ub} step {step} iter_args({}) -> ({types}) : i32 {{", iter.join(", ")));
        let s = em.assign("split", format!("arith.extui {iv} : i32 to i64"));
        let next = add_group(em, frag, &region, &s, group, Some(&args), r);
        em.line(format!("scf.yield {} : {types}", next.join(", ")));
        em.close("}");
        (0..n).map(|i| format!("{looped}#{i}")).collect()
    };
    em.line(format!("scf.yield {} : {types}", total.join(", ")));
    em.middle("} else {");
    em.line(format!("scf.yield {} : {types}", frag.chunks.join(", ")));
    em.close("}");
    let chunks = (0..n).map(|i| format!("{summed}#{i}")).collect();
    (Frag { geom: frag.geom.clone(), elem: frag.elem, chunks }, is_last)
}
