//! Fitting the cost model's constants to measured times: a Nelder-Mead
//! search over the constants' logarithms (each stays positive) that
//! minimises the mean squared log error of the predictions, so that a
//! 2 us kernel and a 2 ms one weigh alike, plus a weak pull towards the
//! starting values, so that a constant the samples do not constrain (FP8's
//! promotion in a BF16-only set) keeps its prior instead of drifting.

use super::{predict, Calibration, Throughput};
use crate::selection::{Candidate, Machine, Problem};

/// One measured kernel: the problem, the candidate it ran, its median time.
#[derive(Clone, Debug)]
pub struct Sample {
    /// The GEMM's shape and precision.
    pub problem: Problem,
    /// The configuration with its figures for the problem.
    pub candidate: Candidate,
    /// The measured median, in seconds.
    pub seconds: f64,
}

/// How well a calibration predicts a set of samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Error {
    /// The median of |predicted / measured - 1|.
    pub median: f64,
    /// The 90th percentile of the same.
    pub p90: f64,
    /// The mean squared log error the fit minimises.
    pub mean_squared_log: f64,
}

/// |predicted / measured - 1| for each sample, in order.
pub fn relative_errors(samples: &[Sample], machine: &Machine, throughput: &Throughput, cal: &Calibration) -> Vec<f64> {
    samples.iter().map(|s| predict(&s.problem, machine, throughput, cal, &s.candidate).seconds / s.seconds - 1.0).map(f64::abs).collect()
}

