//! `tile-pair-promotions`: a block-scaled K loop of one warpgroup issues
//! two K blocks' wgmma before it promotes the first, so that the first's
//! promotion runs while the tensor cores work on the second.
//!
//! Block scaling folds each K block's partial product into the running sum
//! on the CUDA cores (`nv.scale_accumulate`), after waiting for that K
//! block's wgmma (`nv.wgmma_wait 0`). Where one warpgroup holds the tile
//! (the plain pipeline of four warps) nothing else is on the tensor cores
//! during that wait and the promotion after it, so every K block pays the
//! wgmma's latency and its promotion in turn. Two warpgroups on a tile
//! (two m64 halves, two consumers) already hide one's wait under the
//! other's wgmma, which is why the pass leaves their loops alone.
//!
//! A loop `for kt = lb to ub step 1` qualifies where its body issues one
//! `nv.wgmma` into a fresh partial (`zero_init`), commits it, waits for it
//! with `nv.wgmma_wait 0` and promotes the waited partial into the one
//! value the loop carries. It becomes two loops:
//!
//! ```text
//! for kt = lb to lb + 2 * ((ub - lb) / 2) step 2:      // the pairs
//!     body(kt) and body(kt + 1) up to their commits      (both groups in flight)
//!     wgmma_wait 1 (kt's group is done), the rest of body(kt)
//!     wgmma_wait 0, the rest of body(kt + 1)
//! for kt = (that bound) to ub step 1: body(kt)         // an odd count's last K block
//! ```
//!
//! Each half keeps its own stage, phase and refill, computed from its own
//! K block, so barriers and copies see the iterations they saw before.
//! The second group is not carried into the next iteration: ptxas then
//! cannot tell which registers a pending group writes and serialises every
//! wgmma (C7514; measured: docs/evidence.md, pair_promotions.rs).
//!
//! Measured on one-warpgroup plain-pipeline picks: docs/evidence.md,
//! pair_promotions.rs, module documentation.

use crate::hopper::counting::induction_variable;
use crate::pass::{Pass, PassInfo, Statistic};
use crate::phase::{Phase, PhaseRule};
use std::collections::HashMap;
use tilec_dialects::ir::{Attribute, Attributes, Body, Builder, ElemType, InsertPoint, Op, Type};
use tilec_dialects::nv::{ScaleAccumulate, Wgmma, WgmmaWait};
use tilec_dialects::registry::Opcode;
use tilec_dialects::tile::{Addi, Divsi, For, Muli, Subi, Yield};
use tilec_dialects::{Diagnostic, Function};

/// `tile-pair-promotions`' registration: name, options, phases and constructor.
pub const INFO: PassInfo = PassInfo {
    name: "tile-pair-promotions",
    summary: "Issue two K blocks' wgmma before promoting the first in a block-scaled K loop of one warpgroup, so that each promotion runs under the next K block's wgmma",
    options: &[],
    phases: PhaseRule { needs: Phase::Nv..=Phase::Nv, leaves: None, reason: "it reorders nv.wgmma, its commit and wait, which only nv IR has (run it after tile-lower-to-nv)" },
    create: |_| Box::new(PairPromotions::default()),
};

/// The `tile-pair-promotions` pass, with what it paired.
#[derive(Default)]
pub struct PairPromotions {
    paired: u64,
}

impl Pass for PairPromotions {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn run(&mut self, func: &mut Function) -> Result<(), Diagnostic> {
        if func.attrs.get_int("num_warps") != Some(4) {
            return Ok(());
        }
        let body = &mut func.body;
        let loops: Vec<PromotingLoop> = body.walk_region(func.region).into_iter().filter_map(|op| PromotingLoop::of(body, op)).collect();
        for found in loops {
            pair(body, &found);
            self.paired += 1;
        }
        Ok(())
    }

    fn statistics(&self) -> Vec<Statistic> {
        vec![Statistic { name: "paired", description: "block-scaled K loops that issue two K blocks before promoting", value: self.paired }]
    }
}

/// A K loop whose every iteration issues one wgmma, waits for it alone and
/// promotes it into the value the loop carries.
struct PromotingLoop {
    k_loop: For,
    /// The positions in the loop body of the wgmma's wait and of the
    /// promotion of what it waited for.
    wait: usize,
    promotion: usize,
}

