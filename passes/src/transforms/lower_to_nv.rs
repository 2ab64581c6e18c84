//! `tile-lower-to-nv`: makes whatever is still implicit explicit in the nv
//! dialect, in the simplest Hopper form: one
//! warpgroup, one pipeline stage.
//!
//! Tiles loaded with a shared layout become TMA loads into a one-stage
//! buffer that complete on an mbarrier; every thread waits on the barrier's
//! phase, which flips each loop iteration. A `tile.dot` on such tiles
//! becomes an asynchronous `nv.wgmma` that is waited for at once (with A
//! first read into registers by `nv.load_fragment` when the dot takes A in
//! registers), followed by
//! a CTA barrier so the next iteration's TMA cannot overwrite tiles still
//! being read. Stores of register tiles become bounds-checked global stores
//! (`epilogue=global`), or with `epilogue=tma` a store into a swizzled
//! output buffer, a proxy fence, a barrier and an elected TMA store, waited
//! for only before the buffer is rewritten (by the next persistent tile)
//! and before the CTA exits; in a warp-specialised kernel each consumer
//! warpgroup stores its own rows through its own stage of the buffer.
//! Split-K's `tile.sum_splits` becomes an `nv.cluster_sum` through an f32
//! buffer of the tile's shape, with an `nv.cluster_barrier` before the
//! kernel returns.

use crate::config::{ConfigEntries, EpilogueStore};
use crate::options::{OptionKind, OptionSpec};
use crate::phase::{Phase, PhaseRule};
use crate::pass::PassInfo;
use crate::pass::{op_error, Pass};
use crate::hopper::counting::{loop_iteration, parity};
use crate::hopper::schedule::dots;
use crate::hopper::staging::{element_coords, is_staged_load, load_element_coords, outermost_ancestor, remove_staged_loads, StagedBuffers};
use crate::hopper::wgmma::{dot_a, emit_wgmma, next_op, replace_dot};
use std::collections::HashSet;
use tilec_dialects::ir::{Attribute, Attributes, Block, Body, Builder, InsertPoint, Op, SmemType, TileType, Type, Value};
use tilec_dialects::nv::{AllocSmem, Barrier, ClusterBarrier, ClusterSum, FenceAsyncShared, LoadGlobal, MbarrierWait, StoreGlobal, StoreShared, TmaStore, TmaStoreWait, WarpSpecialize};
use tilec_dialects::registry::Opcode;
use tilec_dialects::tile::{Addi, For, Load, Store, SumSplits};
use tilec_dialects::{Diagnostic, ElemType, Function, Layout};

/// `tile-lower-to-nv`'s registration: name, options, phases and constructor.
pub const INFO: PassInfo = PassInfo {
    name: "tile-lower-to-nv",
    summary: "Lower tile loads, dots and stores to TMA, mbarriers, wgmma and global stores (one stage)",
    options: &[
        OptionSpec {
            name: "epilogue",
            kind: OptionKind::Enum(EpilogueStore::WORDS),
            default: "global",
            help: "store output tiles directly (global) or through a swizzled shared buffer and a TMA store (tma)",
        },
        OptionSpec {
            name: "epilogue-columns",
            kind: OptionKind::Int { min: 0, max: 256 },
            default: "0",
            help: "with epilogue=tma, store a tile through a buffer this many columns wide, one chunk of columns after another (0: the whole tile; default: tile.config's epilogue_cols)",
        },
    ],
    phases: PhaseRule { needs: Phase::TileLayouts..=Phase::TileScheduled, leaves: Some(Phase::Nv), reason: "it lowers tiles by their layouts (run it after tile-assign-layouts and the K loop's schedule, once)" },
    create: |options| {
        Box::new(LowerToNv {
            tma_epilogue: EpilogueStore::parse(options.word("epilogue")) == EpilogueStore::Tma,
            from_config: !options.given("epilogue"),
            chunk_columns: options.int("epilogue-columns"),
            chunk_from_config: !options.given("epilogue-columns"),
        })
    },
};

