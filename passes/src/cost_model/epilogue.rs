//! The work an epilogue adds to each output element, beyond the plain
//! GEMM's conversion to C's type: what config selection weighs for a
//! program whose accumulator passes through element-wise ops (a bias, an
//! activation) before its store.
//!
//! A tile loaded in the epilogue (a residual) adds its element's bytes.
//! The counts follow the lowering (`lower/src/math.rs`): a transcendental
//! function is one special-function-unit instruction (`ex2.approx`,
//! `tanh.approx`, `rsqrt.approx`), erf a rational fit of some twenty
//! CUDA-core ops around one, an IEEE division about eight, and a sum fused
//! with the product it alone reads nothing beyond the product.

use tilec_dialects::ir::{Body, EntityRef};
use tilec_dialects::registry::Opcode;
use tilec_dialects::ir::Op;
use tilec_dialects::Function;

/// Per output element, what the epilogue's ops cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EpilogueWork {
    /// CUDA-core instructions (adds, multiplies, conversions, selects).
    pub lane_ops: i64,
    /// Special-function-unit instructions.
    pub sfu_ops: i64,
    /// Bytes read from global memory (a residual's element).
    pub read_bytes: i64,
}

impl std::fmt::Display for EpilogueWork {
    /// `6 CUDA-core and 1 SFU instructions and 2 bytes read an output element`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} CUDA-core and {} SFU instructions", self.lane_ops, self.sfu_ops)?;
        if self.read_bytes > 0 {
            write!(f, " and {} bytes read", self.read_bytes)?;
        }
        f.write_str(" an output element")
    }
}

impl EpilogueWork {
    /// No work beyond the conversion: a plain GEMM's.
    pub fn is_plain(&self) -> bool {
        *self == EpilogueWork::default()
    }
}

/// The work of `ops`, the ops of `f` between its K loop and its store, on
/// one output element; the one conversion that a plain GEMM has too (the
/// accumulator's to C's type) is not counted.
pub fn work(f: &Function, ops: &[Op]) -> EpilogueWork {
    let body: &Body = &f.body;
    let uses = body.use_counts(f.region);
    // A sum with a product only it reads becomes one FFMA with it (the
    // lowering lets products contract into sums).
    let fused_product = |v: tilec_dialects::ir::Value| {
        body.defining_op(v).is_some_and(|d| body.opcode(d) == Opcode::TileMulf && uses[v.index()] == 1)
    };
    // Values the same at every column of a group (a `tile.reduce`'s result,
    // constants, and what is computed from them alone, like a quantisation's
    // scale): the lowering computes them once a group, not an element.
    let mut uniform: std::collections::HashSet<tilec_dialects::ir::Value> = std::collections::HashSet::new();
    let mut w = EpilogueWork::default();
    let mut conversions = 0;
    for &op in ops {
        let on_tiles = body.ops[op].results.iter().any(|&r| body.value_type(r).as_tile().is_some());
        let opcode = body.opcode(op);
        let operands_uniform = body.ops[op].operands.iter().all(|v| uniform.contains(v));
        if on_tiles && (opcode == Opcode::TileConstant || opcode == Opcode::TileReduce || (body.ops[op].def.traits.elementwise && operands_uniform)) {
            uniform.extend(body.ops[op].results.iter().copied());
            if opcode == Opcode::TileReduce {
                // Each element folded into its thread's partial result.
                w.lane_ops += 1;
            }
            continue;
        }
        if on_tiles && body.opcode(op) == Opcode::TileLoad {
            w.read_bytes += body.ops[op].results.iter().filter_map(|&r| body.value_type(r).as_tile()).map(|t| i64::from(t.elem.bits() / 8)).sum::<i64>();
            continue;
        }
        if !on_tiles || !body.ops[op].def.traits.elementwise {
            continue;
        }
        let (lane, sfu) = match body.opcode(op) {
            Opcode::TileTruncf => {
                conversions += 1;
                (1, 0)
            }
            Opcode::TileExp => (1, 1),
            Opcode::TileTanh | Opcode::TileRsqrt => (0, 1),
            Opcode::TileErf => (20, 1),
            Opcode::TileDivf => (8, 0),
            Opcode::TileAddf | Opcode::TileSubf if body.ops[op].operands.iter().any(|&v| fused_product(v)) => (0, 0),
            _ => (1, 0),
        };
        w.lane_ops += lane;
        w.sfu_ops += sfu;
    }
    if conversions > 0 {
        w.lane_ops -= 1;
    }
    w
}
