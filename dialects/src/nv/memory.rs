//! Shared-memory buffers, mbarriers, TMA loads, CTA barriers and global
//! stores: the checks their definitions (ops.ods) cannot state.

use super::{AllocMbarriers, AllocSmem, CopyAsync, LoadGlobal, LoadShared, MbarrierExpectTx, RunOffset, StoreGlobal, TmaLoad, TmaPrefetch};
use crate::ir::{Body, Layout, Op, RefType, TileType, Value};

pub(super) fn verify_alloc_smem(body: &Body, op: Op) -> Result<(), String> {
    let alloc = AllocSmem::of(body, op).ok_or("malformed 'nv.alloc_smem'")?;
    let smem = body.value_type(alloc.result(body)).as_smem().ok_or("the result must be a '!nv.smem' buffer")?;
    if smem.stages <= 0 {
        return Err("a buffer needs at least one stage".into());
    }
    if !matches!(smem.tile.layout, Some(Layout::NvmmaShared { .. })) {
        return Err("a shared buffer needs a '#tile.nvmma_shared' layout".into());
    }
    Ok(())
}

/// Each phase completes after `arrivals` arrivals (plus the expected
/// transaction bytes).
pub(super) fn verify_alloc_mbarriers(body: &Body, op: Op) -> Result<(), String> {
    match AllocMbarriers::of(body, op).map(|a| a.arrivals(body)) {
        Some(n) if n > 0 => Ok(()),
        _ => Err("requires a positive 'arrivals' attribute".into()),
    }
}

pub(super) fn verify_expect_tx(body: &Body, op: Op) -> Result<(), String> {
    match MbarrierExpectTx::of(body, op).map(|e| e.bytes(body)) {
        Some(b) if b > 0 && b < (1 << 20) => Ok(()),
        _ => Err("expects a positive transaction byte count under 2^20".into()),
    }
}

/// The operands of a copy from a tensor into a buffer stage (`nv.tma_load`,
/// `nv.copy_async`): a global tensor with `coords` coordinates, one per
/// dimension, and a buffer of its element type. Returns both types.
fn check_copy_operands(body: &Body, tensor: Value, coords: usize, buffer: Value) -> Result<(&RefType, &TileType), String> {
    let tensor = body.value_type(tensor).as_ref_type().ok_or("the source must be a global tensor reference")?;
    if coords != tensor.shape.len() {
        return Err("expects a tensor, one coordinate per dimension, a buffer, a stage, a barrier and a stage".into());
    }
    let buf = &body.value_type(buffer).as_smem().ok_or("the destination must be a '!nv.smem' buffer")?.tile;
    if buf.elem != tensor.elem {
        return Err("buffer and tensor element types differ".into());
    }
    Ok((tensor, buf))
}

/// One coordinate per tensor dimension, and a box TMA can copy.
pub(super) fn verify_tma_load(body: &Body, op: Op) -> Result<(), String> {
    let load = TmaLoad::of(body, op).ok_or("malformed 'nv.tma_load'")?;
    let (tensor, buf) = check_copy_operands(body, load.tensor(body), load.coords(body).len(), load.buffer(body))?;
    if buf.shape.len() > tensor.shape.len() {
        return Err("the buffer's tile has a higher rank than the tensor".into());
    }
    if buf.shape.iter().any(|&d| d > MAX_TMA_BOX) {
        return Err(format!("a TMA box dimension is at most {MAX_TMA_BOX} elements"));
    }
    if load.fit_rows(body) && buf.shape.len() < 2 {
        return Err("'fit_rows' fits a box's rows; a flat box of one run has none".into());
    }
    Ok(())
}

