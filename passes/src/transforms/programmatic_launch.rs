//! `tile-programmatic-launch`: makes the kernel safe and useful to launch
//! with programmatic dependent launch (the runtime's launch attribute), so
//! that on a stream of GEMMs (a model's layers) each kernel's launch and
//! prologue overlap the previous kernel's tail instead of following its
//! last CTA's exit.
//!
//! It puts two ops at the start of the kernel, after the prologue the
//! lowering writes (descriptor prefetches and barrier set-up, which read
//! only the kernel's parameters):
//! - `nv.grid_dependency_wait` before anything reads or writes memory: the
//!   previous kernel may still be writing this one's A, or reading the C
//!   this one overwrites. Split-K's workspace, reused by the next launch on
//!   the stream, is covered the same way.
//! - `nv.launch_dependents` right after it: the next kernel may start once
//!   every CTA of this one has issued it, that is once this grid's last
//!   wave is resident. Its CTAs then take the SMs this grid's CTAs leave and
//!   wait there; a later trigger (after the K loop) would only hold them
//!   back while SMs stand idle in this grid's last wave.
//!
//! Without the launch attribute both are no-ops, so every kernel carries
//! them and the launcher chooses. A kernel that has either op already keeps
//! it where it is (nv IR written by hand may trigger its dependents later)
//! and gets only the one it lacks; the verifier of `nv.grid_dependency_wait`
//! rejects a program where memory is touched before it.

use crate::pass::{Pass, PassInfo};
use crate::phase::{Phase, PhaseRule};
use tilec_dialects::ir::{Attributes, Builder, InsertPoint};
use tilec_dialects::nv::{GridDependencyWait, LaunchDependents};
use tilec_dialects::registry::Opcode;
use tilec_dialects::{Diagnostic, Function};

/// `tile-programmatic-launch`'s registration: name, options, phases and constructor.
pub const INFO: PassInfo = PassInfo {
    name: "tile-programmatic-launch",
    summary: "Wait for the previous grid before the kernel's first memory access and let the next grid launch early, so the kernel can be launched with programmatic dependent launch",
    options: &[],
    phases: PhaseRule { needs: Phase::Nv..=Phase::Nv, leaves: None, reason: "it places its wait before the kernel's first memory access, which only nv IR spells out (run it after tile-lower-to-nv)" },
    create: |_| Box::new(ProgrammaticLaunch),
};

/// The `tile-programmatic-launch` pass.
pub struct ProgrammaticLaunch;

impl Pass for ProgrammaticLaunch {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn run(&mut self, func: &mut Function) -> Result<(), Diagnostic> {
        let body = &mut func.body;
        let ops = body.walk_region(func.region);
        let has = |opcode: Opcode| ops.iter().any(|&op| body.opcode(op) == opcode);
        let (waits, triggers) = (has(Opcode::NvGridDependencyWait), has(Opcode::NvLaunchDependents));
        let entry = body.entry_block(func.region);
        let Some(&first) = body.blocks[entry].ops.first() else {
            return Err(Diagnostic::error(func.loc.clone(), "tile-programmatic-launch: the function has no ops, not even its terminator"));
        };
        let mut b = Builder::new(body, InsertPoint::Before(first), func.loc.clone());
        if !waits {
            GridDependencyWait::build(&mut b, Attributes::new());
        }
        if !triggers {
            LaunchDependents::build(&mut b, Attributes::new());
        }
        Ok(())
    }
}
