//! `tile-prefetch-l2{ahead=D}`: after each TMA load of a K loop, asks L2
//! for the box the same load will copy D steps later (`nv.tma_prefetch`,
//! PTX `cp.async.bulk.prefetch.tensor`).
//!
//! A producer has no more copies in flight than the pipeline has stages,
//! and each stage waits for a consumer to free it. Where HBM's latency is
//! longer than the stages cover (a small-M GEMM streams B through every
//! SM, its consumers quick), a prefetch, which holds no shared memory and
//! nothing waits for, puts D more steps of each operand on the way to L2;
//! the load that follows finds them there.
//!
//! A K loop is a `tile.for` with `nv.tma_load`s in its body (directly, or
//! under the plain pipeline's refill `tile.if`) whose coordinates its
//! induction variable computes through pure ops. Each load is followed by
//! a prefetch of the same box (the same buffer, so the same descriptor;
//! `fit_rows` as the load's) D iterations on, in the load's elected run.
//! Past the loop's last iteration the box is the next split's K range, or
//! past the tensor's end, where TMA moves nothing; neither changes a value.
//! A load whose coordinates the loop carries, or that does not move with
//! the loop, is left alone; a config that asks for prefetches where no
//! load can take one is an error.
//!
//! Config selection does not weigh it: every kernel it was timed on ran
//! slower with it, the further ahead the slower (measured:
//! docs/evidence.md, prefetch_l2.rs, module documentation).

use crate::config::{in_option_range, ConfigEntries};
use crate::hopper::counting::induction_variable;
use crate::hopper::prefetch::{clone_slice, iteration_slice};
use crate::options::{OptionKind, OptionSpec};
use crate::pass::{Pass, PassInfo, Statistic};
use crate::phase::{Phase, PhaseRule};
use std::collections::HashSet;
use tilec_dialects::ir::{Attribute, Attributes, Body, Builder, InsertPoint, Op, Value};
use tilec_dialects::nv::memory::is_row_box;
use tilec_dialects::nv::{TmaLoad, TmaPrefetch};
use tilec_dialects::tile::{Addi, For, Muli};
use tilec_dialects::{Diagnostic, Function};

/// The most K steps a prefetch runs ahead of its load.
pub const MAX_AHEAD: i64 = 64;

/// `tile-prefetch-l2`'s registration: name, options, phases and constructor.
pub const INFO: PassInfo = PassInfo {
    name: "tile-prefetch-l2",
    summary: "Ask L2 for each K-loop TMA load's box some K steps before the load, so that more of HBM's latency is in flight than the pipeline's stages hold",
    options: &[OptionSpec {
        name: "ahead",
        kind: OptionKind::Int { min: 0, max: MAX_AHEAD },
        default: "0",
        help: "K steps between a box's prefetch and its load (0: none; default: tile.config's l2_prefetch)",
    }],
    phases: PhaseRule {
        needs: Phase::Nv..=Phase::Nv,
        leaves: None,
        reason: "it runs ahead of nv.tma_load ops, which only nv IR has (run it after tile-lower-to-nv)",
    },
    create: |options| Box::new(PrefetchL2 { ahead: options.int("ahead"), ahead_from_config: !options.given("ahead"), prefetches: 0 }),
};

/// The `tile-prefetch-l2` pass with its option resolved, and what it added.
pub struct PrefetchL2 {
    ahead: i64,
    /// Whether `ahead` was left out, so `tile.config`'s `l2_prefetch` decides.
    ahead_from_config: bool,
    prefetches: u64,
}