/// The error of `cal` over `samples`.
pub fn error(samples: &[Sample], machine: &Machine, throughput: &Throughput, cal: &Calibration) -> Error {
    let mut relative = relative_errors(samples, machine, throughput, cal);
    relative.sort_by(f64::total_cmp);
    let at = |q: f64| relative.get(((relative.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or(f64::NAN);
    Error { median: at(0.5), p90: at(0.9), mean_squared_log: objective(samples, machine, throughput, cal) }
}

fn objective(samples: &[Sample], machine: &Machine, throughput: &Throughput, cal: &Calibration) -> f64 {
    let predicted: Vec<f64> = samples.iter().map(|s| predict(&s.problem, machine, throughput, cal, &s.candidate).seconds).collect();
    let squared_log: f64 = samples.iter().zip(&predicted).map(|(s, p)| (p / s.seconds).ln().powi(2)).sum::<f64>() / samples.len().max(1) as f64;
    squared_log + RANKING_WEIGHT * soft_regret(samples, &predicted)
}

/// The weight of the ranking term against the squared log error.
const RANKING_WEIGHT: f64 = 1.0;

/// The width, in natural-log units of predicted time, over which the soft
/// pick spreads between candidates predicted nearly alike.
const PICK_TEMPERATURE: f64 = 0.03;

/// Config selection's loss, smoothed: for each problem, the measured
/// log-time over the fastest measured candidate's, averaged with weights
/// that favour the candidates predicted fastest (a softmin), then averaged
/// over problems. A model can predict times well and still pick badly; this
/// term fits the order.
fn soft_regret(samples: &[Sample], predicted: &[f64]) -> f64 {
    let mut groups: Vec<(&Problem, Vec<usize>)> = Vec::new();
    for (i, s) in samples.iter().enumerate() {
        match groups.iter_mut().find(|(p, _)| **p == s.problem) {
            Some((_, members)) => members.push(i),
            None => groups.push((&s.problem, vec![i])),
        }
    }
    let total: f64 = groups
        .iter()
        .map(|(_, members)| {
            let fastest = members.iter().map(|&i| samples[i].seconds).fold(f64::INFINITY, f64::min);
            let best_predicted = members.iter().map(|&i| predicted[i].ln()).fold(f64::INFINITY, f64::min);
            let weights: Vec<f64> = members.iter().map(|&i| (-(predicted[i].ln() - best_predicted) / PICK_TEMPERATURE).exp()).collect();
            let sum: f64 = weights.iter().sum();
            members.iter().zip(&weights).map(|(&i, w)| w / sum * (samples[i].seconds / fastest).ln()).sum::<f64>()
        })
        .sum();
    total / groups.len().max(1) as f64
}

/// How often the candidate predicted fastest of each problem is within
/// `margin` of the fastest measured one, and the geometric mean of the
/// measured time of the one predicted fastest over the fastest.
pub fn pick_quality(samples: &[Sample], machine: &Machine, throughput: &Throughput, cal: &Calibration, margin: f64) -> (usize, usize, f64) {
    let predicted: Vec<f64> = samples.iter().map(|s| predict(&s.problem, machine, throughput, cal, &s.candidate).seconds).collect();
    let mut problems: Vec<&Problem> = Vec::new();
    for s in samples {
        if !problems.contains(&&s.problem) {
            problems.push(&s.problem);
        }
    }
    let mut within = 0;
    let mut log_regret = 0.0;
    for p in &problems {
        let members: Vec<usize> = (0..samples.len()).filter(|&i| samples[i].problem == **p).collect();
        let fastest = members.iter().map(|&i| samples[i].seconds).fold(f64::INFINITY, f64::min);
        let pick = *members.iter().min_by(|&&a, &&b| predicted[a].total_cmp(&predicted[b])).expect("a member");
        let regret = samples[pick].seconds / fastest;
        within += usize::from(regret <= 1.0 + margin);
        log_regret += regret.ln();
    }
    (within, problems.len(), (log_regret / problems.len().max(1) as f64).exp())
}

/// The calibration that best predicts `samples`, searched from `start`
/// for at most `evaluations` evaluations of the objective, over the
/// constants `free` marks (in [`Calibration::NAMES`]' order); the others
/// keep `start`'s values, so that a term added to the model is fitted
/// without moving what the picks were judged with.
pub fn fit(samples: &[Sample], machine: &Machine, throughput: &Throughput, start: &Calibration, free: &[bool], evaluations: usize) -> Calibration {
    let values = start.to_vec();
    let slots: Vec<usize> = (0..values.len()).filter(|&i| free.get(i).copied().unwrap_or(false)).collect();
    if slots.is_empty() {
        return *start;
    }
    let x0: Vec<f64> = slots.iter().map(|&i| values[i].ln()).collect();
    let constants = |x: &[f64]| {
        let mut v = values.clone();
        slots.iter().zip(x).for_each(|(&i, &l)| v[i] = l.exp());
        Calibration::from_slice(&v)
    };
    let f = |x: &[f64]| {
        let pull: f64 = x.iter().zip(&x0).map(|(a, b)| (a - b).powi(2)).sum();
        objective(samples, machine, throughput, &constants(x)) + PRIOR_WEIGHT * pull
    };
    constants(&nelder_mead(f, &x0, evaluations))
}

/// The weight of the pull towards the starting values, per squared
/// natural-log unit: a constant moved e-fold costs what a 3% error on
/// every sample does.
const PRIOR_WEIGHT: f64 = 1e-3;

/// Nelder-Mead with the standard coefficients, restarted from its best
/// point until the evaluations run out (a restart escapes a collapsed
/// simplex).
fn nelder_mead(f: impl Fn(&[f64]) -> f64, x0: &[f64], evaluations: usize) -> Vec<f64> {
    let n = x0.len();
    let mut best = x0.to_vec();
    let mut spent = 0;
    while spent < evaluations {
        let mut simplex: Vec<(Vec<f64>, f64)> = (0..=n)
            .map(|i| {
                let mut x = best.clone();
                if i > 0 {
                    x[i - 1] += 0.5;
                }
                let y = f(&x);
                (x, y)
            })
            .collect();
        spent += n + 1;
        let mut steps = 0;
        while spent < evaluations && steps < 400 * n {
            steps += 1;
            simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
            let worst = simplex[n].clone();
            let centroid: Vec<f64> = (0..n).map(|j| simplex[..n].iter().map(|(x, _)| x[j]).sum::<f64>() / n as f64).collect();
            let toward = |t: f64| -> Vec<f64> { (0..n).map(|j| centroid[j] + t * (worst.0[j] - centroid[j])).collect() };
            let reflected = toward(-1.0);
            let yr = f(&reflected);
            spent += 1;
            if yr < simplex[0].1 {
                let expanded = toward(-2.0);
                let ye = f(&expanded);
                spent += 1;
                simplex[n] = if ye < yr { (expanded, ye) } else { (reflected, yr) };
            } else if yr < simplex[n - 1].1 {
                simplex[n] = (reflected, yr);
            } else {
                let contracted = toward(0.5);
                let yc = f(&contracted);
                spent += 1;
                if yc < worst.1 {
                    simplex[n] = (contracted, yc);
                } else {
                    let lowest = simplex[0].0.clone();
                    for point in simplex.iter_mut().skip(1) {
                        let x: Vec<f64> = (0..n).map(|j| lowest[j] + 0.5 * (point.0[j] - lowest[j])).collect();
                        *point = (x.clone(), f(&x));
                    }
                    spent += n;
                }
            }
        }
        simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
        if simplex[0].0 == best {
            break;
        }
        best = simplex[0].0.clone();
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selection::{rank, Pins, Precision};

    #[test]
    fn nelder_mead_finds_a_quadratic_minimum() {
        let at = nelder_mead(|x| (x[0] - 1.0).powi(2) + 3.0 * (x[1] + 2.0).powi(2) + (x[2] - 0.5).powi(2), &[0.0, 0.0, 0.0], 5000);
        for (got, want) in at.iter().zip([1.0, -2.0, 0.5]) {
            assert!((got - want).abs() < 1e-3, "{at:?}");
        }
    }

    /// Times predicted with known constants, for the fits below.
    fn generated(truth: &Calibration) -> Vec<Sample> {
        let machine = Machine::H100;
        [(4096, 4096, 4096), (64, 2112, 7168), (512, 512, 65536), (1, 4096, 4096), (8192, 8192, 8192), (3000, 5000, 2000)]
            .into_iter()
            .flat_map(|(m, n, k)| {
                let problem = Problem { m, n, k, precision: Precision::Bf16, any_n: false, clusterable: true, routed_rows: false, varying_k: false, b_scale_rows: None, a_in_registers: false, transpose_b: true, a_scales_by_run: false, column_group: None, output_bytes: 2, epilogue: crate::cost_model::epilogue::EpilogueWork::default(), output_column_major: false, row_block_scales: None };
                rank(&problem, &machine, &Pins::default()).into_iter().take(6).map(move |candidate| (problem, candidate))
            })
            .map(|(problem, candidate)| {
                let seconds = predict(&problem, &machine, &Throughput::of(&tilec_target::Target::H200), truth, &candidate).seconds;
                Sample { problem, candidate, seconds }
            })
            .collect()
    }

    /// A fit over one constant moves that one only, towards its value.
    #[test]
    fn a_fit_of_some_constants_holds_the_others() {
        let truth = Calibration { launch_s: 9e-6, ..Calibration::PRIOR };
        let free: Vec<bool> = Calibration::NAMES.iter().map(|&name| name == "launch_s").collect();
        let fitted = fit(&generated(&truth), &Machine::H100, &Throughput::of(&tilec_target::Target::H200), &Calibration::PRIOR, &free, 2_000);
        assert_eq!(Calibration { launch_s: Calibration::PRIOR.launch_s, ..fitted }, Calibration::PRIOR);
        // The pull towards the start keeps it a little short of the truth.
        assert!((fitted.launch_s / truth.launch_s - 1.0).abs() < 0.1, "{}", fitted.launch_s);
        assert!(error(&generated(&truth), &Machine::H100, &Throughput::of(&tilec_target::Target::H200), &fitted).median < 0.02);
        let none = fit(&generated(&truth), &Machine::H100, &Throughput::of(&tilec_target::Target::H200), &Calibration::PRIOR, &[false; Calibration::NAMES.len()], 2_000);
        assert_eq!(none, Calibration::PRIOR);
    }

    #[test]
    fn the_fit_recovers_constants_that_generated_the_times() {
        // Times predicted with known constants are fitted back to within a
        // few percent of their prediction, starting from the prior: not to
        // the truth exactly, since the objective's ranking term (a softmin
        // over candidates predicted nearly alike) is not zero there, and
        // trades a little accuracy for a sharper order.
        let truth = Calibration { mma_efficiency_pipeline: 0.6, l2_bytes_per_s: 6e12, launch_s: 6e-6, ..Calibration::PRIOR };
        let machine = Machine::H100;
        let samples = generated(&truth);
        let fitted = fit(&samples, &machine, &Throughput::of(&tilec_target::Target::H200), &Calibration::PRIOR, &[true; Calibration::NAMES.len()], 20_000);
        let before = error(&samples, &machine, &Throughput::of(&tilec_target::Target::H200), &Calibration::PRIOR);
        let after = error(&samples, &machine, &Throughput::of(&tilec_target::Target::H200), &fitted);
        assert!(after.median < 0.025 && after.mean_squared_log < before.mean_squared_log, "before {before:?}, after {after:?}");
    }
}
