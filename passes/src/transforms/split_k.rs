//! `tile-split-k{splits=S reduce=cluster|workspace}`: S CTAs share one
//! output tile, each running an equal share of the K loop, for shapes with
//! too few tiles to fill the GPU and a long K (64 x 2112 x 7168 has 132
//! tiles of 64 x 16, each a long string of short K steps; 512 x 512 x 65536
//! has 16 tiles of 128 x 128). Split s of tile (x, y) is the CTA at
//! (x, y, s) of the grid. The splits add their partial accumulators in the
//! order of s, so the result does not depend on which split finishes first:
//!
//! - `cluster`: the S splits of a tile form one cluster (`cluster_dims =
//!   [1, 1, S]`, which also sets the grid's z extent, S at most a
//!   cluster's 8 CTAs) and `tile.sum_splits` adds them through its shared
//!   memory. Split 0 stores the tile: every `tile.store` moves into
//!   `tile.if %split == 0`.
//! - `workspace`: `tile.reduce_splits` parks each split's tile in a global
//!   workspace the runtime allocates, and the last split to arrive adds
//!   them (`grid_z = S` sets the grid's z extent, S up to
//!   [`MAX_WORKSPACE_SPLITS`]). No split waits for another, so any number
//!   of them run, in any number of waves. The split that adds stores the
//!   tile: every `tile.store` moves into `tile.if %last`.
//! - `spread`: as `workspace`, with `tile.reduce_splits {spread}`: where
//!   the grid is no larger than the SMs, so that all its CTAs are resident
//!   at once, every split waits for the others and adds a share of the
//!   tile's values, and the last to finish its share reads the summed tile
//!   and stores it; a larger grid (another shape of a kernel family) adds
//!   as `workspace` does.
//!
//! With per = ceil(trip / S), split s runs iterations s * per up to the
//! trip count, at most per of them: the K loop `for kt = lb to ub step st`
//! becomes `for j = lb to lb + mine * st step st` with mine =
//! max(0, min(per, trip - s * per)), and its body reads
//! kt = j + s * per * st. The last splits may run fewer iterations, or none
//! (K shorter than S blocks), and then contribute zeros.

use crate::config::{in_option_range, ConfigEntries};
use crate::hopper::counting::trip_count;
use crate::hopper::wgmma::next_op;
use crate::selection::SplitReduce;
use crate::k_range::{find_k_loop, guard_stores, restrict_k_loop, top_level_stores};
use crate::options::{OptionKind, OptionSpec};
use crate::phase::{Phase, PhaseRule};
use crate::pass::PassInfo;
use crate::pass::{op_error, Pass};
use tilec_dialects::ir::{Attribute, Attributes, Builder, ElemType, InsertPoint};
use tilec_dialects::tile::reduce::{MAX_SPLITS, MAX_WORKSPACE_SPLITS};
use tilec_dialects::tile::{BlockId, Ceildivsi, Cmpi, Maxsi, Minsi, Muli, ReduceSplits, Subi, SumSplits};
use tilec_dialects::{Diagnostic, Function};

/// `tile-split-k`'s registration: name, options, phases and constructor.
pub const INFO: PassInfo = PassInfo {
    name: "tile-split-k",
    summary: "Split each output tile's K loop over CTAs along grid z and sum their partial tiles in rank order, through a cluster or a global workspace",
    options: &[
        OptionSpec {
            name: "splits",
            kind: OptionKind::Int { min: 1, max: MAX_WORKSPACE_SPLITS },
            default: "1",
            help: "CTAs that share one output tile's K loop (1: no split; at most 8 through a cluster; default: tile.config's splits)",
        },
        OptionSpec {
            name: "reduce",
            kind: OptionKind::Enum(SplitReduce::WORDS),
            default: "cluster",
            help: "how the splits' partial tiles are added: through a cluster's shared memory, a global workspace read by the last split, or a global workspace read in shares by every split (default: tile.config's split_reduce)",
        },
    ],
    phases: PhaseRule {
        needs: Phase::TileLayouts..=Phase::TileLayouts,
        leaves: None,
        reason: "the partial sum takes the accumulator's register layout, and the K loop's schedule is built on the split bounds (run it after tile-assign-layouts, before tile-pipeline)",
    },
    create: |options| {
        Box::new(SplitK {
            splits: options.int("splits"),
            reduce: SplitReduce::parse(options.word("reduce")),
            splits_from_config: !options.given("splits"),
            reduce_from_config: !options.given("reduce"),
        })
    },
};

/// The `tile-split-k` pass with its options resolved.
pub struct SplitK {
    splits: i64,
    reduce: SplitReduce,
    /// Whether `splits` was left out, so `tile.config`'s `splits` decides.
    splits_from_config: bool,
    /// Whether `reduce` was left out, so `tile.config`'s `split_reduce` decides.
    reduce_from_config: bool,
}

