//! `nv.wgmma` -> `nvvm.wgmma.mma_async` instructions with shared-memory
//! matrix descriptors computed from the buffers' NVMMA layouts.
//!
//! Descriptor (PTX ISA "Matrix Descriptor Format", 64 bits): bits 0-13 the
//! start address shifted right by 4, bits 16-29 the leading-dimension byte
//! offset (LBO) shifted by 4, bits 32-45 the stride-dimension byte offset
//! (SBO) shifted by 4, bits 49-51 a base offset of 0 (buffers are 1024-byte
//! aligned and every operand starts on a swizzle pattern boundary), bits
//! 62-63 the swizzle mode (1 = 128 B, 2 = 64 B, 3 = 32 B, 0 = none).
//!
//! With the buffer layout of [`SmemGeom`] (`[column blocks][rows][span]`,
//! span = swizzle width or 16 bytes) the canonical layouts of the PTX ISA
//! ("Canonical Layouts", in 16-byte units T) give:
//!
//! | operand    | swizzle | SBO                          | LBO                               |
//! |------------|---------|------------------------------|-----------------------------------|
//! | K-major    | yes     | 8 * span (next 8 rows)       | unused (1)                        |
//! | K-major    | none    | 128 (next 8 rows)            | rows * 16 (next 16 bytes of K)    |
//! | MN-major   | yes     | 8 * span (next 8 K rows)     | rows * span (next span of MN)     |
//! | MN-major   | none    | rows * 16 (next 8 MN elems)  | 128 (next 8 K rows)               |
//!
//! A k step of a K-major operand adds its byte offset inside the swizzled
//! row to the start address (the hardware swizzles the final address); an
//! MN-major operand's k step moves down `instr_k` rows.
//!
//! A may instead be in registers (`nv.load_fragment`, see `ldmatrix.rs`):
//! each instruction then takes the four registers of its m64 x k block.

use super::emitter::Emitter;
use super::fragment::{Frag, FragGeom};
use super::ldmatrix::{self, AFrag};
use super::plan::{error, Buffer};
use tilec_dialects::registry::Opcode;
use tilec_dialects::{Diagnostic, ElemType, Location};

/// The op whose lowering this is, named in its errors.
const WGMMA: Opcode = Opcode::NvWgmma;

/// One wgmma operand in shared memory: a buffer, or a row window of one
/// (which keeps the buffer's layout and strides).
pub(crate) struct Operand<'a> {
    pub buffer: &'a Buffer,
    /// Rows of the operand (fewer than the buffer's in a window).
    pub rows: i64,
    /// The window's byte offset in each column block (`i32`), if any.
    pub row_offset: Option<String>,
    /// The stage index (`i32` SSA value).
    pub stage: String,
    /// K is the contiguous dimension of the stored tile.
    pub k_major: bool,
}

fn swizzle_mode(swizzle: i64) -> i64 {
    match swizzle {
        128 => 1,
        64 => 2,
        32 => 3,
        _ => 0,
    }
}

/// The constant high part of an operand's descriptor (LBO, SBO, swizzle).
fn descriptor_bits(buffer: &Buffer, k_major: bool) -> i64 {
    let g = &buffer.geom;
    let span = g.span();
    let (sbo, lbo) = match (k_major, g.swizzle != 0) {
        (true, true) => (8 * span, 16),
        (true, false) => (128, g.rows * 16),
        (false, true) => (8 * span, g.rows * span),
        (false, false) => (g.rows * 16, 128),
    };
    (swizzle_mode(g.swizzle) << 62) | (((sbo >> 4) & 0x3FFF) << 32) | (((lbo >> 4) & 0x3FFF) << 16)
}

fn nvvm_type(e: ElemType) -> Option<&'static str> {
    match e {
        ElemType::BF16 => Some("bf16"),
        ElemType::F16 => Some("f16"),
        ElemType::F8E4M3FN => Some("e4m3"),
        _ => None,
    }
}

/// Checks an operand against the instruction shape; returns its M (or N)
/// extent and K extent.
fn check_operand(op: &Operand<'_>, name: &str, loc: &Location, instr_k: i64) -> Result<(i64, i64), Diagnostic> {
    let g = &op.buffer.geom;
    let (mn, k) = if op.k_major { (op.rows, g.cols) } else { (g.cols, op.rows) };
    if k % instr_k != 0 {
        return Err(error(loc, WGMMA.name(), format!("{name}'s K extent {k} is not a multiple of the instruction K {instr_k}")));
    }
    Ok((mn, k))
}

