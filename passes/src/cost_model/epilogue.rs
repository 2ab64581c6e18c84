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
    /// Of `lane_ops`, those on the tile after its conversion from the
    /// accumulator (an FP8 quantisation's absmax, scaling and codes): the
    /// deferred epilogue runs them, with the stores, beside the next
    /// tile's K loop (`tile-defer-epilogue`).
    pub deferrable_lane_ops: i64,
    /// Of `sfu_ops`, those after the conversion.
    pub deferrable_sfu_ops: i64,
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

    /// Whether the deferred epilogue would move work of the epilogue's,
    /// not only its stores, beside the next tile's K loop.
    pub fn defers_work(&self) -> bool {
        self.deferrable_lane_ops > 0 || self.deferrable_sfu_ops > 0
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
        // Work after the first conversion (the accumulator's) is what the
        // deferred epilogue moves beside the next tile's K loop.
        let deferrable = conversions > 0;
        let (lane, sfu) = 'op: {
            let on_tiles = body.ops[op].results.iter().any(|&r| body.value_type(r).as_tile().is_some());
            let opcode = body.opcode(op);
            let operands_uniform = body.ops[op].operands.iter().all(|v| uniform.contains(v));
            if on_tiles && (opcode == Opcode::TileConstant || opcode == Opcode::TileReduce || (body.ops[op].def.traits.elementwise && operands_uniform)) {
                uniform.extend(body.ops[op].results.iter().copied());
                // A reduction folds each element into its thread's partial result.
                break 'op (i64::from(opcode == Opcode::TileReduce), 0);
            }
            if on_tiles && opcode == Opcode::TileLoad {
                w.read_bytes += body.ops[op].results.iter().filter_map(|&r| body.value_type(r).as_tile()).map(|t| i64::from(t.elem.bits() / 8)).sum::<i64>();
                break 'op (0, 0);
            }
            if !on_tiles || !body.ops[op].def.traits.elementwise {
                break 'op (0, 0);
            }
            match opcode {
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
            }
        };
        w.lane_ops += lane;
        w.sfu_ops += sfu;
        if deferrable {
            w.deferrable_lane_ops += lane;
            w.deferrable_sfu_ops += sfu;
        }
    }
    if conversions > 0 {
        w.lane_ops -= 1;
    }
    w
}
