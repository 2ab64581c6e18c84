//! The software-pipelining schedule of a K loop, as Triton splits
//! pipelining: the schedule says how far ahead each stage's loads run and
//! how many wgmma groups stay in flight; an expansion
//! ([`crate::hopper::expand`] for one warpgroup, `tile-warp-specialize`
//! across producer and consumer roles) builds the loop from it. The
//! schedule is recorded on the expanded loop's ops (`pipeline.stage`,
//! `pipeline.order`) so it can be read in the printed IR.

use crate::analysis::dependence::BlockDependences;
use crate::hopper::staging::{is_copied_load, is_staged_load};
use crate::hopper::wgmma::groups_in_flight;
use tilec_dialects::ir::{Attribute, Block, Body, ElemType, Op};
use tilec_dialects::registry::Opcode;
use crate::hopper::dot::StagedDot;
use tilec_dialects::tile::For;

/// The body block of `k_loop`.
pub fn loop_block(body: &Body, k_loop: For) -> Block {
    body.entry_block(k_loop.region(body))
}

/// `op` if it is a `tile.for` whose body stages tiles through shared
/// memory: a loop to schedule.
pub fn staged_loop(body: &Body, op: Op) -> Option<For> {
    For::of(body, op).filter(|&k_loop| body.blocks[loop_block(body, k_loop)].ops.iter().any(|&o| is_staged_load(body, o)))
}

/// The loads of `block` that its stages carry, in order: tiles staged by
/// TMA and, with `copy_scales`, the scales copied with them.
pub fn staged_loads(body: &Body, block: Block, copy_scales: bool) -> Vec<Op> {
    body.blocks[block].ops.iter().copied().filter(|&o| is_staged_load(body, o) || (copy_scales && is_copied_load(body, o))).collect()
}

/// The dots (`tile.dot` and `tile.dot_scaled`) of `block`, in order.
pub fn dots(body: &Body, block: Block) -> Vec<StagedDot> {
    body.blocks[block].ops.iter().filter_map(|&o| StagedDot::of(body, o)).collect()
}

/// A K loop's schedule: `stages` buffers per operand, and `in_flight`
/// wgmma groups left running each iteration, which frees the stage read
/// that many iterations ago.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoopSchedule {
    /// Buffers per staged operand.
    pub stages: i64,
    /// wgmma groups left running past each iteration.
    pub in_flight: i64,
}

impl LoopSchedule {
    /// The schedule of `k_loop` over `stages` stages with at most `wanted`
    /// groups in flight: none where a dot reads A in registers.
    pub fn of_loop(body: &Body, k_loop: For, stages: i64, wanted: i64) -> LoopSchedule {
        let in_flight = dots(body, loop_block(body, k_loop)).into_iter().map(|dot| groups_in_flight(body, dot, wanted)).min().unwrap_or(wanted);
        LoopSchedule { stages, in_flight }
    }

    /// How many iterations ahead of its wgmma a stage is loaded: N - W.
    pub fn distance(&self) -> i64 {
        self.stages - self.in_flight
    }

    /// Records the schedule on the expanded loop's ops with effects: the
    /// refill is stage 0, the consumers (barrier wait, fragment loads and
    /// wgmma ops) stage [`Self::distance`], and each gets its topological
    /// order in the loop's dependence graph.
    pub fn annotate(&self, body: &mut Body, block: Block, consumers: &[Op], refill: Op) {
        let order = BlockDependences::build(body, block).topological_order();
        for op in body.blocks[block].ops.clone() {
            let is_wgmma_step = matches!(
                body.opcode(op),
                Opcode::NvWgmmaFence | Opcode::NvWgmma | Opcode::NvWgmmaCommit | Opcode::NvWgmmaWait | Opcode::NvLoadFragment
            );
            let stage = if op == refill {
                0
            } else if consumers.contains(&op) || is_wgmma_step {
                self.distance()
            } else {
                continue;
            };
            let attrs = &mut body.ops[op].attrs;
            attrs.set("pipeline.stage", Attribute::Int(stage, ElemType::I64));
            attrs.set("pipeline.order", Attribute::Int(order[&op] as i64, ElemType::I64));
        }
    }
}

