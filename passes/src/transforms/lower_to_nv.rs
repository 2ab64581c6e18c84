//! `tile-lower-to-nv`: makes whatever is still implicit explicit in the nv
//! dialect, in the simplest Hopper form (seed 002's steps 1-4): one
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
//! output buffer, a proxy fence, a CTA barrier and an elected TMA store.

use crate::options::{OptionKind, OptionSpec};
use crate::registry::PassInfo;
use crate::Pass;
use super::tma_staging::{dot_a, element_coords, is_staged_load, op_error, outermost_ancestor, StagedBuffers};
use tilec_dialects::ir::{Attribute, Attributes, Block, Body, Builder, ElemType, EntityRef, InsertPoint, Op, SmemType, TileType, Type, Value};
use tilec_dialects::{Diagnostic, Function, Layout};

pub const INFO: PassInfo = PassInfo {
    name: "tile-lower-to-nv",
    summary: "Lower tile loads, dots and stores to TMA, mbarriers, wgmma and global stores (one stage)",
    options: &[OptionSpec {
        name: "epilogue",
        kind: OptionKind::Enum(&["global", "tma"]),
        default: "global",
        help: "store output tiles directly (global) or through a swizzled shared buffer and a TMA store (tma)",
    }],
    create: |options| Box::new(LowerToNv { tma_epilogue: options.word("epilogue") == "tma", from_config: !options.given("epilogue") }),
};

pub struct LowerToNv {
    /// Store register tiles through shared memory and TMA.
    tma_epilogue: bool,
    /// Take the epilogue from the function's `tile.config` (none given).
    from_config: bool,
}

impl LowerToNv {
    /// The epilogue config selection chose, where the pipeline gave none.
    fn apply_config(&mut self, func: &Function) {
        if let Some(epilogue) = super::select_config::config_word(func, "epilogue").filter(|_| self.from_config) {
            self.tma_epilogue = epilogue == "tma";
        }
    }
}

impl Pass for LowerToNv {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn run(&mut self, func: &mut Function) -> Result<(), Diagnostic> {
        self.apply_config(func);
        let body = &mut func.body;
        let ops = body.walk_region(func.region);
        if let Some(&op) = ops.iter().find(|&&o| body.ops[o].def.name == "tile.dot_scaled") {
            return Err(op_error(body, op, "is not lowered yet: block-scaled FP8 needs its own lowering".into()));
        }
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
        for op in body.walk_region(func.region) {
            match body.ops[op].def.name {
                "tile.store" if self.tma_epilogue => lower_store_tma(body, op)?,
                "tile.store" => lower_store(body, op)?,
                "tile.load" => return Err(op_error(body, op, "loads a tile with no shared layout; run tile-assign-layouts first, and load only dot operands".into())),
                "tile.dot" => return Err(op_error(body, op, "reads tiles that were not loaded by TMA in the same block".into())),
                _ => {}
            }
        }
        Ok(())
    }
}