/// One coordinate per tensor dimension and a buffer of rows whose box TMA
/// can copy: what `nv.tma_load` accepts, less the flat boxes of one run.
pub(super) fn verify_tma_prefetch(body: &Body, op: Op) -> Result<(), String> {
    let prefetch = TmaPrefetch::of(body, op).ok_or("malformed 'nv.tma_prefetch'")?;
    let (rank, coords) = (body.value_type(prefetch.tensor(body)).as_ref_type().map_or(0, |t| t.shape.len()), prefetch.coords(body).len());
    if coords != rank {
        return Err(format!("expects one coordinate per dimension of the tensor ({rank}), found {coords}"));
    }
    let (tensor, buf) = check_copy_operands(body, prefetch.tensor(body), prefetch.coords(body).len(), prefetch.buffer(body))?;
    if !is_row_box(buf) || buf.shape.len() > tensor.shape.len() {
        return Err(format!("prefetches a box of rows of {MIN_TMA_ROW_BYTES} bytes or more: the buffer's tile has rank 2 or more, no higher than the tensor's"));
    }
    if buf.shape.iter().any(|&d| d > MAX_TMA_BOX) {
        return Err(format!("a TMA box dimension is at most {MAX_TMA_BOX} elements"));
    }
    Ok(())
}

/// Whether TMA copies `tile` as a box of rows (rank 2 or more, rows of
/// [`MIN_TMA_ROW_BYTES`] or more), not as one flat run.
pub fn is_row_box(tile: &TileType) -> bool {
    tile.shape.len() >= 2 && tile.shape.last().is_some_and(|&cols| cols * i64::from(tile.elem.bits()) / 8 >= MIN_TMA_ROW_BYTES)
}

/// The TMA loads `expect_tx` arms: those of its block that complete on the
/// same barrier and stage (the pairing the barrier verifier checks the
/// bytes of). Their `fit_rows` ones copy fewer bytes than `expect_tx`'s
/// count, which is the full boxes'.
pub fn armed_loads(body: &Body, expect_tx: Op) -> Vec<Op> {
    let Some(expect) = MbarrierExpectTx::of(body, expect_tx) else { return Vec::new() };
    let (barrier, stage) = (expect.barrier(body), expect.stage(body));
    let Some(block) = body.ops[expect_tx].parent else { return Vec::new() };
    body.blocks[block]
        .ops
        .iter()
        .copied()
        .filter(|&op| TmaLoad::of(body, op).is_some_and(|l| l.barrier(body) == barrier && l.barrier_stage(body) == stage))
        .collect()
}

/// One coordinate per tensor dimension, and a tile [`copy_async_fault`]
/// accepts in an unswizzled buffer: the copying warp ([`COPYING_WARP`])
/// copies it four bytes at a time, densely.
pub(super) fn verify_copy_async(body: &Body, op: Op) -> Result<(), String> {
    let copy = CopyAsync::of(body, op).ok_or("malformed 'nv.copy_async'")?;
    let (tensor, buf) = check_copy_operands(body, copy.tensor(body), copy.coords(body).len(), copy.buffer(body))?;
    if buf.shape.len() > tensor.shape.len() {
        return Err("the buffer's tile has a higher rank than the tensor".into());
    }
    if let Some(fault) = copy_async_fault(buf) {
        return Err(fault);
    }
    if !matches!(buf.layout, Some(Layout::NvmmaShared { swizzle_bytes: 0, padding_elems: 0, .. })) {
        return Err("copies into an unswizzled, unpadded buffer (stored densely)".into());
    }
    if let Some(stages) = copy.stages(body) {
        if stages < 1 {
            return Err(format!("copies at least one stage, not {stages}"));
        }
        let held = body.value_type(copy.buffer(body)).as_smem().map_or(1, |smem| smem.stages);
        let first = body.constant_int(copy.stage(body)).unwrap_or(0);
        if first + stages > held {
            return Err(format!("copies stages [{first}, {}) of a buffer of {held} stage(s)", first + stages));
        }
        // Stage k is the tile k columns further on: one column a stage.
        if buf.shape.last() != Some(&1) {
            return Err(format!("copies several stages of tiles one column wide (a K loop's scales a K block apart), not {:?}", buf.shape));
        }
    }
    Ok(())
}

/// The most elements one `nv.copy_async` copies: 8 per lane of the warp.
pub const MAX_COPIED_ELEMENTS: i64 = 256;

