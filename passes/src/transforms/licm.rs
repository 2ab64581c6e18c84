//! `tile-licm`: hoists loop-invariant pure ops (all operands defined outside
//! the loop) out of `tile.for`, as MLIR's loop-invariant-code-motion does.
//! After `tile-persistent` it moves the K loop's trip count and the like out
//! of the loop over tiles.

use crate::phase::PhaseRule;
use crate::pass::PassInfo;
use crate::pass::{Pass, Statistic};
use tilec_dialects::ir::{Body, Op};
use tilec_dialects::tile::For;
use tilec_dialects::{Diagnostic, Function};

/// `tile-licm`'s registration: name, options, phases and constructor.
pub const INFO: PassInfo =
    PassInfo { name: "tile-licm", summary: "Hoist loop-invariant pure ops out of tile.for loops", options: &[], phases: PhaseRule::ANY, create: |_| Box::new(Licm::default()) };

/// The `tile-licm` pass with its options resolved.
#[derive(Default)]
pub struct Licm {
    hoisted: u64,
}

impl Pass for Licm {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn run(&mut self, func: &mut Function) -> Result<(), Diagnostic> {
        let body = &mut func.body;
        while let Some((op, loop_op)) = find_invariant(body, func.region) {
            body.remove_op(op);
            body.insert_op_before(loop_op, op);
            self.hoisted += 1;
        }
        Ok(())
    }

    /// A hoisted op is pure: no barrier, access or wait moves, and the
    /// values the verifier reads (stages, phases, coordinates) are the same
    /// computed once before the loop as in each iteration.
    fn preserves_barriers(&self) -> bool {
        true
    }

    fn statistics(&self) -> Vec<Statistic> {
        vec![Statistic { name: "num-hoisted", description: "Number of ops hoisted out of loops", value: self.hoisted }]
    }
}

/// A pure op inside a loop whose operands are all defined outside it, and
/// that loop.
fn find_invariant(body: &Body, region: tilec_dialects::Region) -> Option<(Op, Op)> {
    for loop_op in body.walk_region(region) {
        let Some(for_op) = For::of(body, loop_op) else { continue };
        let inner = for_op.region(body);
        let direct = &body.blocks[body.entry_block(inner)].ops;
        let candidate = direct.iter().copied().find(|&op| {
            body.is_pure_leaf(op) && body.ops[op].operands.iter().all(|&v| !body.defined_within(v, loop_op))
        });
        if let Some(op) = candidate {
            return Some((op, loop_op));
        }
    }
    None
}
