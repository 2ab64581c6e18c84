//! The `tile.config` attribute that `tile-select-config` writes on a
//! function, read once into typed entries ([`ConfigEntries`]) by each pass
//! after it for the options its pipeline does not give, and the pass
//! pipeline that builds the configuration it decides.
//! (Whether a function still has block-size parameters to bind is its
//! phase: `phase::has_unbound_parameters`.)

use crate::cluster::{Along, DEFAULT_CLUSTER_CTAS};
use crate::selection::{Config, Epilogue, Scales, Schedule};
use crate::selection::{PieceOrder, SplitReduce};
use crate::options::OptionKind;
use crate::pass::PassInfo;
use crate::tile_order::TileOrder;
use crate::words::named_by_words;
use tilec_dialects::ir::Attribute;
use tilec_dialects::{Diagnostic, Function};

/// Every key `tile.config` may hold: the decision `tile-select-config`
/// writes (`record`), the figures it writes beside it (the shape, SMs,
/// waves, shared memory) and what a hand-written config may add for a pass
/// to read (`mma_n`).
pub const CONFIG_KEYS: [&str; 28] = [
    "m", "n", "k", "swap_operands", "block_m", "block_n", "block_k", "stages", "schedule", "consumers", "persistent", "tile_order", "raster_group", "epilogue",
    "epilogue_cols", "epilogue_deferred", "scales", "cluster", "cluster_ctas", "splits", "split_reduce", "stream_k", "l2_prefetch", "mma_n", "sms", "waves",
    "last_wave", "smem_bytes",
];

/// How the output tile is stored, as `tile.config`'s `epilogue` and
/// `tile-lower-to-nv`'s `epilogue` option say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EpilogueStore {
    /// Each thread stores its elements to global memory.
    Global,
    /// Through a shared buffer and a TMA store.
    Tma,
}

named_by_words!(EpilogueStore { Global => "global", Tma => "tma" } default Global);

/// The function's `tile.config`, every entry read and checked once: the
/// decision `tile-select-config` records (or a hand-written config gives),
/// which the passes after it take where their pipeline gives no option.
/// An absent entry is `None`; so is every entry of a function without a
/// `tile.config`. The figures written beside the decision (the shape, SMs,
/// waves, shared memory, `persistent`) are checked as keys and not read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConfigEntries {
    /// `swap_operands`: the kernel computes C^T = B A^T (`tile-swap-operands`);
    /// the block sizes are then the swapped GEMM's, `block_m` B's rows.
    pub swap_operands: Option<bool>,
    /// `block_m`: the tile's rows.
    pub block_m: Option<i64>,
    /// `block_n`: the tile's columns.
    pub block_n: Option<i64>,
    /// `block_k`: the K tile.
    pub block_k: Option<i64>,
    /// `stages`: the pipeline's buffer stages.
    pub stages: Option<i64>,
    /// `schedule`, with `consumers` for a warp-specialised one.
    pub schedule: Option<Schedule>,
    /// `consumers`: a warp-specialised kernel's consumer warpgroups.
    pub consumers: Option<i64>,
    /// `tile_order`; "grid", a plain kernel's order, names none.
    pub tile_order: Option<TileOrder>,
    /// `raster_group`: tile rows per group of a grouped order.
    pub raster_group: Option<i64>,
    /// `epilogue`: how the output tile is stored.
    pub epilogue: Option<EpilogueStore>,
    /// `epilogue_cols`: the TMA epilogue's buffer columns.
    pub epilogue_cols: Option<i64>,
    /// `epilogue_deferred`: a persistent kernel's epilogue overlaps the next tile.
    pub epilogue_deferred: Option<bool>,
    /// `scales`: how a block-scaled K loop takes its scales.
    pub scales: Option<Scales>,
    /// `cluster`: the axis along which CTAs form clusters.
    pub cluster: Option<Along>,
    /// `cluster_ctas`: CTAs per cluster.
    pub cluster_ctas: Option<i64>,
    /// `splits`: the CTAs each tile's K loop is split over.
    pub splits: Option<i64>,
    /// `split_reduce`: where the splits' partial sums meet.
    pub split_reduce: Option<SplitReduce>,
    /// `stream_k`: the order of the last wave's K pieces.
    pub stream_k: Option<PieceOrder>,
    /// `l2_prefetch`: K steps between each operand box's L2 prefetch and its load.
    pub l2_prefetch: Option<i64>,
    /// `mma_n`: a hand-written config's wgmma N for `tile-assign-layouts`.
    pub mma_n: Option<i64>,
}

