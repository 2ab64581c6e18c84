#![warn(missing_docs)]
//! The command-line conventions every tilec tool shares (`tile-opt`, `tilec`,
//! `tilec-bench`, `tilec-gpu-test`), defined once with clap:
//!
//! - exit status 0 on success, 1 when the input is rejected (a compile error,
//!   a failed check), 2 on a usage error (clap's own status for a bad flag);
//! - `--version` and `--help` from clap;
//! - `--completions SHELL` prints a completion script for bash, zsh, fish,
//!   elvish or PowerShell;
//! - an input file of `-`, or none, is read from stdin;
//! - the flags that mirror `mlir-opt` ([`PassFlags`]), spelled as mlir-opt
//!   spells them;
//! - a tool or test that cannot run here says so and is counted
//!   ([`report_skip`]).
//!
//! This crate depends on clap only: the runtime's tools use it and must not
//! link MLIR or LLVM.

use clap::{Args, Command, CommandFactory};
use std::io::Read;
use std::process::ExitCode;

pub use clap_complete::Shell;

mod skip;
pub use skip::{report_skip, SKIP_LOG_ENV};

/// Exit status of a successful run.
pub const EXIT_SUCCESS: u8 = 0;
/// Exit status when the input is rejected: a located compile error, a failed check.
pub const EXIT_ERROR: u8 = 1;
/// Exit status of a usage error: an unknown flag, a bad value, a missing argument.
pub const EXIT_USAGE: u8 = 2;

/// What a tool's `run` returns: success, or why it failed.
#[derive(Debug)]
pub enum Failure {
    /// The input was rejected (exit 1). A message that is not a located
    /// `file:line:col: error:` diagnostic is printed as `TOOL: error: ...`,
    /// so that every rejection reads as an `error:` line, as in mlir-opt.
    Error(String),
    /// The input was rejected and the tool has printed why (exit 1).
    Reported,
    /// The command line was wrong; the message is printed with a hint to `--help` (exit 2).
    Usage(String),
}

impl Failure {
    /// Prints the message to stderr and returns the exit status.
    pub fn report(self, tool: &str) -> ExitCode {
        match self {
            Failure::Error(message) => {
                if message.lines().next().is_some_and(|first| first.contains("error:")) {
                    eprintln!("{message}");
                } else {
                    eprintln!("{tool}: error: {message}");
                }
                ExitCode::from(EXIT_ERROR)
            }
            Failure::Reported => ExitCode::from(EXIT_ERROR),
            Failure::Usage(message) => {
                eprintln!("{tool}: error: {message}\n\nFor more information, try '--help'.");
                ExitCode::from(EXIT_USAGE)
            }
        }
    }
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure::Error(message)
    }
}

/// Turns a tool's result into its exit status.
///
/// ```
/// use std::process::ExitCode;
/// use tilec_cli::{exit_code, Failure, EXIT_ERROR};
/// assert_eq!(exit_code("tool", Ok(())), ExitCode::SUCCESS);
/// assert_eq!(exit_code("tool", Err(Failure::Reported)), ExitCode::from(EXIT_ERROR));
/// ```
pub fn exit_code(tool: &str, result: Result<(), Failure>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::from(EXIT_SUCCESS),
        Err(failure) => failure.report(tool),
    }
}

/// `--completions SHELL`, flattened into every tool's arguments.
#[derive(Args, Debug, Clone, Default)]
pub struct CompletionArgs {
    /// Print a shell completion script for SHELL to stdout and exit
    #[arg(long, value_name = "SHELL")]
    pub completions: Option<Shell>,
}

impl CompletionArgs {
    /// Prints the completion script of `C` if one was asked for; returns
    /// whether it did, so the tool stops there.
    pub fn print_if_asked<C: CommandFactory>(&self) -> bool {
        self.print_for(C::command())
    }

    /// As [`print_if_asked`](Self::print_if_asked), for a command built at
    /// run time (a tool whose flags come from a registry).
    pub fn print_for(&self, mut command: Command) -> bool {
        let Some(shell) = self.completions else { return false };
        let name = command.get_name().to_string();
        clap_complete::generate(shell, &mut command, name, &mut std::io::stdout());
        true
    }
}

/// Reads the input named on the command line: a file, or stdin for `-` or
/// no name. Returns the bytes (the caller decodes them, so that a byte that
/// is not UTF-8 gets a location) and the name diagnostics use (`<stdin>`).
pub fn read_input(path: Option<&str>) -> Result<(Vec<u8>, String), Failure> {
    match path {
        None | Some("-") => {
            let mut bytes = Vec::new();
            std::io::stdin()
                .read_to_end(&mut bytes)
                .map_err(|e| Failure::Error(format!("cannot read stdin: {e}")))?;
            Ok((bytes, "<stdin>".to_string()))
        }
        Some(path) => {
            let bytes = std::fs::read(path).map_err(|e| Failure::Error(format!("cannot read '{path}': {e}")))?;
            Ok((bytes, path.to_string()))
        }
    }
}

