//! Split-K's reduction across program instances: `tile.sum_splits` adds the
//! partial accumulators of the instances that computed one output tile over
//! different ranges of K.

use super::SumSplits;
use crate::ir::{Body, ElemType, Op};

/// The most program instances one sum can span: a cluster's portable size,
/// which is how the lowering reduces them.
pub const MAX_SPLITS: i64 = 8;

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