/// The `tile-lower-to-nv` pass with its options resolved.
pub struct LowerToNv {
    /// Store register tiles through shared memory and TMA.
    tma_epilogue: bool,
    /// Take the epilogue from the function's `tile.config` (none given).
    from_config: bool,
    /// The TMA epilogue's buffer columns; 0 for the whole tile.
    chunk_columns: i64,
    /// Take the buffer columns from `tile.config` (none given).
    chunk_from_config: bool,
}

impl LowerToNv {
    /// The epilogue config selection chose, where the pipeline gave none.
    fn apply_config(&mut self, func: &Function) -> Result<(), Diagnostic> {
        let config = ConfigEntries::of(func)?;
        if let Some(epilogue) = config.epilogue.filter(|_| self.from_config) {
            self.tma_epilogue = epilogue == EpilogueStore::Tma;
        }
        if let Some(columns) = config.epilogue_cols.filter(|_| self.chunk_from_config) {
            self.chunk_columns = columns;
        }
        Ok(())
    }
}

impl Pass for LowerToNv {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn run(&mut self, func: &mut Function) -> Result<(), Diagnostic> {
        self.apply_config(func)?;
        let body = &mut func.body;
        let ops = body.walk_region(func.region);
        let mut blocks: Vec<Block> = Vec::new();
        for &op in &ops {
            if is_staged_load(body, op) {
                let block = body.ops[op].parent.expect("attached");
                if !blocks.contains(&block) {
                    blocks.push(block);
                }
            }
        }
        for block in blocks {
            lower_staged_block(body, func.region, block)?;
        }
        let mut sums_splits = false;
        for op in body.walk_region(func.region) {
            match body.opcode(op) {
                // One value a group of columns goes straight to global
                // memory: too few bytes for a buffer and a TMA store.
                Opcode::TileStore if self.tma_epilogue && Store::of(body, op).and_then(|s| s.group(body)).is_none() => lower_store_tma(body, Store::of(body, op).expect("verified"), self.chunk_columns)?,
                Opcode::TileStore => lower_store(body, Store::of(body, op).expect("verified"))?,
                Opcode::TileLoad => lower_load(body, func.region, Load::of(body, op).expect("verified"))?,
                Opcode::TileSumSplits => {
                    lower_sum_splits(body, func.region, SumSplits::of(body, op).expect("verified"))?;
                    sums_splits = true;
                }
                Opcode::TileDot | Opcode::TileDotScaled => {
                    return Err(op_error(body, op, "reads tiles that were not loaded by TMA in the same block".into()))
                }
                _ => {}
            }
        }
        if sums_splits {
            let terminator = body.terminator(body.entry_block(func.region)).expect("verified function");
            let loc = body.ops[terminator].loc.clone();
            ClusterBarrier::build(&mut Builder::new(body, InsertPoint::Before(terminator), loc), Attributes::new());
        }
        Ok(())
    }
}