/// `(desc_base16 + (offset + stage * stage_bytes + row_offset) / 16) | bits`:
/// the descriptor of the operand's origin in its stage (as i64).
fn stage_descriptor(em: &mut Emitter, op: &Operand<'_>, smem16: &str, hint: &str) -> String {
    let b = op.buffer;
    let stage64 = em.assign("stage64", format!("arith.extui {} : i32 to i64", op.stage));
    let per_stage = em.i64(b.geom.stage_bytes() / 16);
    let stage_off = em.binop("stage_off", "arith.muli", &stage64, &per_stage, "i64");
    let base = em.add_const("desc", smem16, b.offset / 16 + descriptor_bits(b, op.k_major), "i64");
    let desc = em.binop(hint, "arith.addi", &base, &stage_off, "i64");
    let Some(row_offset) = &op.row_offset else { return desc };
    // A multiple of 8 rows: whole 16-byte units, and the swizzle phase (base offset 0) is kept.
    let c4 = em.i32(4);
    let units = em.binop("row_units", "arith.shrui", row_offset, &c4, "i32");
    let units64 = em.assign("row_units64", format!("arith.extui {units} : i32 to i64"));
    em.binop(hint, "arith.addi", &desc, &units64, "i64")
}

/// Where one `nv.wgmma` reads A.
pub(crate) enum AOperand<'a> {
    Smem(Operand<'a>),
    /// A register tile loaded by `nv.load_fragment`.
    Regs(&'a AFrag),
}

/// What the first k step of an `nv.wgmma` does with the accumulator it is given.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Init {
    /// Adds to it (scale-d = 1).
    Accumulate,
    /// Ignores it (scale-d = 0) and takes undefined registers, so nothing
    /// is copied in before it: the accumulator is a zero splat.
    Zero,
    /// Ignores it (scale-d = 0) but takes its registers: a partial nothing
    /// reads any more, whose registers the result reuses.
    ZeroInPlace,
}

