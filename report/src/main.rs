//! tilec-report: reads the JSON reports tilec's tools write, on the build
//! machine. `table` reads every kind `tilec_report::kinds` knows; `plot`
//! draws GEMM (`tilec-bench`) and judge (`tilec-judge/1`) reports; `compare`
//! reads two GEMM reports or two judge reports, and draws the judge
//! comparison with `-o`. `tilec-report --help` lists the kinds.
//!
//! Exit status: 0 done, 1 a report of a schema the command does not read
//! (or none), 2 a usage error or an unreadable report.

use clap::{Parser, Subcommand};
use std::process::ExitCode;
use tilec_report::chart::ratio_chart_svg;
use tilec_report::compare::format_compare;
use tilec_report::judge_chart::judge_chart_svg;
use tilec_report::kinds::judge::format_judge_compare;
use tilec_report::kinds::{known_schemas, AnyReport, LoadError};
use tilec_report::schema::{OLDER_SCHEMAS, SCHEMA};
use tilec_report::table::format_report_tables;

/// Reads tilec's JSON reports: tables, SVG charts and run-to-run comparison.
#[derive(Parser, Debug)]
#[command(
    name = "tilec-report",
    version,
    after_help = "Every command reads the file's `schema` first; `table` reads every kind listed under \
`tilec-report table --help`. Exit status: 0 done, 1 a report of a schema the command does not read (or \
none), 2 a usage error or an unreadable report."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug, PartialEq)]
enum Command {
    /// Print a report's tables (a GEMM report's results and geometric means; each other kind its own)
    #[command(after_help = kinds_help())]
    Table {
        /// The JSON report
        file: String,
    },
    /// Draw a GEMM or judge report as an SVG chart (and print its tables)
    #[command(
        after_help = "A GEMM report (tilec-bench/3, /2, /1): per shape, ours over the faster baseline with its \
p10..p90, and each shape group's geometric mean. A judge report (tilec-judge/1): per shape, the pick's ratio \
to each baseline, and each group's geometric mean."
    )]
    Plot {
        /// The JSON report
        file: String,
        /// Where the SVG goes
        #[arg(short = 'o', value_name = "SVG")]
        output: String,
    },
    /// Compare two GEMM reports, or two judge reports, per shape and per group
    #[command(
        after_help = "Two GEMM reports: per shape (M, N, K, dtype), the ratio and our TFLOP/s in A and B and \
their change, then the geometric means. Two judge reports: per shape (dtype, MxNxK) and baseline, the pick's \
ratio in A and B, then each group's geometric mean in A and B and over the shapes both measured; -o also \
draws that comparison (judge reports only)."
    )]
    Compare {
        /// The earlier report
        a: String,
        /// The later report
        b: String,
        /// Also draw the comparison of two judge reports as an SVG chart
        #[arg(short = 'o', value_name = "SVG")]
        output: Option<String>,
    },
}

/// `table --help`'s list of the kinds it reads.
fn kinds_help() -> String {
    format!("Schemas read: {}.", known_schemas().join(", "))
}

/// The schemas `plot` and `compare` read, for their error messages.
fn gemm_and_judge_schemas() -> String {
    [SCHEMA].into_iter().chain(OLDER_SCHEMAS).chain([tilec_report::kinds::judge::SCHEMA]).collect::<Vec<_>>().join(", ")
}

/// A report of a kind `command` does not read: exit 1, naming its schema.
fn not_read(path: &str, report: &AnyReport, command: &str) -> LoadError {
    let schema = report.schema();
    LoadError::UnknownSchema(format!("{path}: schema `{schema}`: {command} reads only GEMM and judge reports ({})", gemm_and_judge_schemas()))
}

fn write_svg(output: &str, svg: Result<String, String>) -> Result<(), LoadError> {
    let svg = svg.map_err(LoadError::Unreadable)?;
    std::fs::write(output, svg).map_err(|e| LoadError::Unreadable(format!("writing {output}: {e}")))
}

fn plot(input: &str, output: &str) -> Result<(), LoadError> {
    match AnyReport::load(input)? {
        AnyReport::Gemm(report) => {
            write_svg(output, ratio_chart_svg(&report))?;
            print!("{}", format_report_tables(&report.results));
        }
        AnyReport::Judge(report) => {
            write_svg(output, judge_chart_svg(&[(input, &*report)]))?;
            print!("{}", report.table());
        }
        other => return Err(not_read(input, &other, "plot")),
    }
    println!("wrote {output}");
    Ok(())
}

/// GEMM and judge reports are the kinds `plot` and `compare` read.
fn drawable(report: &AnyReport) -> bool {
    matches!(report, AnyReport::Gemm(_) | AnyReport::Judge(_))
}

