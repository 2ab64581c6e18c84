//! The `tile.config` attribute that `tile-select-config` writes on a
//! function, read by the passes after it for the options their pipeline does
//! not give, and the pass pipeline that builds the configuration it decides.
//! (Whether a function still has block-size parameters to bind is its
//! phase: `phase::has_unbound_parameters`.)

use crate::cluster::Along;
use crate::config_rules::{Config, Epilogue, Scales, Schedule};
use crate::config_rules::{PieceOrder, SplitReduce};
use crate::options::OptionKind;
use crate::pass::PassInfo;
use tilec_dialects::ir::{Attribute, Attributes};
use tilec_dialects::{Diagnostic, Function};

/// Every key `tile.config` may hold: the decision `tile-select-config`
/// writes (`record`), the figures it writes beside it (the shape, SMs,
/// waves, shared memory) and what a hand-written config may add for a pass
/// to read (`mma_n`).
pub const CONFIG_KEYS: [&str; 25] = [
    "m", "n", "k", "block_m", "block_n", "block_k", "stages", "schedule", "consumers", "persistent", "tile_order", "raster_group", "epilogue",
    "epilogue_cols", "epilogue_deferred", "scales", "cluster", "splits", "split_reduce", "stream_k", "mma_n", "sms", "waves", "last_wave",
    "smem_bytes",
];

/// The function's `tile.config`, `None` without one. A key no pass knows
/// is an error located at the function: a misspelt entry must not leave
/// the kernel built as if it were absent.
fn entries(func: &Function) -> Result<Option<&Attributes>, Diagnostic> {
    let Some(Attribute::Dict(d)) = func.attrs.get("tile.config") else { return Ok(None) };
    match d.iter().find(|(key, _)| !CONFIG_KEYS.contains(key)) {
        Some((key, _)) => Err(Diagnostic::error(func.loc.clone(), format!("tile.config has no key '{key}'; it may hold {}", CONFIG_KEYS.join(", ")))),
        None => Ok(Some(d)),
    }
}

/// An integer of the function's `tile.config` (`stages`, `consumers`);
/// `None` without the entry. Any other value is an error located at the
/// function, as in [`config_word`].
pub fn config_int(func: &Function, key: &str) -> Result<Option<i64>, Diagnostic> {
    let Some(d) = entries(func)? else { return Ok(None) };
    match d.get(key) {
        None => Ok(None),
        Some(_) => d.get_int(key).map(Some).ok_or_else(|| Diagnostic::error(func.loc.clone(), format!("tile.config's '{key}' must be an integer"))),
    }
}

/// A flag of the function's `tile.config` (`epilogue_deferred`); `None`
/// without the entry. Any other value is an error located at the function.
pub fn config_bool(func: &Function, key: &str) -> Result<Option<bool>, Diagnostic> {
    let Some(d) = entries(func)? else { return Ok(None) };
    match d.get(key) {
        None => Ok(None),
        Some(Attribute::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(Diagnostic::error(func.loc.clone(), format!("tile.config's '{key}' must be true or false"))),
    }
}

/// An integer of the function's `tile.config` that `pass` also takes as
/// its integer option `option` (mostly of the same name), within that
/// option's range; `None` without the entry. Any other value is an error
/// located at the function, as in [`config_int`].
pub fn config_option(func: &Function, pass: &PassInfo, option: &str, key: &str) -> Result<Option<i64>, Diagnostic> {
    let Some(OptionKind::Int { min, max }) = pass.options.iter().find(|o| o.name == option).map(|o| o.kind) else {
        unreachable!("'{option}' is an integer option of {}", pass.name)
    };
    match config_int(func, key)? {
        Some(v) if !(min..=max).contains(&v) => Err(Diagnostic::error(func.loc.clone(), format!("tile.config's '{key}' must be from {min} to {max}, found {v}"))),
        v => Ok(v),
    }
}

/// A word of the function's `tile.config` (`schedule`, `epilogue`), one of
/// `allowed`; `None` without the entry. Any other value is an error located
/// at the function: a hand-written config must not quietly mean something
/// else.
pub fn config_word<'a>(func: &'a Function, key: &str, allowed: &[&str]) -> Result<Option<&'a str>, Diagnostic> {
    let Some(d) = entries(func)? else { return Ok(None) };
    let Some(value) = d.get(key) else { return Ok(None) };
    match value.as_str() {
        Some(word) if allowed.contains(&word) => Ok(Some(word)),
        _ => Err(Diagnostic::error(
            func.loc.clone(),
            format!("tile.config's '{key}' must be one of \"{}\"", allowed.join("\", \"")),
        )),
    }
}

