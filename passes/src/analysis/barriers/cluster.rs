//! Cluster scope: what a kernel whose CTAs write each other's shared memory
//! (TMA multicast), arrive on each other's barriers or read each other's
//! buffers (split-K's `nv.cluster_sum`) must also do. The
//! trace check sees one CTA and mirrors its peer (each remote arrive and
//! multicast half of the peer is this CTA's own, mirrored), so it cannot see
//! an order that only holds inside one CTA; these rules ask for the
//! cluster-scope order instead:
//!
//! 1. cluster ops only in a kernel launched in clusters (`cluster_dims`);
//! 2. a cluster barrier after every mbarrier is initialised and before the
//!    first multicast or remote arrive: the peer's barriers must exist;
//! 3. a cluster barrier right before the kernel returns: no CTA may leave
//!    while its peer can still write its shared memory, arrive on it or
//!    read it;
//! 4. every multicast refill ordered after the peer's reads of the stage:
//!    inside a warp role, the wait before it is on a barrier the peer's
//!    consumers arrive on remotely; elsewhere, the nearest barrier before it
//!    in the iteration of the loop that reads the stages is a cluster
//!    barrier.

use super::model::cluster_size;
use crate::pass::op_error;
use tilec_dialects::ir::{Body, Op};
use tilec_dialects::registry::Opcode;
use tilec_dialects::{nv, Diagnostic, Function};

/// Checks the four rules; the first break found is the error.
pub fn check_cluster_scope(func: &Function) -> Result<(), Diagnostic> {
    let body = &func.body;
    let ops = body.walk_region(func.region);
    let is_multicast = |&op: &Op| nv::TmaLoad::of(body, op).is_some_and(|l| l.multicast(body));
    let is_remote = |&op: &Op| body.opcode(op) == Opcode::NvMbarrierArriveRemote;
    let cross_cta: Vec<Op> = ops.iter().copied().filter(|op| is_multicast(op) || is_remote(op)).collect();
    let reads_peers = ops.iter().any(|&op| body.opcode(op) == Opcode::NvClusterSum);
    let clustered = cluster_size(func) > 1;
    if let Some(&op) = ops.iter().find(|&&op| matches!(body.opcode(op), Opcode::NvClusterBarrier | Opcode::NvClusterRank | Opcode::NvClusterSum) || cross_cta.contains(&op)) {
        if !clustered {
            return Err(op_error(body, op, "needs a kernel launched in clusters, but the function has no 'cluster_dims' of more than one CTA".into()));
        }
    }
    if cross_cta.is_empty() && !reads_peers {
        return Ok(());
    }

    // 2. The start barrier, where peers' barriers are used.
    let entry = &body.blocks[func.entry_block()].ops;
    if let Some(&first_cross) = cross_cta.first() {
        let top = |op: Op| crate::hopper::staging::outermost_ancestor(body, op);
        let first_user = entry.iter().position(|&o| cross_cta.iter().any(|&c| top(c) == o)).expect("cross-CTA ops are in the body");
        let last_init = entry.iter().rposition(|&o| body.opcode(o) == Opcode::NvAllocMbarriers);
        let start_ok = entry[..first_user].iter().enumerate().any(|(i, &o)| body.opcode(o) == Opcode::NvClusterBarrier && last_init.is_none_or(|l| i > l));
        if !start_ok {
            let what = if is_multicast(&first_cross) { "multicasts into the peer CTA" } else { "arrives on the peer CTA's barrier" };
            let msg = format!("{what} with no cluster barrier after the mbarriers are initialised: the peer's barriers may not exist yet (add 'nv.cluster_barrier' after the last 'nv.alloc_mbarriers')");
            return Err(op_error(body, first_cross, msg));
        }
    }

    // 3. The exit barrier.
    let terminator = *entry.last().expect("a verified body ends with its terminator");
    if entry.len() < 2 || body.opcode(entry[entry.len() - 2]) != Opcode::NvClusterBarrier {
        let msg = "returns without a cluster barrier: the peer CTA may still multicast into this CTA's shared memory, arrive on its barriers or read its buffers after it exits (add 'nv.cluster_barrier' before the return)";
        return Err(op_error(body, terminator, msg.into()));
    }

    // 4. Refills after the peer's reads.
    let released_remotely = |group| ops.iter().any(|&o| nv::MbarrierArriveRemote::of(body, o).is_some_and(|a| a.barrier(body) == group));
    for &load in cross_cta.iter().filter(|op| is_multicast(op)) {
        if in_role(body, load) {
            match preceding(body, load, |o| nv::MbarrierWait::of(body, o).is_some(), |_| false) {
                Some(wait) => {
                    let group = nv::MbarrierWait::of(body, wait).expect("matched").barrier(body);
                    if !released_remotely(group) {
                        let name = body.values[group].name_hint.as_deref().map_or("its barrier".to_string(), |n| format!("'%{n}'"));
                        let msg = format!("multicasts into a stage the peer CTA also reads, after waiting on {name}, which no 'nv.mbarrier_arrive_remote' targets: the peer's consumers may still be reading it");
                        return Err(op_error(body, load, msg));
                    }
                }
                None => return Err(op_error(body, load, "multicasts into a stage the peer CTA also reads without waiting for the stage to be released".into())),
            }
        } else {
            let is_barrier = |o: Op| matches!(body.opcode(o), Opcode::NvBarrier | Opcode::NvClusterBarrier);
            match preceding(body, load, is_barrier, |o| reads_stages(body, o)) {
                Some(b) if body.opcode(b) == Opcode::NvClusterBarrier => {}
                Some(b) => {
                    let msg = "orders a multicast refill after this CTA's reads only, but the refill writes the peer CTA's stage too: use 'nv.cluster_barrier'";
                    return Err(op_error(body, b, msg.into()));
                }
                None => {
                    let msg = "multicasts into a stage the peer CTA also reads with no cluster barrier before it in this iteration of the loop that reads the stages";
                    return Err(op_error(body, load, msg.into()));
                }
            }
        }
    }
    Ok(())
}

/// The nearest op before `op` (in its block, then in the blocks around it)
/// that `wanted` accepts, not looking past an enclosing op that `stop`
/// accepts.
fn preceding(body: &Body, mut op: Op, wanted: impl Fn(Op) -> bool, stop: impl Fn(Op) -> bool) -> Option<Op> {
    loop {
        let block = body.ops[op].parent?;
        let ops = &body.blocks[block].ops;
        let at = ops.iter().position(|&o| o == op)?;
        if let Some(&found) = ops[..at].iter().rev().find(|&&o| wanted(o)) {
            return Some(found);
        }
        op = body.parent_op(op)?;
        if stop(op) {
            return None;
        }
    }
}

/// A loop that reads buffer stages (holds an `nv.wgmma`).
fn reads_stages(body: &Body, op: Op) -> bool {
    body.opcode(op) == Opcode::TileFor && body.ops[op].regions.iter().any(|&r| body.walk_region(r).into_iter().any(|o| body.opcode(o) == Opcode::NvWgmma))
}

/// Whether `op` lies inside a role of an `nv.warp_specialize`.
fn in_role(body: &Body, op: Op) -> bool {
    body.ancestors(op).any(|a| nv::WarpSpecialize::of(body, a).is_some())
}
