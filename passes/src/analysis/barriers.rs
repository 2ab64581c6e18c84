//! The barrier verifier (`nv-verify-barriers`): checks a function's mbarrier
//! protocol at nv level, where a mistake hangs or races on the GPU with no
//! message. In order:
//!
//! 1. every wait has something that arrives on its barrier;
//! 2. each phase gets exactly the arrivals the barrier is initialised for
//!    (a thread's `arrive` is one, an elected `expect_tx` one, TMA bytes
//!    none);
//! 3. `expect_tx` bytes equal the bytes of the TMA loads beside it;
//! 4. stage indices are `iteration mod S` and phases
//!    `(iteration / S [+ 1]) mod 2`, by symbolic evaluation;
//! 5. the first round's happens-before graph has no cycle (deadlock).
//!
//! What it cannot see: it models one pass through each loop (so a deadlock
//! that only appears in a later round, or depends on trip counts, is
//! missed); `tile.if` bodies count as taken; index arithmetic beyond
//! constant addi/subi/divsi/remsi on one iteration value is rejected, not
//! reasoned about; arrivals on a one-stage barrier with a constant stage are
//! assumed to serve any iteration; an elected op issues once per role.

mod counts;
mod happens_before;
mod model;
mod phases;
mod symbolic;

use crate::registry::PassInfo;
use crate::Pass;
use model::{BarrierGroup, Model};
use tilec_dialects::ir::{Body, Op};
use tilec_dialects::{Diagnostic, Function};

pub const INFO: PassInfo = PassInfo {
    name: "nv-verify-barriers",
    summary: "Check mbarrier arrival counts, transaction bytes, stage/phase arithmetic and deadlock freedom (changes nothing)",
    options: &[],
    phases: crate::phase::PhaseRule::ANY,
    create: |_| Box::new(VerifyBarriers),
};

pub struct VerifyBarriers;

impl Pass for VerifyBarriers {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn run(&mut self, func: &mut Function) -> Result<(), Diagnostic> {
        verify_barriers(func)
    }
}

/// Checks every mbarrier of `func`; the first problem found is the error,
/// located at the op at fault.
pub fn verify_barriers(func: &Function) -> Result<(), Diagnostic> {
    let body = &func.body;
    let model = Model::build(func)?;
    counts::check_waits_satisfiable(body, &model)?;
    counts::check_arrival_counts(body, &model)?;
    counts::check_transaction_bytes(body, &model)?;
    let timings = phases::derive_timings(body, &model)?;
    happens_before::check_deadlock(body, &model, &timings)
}

fn op_error(body: &Body, op: Op, message: String) -> Diagnostic {
    Diagnostic::error(body.ops[op].loc.clone(), format!("'{}' op {message}", body.ops[op].def.name))
}

/// `'%full'`, as the user wrote it.
fn barrier_name(body: &Body, group: &BarrierGroup) -> String {
    match &body.values[group.value].name_hint {
        Some(name) => format!("'%{name}'"),
        None => "the barrier".to_string(),
    }
}
