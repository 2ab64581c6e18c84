#![warn(missing_docs)]
//! A small lit-style test runner: every test file is one cargo test.
//!
//! # Test file format
//!
//! Test files live under a root folder (for tilec, `tests/lit/<pass>/`) and
//! have one of the configured extensions (`.tile` and `.mlir` by default).
//! Folders named `Inputs` are skipped, as in LLVM, so tests can keep helper
//! files next to them. Directives are `//` comments whose first word is the
//! directive:
//!
//! ```text
//! // REQUIRES: ptxas
//! // RUN: %tile-opt %s --tile-pipeline="stages=3" \
//! // RUN:   | %FileCheck %s
//! // CHECK: nv.tma.load
//! ```
//!
//! - `RUN:` is a bash command. A line ending in `\` continues on the next
//!   `RUN:` line. Each command runs with `bash -o pipefail -c`, so a failure in
//!   any stage of a pipe fails the test, in the test file's folder, with a
//!   timeout. Commands run in order and the first failure stops the test.
//!   A file without a `RUN:` line fails: a test that cannot fail is a defect.
//! - `REQUIRES:` lists features, separated by commas, that must all be in
//!   [`LitConfig::features`]; otherwise the test is reported as ignored with
//!   the missing features as the reason.
//! - `UNSUPPORTED:` lists features, separated by commas; if any of them is
//!   available the test is reported as ignored, naming it.
//! - `XFAIL:` lists features, or `*`: where any of them is available (always
//!   for `*`), a RUN command must fail, and the test passes when one does;
//!   if every command succeeds the test fails as an unexpected pass, so that
//!   a fixed bug's test is turned back into an ordinary one.
//!
//! # Substitutions
//!
//! `%s` is the test file, `%S` its folder and `%t` a temporary path unique to
//! the file (under [`LitConfig::temp_root`], its parent folder created; use
//! `%t` itself or `%t.suffix`). The caller adds tools, e.g. `%tile-opt`;
//! [`LitConfig::new`] adds `%FileCheck` and `%not`. The longest name wins, so
//! `%tile-opt` is not read as `%t` followed by `ile-opt`, and substituted text
//! is not substituted again. Paths are inserted unquoted, as lit does.
//!
//! Each trial is named by the file's path relative to the root, with `/`
//! separators, so `cargo test --test lit -- pipeline/` runs one folder;
//! several filters run the tests any of them selects
//! (`-- pipeline/ errors/`).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use libtest_mimic::{Arguments, Completion, Failed, Trial};

/// Where FileCheck is looked for after the `TILEC_FILECHECK` variable.
const LLVM_BIN: &str = "/usr/lib/llvm-22/bin";

/// Each captured stream is cut to this many bytes in a failure message;
/// FileCheck puts its diagnostic first, so the head is what matters.
const MAX_STREAM_BYTES: usize = 8 * 1024;

