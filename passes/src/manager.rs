//! Runs a pipeline over a module with mlir-opt's instrumentation: verify
//! after each pass (the IR verifier, then the barrier verifier), print IR
//! after all or named passes (and after a failing one), and time each pass.
//! Before running anything it checks the pipeline's order against each
//! pass's [`PhaseRule`], from the phase each function is in. Warnings and
//! remarks of the passes and the barrier verifier's warnings are kept, each
//! once, for the tool to print (or check) whether or not the pipeline fails.

use crate::analysis::barriers::BarrierVerifier;
use crate::phase::{Phase, PhaseRule};
use crate::pipeline::{create_passes, parse_pipeline};
use crate::pass::Pass;
use std::io::Write;
use std::time::{Duration, Instant};
use tilec_dialects::syntax::print_function;
use tilec_dialects::verifier::verify_function;
use tilec_dialects::{Diagnostic, Function, Module, PrintOptions};

/// What the pass manager does around each pass, as MLIR's pass instrumentation (`--verify-each`, `--mlir-print-ir-*`, `--mlir-timing`).
#[derive(Clone, Debug)]
pub struct Instrumentation {
    /// Verify the IR (and its barriers) after every pass.
    pub verify_each: bool,
    /// Print the IR after every pass.
    pub print_after_all: bool,
    /// Print the IR after these passes.
    pub print_after: Vec<String>,
    /// Print the IR after a pass that fails.
    pub print_after_failure: bool,
    /// Report each pass's wall time.
    pub timing: bool,
    /// Report each pass's statistics after the pipeline (`--mlir-pass-statistics`).
    pub statistics: bool,
    /// How printed IR is spelled.
    pub print: PrintOptions,
}

impl Default for Instrumentation {
    fn default() -> Self {
        Instrumentation {
            verify_each: true,
            print_after_all: false,
            print_after: Vec::new(),
            print_after_failure: true,
            timing: false,
            statistics: false,
            print: PrintOptions::default(),
        }
    }
}

/// Why a pipeline did not run to the end.
#[derive(Debug, thiserror::Error)]
pub enum PassError {
    /// The pipeline string does not parse, or names an unknown pass or option.
    #[error("invalid pass pipeline: {0}")]
    Pipeline(String),
    /// A pass would run on IR in a phase it does not accept (checked before anything runs).
    #[error("{0}")]
    Order(Diagnostic),
    /// A pass reported an error.
    #[error("{diagnostic}\nnote: pass '{pass}' failed")]
    PassFailed {
        /// The pass.
        pass: &'static str,
        /// Its located error.
        diagnostic: Diagnostic,
    },
    /// The IR a pass left fails the verifier or the barrier verifier.
    #[error("{diagnostic}\nnote: the IR failed verification after pass '{pass}'")]
    VerificationFailed {
        /// The pass that ran last.
        pass: &'static str,
        /// The first error found.
        diagnostic: Diagnostic,
    },
}

/// Runs a pipeline of passes over every function, checking the phase order first.
pub struct PassManager {
    passes: Vec<(Box<dyn Pass>, &'static PhaseRule)>,
    /// Skip, per function, the passes whose phases the input is already
    /// past (the default pipeline of `tilec compile` takes nv-level input
    /// too); otherwise such a pass is an error.
    start_at_input_phase: bool,
    /// What it does around each pass.
    pub instrumentation: Instrumentation,
    /// The warnings and remarks so far, each once (the barrier verifier
    /// runs after every pass and finds the same ones again).
    diagnostics: Vec<Diagnostic>,
}

impl PassManager {
    /// An empty pipeline.
    pub fn new(instrumentation: Instrumentation) -> Self {
        PassManager { passes: Vec::new(), start_at_input_phase: false, instrumentation, diagnostics: Vec::new() }
    }

    /// The warnings and remarks reported so far, in the order first
    /// reported; taking them leaves none.
    pub fn take_diagnostics(&mut self) -> Vec<Diagnostic> {
        std::mem::take(&mut self.diagnostics)
    }

    /// A manager running `pipeline` (e.g. `tile-canonicalize`).
    pub fn from_pipeline(pipeline: &str, instrumentation: Instrumentation) -> Result<Self, PassError> {
        let entries = parse_pipeline(pipeline).map_err(PassError::Pipeline)?;
        let mut pm = PassManager::new(instrumentation);
        pm.passes = create_passes(&entries).into_iter().zip(entries.iter().map(|e| &e.info.phases)).collect();
        Ok(pm)
    }

