//! Deadlock: the happens-before graph of the first round of every loop.
//!
//! Nodes are barrier events. An edge `a -> b` says `b` cannot happen before
//! `a`: program order within a role, and, for a wait without initial
//! credit, an edge from every arrive, `expect_tx` or TMA load that can
//! complete the phase it waits for (same barrier, and a stage iteration that
//! can equal the wait's first one; where the wait's first iteration is not
//! known, any but those its own loop runs ahead of it). A cycle is a set of waits each needing
//! an arrival that program order puts after another wait of the set: the
//! classic producer/consumer deadlock when an "empty" barrier's first wait
//! lacks its credit. A wait whose own block completes its phase before it
//! (arrivals of the same role and iteration, all the barrier's count, no
//! bytes expected) needs nothing else: no arrival after it is an edge into
//! it (a chunk of resident scales copied and waited for at the end of the
//! chunk before it, wherever the loop that does so runs).

use super::model::{EventKind, Model};
use super::phases::Timing;
use super::symbolic::{always_after_first, iteration_range, least_iteration};
use super::barrier_name;
use crate::pass::op_error;
use petgraph::algo::tarjan_scc;
use petgraph::graph::DiGraph;
use tilec_dialects::ir::Body;
use tilec_dialects::Diagnostic;

pub fn check_deadlock(body: &Body, model: &Model, timings: &[Timing]) -> Result<(), Diagnostic> {
    let mut graph: DiGraph<usize, ()> = DiGraph::new();
    let nodes: Vec<_> = (0..model.events.len()).map(|e| graph.add_node(e)).collect();
    for &(a, b) in &model.program_order {
        graph.add_edge(nodes[a], nodes[b], ());
    }
    for (w, wait) in model.events.iter().enumerate() {
        let stages = model.groups[wait.group].stages;
        let Some(phase) = timings[w].phase.as_ref().filter(|p| !p.starts_with_credit(body, stages)) else { continue };
        if completed_in_its_block(body, model, timings, w) {
            continue;
        }
        let first = iteration_range(body, &phase.iteration).0;
        for (a, arrival) in model.events.iter().enumerate() {
            let completes = !matches!(arrival.kind, EventKind::Wait { .. }) && arrival.group == wait.group;
            // An arrival of unknown iteration may be the one the wait needs,
            // unless it runs ahead of the wait in the wait's own loop.
            let serves_first = match (&timings[a].iteration, first) {
                (Some(it), Some(first)) => {
                    let hi = iteration_range(body, it).1;
                    least_iteration(body, it).is_none_or(|lo| lo <= first) && hi.is_none_or(|hi| first < hi)
                }
                (Some(it), None) => !always_after_first(body, it, &phase.iteration),
                _ => true,
            };
            if completes && serves_first {
                graph.add_edge(nodes[a], nodes[w], ());
            }
        }
    }
    let Some(mut cycle) = tarjan_scc(&graph).into_iter().find(|scc| scc.len() > 1) else { return Ok(()) };
    cycle.sort_unstable_by_key(|&n| graph[n]);
    let waits: Vec<usize> = cycle.iter().map(|&n| graph[n]).filter(|&e| matches!(model.events[e].kind, EventKind::Wait { .. })).collect();
    let describe = |e: usize| {
        let event = &model.events[e];
        format!("{} ({})", barrier_name(body, &model.groups[event.group]), model.roles[event.role].name())
    };
    let msg = format!(
        "can deadlock in the first round: the waits on {} each need an arrival that program order puts after another of them; none starts with credit (phase parity 1)",
        waits.iter().map(|&e| describe(e)).collect::<Vec<_>>().join(" and ")
    );
    let mut diag = op_error(body, model.events[waits[0]].op, msg);
    for &e in &waits[1..] {
        diag = diag.with_note(body.ops[model.events[e].op].loc.clone(), format!("the wait on {} is here", describe(e)));
    }
    Err(diag)
}

/// Whether the arrivals just before wait `w` in its own block (the same
/// role, barrier and iteration) make the barrier's whole count, on a
/// barrier no byte count completes: then they complete the phase it waits
/// for, and they come before it in program order.
fn completed_in_its_block(body: &Body, model: &Model, timings: &[Timing], w: usize) -> bool {
    let wait = &model.events[w];
    let group = &model.groups[wait.group];
    let counts_bytes = model.events.iter().any(|e| e.group == wait.group && matches!(e.kind, EventKind::ExpectTx(_) | EventKind::TmaComplete(_)));
    let (Some(block), Some(iteration)) = (body.ops[wait.op].parent, timings[w].iteration.as_ref()) else { return false };
    if counts_bytes {
        return false;
    }
    let ops = &body.blocks[block].ops;
    let at = ops.iter().position(|&o| o == wait.op).expect("a wait is in its block");
    // The events of this group before the wait in its block, back to the
    // previous wait on the group.
    let mut arrivals = 0;
    for &op in ops[..at].iter().rev() {
        let Some((e, event)) = model.events.iter().enumerate().find(|(_, e)| e.op == op && e.group == wait.group) else { continue };
        if matches!(event.kind, EventKind::Wait { .. }) {
            break;
        }
        if event.role == wait.role && timings[e].iteration.as_ref() == Some(iteration) {
            arrivals += model.arrivals(event);
        }
    }
    arrivals >= group.arrivals
}
