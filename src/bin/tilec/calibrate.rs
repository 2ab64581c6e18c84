//! `tilec calibrate MEASUREMENTS.json... [--fit] [--write FILE] [--report OUT.json]`:
//! the cost model against measured kernels. Each measurements file
//! (schema tilec-measurements/1, `scripts/collect-measurements.py`) holds
//! kernels timed on the GPU with their shape, dtype and config. Without
//! `--fit` the model's current constants are judged on them; with it, the
//! constants are fitted to them first, from the prior
//! ([`Calibration::PRIOR`], so that the same measurements always give the
//! same constants), or, with `--free NAMES`, only the constants named,
//! the others held at the target's current values, and `--write` puts the fitted ones
//! into the calibration source the model reads
//! (`passes/src/cost_model/calibration/NAME.rs`). `--set NAME=VALUE` sets a
//! constant the fit does not decide (measured by a profiler, or chosen by the
//! picks it moves on the GPU) and, with `--write`, records it and the files
//! that judged it beside the fitted ones. Either way the error, overall
//! and per kernel, is printed and written to `--report`.
//!
//! The problem each kernel solved comes from the example program of its
//! dtype (`--bf16-program`, `--fp8-program`), as config selection derives
//! it, so that the figures (stages, shared memory, waves) match those the
//! kernel was chosen with.

use tilec::api::parse_and_verify;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use tilec_cli::Failure;
use tilec_passes::selection::{figures, Config};
use tilec_passes::cost_model::fit::{self, Sample};
use tilec_passes::cost_model::{self, predict, Calibration};
use tilec_passes::transforms::select_config::SelectConfig;
use tilec_target::Target;

/// Schema name of a measurements file.
pub const MEASUREMENTS_SCHEMA: &str = "tilec-measurements/1";
/// Schema name of the `--report` file.
pub const REPORT_SCHEMA: &str = "tilec-calibration/1";

/// The margin within which a pick counts as the fastest measured.
const PICK_MARGIN: f64 = 0.05;

/// `tilec calibrate`'s arguments.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Measurements files (schema tilec-measurements/1)
    #[arg(required = true, value_name = "MEASUREMENTS")]
    inputs: Vec<String>,
    /// Fit the constants to the measurements (else judge the current ones)
    #[arg(long)]
    fit: bool,
    /// With --fit or --set: write the constants as the calibration source for the target
    #[arg(long, value_name = "FILE")]
    write: Option<String>,
    /// Write every kernel's prediction and error as JSON (schema tilec-calibration/1)
    #[arg(long, value_name = "OUT")]
    report: Option<String>,
    /// The BF16 program the BF16 kernels were compiled from
    #[arg(long, value_name = "FILE", default_value = "examples/gemm_bf16.tile")]
    bf16_program: String,
    /// The block-scaled FP8 program the FP8 kernels were compiled from
    #[arg(long, value_name = "FILE", default_value = "examples/gemm_fp8_blockscaled.tile")]
    fp8_program: String,
    /// Keep only the kernels of the shapes this file lists (MxNxK a line), e.g. the validation set
    #[arg(long, value_name = "FILE")]
    only: Option<String>,
    /// The GPU the kernels ran on
    #[arg(long, value_name = "GPU", default_value = Target::DEFAULT.name, value_parser = crate::driver::target_parser())]
    target: &'static Target,
    /// With --fit: fit only these constants (comma-separated names, as the
    /// calibration file spells them), holding the others at the target's
    /// current values, e.g. a term just added to the model
    #[arg(long, value_name = "NAMES", value_delimiter = ',', requires = "fit")]
    free: Vec<String>,
    /// Evaluations of the fit's objective
    #[arg(long, default_value_t = 40_000)]
    evaluations: usize,
    /// Judge the constants of this calibration report (a --report of an
    /// earlier run, schema tilec-calibration/1) instead of the compiled
    /// ones: a fit judged on kernels it was not fitted on, without a rebuild
    #[arg(long, value_name = "REPORT", conflicts_with = "fit")]
    constants: Option<String>,
    /// Set these constants (comma-separated NAME=VALUE, as the calibration
    /// file spells them), holding the others at the target's current
    /// values, instead of fitting: a constant measured outside the fit or
    /// chosen by the picks it moves; with --write the listing records it and
    /// the measurements files it was judged on
    #[arg(long, value_name = "NAME=VALUE", value_delimiter = ',', conflicts_with_all = ["fit", "constants"])]
    set: Vec<String>,
}