/// Why the lit tests could not be set up; a test's own failure is not one
/// of these but a failed trial.
#[derive(Debug, thiserror::Error)]
pub enum LitError {
    /// A tool the runner needs (FileCheck) is nowhere it looked.
    #[error("{tool} not found; searched: {}", searched.join(", "))]
    ToolNotFound {
        /// The tool's name.
        tool: String,
        /// Every place looked in, in order.
        searched: Vec<String>,
    },
    /// Reading a folder or test file, or writing the `%not` script, failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or folder concerned.
        path: PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },
    /// A test file's directives are malformed: a `RUN:` line ends in `\`
    /// but the next line is not a `RUN:` line, or there is no next line.
    #[error("{}:{line}: {message}", path.display())]
    Parse {
        /// The test file.
        path: PathBuf,
        /// 1-based line of the problem.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// What to run and how.
#[derive(Debug, Clone)]
pub struct LitConfig {
    /// Folder searched recursively for test files.
    pub root: PathBuf,
    /// File extensions (without the dot) that make a file a test.
    pub extensions: Vec<String>,
    /// `%name` to replacement text, e.g. `"%tile-opt"` to a binary's path.
    pub substitutions: BTreeMap<String, String>,
    /// Features available for `REQUIRES:` (e.g. `ptxas`).
    pub features: BTreeSet<String>,
    /// Limit for each RUN command.
    pub timeout: Duration,
    /// Folder under which each test's `%t` is placed.
    pub temp_root: PathBuf,
    /// Told of each test ignored for a missing feature (its name and the
    /// reason), so that the caller counts skips beyond libtest's summary.
    pub on_skip: Option<fn(&str, &str)>,
}

impl LitConfig {
    /// Defaults: `.tile` and `.mlir` files, a 60 s timeout, `%t` under the
    /// system temporary folder, and `%FileCheck` and `%not` found on this
    /// machine (an error names every place searched).
    pub fn new(root: impl Into<PathBuf>) -> Result<Self, LitError> {
        let filecheck = find_filecheck()?;
        let not = find_not(&filecheck)?;
        let substitutions = BTreeMap::from([
            ("%FileCheck".to_string(), filecheck.display().to_string()),
            ("%not".to_string(), not.display().to_string()),
        ]);
        Ok(Self {
            root: root.into(),
            extensions: vec!["tile".into(), "mlir".into()],
            substitutions,
            features: BTreeSet::new(),
            timeout: Duration::from_secs(60),
            temp_root: std::env::temp_dir().join(format!("tilec-lit-{}", std::process::id())),
            on_skip: None,
        })
    }

    /// Adds (or replaces) the substitution `name` (including its `%`).
    pub fn substitution(mut self, name: &str, value: impl AsRef<Path>) -> Self {
        self.substitutions
            .insert(name.to_string(), value.as_ref().display().to_string());
        self
    }

    /// Declares a feature available to `REQUIRES:`.
    pub fn feature(mut self, name: &str) -> Self {
        self.features.insert(name.to_string());
        self
    }

    /// Calls `report` with each test ignored for a missing feature.
    pub fn on_skip(mut self, report: fn(&str, &str)) -> Self {
        self.on_skip = Some(report);
        self
    }
}

/// Finds LLVM's FileCheck: `$TILEC_FILECHECK`, then `/usr/lib/llvm-22/bin`,
/// then `PATH`.
pub fn find_filecheck() -> Result<PathBuf, LitError> {
    let mut searched = Vec::new();
    if let Some(path) = std::env::var_os("TILEC_FILECHECK") {
        let path = PathBuf::from(path);
        if path.is_file() {
            return Ok(path);
        }
        searched.push(format!("$TILEC_FILECHECK ({})", path.display()));
    }
    let llvm = Path::new(LLVM_BIN).join("FileCheck");
    if llvm.is_file() {
        return Ok(llvm);
    }
    searched.push(llvm.display().to_string());
    if let Some(path) = find_in_path("FileCheck") {
        return Ok(path);
    }
    searched.push("FileCheck on PATH".into());
    Err(LitError::ToolNotFound {
        tool: "FileCheck".into(),
        searched,
    })
}

/// Finds LLVM's `not` next to FileCheck or on `PATH`. Without one (a
/// FileCheck installed on its own), writes a script with the same meaning:
/// succeed only if the command exits non-zero without being killed by a
/// signal, so `%not` cannot hide a crash.
fn find_not(filecheck: &Path) -> Result<PathBuf, LitError> {
    if let Some(path) = filecheck
        .parent()
        .map(|dir| dir.join("not"))
        .filter(|p| p.is_file())
    {
        return Ok(path);
    }
    if let Some(path) = find_in_path("not") {
        return Ok(path);
    }
    let dir = std::env::temp_dir().join(format!("tilec-lit-not-{}", std::process::id()));
    let path = dir.join("not");
    let script = "#!/bin/sh\n\"$@\"\nstatus=$?\ntest $status -ne 0 && test $status -lt 128\n";
    let io = |source| LitError::Io {
        path: path.clone(),
        source,
    };
    std::fs::create_dir_all(&dir).map_err(io)?;
    std::fs::write(&path, script).map_err(io)?;
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .map_err(io)?;
    Ok(path)
}

fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// Discovers the tests, runs those selected by the command line (libtest's
/// flags, `--list`, `--ignored`, `--exact`, ..., and any number of filters,
/// a test running when one selects it) and returns the exit code.
pub fn run_lit(config: LitConfig) -> ExitCode {
    let (filters, flags) = split_filters(std::env::args());
    let args = Arguments::from_iter(flags);
    match trials(config) {
        Ok(trials) => {
            let selected = trials.into_iter().filter(|t| filters.is_empty() || filters.iter().any(|f| selects(f, t.name(), args.exact))).collect();
            libtest_mimic::run(&args, selected).exit_code()
        }
        Err(e) => {
            eprintln!("lit: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The libtest flags that take a value.
const VALUED_FLAGS: [&str; 6] = ["--test-threads", "--logfile", "--skip", "--color", "--format", "-Z"];

/// The filters of a command line (its words that are neither flags nor a
/// flag's value) apart from the rest, program name first.
fn split_filters(args: impl IntoIterator<Item = String>) -> (Vec<String>, Vec<String>) {
    let (mut filters, mut flags) = (Vec::new(), Vec::new());
    let mut args = args.into_iter();
    flags.extend(args.next());
    while let Some(arg) = args.next() {
        if VALUED_FLAGS.contains(&arg.as_str()) {
            flags.push(arg);
            flags.extend(args.next());
        } else if arg.starts_with('-') {
            flags.push(arg);
        } else {
            filters.push(arg);
        }
    }
    (filters, flags)
}

/// Whether `filter` selects the test `name`: as a substring, or whole with `--exact`.
fn selects(filter: &str, name: &str, exact: bool) -> bool {
    if exact {
        name == filter
    } else {
        name.contains(filter)
    }
}

/// One trial per test file, sorted by relative path.
pub fn trials(config: LitConfig) -> Result<Vec<Trial>, LitError> {
    let root = config.root.canonicalize().map_err(|source| LitError::Io {
        path: config.root.clone(),
        source,
    })?;
    let mut files = Vec::new();
    collect(&root, &config.extensions, &mut files)?;
    files.sort();
    let config = Arc::new(LitConfig { root, ..config });
    Ok(files
        .into_iter()
        .map(|file| {
            let config = Arc::clone(&config);
            Trial::ignorable_test(test_name(&config.root, &file), move || {
                run_file(&config, &file)
            })
        })
        .collect())
}

fn collect(dir: &Path, extensions: &[String], out: &mut Vec<PathBuf>) -> Result<(), LitError> {
    let io = |source| LitError::Io {
        path: dir.to_path_buf(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        if path.is_dir() {
            if path.file_name() != Some("Inputs".as_ref()) {
                collect(&path, extensions, out)?;
            }
        } else if path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| extensions.iter().any(|x| x == e))
        {
            out.push(path);
        }
    }
    Ok(())
}

fn test_name(root: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(root).unwrap_or(file);
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// The directives of one test file.
#[derive(Debug, PartialEq)]
struct Script {
    /// (line number of the first `RUN:` line, command with continuations joined)
    runs: Vec<(usize, String)>,
    requires: Vec<String>,
    unsupported: Vec<String>,
    /// The features of `XFAIL:` (`*` for every configuration).
    xfail: Vec<String>,
}

/// The comma-separated features after a directive.
fn features(list: &str) -> impl Iterator<Item = String> + '_ {
    list.split(',').map(str::trim).filter(|f| !f.is_empty()).map(String::from)
}

/// The text after `// KEYWORD:` on a line, if the line is that directive.
fn directive<'a>(line: &'a str, keyword: &str) -> Option<&'a str> {
    line.trim_start()
        .strip_prefix("//")?
        .trim_start()
        .strip_prefix(keyword)
}

fn parse_script(path: &Path, text: &str) -> Result<Script, LitError> {
    let mut runs: Vec<(usize, String)> = Vec::new();
    let (mut requires, mut unsupported, mut xfail) = (Vec::new(), Vec::new(), Vec::new());
    // Set while the previous RUN line ended in `\`.
    let mut continued = false;
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        if let Some(list) = directive(line, "REQUIRES:") {
            requires.extend(features(list));
        }
        if let Some(list) = directive(line, "UNSUPPORTED:") {
            unsupported.extend(features(list));
        }
        if let Some(list) = directive(line, "XFAIL:") {
            xfail.extend(features(list));
        }
        let Some(command) = directive(line, "RUN:") else {
            if continued {
                return Err(LitError::Parse {
                    path: path.to_path_buf(),
                    line: number,
                    message:
                        "expected a RUN: line to continue the previous one, which ends in `\\`"
                            .into(),
                });
            }
            continue;
        };
        let command = command.trim();
        let (part, next_continues) = match command.strip_suffix('\\') {
            Some(head) => (head.trim_end(), true),
            None => (command, false),
        };
        if continued {
            let (_, joined) = runs
                .last_mut()
                .expect("a continued RUN line has a predecessor");
            joined.push(' ');
            joined.push_str(part);
        } else {
            runs.push((number, part.to_string()));
        }
        continued = next_continues;
    }
    if continued {
        return Err(LitError::Parse {
            path: path.to_path_buf(),
            line: text.lines().count(),
            message: "the last RUN: line ends in `\\` but nothing follows".into(),
        });
    }
    Ok(Script { runs, requires, unsupported, xfail })
}

/// Replaces every `%name` of `substitutions` in one left-to-right pass,
/// trying longer names first; replaced text is not scanned again.
fn substitute(command: &str, substitutions: &BTreeMap<String, String>) -> String {
    let mut names: Vec<&String> = substitutions.keys().collect();
    names.sort_by_key(|name| std::cmp::Reverse(name.len()));
    let mut out = String::with_capacity(command.len());
    let mut rest = command;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        match names.iter().find(|name| rest.starts_with(name.as_str())) {
            Some(name) => {
                out.push_str(&substitutions[*name]);
                rest = &rest[name.len()..];
            }
            None => {
                out.push('%');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn run_file(config: &LitConfig, file: &Path) -> Result<Completion, Failed> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let script = parse_script(file, &text).map_err(|e| e.to_string())?;
    let missing: Vec<&str> = script
        .requires
        .iter()
        .filter(|f| !config.features.contains(*f))
        .map(String::as_str)
        .collect();
    let present: Vec<&str> = script.unsupported.iter().filter(|f| config.features.contains(*f)).map(String::as_str).collect();
    let skip = match (missing.is_empty(), present.is_empty()) {
        (false, _) => Some(format!("requires {}", missing.join(", "))),
        (true, false) => Some(format!("unsupported with {}", present.join(", "))),
        (true, true) => None,
    };
    if let Some(why) = skip {
        if let Some(report) = config.on_skip {
            report(&test_name(&config.root, file), &why);
        }
        return Ok(Completion::ignored_with(why));
    }
    let expect_failure = script.xfail.iter().any(|f| f == "*" || config.features.contains(f));
    if script.runs.is_empty() {
        return Err(format!("{}: no RUN: line, so this test cannot fail", file.display()).into());
    }

    let dir = file.parent().expect("a test file has a parent folder");
    let temp = config
        .temp_root
        .join(format!("{}.tmp", test_name(&config.root, file)));
    std::fs::create_dir_all(temp.parent().expect("%t has a parent folder"))
        .map_err(|e| format!("creating the folder of {}: {e}", temp.display()))?;
    let mut substitutions = config.substitutions.clone();
    substitutions.insert("%s".into(), file.display().to_string());
    substitutions.insert("%S".into(), dir.display().to_string());
    substitutions.insert("%t".into(), temp.display().to_string());

    for (line, command) in &script.runs {
        let expanded = substitute(command, &substitutions);
        let output = run_command(&expanded, dir, config.timeout)
            .map_err(|e| format!("{}:{line}: cannot run bash: {e}", file.display()))?;
        if output.status.as_ref().is_some_and(ExitStatus::success) {
            continue;
        }
        // An expected failure is any command's exit with a failure, not a hang.
        if expect_failure && output.status.is_some() {
            return Ok(Completion::Completed);
        }
        let outcome = match output.status {
            None => format!("timed out after {:?}", config.timeout),
            Some(status) => match (status.code(), status.signal()) {
                (Some(code), _) => format!("exit code {code}"),
                (None, Some(signal)) => format!("killed by signal {signal}"),
                (None, None) => format!("{status}"),
            },
        };
        return Err(format!(
            "{}:{line}: RUN command failed ({outcome})\n  as written:     {command}\n  as substituted: {expanded}\n\
             --- stderr ---\n{}\n--- stdout ---\n{}",
            file.display(),
            clip(&output.stderr),
            clip(&output.stdout),
        )
        .into());
    }
    if expect_failure {
        return Err(format!("{}: every RUN command succeeded, but the test is marked XFAIL: the failure it expects is gone, so take the XFAIL: line out", file.display()).into());
    }
    Ok(Completion::Completed)
}

struct Output {
    /// `None` when the command ran past the timeout and was killed.
    status: Option<ExitStatus>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

fn run_command(command: &str, dir: &Path, timeout: Duration) -> std::io::Result<Output> {
    let mut child = Command::new("bash")
        .args(["-o", "pipefail", "-c", command])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group, so a timeout kills every stage of the pipe,
        // not only bash (survivors would keep our pipes open).
        .process_group(0)
        .spawn()?;
    // Read both streams while waiting: a full pipe would block the command.
    let drain = |mut stream: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = stream.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("stdout is piped")));
    let stderr = drain(Box::new(child.stderr.take().expect("stderr is piped")));
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if Instant::now() >= deadline {
            let pid = child.id() as libc::pid_t;
            // SAFETY: kill has no memory-safety preconditions; a negative pid
            // names the process group created above.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            child.wait()?;
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Ok(Output {
        status,
        stdout: stdout.join().expect("reader thread does not panic"),
        stderr: stderr.join().expect("reader thread does not panic"),
    })
}

fn clip(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_end();
    if text.len() <= MAX_STREAM_BYTES {
        return text.to_string();
    }
    let mut end = MAX_STREAM_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n[... {} more bytes]", &text[..end], text.len() - end)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh folder for one test, named so parallel tests do not collide,
    /// and removed when the test ends.
    struct Scratch(PathBuf);

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn scratch(name: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("tilec-filecheck-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn config(root: &Path) -> LitConfig {
        LitConfig {
            temp_root: root.join("tmp"),
            ..LitConfig::new(root).unwrap()
        }
    }

    /// Writes `text` as `name` under `root` and runs it as one trial would.
    fn run(root: &Path, name: &str, text: &str) -> Result<Completion, Failed> {
        let file = root.join(name);
        std::fs::write(&file, text).unwrap();
        run_file(&config(root), &file)
    }

    fn failure(result: Result<Completion, Failed>) -> String {
        match result {
            Ok(_) => panic!("the test passed or was ignored; expected a failure"),
            Err(e) => e.message().unwrap().to_string(),
        }
    }

    #[test]
    fn run_lines_join_continuations() {
        let text = "// RUN: %tile-opt %s \\\n//   RUN:   | %FileCheck %s\nfoo RUN: not a directive\n// RUN: true\n";
        let script = parse_script(Path::new("a.tile"), text).unwrap();
        assert_eq!(
            script.runs,
            vec![
                (1, "%tile-opt %s | %FileCheck %s".to_string()),
                (4, "true".to_string())
            ]
        );
    }

    #[test]
    fn dangling_continuation_is_an_error() {
        let err = parse_script(Path::new("a.tile"), "// RUN: true \\\n// CHECK: x\n").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("a.tile:2: expected a RUN: line"),
            "{err}"
        );
        let err = parse_script(Path::new("a.tile"), "// RUN: true \\\n").unwrap_err();
        assert!(err.to_string().contains("nothing follows"), "{err}");
    }

    #[test]
    fn requires_lists_features() {
        let script = parse_script(
            Path::new("a.tile"),
            "// REQUIRES: ptxas, gpu\n// REQUIRES: x\n",
        )
        .unwrap();
        assert_eq!(script.requires, ["ptxas", "gpu", "x"]);
    }

    #[test]
    fn longest_substitution_wins_and_output_is_not_rescanned() {
        let subs = BTreeMap::from([
            ("%t".to_string(), "/tmp/t".to_string()),
            ("%tile-opt".to_string(), "/bin/tile-opt".to_string()),
            ("%s".to_string(), "/x/%t.tile".to_string()),
        ]);
        assert_eq!(
            substitute("%tile-opt %s -o %t.ll; echo 100% %q", &subs),
            "/bin/tile-opt /x/%t.tile -o /tmp/t.ll; echo 100% %q"
        );
    }

    #[test]
    fn passing_check() {
        let scratch = scratch("pass");
        let root = &scratch.0;
        let result = run(
            root,
            "a.tile",
            "// RUN: cat %s | %FileCheck %s\n// CHECK: {{^}}tile.dot\ntile.dot\n",
        );
        assert!(matches!(result, Ok(Completion::Completed)));
    }

    #[test]
    fn failing_check_shows_filecheck_diagnostic() {
        let scratch = scratch("fail");
        let root = &scratch.0;
        let message = failure(run(
            root,
            "a.tile",
            "// RUN: cat %s | %FileCheck %s\n// CHECK: tile.{{absent}}\n",
        ));
        assert!(
            message.contains("a.tile:1: RUN command failed (exit code 1)"),
            "{message}"
        );
        assert!(
            message.contains("as written:     cat %s | %FileCheck %s"),
            "{message}"
        );
        assert!(
            message.contains(&format!(
                "as substituted: cat {}",
                root.join("a.tile").display()
            )),
            "{message}"
        );
        assert!(
            message.contains("error: CHECK: expected string not found"),
            "{message}"
        );
    }

    #[test]
    fn no_run_line_fails() {
        let scratch = scratch("norun");
        let root = &scratch.0;
        let message = failure(run(root, "a.tile", "// CHECK: x\n"));
        assert!(message.contains("no RUN: line"), "{message}");
    }

    #[test]
    fn any_failing_pipe_stage_fails() {
        let scratch = scratch("pipefail");
        let root = &scratch.0;
        let message = failure(run(root, "a.tile", "// RUN: false | cat\n"));
        assert!(message.contains("exit code 1"), "{message}");
    }

    #[test]
    fn not_inverts_and_temp_path_is_writable() {
        let scratch = scratch("not");
        let root = &scratch.0;
        let text = "// RUN: %not false\n// RUN: echo hi > %t.out && %FileCheck --check-prefix=T --input-file %t.out %s\n// T: hi\n";
        assert!(matches!(
            run(root, "a.tile", text),
            Ok(Completion::Completed)
        ));
    }

    #[test]
    fn timeout_kills_the_whole_pipe() {
        let scratch = scratch("timeout");
        let root = &scratch.0;
        std::fs::write(root.join("a.tile"), "// RUN: sleep 30 | cat\n").unwrap();
        let config = LitConfig {
            timeout: Duration::from_millis(200),
            ..config(root)
        };
        let start = Instant::now();
        let message = failure(run_file(&config, &root.join("a.tile")));
        assert!(message.contains("timed out"), "{message}");
        assert!(start.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn missing_feature_is_ignored_with_reason() {
        let scratch = scratch("requires");
        let root = &scratch.0;
        match run(root, "a.tile", "// REQUIRES: ptxas\n// RUN: false\n") {
            Ok(Completion::Ignored { reason }) => {
                assert_eq!(reason.as_deref(), Some("requires ptxas"))
            }
            _ => panic!("expected an ignored test"),
        }
        let file = root.join("a.tile");
        assert!(
            run_file(&config(root).feature("ptxas"), &file).is_err(),
            "with the feature it runs"
        );
    }

    #[test]
    fn a_present_unsupported_feature_is_ignored_with_reason() {
        let scratch = scratch("unsupported");
        let root = &scratch.0;
        let file = root.join("a.tile");
        std::fs::write(&file, "// UNSUPPORTED: ptxas, gpu\n// RUN: false\n").unwrap();
        match run_file(&config(root).feature("ptxas"), &file) {
            Ok(Completion::Ignored { reason }) => assert_eq!(reason.as_deref(), Some("unsupported with ptxas")),
            _ => panic!("expected an ignored test"),
        }
        assert!(run_file(&config(root), &file).is_err(), "without the feature it runs");
    }

    #[test]
    fn an_expected_failure_passes_and_an_unexpected_pass_fails() {
        let scratch = scratch("xfail");
        let root = &scratch.0;
        assert!(matches!(run(root, "a.tile", "// XFAIL: *\n// RUN: true\n// RUN: false\n"), Ok(Completion::Completed)));
        assert!(failure(run(root, "b.tile", "// XFAIL: *\n// RUN: true\n")).contains("marked XFAIL"));
        // XFAIL for a feature this configuration lacks: an ordinary test.
        assert!(failure(run(root, "c.tile", "// XFAIL: ptxas\n// RUN: false\n")).contains("RUN command failed"));
        let file = root.join("c.tile");
        assert!(matches!(run_file(&config(root).feature("ptxas"), &file), Ok(Completion::Completed)));
    }

    #[test]
    fn filters_are_the_words_that_are_neither_flags_nor_their_values() {
        let words = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        let (filters, flags) = split_filters(words("lit pipeline/ --test-threads 2 errors/ --skip x --exact"));
        assert_eq!(filters, ["pipeline/", "errors/"]);
        assert_eq!(flags, words("lit --test-threads 2 --skip x --exact"));
        assert!(selects("pipeline/", "pipeline/a.tile", false) && !selects("pipeline/", "pipeline/a.tile", true));
    }

    #[test]
    fn a_test_ignored_for_a_feature_is_reported_as_a_skip() {
        static SKIPS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
        fn record(test: &str, why: &str) {
            SKIPS.lock().unwrap().push(format!("{test}: {why}"));
        }
        let scratch = scratch("on-skip");
        let root = &scratch.0;
        let file = root.join("a.tile");
        std::fs::write(&file, "// REQUIRES: ptxas\n// RUN: false\n").unwrap();
        let outcome = run_file(&config(root).on_skip(record), &file);
        assert!(matches!(outcome, Ok(Completion::Ignored { .. })));
        assert_eq!(*SKIPS.lock().unwrap(), ["a.tile: requires ptxas"]);
    }

    #[test]
    fn trials_are_sorted_relative_paths_and_run() {
        let scratch = scratch("suite");
        let root = &scratch.0;
        for dir in ["pipeline", "layouts", "layouts/Inputs"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        let pass = "// RUN: %FileCheck %s --input-file %s\n// CHECK: RUN\n";
        std::fs::write(root.join("pipeline/b.tile"), pass).unwrap();
        std::fs::write(root.join("layouts/a.mlir"), pass).unwrap();
        std::fs::write(
            root.join("layouts/c.tile"),
            "// REQUIRES: ptxas\n// RUN: false\n",
        )
        .unwrap();
        std::fs::write(root.join("layouts/notes.txt"), "").unwrap();
        std::fs::write(root.join("layouts/Inputs/helper.tile"), "").unwrap();

        let trials = trials(config(root)).unwrap();
        let names: Vec<&str> = trials.iter().map(Trial::name).collect();
        assert_eq!(
            names,
            ["layouts/a.mlir", "layouts/c.tile", "pipeline/b.tile"]
        );

        let args = Arguments {
            test_threads: Some(1),
            quiet: true,
            ..Arguments::default()
        };
        let conclusion = libtest_mimic::run(&args, trials);
        let counts = (
            conclusion.num_passed,
            conclusion.num_failed,
            conclusion.num_ignored,
        );
        assert_eq!(counts, (2, 0, 1));
    }
}
