//! `tile-persistent{group=G order=O}`: one CTA per SM loops over the output
//! tiles. The kernel body becomes the body of
//! `tile.for %t = block_id to num_tiles step num_blocks`, and the tile's
//! coordinates come from grouped rasterisation: G tiles down M, then across
//! N, so consecutive CTAs share A rows and B columns in L2 (the order CUTLASS
//! and TIRx use); with `order=snake` every other group walks N backwards
//! (`crate::tile_order`). The function gets `grid = "sms"`: the launcher starts one
//! CTA per SM. A kernel whose output has a leading batch dimension indexed
//! by `tile.block_id z` (a grouped GEMM's expert) walks every batch's tiles
//! in turn, batch-major.
//!
//! Over one GEMM (no batch of outputs, every operand a matrix) the function
//! also gets `wave_tile = [R, C]`, the output a cluster (or a lone CTA)
//! takes each turn of the loop: the launcher then starts the fewest CTAs
//! that keep the busiest one's number of turns (128 for 512 tiles on 132
//! SMs), so every CTA runs as many tiles as the busiest. The makespan in
//! turns is the same, yet most picks whose grid this changes ran faster on
//! the balanced grid than with every SM started and some CTAs a tile short
//! (`docs/ir.md`). A grouped GEMM's experts' weights make its tiles wait on
//! memory, where more CTAs in flight help more than a balanced grid, so it
//! keeps one CTA per SM, as `balanced-grid=false` does (measured:
//! docs/evidence.md, persistent.rs, module documentation).
//!
//! With `cluster-along=m` (or `n`) and `cluster-ctas=C` the loop hands out
//! runs of C tiles that neighbour along M (or N), for clusters of C CTAs
//! that share the other operand (`tile-cluster-split`): the CTAs `Cc` to
//! `Cc + C - 1` (one cluster) walk the same runs, and CTA `Cc + r` takes
//! tile `Ci + r` of each run along the clustered dimension; runs go in
//! grouped order over a grid whose clustered dimension is divided by C
//! (rounded up, so the last run's CTAs may hold tiles past the edge, which
//! load zeros and store nothing).

use crate::config::ConfigEntries;
use crate::options::{OptionKind, OptionSpec};
use crate::cluster::{check_cluster_ctas, Along};
use crate::phase::{Phase, PhaseRule};
use crate::pass::PassInfo;
use crate::tile_order::{grouped_coords, OutputTiles, TileOrder};
use crate::pass::{op_error, Pass};
use tilec_dialects::ir::{Attribute, Attributes, Builder, ElemType, InsertPoint, Op, Type, Value};
use tilec_dialects::tile::{Addi, BlockId, Ceildivsi, Dim, Divsi, For, Muli, NumBlocks, Remsi, Yield};
use tilec_dialects::{Diagnostic, Function};

/// `tile-persistent`'s registration: name, options, phases and constructor.
pub const INFO: PassInfo = PassInfo {
    name: "tile-persistent",
    summary: "Loop one CTA per SM over output tiles in grouped (L2-friendly) order",
    options: &[
        OptionSpec { name: "group", kind: OptionKind::Int { min: 1, max: 64 }, default: "8", help: "tiles along M in one rasterisation group" },
        OptionSpec {
            name: "order",
            kind: OptionKind::Enum(TileOrder::WORDS),
            default: "grouped",
            help: "walk N forwards in every group (grouped) or backwards in every other one (snake) (default: tile.config's tile_order)",
        },
        OptionSpec {
            name: "balanced-grid",
            kind: OptionKind::Bool,
            default: "true",
            help: "over one GEMM, give the launcher the output a cluster takes a turn (wave_tile), so it starts the fewest CTAs that keep the busiest one's turns; false starts one CTA per SM",
        },
        OptionSpec {
            name: "cluster-along",
            kind: OptionKind::Enum(Along::WORDS),
            default: "none",
            help: "hand out runs of tiles neighbouring along m or n to the CTAs of a cluster (default: tile.config's cluster)",
        },
        OptionSpec { name: "cluster-ctas", kind: OptionKind::Int { min: 2, max: 8 }, default: "2", help: "CTAs per cluster, and tiles per run: 2, 4 or 8 (default: tile.config's cluster_ctas)" },
    ],
    phases: PhaseRule { needs: Phase::Tile..=Phase::TileLayouts, leaves: None, reason: "pipelined and warp-specialised K loops count their barrier phases from the kernel's start, so the loop over tiles must exist before they are scheduled (run tile-persistent before tile-pipeline and tile-warp-specialize)" },
    create: |options| {
        Box::new(Persistent {
            group: options.int("group"),
            order: TileOrder::parse(options.word("order")),
            order_from_config: !options.given("order"),
            balanced_grid: options.bool("balanced-grid"),
            along: Along::parse(options.word("cluster-along")),
            along_from_config: !options.given("cluster-along"),
            ctas: options.int("cluster-ctas"),
            ctas_from_config: !options.given("cluster-ctas"),
        })
    },
};

