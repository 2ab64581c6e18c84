//! Loads and stores of whole tiles at tile coordinates of a global tensor.
//!
//! `tile.load %a[%i, %k]` reads the tile whose first element is at
//! `(%i * TILE_M, %k * TILE_K)`; elements outside the tensor read as zero,
//! and a store writes only the elements inside it, as TMA does. A tile of
//! lower rank than its tensor is a box of extent 1 in the tensor's leading
//! dimensions, whose coordinates are element coordinates: `tile.load
//! %b[%e, %n, %k] : !tile.ref<?x?x?xbf16> -> tensor<128x64xbf16>` reads
//! rows `%n * 128..` of expert `%e`'s matrix. `tile.load_scalar` reads one
//! element (an expert index, a row count) into a scalar.
//! `tile.load_broadcast` reads a 1-D tile of a vector (a bias, a scale per
//! row) and repeats it over a 2-D tile's rows or columns.

use super::{Load, LoadBroadcast, LoadScalar, Store};
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
    if tile.shape.len() > tensor.shape.len() || tile.shape.len() < 2.min(tensor.shape.len()) {
        return Err(format!(
            "a rank-{} tile cannot be a box of a rank-{} tensor (a tile has the tensor's rank, or rank 2 with extent 1 in the tensor's leading dimensions)",
            tile.shape.len(),
            tensor.shape.len()
        ));
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

/// One element of a tensor, at element coordinates, as a scalar of the
/// tensor's element type.
pub(super) fn verify_load_scalar(body: &Body, op: Op) -> Result<(), String> {
    let load = LoadScalar::of(body, op).ok_or("malformed 'tile.load_scalar'")?;
    let tensor = body.value_type(load.tensor(body)).as_ref_type().ok_or("the memory operand must be a global tensor reference")?;
    if load.indices(body).len() != tensor.shape.len() {
        return Err(format!("expects {} coordinate(s), found {}", tensor.shape.len(), load.indices(body).len()));
    }
    if let Some(bad) = load.indices(body).iter().position(|&i| !body.value_type(i).is_index()) {
        return Err(format!("coordinate #{bad} must be 'index'"));
    }
    if *body.value_type(load.result(body)) != Type::Scalar(tensor.elem) {
        return Err(format!("the result must be the tensor's element type '{}'", tensor.elem.mnemonic()));
    }
    Ok(())
}

/// A vector's 1-D tile repeated over a 2-D tile: the tensor has rank 1 and
/// the result's element type.
pub(super) fn verify_load_broadcast(body: &Body, op: Op) -> Result<(), String> {
    let load = LoadBroadcast::of(body, op).ok_or("malformed 'tile.load_broadcast'")?;
    let tensor = body.value_type(load.tensor(body)).as_ref_type().ok_or("the memory operand must be a global tensor reference")?;
    if tensor.shape.len() != 1 {
        return Err(format!("reads a vector: the tensor must have rank 1, found rank {}", tensor.shape.len()));
    }
    let tile = body.value_type(load.result(body)).as_tile().ok_or("the result must be a tile")?;
    if tile.shape.len() != 2 {
        return Err(format!("the result must be a rank-2 tile, found rank {}", tile.shape.len()));
    }
    if tile.elem != tensor.elem {
        return Err(format!(
            "tile element type '{}' does not match tensor element type '{}'",
            tile.elem.mnemonic(),
            tensor.elem.mnemonic()
        ));
    }
    Ok(())
}

pub(super) fn verify_store(body: &Body, op: Op) -> Result<(), String> {
    let store = Store::of(body, op).ok_or("malformed 'tile.store'")?;
    check_access(body, body.value_type(store.value(body)), body.value_type(store.tensor(body)), store.indices(body))?;
    let Some(group) = store.group(body) else { return Ok(()) };
    let tile = body.value_type(store.value(body)).as_tile().expect("checked by check_access");
    let [_, cols] = tile.shape[..] else {
        return Err(format!("a store of one element a group takes a rank-2 tile, found rank {}", tile.shape.len()));
    };
    if group <= 0 || group % 8 != 0 {
        return Err(format!("'group' must be a positive multiple of 8, found {group}"));
    }
    if crate::ir::Param::from_extent(cols).is_none() && cols % group != 0 {
        return Err(format!("the tile's {cols} columns are not whole groups of {group}"));
    }
    Ok(())
}
