//! Asynchronous warpgroup MMA: fence, the tile-sized `nv.wgmma`, commit and
//! wait.

use super::fragment::check_a_fragment_layout;
use super::{ScaleAccumulate, Wgmma, WgmmaWait};
use crate::ir::Attribute;
use crate::tile::dot::{blocks_covering, blocks_from_any_offset, SCALE_BLOCK_N};
use crate::tile::Constant;
use crate::ir::{Body, ElemType, Layout, Op, TileType};

/// `%d = nv.wgmma %a_smem[%s], %b_smem[%s], %acc {transpose_b} : !nv.smem<...>, !nv.smem<...> -> tensor<MxNxf32, #tile.mma<...>>`
/// `%d = nv.wgmma %a, %b_smem[%s], %acc {transpose_b} : tensor<MxKxT, #tile.dot_operand<...>>, !nv.smem<...> -> tensor<...>`
///
/// One warpgroup MMA over a whole tile: D = A * B + acc, issued
/// asynchronously as the K / instr_k (and M / 64) instructions the layout
/// implies. A is a buffer stage, or a register tile in the dot-operand
/// layout of the accumulator's MMA layout (loaded by `nv.load_fragment`);
/// B is always a buffer stage. Its result may be read only after an
/// `nv.wgmma_wait` that takes it. With `zero_init` the accumulator is not
/// read: a zero splat, or a waited partial that nothing reads after this
/// wgmma, whose registers the result then takes (so that ptxas gives the
/// row blocks of a block-scaled tile one set of partial registers).
pub(super) fn verify_wgmma(body: &Body, op: Op) -> Result<(), String> {
    let mma = Wgmma::of(body, op).ok_or("malformed 'nv.wgmma'")?;
    let a_value = body.value_type(mma.a(body));
    let a = match (a_value.as_smem(), mma.a_stage(body)) {
        (Some(smem), Some(_)) => &smem.tile,
        (Some(_), None) => return Err("A in shared memory needs a stage".into()),
        (None, Some(_)) => return Err("only A in shared memory takes a stage".into()),
        (None, None) => {
            let Some(a) = a_value.as_tile() else {
                return Err("A must be a '!nv.smem' buffer stage or a register tile".into());
            };
            check_a_fragment_layout(a.layout.as_ref(), a.elem.bits())?;
            if mma.transpose_a(body) {
                return Err("A in registers cannot be transposed".into());
            }
            a
        }
    };
    let b = &body.value_type(mma.b(body)).as_smem().expect("checked by the definition").tile;
    let c = body.value_type(mma.acc(body)).as_tile().expect("checked by the definition");
    if mma.zero_init(body) && !is_zero_splat(body, mma.acc(body)) && !dead_after(body, mma.acc(body), op) {
        return Err("with 'zero_init' the accumulator must be a zero splat ('tile.constant 0.0') or a partial nothing reads after the wgmma: it is not read".into());
    }
    let Some(mma_layout @ Layout::Mma { instr_shape, .. }) = &c.layout else {
        return Err("the accumulator needs a '#tile.mma' layout".into());
    };
    if let Some(Layout::DotOperand { parent, .. }) = &a.layout {
        if **parent != *mma_layout {
            return Err("A's dot-operand layout must have the accumulator's MMA layout as its parent".into());
        }
    }
    if a.shape.len() != 2 || b.shape.len() != 2 || c.shape.len() != 2 {
        return Err("A, B and the accumulator must be rank 2".into());
    }
    let (m, k) = if mma.transpose_a(body) { (a.shape[1], a.shape[0]) } else { (a.shape[0], a.shape[1]) };
    let (kb, n) = if mma.transpose_b(body) { (b.shape[1], b.shape[0]) } else { (b.shape[0], b.shape[1]) };
    if k != kb || c.shape != [m, n] {
        return Err(format!("shapes do not form a product: A gives {m}x{k}, B gives {kb}x{n}, accumulator is {}x{}", c.shape[0], c.shape[1]));
    }
    if a.elem != b.elem || !matches!(a.elem, ElemType::BF16 | ElemType::F16 | ElemType::F8E4M3FN) {
        return Err("A and B must share an f16, bf16 or f8E4M3FN element type".into());
    }
    let [im, in_, ik] = instr_shape[..] else { return Err("the MMA layout's instruction shape must be [M, N, K]".into()) };
    // A warpgroup's wgmma covers 64 rows; the layout's M is one warp's 16.
    if m % 64 != 0 || n % i64::from(in_) != 0 || k % i64::from(ik) != 0 {
        return Err(format!("the tile {m}x{n}x{k} is not a multiple of the instruction shape [{im}, {in_}, {ik}]"));
    }
    Ok(())
}