/// One measured kernel, as the measurements file holds it.
#[derive(Clone, Debug, Deserialize, Serialize)]
struct Record {
    dtype: String,
    m: i64,
    n: i64,
    k: i64,
    artifact: String,
    config: String,
    median_ms: f64,
    vendor_ms: Option<f64>,
}

#[derive(Deserialize)]
struct Measurements {
    schema: String,
    records: Vec<Record>,
}

#[derive(Serialize)]
struct Row<'a> {
    #[serde(flatten)]
    record: &'a Record,
    predicted_ms: f64,
    bound: &'static str,
    relative_error: f64,
}

#[derive(Serialize)]
struct Report<'a> {
    schema: &'static str,
    inputs: &'a [String],
    fitted: bool,
    constants: Vec<(&'static str, f64)>,
    kernels: usize,
    median_relative_error: f64,
    p90_relative_error: f64,
    problems: usize,
    picks_within_5_percent: usize,
    pick_over_fastest_geomean: f64,
    rows: Vec<Row<'a>>,
}

/// The constants a calibration report holds, every one of
/// [`Calibration::NAMES`] and no other.
fn constants_of(path: &str) -> Result<Calibration, Failure> {
    #[derive(Deserialize)]
    struct Fitted {
        schema: String,
        constants: Vec<(String, f64)>,
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("tilec calibrate: cannot read '{path}': {e}"))?;
    let report: Fitted = serde_json::from_str(&text).map_err(|e| format!("{path}: not a calibration report: {e}"))?;
    if report.schema != REPORT_SCHEMA {
        return Err(format!("{path}: schema '{}' is not {REPORT_SCHEMA}", report.schema).into());
    }
    if let Some((name, _)) = report.constants.iter().find(|(name, _)| !Calibration::NAMES.contains(&name.as_str())) {
        return Err(format!("{path}: '{name}' is not a constant of this cost model").into());
    }
    let values = Calibration::NAMES
        .iter()
        .map(|name| match report.constants.iter().find(|(n, _)| n == name) {
            Some(&(_, v)) if v.is_finite() && v > 0.0 => Ok(v),
            Some(&(_, v)) => Err(format!("{path}: constant '{name}' is {v}, not a positive number")),
            None => Err(format!("{path}: constant '{name}' is missing (a report of an older cost model?)")),
        })
        .collect::<Result<Vec<f64>, String>>()?;
    Ok(Calibration::from_slice(&values))
}

/// The constants `settings` (`NAME=VALUE` each) give, the others `current`'s;
/// an error names a setting that is no constant or no positive number.
fn set_constants(current: &Calibration, settings: &[String]) -> Result<Calibration, Failure> {
    let mut values = current.to_vec();
    for setting in settings {
        let (name, value) = setting.split_once('=').ok_or_else(|| format!("tilec calibrate: --set: '{setting}' is not NAME=VALUE"))?;
        let slot = constant_slot("--set", name)?;
        match value.parse::<f64>() {
            Ok(v) if v.is_finite() && v > 0.0 => values[slot] = v,
            _ => return Err(format!("tilec calibrate: --set: {name}'s value '{value}' is not a positive number").into()),
        }
    }
    Ok(Calibration::from_slice(&values))
}

