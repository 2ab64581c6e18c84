//! `tile-warp-specialize{consumers=1|2 stages=N producer-regs=40 consumer-regs=232}`:
//! splits a kernel whose K loop stages dot operands through shared memory
//! into a producer warpgroup and one or two consumer warpgroups (seed 002's
//! steps 7 and 10 in Hopper form), connected by a full and an empty mbarrier
//! per stage.
//!
//! The kernel's work (the K loop and what follows it, or the loop over tiles
//! that `tile-persistent` made) is cloned into both roles of an
//! `nv.warp_specialize`, and each role keeps its part:
//! - the producer, with a small register budget, waits until a stage is
//!   empty (its first round passes at once: it waits for the parity before
//!   the barrier's first phase), arms the stage's full barrier and issues
//!   the TMA loads; the dots and the epilogue go;
//! - each consumer, with a large budget, waits until a stage is full, runs
//!   its wgmma with one group in flight, releases the stage the retired group
//!   read, drains, releases the last stage, and runs the epilogue. With two
//!   consumers each owns half of the M tile (a row window of A's buffer) and
//!   stores its half.
//! Stages and phases count iterations from the kernel's start, so a
//! persistent loop keeps them in step across tiles and the producer runs
//! ahead into the next tile while the consumers finish an epilogue.

use super::lower_to_nv::{emit_wgmma, replace_dot};
use super::tma_staging::{groups_in_flight, 
    dot_a, enclosing_loop, is_staged_load, loop_iteration, next_op, op_error, outermost_ancestor, stage_of, StagedBuffers,
    SMEM_BUDGET_BYTES,
};
use crate::options::{OptionKind, OptionSpec};
use crate::registry::PassInfo;
use crate::Pass;
use std::collections::HashMap;
use tilec_dialects::ir::{
    Attribute, Attributes, Block, Body, Builder, ElemType, InsertPoint, Op, Region, TileType, Type, Value,
};
use tilec_dialects::{Diagnostic, Function, Layout};

pub const INFO: PassInfo = PassInfo {
    name: "tile-warp-specialize",
    summary: "Split the K loop into a TMA producer warpgroup and wgmma consumer warpgroups",
    options: &[
        OptionSpec { name: "consumers", kind: OptionKind::Int { min: 1, max: 2 }, default: "2", help: "consumer warpgroups" },
        OptionSpec { name: "stages", kind: OptionKind::Int { min: 2, max: 8 }, default: "4", help: "shared-memory stages" },
        OptionSpec { name: "producer-regs", kind: OptionKind::Int { min: 24, max: 256 }, default: "40", help: "registers per producer thread" },
        OptionSpec { name: "consumer-regs", kind: OptionKind::Int { min: 24, max: 256 }, default: "232", help: "registers per consumer thread" },
    ],
    create: |o| {
        Box::new(WarpSpecialize {
            consumers: o.int("consumers"),
            stages: o.int("stages"),
            producer_regs: o.int("producer-regs"),
            consumer_regs: o.int("consumer-regs"),
            from_config: [("consumers", !o.given("consumers")), ("stages", !o.given("stages"))],
        })
    },
};

