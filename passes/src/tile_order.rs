//! The order in which CTAs take output tiles, shared by `tile-persistent`
//! (a loop over tiles from the CTA's id) and `tile-rasterize` (one tile per
//! CTA of a 1-D grid): the output tile store that gives the tile counts,
//! and grouped rasterisation, G tiles down M, then across N, so that the
//! CTAs running at once share rows of A and columns of B in L2 (the order
//! CUTLASS, Triton and TIRx use), optionally as a snake: every other group
//! walks N backwards, so a group starts on the columns of B the last one
//! ended on.

use crate::pass::op_error;
use tilec_dialects::ir::{Attributes, Block, Body, Builder, Op, Value};
use tilec_dialects::tile::{Addi, BlockId, Ceildivsi, Dim, Divsi, Minsi, Muli, Remsi, Store, Subi};
use tilec_dialects::{Diagnostic, Function, Region};

/// How a kernel with one CTA per output tile indexes its tiles: the
/// top-level `tile.block_id`s along x and y (and z, a batch of problems,
/// where the output is batched), the values they give, and the store of
/// the output tile they index, whose tensor and tile shape give the tile
/// counts.
pub struct OutputTiles {
    /// The `tile.block_id x` giving the tile row.
    pub bid_m: Op,
    /// The `tile.block_id y` giving the tile column.
    pub bid_n: Op,
    /// The `tile.block_id z` giving the problem of a batch, if any.
    pub bid_z: Option<Op>,
    /// The tile row.
    pub pid_m: Value,
    /// The tile column.
    pub pid_n: Value,
    /// The problem of a batch, if any.
    pub pid_z: Option<Value>,
    /// The store of the output tile.
    pub store: Store,
    /// The output tensor.
    pub tensor: Value,
    /// Its rank: 2, or 3 when batched.
    pub rank: i64,
    /// The stored tile's rows and columns.
    pub tile_shape: Vec<i64>,
}

impl OutputTiles {
    /// `func`'s output tiles; errors name `pass`, which needs them `purpose`
    /// ("to make persistent").
    pub fn find(pass: &str, purpose: &str, func: &Function) -> Result<OutputTiles, Diagnostic> {
        let body = &func.body;
        let block_id = |dim: i64| block_id_op(body, func.entry_block(), dim);
        let (Some(bid_m), Some(bid_n)) = (block_id(0), block_id(1)) else {
            return Err(Diagnostic::error(func.loc.clone(), format!("'@{}' has no 'tile.block_id x' and 'y' in its body {purpose}", func.name)));
        };
        let bid_z = block_id(2);
        let (pid_m, pid_n) = (body.result(bid_m, 0), body.result(bid_n, 0));
        let pid_z = bid_z.map(|op| body.result(op, 0));
        let store = output_store(pass, body, func.region, pid_z, pid_m, pid_n)?;
        let tensor = store.tensor(body);
        let tile_shape = body.value_type(store.value(body)).as_tile().expect("verified").shape.clone();
        let rank = body.value_type(tensor).as_ref_type().expect("verified").shape.len() as i64;
        Ok(OutputTiles { bid_m, bid_n, bid_z, pid_m, pid_n, pid_z, store, tensor, rank, tile_shape })
    }

    /// ceil(M / BM) and ceil(N / BN), built at `b`, named `tiles_m` and `tiles_n`.
    pub fn counts(&self, b: &mut Builder<'_>) -> (Value, Value) {
        let tiles_m = tile_count(b, self.tensor, self.rank - 2, self.tile_shape[0], "tiles_m");
        let tiles_n = tile_count(b, self.tensor, self.rank - 1, self.tile_shape[1], "tiles_n");
        (tiles_m, tiles_n)
    }
}

/// The `tile.block_id` along grid dimension `dim` (0 = x) among `block`'s
/// ops: the kernel's top level, where the tile coordinates are read.
fn block_id_op(body: &Body, block: Block, dim: i64) -> Option<Op> {
    body.blocks[block].ops.iter().copied().find(|&o| BlockId::of(body, o).is_some_and(|b| b.dim(body) == dim))
}

