//! The barrier verifier (`nv-verify-barriers`): checks a function's mbarrier
//! protocol at nv level, where a mistake hangs or races on the GPU with no
//! message. In order:
//!
//! 0. at cluster scope (`cluster.rs`): cluster ops only in a kernel launched
//!    in clusters, a cluster barrier after the mbarrier initialisation and
//!    before the exit, and every multicast refill ordered after the peer
//!    CTA's reads (a remote release, or a cluster barrier);
//! 1. every wait has something that arrives on its barrier;
//! 2. each phase gets exactly the arrivals the barrier is initialised for
//!    (a thread's `arrive` is one, an elected `expect_tx` one, TMA bytes
//!    none);
//! 3. `expect_tx` bytes equal the bytes of the TMA loads beside it;
//! 4. stage indices are `iteration mod S` and phases
//!    `(iteration / S [+ 1]) mod 2`, by symbolic evaluation;
//! 5. the first round's happens-before graph has no cycle (deadlock);
//! 6. every round of every loop and every tile of a persistent kernel, by
//!    running each warp's concrete trace for a few tensor sizes (loops of 1
//!    to over 2 x stages + 1 rounds, two or more tiles per CTA) against a model of
//!    mbarrier phases, TMA completion, wgmma groups, TMA stores and their
//!    waits, and CTA and warpgroup barriers, with
//!    vector clocks: every read of a buffer stage is ordered after the load
//!    that fills it (its full barrier's wait for the right round), every
//!    refill after the retirement of every read of the previous contents
//!    (the wgmma wait depth, the release, the CTA barrier before a refill)
//!    and after at least one read of them (the refill distance, the
//!    prologue), no warp reads one load twice (a phase restarting with each
//!    tile), generic stores read by TMA are fenced (`nv.fence_async_shared`),
//!    an output stage is rewritten only after the TMA store reading it was
//!    waited for, every TMA store is waited for before the CTA exits,
//!    each wgmma follows an `nv.wgmma_fence`, a wgmma result that an
//!    `nv.wgmma_wait` returns for an op to read in registers comes from a
//!    group that wait retires, stage indices and row windows
//!    stay inside their allocation, and some warp can always move (a
//!    missing arrive or wait hangs);
//! 7. no path from one thread's op (`elected`) reaches an op the warpgroup
//!    executes together (`aligned`) before a barrier or wait reconverges
//!    the threads (`convergence.rs`): a code-generation hazard, not a
//!    memory order.
//!
//! A clustered kernel is checked as CTA 0 with its peer as its mirror
//! image: the peer runs this CTA's code, its remote arrivals and multicast
//! halves mirror this CTA's, but only remote arrivals and cluster barriers
//! order the two (the peer may run ahead), so an early release of either
//! CTA's stage is seen.
//!
//! Data-dependent values (a loaded scalar such as a grouped GEMM's expert
//! or row count, a run offset) are symbolic: each trace takes them at one
//! end of their range. Where the trace still cannot be taken (a loop bound
//! or index that does not follow from the sizes, an op it does not model,
//! a warp count that does not match the roles, a trace too long), the
//! verifier returns a warning located at that op: the rounds it would have
//! checked are unproven, and it never passes them silently.
//!
//! What it cannot see: the trace check runs a few CTAs for fixed sizes
//! (`simulate::configs`), so a bug that needs other sizes or another CTA is
//! missed; it runs one fair interleaving of the warps, so it
//! sees every missing order but a hang only where that interleaving meets
//! it; warps are the unit (warp 0 issues the elected ops, a warp's arrive
//! is 32), so a race between the threads of one warp is not modelled; an
//! arrive counts when it is issued, whatever the warp still has in flight
//! (ping-pong consumers that arrived on their turn barrier before draining
//! their last wgmma group passed every check here and hung on the GPU,
//! cause not found, docs/evidence.md, barriers.rs; the pass now arrives
//! after the drain); the
//! data a read expects is not known, so a load of the wrong coordinates
//! into the right stage is accepted. The symbolic checks model one pass
//! through each loop; `tile.if` bodies count as taken there; index
//! arithmetic beyond constant addi/subi/divsi/remsi on one iteration value
//! is rejected, not reasoned about.

mod cluster;
mod convergence;
mod counts;
mod happens_before;
mod model;
mod phases;
mod simulate;
mod symbolic;
mod trace;

use crate::pass::PassInfo;
use crate::pass::Pass;
use model::{BarrierGroup, Model};
use tilec_dialects::ir::Body;
use tilec_dialects::{Diagnostic, Function};

/// `nv-verify-barriers`'s registration: name, options, phases and constructor.
pub const INFO: PassInfo = PassInfo {
    name: "nv-verify-barriers",
    summary: "Check mbarrier arrival counts, transaction bytes, stage/phase arithmetic, deadlock freedom and, over every round, the ordering of each buffer stage's reads and refills (changes nothing)",
    options: &[],
    phases: crate::phase::PhaseRule::ANY,
    create: |_| Box::new(VerifyBarriers { warnings: Vec::new() }),
};

/// The barrier verifier as a pass, for pipelines that name it (the pass
/// manager also runs it after every pass). It keeps the warnings of its
/// runs until the pass manager takes them.
pub struct VerifyBarriers {
    warnings: Vec<Diagnostic>,
}

impl Pass for VerifyBarriers {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn run(&mut self, func: &mut Function) -> Result<(), Diagnostic> {
        self.warnings.extend(verify_barriers(func)?);
        Ok(())
    }

    fn take_diagnostics(&mut self) -> Vec<Diagnostic> {
        std::mem::take(&mut self.warnings)
    }
}

/// Checks every mbarrier of `func`; the first problem found is the error,
/// located at the op at fault. What it could not check is returned as
/// warnings, each located at the op that stopped it.
pub fn verify_barriers(func: &Function) -> Result<Vec<Diagnostic>, Diagnostic> {
    BarrierVerifier::default().verify(func)
}

/// The barrier verifier for a run of passes: it remembers the round-by-round
/// simulations that passed, so that checking a function again after a pass
/// that left the warps' traces as they were repeats none of them.
#[derive(Default)]
pub struct BarrierVerifier {
    simulations: simulate::Passed,
}

impl BarrierVerifier {
    /// [`verify_barriers`], skipping the simulations this verifier has
    /// already seen pass.
    pub fn verify(&mut self, func: &Function) -> Result<Vec<Diagnostic>, Diagnostic> {
        let body = &func.body;
        cluster::check_cluster_scope(func)?;
        let model = Model::build(func)?;
        counts::check_waits_satisfiable(body, &model)?;
        counts::check_arrival_counts(body, &model)?;
        counts::check_transaction_bytes(body, &model)?;
        let timings = phases::derive_timings(body, &model)?;
        happens_before::check_deadlock(body, &model, &timings)?;
        convergence::check_reconvergence(func)?;
        Ok(simulate::check_every_round(func, &mut self.simulations)?.into_iter().collect())
    }
}


/// `'%full'`, as the user wrote it.
fn barrier_name(body: &Body, group: &BarrierGroup) -> String {
    match &body.values[group.value].name_hint {
        Some(name) => format!("'%{name}'"),
        None => "the barrier".to_string(),
    }
}
