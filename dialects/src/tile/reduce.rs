//! Reductions across program instances of partial accumulators computed
//! over different ranges of one output tile's K: split-K's
//! `tile.sum_splits`, and stream-K's hand-over through a workspace,
//! `tile.park_partial` and `tile.add_parked`.

use super::{AddParked, ParkPartial, SumSplits};
use crate::ir::{Body, ElemType, Op};

/// The most program instances one sum can span: a cluster's portable size,
/// which is how the lowering reduces them.
pub const MAX_SPLITS: i64 = 8;

/// Slots of stream-K's workspace, one per CTA of a persistent grid: enough
/// for every Hopper GPU's SMs (132 on the H100 and H200); a wider grid runs
/// every tile whole (`tile-stream-k`).
pub const PARK_SLOTS: i64 = 144;

/// An f32 tile summed over 2 to [`MAX_SPLITS`] instances.
pub(super) fn verify_sum_splits(body: &Body, op: Op) -> Result<(), String> {
    let sum = SumSplits::of(body, op).ok_or("malformed 'tile.sum_splits'")?;
    let tile = body.value_type(sum.value(body)).as_tile().ok_or("the summed value must be a tile")?;
    if tile.elem != ElemType::F32 {
        return Err(format!("sums f32 accumulators, found '{}'", tile.elem.mnemonic()));
    }
    let splits = sum.splits(body);
    if !(2..=MAX_SPLITS).contains(&splits) {
        return Err(format!("'splits' must be from 2 to {MAX_SPLITS}, found {splits}"));
    }
    Ok(())
}

/// Whether the tile stream-K hands over (a tile, as the op's definition
/// checks) holds f32 accumulators.
fn f32_tile(body: &Body, value: crate::ir::Value) -> Result<(), String> {
    match body.value_type(value).as_tile() {
        Some(tile) if tile.elem != ElemType::F32 => Err(format!("hands over f32 accumulators, found '{}'", tile.elem.mnemonic())),
        _ => Ok(()),
    }
}

/// An f32 tile parked in a slot.
pub(super) fn verify_park_partial(body: &Body, op: Op) -> Result<(), String> {
    let park = ParkPartial::of(body, op).ok_or("malformed 'tile.park_partial'")?;
    f32_tile(body, park.value(body))
}

/// An f32 tile added to the one parked in a slot.
pub(super) fn verify_add_parked(body: &Body, op: Op) -> Result<(), String> {
    let add = AddParked::of(body, op).ok_or("malformed 'tile.add_parked'")?;
    f32_tile(body, add.value(body))
}