pub struct WarpSpecialize {
    consumers: i64,
    stages: i64,
    producer_regs: i64,
    consumer_regs: i64,
    /// Options the pipeline did not give, taken from `tile.config`.
    from_config: [(&'static str, bool); 2],
}

impl WarpSpecialize {
    /// The consumers and stages config selection chose for a warp-specialised
    /// schedule, where the pipeline gave none.
    fn apply_config(&mut self, func: &Function) {
        if super::select_config::config_word(func, "schedule") != Some("warp_specialized") {
            return;
        }
        for (key, take) in self.from_config {
            match super::select_config::config_int(func, key).filter(|_| take) {
                Some(v) if key == "consumers" => self.consumers = v,
                Some(v) => self.stages = v,
                None => {}
            }
        }
    }
}

/// Threads in a warpgroup: every consumer thread arrives on `empty`.
const WARPGROUP: i64 = 128;

impl Pass for WarpSpecialize {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn run(&mut self, func: &mut Function) -> Result<(), Diagnostic> {
        self.apply_config(func);
        for regs in [self.producer_regs, self.consumer_regs] {
            if !tilec_dialects::nv::roles::valid_register_budget(regs) {
                return Err(Diagnostic::error(func.loc.clone(), format!("tile-warp-specialize: {regs} registers is not a multiple of 8 from 24 to 256")));
            }
        }
        let region = func.region;
        let body = &mut func.body;
        let Some(k_loop) = body.walk_region(region).into_iter().find(|&op| {
            body.ops[op].def.name == "tile.for" && body.blocks[body.entry_block(body.ops[op].regions[0])].ops.iter().any(|&o| is_staged_load(body, o))
        }) else {
            return Ok(());
        };
        let loads = staged_loads(body, k_loop);
        let dots = loop_dots(body, k_loop);
        let block_m = self.check_split(body, k_loop, &dots)?;

        // Buffers and barriers before the work; then the roles.
        let root = outermost_ancestor(body, k_loop);
        let entry = body.ops[root].parent.expect("attached");
        let loc = body.ops[k_loop].loc.clone();
        let mut b = Builder::new(body, InsertPoint::Before(root), loc.clone());
        let staged = StagedBuffers::allocate(&mut b, &loads, self.stages);
        let total = self.stages * (staged.stage_bytes + 16);
        if total > SMEM_BUDGET_BYTES {
            return Err(op_error(
                body,
                k_loop,
                format!("{} stages of {} bytes need {total} bytes of shared memory, over the {SMEM_BUDGET_BYTES}-byte budget of sm_90; at most {} fit", self.stages, staged.stage_bytes, SMEM_BUDGET_BYTES / (staged.stage_bytes + 16)),
            ));
        }
        let mut b = Builder::new(body, InsertPoint::Before(root), loc.clone());
        let mut attrs = Attributes::new();
        attrs.set("arrivals", Attribute::Int(WARPGROUP * self.consumers, ElemType::I64));
        let empty = b.value("nv.alloc_mbarriers", vec![], Type::MBarrier(self.stages), attrs);
        b.name(empty, "empty");
        let mut attrs = Attributes::new();
        attrs.set("consumers", Attribute::Int(self.consumers, ElemType::I64));
        attrs.set("producer_regs", Attribute::Int(self.producer_regs, ElemType::I64));
        attrs.set("consumer_regs", Attribute::Int(self.consumer_regs, ElemType::I64));
        let ws = b.op("nv.warp_specialize", vec![], &[], attrs);
        let (_, producer) = b.body.add_region(ws, &[]);
        let (_, consumer) = b.body.add_region(ws, &[Type::INDEX]);
        let c = b.body.blocks[consumer].args[0];
        b.name(c, "consumer");

        let work: Vec<Op> = {
            let ops = &body.blocks[entry].ops;
            let from = ops.iter().position(|&o| o == root).expect("root is in the entry block");
            ops[from..].iter().copied().filter(|&o| !body.ops[o].def.traits.terminator).collect()
        };
        let producer_map = clone_work(body, entry, &work, producer);
        let consumer_map = clone_work(body, entry, &work, consumer);
        for &op in work.iter().rev() {
            body.remove_op(op);
        }

        let roles = Roles { stages: self.stages, consumers: self.consumers, block_m, staged: &staged, empty, region };
        roles.producer(body, op_clone(body, &producer_map, k_loop, producer), &producer_map, &loads)?;
        roles.consumer(body, op_clone(body, &consumer_map, k_loop, consumer), &consumer_map, &loads, c)?;
        func.attrs.set("num_warps", Attribute::Int(4 * (1 + self.consumers), ElemType::I64));
        Ok(())
    }
}

impl WarpSpecialize {
    /// The tile's BLOCK_M, after checking each consumer gets whole m64 blocks.
    fn check_split(&self, body: &Body, k_loop: Op, dots: &[Op]) -> Result<i64, Diagnostic> {
        let Some(&dot) = dots.first() else {
            return Err(op_error(body, k_loop, "stages tiles through shared memory but has no tile.dot to specialise".into()));
        };
        let acc = body.value_type(body.ops[dot].operands[2]).as_tile().expect("verified").clone();
        let block_m = acc.shape[0];
        if block_m % (64 * self.consumers) != 0 {
            return Err(op_error(body, dot, format!("BLOCK_M ({block_m}) cannot be split into {} consumers of whole 64-row wgmma blocks", self.consumers)));
        }
        if body.ops[dot].attrs.has("transpose_a") {
            return Err(op_error(body, dot, "tile-warp-specialize splits A by rows; a transposed A is not supported".into()));
        }
        Ok(block_m)
    }
}

fn staged_loads(body: &Body, k_loop: Op) -> Vec<Op> {
    let block = body.entry_block(body.ops[k_loop].regions[0]);
    body.blocks[block].ops.iter().copied().filter(|&o| is_staged_load(body, o)).collect()
}

fn loop_dots(body: &Body, k_loop: Op) -> Vec<Op> {
    let block = body.entry_block(body.ops[k_loop].regions[0]);
    body.blocks[block].ops.iter().copied().filter(|&o| body.ops[o].def.name == "tile.dot").collect()
}

/// Clones `work` into `role` (before its terminator, which this adds), with
/// the tile constants defined before the work copied first so each role can
/// retype its own.
fn clone_work(body: &mut Body, entry: Block, work: &[Op], role: Block) -> HashMap<Value, Value> {
    let mut map = HashMap::new();
    let loc = body.ops[work[0]].loc.clone();
    let mut b = Builder::new(body, InsertPoint::End(role), loc);
    let outside: Vec<Op> = b.body.blocks[entry].ops.iter().copied().filter(|o| !work.contains(o)).collect();
    for op in outside {
        let data = &b.body.ops[op];
        if data.def.traits.constant && b.body.value_type(data.results[0]).as_tile().is_some() {
            b.clone_op(op, &mut map);
        }
    }
    for &op in work {
        b.clone_op(op, &mut map);
    }
    b.op("tile.yield", vec![], &[], Attributes::new());
    map
}

/// The copy in `role` of op `op` of the original work.
fn op_clone(body: &Body, map: &HashMap<Value, Value>, op: Op, role: Block) -> Op {
    let region = body.blocks[role].parent.expect("in a region");
    let marker = body.ops[op].results.first().map(|r| map[r]);
    body.walk_region(region)
        .into_iter()
        .find(|&o| match marker {
            Some(m) => body.ops[o].results.first() == Some(&m),
            None => false,
        })
        .expect("the K loop was cloned")
}

/// How a K loop's iterations map to stages and phases.
struct Counting {
    trip: Value,
    base: Option<Value>,
    n: Value,
}

struct Roles<'a> {
    stages: i64,
    consumers: i64,
    block_m: i64,
    staged: &'a StagedBuffers,
    empty: Value,
    region: Region,
}

impl Roles<'_> {
    /// What the K loop's iterations are counted from, built before the
    /// loop: its trip count, the stage count, and the iterations of earlier
    /// tiles (inside a loop over tiles).
    fn counting(&self, body: &mut Body, k_loop: Op) -> Counting {
        let mut b = Builder::new(body, InsertPoint::Before(k_loop), body.ops[k_loop].loc.clone());
        let ops = b.body.ops[k_loop].operands.clone();
        let span = b.index_op("tile.subi", ops[1], ops[0]);
        let trip = b.index_op("tile.ceildivsi", span, ops[2]);
        let base = enclosing_loop(b.body, k_loop).map(|outer| {
            let done = loop_iteration(&mut b, outer);
            b.index_op("tile.muli", done, trip)
        });
        let n = b.index(self.stages);
        Counting { trip, base, n }
    }