/// Runs `tilec calibrate`.
pub fn run(args: &Args) -> Result<(), Failure> {
    if args.write.is_some() && !args.fit && args.set.is_empty() {
        return Err("tilec calibrate: --write writes fitted or set constants: give --fit or --set".to_string().into());
    }
    let free = if args.free.is_empty() { vec![true; Calibration::NAMES.len()] } else { free_constants(&args.free)? };
    let mut records = Vec::new();
    for path in &args.inputs {
        let text = std::fs::read_to_string(path).map_err(|e| format!("tilec calibrate: cannot read '{path}': {e}"))?;
        let file: Measurements = serde_json::from_str(&text).map_err(|e| format!("{path}: not a measurements file: {e}"))?;
        if file.schema != MEASUREMENTS_SCHEMA {
            return Err(format!("{path}: schema '{}' is not {MEASUREMENTS_SCHEMA}", file.schema).into());
        }
        records.extend(file.records);
    }
    if let Some(path) = &args.only {
        let text = std::fs::read_to_string(path).map_err(|e| format!("tilec calibrate: cannot read '{path}': {e}"))?;
        let shapes: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect();
        records.retain(|r| shapes.contains(&format!("{}x{}x{}", r.m, r.n, r.k).as_str()));
    }
    let (throughput, current) = cost_model::for_target(args.target);
    let mut samples = Vec::with_capacity(records.len());
    let read = |program: &str| -> Result<tilec_dialects::Module, Failure> {
        let text = std::fs::read_to_string(program).map_err(|e| format!("tilec calibrate: cannot read '{program}': {e}"))?;
        Ok(parse_and_verify(&text, program)?)
    };
    // Each program read once, and only for a dtype the measurements hold.
    let mut programs: Vec<(&str, &String, tilec_dialects::Module)> = Vec::new();
    for dtype in ["bf16", "fp8"] {
        let program = if dtype == "bf16" { &args.bf16_program } else { &args.fp8_program };
        if records.iter().any(|r| r.dtype == dtype) {
            programs.push((dtype, program, read(program)?));
        }
    }
    let base = SelectConfig { target: args.target, ..SelectConfig::default() };
    for r in &records {
        let Some((_, program, module)) = programs.iter().find(|(dtype, _, _)| *dtype == r.dtype) else {
            return Err(format!("kernel '{}': unknown dtype '{}' (bf16 or fp8)", r.artifact, r.dtype).into());
        };
        let func = module.functions.first().ok_or_else(|| format!("{program}: no function"))?;
        let select = SelectConfig { shape: Some((r.m, r.n, r.k)), ..base };
        let (problem, _, machine) = select.problem(func).map_err(|d| d.to_string())?.ok_or_else(|| format!("{program}: no dot to configure"))?;
        let config: Config = r.config.parse().map_err(|e| format!("kernel '{}': {e}", r.artifact))?;
        let problem = config.problem_for(&problem);
        samples.push(Sample { problem, candidate: figures(&problem, &machine, config), seconds: r.median_ms * 1e-3 });
    }
    let machine = base.machine();
    // The listing of the fit a `--free` refit or a `--set` refines, read
    // before the fit.
    let earlier = match &args.write {
        Some(path) if !args.free.is_empty() || !args.set.is_empty() => earlier_fit(&inputs_path(path))?,
        _ => String::new(),
    };
    let calibration = match &args.constants {
        Some(path) => constants_of(path)?,
        None if !args.set.is_empty() => set_constants(&current, &args.set)?,
        // A whole fit starts from the prior, a `--free` one from the constants it refines.
        None if args.fit => fit::fit(&samples, &machine, &throughput, if args.free.is_empty() { &Calibration::PRIOR } else { &current }, &free, args.evaluations),
        None => current,
    };
    let error = fit::error(&samples, &machine, &throughput, &calibration);
    let mut out = String::new();
    let (within, problems, regret) = fit::pick_quality(&samples, &machine, &throughput, &calibration, PICK_MARGIN);
    writeln!(out, "{} kernels; median |predicted/measured - 1| {:.3}, 90th percentile {:.3}", samples.len(), error.median, error.p90).expect("String");
    writeln!(
        out,
        "{problems} problems: the candidate predicted fastest is within {:.0}% of the fastest measured on {within}; its time over the fastest's, geometric mean {regret:.3}",
        100.0 * PICK_MARGIN
    )
    .expect("String");
    for (name, value) in Calibration::NAMES.iter().zip(calibration.to_vec()) {
        writeln!(out, "  {name:<30} {value:.4e}").expect("String");
    }
    print!("{out}");
    if let Some(path) = &args.write {
        let inputs = inputs_path(path);
        std::fs::write(path, calibration_source(args.target, &calibration, &inputs)).map_err(|e| format!("tilec calibrate: cannot write '{path}': {e}"))?;
        std::fs::write(&inputs, inputs_listing(&args.inputs, &args.free, &args.set, &earlier)).map_err(|e| format!("tilec calibrate: cannot write '{inputs}': {e}"))?;
    }
    if let Some(path) = &args.report {
        let relative = fit::relative_errors(&samples, &machine, &throughput, &calibration);
        let rows = records
            .iter()
            .zip(&samples)
            .zip(relative)
            .map(|((record, s), relative_error)| {
                let p = predict(&s.problem, &machine, &throughput, &calibration, &s.candidate);
                Row { record, predicted_ms: p.seconds * 1e3, bound: p.bound.word(), relative_error }
            })
            .collect();
        let report = Report {
            schema: REPORT_SCHEMA,
            inputs: &args.inputs,
            fitted: args.fit,
            constants: Calibration::NAMES.iter().copied().zip(calibration.to_vec()).collect(),
            kernels: samples.len(),
            median_relative_error: error.median,
            p90_relative_error: error.p90,
            problems,
            picks_within_5_percent: within,
            pick_over_fastest_geomean: regret,
            rows,
        };
        let json = serde_json::to_string_pretty(&report).expect("serialisable");
        std::fs::write(path, json).map_err(|e| format!("tilec calibrate: cannot write '{path}': {e}"))?;
    }
    Ok(())
}

