//! `tile-defer-epilogue`: the consumers of a warp-specialised persistent
//! kernel store each output tile while the next tile's wgmma run, instead
//! of between the tiles.
//!
//! `tile-lower-to-nv{epilogue=tma}` ends each tile of a consumer's loop over
//! tiles with the conversion of its accumulators and the TMA epilogue: per
//! chunk of columns, a wait for the output buffer, shared stores, a fence, a
//! warpgroup barrier and a TMA store. The two consumers of a tile reach it
//! together, so the tensor cores idle while both store. This pass carries
//! the converted tile (and the values its stores need) into the next
//! iteration of the loop over tiles, where chunk j is stored in K step j,
//! after that step's `nv.wgmma_commit` and before its wait. A K loop of
//! fewer steps than chunks stores the rest at the tile's end; the last
//! tile's chunks are stored after the loop over tiles. Global stores after
//! the last TMA store (an FP8 quantisation's per-token scales) go with the
//! last chunk.
//!
//! The carried tile costs registers: the pass moves them from the producer
//! (down to `setmaxnreg`'s least, 24) to the consumers. The BF16 128x256
//! tile over two consumers needs 240 (at 232 ptxas spilled 28 bytes).
//!
//! Stores between tiles cost a few percent of a long-K kernel's time when
//! not overlapped; the pass hides all but the last tile's, and narrower
//! chunks (config selection's `deferred_epilogue` takes 64 columns) spread them over
//! more K steps (measured: docs/evidence.md, defer_epilogue.rs, module
//! documentation).

use crate::hopper::wgmma::next_op;
use crate::phase::{Phase, PhaseRule};
use crate::pass::PassInfo;
use crate::pass::{op_error, Pass};
use std::collections::{HashMap, HashSet};
use tilec_dialects::ir::{Attribute, Attributes, Block, Body, Builder, ElemType, InsertPoint, Op, Type, Value};
use tilec_dialects::registry::Opcode;
use tilec_dialects::syntax::type_to_string;
use tilec_dialects::nv::roles::most_consumer_registers;
use tilec_dialects::nv::{Barrier, WarpSpecialize, WgmmaWait};
use tilec_dialects::tile::{Addi, Cmpi, Constant, For, If, Muli, Yield};
use tilec_dialects::{Diagnostic, Function};

/// `tile-defer-epilogue`'s registration: name, options, phases and constructor.
pub const INFO: PassInfo = PassInfo {
    name: "tile-defer-epilogue",
    summary: "Store each output tile of a warp-specialised persistent kernel's consumers during the next tile's K steps, a chunk a step",
    options: &[],
    phases: PhaseRule {
        needs: Phase::Nv..=Phase::Nv,
        leaves: None,
        reason: "it moves the TMA epilogue that tile-lower-to-nv writes into the consumers' next K loop (run it after tile-lower-to-nv{epilogue=tma})",
    },
    create: |_| Box::new(DeferEpilogue),
};

/// The `tile-defer-epilogue` pass.
pub struct DeferEpilogue;

/// The fewest registers `setmaxnreg` gives a warpgroup: the producer's
/// budget once its registers go to the consumers.
const PRODUCER_REGISTERS: i64 = 24;

impl Pass for DeferEpilogue {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn run(&mut self, func: &mut Function) -> Result<(), Diagnostic> {
        let roles: Vec<Op> = func.body.walk_region(func.region).into_iter().filter(|&op| func.body.opcode(op) == Opcode::NvWarpSpecialize).collect();
        if roles.is_empty() {
            return Err(Diagnostic::error(func.loc.clone(), "tile-defer-epilogue needs a warp-specialised kernel (nv.warp_specialize): run tile-warp-specialize and tile-lower-to-nv first"));
        }
        for ws in roles {
            defer_in(&mut func.body, ws)?;
        }
        Ok(())
    }
}

/// A consumer's loop over tiles and the parts of its body the pass moves.
struct TileLoop {
    tiles: For,
    k_loop: For,
    /// The `nv.wgmma_commit` of the K loop's body, after which a chunk is stored.
    commit: Op,
    /// The wait that drains the K loop's last wgmma.
    drain: Op,
    /// The epilogue's ops, chunk by chunk, each ending in its `nv.tma_store`.
    chunks: Vec<Vec<Op>>,
}