    /// The current iteration's local number, stage and round.
    fn position(&self, b: &mut Builder<'_>, k_loop: Op, count: &Counting) -> (Value, Value, Value) {
        let local = loop_iteration(b, k_loop);
        let global = match count.base {
            Some(base) => b.index_op("tile.addi", base, local),
            None => local,
        };
        let stage = b.index_op("tile.remsi", global, count.n);
        let round = b.index_op("tile.divsi", global, count.n);
        (local, b.name(stage, "stage"), round)
    }

    fn producer(&self, body: &mut Body, k_loop: Op, map: &HashMap<Value, Value>, loads: &[Op]) -> Result<(), Diagnostic> {
        let clones: Vec<Op> = loads.iter().map(|&l| body.defining_op(map[&body.result(l, 0)]).expect("cloned load")).collect();
        let staged = self.staged.rekeyed(body, loads, &clones);
        let count = self.counting(body, k_loop);
        let first = clones[0];
        let mut b = Builder::new(body, InsertPoint::Before(first), body.ops[first].loc.clone());
        let (_, stage, round) = self.position(&mut b, k_loop, &count);
        let c1 = b.index(1);
        let next_round = b.index_op("tile.addi", round, c1);
        let two = b.index(2);
        let phase = b.index_op("tile.remsi", next_round, two);
        let phase = b.name(phase, "empty_phase");
        b.op("nv.mbarrier_wait", vec![self.empty, stage, phase], &[], Attributes::new());
        let coords: Vec<Vec<Value>> = clones.iter().map(|&l| b.body.ops[l].operands[1..].to_vec()).collect();
        staged.issue(&mut b, &clones, &coords, stage, &Attributes::new());
        for dot in loop_dots(body, k_loop) {
            let (result, acc) = (body.result(dot, 0), body.ops[dot].operands[2]);
            let to_registers = dot_a(body, dot).to_registers;
            body.replace_all_uses(self.region, result, acc);
            body.remove_op(dot);
            if let Some(convert) = to_registers {
                body.remove_op(convert);
            }
        }
        for load in clones {
            body.remove_op(load);
        }
        let role = body.ops[k_loop].parent.map(|b| outer_role_block(body, b)).expect("attached");
        for op in body.walk_region(body.blocks[role].parent.expect("in a region")) {
            if body.ops[op].def.name == "tile.store" {
                body.remove_op(op);
            }
        }
        Ok(())
    }

