//! Skips made visible. A test or tool that cannot do its work on this
//! machine (no GPU, no ptxas) calls [`report_skip`]: a `SKIPPED` line on
//! stderr, written past libtest's capture so a plain `cargo test` shows it,
//! and, where [`SKIP_LOG_ENV`] names a file, a line appended to it, which
//! `scripts/test.sh` counts into its closing "N skipped" line. A skip that
//! returned success silently would read as a pass.

use std::io::Write;
use std::path::Path;

/// The environment variable naming the file skips are appended to.
pub const SKIP_LOG_ENV: &str = "TILEC_SKIP_LOG";

/// Reports that `what` (a test's or a tool's name) did not run, and `why`.
pub fn report_skip(what: &str, why: &str) {
    let line = format!("{what}: {why}");
    let _ = std::io::stderr().write_all(format!("SKIPPED {line}\n").as_bytes());
    if let Some(path) = std::env::var_os(SKIP_LOG_ENV).filter(|p| !p.is_empty()) {
        if let Err(e) = append(Path::new(&path), &line) {
            let _ = std::io::stderr().write_all(format!("cannot record the skip in {}: {e}\n", Path::new(&path).display()).as_bytes());
        }
    }
}

/// Appends `line` to the skip log at `path`, one skip a line.
fn append(path: &Path, line: &str) -> std::io::Result<()> {
    let mut log = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
    writeln!(log, "{line}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_are_appended_one_a_line() {
        let path = std::env::temp_dir().join(format!("tilec-skip-log-{}", std::process::id()));
        std::fs::remove_file(&path).ok();
        append(&path, "first: no GPU").unwrap();
        append(&path, "second: no ptxas").unwrap();
        let log = std::fs::read_to_string(&path).expect("the log was written");
        std::fs::remove_file(&path).ok();
        assert_eq!(log, "first: no GPU\nsecond: no ptxas\n");
    }
}