/// Whether `v` is a zero splat (`tile.constant 0.0`).
pub fn is_zero_splat(body: &Body, v: crate::ir::Value) -> bool {
    let Some(def) = body.defining_op(v).and_then(|d| Constant::of(body, d)) else { return false };
    matches!(body.ops[def.op()].attrs.get("value"), Some(Attribute::Float(x, _)) if *x == 0.0)
}

/// Whether `v` is defined in `op`'s block before it, and every other op
/// that reads `v` comes before `op` in that block.
fn dead_after(body: &Body, v: crate::ir::Value, op: Op) -> bool {
    let block = body.ops[op].parent;
    let at = body.position_in_block(op);
    let before = |o: Op| body.ops[o].parent == block && body.position_in_block(o) < at;
    body.defining_op(v).is_some_and(before)
        && body.ops.keys().all(|reader| reader == op || body.ops[reader].parent.is_none() || !body.ops[reader].operands.contains(&v) || before(reader))
}

/// `%r = nv.scale_accumulate %acc, %partial, %sa, %sb {row_block = R} : tensor<PxNxf32, P>, tensor<Mx1xf32, #tile.slice<dim = 1, parent = P>>, tensor<NBx1xf32, ...> -> tensor<MxNxf32, P>`
///
/// `acc + partial * sa[row] * sb[col / 128]`: the promotion of one
/// 128-wide K block of a block-scaled FP8 dot, whose partial product came
/// from a fresh wgmma accumulator. The row scales are sliced from the
/// accumulator's MMA layout, so each thread holds the rows it accumulates.
/// With `blocks_along_rows` (the swapped GEMM's) it is
/// `acc + partial * sa[row / 128] * sb[col]`, the column scales
/// `tensor<Nx1xf32, #tile.slice<dim = 0, parent = P>>`: each thread holds
/// the columns it accumulates.
///
/// Without `row_block` the partial covers the whole accumulator. With it
/// the partial is one m64 row block of the layout (64 rows a warpgroup,
/// rows `[R * 64 * W, (R + 1) * 64 * W)` over its W warpgroups) and only
/// that block is promoted: a tile promoted block by block holds one
/// block's partial at a time instead of a second copy of the whole tile.
/// With `col_block` the partial is the columns one wgmma instruction of the
/// layout covers (`[C * N_i, (C + 1) * N_i)` for instruction N `N_i`) and
/// only those are promoted: the next instruction's wgmma can run while
/// they are.
pub(super) fn verify_scale_accumulate(body: &Body, op: Op) -> Result<(), String> {
    let sacc = ScaleAccumulate::of(body, op).ok_or("malformed 'nv.scale_accumulate'")?;
    let acc = body.value_type(sacc.acc(body)).as_tile().expect("checked by the definition");
    let rows = body.value_type(sacc.row_scale(body)).as_tile().expect("checked by the definition");
    let cols = body.value_type(sacc.col_scale(body)).as_tile().expect("checked by the definition");
    let Some(acc_layout @ Layout::Mma { .. }) = &acc.layout else {
        return Err("the accumulator needs a '#tile.mma' layout".into());
    };
    if acc.elem != ElemType::F32 || rows.elem != ElemType::F32 || cols.elem != ElemType::F32 {
        return Err("the accumulator and the scales must be 'f32'".into());
    }
    let [m, n] = acc.shape[..] else { return Err("the accumulator must be rank 2".into()) };
    let partial = body.value_type(sacc.partial(body)).as_tile().expect("checked by the definition");
    // A promotion of one block: which, how many the accumulator holds, the
    // partial's shape, and how the errors name them.
    let block = match (sacc.row_block(body), sacc.col_block(body)) {
        (None, None) if partial != acc => return Err("without 'row_block' or 'col_block' the partial must have the accumulator's type".into()),
        (None, None) => None,
        (Some(_), Some(_)) => return Err("'row_block' and 'col_block' are exclusive: a promotion covers one row block or one column block".into()),
        (Some(block), None) => {
            let Layout::Mma { warps_per_cta, .. } = acc_layout else { unreachable!("matched above") };
            let block_rows = 16 * i64::from(warps_per_cta.first().copied().unwrap_or(0));
            let blocks = if block_rows == 0 { 0 } else { m / block_rows };
            Some((block, blocks, [block_rows, n], "row_block", format!("one m64 row block of the accumulator: {block_rows}x{n}"), "row"))
        }
        (None, Some(block)) => {
            let Layout::Mma { warps_per_cta, instr_shape, .. } = acc_layout else { unreachable!("matched above") };
            let instr_n = i64::from(instr_shape.get(1).copied().unwrap_or(0));
            if warps_per_cta.get(1) != Some(&1) || instr_n == 0 {
                return Err("'col_block' needs an MMA layout whose warps all lie along M".into());
            }
            Some((block, n / instr_n, [m, instr_n], "col_block", format!("one wgmma instruction's columns of the accumulator: {m}x{instr_n}"), "column"))
        }
    };
    if let Some((block, blocks, shape, attr, what, axis)) = block {
        if partial.layout != acc.layout || partial.elem != acc.elem || partial.shape != shape {
            return Err(format!("with '{attr}' the partial must be {what} in its layout"));
        }
        if !(0..blocks).contains(&block) {
            return Err(format!("'{attr}' {block} is not one of the accumulator's {blocks} {axis} blocks"));
        }
    }
    let offset = sacc.block_offset(body).is_some();
    if sacc.blocks_along_rows(body) {
        // The offset is where the rows start in the first block, which for
        // a consumer's share of a tile lies past the tile's own offset: the
        // rows take whichever blocks the tile's span gave, the last for any
        // row past them.
        check_block_scales(rows, "row", blocks_covering(m), !offset)?;
        check_scales_per_line(cols, acc_layout, n, 0, "column")?;
        return Ok(());
    }
    check_scales_per_line(rows, acc_layout, m, 1, "row")?;
    if offset {
        check_block_scales(cols, "column", blocks_from_any_offset(n), false)
    } else {
        check_block_scales(cols, "column", blocks_covering(n), true)
    }
}