    /// Appends `pass`, which runs in the phases `phases` allows.
    pub fn add(&mut self, pass: Box<dyn Pass>, phases: &'static PhaseRule) {
        self.passes.push((pass, phases));
    }

    /// Runs each function from the phase it is in: passes it is already
    /// past are skipped instead of rejected.
    pub fn start_at_input_phase(&mut self) {
        self.start_at_input_phase = true;
    }

    /// Which passes run on `func` (all of them, or with
    /// [`Self::start_at_input_phase`] those it is not past); an error names
    /// the first pass that the IR is not in a phase for.
    fn plan(&self, func: &Function) -> Result<Vec<bool>, Diagnostic> {
        let input = Phase::of(func);
        let mut phase = input;
        let mut last: Option<&str> = None;
        let mut plan = Vec::with_capacity(self.passes.len());
        for (pass, rule) in &self.passes {
            if rule.accepts(phase) {
                phase = rule.after(phase);
                last = Some(pass.name());
                plan.push(true);
            } else if self.start_at_input_phase && phase == input && phase > *rule.needs.end() {
                plan.push(false);
            } else {
                return Err(order_error(func, pass.name(), rule, phase, last));
            }
        }
        Ok(plan)
    }

    /// Checks the pipeline's order against every function's phase without
    /// running anything (what [`Self::run`] checks first), for tools that
    /// run a pipeline one pass manager per pass.
    pub fn check_order(&self, module: &Module) -> Result<(), PassError> {
        module.functions.iter().try_for_each(|f| self.plan(f).map(|_| ())).map_err(PassError::Order)
    }