/// The shortest row TMA copies and wgmma reads. An unswizzled buffer of
/// shorter rows is *narrow*: stored densely, copied and read by threads.
pub const MIN_TMA_ROW_BYTES: i64 = 16;

/// Why `tile` is not one `nv.copy_async` can copy (a block-scaled dot's
/// scales: rank-2 f32 rows narrower than TMA's, at most
/// [`MAX_COPIED_ELEMENTS`] of them), or `None` when it is.
pub fn copy_async_fault(tile: &TileType) -> Option<String> {
    if tile.elem.bits() != 32 || !tile.elem.is_float() {
        return Some(format!("copies 4-byte float elements (scales), not '{}'", tile.elem.mnemonic()));
    }
    if tile.shape.len() != 2 || tile.shape[1] * 4 >= MIN_TMA_ROW_BYTES {
        return Some(format!("copies rank-2 tiles of rows under {MIN_TMA_ROW_BYTES} bytes (wider tiles go by TMA), not {:?}", tile.shape));
    }
    if tile.num_elements() > MAX_COPIED_ELEMENTS {
        return Some(format!("copies at most {MAX_COPIED_ELEMENTS} elements (the copying warp copies them one by one), not {}", tile.num_elements()));
    }
    None
}

/// The alignment TMA needs of the shared memory a box lands in.
pub const TMA_SHARED_ALIGN: i64 = 128;

/// The alignment TMA needs of where a box starts in global memory along
/// the tensor's contiguous dimension.
pub const TMA_GLOBAL_ALIGN: i64 = 16;

/// The most elements of a TMA box along one dimension.
pub const MAX_TMA_BOX: i64 = 256;

/// The rows of the narrow buffer that holds the tile `tile` when TMA fills
/// it with one flat box: where `tile` is a column of a `column_major`
/// tensor (a block-scaled dot's row scales stored M-major, each K block's
/// one run of memory) that [`copy_async_fault`] accepts and whose box (its
/// rows and [`TMA_SHARED_ALIGN`] bytes more) passes [`flat_box_fault`];
/// `None` where threads copy it instead.
pub fn flat_box_rows_of(tile: &TileType, column_major: bool) -> Option<i64> {
    let mut boxed = tile.clone();
    boxed.shape[0] = flat_box_rows(tile);
    let fits = column_major && copy_async_fault(tile).is_none() && flat_box_fault(&boxed).is_none();
    fits.then_some(boxed.shape[0])
}

/// Why `boxed` is not a flat TMA box a narrow buffer's stage can take, or
/// `None` when it is: one column of a whole number of [`TMA_SHARED_ALIGN`]
/// bytes (so that every stage starts aligned), at most [`MAX_TMA_BOX`] rows.
pub fn flat_box_fault(boxed: &TileType) -> Option<String> {
    let bytes = boxed.shape.first().copied().unwrap_or(0) * i64::from(boxed.elem.bits() / 8);
    if boxed.shape.len() != 2 || boxed.shape[1] != 1 || bytes % TMA_SHARED_ALIGN != 0 || boxed.shape[0] > MAX_TMA_BOX {
        return Some(format!(
            "a flat TMA box is one column of a multiple of {TMA_SHARED_ALIGN} bytes and at most {MAX_TMA_BOX} rows, not {:?} {}",
            boxed.shape,
            boxed.elem.mnemonic()
        ));
    }
    None
}

/// The rows of the flat box (and narrow buffer) that hold the column tile
/// `tile` (R x 1): the box starts at the [`TMA_GLOBAL_ALIGN`] boundary at
/// or before the column's first element, up to 16 bytes early, and R plus
/// [`TMA_SHARED_ALIGN`] bytes keep every stage of the buffer aligned.
fn flat_box_rows(tile: &TileType) -> i64 {
    tile.shape[0] + TMA_SHARED_ALIGN / i64::from(tile.elem.bits() / 8)
}