fn defer_in(body: &mut Body, ws_op: Op) -> Result<(), Diagnostic> {
    let ws = WarpSpecialize::of(body, ws_op).expect("matched");
    if ws.alternate(body) {
        return Err(op_error(body, ws_op, "tile-defer-epilogue stores a tile during the next one's K steps; ping-pong consumers already store one tile beside the other's K loop".into()));
    }
    let consumer = body.entry_block(body.ops[ws_op].regions[1]);
    let found = find_tile_loop(body, ws_op, consumer)?;
    let carried = carried_values(body, &found);
    rewrite(body, &found, &carried)?;
    let consumers = ws.consumers(body);
    let regs = most_consumer_registers(PRODUCER_REGISTERS, consumers);
    if ws.consumer_regs(body) < regs {
        let attrs = &mut body.ops[ws_op].attrs;
        attrs.set("producer_regs", Attribute::Int(PRODUCER_REGISTERS, ElemType::I64));
        attrs.set("consumer_regs", Attribute::Int(regs, ElemType::I64));
    }
    Ok(())
}

fn find_tile_loop(body: &Body, ws_op: Op, consumer: Block) -> Result<TileLoop, Diagnostic> {
    let loops: Vec<Op> = body.blocks[consumer].ops.iter().copied().filter(|&op| body.opcode(op) == Opcode::TileFor).collect();
    let [tiles_op] = loops[..] else {
        return Err(op_error(body, ws_op, "tile-defer-epilogue needs one persistent loop over tiles in the consumer region (run tile-persistent before tile-warp-specialize)".into()));
    };
    let tiles = For::of(body, tiles_op).expect("matched");
    if !body.ops[tiles_op].results.is_empty() {
        return Err(op_error(body, tiles_op, "tile-defer-epilogue needs a loop over tiles that carries nothing".into()));
    }
    let tile_block = body.entry_block(tiles.region(body));
    let ops = body.blocks[tile_block].ops.clone();
    let k_pos = ops.iter().position(|&op| body.opcode(op) == Opcode::TileFor && !body.ops[op].results.is_empty());
    let Some(k_pos) = k_pos else {
        return Err(op_error(body, tiles_op, "tile-defer-epilogue found no K loop carrying an accumulator in the loop over tiles".into()));
    };
    let k_loop = For::of(body, ops[k_pos]).expect("matched");
    let k_block = body.entry_block(k_loop.region(body));
    let commit = body.blocks[k_block].ops.iter().copied().find(|&op| body.opcode(op) == Opcode::NvWgmmaCommit);
    let Some(commit) = commit else {
        return Err(op_error(body, k_loop.op(), "tile-defer-epilogue needs the K loop's wgmma committed in its body (nv.wgmma_commit)".into()));
    };
    let drain = ops.get(k_pos + 1).copied().filter(|&op| WgmmaWait::of(body, op).is_some());
    // The conversion of the drained accumulator, after the release of the
    // last stage where a wgmma group stays in flight.
    let drained = drain.map(|op| body.ops[op].results[0]);
    let convert = drained.and_then(|drained| conversion_of(body, &ops[k_pos + 1..], drained)).map(|p| k_pos + 1 + p);
    let (Some(drain), Some(convert)) = (drain, convert) else {
        return Err(op_error(body, k_loop.op(), "tile-defer-epilogue needs the K loop followed by its drain (nv.wgmma_wait) and the conversion (tile.truncf) of the drained result or of element-wise ops on it".into()));
    };
    let epilogue = &ops[convert + 1..ops.len() - 1];
    let convert = ops[convert];
    let mut chunks = vec![Vec::new()];
    for &op in epilogue {
        if !body.ops[op].regions.is_empty() {
            return Err(op_error(body, op, "tile-defer-epilogue moves straight-line epilogues only; this op has a region".into()));
        }
        chunks.last_mut().expect("one open").push(op);
        if body.opcode(op) == Opcode::NvTmaStore {
            chunks.push(Vec::new());
        }
    }
    let rest = chunks.pop().expect("one open");
    if chunks.is_empty() {
        return Err(op_error(body, convert, "tile-defer-epilogue needs the TMA epilogue after the conversion (tile-lower-to-nv{epilogue=tma})".into()));
    }
    // What follows the last TMA store (the stores of values a group of
    // columns at a time, an FP8 quantisation's scales) goes with the last
    // chunk: deferred with the tile, it is written once, with it.
    if let Some(&op) = rest.iter().find(|&&op| !(body.is_pure_leaf(op) || body.opcode(op) == Opcode::NvStoreGlobal)) {
        return Err(op_error(body, op, "tile-defer-epilogue moves the TMA epilogue and the global stores after it; this op is neither".into()));
    }
    chunks.last_mut().expect("a chunk").extend(rest);
    Ok(TileLoop { tiles, k_loop, commit, drain, chunks })
}

