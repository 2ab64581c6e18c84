//! Runs a pipeline over a module with mlir-opt's instrumentation: verify
//! after each pass (the IR verifier, then the barrier verifier), print IR
//! after all or named passes (and after a failing one), and time each pass.

use crate::analysis::barriers::verify_barriers;
use crate::pipeline::{create_passes, parse_pipeline};
use crate::Pass;
use std::io::Write;
use std::time::{Duration, Instant};
use tilec_dialects::syntax::print_function;
use tilec_dialects::verifier::verify_function;
use tilec_dialects::{Diagnostic, Module, PrintOptions};

#[derive(Clone, Debug)]
pub struct Instrumentation {
    pub verify_each: bool,
    pub print_after_all: bool,
    pub print_after: Vec<String>,
    pub print_after_failure: bool,
    pub timing: bool,
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
            print: PrintOptions::default(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PassError {
    #[error("invalid pass pipeline: {0}")]
    Pipeline(String),
    #[error("{diagnostic}\nnote: pass '{pass}' failed")]
    PassFailed { pass: &'static str, diagnostic: Diagnostic },
    #[error("{diagnostic}\nnote: the IR failed verification after pass '{pass}'")]
    VerificationFailed { pass: &'static str, diagnostic: Diagnostic },
}

pub struct PassManager {
    passes: Vec<Box<dyn Pass>>,
    pub instrumentation: Instrumentation,
}

impl PassManager {
    pub fn new(instrumentation: Instrumentation) -> Self {
        PassManager { passes: Vec::new(), instrumentation }
    }

    /// A manager running `pipeline` (e.g. `tile-canonicalize`).
    pub fn from_pipeline(pipeline: &str, instrumentation: Instrumentation) -> Result<Self, PassError> {
        let entries = parse_pipeline(pipeline).map_err(PassError::Pipeline)?;
        let mut pm = PassManager::new(instrumentation);
        pm.passes = create_passes(&entries);
        Ok(pm)
    }

    pub fn add(&mut self, pass: Box<dyn Pass>) {
        self.passes.push(pass);
    }

    /// Runs every pass over every function; IR dumps and the timing report
    /// go to `log` (stderr in the tools).
    pub fn run(&mut self, module: &mut Module, log: &mut dyn Write) -> Result<(), PassError> {
        let mut times: Vec<(&'static str, Duration)> = Vec::new();
        let instr = self.instrumentation.clone();
        for pass in &mut self.passes {
            let name = pass.name();
            let start = Instant::now();
            for func in &mut module.functions {
                if let Err(diagnostic) = crate::transforms::select_config::check_bound(name, func).and_then(|()| pass.run(func)) {
                    if instr.print_after_failure {
                        dump(log, &format!("IR Dump After {name} Failed"), module, instr.print);
                    }
                    return Err(PassError::PassFailed { pass: name, diagnostic });
                }
            }
            times.push((name, start.elapsed()));
            if instr.verify_each {
                for func in &module.functions {
                    if let Err(diagnostic) = verify_function(func).and_then(|()| verify_barriers(func)) {
                        if instr.print_after_failure {
                            dump(log, &format!("IR Dump After {name} Failed Verification"), module, instr.print);
                        }
                        return Err(PassError::VerificationFailed { pass: name, diagnostic });
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
        Ok(())
    }
}

fn dump(log: &mut dyn Write, title: &str, module: &Module, print: PrintOptions) {
    let mut text = format!("// -----// {title} //----- //\n");
    for func in &module.functions {
        text.push_str(&print_function(func, print));
    }
    // A log that cannot be written is not worth failing the compile over.
    let _ = writeln!(log, "{text}");
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