/// Emits the wgmma instructions of one `nv.wgmma`: for each k step, each
/// m64 block of this warpgroup and each n block, one
/// `wgmma.mma_async.m64nNkK`. Returns the updated accumulator.
#[allow(clippy::too_many_arguments)]
pub(crate) fn lower(
    em: &mut Emitter,
    loc: &Location,
    a: &AOperand<'_>,
    b: &Operand<'_>,
    acc: &Frag,
    init: Init,
    smem16: &str,
    wg: Option<&str>,
) -> Result<Frag, Diagnostic> {
    let geom: &FragGeom = &acc.geom;
    let elem = b.buffer.geom.elem;
    let Some(ab_ty) = nvvm_type(elem) else {
        return Err(error(loc, WGMMA.name(), format!("'{}' operands are not supported by the lowering", elem.mnemonic())));
    };
    if acc.elem != ElemType::F32 {
        return Err(error(loc, WGMMA.name(), "only f32 accumulators are supported by the lowering"));
    }
    let instr_k = geom.instr_k;
    if instr_k * b.buffer.geom.elem_bytes() != 32 {
        return Err(error(loc, WGMMA.name(), format!("instruction K {instr_k} does not cover 32 bytes of '{}'", elem.mnemonic())));
    }
    if elem == ElemType::F8E4M3FN && !b.k_major {
        return Err(error(loc, WGMMA.name(), "8-bit wgmma needs a K-major B ('transpose_b')"));
    }
    let (m, k) = match a {
        AOperand::Smem(a) => {
            if !a.k_major {
                return Err(error(loc, WGMMA.name(), "an M-major A ('transpose_a') is not supported by the lowering"));
            }
            check_operand(a, "A", loc, instr_k)?
        }
        AOperand::Regs(a) => {
            if a.elem != elem || a.geom.instr_k != instr_k || a.geom.warpgroups != geom.warpgroups {
                return Err(error(loc, WGMMA.name(), "A's registers do not match B's element type or the accumulator's MMA layout"));
            }
            (64 * a.geom.warpgroups * a.geom.m_blocks, a.geom.k_steps * instr_k)
        }
    };
    let (n, kb) = check_operand(b, "B", loc, instr_k)?;
    if k != kb || m != geom.rows || n != geom.cols {
        return Err(error(loc, WGMMA.name(), format!("A ({m}x{k}), B ({kb}x{n}) and the accumulator ({}x{}) do not match", geom.rows, geom.cols)));
    }
    let bg = &b.buffer.geom;
    if !b.k_major && (geom.instr_n * bg.elem_bytes()) % bg.span() != 0 {
        return Err(error(
            loc,
            WGMMA.name(),
            format!("instruction N {} does not cover whole {}-byte swizzle spans of the MN-major B", geom.instr_n, bg.span()),
        ));
    }

    let desc_a = match a {
        AOperand::Smem(a) => {
            let mut desc_a = stage_descriptor(em, a, smem16, "desc_a");
            if let Some(wg) = wg {
                // Warpgroup wg's m64 blocks start 64 * wg rows further down A.
                let wg64 = em.assign("wg64", format!("arith.extui {wg} : i32 to i64"));
                let per_wg = em.i64(a.buffer.geom.offset_of(64, 0) / 16);
                let off = em.binop("wg_off", "arith.muli", &wg64, &per_wg, "i64");
                desc_a = em.binop("desc_a", "arith.addi", &desc_a, &off, "i64");
            }
            Some(desc_a)
        }
        AOperand::Regs(_) => None,
    };
    let desc_b = stage_descriptor(em, b, smem16, "desc_b");

    let acc_ty = acc.chunk_type(em);
    let b_layout = if b.k_major { "col" } else { "row" };
    let mut chunks = acc.chunks.clone();
    if init == Init::Zero {
        let undef = em.assign("undef", format!("llvm.mlir.undef : {acc_ty}"));
        chunks.iter_mut().for_each(|c| *c = undef.clone());
    }
    for ks in 0..k / instr_k {
        let scale_out = if init != Init::Accumulate && ks == 0 { "zero" } else { "one" };
        let k0 = ks * instr_k;
        for r in 0..geom.m_blocks {
            for nb in 0..geom.n_blocks {
                let n0 = nb * geom.instr_n;
                let b_off = if b.k_major { bg.offset_of(n0, k0) } else { bg.offset_of(k0, n0) };
                let db = em.add_const("db", &desc_b, b_off / 16, "i64");
                let c = &mut chunks[(r * geom.n_blocks + nb) as usize];
                *c = match (a, &desc_a) {
                    (AOperand::Smem(a), Some(desc_a)) => {
                        let a_off = a.buffer.geom.offset_of(geom.block_row(r), k0);
                        let da = em.add_const("da", desc_a, a_off / 16, "i64");
                        em.assign(
                            "acc",
                            format!(
                                "nvvm.wgmma.mma_async {da}, {db}, {c}, #nvvm.shape<m = 64, n = {n}, k = {instr_k}>, \
                                 D [<f32>, #nvvm.wgmma_scale_out<{scale_out}>], A [<{ab_ty}>, #nvvm.wgmma_scale_in<one>, <row>], \
                                 B [<{ab_ty}>, #nvvm.wgmma_scale_in<one>, <{b_layout}>] : {acc_ty} -> {acc_ty}",
                                n = geom.instr_n
                            ),
                        )
                    }
                    (AOperand::Regs(a), _) => {
                        let shape = RsShape { n: geom.instr_n, k: instr_k, ab_ty, trans_b: !b.k_major, accumulate: scale_out == "one" };
                        wgmma_rs(em, &shape, a.chunk(r, ks), &db, c, &acc_ty)
                    }
                    (AOperand::Smem(_), None) => unreachable!("a shared A has a descriptor"),
                };
            }
        }
    }
    Ok(Frag { geom: geom.clone(), elem: acc.elem, chunks })
}

/// One register-A instruction's shape and types.
struct RsShape {
    n: i64,
    k: i64,
    ab_ty: &'static str,
    /// B is MN-major (imm-trans-b = 1).
    trans_b: bool,
    /// Add to the accumulator (scale-d = 1) rather than overwrite it.
    accumulate: bool,
}

