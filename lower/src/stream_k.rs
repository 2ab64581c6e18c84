//! Stream-K's hand-over of partial tiles (`tile.park_partial`,
//! `tile.add_parked`) through the workspace the runtime allocates, zeroed,
//! for the launches on one stream (the kernel's last parameter, the
//! manifest's `workspace`): every launch leaves it as it found it (each
//! slot is filled once and emptied once), so the launches of one stream
//! reuse it and another stream's launches run at once with their own.
//!
//! Slot s, the one CTA s parks in, is the region of [`Workspace::stream_k_region_bytes`] at
//! `s * region_bytes`: one f32 tile in the order of the threads' fragments,
//! then one i32 flag per holder group. With `count` threads holding the
//! tile (a CTA's, or the consumer warpgroups' of a warp-specialised
//! kernel), thread p's j-th group of four values is at `(j * count + p) *
//! 16`, so a warp's vector stores and loads are 512 contiguous bytes. Each
//! holder warpgroup (or the whole CTA outside warp specialisation) marks
//! its part full with its own flag: its threads store and meet at their
//! barrier, and the first of them releases the flag; the adding side's
//! first thread acquires the flag and clears it, the group meets, and every
//! thread reads its values through L2. No thread fences on its own: a
//! barrier orders each thread's stores before its first thread's release,
//! and release is cumulative, so the acquire that reads the flag sees
//! them; likewise the barrier after the acquire orders the other threads'
//! loads after it (the PTX memory model's causality order; CUTLASS's
//! semaphores rely on the same). A GPU-scope fence in every thread would
//! only make each wait for its own stores to drain.

use super::emitter::Emitter;
use super::fragment::Frag;
use super::holders::{meet, open_first, Holders, MAX_GROUPS};
use super::plan::{Workspace, STREAM_K_FLAG_BYTES};

// A slot's flags hold one i32 per holder group.
const _: () = assert!(MAX_GROUPS * 4 <= STREAM_K_FLAG_BYTES);

/// The bytes of one slot: the whole tile in f32, every holder's fragment.
pub(crate) fn slot_bytes(frag: &Frag, holders: &Holders) -> i64 {
    frag.geom.values_per_thread() * holders.count * 4
}

/// The global address (i64) of `slot`'s region (an index value) in
/// `workspace` (the kernel's parameter).
fn region(em: &mut Emitter, workspace: &str, slot: &str, slot_bytes: i64) -> String {
    let ws = em.assign("ws", format!("llvm.addrspacecast {workspace} : !llvm.ptr to !llvm.ptr<1>"));
    let ws = em.assign("ws_addr", format!("llvm.ptrtoint {ws} : !llvm.ptr<1> to i64"));
    let slot = em.assign("slot", format!("arith.extsi {slot} : i32 to i64"));
    let bytes = em.i64(Workspace::stream_k_region_bytes(slot_bytes));
    let at = em.binop("slot_at", "arith.muli", &slot, &bytes, "i64");
    em.binop("slot_at", "arith.addi", &ws, &at, "i64")
}

/// The address of this thread's first vector in the slot at `region`.
fn thread_slot(em: &mut Emitter, region: &str, h: &Holders) -> String {
    let p = em.assign("holder", format!("arith.extui {} : i32 to i64", h.index));
    let c16 = em.i64(16);
    let mine = em.binop("holder_at", "arith.muli", &p, &c16, "i64");
    em.binop("slot_at", "arith.addi", region, &mine, "i64")
}

/// The address of this group's flag of the slot at `region`.
fn flag(em: &mut Emitter, region: &str, slot_bytes: i64, h: &Holders) -> String {
    let group = em.assign("group", format!("arith.extui {} : i32 to i64", h.group));
    let c4 = em.i64(4);
    let at = em.binop("flag_at", "arith.muli", &group, &c4, "i64");
    let at = em.add_const("flag_at", &at, slot_bytes, "i64");
    em.binop("flag_at", "arith.addi", region, &at, "i64")
}

/// One side-effecting PTX statement with the given operands.
pub(crate) fn asm(em: &mut Emitter, text: &str, constraints: &str, operands: &[String], types: &[&str]) {
    em.line(format!(
        "llvm.inline_asm has_side_effects asm_dialect = att \"{text}\", \"{constraints}\" {} : ({}) -> ()",
        operands.join(", "),
        types.join(", ")
    ));
}

