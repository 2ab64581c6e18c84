//! Errors of the MLIR -> PTX back end. Every failure the input can cause is a value of
//! [`BackendError`]; the back end never panics on bad input.

use std::fmt;

/// MLIR diagnostics collected while one step ran, already formatted as
/// `file:line:col: error: message` (plus notes), in the order MLIR emitted them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diagnostics(pub Vec<String>);

impl Diagnostics {
    /// Whether MLIR said nothing.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return write!(f, "(MLIR emitted no diagnostic)");
        }
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

/// Why the back end could not take MLIR text to PTX.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The input text is not valid MLIR (syntax, unknown op, verifier failure).
    #[error("cannot parse MLIR input `{source_name}`:\n{diagnostics}")]
    Parse {
        /// The name the input was given.
        source_name: String,
        /// What MLIR's parser and verifier said.
        diagnostics: Diagnostics,
    },

    /// The input parsed but is not what the back end lowers (e.g. no `gpu.module`).
    #[error("unsupported MLIR input: {0}")]
    Input(String),

    /// A pass pipeline string did not parse (a bug in the options, not in the input).
    #[error("cannot parse pass pipeline `{pipeline}`: {message}")]
    PipelineSyntax {
        /// The textual pipeline.
        pipeline: String,
        /// MLIR's complaint.
        message: String,
    },

    /// One pass of the upstream pipeline failed.
    #[error("MLIR pass `{pass}` failed:\n{diagnostics}{}", ir_note(.ir_after_failure))]
    Pass {
        /// The failing pass, as the pipeline names it.
        pass: String,
        /// What it reported.
        diagnostics: Diagnostics,
        /// The IR as the failure left it, when printing after failure was asked for.
        ir_after_failure: Option<String>,
    },

    /// Attaching the kernel ABI (TMA descriptors as grid constants) failed.
    #[error("kernel ABI: {0}")]
    KernelAbi(String),

    /// `mlirTranslateModuleToLLVMIR` refused the lowered `gpu.module`.
    #[error("translating the gpu.module to LLVM IR failed:\n{diagnostics}")]
    Translate {
        /// What the translation reported.
        diagnostics: Diagnostics,
    },

    /// An LLVM step (target lookup, verifier, optimisation, PTX emission) failed.
    #[error("LLVM {step} failed: {message}")]
    Llvm {
        /// The step that failed, in words.
        step: &'static str,
        /// LLVM's message.
        message: String,
    },
}

fn ir_note(ir: &Option<String>) -> String {
    match ir {
        Some(ir) => format!("\n// ----- IR after the failing pass -----\n{ir}"),
        None => String::new(),
    }
}
