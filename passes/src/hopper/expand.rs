//! The expansion of a K loop's [`LoopSchedule`] for one warpgroup
//! (`tile-pipeline`): multi-buffered shared memory with one mbarrier per
//! stage, a prologue that loads the first N - W iterations, and a loop body
//! that waits on its stage, issues its wgmma asynchronously, waits until W
//! groups are in flight and refills the stage the retired group read; a
//! block-scaled dot's scales come with their stage (copied by the second
//! warp, read from shared memory after the wait), or are copied a chunk of
//! iterations at a time (resident: before the loop, and again at the start
//! of each later chunk after a CTA barrier, every thread waiting for the
//! chunk's copies), or are loaded into registers one iteration ahead
//! ([`ScaleCopies`]).

use crate::analysis::dependence::BlockDependences;
use crate::hopper::counting::{enclosing_loop, iterations_before, parity, trip_count, Counting};
use crate::hopper::prefetch::prefetch_register_loads;
use crate::hopper::schedule::{dots, loop_block, staged_loads, LoopSchedule};
use crate::hopper::staging::{outermost_ancestor, remove_staged_loads, Resident, StagedBuffers, RESIDENT_BARRIERS};
use crate::hopper::wgmma::{dot_a, drain_after, emit_wgmma, promote_by_blocks, replace_dot, RowBlocks};
use crate::pass::op_error;
use std::collections::{HashMap, HashSet};
use tilec_dialects::ir::{Attributes, Block, Body, Builder, EntityRef, InsertPoint, Op, Region, Type, Value};
use tilec_dialects::nv::{Barrier, MbarrierWait};
use tilec_dialects::tile::{Addi, Cmpi, Divsi, For, If, Load, Minsi, Muli, Remsi, Yield};
use tilec_dialects::{Diagnostic, Location};

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

/// How [`expand`] brings a block-scaled K loop's scales to its wgmma
/// (`tile-pipeline`'s `scales`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScaleCopies {
    /// Into shared memory with each stage (`scales=staged`), where there
    /// are scales.
    WithStages,
    /// Into registers one iteration ahead (`scales=prefetched`).
    Registers,
    /// Into shared memory a chunk of iterations at a time
    /// (`scales=resident`).
    Resident {
        /// The iterations a chunk's scales cover.
        chunk: i64,
    },
}

