//! The epilogue's second form: registers -> shared memory -> TMA store.
//! `nv.store_shared` writes a register tile into a buffer stage (swizzled as
//! TMA reads it), `nv.fence_async_shared` orders those generic-proxy writes
//! before async-proxy (TMA) reads, `nv.tma_store` (elected) copies the stage
//! to global memory without waiting, and `nv.tma_store_wait` waits until the
//! thread's stores have read their stages: placed just before a stage is
//! written again, the store of one tile overlaps the next tile's main loop.

use super::{StoreShared, TmaStore};
use crate::ir::{Body, Layout, Op};

/// Every thread writes the elements its register layout gives it into the
/// stage, at the (swizzled) addresses a TMA box of the buffer's layout reads.
pub(super) fn verify_store_shared(body: &Body, op: Op) -> Result<(), String> {
    let store = StoreShared::of(body, op).ok_or("malformed 'nv.store_shared'")?;
    let tile = body.value_type(store.value(body)).as_tile().ok_or("the stored value must be a tile")?;
    let smem = body.value_type(store.buffer(body)).as_smem().ok_or("the destination must be a '!nv.smem' buffer")?;
    if !matches!(tile.layout, Some(Layout::Mma { .. })) {
        return Err("the stored tile needs a '#tile.mma' register layout".into());
    }
    if tile.elem != smem.tile.elem {
        return Err("the tile must have the buffer stage's element type".into());
    }
    let Some(offset) = store.column_offset(body) else {
        return if tile.shape == smem.tile.shape { Ok(()) } else { Err("the tile must have the buffer stage's shape (or a 'column_offset' to store one chunk of its columns)".into()) };
    };
    let (&[rows, cols], &[stage_rows, stage_cols]) = (&tile.shape[..], &smem.tile.shape[..]) else {
        return Err("'column_offset' stores a chunk of a rank-2 tile into a rank-2 stage".into());
    };
    if rows != stage_rows || stage_cols > cols || cols % stage_cols != 0 {
        return Err(format!("'column_offset' needs a stage of the tile's {rows} rows whose columns divide its {cols} (the stage is {stage_rows}x{stage_cols})"));
    }
    // Each thread's fragment holds groups of 8 adjacent columns.
    if stage_cols % FRAGMENT_COLUMNS != 0 || offset < 0 || offset % stage_cols != 0 || offset >= cols {
        return Err(format!("'column_offset' {offset} must be a multiple of the stage's {stage_cols} columns (themselves a multiple of {FRAGMENT_COLUMNS}) below the tile's {cols}"));
    }
    Ok(())
}

/// The columns a thread's MMA fragment holds side by side: a chunk of a
/// chunked store starts and ends on such a group.
const FRAGMENT_COLUMNS: i64 = 8;

/// The stage goes to the tensor at element coordinates, clipping what lies
/// outside it.
pub(super) fn verify_tma_store(body: &Body, op: Op) -> Result<(), String> {
    let store = TmaStore::of(body, op).ok_or("malformed 'nv.tma_store'")?;
    let smem = body.value_type(store.buffer(body)).as_smem().ok_or("the source must be a '!nv.smem' buffer")?;
    let tensor = body.value_type(store.tensor(body)).as_ref_type().ok_or("the destination must be a global tensor reference")?;
    if store.coords(body).len() != tensor.shape.len() {
        return Err("expects one element coordinate per tensor dimension".into());
    }
    // A stage of lower rank is a box of extent 1 in the leading dimensions.
    if smem.tile.shape.len() > tensor.shape.len() {
        return Err("the buffer's tile has a higher rank than the tensor".into());
    }
    if smem.tile.elem != tensor.elem {
        return Err("buffer and tensor element types differ".into());
    }
    if smem.tile.shape.iter().any(|&d| d > 256) {
        return Err("a TMA box dimension is at most 256 elements".into());
    }
    Ok(())
}
