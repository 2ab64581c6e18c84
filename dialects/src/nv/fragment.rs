//! Register fragments read from shared memory: `nv.load_fragment` loads a
//! buffer stage into the registers of a dot operand, for an `nv.wgmma`
//! whose A comes from registers (Gluon's `a_smem.load(DotOperandLayout)`).

use super::LoadFragment;
use crate::ir::{Body, Layout, Op};

/// `%a = nv.load_fragment %a_smem[%s] : !nv.smem<SxMxKxT, #tile.nvmma_shared<...>> -> tensor<MxKxT, #tile.dot_operand<op_idx = 0, ...>>`
///
/// Every thread of the warpgroups holding the parent MMA layout reads its
/// part of stage `%s` into registers, in the dot-operand layout wgmma reads
/// A from. It reads shared memory, so it is ordered like any other access
/// (not pure): it must follow the barrier wait that makes the stage valid.
pub(super) fn verify_load_fragment(body: &Body, op: Op) -> Result<(), String> {
    let load = LoadFragment::of(body, op).ok_or("malformed 'nv.load_fragment'")?;
    let Some(smem) = body.value_type(load.buffer(body)).as_smem() else {
        return Err("the source must be a '!nv.smem' buffer".into());
    };
    if let Some(s) = body.constant_int(load.stage(body)) {
        if !(0..smem.stages).contains(&s) {
            return Err(format!("stage {s} is outside the buffer's {} stage(s)", smem.stages));
        }
    }
    if !matches!(smem.tile.layout, Some(Layout::NvmmaShared { transposed: false, .. })) {
        return Err("the buffer needs a K-major '#tile.nvmma_shared' layout (not transposed)".into());
    }
    let Some(to) = body.value_type(load.result(body)).as_tile() else { return Err("the result must be a tile".into()) };
    check_a_fragment_layout(to.layout.as_ref(), to.elem.bits())?;
    if to.shape != smem.tile.shape || to.elem != smem.tile.elem {
        return Err("the result must have the buffer stage's shape and element type".into());
    }
    Ok(())
}

/// Checks that `layout` is a layout wgmma reads A from registers in: a
/// `#tile.dot_operand` of operand 0, 32 bits of elements per register,
/// whose parent is an MMA v3 layout.
pub fn check_a_fragment_layout(layout: Option<&Layout>, elem_bits: u32) -> Result<(), String> {
    let Some(Layout::DotOperand { op_idx, k_width, parent }) = layout else {
        return Err("A in registers needs a '#tile.dot_operand' layout".into());
    };
    if *op_idx != 0 {
        return Err(format!("wgmma reads only operand A from registers, but the layout has op_idx = {op_idx}"));
    }
    if *k_width * elem_bits != 32 {
        return Err(format!("k_width must be {} (32 bits of {elem_bits}-bit elements per register), found {k_width}", 32 / elem_bits.max(1)));
    }
    if !matches!(**parent, Layout::Mma { version: 3, .. }) {
        return Err("the dot-operand layout's parent must be a version 3 '#tile.mma' layout".into());
    }
    Ok(())
}
