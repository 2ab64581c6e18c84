//! Errors the user can cause, each pointing at a place in the input, and
//! warnings: what a check could not decide, where it could not.

use std::fmt;
use std::sync::Arc;

/// A position in a source file (1-based line and column), as MLIR prints it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Location {
    /// The source file's name as given to the parser.
    pub file: Arc<str>,
    /// 1-based line; 0 for an unknown location.
    pub line: u32,
    /// 1-based column.
    pub col: u32,
}

impl Location {
    /// A location in `file`.
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

/// How serious a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Severity {
    /// The input is wrong: the tool fails.
    Error,
    /// The tool goes on, but something is unproven or suspect.
    Warning,
    /// What a pass decided, for the user who asks (`--remarks`).
    Remark,
}

impl Severity {
    /// The word the diagnostic is printed with: `error`, `warning`, `remark`.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Remark => "remark",
        }
    }
}

/// One error, warning or remark with its location, plus notes that point elsewhere.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct Diagnostic {
    /// Error, warning or remark.
    pub severity: Severity,
    /// Where the error is.
    pub loc: Location,
    /// What is wrong, without the location.
    pub message: String,
    /// Further locations with a remark each (`note:` lines).
    pub notes: Vec<(Location, String)>,
}

impl Diagnostic {
    /// An error at `loc`.
    pub fn error(loc: Location, message: impl Into<String>) -> Self {
        Diagnostic { severity: Severity::Error, loc, message: message.into(), notes: Vec::new() }
    }

    /// A warning at `loc`.
    pub fn warning(loc: Location, message: impl Into<String>) -> Self {
        Diagnostic { severity: Severity::Warning, ..Diagnostic::error(loc, message) }
    }

    /// A remark at `loc`.
    pub fn remark(loc: Location, message: impl Into<String>) -> Self {
        Diagnostic { severity: Severity::Remark, ..Diagnostic::error(loc, message) }
    }

    /// The diagnostic with a note at `loc` added.
    pub fn with_note(mut self, loc: Location, note: impl Into<String>) -> Self {
        self.notes.push((loc, note.into()));
        self
    }
}

impl Diagnostic {
    /// The diagnostic as [`Display`](fmt::Display) writes it, with the source
    /// line and a caret under the column after each location in `file`, as
    /// MLIR's source manager prints them. `text` is `file`'s contents;
    /// locations elsewhere, or past its end, are written without a line.
    pub fn render(&self, file: &str, text: &str) -> String {
        let mut out = format!("{}: {}: {}", self.loc, self.severity.name(), self.message);
        push_source_line(&mut out, &self.loc, file, text);
        for (loc, note) in &self.notes {
            out.push_str(&format!("\n{loc}: note: {note}"));
            push_source_line(&mut out, loc, file, text);
        }
        out
    }
}

/// Appends `loc`'s line of `text` and a caret under its column.
fn push_source_line(out: &mut String, loc: &Location, file: &str, text: &str) {
    if &*loc.file != file || loc.line == 0 {
        return;
    }
    let Some(line) = text.lines().nth(loc.line as usize - 1) else { return };
    // Tabs keep their width in the caret line so the caret stays under the column.
    let pad: String = line.chars().take(loc.col.saturating_sub(1) as usize).map(|c| if c == '\t' { '\t' } else { ' ' }).collect();
    out.push_str(&format!("\n{line}\n{pad}^"));
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}: {}", self.loc, self.severity.name(), self.message)?;
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

impl Diagnostics {
    /// Every diagnostic rendered with its source line, one after another.
    pub fn render(&self, file: &str, text: &str) -> String {
        self.0.iter().map(|d| d.render(file, text)).collect::<Vec<_>>().join("\n")
    }
}

impl From<Diagnostic> for Diagnostics {
    fn from(d: Diagnostic) -> Self {
        Diagnostics(vec![d])
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_shows_the_line_and_a_caret_under_the_column() {
        let file: Arc<str> = Arc::from("a.tile");
        let d = Diagnostic::error(Location::new(file.clone(), 2, 6), "bad")
            .with_note(Location::new(file, 1, 1), "opened here")
            .with_note(Location::new(Arc::from("b.tile"), 1, 1), "elsewhere");
        let text = "func {\n\tx = $y\n}\n";
        assert_eq!(
            d.render("a.tile", text),
            "a.tile:2:6: error: bad\n\tx = $y\n\t    ^\na.tile:1:1: note: opened here\nfunc {\n^\nb.tile:1:1: note: elsewhere"
        );
    }

    #[test]
    fn render_skips_lines_past_the_end_and_unknown_locations() {
        let d = Diagnostic::error(Location::new(Arc::from("a.tile"), 9, 1), "eof");
        assert_eq!(d.render("a.tile", "x\n"), "a.tile:9:1: error: eof");
        assert_eq!(Diagnostic::error(Location::unknown(), "u").render("a.tile", "x\n"), "<unknown>:0:0: error: u");
    }

    #[test]
    fn a_warning_says_so() {
        let w = Diagnostic::warning(Location::new(Arc::from("a.tile"), 1, 2), "unproven");
        assert_eq!(w.render("a.tile", "xy\n"), "a.tile:1:2: warning: unproven\nxy\n ^");
        assert_eq!(w.to_string(), "a.tile:1:2: warning: unproven");
    }
}