/// The flags of a tool that runs a pass pipeline, with mlir-opt's spellings.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct PassFlags {
    /// The passes to run, e.g. 'tile-canonicalize,tile-pipeline{stages=3}'
    #[arg(long = "pass-pipeline", value_name = "PIPELINE")]
    pub pass_pipeline: Option<String>,
    /// Print the pipeline that will run, every option spelled out, to stderr
    #[arg(long = "dump-pass-pipeline")]
    pub dump_pass_pipeline: bool,
    /// Print the IR to stderr after every pass
    #[arg(long = "mlir-print-ir-after-all")]
    pub print_ir_after_all: bool,
    /// Print the IR to stderr after the named pass (repeatable)
    #[arg(long = "mlir-print-ir-after", value_name = "PASS", require_equals = true)]
    pub print_ir_after: Vec<String>,
    /// Print the IR to stderr before every pass
    #[arg(long = "mlir-print-ir-before-all", conflicts_with = "timing")]
    pub print_ir_before_all: bool,
    /// Print the IR to stderr before the named pass (repeatable)
    #[arg(long = "mlir-print-ir-before", value_name = "PASS", require_equals = true, conflicts_with = "timing")]
    pub print_ir_before: Vec<String>,
    /// Print the IR after a pass only when the pass changed it
    #[arg(long = "mlir-print-ir-after-change", conflicts_with = "timing")]
    pub print_ir_after_change: bool,
    /// Print the IR to stderr after a pass that fails (off unless asked, as in mlir-opt)
    #[arg(long = "mlir-print-ir-after-failure", value_name = "BOOL", require_equals = true, num_args = 0..=1, default_value_t = false,
          default_missing_value = "true", action = clap::ArgAction::Set)]
    pub print_ir_after_failure: bool,
    /// Print each pass's wall time to stderr
    #[arg(long = "mlir-timing")]
    pub timing: bool,
    /// Print each pass's statistics (ops hoisted, erased, ...) to stderr after the pipeline
    #[arg(long = "mlir-pass-statistics")]
    pub statistics: bool,
    /// Verify the IR after every pass
    #[arg(long = "verify-each", value_name = "BOOL", require_equals = true, default_value_t = true,
          action = clap::ArgAction::Set)]
    pub verify_each: bool,
    /// Print the passes' remarks (what config selection chose, and why) to stderr; with
    /// --verify-diagnostics, check them as expected-remark
    #[arg(long = "remarks")]
    pub remarks: bool,
}

/// What a command line without any of the flags gives.
impl Default for PassFlags {
    fn default() -> Self {
        PassFlags {
            pass_pipeline: None,
            dump_pass_pipeline: false,
            print_ir_after_all: false,
            print_ir_after: Vec::new(),
            print_ir_before_all: false,
            print_ir_before: Vec::new(),
            print_ir_after_change: false,
            print_ir_after_failure: false,
            timing: false,
            statistics: false,
            verify_each: true,
            remarks: false,
        }
    }
}

impl PassFlags {
    /// Whether the flags need the pipeline run one pass at a time: printing
    /// before a pass, or only after a change.
    pub fn steps_passes(&self) -> bool {
        self.print_ir_before_all || !self.print_ir_before.is_empty() || self.print_ir_after_change
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    #[command(name = "t", version)]
    struct Tool {
        input: Option<String>,
        #[command(flatten)]
        passes: PassFlags,
        #[command(flatten)]
        completions: CompletionArgs,
    }

    #[test]
    fn pass_flags_use_mlir_opt_spellings() {
        let t = Tool::try_parse_from(["t", "--pass-pipeline=a,b{x=1}", "--mlir-print-ir-after=a", "--mlir-timing", "f"]).unwrap();
        assert_eq!(t.passes.pass_pipeline.as_deref(), Some("a,b{x=1}"));
        assert_eq!(t.passes.print_ir_after, ["a"]);
        assert!(t.passes.timing && t.passes.verify_each && !t.passes.print_ir_after_failure, "no IR dump on failure unless asked");
        assert!(Tool::try_parse_from(["t", "--mlir-print-ir-after-failure"]).unwrap().passes.print_ir_after_failure);
        assert!(!Tool::try_parse_from(["t", "--mlir-print-ir-after-failure=false"]).unwrap().passes.print_ir_after_failure);
        assert_eq!(t.input.as_deref(), Some("f"));
        let t = Tool::try_parse_from(["t", "--verify-each=false"]).unwrap();
        assert!(!t.passes.verify_each);
        let t = Tool::try_parse_from(["t", "--mlir-print-ir-before=a", "--mlir-print-ir-after-change"]).unwrap();
        assert_eq!(t.passes.print_ir_before, ["a"]);
        assert!(t.passes.print_ir_after_change && t.passes.steps_passes());
        // Stepping pass by pass runs one pass manager per pass, each with its own timing.
        assert!(Tool::try_parse_from(["t", "--mlir-print-ir-before-all", "--mlir-timing"]).is_err());
    }

    #[test]
    fn default_is_the_empty_command_line() {
        assert_eq!(Tool::try_parse_from(["t"]).unwrap().passes, PassFlags::default());
    }

    #[test]
    fn usage_errors_exit_2_and_version_exits_0() {
        let err = Tool::try_parse_from(["t", "--bogus"]).unwrap_err();
        assert_eq!(err.exit_code(), EXIT_USAGE as i32);
        let err = Tool::try_parse_from(["t", "--verify-each=maybe"]).unwrap_err();
        assert_eq!(err.exit_code(), EXIT_USAGE as i32);
        let version = Tool::try_parse_from(["t", "--version"]).unwrap_err();
        assert_eq!(version.exit_code(), EXIT_SUCCESS as i32);
    }

    #[test]
    fn completions_parse_a_shell() {
        let t = Tool::try_parse_from(["t", "--completions", "bash"]).unwrap();
        assert_eq!(t.completions.completions, Some(Shell::Bash));
        assert!(Tool::try_parse_from(["t", "--completions", "tcsh"]).is_err());
    }
}
