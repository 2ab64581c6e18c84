//! The expansion of a K loop's [`LoopSchedule`] for one warpgroup
//! (`tile-pipeline`): multi-buffered shared memory with one mbarrier per
//! stage, a prologue that loads the first N - W iterations, and a loop body
//! that waits on its stage, issues its wgmma asynchronously, waits until W
//! groups are in flight and refills the stage the retired group read; a
//! block-scaled dot's scales come with their stage (copied by the second
//! warp, read from shared memory after the wait) or, without
//! `copy_scales`, are loaded into registers one iteration ahead.

use crate::analysis::dependence::BlockDependences;
use crate::hopper::counting::{enclosing_loop, iterations_before, parity, trip_count, Counting};
use crate::hopper::prefetch::prefetch_register_loads;
use crate::hopper::schedule::{dots, loop_block, staged_loads, LoopSchedule};
use crate::hopper::staging::{outermost_ancestor, remove_staged_loads, StagedBuffers};
use crate::hopper::wgmma::{dot_a, drain_after, emit_wgmma, promote_by_blocks, replace_dot, RowBlocks};
use crate::pass::op_error;
use std::collections::{HashMap, HashSet};
use tilec_dialects::ir::{Attributes, Block, Body, Builder, EntityRef, InsertPoint, Op, Region, Type, Value};
use tilec_dialects::nv::{Barrier, MbarrierWait};
use tilec_dialects::tile::{Addi, Cmpi, For, If, Load, Minsi, Muli, Yield};
use tilec_dialects::Diagnostic;

/// The pieces of a loop the rewrite needs.
struct LoopParts {
    block: Block,
    iv: Value,
    lb: Value,
    step: Value,
    loads: Vec<Op>,
    /// The loads and the ops computing their coordinates, in block order.
    load_slice: Vec<Op>,
}

/// Pipelines `for_op` by `schedule`. Iteration i waits on stage i mod N
/// with parity (i / N) mod 2, and after a CTA barrier refills the stage the
/// retired group read with iteration i + N - W, if there is one; after the
/// loop one wait drains the last groups.
pub fn expand(body: &mut Body, region: Region, for_op: For, schedule: &LoopSchedule, copy_scales: bool, column_major: &HashSet<Value>) -> Result<(), Diagnostic> {
    let parts = analyse(body, for_op, copy_scales)?;
    let stages = schedule.stages;
    let loc = body.ops[for_op.op()].loc.clone();

    // Before the loop: buffers, barriers, trip count and the prologue.
    let anchor = outermost_ancestor(body, for_op.op());
    let mut b = Builder::new(body, InsertPoint::Before(anchor), loc.clone());
    let staged = StagedBuffers::allocate(&mut b, &parts.loads, stages, column_major);
    staged.check_budget(body, for_op.op(), stages, 1)?;
    let mut b = Builder::new(body, InsertPoint::Before(for_op.op()), loc.clone());
    let trip = trip_count(&mut b, for_op);
    let trip = b.name(trip, "trip");
    // Inside a loop over output tiles the barriers keep their phases from
    // one tile to the next: count iterations from the kernel's start.
    let base = match enclosing_loop(b.body, for_op.op()) {
        Some(outer) => {
            Barrier::build(&mut b, Attributes::new());
            let base = iterations_before(&mut b, outer, for_op, trip);
            Some(b.name(base, "base"))
        }
        None => None,
    };
    let ahead = b.index(schedule.distance());
    let prologue_count = Minsi::build(&mut b, trip, ahead, Attributes::new()).result(b.body);
    let (c0, c1) = (b.index(0), b.index(1));
    let n = b.index(stages);
    let count = Counting { trip, base, n };
    let prologue = For::build(&mut b, c0, prologue_count, c1, &[], &[], Attributes::new());
    let (_, pro_block) = b.body.add_region(prologue.op(), &[Type::INDEX]);
    let p = b.body.blocks[pro_block].args[0];
    b.name(p, "p");
    let mut pb = Builder::new(body, InsertPoint::End(pro_block), loc.clone());
    // Without a base the prologue's iterations are the first N - W, their
    // own stages.
    let pro_stage = if base.is_some() { count.stage_of(&mut pb, p) } else { p };
    issue_iteration(&mut pb, &parts, &staged, p, pro_stage);
    Yield::build(&mut pb, &[], Attributes::new());

    // The loop body: wait, wgmma, refill.
    let first = body.blocks[parts.block].ops[0];
    let mut b = Builder::new(body, InsertPoint::Before(first), loc.clone());
    let position = count.position(&mut b, for_op);
    let iteration = b.name(position.local, "iteration");
    let phase = parity(&mut b, position.round);
    let phase = b.name(phase, "phase");
    let stage = position.stage;
    let wait = MbarrierWait::build(&mut b, staged.full, stage, phase, Attributes::new()).op();

    let mut consumers = vec![wait];
    for dot in dots(body, parts.block) {
        let a_tile = dot_a(body, dot).staged;
        let (Some(&a), Some(&bb)) = (staged.buffer_of.get(&a_tile), staged.buffer_of.get(&dot.rhs(body))) else {
            return Err(op_error(body, dot.op(), "reads a tile that is not loaded in the pipelined loop".into()));
        };
        let mut b = Builder::new(body, InsertPoint::Before(dot.op()), body.ops[dot.op()].loc.clone());
        let done = emit_wgmma(&mut b, dot, [a, stage], [bb, stage], schedule.in_flight);
        replace_dot(body, region, dot, done);
        consumers.push(body.defining_op(done).expect("built"));
    }

    // Refill the stage the retired group read, with iteration i + N - W.
    let terminator = body.terminator(parts.block).expect("verified loop");
    let mut b = Builder::new(body, InsertPoint::Before(terminator), loc.clone());
    let next = Addi::build(&mut b, iteration, ahead, Attributes::new()).result(b.body);
    let next = b.name(next, "next");
    let has_next = Cmpi::build(&mut b, next, trip, "slt", Attributes::new()).result(b.body);
    let refill = If::build(&mut b, has_next, Attributes::new()).op();
    let (_, refill_block) = b.body.add_region(refill, &[]);
    let mut rb = Builder::new(body, InsertPoint::End(refill_block), loc);
    Barrier::build(&mut rb, Attributes::new());
    let next_stage = count.stage_of(&mut rb, next);
    let next_stage = rb.name(next_stage, "next_stage");
    let scaled = Muli::build(&mut rb, next, parts.step, Attributes::new()).result(rb.body);
    let next_iv = Addi::build(&mut rb, parts.lb, scaled, Attributes::new()).result(rb.body);
    issue_iteration(&mut rb, &parts, &staged, next_iv, next_stage);
    Yield::build(&mut rb, &[], Attributes::new());

    let wide_loads: Vec<Op> = parts.loads.iter().copied().filter(|&l| !staged.narrow.contains(&body.result(l, 0))).collect();
    staged.read_narrow(body, region, &parts.loads, stage, None);
    remove_staged_loads(body, region, &wide_loads)?;
    remove_dead_slice(body, region, &parts);
    schedule.annotate(body, parts.block, &consumers, refill);
    promote_by_blocks(body, body.blocks[parts.block].parent.expect("in a region"), RowBlocks::Together);

    // Drain: nothing reads the accumulators before every group is done.
    drain_after(body, region, for_op.op());
    prefetch_register_loads(body, for_op);
    Ok(())
}

