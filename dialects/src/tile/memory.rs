//! Loads and stores of whole tiles at tile coordinates of a global tensor.
//!
//! `tile.load %a[%i, %k]` reads the tile whose first element is at
//! `(%i * TILE_M, %k * TILE_K)`; elements outside the tensor read as zero,
//! and a store writes only the elements inside it, as TMA does.

use super::{Load, Store};
use crate::ir::{Body, Op, Type};

/// Checks a tile against the tensor it is loaded from or stored to, and the
/// tile coordinates.
fn check_access(body: &Body, tile: &Type, tensor: &Type, indices: &[crate::ir::Value]) -> Result<(), String> {
    let Some(tile) = tile.as_tile() else {
        return Err("the accessed value must be a tile".into());
    };
    let Some(tensor) = tensor.as_ref_type() else {
        return Err("the memory operand must be a global tensor reference".into());
    };
    if tile.elem != tensor.elem {
        return Err(format!(
            "tile element type '{}' does not match tensor element type '{}'",
            tile.elem.mnemonic(),
            tensor.elem.mnemonic()
        ));
    }
    if tile.shape.len() != tensor.shape.len() {
        return Err(format!("rank-{} tile does not match rank-{} tensor", tile.shape.len(), tensor.shape.len()));
    }
    if indices.len() != tensor.shape.len() {
        return Err(format!("expects {} tile coordinate(s), found {}", tensor.shape.len(), indices.len()));
    }
    if let Some(bad) = indices.iter().position(|&i| !body.value_type(i).is_index()) {
        return Err(format!("tile coordinate #{bad} must be 'index'"));
    }
    if tile.shape.iter().any(|&d| d <= 0 && crate::ir::Param::from_extent(d).is_none()) {
        return Err("tile dimensions must be positive".into());
    }
    Ok(())
}

pub(super) fn verify_load(body: &Body, op: Op) -> Result<(), String> {
    let load = Load::of(body, op).ok_or("malformed 'tile.load'")?;
    check_access(body, body.value_type(load.result(body)), body.value_type(load.tensor(body)), load.indices(body))
}

pub(super) fn verify_store(body: &Body, op: Op) -> Result<(), String> {
    let store = Store::of(body, op).ok_or("malformed 'tile.store'")?;
    check_access(body, body.value_type(store.value(body)), body.value_type(store.tensor(body)), store.indices(body))
}