/// The phase parity a barrier used once per iteration of the loop owning
/// `block` waits for: the iteration number modulo 2 (0 outside loops).
fn phase_of_block(b: &mut Builder<'_>, block: Block) -> Value {
    let owner = b.body.blocks[block].parent.and_then(|r| b.body.regions[r].parent);
    match owner.filter(|&o| b.body.ops[o].def.name == "tile.for") {
        Some(for_op) => {
            let iv = b.body.blocks[block].args[0];
            let (lb, step) = (b.body.ops[for_op].operands[0], b.body.ops[for_op].operands[2]);
            let offset = b.index_op("tile.subi", iv, lb);
            let iteration = b.index_op("tile.divsi", offset, step);
            let two = b.index(2);
            let phase = b.index_op("tile.remsi", iteration, two);
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
    let staged = StagedBuffers::allocate(&mut b, &loads, 1);

    let mut b = Builder::new(body, InsertPoint::Before(first), loc);
    let coords: Vec<Vec<Value>> = loads.iter().map(|&l| b.body.ops[l].operands[1..].to_vec()).collect();
    staged.issue(&mut b, &loads, &coords, c0, &Attributes::new());
    let phase = phase_of_block(&mut b, block);
    b.op("nv.mbarrier_wait", vec![staged.full, c0, phase], &[], Attributes::new());

    let dots: Vec<Op> = body.blocks[block].ops.iter().copied().filter(|&o| body.ops[o].def.name == "tile.dot").collect();
    for dot in dots {
        let a_tile = dot_a(body, dot).staged;
        let (Some(&a), Some(&bb)) = (staged.buffer_of.get(&a_tile), staged.buffer_of.get(&body.ops[dot].operands[1])) else { continue };
        let mut b = Builder::new(body, InsertPoint::Before(dot), body.ops[dot].loc.clone());
        let done = emit_wgmma(&mut b, dot, [a, c0], [bb, c0], 0);
        b.op("nv.barrier", vec![], &[], Attributes::new());
        replace_dot(body, region, dot, done);
    }
    remove_staged_loads(body, region, &loads)
}

/// Emits, before `dot`, the fence, `nv.wgmma`, commit and a wait leaving
/// `pending` groups in flight; returns the waited accumulator. `a` and `bb`
/// are the buffer (or row window) and stage A and B are read from. When the
/// dot reads A in registers (through a `tile.convert_layout` of the staged
/// tile), an `nv.load_fragment` reads the stage into registers first: after
/// whatever made the stage valid, before the fence that orders register
/// writes before the wgmma.
pub fn emit_wgmma(b: &mut Builder<'_>, dot: Op, a: [Value; 2], bb: [Value; 2], pending: i64) -> Value {
    let acc = b.body.ops[dot].operands[2];
    let acc_ty = b.body.value_type(acc).clone();
    let attrs = b.body.ops[dot].attrs.clone();
    let mut wgmma_operands = match dot_a(b.body, dot).to_registers {
        Some(convert) => {
            let converted = b.body.result(convert, 0);
            let ty = b.body.value_type(converted).clone();
            let regs = b.value("nv.load_fragment", a.to_vec(), ty, Attributes::new());
            let hint = b.body.values[converted].name_hint.clone().unwrap_or_else(|| "a".into());
            vec![b.name(regs, &format!("{hint}_regs"))]
        }
        None => a.to_vec(),
    };
    b.op("nv.wgmma_fence", vec![], &[], Attributes::new());
    wgmma_operands.extend(bb);
    wgmma_operands.push(acc);
    let d = b.value("nv.wgmma", wgmma_operands, acc_ty.clone(), attrs);
    b.op("nv.wgmma_commit", vec![], &[], Attributes::new());
    let mut wait_attrs = Attributes::new();
    wait_attrs.set("pending", Attribute::Int(pending, ElemType::I64));
    b.value("nv.wgmma_wait", vec![d], acc_ty, wait_attrs)
}

/// Replaces `dot`'s result by `done` (under the dot's name) and removes the
/// dot, and the conversion of A to registers it read.
pub fn replace_dot(body: &mut Body, region: tilec_dialects::Region, dot: Op, done: Value) {
    let result = body.result(dot, 0);
    let to_registers = dot_a(body, dot).to_registers;
    body.values[done].name_hint = body.values[result].name_hint.clone();
    body.replace_all_uses(region, result, done);
    body.remove_op(dot);
    if let Some(convert) = to_registers {
        body.remove_op(convert);
    }
}

/// Removes loads whose tiles now come from buffers; a tile still used by
/// another op cannot be staged.
pub fn remove_staged_loads(body: &mut Body, region: tilec_dialects::Region, loads: &[Op]) -> Result<(), Diagnostic> {
    let uses = body.use_counts(region);
    for &load in loads {
        if uses[body.result(load, 0).index()] > 0 {
            return Err(op_error(body, load, "loads a staged tile that is used by an op other than tile.dot".into()));
        }
        body.remove_op(load);
    }
    Ok(())
}

fn lower_store(body: &mut Body, store: Op) -> Result<(), Diagnostic> {
    let operands = body.ops[store].operands.clone();
    let tile = body.value_type(operands[0]).as_tile().cloned().expect("verified");
    if tile.layout.as_ref().is_none_or(Layout::is_shared) {
        return Err(op_error(body, store, "stores a tile with no register layout; run tile-assign-layouts first".into()));
    }
    let mut b = Builder::new(body, InsertPoint::Before(store), body.ops[store].loc.clone());
    let mut new_operands = vec![operands[0], operands[1]];
    new_operands.extend(element_coords(&mut b, &operands[2..], &tile.shape));
    b.op("nv.store_global", new_operands, &[], Attributes::new());
    body.remove_op(store);
    Ok(())
}

/// `epilogue=tma`: an output buffer of one stage (swizzled by the layout
/// rules for the tile's row bytes) allocated before the outermost op around
/// the store, then `nv.store_shared`, `nv.fence_async_shared`, `nv.barrier`
/// and `nv.tma_store`. Inside a loop (a persistent kernel) a CTA barrier
/// first keeps threads from overwriting the buffer before the previous
/// tile's TMA store has read it (thread 0 waits for that before arriving).
fn lower_store_tma(body: &mut Body, store: Op) -> Result<(), Diagnostic> {
    let operands = body.ops[store].operands.clone();
    let tile = body.value_type(operands[0]).as_tile().cloned().expect("verified");
    if !matches!(tile.layout, Some(Layout::Mma { .. })) {
        return Err(op_error(body, store, "stores a tile with no '#tile.mma' layout; epilogue=tma stores MMA register tiles (run tile-assign-layouts first)".into()));
    }
    let mut in_loop = false;
    let mut parent = body.ops[store].parent.and_then(|b| body.blocks[b].parent).and_then(|r| body.regions[r].parent);
    while let Some(p) = parent {
        match body.ops[p].def.name {
            "nv.warp_specialize" => {
                return Err(op_error(body, store, "epilogue=tma is not supported inside nv.warp_specialize (use epilogue=global)".into()))
            }
            "tile.for" => in_loop = true,
            _ => {}
        }
        parent = body.ops[p].parent.and_then(|b| body.blocks[b].parent).and_then(|r| body.regions[r].parent);
    }
    let [rows, cols] = tile.shape[..] else {
        return Err(op_error(body, store, "epilogue=tma stores rank-2 tiles only".into()));
    };
    if rows > 256 {
        return Err(op_error(body, store, format!("epilogue=tma: {rows} rows exceed a TMA box (256)")));
    }
    let swizzle = crate::layout_rules::swizzle_bytes(cols, tile.elem.bits(), rows);
    let shared = TileType { shape: tile.shape.clone(), elem: tile.elem, layout: Some(Layout::NvmmaShared { swizzle_bytes: swizzle, transposed: false, padding_elems: 0 }) };
    let loc = body.ops[store].loc.clone();
    let anchor = outermost_ancestor(body, store);
    let mut b = Builder::new(body, InsertPoint::Before(anchor), loc.clone());
    let buf = b.value("nv.alloc_smem", vec![], Type::Smem(SmemType { stages: 1, tile: shared }), Attributes::new());
    let hint = b.body.values[operands[1]].name_hint.clone().unwrap_or_else(|| "out".into());
    let buf = b.name(buf, &format!("{}_smem", hint.to_lowercase()));
    let mut b = Builder::new(body, InsertPoint::Before(store), loc);
    let c0 = b.index(0);
    if in_loop {
        b.op("nv.barrier", vec![], &[], Attributes::new());
    }
    b.op("nv.store_shared", vec![operands[0], buf, c0], &[], Attributes::new());
    b.op("nv.fence_async_shared", vec![], &[], Attributes::new());
    b.op("nv.barrier", vec![], &[], Attributes::new());
    let mut tma_operands = vec![buf, c0, operands[1]];
    tma_operands.extend(element_coords(&mut b, &operands[2..], &tile.shape));
    b.op("nv.tma_store", tma_operands, &[], Attributes::new());
    body.remove_op(store);
    Ok(())
}