/// The configuration the function's `tile.config` decides, as config
/// selection's [`Config`] (its `Display` is what `--explain` prints); `None`
/// where `tile.config` names no schedule. Any entry that cannot be read is
/// an error located at the function, as in [`config_word`].
pub fn decided_config(func: &Function) -> Result<Option<Config>, Diagnostic> {
    let Some(word) = config_word(func, "schedule", Schedule::WORDS)? else { return Ok(None) };
    let missing = |key: &str| Diagnostic::error(func.loc.clone(), format!("tile.config decides a schedule but has no '{key}'"));
    let int = |key: &str| config_int(func, key)?.ok_or_else(|| missing(key));
    let (block_m, block_n, block_k, stages) = (int("block_m")?, int("block_n")?, int("block_k")?, int("stages")?);
    let consumers = config_int(func, "consumers")?.unwrap_or(0);
    let schedule = Schedule::from_word(word, consumers).expect("a word of Schedule::WORDS");
    let num_warps = match schedule {
        Schedule::Pipeline => func.attrs.get_int("num_warps").unwrap_or(4),
        Schedule::WarpSpecialized { consumers } => 4 * (1 + consumers),
        Schedule::PingPong => 12,
    };
    let epilogue = match config_word(func, "epilogue", &["global", "tma"])? {
        Some("tma") => Epilogue::Tma { columns: config_int(func, "epilogue_cols")?.unwrap_or(block_n) },
        _ => Epilogue::Global,
    };
    let scales = match config_word(func, "scales", &["none", "staged", "prefetched"])? {
        Some("staged") => Scales::Staged,
        Some("prefetched") => Scales::Prefetched,
        _ => Scales::None,
    };
    Ok(Some(Config {
        block_m,
        block_n,
        block_k,
        stages,
        num_warps,
        schedule,
        epilogue,
        scales,
        cluster: config_word(func, "cluster", Along::WORDS)?.map_or(Along::None, Along::parse),
        splits: config_int(func, "splits")?.unwrap_or(1),
        split_reduce: config_word(func, "split_reduce", SplitReduce::WORDS)?.map_or(SplitReduce::Cluster, SplitReduce::parse),
        raster_group: config_int(func, "raster_group")?.unwrap_or(0),
        stream_k: config_word(func, "stream_k", PieceOrder::WORDS)?.map(PieceOrder::parse),
        deferred_epilogue: config_bool(func, "epilogue_deferred")?.unwrap_or(false),
    }))
}


/// The passes after `tile-select-config` that build the configuration the
/// function's `tile.config` decides ([`decided_config`], [`Config::pass_pipeline`]);
/// an error located at the function where it names no schedule or names
/// something the schedule's passes cannot build.
pub fn pass_pipeline(func: &Function) -> Result<String, Diagnostic> {
    let Some(config) = decided_config(func)? else {
        return Err(Diagnostic::error(func.loc.clone(), "tile.config names no 'schedule': give one, or the program with parameters for config selection"));
    };
    config.pass_pipeline().map_err(|m| Diagnostic::error(func.loc.clone(), m))
}

