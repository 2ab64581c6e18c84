//! An MLIR context with every upstream dialect, pass and LLVM-IR translation registered, and a
//! diagnostic handler that captures MLIR's diagnostics (with locations) instead of printing them.

use super::error::Diagnostics;
use melior::{
    Context,
    diagnostic::{Diagnostic, DiagnosticSeverity},
    dialect::DialectRegistry,
    utility::{register_all_dialects, register_all_llvm_translations, register_all_passes},
};
use std::{cell::RefCell, rc::Rc};

/// The MLIR context used for one compilation, plus the diagnostics it collected.
pub struct BackendContext {
    // Declared first so it drops before... nothing else holds MLIR objects; kept simple.
    context: Context,
    diagnostics: Rc<RefCell<Vec<String>>>,
}

impl BackendContext {
    /// Creates a context with every dialect registered, all passes registered (process-wide,
    /// once) and all dialect-to-LLVM-IR translations registered. A dialect is loaded when the
    /// parser or a pass first needs it: loading all of them up front is most of a context's
    /// cost, and a kernel's module uses a dozen. Multi-threading is off: kernels are small, the
    /// build machines have 2 cores, and output order stays deterministic.
    pub fn new() -> Self {
        register_all_passes();
        let registry = DialectRegistry::new();
        register_all_dialects(&registry);
        let context = Context::new_with_registry(&registry, false);
        register_all_llvm_translations(&context);

        let diagnostics = Rc::new(RefCell::new(Vec::new()));
        let sink = diagnostics.clone();
        context.attach_diagnostic_handler(move |d: Diagnostic| {
            sink.borrow_mut().push(format_diagnostic(&d));
            true // handled: do not also print to stderr
        });
        Self { context, diagnostics }
    }

    /// The MLIR context, with the dialects and passes the back end uses registered.
    pub fn mlir(&self) -> &Context {
        &self.context
    }

    /// Takes the diagnostics collected since the last call.
    pub fn take_diagnostics(&self) -> Diagnostics {
        Diagnostics(std::mem::take(&mut *self.diagnostics.borrow_mut()))
    }
}

impl Default for BackendContext {
    fn default() -> Self {
        Self::new()
    }
}

fn format_diagnostic(d: &Diagnostic) -> String {
    let severity = match d.severity() {
        DiagnosticSeverity::Error => "error",
        DiagnosticSeverity::Note => "note",
        DiagnosticSeverity::Remark => "remark",
        DiagnosticSeverity::Warning => "warning",
    };
    let mut out = format!("{}: {severity}: {d}", pretty_location(&d.location().to_string()));
    for i in 0..d.note_count() {
        if let Ok(note) = d.note(i) {
            out.push('\n');
            out.push_str(&format_diagnostic(&note));
        }
    }
    out
}

/// `loc("file.mlir":3:7)` -> `file.mlir:3:7`; anything else (fused, unknown, callsite) as MLIR
/// prints it.
fn pretty_location(loc: &str) -> String {
    if let Some(inner) = loc.strip_prefix("loc(\"").and_then(|s| s.strip_suffix(')')) {
        if let Some((file, line_col)) = inner.split_once("\":") {
            if line_col.split(':').all(|p| p.chars().all(|c| c.is_ascii_digit()) && !p.is_empty()) {
                return format!("{file}:{line_col}");
            }
        }
    }
    loc.to_string()
}

