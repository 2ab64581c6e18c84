//! tilec-report: reads `tilec-bench` JSON reports on the build machine.
//!
//!   tilec-report table RESULT.json               the results table and the geometric means
//!   tilec-report plot RESULT.json -o chart.svg   the ratio chart (and the tables)
//!   tilec-report compare A.json B.json           per-shape and geomean change from A to B
//!
//! `table` reads the file's `schema` first: GEMM reports (`tilec-bench/3`, `/2`,
//! `tilec-bench/1`), grouped ones (`tilec-bench-grouped/1`) and
//! tensor-parallel ones (`tilec-tp/1`); `plot` and `compare` read GEMM
//! reports only.
//!
//! Exit status: 0 done, 1 a report of a schema the command does not read
//! (or none), 2 a usage error or an unreadable report.

use std::process::ExitCode;
use tilec_report::chart::ratio_chart_svg;
use tilec_report::compare::format_compare;
use tilec_report::kinds::{AnyReport, LoadError};
use tilec_report::schema::{Report, OLDER_SCHEMAS, SCHEMA};
use tilec_report::table::{format_any_tables, format_report_tables};

const USAGE: &str = "\
usage: tilec-report table RESULT.json
       tilec-report plot RESULT.json -o CHART.svg
       tilec-report compare A.json B.json";

/// What the command line asks for.
#[derive(Debug, PartialEq)]
enum Command {
    Table(String),
    Plot { input: String, output: String },
    Compare(String, String),
    Help,
}

fn parse(args: &[String]) -> Result<Command, String> {
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    match words[..] {
        ["-h" | "--help" | "help"] => Ok(Command::Help),
        ["table", input] => Ok(Command::Table(input.into())),
        ["plot", input, "-o", output] | ["plot", "-o", output, input] => {
            Ok(Command::Plot { input: input.into(), output: output.into() })
        }
        ["compare", a, b] => Ok(Command::Compare(a.into(), b.into())),
        [] => Err("no command given".into()),
        _ => Err(format!("bad arguments `{}`", words.join(" "))),
    }
}

/// A GEMM report, for `plot` and `compare`; another kind is an unknown schema.
fn load_gemm(path: &str) -> Result<Report, LoadError> {
    match AnyReport::load(path)? {
        AnyReport::Gemm(r) => Ok(*r),
        other => {
            let reads = [SCHEMA].into_iter().chain(OLDER_SCHEMAS).collect::<Vec<_>>().join(", ");
            let schema = other.schema();
            Err(LoadError::UnknownSchema(format!("{path}: schema `{schema}`: plot and compare read only GEMM reports ({reads})")))
        }
    }
}

fn run(cmd: Command) -> Result<(), LoadError> {
    let other = LoadError::Unreadable;
    match cmd {
        Command::Help => println!("{USAGE}"),
        Command::Table(input) => print!("{}", format_any_tables(&AnyReport::load(&input)?)),
        Command::Plot { input, output } => {
            let report = load_gemm(&input)?;
            let svg = ratio_chart_svg(&report).map_err(other)?;
            std::fs::write(&output, svg).map_err(|e| other(format!("writing {output}: {e}")))?;
            print!("{}", format_report_tables(&report.results));
            println!("wrote {output}");
        }
        Command::Compare(a, b) => print!("{}", format_compare(&load_gemm(&a)?, &load_gemm(&b)?)),
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cmd = match parse(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("tilec-report: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(cmd) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tilec-report: {e}");
            ExitCode::from(match e {
                LoadError::UnknownSchema(_) => 1,
                LoadError::Unreadable(_) => 2,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn commands_parse() {
        assert_eq!(parse(&args(&["table", "r.json"])), Ok(Command::Table("r.json".into())));
        let plot = Command::Plot { input: "r.json".into(), output: "c.svg".into() };
        assert_eq!(parse(&args(&["plot", "r.json", "-o", "c.svg"])), Ok(plot));
        let plot = Command::Plot { input: "r.json".into(), output: "c.svg".into() };
        assert_eq!(parse(&args(&["plot", "-o", "c.svg", "r.json"])), Ok(plot));
        assert_eq!(parse(&args(&["compare", "a.json", "b.json"])), Ok(Command::Compare("a.json".into(), "b.json".into())));
        assert_eq!(parse(&args(&["--help"])), Ok(Command::Help));
        for bad in [&[][..], &["plot", "r.json"], &["compare", "a.json"], &["draw", "r.json"]] {
            assert!(parse(&args(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn unreadable_reports_are_errors() {
        let e = run(Command::Table("/nonexistent/r.json".into())).unwrap_err();
        assert!(matches!(e, LoadError::Unreadable(_)), "{e:?}");
        assert!(e.message().starts_with("/nonexistent/r.json: "), "{e}");
    }

    /// A committed file under docs/benchmarks.
    fn committed(name: &str) -> String {
        format!("{}/../docs/benchmarks/{name}", env!("CARGO_MANIFEST_DIR"))
    }

    #[test]
    fn table_reads_every_kind_and_plot_only_gemm() {
        let (gemm, grouped, tp) = (
            committed("2026-11-23-h100-picks.json"),
            committed("2026-11-24-h100-grouped-masked.json"),
            committed("2026-11-24-h200x2-tp/w2-fp8-rs-up.json"),
        );
        for ok in [&gemm, &grouped, &tp] {
            assert_eq!(run(Command::Table(ok.clone())), Ok(()), "{ok}");
        }
        // Exit 1: an unknown schema, and a grouped report given to compare.
        let tuning = committed("tuning/2026-11-29-h200-bf16.json");
        let e = run(Command::Table(tuning.clone())).unwrap_err();
        assert!(matches!(&e, LoadError::UnknownSchema(m) if m.starts_with(&tuning) && m.contains("`tilec-tuning/1`")), "{e:?}");
        let e = run(Command::Compare(gemm, grouped)).unwrap_err();
        assert!(matches!(&e, LoadError::UnknownSchema(m) if m.contains("`tilec-bench-grouped/1`: plot and compare")), "{e:?}");
    }
}