/// Pipelines `for_op` by `schedule`. Iteration i waits on stage i mod N
/// with parity (i / N) mod 2, and after a CTA barrier refills the stage the
/// retired group read with iteration i + N - W, if there is one; after the
/// loop one wait drains the last groups.
pub fn expand(body: &mut Body, region: Region, for_op: For, schedule: &LoopSchedule, scales: ScaleCopies, column_major: &HashSet<Value>) -> Result<(), Diagnostic> {
    let parts = analyse(body, for_op, scales != ScaleCopies::Registers)?;
    let resident_chunk = match scales {
        ScaleCopies::Resident { chunk } => Some(chunk),
        ScaleCopies::WithStages | ScaleCopies::Registers => None,
    };
    let stages = schedule.stages;
    let loc = body.ops[for_op.op()].loc.clone();
    if resident_chunk.is_some() && enclosing_loop(body, for_op.op()).is_some() {
        // Each tile would start a chunk of its own, its phase counted across tiles.
        return Err(op_error(body, for_op.op(), "scales=resident takes a K loop that runs once a CTA, not one inside a loop over output tiles (tile-persistent): stage the scales (scales=staged)".into()));
    }

    // Before the loop: buffers, barriers, trip count and the prologue.
    let anchor = outermost_ancestor(body, for_op.op());
    let mut b = Builder::new(body, InsertPoint::Before(anchor), loc.clone());
    let staged = StagedBuffers::allocate(&mut b, &parts.loads, stages, column_major, resident_chunk);
    staged.check_budget(body, for_op.op(), stages, 1)?;
    if staged.resident.is_some() {
        check_resident_loads(body, for_op, &parts, &staged)?;
    }
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
    if let Some(resident) = staged.resident {
        let mut b = Builder::new(body, InsertPoint::Before(for_op.op()), loc.clone());
        let first = b.index(0);
        issue_resident_chunk(&mut b, &parts, &staged, parts.lb, first);
        wait_for_chunk(&mut b, resident, first);
    }

    // The loop body: wait, wgmma, refill.
    let first = body.blocks[parts.block].ops[0];
    let mut b = Builder::new(body, InsertPoint::Before(first), loc.clone());
    let position = count.position(&mut b, for_op);
    let iteration = b.name(position.local, "iteration");
    let slot = match staged.resident {
        Some(resident) => {
            let chunk = b.index(resident.chunk);
            let slot = Remsi::build(&mut b, iteration, chunk, Attributes::new()).result(b.body);
            b.name(slot, "scale_slot")
        }
        None => position.stage,
    };
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
    let mut rb = Builder::new(body, InsertPoint::End(refill_block), loc.clone());
    Barrier::build(&mut rb, Attributes::new());
    let next_stage = count.stage_of(&mut rb, next);
    let next_stage = rb.name(next_stage, "next_stage");
    let next_iv = parts.induction_at(&mut rb, next);
    issue_iteration(&mut rb, &parts, &staged, next_iv, next_stage);
    Yield::build(&mut rb, &[], Attributes::new());
    if let Some(resident) = staged.resident {
        let terminator = body.terminator(parts.block).expect("verified loop");
        let mut b = Builder::new(body, InsertPoint::Before(terminator), loc.clone());
        copy_next_chunk(&mut b, &parts, &staged, resident, iteration, trip, &loc);
    }

    let wide_loads: Vec<Op> = parts.loads.iter().copied().filter(|&l| !staged.narrow.contains(&body.result(l, 0))).collect();
    staged.read_narrow(body, region, &parts.loads, stage, slot, None);
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

/// A chunk's copy (`nv.copy_async` over several stages) takes each K step's
/// tile one column further on: each copied load must read a tile one
/// column wide whose column is the loop's induction variable (plus a value
/// from outside the loop, a split's first K block), in a loop of step 1.
fn check_resident_loads(body: &Body, for_op: For, parts: &LoopParts, staged: &StagedBuffers) -> Result<(), Diagnostic> {
    let step_one = body.constant_int(parts.step) == Some(1);
    for &op in &parts.loads {
        let load = Load::of(body, op).expect("staged loads are tile.load");
        if !staged.copied.contains(&load.result(body)) {
            continue;
        }
        let one_column = body.value_type(load.result(body)).as_tile().is_some_and(|t| t.shape.last() == Some(&1));
        let column = *load.indices(body).last().expect("a tile load has indices");
        let invariant = |v: Value| !body.defined_within(v, for_op.op());
        let follows_loop = column == parts.iv
            || body.defining_op(column).and_then(|d| Addi::of(body, d)).is_some_and(|add| {
                let (l, r) = (add.lhs(body), add.rhs(body));
                (l == parts.iv && invariant(r)) || (r == parts.iv && invariant(l))
            });
        if !(step_one && one_column && follows_loop) {
            return Err(op_error(body, op, "scales=resident copies a chunk of K steps a column apart: the scales must be a tile one column wide at the loop's induction variable (plus a loop-invariant offset), in a K loop of step 1".into()));
        }
    }
    Ok(())
}

impl LoopParts {
    /// The induction variable of iteration `iteration`: lb + iteration * step.
    fn induction_at(&self, b: &mut Builder<'_>, iteration: Value) -> Value {
        let scaled = Muli::build(b, iteration, self.step, Attributes::new()).result(b.body);
        Addi::build(b, self.lb, scaled, Attributes::new()).result(b.body)
    }
}

/// Issues the loads of the iteration whose induction variable is `iv` into
/// `stage`.
fn issue_iteration(b: &mut Builder<'_>, parts: &LoopParts, staged: &StagedBuffers, iv: Value, stage: Value) {
    let coords = iteration_coords(b, parts, iv);
    staged.issue(b, &parts.loads, &coords, stage);
}

/// The tile coordinates of the loads of the iteration whose induction
/// variable is `iv`, recomputed here from the loop's slice.
fn iteration_coords(b: &mut Builder<'_>, parts: &LoopParts, iv: Value) -> Vec<Vec<Value>> {
    let mut map: HashMap<Value, Value> = HashMap::from([(parts.iv, iv)]);
    for &op in &parts.load_slice {
        if !parts.loads.contains(&op) {
            b.clone_op(op, &mut map);
        }
    }
    parts
        .loads
        .iter()
        .map(|&l| Load::of(b.body, l).expect("staged loads are tile.load").indices(b.body).iter().map(|v| *map.get(v).unwrap_or(v)).collect())
        .collect()
}

/// Copies chunk `chunk` of the resident scales, which starts with the
/// iteration whose induction variable is `iv`, onto its barrier stage.
fn issue_resident_chunk(b: &mut Builder<'_>, parts: &LoopParts, staged: &StagedBuffers, iv: Value, chunk: Value) {
    let coords = iteration_coords(b, parts, iv);
    let (stage, _) = chunk_barrier(b, chunk);
    staged.issue_resident(b, &parts.loads, &coords, stage);
}

/// Every thread waits for chunk `chunk`'s copies.
fn wait_for_chunk(b: &mut Builder<'_>, resident: Resident, chunk: Value) {
    let (stage, round) = chunk_barrier(b, chunk);
    let phase = parity(b, round);
    MbarrierWait::build(b, resident.full, stage, phase, Attributes::new());
}

/// The resident barrier's stage chunk `chunk` arrives on and the round it
/// completes there.
fn chunk_barrier(b: &mut Builder<'_>, chunk: Value) -> (Value, Value) {
    let barriers = b.index(RESIDENT_BARRIERS);
    let stage = Remsi::build(b, chunk, barriers, Attributes::new()).result(b.body);
    let round = Divsi::build(b, chunk, barriers, Attributes::new()).result(b.body);
    (stage, round)
}

/// At the end of a chunk's last iteration, where another iteration
/// follows: a CTA barrier (every thread has read the chunk's scales), the
/// next chunk's copies, and every thread's wait for them. The loop's other
/// iterations wait for nothing but their stage: a wait at the top of each
/// costs the K loop more than the copies it replaces (measured:
/// docs/evidence.md, hopper/expand.rs, resident scales).
fn copy_next_chunk(b: &mut Builder<'_>, parts: &LoopParts, staged: &StagedBuffers, resident: Resident, iteration: Value, trip: Value, loc: &Location) {
    let c1 = b.index(1);
    let following = Addi::build(b, iteration, c1, Attributes::new()).result(b.body);
    let following = b.name(following, "following");
    let chunk = b.index(resident.chunk);
    let slot = Remsi::build(b, following, chunk, Attributes::new()).result(b.body);
    // The next chunk, counted from this one so that it is never the first.
    let this_chunk = Divsi::build(b, iteration, chunk, Attributes::new()).result(b.body);
    let next_chunk = Addi::build(b, this_chunk, c1, Attributes::new()).result(b.body);
    let next_chunk = b.name(next_chunk, "next_chunk");
    let c0 = b.index(0);
    let starts = Cmpi::build(b, slot, c0, "eq", Attributes::new()).result(b.body);
    let at_end = If::build(b, starts, Attributes::new()).op();
    let (_, end_block) = b.body.add_region(at_end, &[]);
    let mut eb = Builder::new(b.body, InsertPoint::End(end_block), loc.clone());
    let follows = Cmpi::build(&mut eb, following, trip, "slt", Attributes::new()).result(eb.body);
    let copy = If::build(&mut eb, follows, Attributes::new()).op();
    let (_, copy_block) = eb.body.add_region(copy, &[]);
    Yield::build(&mut eb, &[], Attributes::new());
    let mut cb = Builder::new(b.body, InsertPoint::End(copy_block), loc.clone());
    Barrier::build(&mut cb, Attributes::new());
    let iv = parts.induction_at(&mut cb, following);
    issue_resident_chunk(&mut cb, parts, staged, iv, next_chunk);
    wait_for_chunk(&mut cb, resident, next_chunk);
    Yield::build(&mut cb, &[], Attributes::new());
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
