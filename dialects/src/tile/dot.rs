//! Matrix products on tiles: `dot` (C += A * B with optional transpositions)
//! and `dot_scaled` (FP8 e4m3 with DeepGEMM's block scales), plus the layout
//! conversion the layout pass inserts between them and their neighbours.

use super::{ConvertLayout, Dot, DotScaled};
use crate::ir::{Body, ElemType, Op, TileType, Type, Value};

/// K elements covered by one block scale, in both operands.
pub const SCALE_BLOCK_K: i64 = 128;
/// N rows covered by one RHS block scale (128x128 blocks).
pub const SCALE_BLOCK_N: i64 = 128;

fn tile_of<'a>(body: &'a Body, v: Value, what: &str) -> Result<&'a TileType, String> {
    match body.value_type(v) {
        Type::Tile(t) if t.shape.len() == 2 => Ok(t),
        Type::Tile(t) => Err(format!("{what} must be a rank-2 tile, found rank {}", t.shape.len())),
        _ => Err(format!("{what} must be a tile")),
    }
}

/// The (M, N, K) of a dot after checking that A, B and C agree; element
/// types are checked by the callers, and the definitions give the result
/// the accumulator's type.
fn check_dot_shapes(body: &Body, op: Op, a: &TileType, b: &TileType, c: &TileType) -> Result<(i64, i64, i64), String> {
    let attrs = &body.ops[op].attrs;
    let (m, ka) = if attrs.has("transpose_a") { (a.shape[1], a.shape[0]) } else { (a.shape[0], a.shape[1]) };
    let (kb, n) = if attrs.has("transpose_b") { (b.shape[1], b.shape[0]) } else { (b.shape[0], b.shape[1]) };
    if ka != kb {
        return Err(format!(
            "K of A ({ka}) does not match K of B ({kb}){}",
            if attrs.has("transpose_b") { "" } else { "; for C = A * B^T with B stored N x K, add {transpose_b}" }
        ));
    }
    if c.shape != [m, n] {
        return Err(format!("accumulator shape {}x{} does not match the product's {m}x{n}", c.shape[0], c.shape[1]));
    }
    Ok((m, n, ka))
}

/// A is M x K (K x M with `transpose_a`), B is K x N (N x K with
/// `transpose_b`); the accumulator has the result's type.
pub(super) fn verify_dot(body: &Body, op: Op) -> Result<(), String> {
    let dot = Dot::of(body, op).ok_or("malformed 'tile.dot'")?;
    let (a, b, c) = (tile_of(body, dot.lhs(body), "A")?, tile_of(body, dot.rhs(body), "B")?, tile_of(body, dot.acc(body), "the accumulator")?);
    if a.elem != b.elem {
        return Err(format!("A and B must have one element type, found '{}' and '{}'", a.elem.mnemonic(), b.elem.mnemonic()));
    }
    let acc_ok = match a.elem {
        ElemType::BF16 | ElemType::F8E4M3FN => c.elem == ElemType::F32,
        ElemType::F16 => matches!(c.elem, ElemType::F32 | ElemType::F16),
        other => return Err(format!("operands must be f16, bf16 or f8E4M3FN, found '{}'", other.mnemonic())),
    };
    if !acc_ok {
        return Err(format!("'{}' operands cannot accumulate in '{}'", a.elem.mnemonic(), c.elem.mnemonic()));
    }
    check_dot_shapes(body, op, a, b, c).map(|_| ())
}

impl DotScaled {
    /// The block scales (one per 128 x 128 block): B's, or A's with
    /// `blocks_along_rows`.
    pub fn block_scales(self, body: &Body) -> Value {
        if self.blocks_along_rows(body) {
            self.lhs_scale(body)
        } else {
            self.rhs_scale(body)
        }
    }

    /// The scales one per row of their operand: A's, or B's with
    /// `blocks_along_rows`.
    pub fn row_scales(self, body: &Body) -> Value {
        if self.blocks_along_rows(body) {
            self.rhs_scale(body)
        } else {
            self.lhs_scale(body)
        }
    }

    /// Rows of the tile the block scales belong to (B's N, or A's M with
    /// `blocks_along_rows`), when its operand is a rank-2 tile.
    pub fn block_scaled_rows(self, body: &Body) -> Option<i64> {
        let (operand, transposed) = if self.blocks_along_rows(body) { (self.lhs(body), self.transpose_a(body)) } else { (self.rhs(body), !self.transpose_b(body)) };
        let t = body.value_type(operand).as_tile()?;
        let [r, c] = t.shape[..] else { return None };
        Some(if transposed { c } else { r })
    }
}

/// Blocks of [`SCALE_BLOCK_N`] rows that `rows` rows starting a block cover.
pub fn blocks_covering(rows: i64) -> i64 {
    (rows + SCALE_BLOCK_N - 1) / SCALE_BLOCK_N
}

/// The offsets into a block of [`SCALE_BLOCK_N`] rows at which a grid of
/// tiles `rows` wide starts its tiles are the multiples of this,
/// gcd(rows, [`SCALE_BLOCK_N`]).
pub fn grid_offset_grain(rows: i64) -> i64 {
    super::arith::gcd(rows, SCALE_BLOCK_N)
}