/// One scale per row (`sliced` 1) or column (`sliced` 0) of an accumulator
/// with `count` of them, each thread holding those of its fragment.
fn check_scales_per_line(scales: &TileType, acc_layout: &Layout, count: i64, sliced: u32, what: &str) -> Result<(), String> {
    if scales.shape != [count, 1] {
        return Err(format!("the {what} scales must be {count}x1, one per accumulator {what}"));
    }
    match &scales.layout {
        Some(Layout::Slice { dim, parent }) if *dim == sliced && **parent == *acc_layout => Ok(()),
        _ => Err(format!("the {what} scales need the layout '#tile.slice<dim = {sliced}, parent = ...>' of the accumulator's MMA layout")),
    }
}

/// Block scales, one per 128 of an accumulator's rows or columns, in
/// registers: exactly `blocks` of them (a tile starting a block) or, with
/// an offset into the first, at least `blocks`.
fn check_block_scales(scales: &TileType, along: &str, blocks: i64, exact: bool) -> Result<(), String> {
    if exact && scales.shape != [blocks, 1] {
        return Err(format!("the {along} scales must be {blocks}x1, one per {SCALE_BLOCK_N} {along}s"));
    }
    if !exact && (scales.shape.len() != 2 || scales.shape[1] != 1 || scales.shape[0] < blocks) {
        return Err(format!("with an offset, the {along} scales must be at least {blocks}x1, one per {SCALE_BLOCK_N} {along}s from any offset"));
    }
    if scales.layout.as_ref().is_none_or(Layout::is_shared) {
        return Err(format!("the {along} scales need a distributed (register) layout"));
    }
    Ok(())
}

/// `%r:2 = nv.wgmma_wait 1, %d0, %d1`: its results are its operands, now
/// safe to read.
pub(super) fn verify_wgmma_wait(body: &Body, op: Op) -> Result<(), String> {
    match WgmmaWait::of(body, op).map(|w| w.pending(body)) {
        Some(n) if (0..=7).contains(&n) => Ok(()),
        _ => Err("'pending' must be from 0 to 7".into()),
    }
}