/// One coordinate per tensor dimension (rank 2 or more, whose last two
/// dimensions the kernel takes column-major).
pub(super) fn verify_run_offset(body: &Body, op: Op) -> Result<(), String> {
    let run = RunOffset::of(body, op).ok_or("malformed 'nv.run_offset'")?;
    let tensor = body.value_type(run.tensor(body)).as_ref_type().ok_or("the source must be a global tensor reference")?;
    if tensor.shape.len() < 2 || run.coords(body).len() != tensor.shape.len() {
        return Err("expects a tensor of rank 2 or more and one coordinate per dimension".into());
    }
    Ok(())
}

/// The arrivals one `nv.copy_async` makes on its barrier stage: one per
/// lane of the copying warp, each once its own copies have landed.
pub const COPY_ARRIVALS: i64 = 32;

/// The warp of the CTA that runs `nv.copy_async`: the second, beside the
/// first warp whose thread 0 issues the elected ops (a stage's TMA loads
/// and `expect_tx`), so that a stage's copies and its TMA loads are issued
/// by two warps at once rather than one after the other. Every region that
/// copies (a producer warpgroup, a kernel without roles) has four warps.
pub const COPYING_WARP: i64 = 1;

/// A register tile read from a buffer stage of the same shape and type.
pub(super) fn verify_load_shared(body: &Body, op: Op) -> Result<(), String> {
    let load = LoadShared::of(body, op).ok_or("malformed 'nv.load_shared'")?;
    let tile = body.value_type(load.result(body)).as_tile().ok_or("the result must be a tile")?;
    let buf = &body.value_type(load.buffer(body)).as_smem().ok_or("the source must be a '!nv.smem' buffer")?.tile;
    if tile.layout.as_ref().is_none_or(Layout::is_shared) {
        return Err("the loaded tile needs a distributed (register) layout".into());
    }
    if tile.elem != buf.elem || tile.shape != buf.shape {
        return Err(format!(
            "loads a {:?} {} tile from a buffer of {:?} {} tiles: shapes and element types must match",
            tile.shape,
            tile.elem.mnemonic(),
            buf.shape,
            buf.elem.mnemonic()
        ));
    }
    Ok(())
}

/// A register tile stored at one element coordinate per tensor dimension.
pub(super) fn verify_store_global(body: &Body, op: Op) -> Result<(), String> {
    let store = StoreGlobal::of(body, op).ok_or("malformed 'nv.store_global'")?;
    check_register_access(body, store.value(body), store.tensor(body), store.coords(body).len(), "stored")
}

/// A register tile read at one element coordinate per tensor dimension.
pub(super) fn verify_load_global(body: &Body, op: Op) -> Result<(), String> {
    let load = LoadGlobal::of(body, op).ok_or("malformed 'nv.load_global'")?;
    check_register_access(body, load.result(body), load.tensor(body), load.coords(body).len(), "loaded")
}

/// Threads access the register tile `tile` at `coords` element coordinates
/// of `tensor`: one per dimension, and the tile in a distributed layout of
/// the tensor's element type (`what` the tile is: stored or loaded).
fn check_register_access(body: &Body, tile: Value, tensor: Value, coords: usize, what: &str) -> Result<(), String> {
    let tile = body.value_type(tile).as_tile().ok_or(format!("the {what} value must be a tile"))?;
    let tensor = body.value_type(tensor).as_ref_type().ok_or("the memory operand must be a global tensor reference")?;
    if tile.layout.as_ref().is_none_or(Layout::is_shared) {
        return Err(format!("the {what} tile needs a distributed (register) layout"));
    }
    if tile.elem != tensor.elem {
        return Err("tile and tensor element types differ".into());
    }
    if coords != tensor.shape.len() {
        return Err("expects one element coordinate per tensor dimension".into());
    }
    // A rank-2 tile of a higher-rank tensor lies in its last two dimensions.
    if tile.shape.len() != 2.min(tensor.shape.len()) && tile.shape.len() != tensor.shape.len() {
        return Err(format!("a rank-{} tile cannot be accessed in a rank-{} tensor (rank 2, or the tensor's rank)", tile.shape.len(), tensor.shape.len()));
    }
    Ok(())
}
