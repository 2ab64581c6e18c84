//! Reconvergence after one thread's branch: an `elected` op lowers to a
//! branch that one thread takes, and an `aligned` op (a `.sync.aligned`
//! wgmma instruction, `ldmatrix`) must be executed by every thread of its
//! warpgroup together. Where such an op follows the branch's join with
//! no barrier between, LLVM's NVPTX back end may copy it into the branch
//! (it did, with `wgmma.wait_group` after a deferred epilogue's TMA store:
//! the warpgroup no longer ran it together, and the kernel hung). So on
//! every path from an elected op to the next aligned op, an op that
//! `converges` (a warpgroup, CTA or cluster barrier, an mbarrier wait) must
//! come first.
//!
//! A path runs forward through the rest of the block, out of the
//! `tile.if`s around it, and through or past each `tile.if` it meets (its
//! body may be skipped). A loop's boundary (or a warp_specialize's) ends the
//! path: the back end does not move code across a loop's header or exit,
//! and every thread takes both. An mbarrier wait counts as converging from
//! observation (no kernel has shown an aligned op moved across one), where a
//! barrier's convergent instruction guarantees it. Memory order is not this
//! check's concern; the simulation checks it.

use crate::pass::op_error;
use tilec_dialects::ir::{Block, Body, Op};
use tilec_dialects::registry::Opcode;
use tilec_dialects::{Diagnostic, Function};

/// Where a path from an elected op ends within one block and the regions
/// of the ops it meets.
enum Reach {
    /// At an aligned op, with nothing converging before it.
    Aligned(Op),
    /// At a barrier or wait that converges the threads, or a loop's boundary.
    Converged,
    /// At the end of the block: the path goes on after its owner.
    FallsThrough,
}

/// Checks every elected op of `func`: the first aligned op a path from it
/// reaches before the threads reconverge is the error, located at the
/// elected op (where the barrier goes).
pub fn check_reconvergence(func: &Function) -> Result<(), Diagnostic> {
    let body = &func.body;
    for op in body.walk_region(func.region) {
        if !body.ops[op].def.traits.elected {
            continue;
        }
        if let Some(aligned) = after(body, op) {
            let at = &body.ops[aligned].loc;
            return Err(op_error(
                body,
                op,
                format!(
                    "is one thread's branch, and '{}' at {at}, which every thread of the warpgroup must execute together, follows it with no barrier or wait between: the back end may move it into the branch; add `nv.barrier {{warpgroup}}` after this op",
                    body.ops[aligned].def.name
                ),
            ));
        }
    }
    Ok(())
}

/// The first aligned op some path from just after `op` reaches before the
/// threads reconverge.
fn after(body: &Body, mut op: Op) -> Option<Op> {
    loop {
        let block = body.ops[op].parent?;
        let at = body.blocks[block].ops.iter().position(|&o| o == op)? + 1;
        match scan(body, block, at) {
            Reach::Aligned(found) => return Some(found),
            Reach::Converged => return None,
            Reach::FallsThrough => {}
        }
        // Out of the block: after a `tile.if`, the path goes on past it;
        // a loop's body or a role's region ends the path.
        op = body.parent_op(op)?;
        if body.opcode(op) != Opcode::TileIf {
            return None;
        }
    }
}

/// Where a path from the op at `at` in `block` ends, not leaving the block.
fn scan(body: &Body, block: Block, at: usize) -> Reach {
    for &op in &body.blocks[block].ops[at..] {
        let traits = &body.ops[op].def.traits;
        if traits.converges {
            return Reach::Converged;
        }
        if traits.aligned {
            return Reach::Aligned(op);
        }
        if body.opcode(op) == Opcode::TileIf {
            for &region in &body.ops[op].regions {
                if let Reach::Aligned(found) = scan(body, body.entry_block(region), 0) {
                    return Reach::Aligned(found);
                }
            }
        } else if !body.ops[op].regions.is_empty() {
            // A loop, or the roles of a warp_specialize.
            return Reach::Converged;
        }
    }
    Reach::FallsThrough
}