/// The most blocks of [`SCALE_BLOCK_N`] rows one tile of a grid of tiles
/// `rows` wide touches: 2 for 160 or 192 rows, 3 for 176 (a tile starting
/// 112 rows into a block).
pub fn blocks_from_grid_offsets(rows: i64) -> i64 {
    blocks_covering(SCALE_BLOCK_N - grid_offset_grain(rows) + rows)
}

/// The most blocks of [`SCALE_BLOCK_N`] rows that `rows` consecutive rows
/// starting at any row of a block touch.
pub fn blocks_from_any_offset(rows: i64) -> i64 {
    (rows + 2 * SCALE_BLOCK_N - 2) / SCALE_BLOCK_N
}

/// FP8 e4m3 operands with f32 scales: one per row of A and 128 K elements,
/// one per 128 x 128 block of B; with `blocks_along_rows` one per 128 x 128
/// block of A and one per row of B.
pub(super) fn verify_dot_scaled(body: &Body, op: Op) -> Result<(), String> {
    let dot = DotScaled::of(body, op).ok_or("malformed 'tile.dot_scaled'")?;
    let a = tile_of(body, dot.lhs(body), "A")?;
    let sa = tile_of(body, dot.lhs_scale(body), "A's scales")?;
    let b = tile_of(body, dot.rhs(body), "B")?;
    let sb = tile_of(body, dot.rhs_scale(body), "B's scales")?;
    let c = tile_of(body, dot.acc(body), "the accumulator")?;
    if a.elem != ElemType::F8E4M3FN || b.elem != ElemType::F8E4M3FN {
        return Err(format!("A and B must be 'f8E4M3FN', found '{}' and '{}'", a.elem.mnemonic(), b.elem.mnemonic()));
    }
    if sa.elem != ElemType::F32 || sb.elem != ElemType::F32 {
        return Err("scales must be 'f32'".into());
    }
    if c.elem != ElemType::F32 {
        return Err("the accumulator must be 'f32'".into());
    }
    let (m, n, k) = check_dot_shapes(body, op, a, b, c)?;
    if k % SCALE_BLOCK_K != 0 {
        return Err(format!("K ({k}) must be a multiple of the {SCALE_BLOCK_K}-element scale block"));
    }
    let k_blocks = k / SCALE_BLOCK_K;
    let offset = dot.block_offset(body).is_some();
    if dot.blocks_along_rows(body) {
        check_row_scales(sb, "B's", n, k_blocks)?;
        check_block_scales(sa, "A's", m, k_blocks, offset)
    } else {
        check_row_scales(sa, "A's", m, k_blocks)?;
        check_block_scales(sb, "B's", n, k_blocks, offset)
    }
}

/// One scale per row of an operand of `rows` rows and per K block.
fn check_row_scales(scales: &TileType, whose: &str, rows: i64, k_blocks: i64) -> Result<(), String> {
    if scales.shape != [rows, k_blocks] {
        return Err(format!(
            "{whose} scales must be {rows}x{k_blocks} (one per row and {SCALE_BLOCK_K} K elements), found {}x{}",
            scales.shape[0], scales.shape[1]
        ));
    }
    Ok(())
}

/// One scale per 128 x 128 block of an operand of `rows` rows, from its
/// first row or, with an offset, from any row of the first block.
fn check_block_scales(scales: &TileType, whose: &str, rows: i64, k_blocks: i64, offset: bool) -> Result<(), String> {
    if !offset {
        let blocks = blocks_covering(rows);
        if scales.shape != [blocks, k_blocks] {
            return Err(format!(
                "{whose} scales must be {blocks}x{k_blocks} (one per {SCALE_BLOCK_N}x{SCALE_BLOCK_K} block), found {}x{}",
                scales.shape[0], scales.shape[1]
            ));
        }
        return Ok(());
    }
    // Enough blocks for a tile starting at any row of the first.
    let blocks = blocks_from_any_offset(rows);
    if scales.shape[1] != k_blocks || scales.shape[0] < blocks {
        return Err(format!(
            "with an offset, {whose} scales must be at least {blocks}x{k_blocks} (the {SCALE_BLOCK_N}x{SCALE_BLOCK_K} blocks {rows} rows starting at any row of a block touch), found {}x{}",
            scales.shape[0], scales.shape[1]
        ));
    }
    Ok(())
}

pub(super) fn verify_convert_layout(body: &Body, op: Op) -> Result<(), String> {
    let convert = ConvertLayout::of(body, op).ok_or("malformed 'tile.convert_layout'")?;
    let from = tile_of(body, convert.input(body), "the input")?;
    let to = tile_of(body, convert.result(body), "the result")?;
    if from.shape != to.shape || from.elem != to.elem {
        return Err("input and result must differ only in layout".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grid_of_tiles_starts_them_at_multiples_of_the_grain() {
        // (tile rows, grain, blocks one tile touches)
        let table = [(64, 64, 1), (112, 16, 2), (128, 128, 1), (160, 32, 2), (176, 16, 3), (192, 64, 2), (208, 16, 3), (256, 128, 2)];
        for (rows, grain, blocks) in table {
            assert_eq!((grid_offset_grain(rows), blocks_from_grid_offsets(rows)), (grain, blocks), "{rows} rows");
        }
    }
}