/// The mask of the constants `names` gives, in [`Calibration::NAMES`]'
/// order; an error names one that is not a constant of the model.
fn free_constants(names: &[String]) -> Result<Vec<bool>, Failure> {
    let mut free = vec![false; Calibration::NAMES.len()];
    for name in names {
        free[constant_slot("--free", name)?] = true;
    }
    Ok(free)
}

/// The place of the constant `name` in [`Calibration::NAMES`]; an error,
/// naming `option`, where it is no constant of the model.
fn constant_slot(option: &str, name: &str) -> Result<usize, Failure> {
    Calibration::NAMES
        .iter()
        .position(|n| *n == name)
        .ok_or_else(|| format!("tilec calibrate: {option}: '{name}' is not a constant of this cost model (one of {})", Calibration::NAMES.join(", ")).into())
}

/// The listing of the measurements files a calibration source was fitted
/// from, beside it: `h200.rs` lists them in `h200.inputs.txt`, so that the
/// source holds the constants alone and the record names stay data.
fn inputs_path(source: &str) -> String {
    std::path::Path::new(source).with_extension("inputs.txt").to_string_lossy().into_owned()
}

/// The listing of the fit a `--free` refit or a `--set` refines, as
/// written: the constants it holds came from the files and stages that
/// listing names.
fn earlier_fit(path: &str) -> Result<String, Failure> {
    std::fs::read_to_string(path).map_err(|e| format!("tilec calibrate: --free or --set with --write needs the listing of the fit it refines in '{path}': {e}").into())
}

/// The listing of the files a fit came from: all of them, or, where `free`
/// names constants refitted or `set` constants set, the earlier fit's
/// listing (`earlier`, its stages kept as they were) and then a stage of the
/// files those constants were refitted or judged on.
fn inputs_listing(inputs: &[String], free: &[String], set: &[String], earlier: &str) -> String {
    let mut s = String::new();
    if free.is_empty() && set.is_empty() {
        s.push_str("Measurements files the constants were fitted on (tilec calibrate --fit --write):\n");
        for input in inputs {
            writeln!(s, "- {input}").expect("String");
        }
        return s;
    }
    writeln!(s, "{}", earlier.trim_end()).expect("String");
    if set.is_empty() {
        writeln!(s, "then {} refitted (--free), the others held, on:", free.join(", ")).expect("String");
    } else {
        writeln!(s, "then {} set (--set, not fitted), the others held, judged on:", set.join(", ")).expect("String");
    }
    for input in inputs {
        writeln!(s, "+ {input}").expect("String");
    }
    s
}

/// The calibration source file for `target` with `cal` as its constants;
/// the files they were fitted on are listed in `inputs`.
fn calibration_source(target: &Target, cal: &Calibration, inputs: &str) -> String {
    let listing = std::path::Path::new(inputs).file_name().map_or_else(|| inputs.to_string(), |f| f.to_string_lossy().into_owned());
    let mut s = format!("//! The cost model's constants fitted on the {}. Generated by\n//! `tilec calibrate --write` (docs/cost-model.md); the measurements\n//! files they were fitted (or set) on are listed in `{listing}` beside it.\n", target.part);
    writeln!(s, "\nuse crate::cost_model::Calibration;\n\n/// Fitted on the {}.\npub const {}: Calibration = Calibration {{", target.part, target.name.to_ascii_uppercase()).expect("String");
    for (name, value) in Calibration::NAMES.iter().zip(cal.to_vec()) {
        writeln!(s, "    {name}: {value:e},").expect("String");
    }
    s.push_str("};\n");
    s
}
