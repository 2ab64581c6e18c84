//! Row windows of shared buffers (`nv.smem_rows`): which buffer, how many
//! rows, and from which row, as wgmma descriptors and TMA copies use them.
//!
//! A buffer stage is `[column blocks][rows][span]` (see [`super::plan::SmemGeom`]),
//! so rows `[r, r + R)` are, in every column block, the `R * span` bytes
//! from `r * span`: the window keeps the buffer's strides (column block,
//! stage) and moves its origin by `r * span` bytes. With `r` a multiple of 8
//! that is a multiple of `8 * span`, the period of every swizzle pattern
//! (1024 bytes at 128 B), so the hardware's swizzle, which it derives from
//! absolute shared addresses, still lines up with what TMA wrote.

use super::emitter::Emitter;
use super::plan::{error, Buffer};
use tilec_dialects::ir::{Body, Op};
use tilec_dialects::registry::Opcode;
use tilec_dialects::{tile, Attribute, Diagnostic, Value};

/// Rows in one swizzle atom: a window must start at a multiple of it.
const ATOM_ROWS: i64 = 8;

/// A shared buffer, or a row window of one, as the lowering holds it.
#[derive(Clone, Debug)]
pub(crate) struct SmemRef {
    /// The `nv.alloc_smem` result (key of `Plan::buffers`).
    pub buffer: Value,
    /// Rows of the window (the buffer's rows when it is the whole buffer).
    pub rows: i64,
    /// The window's byte offset inside each column block of a stage
    /// (`i32` SSA value, first row * span); `None` for the whole buffer.
    pub row_offset: Option<String>,
}

impl SmemRef {
    pub fn whole(buffer: Value, rows: i64) -> SmemRef {
        SmemRef { buffer, rows, row_offset: None }
    }
}

/// Checks that the first row `row` (`row_name` lowered) of `nv.smem_rows`
/// (operation `op`) is provably a multiple of 8 and returns the window of
/// `rows` rows of `parent`, a view of `buffer`.
pub(crate) fn window(
    em: &mut Emitter,
    body: &Body,
    op: Op,
    parent: &SmemRef,
    buffer: &Buffer,
    (row, row_name): (Value, String),
    rows: i64,
) -> Result<SmemRef, Diagnostic> {
    // A narrow buffer is stored densely, unswizzled: any row starts a window.
    let m = known_multiple(body, row);
    if m != 0 && m % ATOM_ROWS != 0 && !buffer.geom.is_narrow() {
        let data = &body.ops[op];
        return Err(error(
            &data.loc,
            data.def.name,
            format!(
                "the first row is only known to be a multiple of {m}; it must be a multiple of {ATOM_ROWS} \
                 (one swizzle atom, 1024 bytes at 128-byte swizzle) for wgmma and TMA to agree on the swizzle"
            ),
        ));
    }
    let span = em.i32(buffer.geom.span());
    let mut offset = em.binop("row_off", "arith.muli", &row_name, &span, "i32");
    if let Some(outer) = &parent.row_offset {
        offset = em.binop("row_off", "arith.addi", outer, &offset, "i32");
    }
    Ok(SmemRef { buffer: parent.buffer, rows, row_offset: Some(offset) })
}

/// The largest factor `v` is known to have from its definition (constants,
/// products, sums); 0 for a known zero (a multiple of everything).
fn known_multiple(body: &Body, v: Value) -> i64 {
    let Some(op) = body.defining_op(v) else { return 1 };
    if tile::Constant::of(body, op).is_some() {
        return match body.ops[op].attrs.get("value") {
            Some(Attribute::Int(c, _)) => c.abs(),
            _ => 1,
        };
    }
    let Some(bin) = tile::IntBinary::of(body, op) else { return 1 };
    let (lhs, rhs) = (known_multiple(body, bin.lhs(body)), known_multiple(body, bin.rhs(body)));
    match bin.opcode(body) {
        Opcode::TileMuli => lhs.saturating_mul(rhs),
        Opcode::TileAddi | Opcode::TileSubi => tile::arith::gcd(lhs, rhs),
        _ => 1,
    }
}