/// The store of the output tile at (`pid_m`, `pid_n`), or at (`pid_z`,
/// `pid_m`, `pid_n`) in a batched output: its tensor and tile shape give the
/// number of tiles. A store of one value a group of columns (an FP8
/// quantisation's scales) writes a narrower tensor at the same tile
/// coordinates, in whatever order the program lists it: it never gives the
/// counts. Errors name `pass`, the pass that needs it.
fn output_store(pass: &str, body: &Body, region: Region, pid_z: Option<Value>, pid_m: Value, pid_n: Value) -> Result<Store, Diagnostic> {
    let stores: Vec<Store> = body.walk_region(region).into_iter().filter_map(|o| Store::of(body, o)).filter(|s| s.group(body).is_none()).collect();
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
fn tile_count(b: &mut Builder<'_>, tensor: Value, dim: i64, extent: i64, name: &str) -> Value {
    let size = Dim::build(b, tensor, dim, Attributes::new()).result(b.body);
    let e = b.index(extent);
    let count = Ceildivsi::build(b, size, e, Attributes::new()).result(b.body);
    b.name(count, name)
}

/// The order of the tiles within grouped rasterisation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TileOrder {
    /// Every group walks N from its first column.
    Grouped,
    /// Odd groups walk N from its last column back.
    Snake,
}

impl TileOrder {
    /// The option words, in variant order.
    pub const WORDS: &'static [&'static str] = &["grouped", "snake"];

    /// `tile.config`'s `tile_order` words: [`Self::WORDS`] and "grid", a
    /// plain kernel's order (its grid's), which names no `TileOrder`.
    pub const CONFIG_WORDS: &'static [&'static str] = &["grid", "grouped", "snake"];

    /// The order a word of [`Self::WORDS`] names.
    pub fn parse(word: &str) -> TileOrder {
        if word == "snake" {
            TileOrder::Snake
        } else {
            TileOrder::Grouped
        }
    }
}

/// Tile `t`'s (m, n) in grouped order: groups of `group` tile rows; within a
/// group, down M first, then across N (backwards in odd groups of a snake).
pub fn grouped_coords(b: &mut Builder<'_>, t: Value, tiles_m: Value, tiles_n: Value, group: i64, order: TileOrder) -> (Value, Value) {
    let g = b.index(group);
    let in_group = Muli::build(b, g, tiles_n, Attributes::new()).result(b.body);
    let group_id = Divsi::build(b, t, in_group, Attributes::new()).result(b.body);
    let first_m = Muli::build(b, group_id, g, Attributes::new()).result(b.body);
    let rows_left = Subi::build(b, tiles_m, first_m, Attributes::new()).result(b.body);
    let group_m = Minsi::build(b, rows_left, g, Attributes::new()).result(b.body);
    let within = Remsi::build(b, t, in_group, Attributes::new()).result(b.body);
    let dm = Remsi::build(b, within, group_m, Attributes::new()).result(b.body);
    let m = Addi::build(b, first_m, dm, Attributes::new()).result(b.body);
    let mut n = Divsi::build(b, within, group_m, Attributes::new()).result(b.body);
    if order == TileOrder::Snake {
        // n + (group_id % 2) * (tiles_n - 1 - 2n): n in even groups, its mirror in odd ones.
        let one = b.index(1);
        let two = b.index(2);
        let odd = Remsi::build(b, group_id, two, Attributes::new()).result(b.body);
        let last = Subi::build(b, tiles_n, one, Attributes::new()).result(b.body);
        let mirror = Subi::build(b, last, n, Attributes::new()).result(b.body);
        let shift = Subi::build(b, mirror, n, Attributes::new()).result(b.body);
        let shift = Muli::build(b, odd, shift, Attributes::new()).result(b.body);
        n = Addi::build(b, n, shift, Attributes::new()).result(b.body);
    }
    (b.name(m, "pid_m"), b.name(n, "pid_n"))
}