/// The `tile-persistent` pass with its options resolved.
pub struct Persistent {
    group: i64,
    order: TileOrder,
    /// Whether `order` was left out, so `tile.config`'s `tile_order` decides.
    order_from_config: bool,
    /// Whether a loop over one GEMM gets `wave_tile`.
    balanced_grid: bool,
    /// The dimension along which a cluster's CTAs take neighbouring tiles.
    along: Along,
    /// Whether `cluster-along` was left out, so `tile.config`'s `cluster` decides.
    along_from_config: bool,
    /// CTAs per cluster.
    ctas: i64,
    /// Whether `cluster-ctas` was left out, so `tile.config`'s `cluster_ctas` decides.
    ctas_from_config: bool,
}

impl Pass for Persistent {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn run(&mut self, func: &mut Function) -> Result<(), Diagnostic> {
        if func.attrs.get("grid").and_then(Attribute::as_str) == Some("sms") {
            return Ok(());
        }
        // Clusters come after the loop over tiles (tile-cluster-split
        // clusters the tiles it hands out); one already there is split-K's, whose
        // grid z is not a batch of problems.
        if func.attrs.get("cluster_dims").is_some() {
            return Err(Diagnostic::error(func.loc.clone(), "tile-persistent needs a kernel without 'cluster_dims': a split-K kernel (tile-split-k) keeps one CTA per split of a tile, and tile-cluster-split runs after this pass"));
        }
        let config = ConfigEntries::of(func)?;
        // A plain kernel's tile.config says "grid", which keeps the default.
        if let Some(order) = config.tile_order.filter(|_| self.order_from_config) {
            self.order = order;
        }
        if let Some(along) = config.cluster.filter(|_| self.along_from_config) {
            self.along = along;
        }
        if let Some(ctas) = config.cluster_ctas.filter(|_| self.ctas_from_config) {
            self.ctas = ctas;
        }
        check_cluster_ctas(self.ctas).map_err(|m| Diagnostic::error(func.loc.clone(), format!("tile-persistent: {m}")))?;
        let entry = func.entry_block();
        let tiles = OutputTiles::find(INFO.name, "to make persistent", func)?;
        let body = &mut func.body;
        if let (Some(z), Along::M | Along::N) = (tiles.bid_z, self.along) {
            return Err(op_error(body, z, "indexes a batch of problems (grid z): a cluster's runs of tiles cover one problem only".into()));
        }
        let OutputTiles { bid_m, bid_n, bid_z, pid_m, pid_n, pid_z, store, tensor, .. } = tiles;