/// `tile.sum_splits`: each CTA of the cluster parks its partial tile in an
/// unswizzled f32 buffer of the tile's shape, read by rank 0 alone
/// (`nv.cluster_sum`); the caller adds the cluster barrier before the
/// kernel returns that keeps every buffer alive until rank 0 has read it.
fn lower_sum_splits(body: &mut Body, region: tilec_dialects::Region, sum: SumSplits) -> Result<(), Diagnostic> {
    let (value, result) = (sum.value(body), sum.result(body));
    let tile = body.value_type(value).as_tile().cloned().expect("verified");
    if !matches!(tile.layout, Some(Layout::Mma { .. })) {
        return Err(op_error(body, sum.op(), "sums a tile with no '#tile.mma' layout; run tile-assign-layouts first".into()));
    }
    let parked = TileType { shape: tile.shape.clone(), elem: tile.elem, layout: Some(Layout::NvmmaShared { swizzle_bytes: 0, transposed: false, padding_elems: 0 }) };
    let loc = body.ops[sum.op()].loc.clone();
    let anchor = outermost_ancestor(body, sum.op());
    let mut b = Builder::new(body, InsertPoint::Before(anchor), loc.clone());
    let buf = AllocSmem::build(&mut b, Type::Smem(SmemType { stages: 1, tile: parked }), Attributes::new()).result(b.body);
    let buf = b.name(buf, "partial_smem");
    let mut b = Builder::new(body, InsertPoint::Before(sum.op()), loc);
    let total = ClusterSum::build(&mut b, value, buf, Attributes::new()).result(b.body);
    body.values[total].name_hint = body.values[result].name_hint.clone();
    body.replace_all_uses(region, result, total);
    body.remove_op(sum.op());
    Ok(())
}

/// The phase parity a barrier used once per iteration of the loop owning
/// `block` waits for: the iteration number modulo 2 (0 outside loops).
fn phase_of_block(b: &mut Builder<'_>, block: Block) -> Value {
    let owner = b.body.blocks[block].parent.and_then(|r| b.body.regions[r].parent);
    match owner.and_then(|o| For::of(b.body, o)) {
        Some(for_op) => {
            let iteration = loop_iteration(b, for_op);
            let phase = parity(b, iteration);
            b.name(phase, "phase")
        }
        None => b.index(0),
    }
}

fn lower_staged_block(body: &mut Body, region: tilec_dialects::Region, block: Block) -> Result<(), Diagnostic> {
    let loads: Vec<Op> = body.blocks[block].ops.iter().copied().filter(|&o| is_staged_load(body, o)).collect();
    let first = loads[0];
    let loc = body.ops[first].loc.clone();
    // Buffers and the barrier live for the whole kernel: allocate them before
    // the outermost op enclosing this block.
    let anchor = outermost_ancestor(body, first);
    let mut b = Builder::new(body, InsertPoint::Before(anchor), loc.clone());
    let c0 = b.index(0);
    // Only staged (TMA) loads here: no narrow tile to place.
    let staged = StagedBuffers::allocate(&mut b, &loads, 1, &HashSet::new(), None);

    let mut b = Builder::new(body, InsertPoint::Before(first), loc);
    let coords: Vec<Vec<Value>> = loads.iter().map(|&l| Load::of(b.body, l).expect("staged loads are tile.load").indices(b.body).to_vec()).collect();
    staged.issue(&mut b, &loads, &coords, c0);
    let phase = phase_of_block(&mut b, block);
    MbarrierWait::build(&mut b, staged.full, c0, phase, Attributes::new());

    for dot in dots(body, block) {
        let a_tile = dot_a(body, dot).staged;
        let (Some(&a), Some(&bb)) = (staged.buffer_of.get(&a_tile), staged.buffer_of.get(&dot.rhs(body))) else { continue };
        let mut b = Builder::new(body, InsertPoint::Before(dot.op()), body.ops[dot.op()].loc.clone());
        let done = emit_wgmma(&mut b, dot, [a, c0], [bb, c0], 0);
        Barrier::build(&mut b, Attributes::new());
        replace_dot(body, region, dot, done);
    }
    remove_staged_loads(body, region, &loads)
}

/// A tile loaded in registers (a block-scaled dot's scales): each thread
/// reads its elements.
fn lower_load(body: &mut Body, region: tilec_dialects::Region, load: Load) -> Result<(), Diagnostic> {
    let (tensor, result) = (load.tensor(body), load.result(body));
    let tile = body.value_type(result).as_tile().cloned().expect("verified");
    if tile.layout.is_none() {
        return Err(op_error(body, load.op(), "loads a tile with no layout; run tile-assign-layouts first".into()));
    }
    let mut b = Builder::new(body, InsertPoint::Before(load.op()), body.ops[load.op()].loc.clone());
    let indices = load.indices(b.body).to_vec();
    let coords = load_element_coords(&mut b, load, &indices);
    let loaded = LoadGlobal::build(&mut b, tensor, &coords, Type::Tile(tile), Attributes::new()).result(b.body);
    body.values[loaded].name_hint = body.values[result].name_hint.clone();
    body.replace_all_uses(region, result, loaded);
    body.remove_op(load.op());
    Ok(())
}