impl Pass for PrefetchL2 {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn run(&mut self, func: &mut Function) -> Result<(), Diagnostic> {
        if self.ahead_from_config {
            let config = ConfigEntries::of(func)?;
            self.ahead = in_option_range(func, &INFO, "ahead", "l2_prefetch", config.l2_prefetch)?.unwrap_or(0);
        }
        if self.ahead == 0 {
            return Ok(());
        }
        let before = self.prefetches;
        let body = &mut func.body;
        let loops: Vec<For> = body.walk_region(func.region).into_iter().filter_map(|op| For::of(body, op)).collect();
        for k_loop in loops {
            // The loads of this loop (not of one nested in it) in boxes of
            // rows; a block-scaled dot's flat scale columns are too small to wait for.
            let loads: Vec<Op> = body
                .walk_region(k_loop.region(body))
                .into_iter()
                .filter(|&op| {
                    TmaLoad::of(body, op).is_some_and(|l| {
                        body.ancestors(op).find_map(|a| For::of(body, a)) == Some(k_loop)
                            && body.value_type(l.buffer(body)).as_smem().is_some_and(|s| is_row_box(&s.tile))
                    })
                })
                .collect();
            let ahead: Vec<(Op, Vec<Op>)> = loads
                .into_iter()
                .filter_map(|op| {
                    let load = TmaLoad::of(body, op).expect("filtered");
                    let mut values = load.coords(body).to_vec();
                    values.push(load.buffer(body));
                    let slice = iteration_slice(body, k_loop, &values)?;
                    let moving = moving_values(body, k_loop, &slice);
                    load.coords(body).iter().any(|c| moving.contains(c)).then_some((op, slice))
                })
                .collect();
            if ahead.is_empty() {
                continue;
            }
            self.prefetch_ahead(body, k_loop, &ahead);
        }
        if self.prefetches == before {
            return Err(Diagnostic::error(
                func.loc.clone(),
                format!("tile-prefetch-l2: asked to prefetch {} K steps ahead, but no TMA load in a loop moves with its induction variable", self.ahead),
            ));
        }
        Ok(())
    }

    /// A prefetch writes no buffer and arrives on no barrier.
    fn preserves_barriers(&self) -> bool {
        true
    }

    fn statistics(&self) -> Vec<Statistic> {
        vec![Statistic { name: "prefetches", description: "TMA boxes prefetched into L2 ahead of their loads", value: self.prefetches }]
    }
}

impl PrefetchL2 {
    /// Each load of `loads` (with the slices computing their coordinates
    /// and buffers) followed by a prefetch of its box `ahead` iterations
    /// on, those coordinates computed at the start of the body. The
    /// prefetch is elected as the load is and comes right after it, so the
    /// thread that issues the load issues both in one run: a branch of its
    /// own around it would part the producer's warp before the next wait.
    fn prefetch_ahead(&mut self, body: &mut Body, k_loop: For, loads: &[(Op, Vec<Op>)]) {
        let block = body.entry_block(k_loop.region(body));
        let first = body.blocks[block].ops[0];
        let iv = induction_variable(body, k_loop);
        let step = k_loop.step(body);
        let mut b = Builder::new(body, InsertPoint::Before(first), body.ops[loads[0].0].loc.clone());
        let steps = b.index(self.ahead);
        let distance = Muli::build(&mut b, steps, step, Attributes::new()).result(b.body);
        let at = Addi::build(&mut b, iv, distance, Attributes::new()).result(b.body);
        let at = b.name(at, "prefetch_k");
        for (op, slice) in loads {
            let loc = body.ops[*op].loc.clone();
            let map = clone_slice(&mut Builder::new(body, InsertPoint::Before(first), loc.clone()), slice, iv, at);
            // The copies compute the values of a later iteration: named so, not as the originals.
            for (&original, &copy) in map.iter().filter(|(&original, _)| original != iv) {
                body.values[copy].name_hint = body.values[original].name_hint.as_ref().map(|hint| format!("{hint}_ahead"));
            }
            let load = TmaLoad::of(body, *op).expect("a load");
            let moved = |v| map.get(&v).copied().unwrap_or(v);
            let (tensor, buffer, fit_rows) = (load.tensor(body), moved(load.buffer(body)), load.fit_rows(body));
            let coords: Vec<Value> = load.coords(body).iter().map(|&c| moved(c)).collect();
            let mut attrs = Attributes::new();
            if fit_rows {
                attrs.set("fit_rows", Attribute::Unit);
            }
            let after = body.blocks[body.ops[*op].parent.expect("in a block")].ops[body.position_in_block(*op) + 1];
            TmaPrefetch::build(&mut Builder::new(body, InsertPoint::Before(after), loc), tensor, &coords, buffer, attrs);
            self.prefetches += 1;
        }
    }
}

/// The induction variable of `k_loop` and the results of `slice` computed
/// from it: the values that differ from one iteration to the next.
fn moving_values(body: &Body, k_loop: For, slice: &[Op]) -> HashSet<Value> {
    let mut moving = HashSet::from([induction_variable(body, k_loop)]);
    for &op in slice {
        if body.ops[op].operands.iter().any(|v| moving.contains(v)) {
            moving.extend(body.ops[op].results.iter().copied());
        }
    }
    moving
}
