//! Config selection in the driver: the `--shape`, `--param`, `--target` and
//! `--explain` flags of `tilec compile`, and the pipeline that follows
//! `tile-select-config`, built from the `tile.config` it writes.

use std::fmt::Write;
use std::sync::Arc;
use tilec_artifact::Tuning;
use tilec_dialects::ir::{Attribute, Param};
use tilec_dialects::{Function, Module};
use tilec_dialects::Diagnostic;
use tilec_passes::cluster::Along;
use tilec_passes::cost_model;
use tilec_passes::selection::{check_pin, check_shape, Candidate, Config, Machine, Precision, Problem, SplitReduce};
use tilec_passes::transforms::select_config::{SelectConfig, MAX_CANDIDATE_RANK};
use tilec_target::Target;

/// A problem shape `MxNxK`.
pub type Shape = (i64, i64, i64);

/// What the user asked of config selection.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ConfigRequest {
    /// `--shape MxNxK`: the problem to choose the config for.
    pub shape: Option<Shape>,
    /// `--param NAME=VALUE`: BLOCK_M, BLOCK_N, BLOCK_K or STAGES.
    pub params: Vec<(String, i64)>,
    /// `--candidate R`: the R-th ranked configuration instead of the pick.
    pub candidate: Option<i64>,
    /// `--cluster m|n|none|m4|n4|m8|n8`: pin clusters along M or N (of two
    /// CTAs, or of the count after the letter), or none (the `cluster`
    /// option of `tile-select-config`, which checks the word).
    pub cluster: Option<String>,
    /// `--ranking model|rules`: how the candidates are ordered (the
    /// `ranking` option of `tile-select-config`).
    pub ranking: Option<String>,
    /// `--target`: the GPU to choose for and compile for (the `target`
    /// option of `tile-select-config`). It asks for no new selection: a file
    /// that holds a decision compiles as written, for this target.
    pub target: &'static Target,
    /// `--tuning FILE`: the configurations measured fastest, taken for the
    /// shapes the file has instead of the cost model's pick.
    pub tuning: Option<Arc<Tuning>>,
}

impl ConfigRequest {
    /// Whether the user pinned or shaped anything (the target aside).
    pub fn is_given(&self) -> bool {
        self.shape.is_some() || !self.params.is_empty() || self.candidate.is_some() || self.cluster.is_some() || self.ranking.is_some()
    }

    /// The `tile-select-config{...}` pass for this request (for `shape`
    /// instead of the request's own where one is given).
    pub fn select_pass(&self, shape: Option<Shape>) -> String {
        let mut options = Vec::new();
        if let Some((m, n, k)) = shape.or(self.shape) {
            options.push(format!("m={m} n={n} k={k}"));
        }
        options.push(format!("target={}", self.target.name));
        for (name, value) in &self.params {
            options.push(format!("{}={value}", name.to_ascii_lowercase().replace('_', "-")));
        }
        if let Some(cluster) = &self.cluster {
            options.push(format!("cluster={cluster}"));
        }
        if let Some(ranking) = &self.ranking {
            options.push(format!("ranking={ranking}"));
        }
        if let Some(rank) = self.candidate {
            options.push(format!("candidate={rank}"));
        }
        format!("tile-select-config{{{}}}", options.join(" "))
    }
}