/// One `wgmma.mma_async` with A in registers, as inline PTX: MLIR 22's
/// `nvvm.wgmma.mma_async` takes only descriptors. The operands follow the
/// form `convert-nvvm-to-llvm` gives the descriptor variant: N/2 f32
/// outputs tied to the accumulator's values (`=f` / `0..`), then A's four
/// `.b32` registers, then B's descriptor; scale-d is a predicate, set to 1
/// to accumulate and 0 to overwrite, the scales of A and B are 1, and there is no transpose of
/// A (the PTX ISA's register form has no imm-trans-a).
fn wgmma_rs(em: &mut Emitter, s: &RsShape, a: &str, desc_b: &str, acc: &str, acc_ty: &str) -> String {
    let vals = (s.n / 2) as usize;
    let a_ty = ldmatrix::chunk_type(em);
    let mut operands: Vec<String> = (0..vals).map(|i| em.assign("d", format!("llvm.extractvalue {acc}[{i}] : {acc_ty}"))).collect();
    operands.extend((0..4).map(|i| em.assign("a", format!("llvm.extractvalue {a}[{i}] : {a_ty}"))));
    operands.push(desc_b.to_string());
    let mut types = vec!["f32"; vals];
    types.extend(["i32"; 4]);
    types.push("i64");
    let outs: Vec<String> = (0..vals).map(|i| format!("${i}")).collect();
    let a_regs: Vec<String> = (0..4).map(|i| format!("${}", 2 * vals + i)).collect();
    let asm = format!(
        "{{\\0A.reg .pred p;\\0Asetp.ne.b32 p, {d}, 0;\\0Awgmma.mma_async.sync.aligned.m64n{n}k{k}.f32.{t}.{t} {{{outs}}}, {{{a_regs}}}, ${desc}, p, 1, 1, {tb};\\0A}}\\0A",
        n = s.n,
        k = s.k,
        t = s.ab_ty,
        outs = outs.join(", "),
        a_regs = a_regs.join(", "),
        desc = 2 * vals + 4,
        tb = u8::from(s.trans_b),
        d = u8::from(s.accumulate),
    );
    let mut constraints: Vec<String> = vec!["=f".to_string(); vals];
    constraints.extend((0..vals).map(|i| i.to_string()));
    constraints.extend(["r", "r", "r", "r", "l"].map(String::from));
    em.assign(
        "acc",
        format!(
            "llvm.inline_asm has_side_effects asm_dialect = att \"{asm}\", \"{}\" {} : ({}) -> {acc_ty}",
            constraints.join(","),
            operands.join(", "),
            types.join(", ")
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::SmemGeom;

    fn buf(rows: i64, cols: i64, swizzle: i64) -> Buffer {
        Buffer { offset: 0, stages: 1, geom: SmemGeom { rows, cols, elem: ElemType::BF16, swizzle } }
    }

    #[test]
    fn k_major_128b_matches_the_hand_written_kernel() {
        // docs/backend.md: (1 << 62) | (64 << 32) | (1 << 16).
        assert_eq!(descriptor_bits(&buf(128, 64, 128), true), 0x4000_0040_0001_0000);
    }

    #[test]
    fn k_major_64b_and_32b() {
        assert_eq!(descriptor_bits(&buf(128, 32, 64), true), (2 << 62) | (32 << 32) | (1 << 16));
        assert_eq!(descriptor_bits(&buf(128, 16, 32), true), (3 << 62) | (16 << 32) | (1 << 16));
    }

    #[test]
    fn interleaved_and_mn_major() {
        // K-major, no swizzle: SBO 128 B, LBO = rows * 16 B.
        assert_eq!(descriptor_bits(&buf(128, 64, 0), true), (8 << 32) | (128 << 16));
        // MN-major 128 B: SBO = 1024 B (8 K rows), LBO = 64 rows * 128 B.
        assert_eq!(descriptor_bits(&buf(64, 128, 128), false), (1 << 62) | (64 << 32) | (512 << 16));
        // MN-major, no swizzle: SBO = rows * 16, LBO = 128.
        assert_eq!(descriptor_bits(&buf(64, 128, 0), false), (64 << 32) | (8 << 16));
    }

    #[test]
    fn operand_offsets() {
        let a = buf(128, 64, 128).geom;
        assert_eq!(a.offset_of(64, 0), 8192);
        assert_eq!(a.offset_of(0, 16), 32);
        let b = buf(64, 128, 128).geom; // K x N, N contiguous: two 64-column blocks
        assert_eq!(b.offset_of(16, 0), 16 * 128);
        assert_eq!(b.offset_of(0, 64), 64 * 128);
        let none = buf(128, 64, 0).geom; // 8 blocks of 8 columns
        assert_eq!(none.offset_of(0, 16), 2 * 128 * 16);
        assert_eq!(none.offset_of(64, 0), 64 * 16);
    }
}