    fn consumer(&self, body: &mut Body, k_loop: Op, map: &HashMap<Value, Value>, loads: &[Op], c: Value) -> Result<(), Diagnostic> {
        let clones: Vec<Op> = loads.iter().map(|&l| body.defining_op(map[&body.result(l, 0)]).expect("cloned load")).collect();
        let staged = self.staged.rekeyed(body, loads, &clones);
        let role = outer_role_block(body, body.ops[k_loop].parent.expect("attached"));
        let role_region = body.blocks[role].parent.expect("in a region");
        let loc = body.ops[k_loop].loc.clone();

        // With two consumers, each reads its own rows of A's buffer.
        let half = self.block_m / self.consumers;
        let mut a_view: HashMap<Value, Value> = HashMap::new();
        let role_first = body.blocks[role].ops[0];
        let mut b = Builder::new(body, InsertPoint::Before(role_first), loc.clone());
        let row = if self.consumers > 1 {
            let h = b.index(half);
            let row = b.index_op("tile.muli", c, h);
            Some(b.name(row, "row"))
        } else {
            None
        };
        let dots = loop_dots(b.body, k_loop);
        for &dot in &dots {
            let a = dot_a(b.body, dot).staged;
            let buf = staged.buffer_of[&a];
            let view = match row {
                Some(row) if !a_view.contains_key(&a) => {
                    let mut smem = b.body.value_type(buf).as_smem().expect("buffer").clone();
                    smem.tile.shape[0] = half;
                    let v = b.value("nv.smem_rows", vec![buf, row], Type::Smem(smem), Attributes::new());
                    b.name(v, "a_rows")
                }
                Some(_) => a_view[&a],
                None => buf,
            };
            a_view.insert(a, view);
        }

        // The loop: wait full, wgmma, release the previous stage.
        let count = self.counting(body, k_loop);
        let (trip, base, n) = (count.trip, count.base, count.n);
        let first = body.blocks[body.entry_block(body.ops[k_loop].regions[0])].ops[0];
        let mut b = Builder::new(body, InsertPoint::Before(first), loc.clone());
        let (local, stage, round) = self.position(&mut b, k_loop, &count);
        let two = b.index(2);
        let phase = b.index_op("tile.remsi", round, two);
        let phase = b.name(phase, "phase");
        b.op("nv.mbarrier_wait", vec![staged.full, stage, phase], &[], Attributes::new());
        for &dot in &dots {
            let (a, bb) = (a_view[&dot_a(body, dot).staged], staged.buffer_of[&body.ops[dot].operands[1]]);
            let pending = groups_in_flight(body, dot, 1);
            let mut b = Builder::new(body, InsertPoint::Before(dot), body.ops[dot].loc.clone());
            let done = emit_wgmma(&mut b, dot, [a, stage], [bb, stage], pending);
            replace_dot(body, self.region, dot, done);
        }
        let terminator = body.terminator(body.entry_block(body.ops[k_loop].regions[0])).expect("verified");
        let mut b = Builder::new(body, InsertPoint::Before(terminator), loc.clone());
        let c0 = b.index(0);
        let has_prev = cmp(&mut b, "sgt", local, c0);
        let release = b.op("tile.if", vec![has_prev], &[], Attributes::new());
        let (_, rb) = b.body.add_region(release, &[]);
        let mut r = Builder::new(body, InsertPoint::End(rb), loc.clone());
        let c1 = r.index(1);
        let before = r.index_op("tile.subi", local, c1);
        let prev = stage_of(&mut r, base, before, n);
        let prev = r.name(prev, "prev");
        r.op("nv.mbarrier_arrive", vec![self.empty, prev], &[], Attributes::new());
        r.op("tile.yield", vec![], &[], Attributes::new());
        for load in clones {
            body.remove_op(load);
        }

        // After the loop: drain, release the last stage, then the epilogue.
        let results = body.ops[k_loop].results.clone();
        let after = next_op(body, k_loop);
        let mut b = Builder::new(body, InsertPoint::Before(after), loc.clone());
        if !results.is_empty() {
            let types: Vec<Type> = results.iter().map(|&r| b.body.value_type(r).clone()).collect();
            let mut attrs = Attributes::new();
            attrs.set("pending", Attribute::Int(0, ElemType::I64));
            let drain = b.op("nv.wgmma_wait", results.clone(), &types, attrs);
            for (i, &res) in results.iter().enumerate() {
                let drained = b.body.result(drain, i);
                b.body.values[drained].name_hint = b.body.values[res].name_hint.take();
                b.body.replace_all_uses(self.region, res, drained);
                b.body.ops[drain].operands[i] = res;
            }
        }
        let c0 = b.index(0);
        let ran = cmp(&mut b, "sgt", trip, c0);
        let last = b.op("tile.if", vec![ran], &[], Attributes::new());
        let (_, lb) = b.body.add_region(last, &[]);
        let mut l = Builder::new(body, InsertPoint::End(lb), loc);
        let c1 = l.index(1);
        let last_local = l.index_op("tile.subi", trip, c1);
        let last_stage = stage_of(&mut l, base, last_local, n);
        l.op("nv.mbarrier_arrive", vec![self.empty, last_stage], &[], Attributes::new());
        l.op("tile.yield", vec![], &[], Attributes::new());

        self.retype_consumer(body, role_region, half);
        if row.is_some() {
            self.offset_stores(body, role_region, c);
        }
        Ok(())
    }

