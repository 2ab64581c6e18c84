//! Counting checks: something completes every awaited barrier, each phase
//! gets the arrivals the barrier was initialised for, and each
//! `expect_tx` expects the bytes its TMA loads bring.

use super::model::{EventKind, Model};
use super::barrier_name;
use super::symbolic::{evaluate, IndexExpr};
use crate::pass::op_error;
use std::collections::BTreeMap;
use tilec_dialects::ir::{Block, Body, Op, Value};
use tilec_dialects::Diagnostic;

/// A wait on a barrier that no `nv.mbarrier_arrive` or `expect_tx` targets,
/// in any role, hangs: TMA bytes alone never complete a phase.
pub fn check_waits_satisfiable(body: &Body, model: &Model) -> Result<(), Diagnostic> {
    for w in model.events.iter().filter(|e| matches!(e.kind, EventKind::Wait { .. })) {
        let arrived = model.events.iter().any(|e| e.group == w.group && model.arrivals(e) > 0);
        if !arrived {
            let name = barrier_name(body, &model.groups[w.group]);
            let msg = format!("waits on {name}, which nothing arrives on: no 'nv.mbarrier_arrive' or 'nv.mbarrier_expect_tx' targets it in any role");
            return Err(op_error(body, w.op, msg));
        }
    }
    Ok(())
}

/// Each loop (or a role's straight-line code) completes one phase of each
/// stage it indexes per pass, so its arrivals on a barrier through one stage
/// index are one phase's share of that role; all of a role's scopes and
/// stage indices must give the same share, and the roles' shares must add up
/// to the barrier's `arrivals`. Stage indices are told apart by their
/// arithmetic (`kt mod S` and `(kt + 1) mod S` are two stages of a pass;
/// `kt mod S` and `(kt + S) mod S` one), so a loop that runs two iterations a
/// pass (`tile-pair-promotions`) arrives on each of its stages once.
pub fn check_arrival_counts(body: &Body, model: &Model) -> Result<(), Diagnostic> {
    // (group, role, scope, stage) -> (first event, arrivals per pass), in event order
    let mut per_scope: Vec<(ArrivalSite, (usize, i64))> = Vec::new();
    for (i, e) in model.events.iter().enumerate() {
        let n = model.arrivals(e);
        if n > 0 {
            let key = (e.group, e.role, e.scope, StageKey::of(body, e.stage));
            match per_scope.iter_mut().find(|(k, _)| *k == key) {
                Some((_, (_, total))) => *total += n,
                None => per_scope.push((key, (i, n))),
            }
        }
    }
    for (g, group) in model.groups.iter().enumerate() {
        let name = barrier_name(body, group);
        // role -> (first event, arrivals per phase)
        let mut per_role: BTreeMap<usize, (usize, i64)> = BTreeMap::new();
        for &((_, role, _, _), (first, n)) in per_scope.iter().filter(|((group, ..), _)| *group == g) {
            let (_, share) = *per_role.entry(role).or_insert((first, n));
            if share != n {
                let who = model.roles[role].name();
                let msg = format!("gives {name} {n} arrival(s) per phase here, but {who} gives it {share} elsewhere");
                return Err(op_error(body, model.events[first].op, msg));
            }
        }
        let total: i64 = per_role.values().map(|&(_, n)| n).sum();
        if let Some(&(first, _)) = per_role.values().min() {
            if total != group.arrivals {
                let shares: Vec<String> = per_role.iter().map(|(&r, &(_, n))| format!("{}: {n}", model.roles[r].name())).collect();
                let msg = format!(
                    "completes each phase of {name} with {total} arrival(s) ({}; an 'arrive' is one per thread, a per-warp or remote arrive one per warp, an 'expect_tx' one, a 'copy_async' 32) but {name} is initialised for {}",
                    shares.join(", "),
                    group.arrivals
                );
                let note = format!("{name} allocated here");
                return Err(op_error(body, model.events[first].op, msg).with_note(body.ops[group.alloc].loc.clone(), note));
            }
        }
    }
    Ok(())
}

/// Where arrivals add up to one phase's share: a barrier group, a role, the
/// loop they run in (none for straight-line code) and the stage they pick.
type ArrivalSite = (usize, usize, Option<Op>, StageKey);

/// The stage an arrival picks, by the arithmetic of its index where the
/// symbolic evaluation follows it (an iteration mod the stages, its offset
/// taken mod them), else by the value itself.
#[derive(Clone, Debug, PartialEq, Eq)]
enum StageKey {
    Index(IndexExpr),
    Value(Value),
}

impl StageKey {
    fn of(body: &Body, stage: Value) -> StageKey {
        match evaluate(body, stage) {
            Some(mut index) => {
                if let (Some(m), true) = (index.modulus, index.iteration.steps.is_empty()) {
                    index.iteration.offset = index.iteration.offset.rem_euclid(m);
                }
                StageKey::Index(index)
            }
            None => StageKey::Value(stage),
        }
    }
}

/// The `expect_tx` and TMA loads on one stage of a barrier in one block.
#[derive(Default)]
struct TxSite {
    expect: Option<usize>,
    expected: i64,
    load: Option<usize>,
    loaded: i64,
}

/// The bytes an `expect_tx` arms a stage with must be the bytes the TMA
/// loads of the same block complete on that stage: fewer and the phase
/// completes before the data lands, more and it never completes.
pub fn check_transaction_bytes(body: &Body, model: &Model) -> Result<(), Diagnostic> {
    let mut sites: BTreeMap<(Block, Value, Value), TxSite> = BTreeMap::new();
    for (i, e) in model.events.iter().enumerate() {
        let key = (body.ops[e.op].parent.expect("attached"), model.groups[e.group].value, e.stage);
        let site = sites.entry(key).or_default();
        match e.kind {
            EventKind::ExpectTx(bytes) => {
                site.expect.get_or_insert(i);
                site.expected += bytes;
            }
            EventKind::TmaComplete(bytes) => {
                site.load.get_or_insert(i);
                site.loaded += bytes;
            }
            EventKind::Arrive | EventKind::WarpArrive | EventKind::RemoteArrive | EventKind::CopyArrive | EventKind::Wait { .. } => {}
        }
    }
    for site in sites.into_values() {
        let name = |i: usize| barrier_name(body, &model.groups[model.events[i].group]);
        match (site.expect, site.load) {
            (Some(e), _) if site.expected != site.loaded => {
                let msg = format!(
                    "expects {} transaction bytes on {} but the TMA loads completing on that stage in this block bring {}",
                    site.expected,
                    name(e),
                    site.loaded
                );
                return Err(op_error(body, model.events[e].op, msg));
            }
            (None, Some(l)) => {
                let msg = format!("completes {} bytes on {} but no 'nv.mbarrier_expect_tx' in this block arms that stage", site.loaded, name(l));
                return Err(op_error(body, model.events[l].op, msg));
            }
            _ => {}
        }
    }
    Ok(())
}
