//! `--verify-diagnostics`: the input says, in comments, which diagnostics it
//! must produce, and the tool checks them instead of printing them, as
//! `mlir-opt --verify-diagnostics` does:
//!
//! ```text
//! // expected-error@+1 {{unknown operation}}      the next line
//! %x = tile.frobnicate : index                     // expected-error {{...}} on this line
//! // expected-note@-2 {{...}}                      two lines up
//! // expected-warning@below {{...}}                the next line without a designator
//! // expected-remark@+1 {{...}}                     a pass's remark (with `--remarks`)
//! ```
//!
//! `@above` is the closest line above without an `expected-*` designator. The
//! text between `{{` and `}}` must occur in the message. Every diagnostic must
//! be expected and every expectation met; each mismatch is reported.

use tilec_dialects::Diagnostic;

/// How serious a diagnostic is, as `expected-error`, `-warning`, `-remark` and `-note` name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// `error:` (`expected-error`).
    Error,
    /// `warning:` (`expected-warning`).
    Warning,
    /// `remark:` (`expected-remark`, checked with `--remarks`).
    Remark,
    /// `note:` (`expected-note`).
    Note,
}

impl Severity {
    fn name(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Remark => "remark",
            Severity::Note => "note",
        }
    }
}

/// One diagnostic the tool produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Emitted {
    /// Error, warning, remark or note.
    pub severity: Severity,
    /// The file it points into.
    pub file: String,
    /// Its line, from 1.
    pub line: u32,
    /// Its column, from 1.
    pub col: u32,
    /// The message, without location or severity.
    pub message: String,
}

impl Emitted {
    /// The error or warning and each of its notes.
    pub fn from_diagnostic(d: &Diagnostic) -> Vec<Emitted> {
        let one = |severity, loc: &tilec_dialects::Location, message: &str| Emitted {
            severity,
            file: loc.file.to_string(),
            line: loc.line,
            col: loc.col,
            message: message.to_string(),
        };
        let severity = match d.severity {
            tilec_dialects::Severity::Error => Severity::Error,
            tilec_dialects::Severity::Warning => Severity::Warning,
            tilec_dialects::Severity::Remark => Severity::Remark,
        };
        let mut all = vec![one(severity, &d.loc, &d.message)];
        all.extend(d.notes.iter().map(|(loc, note)| one(Severity::Note, loc, note)));
        all
    }
}

/// One `expected-*` comment.
#[derive(Debug, PartialEq, Eq)]
struct Expected {
    severity: Severity,
    /// The line the diagnostic must be on.
    line: u32,
    message: String,
    /// Where the comment is, for reporting it unmet.
    at: (u32, u32),
}

/// Reads the `expected-*` comments of `text`; a malformed one is an error.
fn expectations(file: &str, text: &str) -> Result<Vec<Expected>, String> {
    let lines: Vec<&str> = text.lines().collect();
    let designated = |line: &str| ["expected-error", "expected-warning", "expected-remark", "expected-note"].iter().any(|k| line.contains(k));
    let mut out = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        let number = index as u32 + 1;
        for severity in [Severity::Error, Severity::Warning, Severity::Remark, Severity::Note] {
            let keyword = format!("expected-{}", severity.name());
            let mut rest = *line;
            while let Some(at) = rest.find(&keyword) {
                let col = (line.len() - rest.len() + at) as u32 + 1;
                rest = &rest[at + keyword.len()..];
                let bad = |why: &str| format!("{file}:{number}:{col}: error: {why} in '{keyword}'");
                let (target, after) = match rest.strip_prefix('@') {
                    None => (number as i64, rest),
                    Some(d) => {
                        let end = d.find(|c: char| c.is_whitespace() || c == '{').unwrap_or(d.len());
                        let target = match &d[..end] {
                            "above" => (1..number).rev().find(|&n| !designated(lines[n as usize - 1])).map(i64::from).ok_or_else(|| bad("no line above"))?,
                            "below" => ((number + 1)..=lines.len() as u32)
                                .find(|&n| !designated(lines[n as usize - 1]))
                                .map(i64::from)
                                .ok_or_else(|| bad("no line below"))?,
                            offset => number as i64 + offset.parse::<i64>().map_err(|_| bad(&format!("bad line designator '@{offset}'")))?,
                        };
                        (target, &d[end..])
                    }
                };
                let body = after.trim_start().strip_prefix("{{").ok_or_else(|| bad("expected '{{' after the designator"))?;
                let close = body.rfind("}}").ok_or_else(|| bad("no closing '}}'"))?;
                // One past the last line is where the end of the input is reported.
                if target < 1 || target > lines.len() as i64 + 1 {
                    return Err(bad(&format!("line {target} is outside the file")));
                }
                out.push(Expected { severity, line: target as u32, message: body[..close].to_string(), at: (number, col) });
                rest = &body[close + 2..];
            }
        }
    }
    Ok(out)
}

