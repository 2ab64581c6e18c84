//! `tile-pipeline{stages=N wait-depth=W scales=staged|prefetched|resident}`:
//! software-pipelines a K loop whose dot operands are staged through shared
//! memory; a block-scaled dot's scales are copied with each stage
//! (`staged`), loaded into registers one iteration ahead (`prefetched`), or
//! copied a chunk of K steps at a time into buffers of their own
//! (`resident`: the chunk holds the K range a CTA runs at `tile.config`'s
//! shape, at most `Scales::MAX_RESIDENT_CHUNK` steps), as `tile.config`
//! says when the option is not given.
//!
//! Buffers get N stages, each with its own mbarrier. A prologue issues the
//! TMA loads of the first N - W iterations; iteration i waits on stage
//! i mod N with parity (i / N) mod 2, issues its wgmma asynchronously and
//! waits until at most W groups are in flight, which frees the stage read W
//! iterations ago; after a CTA barrier that stage is refilled with iteration
//! i + N - W, if there is one. After the loop one wait drains the last groups.
//! The schedule is written on the loop's ops with effects, so it can be read
//! in the printed IR: `pipeline.stage` is 0 for the refill (it loads for
//! iteration i + N - W) and N - W for the wait and the wgmma ops (they
//! consume what was loaded that many iterations earlier), and
//! `pipeline.order` is the op's place in the dependence graph's topological
//! order. The schedule and its expansion are the shared Hopper utilities'
//! (`crate::hopper::schedule`, `crate::hopper::expand`); this pass picks the
//! loops and checks its options.

use crate::config::{in_option_range, ConfigEntries};
use crate::hopper::expand::{expand, ScaleCopies};
use crate::hopper::schedule::{staged_loop, LoopSchedule};
use crate::hopper::staging::{column_major_tensors, record_given, resident_chunk, scale_form, scales_option, SCALES_OPTION};
use crate::selection::{Scales, Schedule};
use crate::options::{OptionKind, OptionSpec};
use crate::phase::{Phase, PhaseRule};
use crate::pass::PassInfo;
use crate::pass::{op_error, Pass};
use tilec_dialects::tile::For;
use tilec_dialects::{Diagnostic, Function};

/// `tile-pipeline`'s registration: name, options, phases and constructor.
pub const INFO: PassInfo = PassInfo {
    name: "tile-pipeline",
    summary: "Multi-buffer dot operands and overlap TMA loads with asynchronous wgmma",
    options: &[
        OptionSpec { name: "stages", kind: OptionKind::Int { min: 1, max: crate::selection::STAGES_LIMIT }, default: "3", help: "shared-memory buffers per operand" },
        OptionSpec {
            name: "wait-depth",
            kind: OptionKind::Int { min: 0, max: 7 },
            default: "1",
            help: "wgmma groups left in flight each iteration (less than stages)",
        },
        SCALES_OPTION,
    ],
    phases: PhaseRule { needs: Phase::TileLayouts..=Phase::TileLayouts, leaves: Some(Phase::TileScheduled), reason: "it stages the tiles tile-assign-layouts puts in shared memory, and a K loop takes one schedule (run it after tile-assign-layouts, instead of tile-warp-specialize, before tile-lower-to-nv)" },
    create: |options| {
        Box::new(Pipeline {
            stages: options.int("stages"),
            wait_depth: options.int("wait-depth"),
            from_config: !options.given("stages"),
            scales: scales_option(options),
        })
    },
};

/// The `tile-pipeline` pass with its options resolved.
pub struct Pipeline {
    stages: i64,
    wait_depth: i64,
    /// Take `stages` from the function's `tile.config` (no `stages` given).
    from_config: bool,
    /// The `scales` option: where the scales wait, `None` to follow `tile.config`.
    scales: Option<Scales>,
}

impl Pipeline {
    /// The stages config selection chose, when the pipeline gave none; one
    /// stage leaves no group in flight.
    fn apply_config(&mut self, func: &Function) -> Result<(), Diagnostic> {
        // Stages counted for another schedule's shared memory (a
        // warp-specialised tile's output chunks, its empty barriers) need
        // not fit or suit the plain pipeline.
        let config = ConfigEntries::of(func)?;
        if let Some(other) = config.schedule.filter(|&s| self.from_config && s != Schedule::Pipeline).map(Schedule::word) {
            return Err(Diagnostic::error(
                func.loc.clone(),
                format!("tile.config chose the '{other}' schedule, which tile-persistent and tile-warp-specialize run, not tile-pipeline (run the passes the config asks for, see --dump-pass-pipeline, or give tile-pipeline its stages)"),
            ));
        }
        if let Some(stages) = in_option_range(func, &INFO, "stages", "stages", config.stages)?.filter(|_| self.from_config) {
            self.stages = stages;
            self.wait_depth = self.wait_depth.min(stages - 1);
        }
        Ok(())
    }
}

impl Pass for Pipeline {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn run(&mut self, func: &mut Function) -> Result<(), Diagnostic> {
        self.apply_config(func)?;
        let scales = scale_form(func, self.scales)?;
        let copies = match scales {
            Scales::Staged | Scales::None => ScaleCopies::WithStages,
            Scales::Prefetched => ScaleCopies::Registers,
            Scales::Resident => ScaleCopies::Resident { chunk: resident_chunk(func)? },
        };
        record_given(func, (!self.from_config).then_some(self.stages), self.scales);
        let column_major = column_major_tensors(func);
        let loops: Vec<For> = func.body.walk_region(func.region).into_iter().filter_map(|op| staged_loop(&func.body, op)).collect();
        for for_op in loops {
            if self.wait_depth >= self.stages {
                return Err(op_error(
                    &func.body,
                    for_op.op(),
                    format!("cannot keep {} wgmma group(s) in flight with {} stage(s): wait-depth must be less than stages", self.wait_depth, self.stages),
                ));
            }
            let schedule = LoopSchedule::of_loop(&func.body, for_op, self.stages, self.wait_depth);
            expand(&mut func.body, func.region, for_op, &schedule, copies, &column_major)?;
        }
        Ok(())
    }
}