impl ConfigRequest {
    /// The request with the tuning file's measured best for `module`'s
    /// kernel at `shape` (or the request's own shape) as its candidate,
    /// where the file has that problem and no `--candidate` was given. A
    /// tuned config no longer among the candidates (the ranking changed
    /// since the tuning run) is said on stderr, and the model picks.
    pub fn tuned(&self, module: &Module, shape: Option<Shape>) -> Result<ConfigRequest, String> {
        let (Some(tuning), None) = (&self.tuning, self.candidate) else { return Ok(self.clone()) };
        let Some(func) = module.functions.first() else { return Ok(self.clone()) };
        let entries = tilec_passes::parse_pipeline(&self.select_pass(shape)).map_err(|e| format!("tilec: {e}"))?;
        let select = SelectConfig::from_options(&entries[0].options);
        let Some((problem, _, _)) = select.problem(func).map_err(|d| d.to_string())? else { return Ok(self.clone()) };
        if select.shape.is_none() {
            return Ok(self.clone());
        }
        let dtype = match problem.precision {
            Precision::Bf16 => "bf16",
            Precision::Fp8BlockScaled => "fp8",
        };
        let size = |d: i64| u64::try_from(d).expect("a checked shape is positive");
        let Some(entry) = tuning.lookup(dtype, size(problem.m), size(problem.n), size(problem.k)) else { return Ok(self.clone()) };
        let tuned: Config = entry.config.parse().map_err(|e| format!("tilec: the tuning file's {dtype} {}x{}x{}: {e}", entry.m, entry.n, entry.k))?;
        let ranked = select.weigh(func).map_err(|d| d.to_string())?;
        match ranked.iter().position(|w| w.candidate.config == tuned) {
            Some(rank) => Ok(ConfigRequest { candidate: Some(rank as i64 + 1), ..self.clone() }),
            None => {
                eprintln!(
                    "tilec: warning: the tuning file's config for {dtype} {}x{}x{} ({tuned}) is not among the {} candidates config selection weighs now (they changed since the tuning run): the cost model's pick is used",
                    entry.m,
                    entry.n,
                    entry.k,
                    ranked.len()
                );
                Ok(self.clone())
            }
        }
    }
}

/// `--tuning FILE`: the file, which must have been measured on `target`.
pub fn load_tuning(path: &str, target: &Target) -> Result<Arc<Tuning>, String> {
    let tuning = Tuning::load(path).map_err(|e| format!("tilec: {e}"))?;
    if tuning.target != target.name {
        return Err(format!("tilec: {path}: the tuning file was measured on `{}`, but the kernel is compiled for `{}` (--target)", tuning.target, target.name));
    }
    Ok(Arc::new(tuning))
}

/// `4096x2112x7168`.
pub fn parse_shape(text: &str) -> Result<Shape, String> {
    let dims: Vec<Option<i64>> = text.split('x').map(|d| d.parse::<i64>().ok().filter(|&d| d > 0)).collect();
    match dims[..] {
        [Some(m), Some(n), Some(k)] => check_shape(m, n, k).map(|()| (m, n, k)).map_err(|e| format!("--shape {text}: {e}")),
        _ => Err(format!("--shape expects MxNxK with three positive integers, found '{text}'")),
    }
}

/// `4096x2112x7168,128x2112x7168`.
pub fn parse_shapes(text: &str) -> Result<Vec<Shape>, String> {
    text.split(',').map(parse_shape).collect()
}

/// `BLOCK_N=192` or `STAGES=3`.
pub fn parse_param(text: &str) -> Result<(String, i64), String> {
    let bad = || format!("--param expects NAME=VALUE with NAME one of BLOCK_M, BLOCK_N, BLOCK_K, STAGES and a positive VALUE, found '{text}'");
    let (name, value) = text.split_once('=').ok_or_else(bad)?;
    let value: i64 = value.parse().ok().filter(|&v| v > 0).ok_or_else(bad)?;
    if Param::from_name(name).is_none() && name != "STAGES" {
        return Err(bad());
    }
    check_pin(name, value).map_err(|e| format!("--param {text}: {e}"))?;
    Ok((name.to_string(), value))
}

/// The first parameter pinned more than once, with its two values: each
/// of BLOCK_M, BLOCK_N, BLOCK_K and STAGES takes one value.
pub fn repeated_param(params: &[(String, i64)]) -> Option<String> {
    params.iter().enumerate().find_map(|(i, (name, value))| {
        let (_, again) = params[i + 1..].iter().find(|(other, _)| other == name)?;
        Some(format!("--param {name} is given twice ({value} and {again}): pin each parameter once"))
    })
}

/// `--candidate R`: a rank from 1.
pub fn parse_candidate(text: &str) -> Result<i64, String> {
    text.parse().ok().filter(|&r| (1..=MAX_CANDIDATE_RANK).contains(&r)).ok_or_else(|| format!("--candidate expects a rank from 1 to {MAX_CANDIDATE_RANK}, found '{text}'"))
}

/// The candidates `--explain` prints unless `--explain-rows` says otherwise.
pub const EXPLAIN_ROWS: usize = 12;

/// `--explain-rows`: how many candidates `--explain` prints, a count of at
/// least 1 or `all`.
pub fn parse_explain_rows(text: &str) -> Result<usize, String> {
    if text == "all" {
        return Ok(usize::MAX);
    }
    text.parse().ok().filter(|&n| n >= 1).ok_or_else(|| format!("--explain-rows expects a count of at least 1 or 'all', found '{text}'"))
}