impl ConfigEntries {
    /// Reads `func`'s `tile.config`. A key no pass knows, or an entry of
    /// the wrong kind or outside its words, is an error located at the
    /// function: a misspelt or hand-edited entry must not leave the kernel
    /// built as if it were absent, or quietly mean something else.
    pub fn of(func: &Function) -> Result<ConfigEntries, Diagnostic> {
        let Some(Attribute::Dict(d)) = func.attrs.get("tile.config") else { return Ok(ConfigEntries::default()) };
        if let Some((key, _)) = d.iter().find(|(key, _)| !CONFIG_KEYS.contains(key)) {
            return Err(Diagnostic::error(func.loc.clone(), format!("tile.config has no key '{key}'; it may hold {}", CONFIG_KEYS.join(", "))));
        }
        let error = |message: String| Diagnostic::error(func.loc.clone(), message);
        let int = |key: &str| match d.get(key) {
            None => Ok(None),
            Some(_) => d.get_int(key).map(Some).ok_or_else(|| error(format!("tile.config's '{key}' must be an integer"))),
        };
        let flag = |key: &str| match d.get(key) {
            None => Ok(None),
            Some(Attribute::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(error(format!("tile.config's '{key}' must be true or false"))),
        };
        let word = |key: &str, allowed: &[&str]| match d.get(key) {
            None => Ok(None),
            Some(value) => match value.as_str() {
                Some(word) if allowed.contains(&word) => Ok(Some(word.to_string())),
                _ => Err(error(format!("tile.config's '{key}' must be one of \"{}\"", allowed.join("\", \"")))),
            },
        };
        let consumers = int("consumers")?;
        Ok(ConfigEntries {
            swap_operands: flag("swap_operands")?,
            block_m: int("block_m")?,
            block_n: int("block_n")?,
            block_k: int("block_k")?,
            stages: int("stages")?,
            schedule: word("schedule", Schedule::WORDS)?.and_then(|w| Schedule::from_word(&w, consumers.unwrap_or(0))),
            consumers,
            tile_order: word("tile_order", TileOrder::CONFIG_WORDS)?.filter(|w| w != "grid").map(|w| TileOrder::parse(&w)),
            raster_group: int("raster_group")?,
            epilogue: word("epilogue", EpilogueStore::WORDS)?.map(|w| EpilogueStore::parse(&w)),
            epilogue_cols: int("epilogue_cols")?,
            epilogue_deferred: flag("epilogue_deferred")?,
            scales: word("scales", &Scales::WORDS)?.and_then(|w| Scales::from_word(&w)),
            cluster: word("cluster", Along::WORDS)?.map(|w| Along::parse(&w)),
            cluster_ctas: int("cluster_ctas")?,
            splits: int("splits")?,
            split_reduce: word("split_reduce", SplitReduce::WORDS)?.map(|w| SplitReduce::parse(&w)),
            stream_k: word("stream_k", PieceOrder::WORDS)?.map(|w| PieceOrder::parse(&w)),
            l2_prefetch: int("l2_prefetch")?,
            mma_n: int("mma_n")?,
        })
    }

    /// The configuration these entries decide, as config selection's
    /// [`Config`] (its `Display` is what `--explain` prints); `None` where
    /// they name no schedule. A schedule without its block sizes or stages
    /// is an error located at `func`.
    pub fn decided(&self, func: &Function) -> Result<Option<Config>, Diagnostic> {
        let Some(schedule) = self.schedule else { return Ok(None) };
        let missing = |key: &str| Diagnostic::error(func.loc.clone(), format!("tile.config decides a schedule but has no '{key}'"));
        let block_m = self.block_m.ok_or_else(|| missing("block_m"))?;
        let block_n = self.block_n.ok_or_else(|| missing("block_n"))?;
        let block_k = self.block_k.ok_or_else(|| missing("block_k"))?;
        let stages = self.stages.ok_or_else(|| missing("stages"))?;
        let num_warps = match schedule {
            Schedule::Pipeline => func.attrs.get_int("num_warps").unwrap_or(4),
            Schedule::WarpSpecialized { consumers } => 4 * (1 + consumers),
            Schedule::PingPong | Schedule::ColumnHalves => 12,
        };
        let epilogue = match self.epilogue {
            Some(EpilogueStore::Tma) => Epilogue::Tma { columns: self.epilogue_cols.unwrap_or(block_n) },
            Some(EpilogueStore::Global) | None => Epilogue::Global,
        };
        Ok(Some(Config {
            swap_operands: self.swap_operands.unwrap_or(false),
            block_m,
            block_n,
            block_k,
            stages,
            num_warps,
            schedule,
            epilogue,
            scales: self.scales.unwrap_or(Scales::None),
            cluster: self.cluster.unwrap_or(Along::None),
            cluster_ctas: self.cluster_ctas.unwrap_or(DEFAULT_CLUSTER_CTAS),
            splits: self.splits.unwrap_or(1),
            split_reduce: self.split_reduce.unwrap_or(SplitReduce::Cluster),
            raster_group: self.raster_group.unwrap_or(0),
            stream_k: self.stream_k,
            deferred_epilogue: self.epilogue_deferred.unwrap_or(false),
            l2_prefetch: self.l2_prefetch.unwrap_or(0),
        }))
    }
}

/// Writes `value` over `tile.config`'s entry `key` where the function's
/// config has one: a pass whose pipeline gave an option in place of the
/// entry records what it built, so that the configuration the kernel's
/// manifest names is the kernel's. A config without the entry (a BF16
/// kernel has no `scales`) or a function without a config is left alone.
pub fn record_built(func: &mut Function, key: &str, value: Attribute) {
    debug_assert!(CONFIG_KEYS.contains(&key), "tile.config has no key '{key}'");
    let Some(Attribute::Dict(d)) = func.attrs.get("tile.config") else { return };
    if d.get(key).is_some_and(|old| *old != value) {
        let mut d = d.clone();
        d.set(key, value);
        func.attrs.set("tile.config", Attribute::Dict(d));
    }
}

/// `value`, an entry of `tile.config` that `pass` also takes as its integer
/// option `option` (mostly of the same name, `key`), checked against that
/// option's range: out of it is an error located at the function.
pub fn in_option_range(func: &Function, pass: &PassInfo, option: &str, key: &str, value: Option<i64>) -> Result<Option<i64>, Diagnostic> {
    let Some(OptionKind::Int { min, max }) = pass.options.iter().find(|o| o.name == option).map(|o| o.kind) else {
        unreachable!("'{option}' is an integer option of {}", pass.name)
    };
    match value {
        Some(v) if !(min..=max).contains(&v) => Err(Diagnostic::error(func.loc.clone(), format!("tile.config's '{key}' must be from {min} to {max}, found {v}"))),
        v => Ok(v),
    }
}

/// The configuration the function's `tile.config` decides
/// ([`ConfigEntries::decided`]); `None` where it names no schedule.
pub fn decided_config(func: &Function) -> Result<Option<Config>, Diagnostic> {
    ConfigEntries::of(func)?.decided(func)
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
                ("splits", split && !self.split_reduce.through_workspace(), "split_reduce = \"workspace\" or \"spread\", or the plain pipeline"),
                ("splits", split && self.schedule == Schedule::PingPong, "consumers that share each tile"),
                ("epilogue_deferred", deferred && self.schedule == Schedule::ColumnHalves, "consumers that share each tile's rows"),
                ("stream_k", stream_k && split, "a K loop that is not split"),
                ("epilogue_deferred", deferred && split, "a K loop that is not split"),
            ]
        };
        if let Some((key, _, needs)) = foreign.iter().find(|(_, set, _)| *set) {
            return Err(format!("tile.config's '{key}' needs {needs}, not schedule \"{}\"", self.schedule.word()));
        }
        if self.swap_operands && self.epilogue != Epilogue::Global {
            return Err("tile.config's 'swap_operands' needs epilogue = \"global\": the swapped kernel's output is column-major, which the TMA store cannot write".into());
        }
        if self.swap_operands && self.cluster != Along::None {
            return Err("tile.config's 'swap_operands' needs no 'cluster': the lowering pairs no CTAs along x or y over a column-major output".into());
        }
        let cluster = if self.cluster == Along::None { "" } else { "tile-cluster-split," };
        let split_k = if split { "tile-split-k," } else { "" };
        let swap = if self.swap_operands { "tile-swap-operands," } else { "" };
        let prefetch = if self.l2_prefetch > 0 { "tile-prefetch-l2," } else { "" };
        // A block-scaled plain pipeline of one warpgroup promotes each K
        // block under the next one's wgmma.
        let pairs = if self.num_warps == 4 && self.scales != Scales::None { "tile-pair-promotions," } else { "" };
        Ok(swap.to_string() + &if pipelined {
            // One stage needs no schedule, except that tile-cluster-split
            // multicasts into the barriers tile-pipeline makes.
            let pipeline = if self.stages != 1 || !cluster.is_empty() { "tile-pipeline," } else { "" };
            let order = if order { "tile-rasterize," } else { "" };
            format!("tile-canonicalize,tile-assign-layouts,{order}{split_k}{pipeline}{cluster}tile-lower-to-nv,tile-fit-tma-boxes,{prefetch}{pairs}tile-programmatic-launch,tile-canonicalize")
        } else if split {
            format!("tile-canonicalize,tile-assign-layouts,{split_k}tile-warp-specialize,{cluster}tile-lower-to-nv,tile-fit-tma-boxes,{prefetch}tile-programmatic-launch,tile-canonicalize,tile-licm")
        } else {
            let stream_k = if stream_k { "tile-stream-k," } else { "" };
            let deferred = if deferred { "tile-defer-epilogue," } else { "" };
            format!("tile-canonicalize,tile-assign-layouts,tile-persistent,tile-licm,{stream_k}tile-warp-specialize,{cluster}tile-lower-to-nv,{deferred}tile-fit-tma-boxes,{prefetch}tile-programmatic-launch,tile-canonicalize,tile-licm")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{ConfigEntries, EpilogueStore};
    use crate::cluster::Along;
    use crate::selection::{Config, PieceOrder, Scales, Schedule, SplitReduce};
    use crate::phase::Phase;
    use crate::pipeline::parse_pipeline;
    use tilec_dialects::Function;

    /// A function whose `tile.config` is `{config}`.
    fn with_config(config: &str) -> Function {
        let text = format!("tile.func @f() attributes {{tile.config = {{{config}}}}} {{\n  tile.return\n}}\n");
        tilec_dialects::parse_module(&text, "config.tile").expect("the function parses").functions.remove(0)
    }

    /// Every entry a pass reads comes back typed; "grid" names no tile order.
    #[test]
    fn entries_read_typed() {
        let func = with_config(
            "block_m = 128, block_n = 256, block_k = 64, stages = 4, schedule = \"warp_specialized\", consumers = 2, tile_order = \"grid\", \
             epilogue = \"tma\", epilogue_cols = 64, epilogue_deferred = true, scales = \"prefetched\", cluster = \"n\", splits = 2, \
             split_reduce = \"workspace\", stream_k = \"in-order\", l2_prefetch = 6, mma_n = 128",
        );
        let entries = ConfigEntries::of(&func).expect("readable");
        assert_eq!(entries.schedule, Some(Schedule::WarpSpecialized { consumers: 2 }));
        assert_eq!((entries.block_m, entries.block_n, entries.block_k, entries.stages), (Some(128), Some(256), Some(64), Some(4)));
        assert_eq!((entries.tile_order, entries.epilogue, entries.epilogue_cols), (None, Some(EpilogueStore::Tma), Some(64)));
        assert_eq!((entries.scales, entries.cluster, entries.split_reduce), (Some(Scales::Prefetched), Some(Along::N), Some(SplitReduce::Workspace)));
        assert_eq!((entries.stream_k, entries.epilogue_deferred, entries.splits, entries.mma_n), (Some(PieceOrder::InOrder), Some(true), Some(2), Some(128)));
        assert_eq!(entries.l2_prefetch, Some(6));
        assert_eq!(ConfigEntries::of(&with_config("stages = 3")).expect("readable").decided(&func).expect("no schedule"), None);
    }

    /// A misspelt key, an entry of the wrong kind or a word outside its
    /// set is an error that names the key, not an entry read as absent.
    #[test]
    fn bad_entries_are_errors_naming_the_key() {
        for (config, says) in [
            ("stagez = 3", "tile.config has no key 'stagez'"),
            ("stages = \"four\"", "'stages' must be an integer"),
            ("epilogue_deferred = 1", "'epilogue_deferred' must be true or false"),
            ("scales = \"none\"", "'scales' must be one of \"staged\", \"prefetched\""),
            ("cluster = \"k\"", "'cluster' must be one of \"m\", \"n\", \"none\""),
        ] {
            let error = ConfigEntries::of(&with_config(config)).expect_err(config);
            assert!(error.message.contains(says), "{config}: {}", error.message);
        }
        let missing = ConfigEntries::of(&with_config("schedule = \"pipeline\", block_m = 128")).expect("readable");
        let error = missing.decided(&with_config("")).expect_err("no block_n");
        assert!(error.message.contains("decides a schedule but has no 'block_n'"), "{}", error.message);
    }

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
            "128x128x64 stages=6 warps=12 ws2 epilogue=tma splits=8 split_reduce=workspace l2_prefetch=4",
            "64x128x64 stages=8 warps=12 pingpong persistent epilogue=tma",
            "64x128x64 stages=8 warps=12 pingpong persistent epilogue=tma l2_prefetch=8",
            "64x64x64 stages=8 warps=4 pipeline epilogue=tma l2_prefetch=2",
            "128x16x64 swapped stages=8 warps=4 pipeline epilogue=global splits=2",
            "128x320x64 swapped stages=4 warps=12 ws2-columns persistent epilogue=global",
        ] {
            let config: Config = text.parse().unwrap();
            let pipeline = config.pass_pipeline().unwrap_or_else(|e| panic!("{text}: {e}"));
            let mut phase = Phase::Tile;
            for entry in parse_pipeline(&pipeline).unwrap() {
                assert!(entry.info.phases.accepts(phase), "{text}: '{}' cannot run on {phase}", entry.info.name);
                phase = entry.info.phases.after(phase);
            }
            assert_eq!(phase, Phase::Nv, "{text}");
            assert_eq!(pipeline.contains("tile-fit-tma-boxes,tile-prefetch-l2,"), config.l2_prefetch > 0, "{text}: {pipeline}");
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

    /// A swapped configuration runs `tile-swap-operands` first; its output
    /// is column-major, which neither the TMA store nor clusters along M or
    /// N take.
    #[test]
    fn a_swapped_config_swaps_first_and_stores_directly() {
        let swapped: Config = "128x16x64 swapped stages=8 warps=4 pipeline epilogue=global".parse().unwrap();
        assert!(swapped.pass_pipeline().unwrap().starts_with("tile-swap-operands,tile-canonicalize,"));
        let refused = |text: &str| text.parse::<Config>().unwrap().pass_pipeline().unwrap_err();
        assert!(refused("128x16x64 swapped stages=8 warps=4 pipeline epilogue=tma").contains("'swap_operands' needs epilogue = \"global\""));
        assert!(refused("128x16x64 swapped stages=8 warps=4 pipeline epilogue=global cluster=m").contains("'swap_operands' needs no 'cluster'"));
    }
}