fn analyse(body: &Body, for_op: For, copy_scales: bool) -> Result<LoopParts, Diagnostic> {
    let block = loop_block(body, for_op);
    let iv = body.blocks[block].args[0];
    let iter_args: HashSet<Value> = body.blocks[block].args[1..].iter().copied().collect();
    let loads = staged_loads(body, block, copy_scales);
    let deps = BlockDependences::build(body, block);
    let load_slice = deps.backward_slice(body, block, &loads);
    for &op in &load_slice {
        if body.ops[op].operands.iter().any(|v| iter_args.contains(v)) || !body.ops[op].regions.is_empty() {
            return Err(op_error(body, op, "computes a pipelined load's coordinates from a loop-carried value or a region; only the induction variable may feed them".into()));
        }
    }
    Ok(LoopParts { block, iv, lb: for_op.lower_bound(body), step: for_op.step(body), loads, load_slice })
}

/// Issues the loads of the iteration whose induction variable is `iv` into
/// `stage`, recomputing their coordinates from the loop's slice.
fn issue_iteration(b: &mut Builder<'_>, parts: &LoopParts, staged: &StagedBuffers, iv: Value, stage: Value) {
    let mut map: HashMap<Value, Value> = HashMap::from([(parts.iv, iv)]);
    for &op in &parts.load_slice {
        if !parts.loads.contains(&op) {
            b.clone_op(op, &mut map);
        }
    }
    let coords: Vec<Vec<Value>> = parts
        .loads
        .iter()
        .map(|&l| Load::of(b.body, l).expect("staged loads are tile.load").indices(b.body).iter().map(|v| *map.get(v).unwrap_or(v)).collect())
        .collect();
    staged.issue(b, &parts.loads, &coords, stage);
}

/// Removes the ops that computed the old loads' coordinates and now have
/// no users (their copies in the prologue and refill do the work).
fn remove_dead_slice(body: &mut Body, region: Region, parts: &LoopParts) {
    for &op in parts.load_slice.iter().rev() {
        let uses = body.use_counts(region);
        if body.ops[op].parent.is_some() && body.ops[op].def.traits.pure && body.ops[op].results.iter().all(|r| uses[r.index()] == 0) {
            body.remove_op(op);
        }
    }
}
