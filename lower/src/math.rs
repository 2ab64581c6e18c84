//! The float functions of `tile.negf`, `tile.absf`, `tile.exp`, `tile.tanh`,
//! `tile.erf` and `tile.rsqrt` on one value.
//!
//! The transcendental ones take f32 (the verifier says so) and use the
//! approximate PTX instructions a GEMM epilogue wants, as CUDA's fast-math
//! intrinsics do: NVPTX has no lowering of LLVM's `exp`, `tanh` or `erf` to
//! instructions, and a libdevice call would need the bitcode linked in.
//! Their errors are well under a bf16 or fp8 result's rounding.

use super::emitter::{float_literal, mlir_type, Emitter};
use tilec_dialects::registry::Opcode;
use tilec_dialects::ElemType;

/// `opcode`'s function of the `elem` value `x`.
pub(crate) fn unary(em: &mut Emitter, opcode: Opcode, x: &str, elem: ElemType) -> String {
    let t = mlir_type(elem);
    match opcode {
        Opcode::TileNegf => em.assign("neg", format!("arith.negf {x} : {t}")),
        Opcode::TileAbsf => abs(em, x, elem),
        Opcode::TileExp => exp(em, x),
        Opcode::TileTanh => ptx_f32(em, "tanh", "tanh.approx.f32", x),
        Opcode::TileRsqrt => ptx_f32(em, "rsqrt", "rsqrt.approx.ftz.f32", x),
        Opcode::TileErf => erf(em, x),
        other => unreachable!("'{}' is not a float function of one value", other.name()),
    }
}

/// One f32 PTX instruction of one operand.
fn ptx_f32(em: &mut Emitter, hint: &str, instruction: &str, x: &str) -> String {
    em.assign(hint, format!("llvm.inline_asm asm_dialect = att \"{instruction} $0, $1;\", \"=f,f\" {x} : (f32) -> f32"))
}

/// The integer type of `elem`'s bits and its sign bit.
fn sign_bit(elem: ElemType) -> (&'static str, i64) {
    if elem.bits() == 16 {
        ("i16", 0x8000)
    } else {
        ("i32", 0x8000_0000)
    }
}

/// |x|: `x` with its sign bit cleared, as PTX's `abs` does (the GPU
/// lowering takes LLVM's `fabs` for a libdevice call).
fn abs(em: &mut Emitter, x: &str, elem: ElemType) -> String {
    let t = mlir_type(elem);
    let (int, sign) = sign_bit(elem);
    let bits = em.assign("bits", format!("arith.bitcast {x} : {t} to {int}"));
    let mask = em.const_int(!sign & ((sign << 1) - 1), int);
    let cleared = em.binop("bits", "arith.andi", &bits, &mask, int);
    em.assign("abs", format!("arith.bitcast {cleared} : {int} to {t}"))
}

/// `magnitude` (not negative) with the sign of the f32 `x`.
fn with_sign_of(em: &mut Emitter, magnitude: &str, x: &str) -> String {
    let (int, sign) = sign_bit(ElemType::F32);
    let bits = em.assign("bits", format!("arith.bitcast {x} : f32 to {int}"));
    let mask = em.const_int(sign, int);
    let sign_of_x = em.binop("sign", "arith.andi", &bits, &mask, int);
    let m = em.assign("bits", format!("arith.bitcast {magnitude} : f32 to {int}"));
    let signed = em.binop("bits", "arith.ori", &m, &sign_of_x, int);
    em.assign("signed", format!("arith.bitcast {signed} : {int} to f32"))
}

fn f32_const(em: &mut Emitter, value: f64) -> String {
    em.assign("k", format!("arith.constant {} : f32", float_literal(value, ElemType::F32)))
}

/// e^x as 2^(x log2 e): `ex2.approx` is the one exponential the SFU has.
fn exp(em: &mut Emitter, x: &str) -> String {
    let log2e = f32_const(em, std::f64::consts::LOG2_E);
    let scaled = em.binop("x2", "arith.mulf", x, &log2e, "f32");
    ptx_f32(em, "exp", "ex2.approx.ftz.f32", &scaled)
}

/// Coefficients of erfc's Chebyshev fit in t = 1 / (1 + |x| / 2), highest
/// power first (W. H. Press et al., Numerical Recipes, 6.2: erfc(z) = t
/// exp(-z^2 + P(t)) with fractional error below 1.2e-7 for every z >= 0).
const ERFC_FIT: [f64; 10] =
    [0.17087277, -0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806, 0.09678418, 0.37409196, 1.00002368, -1.26551223];

/// erf(x) = sign(x) (1 - erfc(|x|)), with erfc from `ERFC_FIT`: an absolute
/// error below 2e-6 with `ex2.approx` inside.
fn erf(em: &mut Emitter, x: &str) -> String {
    let z = abs(em, x, ElemType::F32);
    let one = f32_const(em, 1.0);
    let half = f32_const(em, 0.5);
    let hz = em.binop("hz", "arith.mulf", &z, &half, "f32");
    let den = em.binop("den", "arith.addf", &one, &hz, "f32");
    let t = em.binop("t", "arith.divf", &one, &den, "f32");
    let mut p = f32_const(em, ERFC_FIT[0]);
    for &c in &ERFC_FIT[1..] {
        let k = f32_const(em, c);
        let pt = em.binop("p", "arith.mulf", &p, &t, "f32");
        p = em.binop("p", "arith.addf", &pt, &k, "f32");
    }
    let z2 = em.binop("z2", "arith.mulf", &z, &z, "f32");
    let power = em.binop("pw", "arith.subf", &p, &z2, "f32");
    let e = exp(em, &power);
    let erfc = em.binop("erfc", "arith.mulf", &t, &e, "f32");
    let magnitude = em.binop("erf", "arith.subf", &one, &erfc, "f32");
    with_sign_of(em, &magnitude, x)
}

/// The PTX type of a pair of `elem` values (`e4m3x2`), for the 8-bit
/// floats the tile IR has.
fn f8_pair_type(elem: ElemType) -> &'static str {
    match elem {
        ElemType::F8E4M3FN => "e4m3x2",
        other => unreachable!("'{}' is not an 8-bit float", other.mnemonic()),
    }
}

/// The f32 values `lo` and `hi` rounded to the 8-bit float `elem` (to
/// nearest even, saturating to its largest finite value: PTX's one
/// conversion to them, `cvt.rn.satfinite`), as their `i8` codes. One
/// instruction converts the pair; LLVM has no 8-bit float type, so the
/// lowering holds their codes as `i8`.
pub(crate) fn to_f8_pair(em: &mut Emitter, lo: &str, hi: &str, elem: ElemType) -> [String; 2] {
    // The instruction's first source goes to the upper byte.
    let packed = em.assign(
        "f8x2",
        format!("llvm.inline_asm asm_dialect = att \"cvt.rn.satfinite.{}.f32 $0, $1, $2;\", \"=h,f,f\" {hi}, {lo} : (f32, f32) -> i16", f8_pair_type(elem)),
    );
    let low = em.assign("f8", format!("arith.trunci {packed} : i16 to i8"));
    let eight = em.const_int(8, "i16");
    let shifted = em.binop("f8", "arith.shrui", &packed, &eight, "i16");
    let high = em.assign("f8", format!("arith.trunci {shifted} : i16 to i8"));
    [low, high]
}
