//! Stage and phase checks: every barrier op's stage index is
//! `iteration mod S` and every wait's phase `(iteration / S) mod 2` (plus 1
//! for a wait that starts with credit) of that same iteration, for the
//! barrier's own S; a stage picked by consumer (the turns of ping-pong
//! consumers) is left to the trace check.

use super::model::{EventKind, Model};
use super::symbolic::{evaluate, is_consumer_index, phase_of, stage_iteration, Iteration, Phase};
use super::barrier_name;
use crate::pass::op_error;
use tilec_dialects::ir::{Body, Value};
use tilec_dialects::Diagnostic;

/// What the index arithmetic says about one event.
pub struct Timing {
    /// The iteration the event serves; `None` on a one-stage barrier, whose
    /// stage index does not tell.
    pub iteration: Option<Iteration>,
    /// A wait's phase.
    pub phase: Option<Phase>,
}

/// Derives each event's [`Timing`], or reports the first op whose indices
/// do not fit its barrier.
pub fn derive_timings(body: &Body, model: &Model) -> Result<Vec<Timing>, Diagnostic> {
    model
        .events
        .iter()
        .map(|e| {
            let group = &model.groups[e.group];
            let err = |msg: String| op_error(body, e.op, format!("on {}: {msg}", barrier_name(body, group)));
            if is_consumer_index(body, e.stage) {
                return Ok(Timing { iteration: None, phase: None });
            }
            let stage = evaluate(body, e.stage).ok_or_else(|| err(underivable("stage index", body, e.stage)))?;
            let iteration = stage_iteration(body, &stage, group.stages).map_err(err)?;
            let EventKind::Wait { phase } = e.kind else { return Ok(Timing { iteration, phase: None }) };
            let expr = evaluate(body, phase).ok_or_else(|| err(underivable("phase", body, phase)))?;
            let phase = phase_of(&expr, group.stages, iteration.as_ref(), e.scope.is_some()).map_err(err)?;
            // A credited first round passes before anything arrives, which
            // is right for a slot that starts free but lets a wait for TMA
            // data read the buffer before the data lands.
            let loads_data = model.events.iter().any(|t| t.group == e.group && matches!(t.kind, EventKind::TmaComplete(_)));
            if loads_data && phase.starts_with_credit(body, group.stages) {
                return Err(err("phase starts with credit (parity 1 on its first round), so the wait passes before the first TMA loads land".into()));
            }
            Ok(Timing { iteration, phase: Some(phase) })
        })
        .collect()
}

fn underivable(what: &str, body: &Body, v: Value) -> String {
    let name = body.values[v].name_hint.as_deref().unwrap_or("?");
    format!("{what} '%{name}' is not derived from a loop iteration by constant addi/subi/divsi/remsi")
}