impl PromotingLoop {
    fn of(body: &Body, op: Op) -> Option<PromotingLoop> {
        let k_loop = For::of(body, op)?;
        // Outside warp specialisation: a consumer's loop is one of two
        // warpgroups', or runs beside a producer that keeps its copies going.
        if body.ancestors(op).any(|a| body.opcode(a) == Opcode::NvWarpSpecialize) {
            return None;
        }
        if body.constant_int(k_loop.step(body)) != Some(1) || k_loop.inits(body).len() != 1 {
            return None;
        }
        let block = body.entry_block(k_loop.region(body));
        let ops = &body.blocks[block].ops;
        let nested = body.walk_region(k_loop.region(body));
        let count = |opcode: Opcode| nested.iter().filter(|&&o| body.opcode(o) == opcode).count();
        if count(Opcode::NvWgmma) != 1 || count(Opcode::NvWgmmaCommit) != 1 || count(Opcode::NvWgmmaWait) != 1 {
            return None;
        }
        let position = |opcode: Opcode| ops.iter().position(|&o| body.opcode(o) == opcode);
        let (issue, commit, wait) = (position(Opcode::NvWgmma)?, position(Opcode::NvWgmmaCommit)?, position(Opcode::NvWgmmaWait)?);
        let wgmma = Wgmma::of(body, ops[issue])?;
        let waited = WgmmaWait::of(body, ops[wait])?;
        let fresh = wgmma.zero_init(body) && !body.defined_within(wgmma.acc(body), op);
        let waits_for_it_alone = waited.pending(body) == 0 && waited.values(body) == [wgmma.result(body)];
        if !(issue < commit && commit < wait && fresh && waits_for_it_alone) {
            return None;
        }
        // The wait's partial is promoted into the carried value, which
        // nothing before the wait reads (the second K block's copy of those
        // ops runs before the first's promotion; the checks below leave no
        // region there to read it in).
        let carried = body.blocks[block].args[1];
        let partial = body.ops[ops[wait]].results[0];
        let promotion = wait + 1 + ops[wait + 1..].iter().position(|&o| ScaleAccumulate::of(body, o).is_some_and(|s| s.partial(body) == partial && s.acc(body) == carried))?;
        let read_early = ops[..wait].iter().any(|&o| body.ops[o].operands.contains(&carried));
        // The second K block's issue runs while the first's wgmma reads its
        // stage: it may wait for its own stage and read shared memory, but
        // not write any, nor hand a stage back (a refill, an arrival), nor
        // branch. A loop of one stage loads into the buffer the wgmma reads.
        let issues_only = ops[..wait].iter().all(|&o| {
            let data = &body.ops[o];
            let hands_back = matches!(data.opcode(), Opcode::NvMbarrierArrive | Opcode::NvMbarrierArriveRemote | Opcode::NvMbarrierExpectTx);
            data.regions.is_empty() && !data.def.traits.writes_memory && !hands_back
        });
        (!read_early && issues_only).then_some(PromotingLoop { k_loop, wait, promotion })
    }
}

/// Rewrites `found` into a loop over pairs of K blocks and a loop over the
/// odd count's last one (the original, its lower bound moved past the pairs).
fn pair(body: &mut Body, found: &PromotingLoop) {
    let k_loop = found.k_loop;
    let op = k_loop.op();
    let loc = body.ops[op].loc.clone();
    let (lb, ub, init) = (k_loop.lower_bound(body), k_loop.upper_bound(body), k_loop.inits(body)[0]);
    let acc_type = body.value_type(init).clone();
    let mut b = Builder::new(body, InsertPoint::Before(op), loc.clone());
    let two = b.index(2);
    let span = Subi::build(&mut b, ub, lb, Attributes::new()).result(b.body);
    let pairs = Divsi::build(&mut b, span, two, Attributes::new()).result(b.body);
    let paired = Muli::build(&mut b, pairs, two, Attributes::new()).result(b.body);
    let paired_ub = Addi::build(&mut b, lb, paired, Attributes::new()).result(b.body);
    let paired_ub = b.name(paired_ub, "paired_ub");
    let pair_loop = For::build(&mut b, lb, paired_ub, two, &[init], std::slice::from_ref(&acc_type), Attributes::new());
    let (_, pair_block) = body.add_region(pair_loop.op(), &[Type::INDEX, acc_type]);
    let (first_k, running) = (body.blocks[pair_block].args[0], body.blocks[pair_block].args[1]);
    body.values[first_k].name_hint = Some("kt_pair".into());
    body.values[running].name_hint = Some("acc_pair".into());

    let block = body.entry_block(k_loop.region(body));
    let ops = body.blocks[block].ops.clone();
    let (iv, carried) = (induction_variable(body, k_loop), body.blocks[block].args[1]);
    let yielded = body.ops[*ops.last().expect("a terminator")].operands[0];
    // Up to the wait: the K block's issue (and what may follow its commit
    // before the wait, such as reads of its stage's scales).
    let (issue, after_wait) = (&ops[..found.wait], &ops[found.wait + 1..ops.len() - 1]);

    let mut b = Builder::new(body, InsertPoint::End(pair_block), loc);
    let c1 = b.index(1);
    let second_k = Addi::build(&mut b, first_k, c1, Attributes::new()).result(b.body);
    let second_k = b.name(second_k, "kt_second");
    let mut first = HashMap::from([(iv, first_k), (carried, running)]);
    let mut second = HashMap::from([(iv, second_k)]);
    for map in [&mut first, &mut second] {
        for &o in issue {
            b.clone_op(o, map);
        }
    }
    // The first K block's promotion, the second's wait, then the rest of
    // the first (its refill or its stage's release: an elected branch,
    // which an aligned wait must not follow without a barrier between).
    let wait = ops[found.wait];
    let first_wait = b.clone_op(wait, &mut first);
    b.body.ops[first_wait].attrs.set("pending", Attribute::Int(1, ElemType::I64));
    let (promotion, rest) = after_wait.split_at(found.promotion - found.wait);
    for &o in promotion {
        b.clone_op(o, &mut first);
    }
    b.clone_op(wait, &mut second);
    for &o in rest {
        b.clone_op(o, &mut first);
    }
    second.insert(carried, first[&yielded]);
    for &o in after_wait {
        b.clone_op(o, &mut second);
    }
    Yield::build(&mut b, &[second[&yielded]], Attributes::new());

    // The original loop takes what the pairs leave: none, or the last K block.
    let paired_acc = body.ops[pair_loop.op()].results[0];
    body.values[paired_acc].name_hint = Some("acc_paired".into());
    body.ops[op].operands[0] = paired_ub;
    body.ops[op].operands[3] = paired_acc;
}
