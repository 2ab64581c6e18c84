//! TMA staging, for every pass that stages tiles through shared memory
//! (`tile-lower-to-nv`, `tile-pipeline`, `tile-warp-specialize`):
//! recognising staged loads, allocating buffers and barriers within the
//! shared-memory budget, issuing one stage's loads, and removing the loads
//! they replace.

use crate::op_error;
use std::collections::HashMap;
use tilec_dialects::ir::{Attributes, Body, Builder, EntityRef, Op, Region, SmemType, Type, Value};
use tilec_dialects::nv::{AllocMbarriers, AllocSmem, MbarrierExpectTx, TmaLoad};
use tilec_dialects::tile::{Load, Muli};
use tilec_dialects::{Diagnostic, Layout};

/// Shared memory one CTA may use on sm_90 (227 KiB).
pub const SMEM_BUDGET_BYTES: i64 = 232_448;

/// A `tile.load` whose result the layout pass put in shared memory.
pub fn is_staged_load(body: &Body, op: Op) -> bool {
    Load::of(body, op).is_some_and(|load| {
        matches!(body.value_type(load.result(body)).as_tile().and_then(|t| t.layout.as_ref()), Some(Layout::NvmmaShared { .. }))
    })
}

/// Element coordinates of a tile access: tile coordinates times the tile's
/// extent in each dimension. A tile of lower rank than its tensor has
/// extent 1 in the leading dimensions: their coordinates are elements.
pub fn element_coords(b: &mut Builder<'_>, tile_coords: &[Value], shape: &[i64]) -> Vec<Value> {
    let leading = tile_coords.len() - shape.len();
    let mut coords = tile_coords[..leading].to_vec();
    coords.extend(tile_coords[leading..].iter().zip(shape).map(|(&c, &extent)| {
        let e = b.index(extent);
        Muli::build(b, c, e, Attributes::new()).result(b.body)
    }));
    coords
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
    /// Bytes one stage of every buffer takes: what a stage's `expect_tx` waits for.
    pub stage_bytes: i64,
    /// The mbarriers signalling that a stage's loads have landed.
    pub full: Value,
}

impl StagedBuffers {
    /// Allocates, at the builder, a `stages`-stage buffer for each of `loads` and a full barrier per stage.
    pub fn allocate(b: &mut Builder<'_>, loads: &[Op], stages: i64) -> StagedBuffers {
        let mut buffer_of = HashMap::new();
        let mut stage_bytes = 0;
        for &load in loads {
            let result = b.body.result(load, 0);
            let tile = b.body.value_type(result).as_tile().cloned().expect("staged loads are tiles");
            let smem = SmemType { stages, tile };
            stage_bytes += smem.stage_bytes();
            let buf = AllocSmem::build(b, Type::Smem(smem), Attributes::new()).result(b.body);
            let hint = b.body.values[result].name_hint.clone().unwrap_or_else(|| "tile".into());
            b.name(buf, &format!("{hint}_smem"));
            buffer_of.insert(result, buf);
        }
        let full = AllocMbarriers::build(b, Type::MBarrier(stages), 1, Attributes::new()).result(b.body);
        b.name(full, "full");
        StagedBuffers { buffer_of, stage_bytes, full }
    }

    /// Errors at `at` when `stages` stages of these buffers, with
    /// `barriers` mbarriers of 8 bytes per stage, exceed the budget; the
    /// error says how many stages fit.
    pub fn check_budget(&self, body: &Body, at: Op, stages: i64, barriers: i64) -> Result<(), Diagnostic> {
        let per_stage = self.stage_bytes + 8 * barriers;
        let total = stages * per_stage;
        if total <= SMEM_BUDGET_BYTES {
            return Ok(());
        }
        let fit = SMEM_BUDGET_BYTES / per_stage;
        Err(op_error(
            body,
            at,
            format!("{stages} stages of {} bytes need {total} bytes of shared memory, over the {SMEM_BUDGET_BYTES}-byte budget of sm_90; at most {fit} stage(s) fit", self.stage_bytes),
        ))
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
    pub fn issue(&self, b: &mut Builder<'_>, loads: &[Op], coords: &[Vec<Value>], stage: Value) {
        MbarrierExpectTx::build(b, self.full, stage, self.stage_bytes, Attributes::new());
        for (&load, tile_coords) in loads.iter().zip(coords) {
            let load = Load::of(b.body, load).expect("staged loads are tile.load");
            let (tensor, result) = (load.tensor(b.body), load.result(b.body));
            let shape = b.body.value_type(result).as_tile().expect("tile").shape.clone();
            let element = element_coords(b, tile_coords, &shape);
            TmaLoad::build(b, tensor, &element, self.buffer_of[&result], stage, self.full, stage, Attributes::new());
        }
    }
}


/// Removes loads whose tiles now come from buffers; a tile still used by
/// another op cannot be staged.
pub fn remove_staged_loads(body: &mut Body, region: Region, loads: &[Op]) -> Result<(), Diagnostic> {
    let uses = body.use_counts(region);
    for &load in loads {
        if uses[body.result(load, 0).index()] > 0 {
            return Err(op_error(body, load, "loads a staged tile that is used by an op other than tile.dot".into()));
        }
        body.remove_op(load);
    }
    Ok(())
}