        // Everything but the terminator moves into the loop over tiles.
        let work: Vec<Op> = body.blocks[entry].ops.iter().copied().filter(|&o| !body.ops[o].def.traits.terminator).collect();
        let terminator = body.terminator(entry).expect("verified function");
        let loc = body.ops[store.op()].loc.clone();
        let mut b = Builder::new(body, InsertPoint::Before(terminator), loc.clone());
        let (tiles_m, tiles_n) = tiles.counts(&mut b);
        let per_batch = Muli::build(&mut b, tiles_m, tiles_n, Attributes::new()).result(b.body);
        let num_tiles = match pid_z {
            Some(_) => {
                let batches = Dim::build(&mut b, tensor, 0, Attributes::new()).result(b.body);
                let batches = b.name(batches, "batches");
                Muli::build(&mut b, per_batch, batches, Attributes::new()).result(b.body)
            }
            None => per_batch,
        };
        let num_tiles = b.name(num_tiles, "num_tiles");
        let block = BlockId::build(&mut b, 0, Attributes::new()).result(b.body);
        let grid = NumBlocks::build(&mut b, 0, Attributes::new()).result(b.body);
        let grid = b.name(grid, "grid");
        // In clusters, the loop walks runs of tiles, one cluster per run.
        let (first, step, count, rank, grid_m, grid_n) = match self.along {
            Along::None => (block, grid, num_tiles, None, tiles_m, tiles_n),
            along => {
                let ctas = b.index(self.ctas);
                let cluster = Divsi::build(&mut b, block, ctas, Attributes::new()).result(b.body);
                let clusters = Divsi::build(&mut b, grid, ctas, Attributes::new()).result(b.body);
                let rank = Remsi::build(&mut b, block, ctas, Attributes::new()).result(b.body);
                let rank = b.name(rank, "run_rank");
                let (grid_m, grid_n) = match along {
                    Along::M => (Ceildivsi::build(&mut b, tiles_m, ctas, Attributes::new()).result(b.body), tiles_n),
                    _ => (tiles_m, Ceildivsi::build(&mut b, tiles_n, ctas, Attributes::new()).result(b.body)),
                };
                let count = Muli::build(&mut b, grid_m, grid_n, Attributes::new()).result(b.body);
                (cluster, clusters, b.name(count, "num_runs"), Some(rank), grid_m, grid_n)
            }
        };
        let tile_loop = For::build(&mut b, first, count, step, &[], &[], Attributes::new());
        let (_, loop_block) = b.body.add_region(tile_loop.op(), &[Type::INDEX]);
        let t = b.body.blocks[loop_block].args[0];
        b.name(t, "tile");

        let mut lb = Builder::new(body, InsertPoint::End(loop_block), loc);
        let (batch, t) = match pid_z {
            Some(_) => {
                let batch = Divsi::build(&mut lb, t, per_batch, Attributes::new()).result(lb.body);
                let within = Remsi::build(&mut lb, t, per_batch, Attributes::new()).result(lb.body);
                (Some(lb.name(batch, "pid_z")), within)
            }
            None => (None, t),
        };
        let group = if self.along == Along::M { (self.group / self.ctas).max(1) } else { self.group };
        let (m, n) = grouped_coords(&mut lb, t, grid_m, grid_n, group, self.order);
        let (m, n) = match (self.along, rank) {
            (Along::M, Some(rank)) => {
                let run = lb.name(m, "run_m");
                (run_member(&mut lb, run, self.ctas, rank, "pid_m"), n)
            }
            (Along::N, Some(rank)) => {
                let run = lb.name(n, "run_n");
                (m, run_member(&mut lb, run, self.ctas, rank, "pid_n"))
            }
            _ => (m, n),
        };
        let yield_op = Yield::build(&mut lb, &[], Attributes::new()).op();
        for op in work {
            body.remove_op(op);
            body.insert_op_before(yield_op, op);
        }
        body.replace_all_uses(func.region, pid_m, m);
        body.replace_all_uses(func.region, pid_n, n);
        body.remove_op(bid_m);
        body.remove_op(bid_n);
        if let (Some(op), Some(pid_z), Some(batch)) = (bid_z, pid_z, batch) {
            body.replace_all_uses(func.region, pid_z, batch);
            body.remove_op(op);
        }
        func.attrs.set("grid", Attribute::String("sms".into()));
        if self.along != Along::None {
            func.attrs.set("cluster_along", Attribute::String(self.along.word().into()));
            func.attrs.set("cluster_ctas", Attribute::Int(self.ctas, ElemType::I64));
        }
        // One GEMM: no batch of outputs, and no operand with more than two
        // dimensions (a grouped GEMM's experts' weights), whose tiles read
        // memory at a rate a smaller grid does not sustain.
        let one_gemm = pid_z.is_none() && func.args().iter().all(|&a| func.body.value_type(a).as_ref_type().is_none_or(|r| r.shape.len() <= 2));
        if self.balanced_grid && one_gemm {
            let [run_m, run_n] = self.along.tiles(self.ctas);
            func.attrs.set("wave_tile", Attribute::ints(&[tiles.tile_shape[0] * run_m, tiles.tile_shape[1] * run_n]));
        }
        Ok(())
    }
}

/// `ctas * run + rank`: the tile of the run at `run` that CTA `rank` of the
/// cluster takes, named `name`.
fn run_member(b: &mut Builder<'_>, run: Value, ctas: i64, rank: Value, name: &str) -> Value {
    let size = b.index(ctas);
    let first = Muli::build(b, run, size, Attributes::new()).result(b.body);
    let tile = Addi::build(b, first, rank, Attributes::new()).result(b.body);
    b.name(tile, name)
}