/// The position in `ops` of the `tile.truncf` that converts `drained`, the
/// accumulator, or a value element-wise ops (a bias, an activation) and
/// column splits (`tile.deinterleave`) make from it: those ops stay where they are, before the conversion, and
/// only the converted tile waits for the next tile's K steps.
fn conversion_of(body: &Body, ops: &[Op], drained: Value) -> Option<usize> {
    let mut derived = HashSet::from([drained]);
    for (i, &op) in ops.iter().enumerate() {
        let data = &body.ops[op];
        if !data.operands.iter().any(|v| derived.contains(v)) {
            continue;
        }
        if body.opcode(op) == Opcode::TileTruncf {
            return Some(i);
        }
        // Element-wise ops and column rearrangements (a SwiGLU's split of
        // gate and up) stay where they are, as ops of the tile's registers.
        if !(data.def.traits.elementwise || body.opcode(op) == Opcode::TileDeinterleave) {
            return None;
        }
        derived.extend(data.results.iter().copied());
    }
    None
}

/// The values of a tile that its epilogue reads and the loop over tiles
/// defines outside the epilogue (the converted tile, its coordinates): what
/// the next iteration must be handed.
fn carried_values(body: &Body, found: &TileLoop) -> Vec<Value> {
    let epilogue: HashSet<Op> = found.chunks.iter().flatten().copied().collect();
    let mut carried = Vec::new();
    for &op in found.chunks.iter().flatten() {
        for &v in &body.ops[op].operands {
            let inside = body.defined_within(v, found.tiles.op());
            let from_epilogue = body.defining_op(v).is_some_and(|d| epilogue.contains(&d));
            if inside && !from_epilogue && !carried.contains(&v) {
                carried.push(v);
            }
        }
    }
    carried
}

fn rewrite(body: &mut Body, found: &TileLoop, carried: &[Value]) -> Result<(), Diagnostic> {
    let old = found.tiles.op();
    let loc = body.ops[old].loc.clone();
    let mut b = Builder::new(body, InsertPoint::Before(old), loc.clone());
    let mut inits = Vec::new();
    for &v in carried {
        inits.push(zero_like(&mut b, v).ok_or_else(|| op_error(b.body, old, format!("tile-defer-epilogue cannot carry a value of type {} into the next tile", type_to_string(b.body.value_type(v)))))?);
    }
    let none_pending = b.index(0);
    inits.push(none_pending);
    let types: Vec<Type> = inits.iter().map(|&v| b.body.value_type(v).clone()).collect();
    let (lb, ub, step) = (found.tiles.lower_bound(b.body), found.tiles.upper_bound(b.body), found.tiles.step(b.body));
    let tiles = For::build(&mut b, lb, ub, step, &inits, &types, Attributes::new());
    let mut arg_types = vec![Type::INDEX];
    arg_types.extend(types.iter().cloned());
    let (_, block) = body.add_region(tiles.op(), &arg_types);
    let args = body.blocks[block].args.clone();
    let (previous, pending_arg) = (args[1..=carried.len()].to_vec(), args[carried.len() + 1]);
    let old_block = body.entry_block(found.tiles.region(body));
    let old_iv = body.blocks[old_block].args[0];
    body.values[args[0]].name_hint = body.values[old_iv].name_hint.clone();
    for (&arg, &v) in previous.iter().zip(carried) {
        let hint = body.values[v].name_hint.clone().unwrap_or_else(|| "value".into());
        body.values[arg].name_hint = Some(format!("pending_{hint}"));
    }
    body.values[pending_arg].name_hint = Some("stores_pending".into());

    let epilogue: HashSet<Op> = found.chunks.iter().flatten().copied().collect();
    let mut b = Builder::new(body, InsertPoint::End(block), loc.clone());
    let zero = b.index(0);
    let pending = Cmpi::build(&mut b, pending_arg, zero, "ne", Attributes::new()).result(b.body);
    let pending = b.name(pending, "has_pending");
    for op in body.blocks[old_block].ops.clone() {
        body.remove_op(op);
        let terminator = body.opcode(op) == Opcode::TileYield;
        if !terminator && !epilogue.contains(&op) {
            body.append_op(block, op);
        }
    }
    let region = tiles.region(body);
    body.replace_all_uses(region, old_iv, args[0]);
    let previous_map: HashMap<Value, Value> = carried.iter().copied().zip(previous.iter().copied()).collect();

    // In the K loop: chunk j in step j, beside its wgmma.
    let (k_lb, k_ub, k_step) = (found.k_loop.lower_bound(body), found.k_loop.upper_bound(body), found.k_loop.step(body));
    let k_block = body.entry_block(found.k_loop.region(body));
    let kt = body.blocks[k_block].args[0];
    let mut at = Builder::new(body, InsertPoint::Before(next_op(body, found.commit)), loc.clone());
    let steps = StepChunks { found, map: &previous_map, pending, lb: k_lb, step: k_step };
    steps.store(&mut at, "stores_chunk", true, |b, step_j| Cmpi::build(b, kt, step_j, "eq", Attributes::new()).result(b.body));
    // After it: the chunks a short K loop had no step for.
    let mut at = Builder::new(body, InsertPoint::Before(next_op(body, found.drain)), loc.clone());
    steps.store(&mut at, "no_step", false, |b, step_j| Cmpi::build(b, step_j, k_ub, "sge", Attributes::new()).result(b.body));
    let mut end = Builder::new(body, InsertPoint::End(block), loc.clone());
    let one = end.index(1);
    let mut yielded = carried.to_vec();
    yielded.push(one);
    Yield::build(&mut end, &yielded, Attributes::new());

    // After the loop over tiles: the last tile's chunks.
    let results = body.ops[tiles.op()].results.clone();
    let last_map: HashMap<Value, Value> = carried.iter().copied().zip(results.iter().copied()).collect();
    let mut after = Builder::new(body, InsertPoint::Before(old), loc);
    let zero = after.index(0);
    let last_pending = Cmpi::build(&mut after, results[carried.len()], zero, "ne", Attributes::new()).result(after.body);
    let last_pending = after.name(last_pending, "last_pending");
    guarded_chunks(&mut after, &[last_pending], found, 0..=found.chunks.len() - 1, &last_map, false);
    // The new loop and the last tile's stores sit before the old loop, now empty.
    body.remove_op(old);
    Ok(())
}

