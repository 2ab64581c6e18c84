//! Pieces shared by the passes that stage tiles through shared memory with
//! TMA (`tile-lower-to-nv`, `tile-pipeline`): recognising staged loads,
//! allocating buffers and barriers, and issuing one stage's loads.

use std::collections::HashMap;
use tilec_dialects::ir::{Attribute, Attributes, Body, Builder, ElemType, Op, SmemType, Type, Value};
use tilec_dialects::Layout;

/// Shared memory one CTA may use on sm_90 (227 KiB).
pub const SMEM_BUDGET_BYTES: i64 = 232_448;

/// A `tile.load` whose result the layout pass put in shared memory.
pub fn is_staged_load(body: &Body, op: Op) -> bool {
    body.ops[op].def.name == "tile.load"
        && matches!(body.value_type(body.result(op, 0)).as_tile().and_then(|t| t.layout.as_ref()), Some(Layout::NvmmaShared { .. }))
}

/// How a dot reads A: `staged` is the loaded tile (what the buffers are
/// keyed by), and `to_registers` the `tile.convert_layout` of it to a
/// dot-operand layout when the dot takes A in registers.
pub struct DotA {
    pub staged: Value,
    pub to_registers: Option<Op>,
}

pub fn dot_a(body: &Body, dot: Op) -> DotA {
    let a = body.ops[dot].operands[0];
    match body.defining_op(a) {
        Some(c) if body.ops[c].def.name == "tile.convert_layout" => DotA { staged: body.ops[c].operands[0], to_registers: Some(c) },
        _ => DotA { staged: a, to_registers: None },
    }
}

/// The wgmma groups a loop may leave in flight past `dot`, at most `wanted`.
/// With A in registers none may: the next iteration's ldmatrix rewrites
/// registers an in-flight wgmma still reads (undefined in PTX; on the GPU a
/// 1.4e-2 error in a warp-specialised kernel, and ptxas C7514 in a
/// pipelined one).
pub fn groups_in_flight(body: &Body, dot: Op, wanted: i64) -> i64 {
    if dot_a(body, dot).to_registers.is_some() {
        0
    } else {
        wanted
    }
}

/// Element coordinates of a tile access: tile coordinates times the tile's
/// extent in each dimension.
pub fn element_coords(b: &mut Builder<'_>, tile_coords: &[Value], shape: &[i64]) -> Vec<Value> {
    tile_coords
        .iter()
        .zip(shape)
        .map(|(&c, &extent)| {
            let e = b.index(extent);
            b.index_op("tile.muli", c, e)
        })
        .collect()
}

/// The op in the function's entry block that contains `op` (or `op` itself).
pub fn outermost_ancestor(body: &Body, mut op: Op) -> Op {
    loop {
        let block = body.ops[op].parent.expect("attached");
        let region = body.blocks[block].parent.expect("blocks are in regions");
        match body.regions[region].parent {
            Some(parent) => op = parent,
            None => return op,
        }
    }
}

/// Buffers of `stages` stages for the tiles `loads` produce, and the bytes
/// one stage of all of them takes (what a barrier's `expect_tx` waits for).
pub struct StagedBuffers {
    /// Load result -> its buffer.
    pub buffer_of: HashMap<Value, Value>,
    pub stage_bytes: i64,
    pub full: Value,
}

impl StagedBuffers {
    pub fn allocate(b: &mut Builder<'_>, loads: &[Op], stages: i64) -> StagedBuffers {
        let mut buffer_of = HashMap::new();
        let mut stage_bytes = 0;
        for &load in loads {
            let result = b.body.result(load, 0);
            let tile = b.body.value_type(result).as_tile().cloned().expect("staged loads are tiles");
            let smem = SmemType { stages, tile };
            stage_bytes += smem.stage_bytes();
            let buf = b.value("nv.alloc_smem", vec![], Type::Smem(smem), Attributes::new());
            let hint = b.body.values[result].name_hint.clone().unwrap_or_else(|| "tile".into());
            b.name(buf, &format!("{hint}_smem"));
            buffer_of.insert(result, buf);
        }
        let mut attrs = Attributes::new();
        attrs.set("arrivals", Attribute::Int(1, ElemType::I64));
        let full = b.value("nv.alloc_mbarriers", vec![], Type::MBarrier(stages), attrs);
        b.name(full, "full");
        StagedBuffers { buffer_of, stage_bytes, full }
    }

    /// The same buffers, looked up by the results of `clones` (copies of
    /// `loads` in another region).
    pub fn rekeyed(&self, body: &Body, loads: &[Op], clones: &[Op]) -> StagedBuffers {
        let buffer_of = loads
            .iter()
            .zip(clones)
            .map(|(&l, &c)| (body.result(c, 0), self.buffer_of[&body.result(l, 0)]))
            .collect();
        StagedBuffers { buffer_of, stage_bytes: self.stage_bytes, full: self.full }
    }

    /// Arms `stage`'s barrier with one stage's bytes and issues the TMA loads
    /// of `loads`, whose tile coordinates are `coords[i]`.
    pub fn issue(&self, b: &mut Builder<'_>, loads: &[Op], coords: &[Vec<Value>], stage: Value, extra: &Attributes) {
        let mut attrs = extra.clone();
        attrs.set("bytes", Attribute::Int(self.stage_bytes, ElemType::I64));
        b.op("nv.mbarrier_expect_tx", vec![self.full, stage], &[], attrs);
        for (&load, tile_coords) in loads.iter().zip(coords) {
            let tensor = b.body.ops[load].operands[0];
            let result = b.body.result(load, 0);
            let shape = b.body.value_type(result).as_tile().expect("tile").shape.clone();
            let mut operands = vec![tensor];
            operands.extend(element_coords(b, tile_coords, &shape));
            operands.extend([self.buffer_of[&result], stage, self.full, stage]);
            b.op("nv.tma_load", operands, &[], extra.clone());
        }
    }
}

/// The `tile.for` directly enclosing `op`, if any.
pub fn enclosing_loop(body: &Body, op: Op) -> Option<Op> {
    let block = body.ops[op].parent?;
    let parent = body.regions[body.blocks[block].parent?].parent?;
    (body.ops[parent].def.name == "tile.for").then_some(parent)
}

/// The number of iterations of `for_op` before the current one:
/// (iv - lb) / step.
pub fn loop_iteration(b: &mut Builder<'_>, for_op: Op) -> Value {
    let block = b.body.entry_block(b.body.ops[for_op].regions[0]);
    let iv = b.body.blocks[block].args[0];
    let (lb, step) = (b.body.ops[for_op].operands[0], b.body.ops[for_op].operands[2]);
    let offset = b.index_op("tile.subi", iv, lb);
    b.index_op("tile.divsi", offset, step)
}

/// The stage of local iteration `i`: (base + i) mod N.
pub fn stage_of(b: &mut Builder<'_>, base: Option<Value>, i: Value, n: Value) -> Value {
    let global = match base {
        Some(base) => b.index_op("tile.addi", base, i),
        None => i,
    };
    b.index_op("tile.remsi", global, n)
}

pub fn next_op(body: &Body, op: Op) -> Op {
    let block = body.ops[op].parent.expect("attached");
    let ops = &body.blocks[block].ops;
    ops[ops.iter().position(|&o| o == op).expect("in its block") + 1]
}