impl Config {
    /// The passes after `tile-select-config` that build this configuration,
    /// each reading its options from `tile.config`: the plain pipeline
    /// (none for one stage unless clustered), with `tile-rasterize` for a
    /// grouped tile order and `tile-split-k` when it splits K; the
    /// persistent warp-specialised schedule, with `tile-stream-k` when it
    /// shares the last wave by K iterations, `tile-cluster-split` when it
    /// names a cluster and `tile-defer-epilogue` when it defers the
    /// epilogue; or, for a warp-specialised K loop split through the
    /// workspace, `tile-split-k` before `tile-warp-specialize` and no
    /// persistent loop. A split count or group other than the neutral one
    /// brings its pass, which checks the value. What the schedule's passes
    /// cannot build (a raster group or a cluster's split in a
    /// warp-specialised kernel, stream-K or a deferred epilogue without a
    /// persistent loop) is an error, not an entry left unbuilt.
    pub fn pass_pipeline(&self) -> Result<String, String> {
        let split = self.splits != 1;
        let (stream_k, deferred, order) = (self.stream_k.is_some(), self.deferred_epilogue, self.raster_group != 0);
        let pipelined = self.schedule == Schedule::Pipeline;
        let foreign: &[(&str, bool, &str)] = if pipelined {
            &[("stream_k", stream_k, "a persistent schedule"), ("epilogue_deferred", deferred, "a persistent schedule")]
        } else {
            &[
                ("raster_group", order, "the plain pipeline"),
                ("splits", split && self.split_reduce != SplitReduce::Workspace, "split_reduce = \"workspace\" or the plain pipeline"),
                ("splits", split && self.schedule == Schedule::PingPong, "consumers that share each tile"),
                ("stream_k", stream_k && split, "a K loop that is not split"),
                ("epilogue_deferred", deferred && split, "a K loop that is not split"),
            ]
        };
        if let Some((key, _, needs)) = foreign.iter().find(|(_, set, _)| *set) {
            return Err(format!("tile.config's '{key}' needs {needs}, not schedule \"{}\"", self.schedule.word()));
        }
        let cluster = if self.cluster == Along::None { "" } else { "tile-cluster-split," };
        let split_k = if split { "tile-split-k," } else { "" };
        Ok(if pipelined {
            // One stage needs no schedule, except that tile-cluster-split
            // multicasts into the barriers tile-pipeline makes.
            let pipeline = if self.stages != 1 || !cluster.is_empty() { "tile-pipeline," } else { "" };
            let order = if order { "tile-rasterize," } else { "" };
            format!("tile-canonicalize,tile-assign-layouts,{order}{split_k}{pipeline}{cluster}tile-lower-to-nv,tile-fit-tma-boxes,tile-canonicalize")
        } else if split {
            format!("tile-canonicalize,tile-assign-layouts,{split_k}tile-warp-specialize,{cluster}tile-lower-to-nv,tile-fit-tma-boxes,tile-canonicalize,tile-licm")
        } else {
            let stream_k = if stream_k { "tile-stream-k," } else { "" };
            let deferred = if deferred { "tile-defer-epilogue," } else { "" };
            format!("tile-canonicalize,tile-assign-layouts,tile-persistent,tile-licm,{stream_k}tile-warp-specialize,{cluster}tile-lower-to-nv,{deferred}tile-fit-tma-boxes,tile-canonicalize,tile-licm")
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::phase::Phase;
    use crate::pipeline::parse_pipeline;
    use crate::config_rules::Config;

    /// The pipeline each form of configuration builds parses, and its passes
    /// take tile IR to nv IR in phase order.
    #[test]
    fn every_schedule_builds_a_pipeline_in_phase_order() {
        for text in [
            "128x128x64 stages=1 warps=4 pipeline epilogue=global",
            "128x128x64 stages=4 warps=4 pipeline epilogue=tma cluster=m grouped=8",
            "64x64x64 stages=8 warps=4 pipeline epilogue=tma splits=4 split_reduce=workspace",
            "128x256x64 stages=4 warps=12 ws2 persistent epilogue=tma epilogue_cols=64 epilogue_deferred cluster=n",
            "128x256x64 stages=4 warps=12 ws2 persistent epilogue=tma stream_k=in-order",
            "128x128x64 stages=6 warps=12 ws2 epilogue=tma splits=8 split_reduce=workspace",
            "64x128x64 stages=8 warps=12 pingpong persistent epilogue=tma",
        ] {
            let config: Config = text.parse().unwrap();
            let pipeline = config.pass_pipeline().unwrap_or_else(|e| panic!("{text}: {e}"));
            let mut phase = Phase::Tile;
            for entry in parse_pipeline(&pipeline).unwrap() {
                assert!(entry.info.phases.accepts(phase), "{text}: '{}' cannot run on {phase}", entry.info.name);
                phase = entry.info.phases.after(phase);
            }
            assert_eq!(phase, Phase::Nv, "{text}");
        }
    }

    /// A warp-specialised split has no persistent loop; a split through a
    /// cluster, or one under ping-pong consumers, is not built.
    #[test]
    fn a_warp_specialised_split_runs_split_k_before_the_roles() {
        let split: Config = "128x128x64 stages=6 warps=12 ws2 epilogue=tma splits=8 split_reduce=workspace".parse().unwrap();
        let pipeline = split.pass_pipeline().unwrap();
        assert!(pipeline.contains("tile-split-k,tile-warp-specialize") && !pipeline.contains("tile-persistent"), "{pipeline}");
        let refused = |text: &str| text.parse::<Config>().unwrap().pass_pipeline().unwrap_err();
        assert!(refused("128x128x64 stages=6 warps=12 ws2 epilogue=tma splits=2").contains("'splits' needs split_reduce"));
        assert!(refused("128x128x64 stages=6 warps=12 pingpong epilogue=tma splits=2 split_reduce=workspace").contains("consumers that share each tile"));
        assert!(refused("128x128x64 stages=6 warps=12 ws2 epilogue=tma splits=2 split_reduce=workspace stream_k=in-order").contains("'stream_k' needs a K loop that is not split"));
        assert!(refused("128x128x64 stages=6 warps=4 pipeline epilogue=tma epilogue_deferred").contains("needs a persistent schedule"));
    }
}
