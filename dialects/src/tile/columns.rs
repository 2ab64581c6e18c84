//! Ops that work on a tile's columns: `tile.deinterleave` splits a tile
//! whose columns interleave two tiles in runs (a SwiGLU MLP's gate and up
//! projections computed by one dot) into the two; `tile.reduce` reduces
//! each row over groups of columns (an FP8 quantisation's absmax).

use super::{Deinterleave, Reduce};
use crate::ir::{Body, Op, Param};
use crate::ElemType;

/// The input is a rank-2 f32 tile; `group` is a positive multiple of 8 (a
/// thread of an MMA layout holds column pairs of 8-column groups, so a
/// group is whole in every thread) dividing the tile's columns where they
/// are known.
pub(super) fn verify_reduce(body: &Body, op: Op) -> Result<(), String> {
    let r = Reduce::of(body, op).ok_or("malformed 'tile.reduce'")?;
    let group = r.group(body);
    if group <= 0 || group % 8 != 0 {
        return Err(format!("'group' must be a positive multiple of 8, found {group}"));
    }
    let input = body.value_type(r.input(body)).as_tile().ok_or("the input must be a tile")?;
    let [_, cols] = input.shape[..] else {
        return Err(format!("takes a rank-2 tile, found rank {}", input.shape.len()));
    };
    if input.elem != ElemType::F32 {
        return Err(format!("reduces f32 tiles (extend narrower floats with 'tile.extf' first), found '{}'", input.elem.mnemonic()));
    }
    if Param::from_extent(cols).is_none() && cols % group != 0 {
        return Err(format!("the tile's {cols} columns are not whole groups of {group}"));
    }
    Ok(())
}

/// The input is a rank-2 tile whose columns are whole pairs of runs; each
/// result has its rows and half its columns.
pub(super) fn verify_deinterleave(body: &Body, op: Op) -> Result<(), String> {
    let d = Deinterleave::of(body, op).ok_or("malformed 'tile.deinterleave'")?;
    let block = d.block(body);
    if block <= 0 {
        return Err(format!("'block' must be positive, found {block}"));
    }
    let input = body.value_type(d.input(body)).as_tile().ok_or("the input must be a tile")?;
    let first = body.value_type(d.first(body)).as_tile().ok_or("the results must be tiles")?;
    let [rows, cols] = input.shape[..] else {
        return Err(format!("takes a rank-2 tile, found rank {}", input.shape.len()));
    };
    if cols % (2 * block) != 0 {
        return Err(format!("the input's {cols} columns are not whole pairs of {block}-column runs"));
    }
    if first.shape != [rows, cols / 2] {
        return Err(format!("each result is {rows}x{} (the input's rows, half its columns), found {}", cols / 2, shape_text(&first.shape)));
    }
    if first.elem != input.elem {
        return Err(format!("the results' element type '{}' is not the input's '{}'", first.elem.mnemonic(), input.elem.mnemonic()));
    }
    if first.layout.is_some() && input.layout.is_some() && first.layout != input.layout {
        return Err("the results take the input's layout".into());
    }
    Ok(())
}

fn shape_text(shape: &[i64]) -> String {
    shape.iter().map(i64::to_string).collect::<Vec<_>>().join("x")
}