    /// Runs every pass over every function; IR dumps and the timing report
    /// go to `log` (stderr in the tools).
    pub fn run(&mut self, module: &mut Module, log: &mut dyn Write) -> Result<(), PassError> {
        let plans = module.functions.iter().map(|f| self.plan(f)).collect::<Result<Vec<_>, _>>().map_err(PassError::Order)?;
        let mut times: Vec<(&'static str, Duration)> = Vec::new();
        let instr = self.instrumentation.clone();
        let mut barrier_verifier = BarrierVerifier::default();
        for (i, (pass, _)) in self.passes.iter_mut().enumerate() {
            // A pass every function is past is not run, verified, printed or timed.
            if !plans.is_empty() && plans.iter().all(|plan| !plan[i]) {
                continue;
            }
            let name = pass.name();
            let start = Instant::now();
            for (func, plan) in module.functions.iter_mut().zip(&plans) {
                if !plan[i] {
                    continue;
                }
                let ran = pass.run(func);
                add_diagnostics(&mut self.diagnostics, pass.take_diagnostics());
                if let Err(diagnostic) = ran {
                    if instr.print_after_failure {
                        dump(log, &format!("IR Dump After {name} Failed"), module, instr.print);
                    }
                    return Err(PassError::PassFailed { pass: name, diagnostic });
                }
            }
            times.push((name, start.elapsed()));
            if instr.verify_each {
                for func in &module.functions {
                    let barriers = |()| if pass.preserves_barriers() { Ok(Vec::new()) } else { barrier_verifier.verify(func) };
                    match verify_function(func).and_then(barriers) {
                        Ok(warnings) => add_diagnostics(&mut self.diagnostics, warnings),
                        Err(diagnostic) => {
                            if instr.print_after_failure {
                                dump(log, &format!("IR Dump After {name} Failed Verification"), module, instr.print);
                            }
                            return Err(PassError::VerificationFailed { pass: name, diagnostic });
                        }
                    }
                }
            }
            if instr.print_after_all || instr.print_after.iter().any(|p| p == name) {
                dump(log, &format!("IR Dump After {name}"), module, instr.print);
            }
        }
        if instr.timing {
            report_timing(log, &times);
        }
        if instr.statistics {
            report_statistics(log, &self.passes);
        }
        Ok(())
    }
}

/// Adds the warnings and remarks of `new` not already in `all` (for a tool
/// that runs several pass managers).
pub fn add_diagnostics(all: &mut Vec<Diagnostic>, new: Vec<Diagnostic>) {
    for diagnostic in new {
        if !all.contains(&diagnostic) {
            all.push(diagnostic);
        }
    }
}

/// `pass` cannot run on `func` in `phase`, reached after pass `last` (or
/// read from the input).
fn order_error(func: &Function, pass: &str, rule: &PhaseRule, phase: Phase, last: Option<&str>) -> Diagnostic {
    let at = match last {
        Some(last) => format!("after '{last}'"),
        None => "in the input".to_string(),
    };
    let mut message = format!("pass '{pass}' needs {}, but @{} is {phase} {at}", rule.describe_needs(), func.name);
    if !rule.reason.is_empty() {
        message.push_str(&format!(": {}", rule.reason));
    }
    if phase == Phase::Parametric {
        message.push_str(" (run tile-select-config first, or pin the block sizes)");
    }
    Diagnostic::error(func.loc.clone(), message)
}

fn dump(log: &mut dyn Write, title: &str, module: &Module, print: PrintOptions) {
    let mut text = format!("// -----// {title} //----- //\n");
    for func in &module.functions {
        text.push_str(&print_function(func, print));
    }
    // A log that cannot be written is not worth failing the compile over.
    let _ = writeln!(log, "{text}");
}

/// The statistics report in MLIR's form: each pass, then `(S) value name - description`.
fn report_statistics(log: &mut dyn Write, passes: &[(Box<dyn Pass>, &'static PhaseRule)]) {
    let mut text = String::from("===-------------------------------------------------------------------------===\n");
    text.push_str("                         ... Pass statistics report ...\n");
    text.push_str("===-------------------------------------------------------------------------===\n");
    for (pass, _) in passes {
        text.push_str(&format!("{}\n", pass.name()));
        for s in pass.statistics() {
            text.push_str(&format!("  (S) {} {} - {}\n", s.value, s.name, s.description));
        }
    }
    let _ = write!(log, "{text}");
}

fn report_timing(log: &mut dyn Write, times: &[(&'static str, Duration)]) {
    let total: Duration = times.iter().map(|(_, t)| *t).sum();
    let mut text = String::from("===-------------------------------------------------------------------------===\n");
    text.push_str("                         ... Pass execution timing report ...\n");
    text.push_str("===-------------------------------------------------------------------------===\n");
    text.push_str(&format!("  Total Execution Time: {:.6} seconds\n\n", total.as_secs_f64()));
    text.push_str("   ----Wall Time----  ----Name----\n");
    for (name, t) in times {
        let pct = if total.is_zero() { 0.0 } else { 100.0 * t.as_secs_f64() / total.as_secs_f64() };
        text.push_str(&format!("   {:.6} ({pct:5.1}%)  {name}\n", t.as_secs_f64()));
    }
    text.push_str(&format!("   {:.6} (100.0%)  Total\n", total.as_secs_f64()));
    let _ = write!(log, "{text}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DEFAULT_PIPELINE;
    use tilec_dialects::parse_module;

    /// nv IR: an nv op and no tile load, dot or store.
    const NV_INPUT: &str = "tile.func @fence() {\n  nv.barrier\n  tile.return\n}\n";

    fn run(pipeline: &str, start_at_input_phase: bool) -> Result<Vec<u8>, PassError> {
        let mut module = parse_module(NV_INPUT, "nv.tile").expect("test input parses");
        let instrumentation = Instrumentation { print_after_all: true, ..Instrumentation::default() };
        let mut pm = PassManager::from_pipeline(pipeline, instrumentation).expect("pipeline parses");
        if start_at_input_phase {
            pm.start_at_input_phase();
        }
        let mut log = Vec::new();
        pm.run(&mut module, &mut log).map(|()| log)
    }

    #[test]
    fn a_pass_the_input_is_past_is_rejected_before_anything_runs() {
        let Err(PassError::Order(diagnostic)) = run("tile-canonicalize,tile-pipeline", false) else {
            panic!("tile-pipeline on nv IR must be rejected");
        };
        assert_eq!(diagnostic.loc.line, 1);
        assert!(diagnostic.message.starts_with("pass 'tile-pipeline' needs tile IR with layouts, but @fence is nv IR after 'tile-canonicalize'"), "{}", diagnostic.message);
    }

    #[test]
    fn the_default_pipeline_starts_nv_input_at_nv_ir() {
        let log = String::from_utf8(run(DEFAULT_PIPELINE, true).expect("nv input compiles")).unwrap();
        let ran: Vec<&str> = log.lines().filter_map(|l| l.strip_prefix("// -----// IR Dump After ")).collect();
        assert_eq!(ran, ["tile-canonicalize //----- //", "tile-fit-tma-boxes //----- //", "tile-programmatic-launch //----- //", "tile-canonicalize //----- //"]);
    }
}