    /// A consumer is one warpgroup holding `half` rows: its MMA-layout tiles
    /// (and A's register tiles, whose layout has an MMA parent) shrink to
    /// those rows and their layout to one warpgroup's warps.
    fn retype_consumer(&self, body: &mut Body, role_region: Region, half: i64) {
        let mut values: Vec<Value> = Vec::new();
        for op in body.walk_region(role_region) {
            values.extend(body.ops[op].results.iter().copied());
            for &r in &body.ops[op].regions {
                values.extend(body.blocks[body.entry_block(r)].args.iter().copied());
            }
        }
        for v in values {
            let Some(tile) = body.value_type(v).as_tile() else { continue };
            let layout = match &tile.layout {
                Some(mma @ Layout::Mma { .. }) => one_warpgroup(mma),
                // A in registers: rows of this consumer, for its one warpgroup.
                Some(Layout::DotOperand { op_idx, k_width, parent }) if matches!(**parent, Layout::Mma { .. }) => {
                    Layout::DotOperand { op_idx: *op_idx, k_width: *k_width, parent: Box::new(one_warpgroup(parent)) }
                }
                _ => continue,
            };
            let mut shape = tile.shape.clone();
            if shape[0] == self.block_m {
                shape[0] = half;
            }
            body.values[v].ty = Type::Tile(TileType { shape, elem: tile.elem, layout: Some(layout) });
        }
    }

    /// Consumer `c` stores tile row `m * consumers + c` of the halved tiles.
    fn offset_stores(&self, body: &mut Body, role_region: Region, c: Value) {
        for op in body.walk_region(role_region) {
            if body.ops[op].def.name != "tile.store" {
                continue;
            }
            let m = body.ops[op].operands[2];
            let mut b = Builder::new(body, InsertPoint::Before(op), body.ops[op].loc.clone());
            let k = b.index(self.consumers);
            let scaled = b.index_op("tile.muli", m, k);
            let row = b.index_op("tile.addi", scaled, c);
            body.ops[op].operands[2] = row;
        }
    }
}

/// An MMA layout held by one warpgroup (a consumer's).
fn one_warpgroup(mma: &Layout) -> Layout {
    let Layout::Mma { version, instr_shape, .. } = mma else { unreachable!("callers match an MMA layout") };
    Layout::Mma { version: *version, warps_per_cta: vec![4, 1], instr_shape: instr_shape.clone() }
}

fn cmp(b: &mut Builder<'_>, predicate: &str, lhs: Value, rhs: Value) -> Value {
    let mut attrs = Attributes::new();
    attrs.set("predicate", Attribute::String(predicate.into()));
    b.value("tile.cmpi", vec![lhs, rhs], Type::Scalar(ElemType::I1), attrs)
}

/// The block of the `nv.warp_specialize` region that (transitively) holds
/// `block`.
fn outer_role_block(body: &Body, mut block: Block) -> Block {
    loop {
        let region = body.blocks[block].parent.expect("in a region");
        let owner = body.regions[region].parent.expect("inside nv.warp_specialize");
        if body.ops[owner].def.name == "nv.warp_specialize" {
            return block;
        }
        block = body.ops[owner].parent.expect("attached");
    }
}