/// Checks `emitted` against the expectations written in `text` (the input
/// named `file`). Returns the mismatches, each a located error line; none
/// means every diagnostic was expected and every expectation met.
pub fn verify(file: &str, text: &str, emitted: &[Emitted]) -> Vec<String> {
    let mut expected = match expectations(file, text) {
        Ok(e) => e,
        Err(message) => return vec![message],
    };
    let mut met = vec![false; expected.len()];
    let mut problems = Vec::new();
    for d in emitted {
        let found = expected.iter().enumerate().position(|(i, e)| {
            !met[i] && e.severity == d.severity && d.file == file && e.line == d.line && d.message.contains(&e.message)
        });
        match found {
            Some(i) => met[i] = true,
            None => problems.push(format!("{}:{}:{}: error: unexpected {}: {}", d.file, d.line, d.col, d.severity.name(), d.message)),
        }
    }
    for (e, _) in expected.drain(..).zip(met).filter(|(_, m)| !m) {
        problems.push(format!("{file}:{}:{}: error: expected {} \"{}\" was not produced", e.at.0, e.at.1, e.severity.name(), e.message));
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(line: u32, message: &str) -> Emitted {
        Emitted { severity: Severity::Error, file: "a.tile".into(), line, col: 3, message: message.into() }
    }

    #[test]
    fn designators_name_lines() {
        let text = "// expected-error@+1 {{one}}\nx\ny // expected-error {{two}}\n// expected-note@-1 {{three}}\n// expected-warning@above {{four}}\n// expected-error@below {{five}}\n// expected-error@+1 {{x}}\nz\n";
        let e = expectations("a.tile", text).unwrap();
        let got: Vec<(u32, &str)> = e.iter().map(|e| (e.line, e.message.as_str())).collect();
        // `@above` on line 5 skips lines 4 and 3, which carry designators; `@below` skips line 7.
        assert_eq!(got, [(2, "one"), (3, "two"), (3, "three"), (2, "four"), (8, "five"), (8, "x")]);
    }

    #[test]
    fn all_matched_is_clean() {
        let text = "// expected-error@+1 {{unknown op}}\nx\n";
        assert!(verify("a.tile", text, &[error(2, "unknown operation 'x': unknown op here")]).is_empty());
    }

    #[test]
    fn unexpected_and_unmet_are_both_reported() {
        let text = "// expected-error@+1 {{wanted}}\nx\n";
        let problems = verify("a.tile", text, &[error(1, "other")]);
        assert_eq!(
            problems,
            ["a.tile:1:3: error: unexpected error: other", "a.tile:1:4: error: expected error \"wanted\" was not produced"]
        );
    }

    #[test]
    fn wrong_line_or_severity_does_not_match() {
        let text = "// expected-note@+1 {{m}}\nx\n";
        assert_eq!(verify("a.tile", text, &[error(2, "m")]).len(), 2);
        let text = "// expected-error@+2 {{m}}\nx\ny\n";
        assert_eq!(verify("a.tile", text, &[error(2, "m")]).len(), 2);
    }

    #[test]
    fn malformed_expectations_are_errors() {
        assert!(verify("a.tile", "// expected-error@+x {{m}}\n", &[])[0].contains("bad line designator"));
        assert!(verify("a.tile", "// expected-error@+2 {{m}}\n", &[])[0].contains("outside the file"));
        assert!(verify("a.tile", "// expected-error m\n", &[])[0].contains("expected '{{'"));
    }
}
