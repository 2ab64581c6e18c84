//! `tile-persistent{group=G}`: one CTA per SM loops over the output tiles
//! (seed 002's step 6). The kernel body becomes the body of
//! `tile.for %t = block_id to num_tiles step num_blocks`, and the tile's
//! coordinates come from grouped rasterisation: G tiles down M, then across
//! N, so consecutive CTAs share A rows and B columns in L2 (the order CUTLASS
//! and TIRx use). The function gets `grid = "sms"`: the launcher starts one
//! CTA per SM.

use crate::options::{OptionKind, OptionSpec};
use crate::phase::{Phase, PhaseRule};
use crate::registry::PassInfo;
use crate::{op_error, Pass};
use tilec_dialects::ir::{Attribute, Attributes, Body, Builder, InsertPoint, Op, Type, Value};
use tilec_dialects::tile::{Addi, BlockId, Ceildivsi, Dim, Divsi, For, Minsi, Muli, NumBlocks, Remsi, Store, Subi, Yield};
use tilec_dialects::{Diagnostic, Function};

/// `tile-persistent`'s registration: name, options, phases and constructor.
pub const INFO: PassInfo = PassInfo {
    name: "tile-persistent",
    summary: "Loop one CTA per SM over output tiles in grouped (L2-friendly) order",
    options: &[OptionSpec {
        name: "group",
        kind: OptionKind::Int { min: 1, max: 64 },
        default: "8",
        help: "tiles along M in one rasterisation group",
    }],
    phases: PhaseRule { needs: Phase::Tile..=Phase::TileLayouts, leaves: None, reason: "pipelined and warp-specialised K loops count their barrier phases from the kernel's start, so the loop over tiles must exist before they are scheduled (run tile-persistent before tile-pipeline and tile-warp-specialize)" },
    create: |options| Box::new(Persistent { group: options.int("group") }),
};

/// The `tile-persistent` pass with its options resolved.
pub struct Persistent {
    group: i64,
}

impl Pass for Persistent {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn run(&mut self, func: &mut Function) -> Result<(), Diagnostic> {
        if func.attrs.get("grid").and_then(Attribute::as_str) == Some("sms") {
            return Ok(());
        }
        let entry = func.entry_block();
        let body = &mut func.body;
        let block_id = |dim: i64| {
            body.blocks[entry].ops.iter().copied().find(|&o| BlockId::of(body, o).is_some_and(|b| b.dim(body) == dim))
        };
        let (Some(bid_m), Some(bid_n)) = (block_id(0), block_id(1)) else {
            return Err(Diagnostic::error(func.loc.clone(), format!("'@{}' has no 'tile.block_id x' and 'y' in its body to make persistent", func.name)));
        };
        let (pid_m, pid_n) = (body.result(bid_m, 0), body.result(bid_n, 0));
        let store = output_store(body, func.region, pid_m, pid_n)?;
        let (tensor, tile_shape) = (store.tensor(body), body.value_type(store.value(body)).as_tile().expect("verified").shape.clone());

        // Everything but the terminator moves into the loop over tiles.
        let work: Vec<Op> = body.blocks[entry].ops.iter().copied().filter(|&o| !body.ops[o].def.traits.terminator).collect();
        let terminator = body.terminator(entry).expect("verified function");
        let loc = body.ops[store.op()].loc.clone();
        let mut b = Builder::new(body, InsertPoint::Before(terminator), loc.clone());
        let tiles_m = tile_count(&mut b, tensor, 0, tile_shape[0]);
        let tiles_n = tile_count(&mut b, tensor, 1, tile_shape[1]);
        let num_tiles = Muli::build(&mut b, tiles_m, tiles_n, Attributes::new()).result(b.body);
        let num_tiles = b.name(num_tiles, "num_tiles");
        let first = BlockId::build(&mut b, 0, Attributes::new()).result(b.body);
        let grid = NumBlocks::build(&mut b, 0, Attributes::new()).result(b.body);
        let grid = b.name(grid, "grid");
        let tile_loop = For::build(&mut b, first, num_tiles, grid, &[], &[], Attributes::new());
        let (_, loop_block) = b.body.add_region(tile_loop.op(), &[Type::INDEX]);
        let t = b.body.blocks[loop_block].args[0];
        b.name(t, "tile");

        let mut lb = Builder::new(body, InsertPoint::End(loop_block), loc);
        let (m, n) = grouped_coords(&mut lb, t, tiles_m, tiles_n, self.group);
        let yield_op = Yield::build(&mut lb, &[], Attributes::new()).op();
        for op in work {
            body.remove_op(op);
            body.insert_op_before(yield_op, op);
        }
        body.replace_all_uses(func.region, pid_m, m);
        body.replace_all_uses(func.region, pid_n, n);
        body.remove_op(bid_m);
        body.remove_op(bid_n);
        func.attrs.set("grid", Attribute::String("sms".into()));
        Ok(())
    }
}

/// The store of the output tile at (`pid_m`, `pid_n`): its tensor and tile
/// shape give the number of tiles.
fn output_store(body: &Body, region: tilec_dialects::Region, pid_m: Value, pid_n: Value) -> Result<Store, Diagnostic> {
    let stores: Vec<Store> = body.walk_region(region).into_iter().filter_map(|o| Store::of(body, o)).collect();
    match stores.iter().copied().find(|s| s.indices(body) == [pid_m, pid_n]) {
        Some(s) => Ok(s),
        None => match stores.first() {
            Some(s) => Err(op_error(body, s.op(), "does not store at (block_id x, block_id y): tile-persistent cannot tell the output tiles".into())),
            None => Err(Diagnostic::error(body.ops[body.defining_op(pid_m).expect("op result")].loc.clone(), "tile-persistent needs a tile.store of the output tile")),
        },
    }
}

/// ceil(dim / extent): tiles along one dimension of `tensor`.
fn tile_count(b: &mut Builder<'_>, tensor: Value, dim: i64, extent: i64) -> Value {
    let size = Dim::build(b, tensor, dim, Attributes::new()).result(b.body);
    let e = b.index(extent);
    let count = Ceildivsi::build(b, size, e, Attributes::new()).result(b.body);
    b.name(count, if dim == 0 { "tiles_m" } else { "tiles_n" })
}

/// Tile `t`'s (m, n) in grouped order: groups of `group` tile rows; within a
/// group, down M first, then across N.
fn grouped_coords(b: &mut Builder<'_>, t: Value, tiles_m: Value, tiles_n: Value, group: i64) -> (Value, Value) {
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