/// Whether a function still has parameters to bind.
pub fn is_parametric(module: &Module) -> bool {
    module.functions.iter().any(tilec_passes::phase::has_unbound_parameters)
}

/// Whether the file already holds a whole decision: no parameter is left to
/// bind and every function's `tile.config` names its schedule (as
/// `tile-select-config` writes it, or a hand-edited copy of that). Such a
/// file compiles as written unless config flags ask for a new selection,
/// which would keep only its block sizes and stages.
pub fn is_decided(module: &Module) -> bool {
    !module.functions.is_empty()
        && !is_parametric(module)
        && module.functions.iter().all(|f| config_of(f).is_some_and(|c| c.get("schedule").is_some()))
}

/// Whether `module` compiles with the config it holds: it [`is_decided`]
/// and `request` asks for no new selection.
pub fn compiles_as_written(module: &Module, request: &ConfigRequest) -> bool {
    !request.is_given() && is_decided(module)
}

/// The `tile.config` a function carries, as a dictionary.
fn config_of(func: &Function) -> Option<&tilec_dialects::ir::Attributes> {
    match func.attrs.get("tile.config") {
        Some(Attribute::Dict(d)) => Some(d),
        _ => None,
    }
}

/// The passes after `tile-select-config`, as the `tile.config` of the
/// module's function asks ([`tilec_passes::config::pass_pipeline`]);
/// `fallback` for input without one (an nv-level kernel).
pub fn pipeline_after_config(module: &Module, fallback: &str) -> Result<String, Diagnostic> {
    match module.functions.iter().find(|f| config_of(f).is_some()) {
        Some(func) => tilec_passes::config::pass_pipeline(func),
        None => Ok(fallback.to_string()),
    }
}

/// Which operands' rows start off the L2's sectors, which the model charges
/// twice the L2 throughput of their bytes; `None` where none do.
fn l2_note(problem: &Problem, machine: &Machine) -> Option<String> {
    let (a, b) = cost_model::operand_l2_factors(problem, machine);
    let (a_bytes, b_bytes) = cost_model::operand_row_bytes(problem);
    let off: Vec<String> = [("A", a, a_bytes), ("B", b, b_bytes)]
        .into_iter()
        .filter(|&(_, factor, _)| factor > 1.0)
        .map(|(name, factor, bytes)| format!("{name}'s ({bytes} bytes apart, {factor}x)"))
        .collect();
    (!off.is_empty()).then(|| {
        format!(
            "rows off the {}-byte sectors take more L2 throughput than their bytes: {} (a cluster multicasting an operand halves its share)",
            machine.l2_sector_bytes,
            off.join(", ")
        )
    })
}

/// How the pick's splits share each tile's K loop and add their partial
/// tiles (`tile-split-k`), for `--explain`; `None` for a K loop not split.
fn split_note(problem: &Problem, pick: &Candidate, sms: i64) -> Option<String> {
    let splits = pick.config.splits;
    // A workspace split in clusters (`selection::clustered_alternatives`).
    let paired = match pick.config.cluster {
        Along::None => String::new(),
        along => format!(
            "; in {}-CTA clusters along {}: neighbouring tiles of one split load the {} tile they share once (TMA multicast, tile-cluster-split), weighed because the model finds the split bound by L2",
            pick.config.cluster_ctas,
            along.word(),
            if along == Along::M { "B" } else { "A" }
        ),
    };
    (splits > 1).then(|| match pick.config.split_reduce {
        SplitReduce::Spread if pick.config.stores_shares(problem) => format!(
            "{splits} CTAs share each tile's K loop and add their partial tiles in shares through a global workspace, each waiting for the others and storing its share of the output itself: the grid's {} CTAs fit the {sms} SMs (tile-split-k reduce=spread, direct stores); where a launch's grid is larger, the last to arrive adds them and stores the tile",
            pick.tiles * splits
        ),
        SplitReduce::Cluster => format!("{splits} CTAs of a cluster share each tile's K loop and add their partial tiles through its shared memory (tile-split-k reduce=cluster)"),
        SplitReduce::Workspace => format!("{splits} CTAs share each tile's K loop; each parks its partial tile in a global workspace and the last to arrive adds them in order (tile-split-k reduce=workspace)"),
        SplitReduce::Spread => format!(
            "{splits} CTAs share each tile's K loop and add their partial tiles in shares through a global workspace, each waiting for the others: the grid's {} CTAs fit the {sms} SMs (tile-split-k reduce=spread); where a launch's grid is larger, the last to arrive adds them",
            pick.tiles * splits
        ),
    } + &paired)
}