fn lower_store(body: &mut Body, store: Store) -> Result<(), Diagnostic> {
    let (value, tensor) = (store.value(body), store.tensor(body));
    let tile = body.value_type(value).as_tile().cloned().expect("verified");
    if tile.layout.as_ref().is_none_or(Layout::is_shared) {
        return Err(op_error(body, store.op(), "stores a tile with no register layout; run tile-assign-layouts first".into()));
    }
    let mut b = Builder::new(body, InsertPoint::Before(store.op()), body.ops[store.op()].loc.clone());
    let indices = store.indices(b.body).to_vec();
    let group = store.group(b.body);
    // A store of one value a group: the tensor's tile is the value's rows
    // by one column a group.
    let mut extents = tile.shape.clone();
    let mut attrs = Attributes::new();
    if let (Some(group), Some(cols)) = (group, extents.last_mut()) {
        *cols /= group;
        attrs.set("group", Attribute::Int(group, ElemType::I64));
    }
    let coords = element_coords(&mut b, &indices, &extents);
    StoreGlobal::build(&mut b, value, tensor, &coords, attrs);
    body.remove_op(store.op());
    Ok(())
}

/// `epilogue=tma`: an output buffer (swizzled by the layout rules for the
/// tile's row bytes) allocated before the outermost op around the store,
/// then `nv.store_shared`, `nv.fence_async_shared`, a barrier and an
/// elected `nv.tma_store`, whose `nv.tma_store_wait` comes as late as it
/// can: inside a loop (a persistent kernel) just before the next tile
/// rewrites the buffer, so the store overlaps that tile's main loop, with a
/// barrier after it so no thread writes the buffer before the store has
/// read it; and once after the outermost loop (or the store), before the
/// CTA exits.
///
/// In a consumer region of `nv.warp_specialize` each consumer warpgroup
/// stores its own rows: the buffer has a stage per consumer, the consumer
/// index picks it, the barriers are the warpgroup's own, and the elected
/// ops are issued by each warpgroup's first thread.
///
/// With `chunk_columns` narrower than the tile the buffer is that wide and
/// the tile goes through it a chunk of columns at a time, each chunk
/// waiting for the last one's store to have read the buffer: less shared
/// memory (a pipeline stage more) for a short wait per chunk.
fn lower_store_tma(body: &mut Body, store: Store, chunk_columns: i64) -> Result<(), Diagnostic> {
    let (value, tensor) = (store.value(body), store.tensor(body));
    let tile = body.value_type(value).as_tile().cloned().expect("verified");
    if !matches!(tile.layout, Some(Layout::Mma { .. })) {
        return Err(op_error(body, store.op(), "stores a tile with no '#tile.mma' layout; epilogue=tma stores MMA register tiles (run tile-assign-layouts first)".into()));
    }
    let place = StorePlace::of(body, store.op())?;
    let [rows, cols] = tile.shape[..] else {
        return Err(op_error(body, store.op(), "epilogue=tma stores rank-2 tiles only".into()));
    };
    if rows > 256 {
        return Err(op_error(body, store.op(), format!("epilogue=tma: {rows} rows exceed a TMA box (256)")));
    }
    let chunk = if chunk_columns == 0 { cols } else { chunk_columns.min(cols) };
    if cols % chunk != 0 {
        return Err(op_error(body, store.op(), format!("epilogue=tma: chunks of {chunk} columns do not divide the tile's {cols}")));
    }
    let swizzle = crate::layout_rules::swizzle_bytes(chunk, tile.elem.bits(), rows);
    let shared = TileType { shape: vec![rows, chunk], elem: tile.elem, layout: Some(Layout::NvmmaShared { swizzle_bytes: swizzle, transposed: false, padding_elems: 0 }) };
    let loc = body.ops[store.op()].loc.clone();
    let anchor = outermost_ancestor(body, store.op());
    let mut b = Builder::new(body, InsertPoint::Before(anchor), loc.clone());
    let stages = place.consumer.map_or(1, |(_, consumers)| consumers);
    let buf = AllocSmem::build(&mut b, Type::Smem(SmemType { stages, tile: shared }), Attributes::new()).result(b.body);
    let hint = b.body.values[tensor].name_hint.clone().unwrap_or_else(|| "out".into());
    let buf = b.name(buf, &format!("{}_smem", hint.to_lowercase()));
    let mut b = Builder::new(body, InsertPoint::Before(store.op()), loc.clone());
    let stage = match place.consumer {
        Some((c, _)) => c,
        None => b.index(0),
    };
    let barrier = |b: &mut Builder<'_>| {
        let mut attrs = Attributes::new();
        if place.consumer.is_some() {
            attrs.set("warpgroup", Attribute::Unit);
        }
        Barrier::build(b, attrs);
    };
    let indices = store.indices(b.body).to_vec();
    for first_column in (0..cols).step_by(chunk as usize) {
        if first_column > 0 || place.outermost_loop.is_some() {
            TmaStoreWait::build(&mut b, Attributes::new());
            barrier(&mut b);
        }
        let mut attrs = Attributes::new();
        if chunk < cols {
            attrs.set("column_offset", Attribute::Int(first_column, ElemType::I64));
        }
        StoreShared::build(&mut b, value, buf, stage, attrs);
        FenceAsyncShared::build(&mut b, Attributes::new());
        barrier(&mut b);
        let mut chunk_coords = element_coords(&mut b, &indices, &tile.shape);
        if first_column > 0 {
            let last = chunk_coords.last_mut().expect("rank-2 tile");
            let offset = b.index(first_column);
            *last = Addi::build(&mut b, *last, offset, Attributes::new()).result(b.body);
        }
        TmaStore::build(&mut b, buf, stage, tensor, &chunk_coords, Attributes::new());
    }
    let last = place.outermost_loop.unwrap_or(store.op());
    TmaStoreWait::build(&mut Builder::new(body, InsertPoint::Before(next_op(body, last)), loc), Attributes::new());
    body.remove_op(store.op());
    Ok(())
}

/// Where a `tile.store` sits: the outermost loop around it, and in a
/// consumer region of `nv.warp_specialize` the consumer index with the
/// number of consumers.
struct StorePlace {
    outermost_loop: Option<Op>,
    consumer: Option<(Value, i64)>,
}

impl StorePlace {
    fn of(body: &Body, store: Op) -> Result<StorePlace, Diagnostic> {
        let mut place = StorePlace { outermost_loop: None, consumer: None };
        let mut inner = store;
        while let Some((region, parent)) = body.enclosing(inner) {
            match body.opcode(parent) {
                Opcode::NvWarpSpecialize => {
                    let ws = WarpSpecialize::of(body, parent).expect("matched");
                    if region != ws.consumer(body) {
                        return Err(op_error(body, store, "epilogue=tma stores from a consumer region of nv.warp_specialize, not the producer's".into()));
                    }
                    let c = body.blocks[body.entry_block(region)].args[0];
                    place.consumer = Some((c, ws.consumers(body)));
                    return Ok(place);
                }
                Opcode::TileFor => place.outermost_loop = Some(parent),
                _ => {}
            }
            inner = parent;
        }
        Ok(place)
    }
}
