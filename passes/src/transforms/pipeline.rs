//! `tile-pipeline{stages=N wait-depth=W}`: software-pipelines a K loop whose
//! dot operands are staged through shared memory (seed 002's steps 5 and 8,
//! seed 003's pipelined kernel).
//!
//! Buffers get N stages, each with its own mbarrier. A prologue issues the
//! TMA loads of the first N - W iterations; iteration i waits on stage
//! i mod N with parity (i / N) mod 2, issues its wgmma asynchronously and
//! waits until at most W groups are in flight, which frees the stage read W
//! iterations ago; after a CTA barrier that stage is refilled with iteration
//! i + N - W, if there is one. After the loop one wait drains the last groups.
//! The schedule is written on the loop's ops with effects, so it can be read
//! in the printed IR: `pipeline.stage` is 0 for the refill (it loads for
//! iteration i + N - W) and N - W for the wait and the wgmma ops (they
//! consume what was loaded that many iterations earlier), and
//! `pipeline.order` is the op's place in the dependence graph's topological
//! order.

use super::lower_to_nv::{emit_wgmma, remove_staged_loads, replace_dot};
use super::tma_staging::{dot_a, groups_in_flight, enclosing_loop, is_staged_load, loop_iteration, next_op, op_error, outermost_ancestor, stage_of, StagedBuffers, SMEM_BUDGET_BYTES};
use crate::analysis::dependence::BlockDependences;
use crate::options::{OptionKind, OptionSpec};
use crate::registry::PassInfo;
use crate::Pass;
use std::collections::{HashMap, HashSet};
use tilec_dialects::ir::{Attribute, Attributes, Block, Body, Builder, ElemType, EntityRef, InsertPoint, Op, Region, Type, Value};
use tilec_dialects::{Diagnostic, Function};

pub const INFO: PassInfo = PassInfo {
    name: "tile-pipeline",
    summary: "Multi-buffer dot operands and overlap TMA loads with asynchronous wgmma",
    options: &[
        OptionSpec { name: "stages", kind: OptionKind::Int { min: 1, max: 8 }, default: "3", help: "shared-memory buffers per operand" },
        OptionSpec {
            name: "wait-depth",
            kind: OptionKind::Int { min: 0, max: 7 },
            default: "1",
            help: "wgmma groups left in flight each iteration (less than stages)",
        },
    ],
    create: |options| {
        Box::new(Pipeline {
            stages: options.int("stages"),
            wait_depth: options.int("wait-depth"),
            from_config: !options.given("stages"),
        })
    },
};

pub struct Pipeline {
    stages: i64,
    wait_depth: i64,
    /// Take `stages` from the function's `tile.config` (no `stages` given).
    from_config: bool,
}

impl Pipeline {
    /// The stages config selection chose, when the pipeline gave none; one
    /// stage leaves no group in flight.
    fn apply_config(&mut self, func: &Function) {
        if let Some(stages) = super::select_config::config_int(func, "stages").filter(|_| self.from_config) {
            self.stages = stages;
            self.wait_depth = self.wait_depth.min(stages - 1);
        }
    }
}

impl Pass for Pipeline {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn run(&mut self, func: &mut Function) -> Result<(), Diagnostic> {
        self.apply_config(func);
        let loops: Vec<Op> = func
            .body
            .walk_region(func.region)
            .into_iter()
            .filter(|&op| {
                func.body.ops[op].def.name == "tile.for"
                    && func.body.blocks[func.body.entry_block(func.body.ops[op].regions[0])].ops.iter().any(|&o| is_staged_load(&func.body, o))
            })
            .collect();
        for for_op in loops {
            if self.wait_depth >= self.stages {
                return Err(op_error(
                    &func.body,
                    for_op,
                    format!("cannot keep {} wgmma group(s) in flight with {} stage(s): wait-depth must be less than stages", self.wait_depth, self.stages),
                ));
            }
            self.pipeline_loop(&mut func.body, func.region, for_op)?;
        }
        Ok(())
    }
}

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