/// Why the pick's CTAs run in clusters, for `--explain`; `None`
/// where they do not, or where the K loop is split (the split-K line
/// says it).
fn cluster_note(pick: &Candidate, sms: i64, pinned: bool) -> Option<String> {
    let c = &pick.config;
    if c.cluster == Along::None || c.splits > 1 {
        return None;
    }
    let why = if pinned {
        "pinned (--cluster)"
    } else if pick.tiles <= sms {
        "its tiles fit one wave under two consumers, weighed in clusters because the model finds the kernel bound by L2"
    } else {
        "over more than one wave"
    };
    Some(format!(
        "{}-CTA clusters along {}: neighbouring tiles load the {} tile they share once (TMA multicast, tile-cluster-split); {why}",
        c.cluster_ctas,
        c.cluster.word(),
        if c.cluster == Along::M { "B" } else { "A" }
    ))
}

/// `--explain`: the candidates weighed for each function, best first.
pub fn explain(module: &Module, select: &SelectConfig, limit: usize) -> Result<String, String> {
    let machine = select.machine();
    let mut out = String::new();
    for func in &module.functions {
        let ranked = select.weigh(func).map_err(|d| d.to_string())?;
        let Some((problem, pins, _)) = select.problem(func).map_err(|d| d.to_string())? else {
            continue;
        };
        let shape_note = if select.shape.is_none() { " (no --shape: the default shape policy, any N)" } else { "" };
        writeln!(out, "config candidates for @{} at {}x{}x{}{shape_note}, {}: {} SMs, {} bytes of shared memory:", func.name, problem.m, problem.n, problem.k, select.target.name, machine.sms, machine.smem_bytes).expect("String");
        if !problem.epilogue.is_plain() {
            writeln!(out, "  epilogue: {}; each tile a schedule leaves exposed pays it (ping-pong hides all but one)", problem.epilogue).expect("String");
        }
        writeln!(out, "  {:>4} {:<56} {:>6} {:>5} {:>9} {:>7} {:>10} {:>9}  reason", "rank", "config", "tiles", "waves", "last wave", "smem", "predicted", "bound").expect("String");
        for (i, w) in ranked.iter().take(limit).enumerate() {
            let c = &w.candidate;
            writeln!(
                out,
                "  {:>4} {:<56} {:>6} {:>5} {:>8.0}% {:>7} {:>8.1}us {:>9}  {}",
                i + 1,
                format!("{} sms={}", c.config, c.sms),
                c.tiles,
                c.waves,
                100.0 * c.last_wave_utilisation(&machine),
                c.smem_bytes,
                w.prediction.seconds * 1e6,
                w.prediction.bound.word(),
                c.reason
            )
            .expect("String");
        }
        if ranked.len() > limit {
            writeln!(out, "  ... {} more", ranked.len() - limit).expect("String");
        }
        // The candidate the compile takes: the pick, or --candidate R's.
        if let Some(pick) = ranked.get(select.candidate.max(1) - 1) {
            let whose = if select.candidate <= 1 { "the pick's".to_string() } else { format!("candidate {}'s (the kernel --candidate {} compiles)", select.candidate, select.candidate) };
            writeln!(out, "  {whose} predicted time: {}", pick.prediction.terms()).expect("String");
            if pick.candidate.config.swap_operands {
                let c = &pick.candidate.config;
                let scales = if problem.precision == Precision::Fp8BlockScaled { ", B's block scales along its rows and A's row scales along its columns" } else { "" };
                writeln!(out, "  operands swapped: the kernel computes C^T = B A^T, each tile {} rows of B by {} rows of A (C's {} rows fill its columns{scales}), and stores C column-major from registers (tile-swap-operands)", c.block_m, c.block_n, problem.m).expect("String");
            }
            if let Some(note) = l2_note(&problem, &machine) {
                writeln!(out, "  L2: {note}").expect("String");
            }
            if cost_model::reads_in_step(&pick.candidate.config) {
                let (_, cal) = cost_model::for_target(select.target);
                let (share, constant) = cost_model::merged_share(&cal, problem.precision);
                writeln!(out, "  L2: the grid does not loop over tiles, so its first wave's CTAs start together; of their repeated reads of a row of A's tiles or a column of B's over a K range, the model takes {:.0}% as merged by L2's request coalescer and not read again ({constant})", 100.0 * share).expect("String");
            }
            if let Some(note) = split_note(&problem, &pick.candidate, machine.sms) {
                writeln!(out, "  split-K: {note}").expect("String");
            }
            if let Some(note) = cluster_note(&pick.candidate, machine.sms, pins.cluster.is_some()) {
                writeln!(out, "  clusters: {note}").expect("String");
            }
            if cost_model::promotes_in_pairs(&problem, &pick.candidate.config) {
                writeln!(out, "  promotion: the K loop runs in pairs (tile-pair-promotions): the first K block of each pair is waited for and promoted under the second's wgmma, and its stage refilled a K block late; the model charges half of each K block's wait and promotion, and half a load fewer in flight over the K blocks that refill").expect("String");
            }
            // Every pipeline config selection writes ends with tile-programmatic-launch.
            writeln!(out, "  launch: programmatic dependent launch allowed (tile-programmatic-launch): the kernel waits for the previous grid before its first memory access and lets the next one launch at its start; single calls are launched without it").expect("String");
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_parse_or_say_what_is_wrong() {
        assert_eq!(parse_shape("4096x2112x7168"), Ok((4096, 2112, 7168)));
        assert!(parse_shape("4096x2112").unwrap_err().contains("MxNxK"));
        assert_eq!((parse_explain_rows("3"), parse_explain_rows("all")), (Ok(3), Ok(usize::MAX)));
        assert!(parse_explain_rows("0").unwrap_err().contains("at least 1"));
        assert!(parse_explain_rows("-2").is_err());
        // Every rank --explain lists (thousands at deep K) compiles.
        assert_eq!(parse_candidate("1742"), Ok(1742));
        assert!(parse_candidate("0").unwrap_err().contains("a rank from 1"));
        assert!(parse_shape("0x1x1").is_err());
        assert_eq!(parse_shapes("64x8x8,128x8x8").unwrap().len(), 2);
        assert_eq!(parse_param("BLOCK_N=192"), Ok(("BLOCK_N".into(), 192)));
        assert!(parse_param("BLOCK_Q=1").is_err());
        assert!(parse_param("BLOCK_N").is_err());
        assert!(parse_param("BLOCK_N=-3").is_err());
        assert!(parse_param("BLOCK_N=336").unwrap_err().contains("--param BLOCK_N=336: BLOCK_N must be a multiple of 16"));
        assert!(parse_shape("274877906944x274877906944x8").unwrap_err().contains("larger than 2147483647"));
        let params = |list: &[(&str, i64)]| list.iter().map(|&(n, v)| (n.to_string(), v)).collect::<Vec<_>>();
        assert_eq!(repeated_param(&params(&[("BLOCK_N", 64), ("STAGES", 2)])), None);
        assert_eq!(repeated_param(&params(&[("STAGES", 8), ("BLOCK_N", 64), ("STAGES", 16)])).unwrap(), "--param STAGES is given twice (8 and 16): pin each parameter once");
    }

    #[test]
    fn the_select_pass_carries_shape_and_pins() {
        let r = ConfigRequest {
            shape: Some((1, 2, 3)),
            params: vec![("BLOCK_N".into(), 192), ("STAGES".into(), 2)],
            candidate: Some(3),
            cluster: Some("n".into()),
            target: &Target::H100,
            ranking: None,
            tuning: None,
        };
        assert_eq!(r.select_pass(None), "tile-select-config{m=1 n=2 k=3 target=h100 block-n=192 stages=2 cluster=n candidate=3}");
        assert_eq!(r.select_pass(Some((4, 5, 6))), "tile-select-config{m=4 n=5 k=6 target=h100 block-n=192 stages=2 cluster=n candidate=3}");
        assert_eq!(ConfigRequest::default().select_pass(None), "tile-select-config{target=h200}");
        assert!(!ConfigRequest::default().is_given(), "the default target asks for no selection");
    }
}