/// The previous tile's chunks, each tied to a step of the K loop (lower
/// bound `lb`, step `step`).
struct StepChunks<'a> {
    found: &'a TileLoop,
    map: &'a HashMap<Value, Value>,
    /// Whether a previous tile waits for its stores.
    pending: Value,
    lb: Value,
    step: Value,
}

impl StepChunks<'_> {
    /// Chunk j where a tile is pending and `condition` (given the K loop's
    /// `lb + j * step`, named `hint` j) holds; `in_k_loop` where they sit
    /// in the K loop, before a step's wgmma wait.
    fn store(&self, b: &mut Builder, hint: &str, in_k_loop: bool, condition: impl Fn(&mut Builder, Value) -> Value) {
        for j in 0..self.found.chunks.len() {
            let index = b.index(j as i64);
            let offset = Muli::build(b, index, self.step, Attributes::new()).result(b.body);
            let step_j = Addi::build(b, self.lb, offset, Attributes::new()).result(b.body);
            let holds = condition(b, step_j);
            let holds = b.name(holds, &format!("{hint}{j}"));
            guarded_chunks(b, &[self.pending, holds], self.found, j..=j, self.map, in_k_loop);
        }
    }
}

/// Chunks `range` of the epilogue, copied with the carried values renamed
/// through `map`, inside one `tile.if` a condition, outermost first. A
/// chunk copies the effect-free ops of the chunks before it that it reads.
///
/// With `reconverge` (a chunk inside the K loop) the copies end with a
/// warpgroup barrier. A chunk's TMA store is its first thread's alone, and
/// without the barrier LLVM's NVPTX back end copied the K step's
/// `wgmma.wait_group.sync.aligned` that follows into that thread's branch:
/// the warpgroup no longer ran it together, and the kernel hung
/// (`nv-verify-barriers` checks this, `convergence.rs`). After the K loop
/// no wgmma follows before the loop over tiles turns, so no barrier.
fn guarded_chunks(b: &mut Builder, conditions: &[Value], found: &TileLoop, range: std::ops::RangeInclusive<usize>, map: &HashMap<Value, Value>, reconverge: bool) {
    let loc = b.loc.clone();
    let (&first, inner) = conditions.split_first().expect("a condition");
    let guard = If::build(b, first, Attributes::new()).op();
    let (_, block) = b.body.add_region(guard, &[]);
    let mut inside = Builder::new(b.body, InsertPoint::End(block), loc);
    if inner.is_empty() {
        let mut map = map.clone();
        let last = *range.end();
        for (j, chunk) in found.chunks.iter().enumerate().take(last + 1) {
            for &op in chunk {
                if range.contains(&j) || inside.body.is_pure_leaf(op) {
                    inside.clone_op(op, &mut map);
                }
            }
        }
        if reconverge {
            let mut attrs = Attributes::new();
            attrs.set("warpgroup", Attribute::Unit);
            Barrier::build(&mut inside, attrs);
        }
    } else {
        guarded_chunks(&mut inside, inner, found, range, map, reconverge);
    }
    Yield::build(&mut inside, &[], Attributes::new());
}

/// A value of `v`'s type to start the loop over tiles with (never stored:
/// no tile is pending then).
fn zero_like(b: &mut Builder, v: Value) -> Option<Value> {
    let ty = b.body.value_type(v).clone();
    let mut attrs = Attributes::new();
    match &ty {
        Type::Scalar(elem) if elem.is_integer() => attrs.set("value", Attribute::Int(0, *elem)),
        Type::Tile(t) if t.elem.is_float() => attrs.set("value", Attribute::Float(0.0, t.elem)),
        _ => return None,
    }
    Some(Constant::build(b, ty, attrs).result(b.body))
}
