//! The expansion of a K loop's [`Schedule`] for one warpgroup
//! (`tile-pipeline`): multi-buffered shared memory with one mbarrier per
//! stage, a prologue that loads the first N - W iterations, and a loop body
//! that waits on its stage, issues its wgmma asynchronously, waits until W
//! groups are in flight and refills the stage the retired group read.

use crate::analysis::dependence::BlockDependences;
use crate::hopper::counting::{enclosing_loop, iterations_before, parity, trip_count, Counting};
use crate::hopper::schedule::{dots, loop_block, staged_loads, Schedule};
use crate::hopper::staging::{outermost_ancestor, remove_staged_loads, StagedBuffers};
use crate::hopper::wgmma::{dot_a, drain_after, emit_wgmma, replace_dot};
use crate::op_error;
use std::collections::{HashMap, HashSet};
use tilec_dialects::ir::{Attribute, Attributes, Block, Body, Builder, ElemType, EntityRef, InsertPoint, Op, Region, Type, Value};
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
pub fn expand(body: &mut Body, region: Region, for_op: Op, schedule: &Schedule) -> Result<(), Diagnostic> {
    let parts = analyse(body, for_op)?;
    let stages = schedule.stages;
    let loc = body.ops[for_op].loc.clone();

    // Before the loop: buffers, barriers, trip count and the prologue.
    let anchor = outermost_ancestor(body, for_op);
    let mut b = Builder::new(body, InsertPoint::Before(anchor), loc.clone());
    let staged = StagedBuffers::allocate(&mut b, &parts.loads, stages);
    staged.check_budget(body, for_op, stages, 1)?;
    let mut b = Builder::new(body, InsertPoint::Before(for_op), loc.clone());
    let trip = trip_count(&mut b, for_op);
    let trip = b.name(trip, "trip");
    // Inside a loop over output tiles the barriers keep their phases from
    // one tile to the next: count iterations from the kernel's start.
    let base = match enclosing_loop(b.body, for_op) {
        Some(outer) => {
            b.op("nv.barrier", vec![], &[], Attributes::new());
            let base = iterations_before(&mut b, outer, trip);
            Some(b.name(base, "base"))
        }
        None => None,
    };
    let ahead = b.index(schedule.distance());
    let prologue_count = b.index_op("tile.minsi", trip, ahead);
    let (c0, c1) = (b.index(0), b.index(1));
    let n = b.index(stages);
    let count = Counting { trip, base, n };
    let prologue = b.op("tile.for", vec![c0, prologue_count, c1], &[], Attributes::new());
    let (_, pro_block) = b.body.add_region(prologue, &[Type::INDEX]);
    let p = b.body.blocks[pro_block].args[0];
    b.name(p, "p");
    let mut pb = Builder::new(body, InsertPoint::End(pro_block), loc.clone());
    // Without a base the prologue's iterations are the first N - W, their
    // own stages.
    let pro_stage = if base.is_some() { count.stage_of(&mut pb, p) } else { p };
    issue_iteration(&mut pb, &parts, &staged, p, pro_stage);
    pb.op("tile.yield", vec![], &[], Attributes::new());

    // The loop body: wait, wgmma, refill.
    let first = body.blocks[parts.block].ops[0];
    let mut b = Builder::new(body, InsertPoint::Before(first), loc.clone());
    let position = count.position(&mut b, for_op);
    let iteration = b.name(position.local, "iteration");
    let phase = parity(&mut b, position.round);
    let phase = b.name(phase, "phase");
    let stage = position.stage;
    let wait = b.op("nv.mbarrier_wait", vec![staged.full, stage, phase], &[], Attributes::new());

    let mut consumers = vec![wait];
    for dot in dots(body, parts.block) {
        let a_tile = dot_a(body, dot).staged;
        let (Some(&a), Some(&bb)) = (staged.buffer_of.get(&a_tile), staged.buffer_of.get(&body.ops[dot].operands[1])) else {
            return Err(op_error(body, dot, "reads a tile that is not loaded in the pipelined loop".into()));
        };
        let mut b = Builder::new(body, InsertPoint::Before(dot), body.ops[dot].loc.clone());
        let done = emit_wgmma(&mut b, dot, [a, stage], [bb, stage], schedule.in_flight);
        replace_dot(body, region, dot, done);
        consumers.push(body.defining_op(done).expect("built"));
    }

    // Refill the stage the retired group read, with iteration i + N - W.
    let terminator = body.terminator(parts.block).expect("verified loop");
    let mut b = Builder::new(body, InsertPoint::Before(terminator), loc.clone());
    let next = b.index_op("tile.addi", iteration, ahead);
    let next = b.name(next, "next");
    let mut cmp_attrs = Attributes::new();
    cmp_attrs.set("predicate", Attribute::String("slt".into()));
    let has_next = b.value("tile.cmpi", vec![next, trip], Type::Scalar(ElemType::I1), cmp_attrs);
    let refill = b.op("tile.if", vec![has_next], &[], Attributes::new());
    let (_, refill_block) = b.body.add_region(refill, &[]);
    let mut rb = Builder::new(body, InsertPoint::End(refill_block), loc);
    rb.op("nv.barrier", vec![], &[], Attributes::new());
    let next_stage = count.stage_of(&mut rb, next);
    let next_stage = rb.name(next_stage, "next_stage");
    let scaled = rb.index_op("tile.muli", next, parts.step);
    let next_iv = rb.index_op("tile.addi", parts.lb, scaled);
    issue_iteration(&mut rb, &parts, &staged, next_iv, next_stage);
    rb.op("tile.yield", vec![], &[], Attributes::new());

    remove_staged_loads(body, region, &parts.loads)?;
    remove_dead_slice(body, region, &parts);
    schedule.annotate(body, parts.block, &consumers, refill);

    // Drain: nothing reads the accumulators before every group is done.
    drain_after(body, region, for_op);
    Ok(())
}

fn analyse(body: &Body, for_op: Op) -> Result<LoopParts, Diagnostic> {
    let block = loop_block(body, for_op);
    let iv = body.blocks[block].args[0];
    let iter_args: HashSet<Value> = body.blocks[block].args[1..].iter().copied().collect();
    let loads = staged_loads(body, block);
    let deps = BlockDependences::build(body, block);
    let load_slice = deps.backward_slice(body, block, &loads);
    for &op in &load_slice {
        if body.ops[op].operands.iter().any(|v| iter_args.contains(v)) || !body.ops[op].regions.is_empty() {
            return Err(op_error(body, op, "computes a pipelined load's coordinates from a loop-carried value or a region; only the induction variable may feed them".into()));
        }
    }
    let operands = &body.ops[for_op].operands;
    Ok(LoopParts { block, iv, lb: operands[0], step: operands[2], loads, load_slice })
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
        .map(|&l| b.body.ops[l].operands[1..].iter().map(|v| *map.get(v).unwrap_or(v)).collect())
        .collect();
    staged.issue(b, &parts.loads, &coords, stage, &Attributes::new());
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