impl Pipeline {
    fn pipeline_loop(&self, body: &mut Body, region: Region, for_op: Op) -> Result<(), Diagnostic> {
        let parts = analyse(body, for_op)?;
        let depth = body.blocks[parts.block]
            .ops
            .iter()
            .filter(|&&o| body.ops[o].def.name == "tile.dot")
            .map(|&o| groups_in_flight(body, o, self.wait_depth))
            .min()
            .unwrap_or(self.wait_depth);
        let stages = self.stages;
        let loc = body.ops[for_op].loc.clone();

        // Before the loop: buffers, barriers, trip count and the prologue.
        let anchor = outermost_ancestor(body, for_op);
        let mut b = Builder::new(body, InsertPoint::Before(anchor), loc.clone());
        let staged = StagedBuffers::allocate(&mut b, &parts.loads, stages);
        let total = stages * staged.stage_bytes + 8 * stages;
        if total > SMEM_BUDGET_BYTES {
            let fit = (SMEM_BUDGET_BYTES / (staged.stage_bytes + 8)).max(0);
            return Err(op_error(
                body,
                for_op,
                format!("{stages} stages of {} bytes need {total} bytes of shared memory, over the {SMEM_BUDGET_BYTES}-byte budget of sm_90; at most {fit} stage(s) fit", staged.stage_bytes),
            ));
        }
        let mut b = Builder::new(body, InsertPoint::Before(for_op), loc.clone());
        let ub = b.body.ops[for_op].operands[1];
        let span = b.index_op("tile.subi", ub, parts.lb);
        let trip = b.index_op("tile.ceildivsi", span, parts.step);
        let trip = b.name(trip, "trip");
        // Inside a loop over output tiles the barriers keep their phases from
        // one tile to the next: count iterations from the kernel's start.
        let base = match enclosing_loop(b.body, for_op) {
            Some(outer) => {
                b.op("nv.barrier", vec![], &[], Attributes::new());
                let done = loop_iteration(&mut b, outer);
                let base = b.index_op("tile.muli", done, trip);
                Some(b.name(base, "base"))
            }
            None => None,
        };
        let ahead = b.index(stages - depth);
        let prologue_count = b.index_op("tile.minsi", trip, ahead);
        let (c0, c1) = (b.index(0), b.index(1));
        let n = b.index(stages);
        let prologue = b.op("tile.for", vec![c0, prologue_count, c1], &[], Attributes::new());
        let (_, pro_block) = b.body.add_region(prologue, &[Type::INDEX]);
        let p = b.body.blocks[pro_block].args[0];
        b.name(p, "p");
        let mut pb = Builder::new(body, InsertPoint::End(pro_block), loc.clone());
        // Without a base the prologue's iterations are the first N - W, their
        // own stages.
        let pro_stage = if base.is_some() { stage_of(&mut pb, base, p, n) } else { p };
        issue_iteration(&mut pb, &parts, &staged, p, pro_stage);
        pb.op("tile.yield", vec![], &[], Attributes::new());

        // The loop body: wait, wgmma, refill.
        let first = body.blocks[parts.block].ops[0];
        let mut b = Builder::new(body, InsertPoint::Before(first), loc.clone());
        let iteration = loop_iteration(&mut b, for_op);
        let iteration = b.name(iteration, "iteration");
        let global = match base {
            Some(base) => b.index_op("tile.addi", base, iteration),
            None => iteration,
        };
        let stage = b.index_op("tile.remsi", global, n);
        let stage = b.name(stage, "stage");
        let round = b.index_op("tile.divsi", global, n);
        let two = b.index(2);
        let phase = b.index_op("tile.remsi", round, two);
        let phase = b.name(phase, "phase");
        let wait = b.op("nv.mbarrier_wait", vec![staged.full, stage, phase], &[], Attributes::new());

        let dots: Vec<Op> = body.blocks[parts.block].ops.iter().copied().filter(|&o| body.ops[o].def.name == "tile.dot").collect();
        let mut consumers = vec![wait];
        for &dot in &dots {
            let a_tile = dot_a(body, dot).staged;
            let (Some(&a), Some(&bb)) = (staged.buffer_of.get(&a_tile), staged.buffer_of.get(&body.ops[dot].operands[1])) else {
                return Err(op_error(body, dot, "reads a tile that is not loaded in the pipelined loop".into()));
            };
            let mut b = Builder::new(body, InsertPoint::Before(dot), body.ops[dot].loc.clone());
            let done = emit_wgmma(&mut b, dot, [a, stage], [bb, stage], depth);
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
        let mut rb = Builder::new(body, InsertPoint::End(refill_block), loc.clone());
        rb.op("nv.barrier", vec![], &[], Attributes::new());
        let next_stage = stage_of(&mut rb, base, next, n);
        let next_stage = rb.name(next_stage, "next_stage");
        let scaled = rb.index_op("tile.muli", next, parts.step);
        let next_iv = rb.index_op("tile.addi", parts.lb, scaled);
        issue_iteration(&mut rb, &parts, &staged, next_iv, next_stage);
        rb.op("tile.yield", vec![], &[], Attributes::new());

        remove_staged_loads(body, region, &parts.loads)?;
        remove_dead_slice(body, region, &parts);
        annotate_schedule(body, &parts, &consumers, refill, stages - depth);

        // Drain: nothing reads the accumulators before every group is done.
        let results = body.ops[for_op].results.clone();
        if !results.is_empty() {
            let after = next_op(body, for_op);
            let types: Vec<Type> = results.iter().map(|&r| body.value_type(r).clone()).collect();
            let mut b = Builder::new(body, InsertPoint::Before(after), loc);
            let mut attrs = Attributes::new();
            attrs.set("pending", Attribute::Int(0, ElemType::I64));
            let drain = b.op("nv.wgmma_wait", results.clone(), &types, attrs);
            for (i, &r) in results.iter().enumerate() {
                let drained = body.result(drain, i);
                body.values[drained].name_hint = body.values[r].name_hint.take();
                body.replace_all_uses(region, r, drained);
                body.ops[drain].operands[i] = r;
            }
        }
        Ok(())
    }
}

fn analyse(body: &Body, for_op: Op) -> Result<LoopParts, Diagnostic> {
    let block = body.entry_block(body.ops[for_op].regions[0]);
    let iv = body.blocks[block].args[0];
    let iter_args: HashSet<Value> = body.blocks[block].args[1..].iter().copied().collect();
    let loads: Vec<Op> = body.blocks[block].ops.iter().copied().filter(|&o| is_staged_load(body, o)).collect();
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

/// Records the schedule on the loop's ops with effects: the refill is stage
/// 0, the consumers (barrier wait, fragment loads and wgmma ops) stage
/// `distance`, and each
/// gets its topological order in the loop's dependence graph.
fn annotate_schedule(body: &mut Body, parts: &LoopParts, consumers: &[Op], refill: Op, distance: i64) {
    let order = BlockDependences::build(body, parts.block).topological_order();
    for op in body.blocks[parts.block].ops.clone() {
        let name = body.ops[op].def.name;
        let stage = if op == refill {
            0
        } else if consumers.contains(&op) || name.starts_with("nv.wgmma") || name == "nv.load_fragment" {
            distance
        } else {
            continue;
        };
        let attrs = &mut body.ops[op].attrs;
        attrs.set("pipeline.stage", Attribute::Int(stage, ElemType::I64));
        attrs.set("pipeline.order", Attribute::Int(order[&op] as i64, ElemType::I64));
    }
}
