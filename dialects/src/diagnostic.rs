//! Errors the user can cause, each pointing at a place in the input.

use std::fmt;
use std::sync::Arc;

/// A position in a source file (1-based line and column), as MLIR prints it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Location {
    pub file: Arc<str>,
    pub line: u32,
    pub col: u32,
}

impl Location {
    pub fn new(file: Arc<str>, line: u32, col: u32) -> Self {
        Location { file, line, col }
    }

    /// The location of IR made by a pass with no better source position.
    pub fn unknown() -> Self {
        Location { file: Arc::from("<unknown>"), line: 0, col: 0 }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.col)
    }
}

/// One error with its location, plus notes that point elsewhere.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct Diagnostic {
    pub loc: Location,
    pub message: String,
    pub notes: Vec<(Location, String)>,
}

impl Diagnostic {
    pub fn error(loc: Location, message: impl Into<String>) -> Self {
        Diagnostic { loc, message: message.into(), notes: Vec::new() }
    }

    pub fn with_note(mut self, loc: Location, note: impl Into<String>) -> Self {
        self.notes.push((loc, note.into()));
        self
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: error: {}", self.loc, self.message)?;
        for (loc, note) in &self.notes {
            write!(f, "\n{loc}: note: {note}")?;
        }
        Ok(())
    }
}

/// Every error found in one run of a check (the verifier reports them all),
/// printed one per line in order.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}
