//! `nv.cluster_sum`: split-K's reduction in distributed shared memory. The
//! CTAs of one cluster computed one output tile over different ranges of
//! K; each parks its accumulator in a buffer of its own shared memory, and
//! rank 0 reads the others' buffers through the cluster's shared-memory
//! window and adds them in rank order, so the sum is the same on every run.

use super::ClusterSum;
use crate::ir::{Body, ElemType, Layout, Op};

/// An f32 MMA register tile and a one-stage f32 buffer of its shape.
pub(super) fn verify_cluster_sum(body: &Body, op: Op) -> Result<(), String> {
    let sum = ClusterSum::of(body, op).ok_or("malformed 'nv.cluster_sum'")?;
    let tile = body.value_type(sum.value(body)).as_tile().ok_or("the summed value must be a tile")?;
    let smem = body.value_type(sum.buffer(body)).as_smem().ok_or("the buffer must be a '!nv.smem' buffer")?;
    if !matches!(tile.layout, Some(Layout::Mma { .. })) || tile.elem != ElemType::F32 {
        return Err("sums f32 tiles with a '#tile.mma' register layout".into());
    }
    if smem.stages != 1 || smem.tile.shape != tile.shape || smem.tile.elem != ElemType::F32 {
        return Err("the buffer must be one f32 stage of the tile's shape".into());
    }
    Ok(())
}