fn compare(a: &str, b: &str, output: Option<&str>) -> Result<(), LoadError> {
    let (ra, rb) = (AnyReport::load(a)?, AnyReport::load(b)?);
    match (&ra, &rb) {
        (AnyReport::Gemm(ga), AnyReport::Gemm(gb)) => {
            if output.is_some() {
                return Err(LoadError::UnknownSchema(format!("{a}: compare -o draws judge reports only ({})", tilec_report::kinds::judge::SCHEMA)));
            }
            print!("{}", format_compare(ga, gb));
        }
        (AnyReport::Judge(ja), AnyReport::Judge(jb)) => {
            print!("{}", format_judge_compare(ja, jb));
            if let Some(output) = output {
                write_svg(output, judge_chart_svg(&[(a, &**ja), (b, &**jb)]))?;
                println!("wrote {output}");
            }
        }
        _ if !drawable(&ra) => return Err(not_read(a, &ra, "compare")),
        _ if !drawable(&rb) => return Err(not_read(b, &rb, "compare")),
        _ => {
            let (sa, sb) = (ra.schema(), rb.schema());
            return Err(LoadError::UnknownSchema(format!("{a}, {b}: compare reads two reports of one kind, not `{sa}` and `{sb}`")));
        }
    }
    Ok(())
}

fn run(cmd: Command) -> Result<(), LoadError> {
    match cmd {
        Command::Table { file } => print!("{}", AnyReport::load(&file)?.table()),
        Command::Plot { file, output } => plot(&file, &output)?,
        Command::Compare { a, b, output } => compare(&a, &b, output.as_deref())?,
    }
    Ok(())
}

fn main() -> ExitCode {
    // clap prints usage errors and exits 2, and --help 0.
    let cli = Cli::parse();
    match run(cli.command) {
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
    use clap::CommandFactory;

    fn parse(words: &[&str]) -> Result<Command, clap::Error> {
        Cli::try_parse_from(["tilec-report"].iter().chain(words)).map(|c| c.command)
    }

    #[test]
    fn commands_parse() {
        Cli::command().debug_assert();
        assert_eq!(parse(&["table", "r.json"]).unwrap(), Command::Table { file: "r.json".into() });
        let plot = Command::Plot { file: "r.json".into(), output: "c.svg".into() };
        assert_eq!(parse(&["plot", "r.json", "-o", "c.svg"]).unwrap(), plot);
        assert_eq!(parse(&["plot", "-o", "c.svg", "r.json"]).unwrap(), plot);
        let cmp = |output: Option<&str>| Command::Compare { a: "a.json".into(), b: "b.json".into(), output: output.map(Into::into) };
        assert_eq!(parse(&["compare", "a.json", "b.json"]).unwrap(), cmp(None));
        assert_eq!(parse(&["compare", "a.json", "b.json", "-o", "c.svg"]).unwrap(), cmp(Some("c.svg")));
        for bad in [&[][..], &["plot", "r.json"], &["compare", "a.json"], &["draw", "r.json"]] {
            let e = parse(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad:?}");
        }
        assert_eq!(parse(&["--help"]).unwrap_err().exit_code(), 0);
    }

    #[test]
    fn unreadable_reports_are_errors() {
        let e = run(Command::Table { file: "/nonexistent/r.json".into() }).unwrap_err();
        assert!(matches!(e, LoadError::Unreadable(_)), "{e:?}");
        assert!(e.message().starts_with("/nonexistent/r.json: "), "{e}");
    }

    /// A committed file under docs/benchmarks.
    fn committed(name: &str) -> String {
        format!("{}/../docs/benchmarks/{name}", env!("CARGO_MANIFEST_DIR"))
    }

    #[test]
    fn plot_and_compare_read_gemm_and_judge_reports_only() {
        let (gemm, grouped, judge) = (
            committed("2026-11-23-h100-picks.json"),
            committed("2026-11-24-h100-grouped-masked.json"),
            committed("cost-model/2026-11-29-h200-judged-model.json"),
        );
        assert_eq!(run(Command::Table { file: grouped.clone() }), Ok(()));
        // Exit 1: a grouped report given to plot or compare, a GEMM report beside a judge report.
        let e = run(Command::Compare { a: gemm.clone(), b: grouped.clone(), output: None }).unwrap_err();
        assert!(matches!(&e, LoadError::UnknownSchema(m) if m.starts_with(&grouped) && m.contains("`tilec-bench-grouped/1`: compare reads only")), "{e:?}");
        let e = run(Command::Plot { file: grouped.clone(), output: "/nonexistent/c.svg".into() }).unwrap_err();
        assert!(matches!(&e, LoadError::UnknownSchema(m) if m.contains("plot reads only")), "{e:?}");
        let e = run(Command::Compare { a: gemm.clone(), b: judge.clone(), output: None }).unwrap_err();
        assert!(matches!(&e, LoadError::UnknownSchema(m) if m.contains("not `tilec-bench/2` and `tilec-judge/1`")), "{e:?}");
        let e = run(Command::Compare { a: gemm.clone(), b: gemm, output: Some("/nonexistent/c.svg".into()) }).unwrap_err();
        assert!(matches!(&e, LoadError::UnknownSchema(m) if m.contains("compare -o draws judge reports only")), "{e:?}");
        // Exit 2: the chart cannot be written.
        let e = run(Command::Compare { a: judge.clone(), b: judge, output: Some("/nonexistent/c.svg".into()) }).unwrap_err();
        assert!(matches!(&e, LoadError::Unreadable(m) if m.starts_with("writing /nonexistent/c.svg: ")), "{e:?}");
    }
}