impl Pass for SplitK {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn run(&mut self, func: &mut Function) -> Result<(), Diagnostic> {
        let config = ConfigEntries::of(func)?;
        if self.splits_from_config {
            self.splits = in_option_range(func, &INFO, "splits", "splits", config.splits)?.unwrap_or(1);
        }
        if self.reduce_from_config {
            self.reduce = config.split_reduce.unwrap_or(SplitReduce::Cluster);
        }
        if self.splits == 1 {
            return Ok(());
        }
        if self.reduce == SplitReduce::Cluster && self.splits > MAX_SPLITS {
            return Err(Diagnostic::error(
                func.loc.clone(),
                format!("tile-split-k adds at most {MAX_SPLITS} splits through a cluster, found {}; reduce=workspace takes up to {MAX_WORKSPACE_SPLITS}", self.splits),
            ));
        }
        let cluster_why = match self.reduce {
            SplitReduce::Cluster => "the splits of a tile form the cluster",
            SplitReduce::Workspace | SplitReduce::Spread => "the workspace has one slot per tile and split, and a cluster's CTAs would take several tiles",
        };
        for (attr, why) in [("grid", "a persistent kernel walks tiles itself"), ("cluster_dims", cluster_why), ("grid_z", "the splits take grid z")] {
            if func.attrs.get(attr).is_some() {
                return Err(Diagnostic::error(func.loc.clone(), format!("tile-split-k needs a kernel with one CTA per tile and no '{attr}' ({why})")));
            }
        }
        let (entry, region) = (func.entry_block(), func.region);
        let body = &mut func.body;
        if let Some(z) = body.walk_region(region).into_iter().find(|&o| BlockId::of(body, o).is_some_and(|b| b.dim(body) == 2)) {
            return Err(op_error(body, z, "indexes a batch of problems (grid z), which tile-split-k needs for the splits".into()));
        }
        let k_loop = find_k_loop(body, entry, func.loc.clone(), INFO.name)?;
        for &result in &body.ops[k_loop.op()].results {
            if body.value_type(result).as_tile().is_none_or(|t| t.elem != ElemType::F32) {
                return Err(op_error(body, k_loop.op(), "carries a value other than an f32 accumulator tile; tile-split-k sums every result of the K loop".into()));
            }
        }
        let stores = top_level_stores(body, entry, INFO.name)?;

        let loc = body.ops[k_loop.op()].loc.clone();
        let mut b = Builder::new(body, InsertPoint::Before(k_loop.op()), loc.clone());
        let split = BlockId::build(&mut b, 2, Attributes::new()).result(b.body);
        let split = b.name(split, "split");
        let trip = trip_count(&mut b, k_loop);
        let splits = b.index(self.splits);
        let per = Ceildivsi::build(&mut b, trip, splits, Attributes::new()).result(b.body);
        let per = b.name(per, "k_per_split");
        let done = Muli::build(&mut b, split, per, Attributes::new()).result(b.body);
        let left = Subi::build(&mut b, trip, done, Attributes::new()).result(b.body);
        let mine = Minsi::build(&mut b, per, left, Attributes::new()).result(b.body);
        let zero = b.index(0);
        let mine = Maxsi::build(&mut b, mine, zero, Attributes::new()).result(b.body);
        let mine = b.name(mine, "k_iterations");
        restrict_k_loop(body, k_loop, done, mine, "kt_split");

        let after = next_op(body, k_loop.op());
        let results = body.ops[k_loop.op()].results.clone();
        match self.reduce {
            SplitReduce::Cluster => {
                for result in results {
                    let mut b = Builder::new(body, InsertPoint::Before(after), loc.clone());
                    let sum = SumSplits::build(&mut b, result, self.splits, Attributes::new());
                    let total = sum.result(b.body);
                    let total = b.name(total, "summed");
                    body.replace_uses_except(region, result, total, sum.op());
                }
                if let Some(&first_store) = stores.first() {
                    let mut b = Builder::new(body, InsertPoint::Before(first_store), loc);
                    let zero = b.index(0);
                    let first_split = Cmpi::build(&mut b, split, zero, "eq", Attributes::new()).result(b.body);
                    let first_split = b.name(first_split, "is_split0");
                    guard_stores(body, &stores, first_split);
                }
                func.attrs.set("cluster_dims", Attribute::ints(&[1, 1, self.splits]));
            }
            SplitReduce::Workspace | SplitReduce::Spread => {
                // One workspace slot per tile and split: a second
                // accumulator would need a second slot, and its own last.
                let [result] = results[..] else {
                    return Err(op_error(
                        body,
                        k_loop.op(),
                        format!("carries {} accumulators; tile-split-k reduce={} adds one", results.len(), self.reduce.word()),
                    ));
                };
                let mut attrs = Attributes::new();
                if self.reduce == SplitReduce::Spread {
                    attrs.set("spread", Attribute::Unit);
                }
                let mut b = Builder::new(body, InsertPoint::Before(after), loc.clone());
                let reduce = ReduceSplits::build(&mut b, result, self.splits, attrs);
                let (total, last) = (reduce.result(b.body), reduce.last(b.body));
                let total = b.name(total, "summed");
                let last = b.name(last, "is_last_split");
                body.replace_uses_except(region, result, total, reduce.op());
                guard_stores(body, &stores, last);
                func.attrs.set("grid_z", Attribute::Int(self.splits, ElemType::I64));
            }
        }
        Ok(())
    }
}
