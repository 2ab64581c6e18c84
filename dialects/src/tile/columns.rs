//! Ops that rearrange a tile's columns: `tile.deinterleave` splits a tile
//! whose columns interleave two tiles in runs (a SwiGLU MLP's gate and up
//! projections computed by one dot) into the two.

use super::Deinterleave;
use crate::ir::{Body, Op};

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