/// Vector j's four values of `frag`: chunk and first position.
pub(crate) fn vectors(frag: &Frag) -> impl Iterator<Item = (usize, usize)> {
    let per_chunk = frag.geom.chunk_len() / 4;
    (0..frag.chunks.len()).flat_map(move |c| (0..per_chunk).map(move |v| (c, 4 * v)))
}

/// Stores this thread's values of `frag` as vectors of four from the
/// global address `at` (i64) on, vector j at `at + j * count * 16`: with
/// `count` threads storing side by side, a warp's stores are contiguous.
pub(crate) fn store_vectors(em: &mut Emitter, frag: &Frag, at: &str, count: i64) {
    let ty = frag.chunk_type(em);
    for (j, (c, first)) in vectors(frag).enumerate() {
        let offset = em.i64(j as i64 * count * 16);
        let addr = em.binop("park_at", "arith.addi", at, &offset, "i64");
        let mut operands = vec![addr];
        for i in first..first + 4 {
            operands.push(em.assign("e", format!("llvm.extractvalue {}[{i}] : {ty}", frag.chunks[c])));
        }
        asm(em, "st.global.v4.f32 [$0], {$1, $2, $3, $4};", "l,f,f,f,f", &operands, &["i64", "f32", "f32", "f32", "f32"]);
    }
}

/// `tile.park_partial`: this thread's values into `slot` of `workspace`,
/// then the group's flag.
pub(crate) fn park(em: &mut Emitter, frag: &Frag, slot: &str, h: &Holders, slot_bytes: i64, workspace: &str) {
    em.line("// stream-K: park the partial tile, then mark the slot full.");
    let region = region(em, workspace, slot, slot_bytes);
    let at = thread_slot(em, &region, h);
    store_vectors(em, frag, &at, h.count);
    meet(em, h);
    let flag = flag(em, &region, slot_bytes, h);
    open_first(em, h);
    asm(em, "st.release.gpu.global.b32 [$0], 1;", "l", &[flag], &["i64"]);
    em.close("}");
}

/// `tile.add_parked`: waits for the group's flag of `slot` of `workspace`,
/// empties it, and adds the parked values to `frag`'s.
pub(crate) fn add(em: &mut Emitter, frag: &Frag, slot: &str, h: &Holders, slot_bytes: i64, workspace: &str) -> Frag {
    let ty = frag.chunk_type(em);
    em.line("// stream-K: add the tile a later CTA parked, once its slot is full.");
    let region = region(em, workspace, slot, slot_bytes);
    let flag = flag(em, &region, slot_bytes, h);
    open_first(em, h);
    let wait = "{\\0A.reg .pred p;\\0A.reg .b32 f;\\0ASK_WAIT:\\0Ald.acquire.gpu.global.b32 f, [$0];\\0Asetp.ne.b32 p, f, 0;\\0A@p bra SK_FULL;\\0Ananosleep.u32 64;\\0Abra SK_WAIT;\\0ASK_FULL:\\0Ast.relaxed.gpu.global.b32 [$0], 0;\\0A}\\0A";
    asm(em, wait, "l", &[flag], &["i64"]);
    em.close("}");
    meet(em, h);
    let at = thread_slot(em, &region, h);
    let mut chunks = frag.chunks.clone();
    for (j, (c, first)) in vectors(frag).enumerate() {
        let offset = em.i64(j as i64 * h.count * 16);
        let addr = em.binop("parked_at", "arith.addi", &at, &offset, "i64");
        let parked = em.assign(
            "parked",
            format!("llvm.inline_asm has_side_effects asm_dialect = att \"ld.global.cg.v4.f32 {{$0, $1, $2, $3}}, [$4];\", \"=f,=f,=f,=f,l\" {addr} : (i64) -> !llvm.struct<(f32, f32, f32, f32)>"),
        );
        for i in 0..4 {
            let p = em.assign("p", format!("llvm.extractvalue {parked}[{i}] : !llvm.struct<(f32, f32, f32, f32)>"));
            let mine = em.assign("e", format!("llvm.extractvalue {}[{}] : {ty}", chunks[c], first + i));
            let sum = em.binop("e", "arith.addf", &mine, &p, "f32");
            chunks[c] = em.assign("frag", format!("llvm.insertvalue {sum}, {}[{}] : {ty}", chunks[c], first + i));
        }
    }
    Frag { geom: frag.geom.clone(), elem: frag.elem, chunks }
}
