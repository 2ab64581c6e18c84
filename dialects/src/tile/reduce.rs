//! Reductions across program instances of partial accumulators computed
//! over different ranges of one output tile's K: split-K's
//! `tile.sum_splits` through a cluster's shared memory and
//! `tile.reduce_splits` through a global workspace, and stream-K's
//! hand-over through a workspace, `tile.park_partial` and
//! `tile.add_parked`.

use super::{AddParked, ParkPartial, ReduceSplits, SumSplits};
use crate::ir::{Body, ElemType, Op};

/// The most program instances one sum can span: a cluster's portable size,
/// which is how the lowering reduces them.
pub const MAX_SPLITS: i64 = 8;

/// The most program instances `tile.reduce_splits` adds up: each parks a
/// whole f32 tile in the workspace, and the last reads them all back, so
/// more would cost more than the K loop they share.
pub const MAX_WORKSPACE_SPLITS: i64 = 64;

/// The most f32 values a thread of `tile.reduce_splits`' last split reads
/// from the workspace at once: it reads its splits' slots in groups, as
/// many as keep this many values in flight, and adds a group once it has
/// arrived, so the reduction waits for L2 once a group, not once a slot.
pub const MAX_VALUES_IN_FLIGHT: i64 = 64;

/// The slots of `splits` that `tile.reduce_splits` reads at once, with
/// `values` f32 values a thread a slot: the largest divisor of `splits`
/// whose slots hold at most [`MAX_VALUES_IN_FLIGHT`], and at least one.
pub fn slots_in_flight(values: i64, splits: i64) -> i64 {
    (1..=splits).rev().find(|&g| splits % g == 0 && g * values <= MAX_VALUES_IN_FLIGHT).unwrap_or(1)
}

/// The most CTAs of a persistent grid `tile-stream-k` numbers workspace
/// slots for (the runtime allocates a slot for each CTA the grid has):
/// more than every Hopper GPU's SMs (132 on the H100 and H200); a wider
/// grid runs every tile whole.
pub const PARK_SLOTS: i64 = 144;

/// An f32 tile `value` summed over 2 to `most` program instances.
fn verify_split_sum(body: &Body, value: crate::ir::Value, splits: i64, most: i64) -> Result<(), String> {
    let tile = body.value_type(value).as_tile().ok_or("the summed value must be a tile")?;
    if tile.elem != ElemType::F32 {
        return Err(format!("sums f32 accumulators, found '{}'", tile.elem.mnemonic()));
    }
    if !(2..=most).contains(&splits) {
        return Err(format!("'splits' must be from 2 to {most}, found {splits}"));
    }
    Ok(())
}

/// An f32 tile summed over 2 to [`MAX_SPLITS`] instances.
pub(super) fn verify_sum_splits(body: &Body, op: Op) -> Result<(), String> {
    let sum = SumSplits::of(body, op).ok_or("malformed 'tile.sum_splits'")?;
    verify_split_sum(body, sum.value(body), sum.splits(body), MAX_SPLITS)
}

/// An f32 tile summed over 2 to [`MAX_WORKSPACE_SPLITS`] instances.
pub(super) fn verify_reduce_splits(body: &Body, op: Op) -> Result<(), String> {
    let reduce = ReduceSplits::of(body, op).ok_or("malformed 'tile.reduce_splits'")?;
    verify_split_sum(body, reduce.value(body), reduce.splits(body), MAX_WORKSPACE_SPLITS)
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

#[cfg(test)]
mod tests {
    use super::slots_in_flight;

    #[test]
    fn slots_in_flight_divide_the_splits_within_the_budget() {
        assert_eq!(slots_in_flight(128, 8), 1);
        assert_eq!(slots_in_flight(16, 8), 4);
        assert_eq!(slots_in_flight(16, 6), 3);
        assert_eq!(slots_in_flight(8, 7), 7);
        assert_eq!(slots_in_flight(8, 64), 8);
        assert_eq!(slots_in_flight(32, 3), 1);
    }
}
