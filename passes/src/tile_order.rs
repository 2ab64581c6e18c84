//! The order in which CTAs take output tiles, shared by `tile-persistent`
//! (a loop over tiles from the CTA's id) and `tile-rasterize` (one tile per
//! CTA of a 1-D grid): the output tile store that gives the tile counts,
//! and grouped rasterisation, G tiles down M, then across N, so that the
//! CTAs running at once share rows of A and columns of B in L2 (the order
//! CUTLASS, Triton and TIRx use).

use crate::op_error;
use tilec_dialects::ir::{Attributes, Block, Body, Builder, Op, Value};
use tilec_dialects::tile::{Addi, BlockId, Ceildivsi, Dim, Divsi, Minsi, Muli, Remsi, Store, Subi};
use tilec_dialects::{Diagnostic, Region};

/// The `tile.block_id` along grid dimension `dim` (0 = x) among `block`'s
/// ops: the kernel's top level, where the tile coordinates are read.
pub fn block_id_op(body: &Body, block: Block, dim: i64) -> Option<Op> {
    body.blocks[block].ops.iter().copied().find(|&o| BlockId::of(body, o).is_some_and(|b| b.dim(body) == dim))
}

/// The store of the output tile at (`pid_m`, `pid_n`), or at (`pid_z`,
/// `pid_m`, `pid_n`) in a batched output: its tensor and tile shape give the
/// number of tiles. Errors name `pass`, the pass that needs it.
pub fn output_store(pass: &str, body: &Body, region: Region, pid_z: Option<Value>, pid_m: Value, pid_n: Value) -> Result<Store, Diagnostic> {
    let stores: Vec<Store> = body.walk_region(region).into_iter().filter_map(|o| Store::of(body, o)).collect();
    let at_tile = |s: &Store| match (s.indices(body), pid_z) {
        ([m, n], _) => [*m, *n] == [pid_m, pid_n],
        ([z, m, n], Some(pid_z)) => [*z, *m, *n] == [pid_z, pid_m, pid_n],
        _ => false,
    };
    match stores.iter().copied().find(at_tile) {
        Some(s) => Ok(s),
        None => match stores.first() {
            Some(s) => Err(op_error(
                body,
                s.op(),
                format!("does not store at (block_id x, block_id y), or (block_id z, block_id x, block_id y) in a batched output: {pass} cannot tell the output tiles"),
            )),
            None => Err(Diagnostic::error(body.ops[body.defining_op(pid_m).expect("op result")].loc.clone(), format!("{pass} needs a tile.store of the output tile"))),
        },
    }
}

/// ceil(dim / extent): tiles along one dimension of `tensor`, named `name`.
pub fn tile_count(b: &mut Builder<'_>, tensor: Value, dim: i64, extent: i64, name: &str) -> Value {
    let size = Dim::build(b, tensor, dim, Attributes::new()).result(b.body);
    let e = b.index(extent);
    let count = Ceildivsi::build(b, size, e, Attributes::new()).result(b.body);
    b.name(count, name)
}

/// Tile `t`'s (m, n) in grouped order: groups of `group` tile rows; within a
/// group, down M first, then across N.
pub fn grouped_coords(b: &mut Builder<'_>, t: Value, tiles_m: Value, tiles_n: Value, group: i64) -> (Value, Value) {
    let g = b.index(group);
    let in_group = Muli::build(b, g, tiles_n, Attributes::new()).result(b.body);
    let group_id = Divsi::build(b, t, in_group, Attributes::new()).result(b.body);
    let first_m = Muli::build(b, group_id, g, Attributes::new()).result(b.body);
    let rows_left = Subi::build(b, tiles_m, first_m, Attributes::new()).result(b.body);
    let group_m = Minsi::build(b, rows_left, g, Attributes::new()).result(b.body);
    let within = Remsi::build(b, t, in_group, Attributes::new()).result(b.body);
    let dm = Remsi::build(b, within, group_m, Attributes::new()).result(b.body);
    let m = Addi::build(b, first_m, dm, Attributes::new()).result(b.body);
    let n = Divsi::build(b, within, group_m, Attributes::new()).result(b.body);
    (b.name(m, "pid_m"), b.name(n, "pid_n"))
}
