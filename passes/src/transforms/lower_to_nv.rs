//! `tile-lower-to-nv`: makes whatever is still implicit explicit in the nv
//! dialect, in the simplest Hopper form (seed 002's steps 1-4): one
//! warpgroup, one pipeline stage.
//!
//! Tiles loaded with a shared layout become TMA loads into a one-stage
//! buffer that complete on an mbarrier; every thread waits on the barrier's
//! phase, which flips each loop iteration. A `tile.dot` on such tiles
//! becomes an asynchronous `nv.wgmma` that is waited for at once, followed by
//! a CTA barrier so the next iteration's TMA cannot overwrite tiles still
//! being read. Stores of register tiles become bounds-checked global stores.

use crate::registry::PassInfo;
use crate::Pass;
use std::collections::HashMap;
use tilec_dialects::ir::{Attribute, Attributes, Block, Body, Builder, ElemType, InsertPoint, Op, SmemType, Type, Value};
use tilec_dialects::{Diagnostic, Function, Layout};

pub const INFO: PassInfo = PassInfo {
    name: "tile-lower-to-nv",
    summary: "Lower tile loads, dots and stores to TMA, mbarriers, wgmma and global stores (one stage)",
    options: &[],
    create: |_| Box::new(LowerToNv),
};

pub struct LowerToNv;

impl Pass for LowerToNv {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn run(&mut self, func: &mut Function) -> Result<(), Diagnostic> {
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
                "tile.store" => lower_store(body, op)?,
                "tile.load" => return Err(op_error(body, op, "loads a tile with no shared layout; run tile-assign-layouts first, and load only dot operands".into())),
                "tile.dot" => return Err(op_error(body, op, "reads tiles that were not loaded by TMA in the same block".into())),
                _ => {}
            }
        }
        Ok(())
    }
}

fn op_error(body: &Body, op: Op, message: String) -> Diagnostic {
    Diagnostic::error(body.ops[op].loc.clone(), format!("'{}' op {message}", body.ops[op].def.name))
}

fn is_staged_load(body: &Body, op: Op) -> bool {
    body.ops[op].def.name == "tile.load"
        && matches!(body.value_type(body.result(op, 0)).as_tile().and_then(|t| t.layout.as_ref()), Some(Layout::NvmmaShared { .. }))
}

/// Element coordinates of a tile access: tile coordinates times the tile's
/// extent in each dimension.
fn element_coords(b: &mut Builder<'_>, tile_coords: &[Value], shape: &[i64]) -> Vec<Value> {
    tile_coords
        .iter()
        .zip(shape)
        .map(|(&c, &extent)| {
            let e = b.index(extent);
            b.index_op("tile.muli", c, e)
        })
        .collect()
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
    let mut buffers: HashMap<Value, Value> = HashMap::new();
    let mut bytes = 0;
    for &load in &loads {
        let result = b.body.result(load, 0);
        let tile = b.body.value_type(result).as_tile().cloned().expect("staged loads are tiles");
        let smem = SmemType { stages: 1, tile };
        bytes += smem.stage_bytes();
        let buf = b.value("nv.alloc_smem", vec![], Type::Smem(smem), Attributes::new());
        let hint = b.body.values[result].name_hint.clone().unwrap_or_else(|| "tile".into());
        b.name(buf, &format!("{hint}_smem"));
        buffers.insert(result, buf);
    }
    let mut attrs = Attributes::new();
    attrs.set("arrivals", Attribute::Int(1, ElemType::I64));
    let full = b.value("nv.alloc_mbarriers", vec![], Type::MBarrier(1), attrs);
    b.name(full, "full");

    let mut b = Builder::new(body, InsertPoint::Before(first), loc);
    let mut attrs = Attributes::new();
    attrs.set("bytes", Attribute::Int(bytes, ElemType::I64));
    b.op("nv.mbarrier_expect_tx", vec![full, c0], &[], attrs);
    for &load in &loads {
        let operands = b.body.ops[load].operands.clone();
        let shape = b.body.value_type(b.body.result(load, 0)).as_tile().expect("tile").shape.clone();
        b.loc = b.body.ops[load].loc.clone();
        let mut tma = vec![operands[0]];
        tma.extend(element_coords(&mut b, &operands[1..], &shape));
        tma.extend([buffers[&b.body.result(load, 0)], c0, full, c0]);
        b.op("nv.tma_load", tma, &[], Attributes::new());
    }
    let phase = phase_of_block(&mut b, block);
    b.op("nv.mbarrier_wait", vec![full, c0, phase], &[], Attributes::new());

    let dots: Vec<Op> = body.blocks[block].ops.iter().copied().filter(|&o| body.ops[o].def.name == "tile.dot").collect();
    for dot in dots {
        let operands = body.ops[dot].operands.clone();
        let (Some(&a), Some(&bb)) = (buffers.get(&operands[0]), buffers.get(&operands[1])) else { continue };
        let result = body.result(dot, 0);
        let acc_ty = body.value_type(result).clone();
        let attrs = body.ops[dot].attrs.clone();
        let mut b = Builder::new(body, InsertPoint::Before(dot), body.ops[dot].loc.clone());
        b.op("nv.wgmma_fence", vec![], &[], Attributes::new());
        let d = b.value("nv.wgmma", vec![a, c0, bb, c0, operands[2]], acc_ty.clone(), attrs);
        b.op("nv.wgmma_commit", vec![], &[], Attributes::new());
        let mut wait_attrs = Attributes::new();
        wait_attrs.set("pending", Attribute::Int(0, ElemType::I64));
        let done = b.value("nv.wgmma_wait", vec![d], acc_ty, wait_attrs);
        b.op("nv.barrier", vec![], &[], Attributes::new());
        if let Some(hint) = body.values[result].name_hint.clone() {
            body.values[done].name_hint = Some(hint);
        }
        body.replace_all_uses(region, result, done);
        body.remove_op(dot);
    }
    let uses = body.use_counts(region);
    for &load in &loads {
        let result = body.result(load, 0);
        if uses[tilec_dialects::ir::EntityRef::index(result)] > 0 {
            return Err(op_error(body, load, "loads a staged tile that is used by an op other than tile.dot".into()));
        }
        body.remove_op(load);
    }
    Ok(())
}

/// The op in the function's entry block that contains `op` (or `op` itself).
fn outermost_ancestor(body: &Body, mut op: Op) -> Op {
    loop {
        let block = body.ops[op].parent.expect("attached");
        let region = body.blocks[block].parent.expect("blocks are in regions");
        match body.regions[region].parent {
            Some(parent) => op = parent,
            None => return op,
        }
    }
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
