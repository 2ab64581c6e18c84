//! A configuration and the figures that rank it: the schedule, epilogue,
//! scales, split and tile order it names, the pins that fix some of it, and
//! its text form (what `--explain` lists and tuning files hold).

use crate::cluster::{check_cluster_ctas, Along, DEFAULT_CLUSTER_CTAS};
use crate::words::named_by_words;
use std::fmt;
use super::problem::{Machine, Problem};

/// Where block-scaled FP8's scales wait for the K step that applies them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scales {
    /// No scales (BF16).
    None,
    /// Copied into shared memory with their stage (`nv.copy_async`).
    Staged,
    /// Loaded from global memory into registers one K step ahead.
    Prefetched,
    /// Copied into shared memory for many K steps at once, before the K
    /// loop and again each [`Scales::resident_chunk`] K steps, so that a
    /// stage's barrier waits for its TMA loads alone (`tile-pipeline`).
    Resident,
}

impl Scales {
    /// The most K steps of scales a CTA holds at once where they are
    /// resident: a chunk's copy waits for the whole CTA, so a K range longer
    /// than this pays that wait again for each chunk.
    pub const MAX_RESIDENT_CHUNK: i64 = 64;

    /// The forms a K loop's passes take, in the order their words are listed.
    const TAKEN: [Scales; 3] = [Scales::Staged, Scales::Prefetched, Scales::Resident];

    /// The words of the forms a K loop's passes take (`staged`,
    /// `prefetched`, `resident`), as `tile.config`'s `scales` and the
    /// `scales` option of `tile-pipeline` and `tile-warp-specialize` spell
    /// them: copied with their stage, loaded one K step ahead, or copied for
    /// many K steps at once.
    pub const WORDS: [&'static str; 3] = [Self::TAKEN[0].word(), Self::TAKEN[1].word(), Self::TAKEN[2].word()];

    /// The option value `tile-pipeline` and `tile-warp-specialize` take
    /// (`staged`, `prefetched`, `resident`); `none` without scales.
    pub const fn word(self) -> &'static str {
        match self {
            Scales::None => "none",
            Scales::Staged => "staged",
            Scales::Prefetched => "prefetched",
            Scales::Resident => "resident",
        }
    }

    /// The scales a K loop's passes take by their word (`staged`,
    /// `prefetched`, `resident`: [`Scales::word`]); `None` for any other.
    pub fn from_word(word: &str) -> Option<Scales> {
        Self::TAKEN.into_iter().find(|s| s.word() == word)
    }

    /// The K steps of scales a CTA that runs `k_steps` of them holds at once
    /// where they are resident: all of them, up to
    /// [`Scales::MAX_RESIDENT_CHUNK`], rounded up to a power of two, so
    /// that each K step finds its slot and chunk with a mask and a shift,
    /// and a K loop run in pairs (`tile-pair-promotions`) starts each chunk
    /// on the first of a pair.
    pub fn resident_chunk(k_steps: i64) -> i64 {
        (k_steps.max(2) as u64).next_power_of_two().min(Self::MAX_RESIDENT_CHUNK as u64) as i64
    }
}

/// How the K loop is scheduled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// `tile-pipeline`: every warp loads and computes.
    Pipeline,
    /// `tile-persistent` + `tile-warp-specialize`: a TMA producer warpgroup
    /// and `consumers` wgmma warpgroups, one CTA per SM in grouped order
    /// (or, with the K loop split through the workspace, one CTA for each
    /// split of each tile).
    WarpSpecialized {
        /// Consumer warpgroups (1 or 2).
        consumers: i64,
    },
    /// The same split with two consumers that take turns at whole tiles
    /// (`pingpong=true`): one's epilogue runs beside the other's main loop.
    PingPong,
    /// The same split with two consumers that share each tile by columns
    /// (`halves=columns`): each holds every row and half of the columns, so
    /// a tile may be 192 rows tall (no whole m64 blocks in half of it) or
    /// wider than one wgmma.
    ColumnHalves,
}

impl Schedule {
    /// `tile.config`'s words for the schedules, which [`Schedule::word`] gives.
    pub const WORDS: &'static [&'static str] = &["pipeline", "warp_specialized", "pingpong", "column_halves"];

    /// The schedule's word in `tile.config`.
    pub fn word(self) -> &'static str {
        match self {
            Schedule::Pipeline => "pipeline",
            Schedule::WarpSpecialized { .. } => "warp_specialized",
            Schedule::PingPong => "pingpong",
            Schedule::ColumnHalves => "column_halves",
        }
    }

    /// The schedule `tile.config` names with `word` and `consumers`; `None`
    /// for a word that names none.
    pub fn from_word(word: &str, consumers: i64) -> Option<Schedule> {
        [Schedule::Pipeline, Schedule::WarpSpecialized { consumers }, Schedule::PingPong, Schedule::ColumnHalves].into_iter().find(|s| s.word() == word)
    }
}

/// How the output tile is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Epilogue {
    /// Each thread stores its accumulator elements to global memory, bounds-checked.
    Global,
    /// Through a swizzled shared buffer and a TMA store (C's rows 16-byte
    /// aligned).
    Tma {
        /// The buffer's columns: the tile's, or a chunk of them the tile
        /// goes through one after another
        /// (`chunked_epilogue`).
        columns: i64,
    },
}

impl Epilogue {
    /// The option value `tile-lower-to-nv` takes (`global`, `tma`).
    pub fn word(self) -> &'static str {
        match self {
            Epilogue::Global => "global",
            Epilogue::Tma { .. } => "tma",
        }
    }
}

/// Values the program or the user fixed; the rest are chosen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pins {
    /// A fixed block M.
    pub block_m: Option<i64>,
    /// A fixed block N.
    pub block_n: Option<i64>,
    /// A fixed block K.
    pub block_k: Option<i64>,
    /// A fixed stage count.
    pub stages: Option<i64>,
    /// A fixed cluster: every candidate clusters its CTAs along this
    /// dimension (`Along::None`: none does), instead of the clustered
    /// alternative (`cluster_for`).
    pub cluster: Option<Along>,
    /// CTAs in a pinned cluster (`DEFAULT_CLUSTER_CTAS` where left out).
    pub cluster_ctas: Option<i64>,
}

impl std::fmt::Display for Pins {
    /// `BLOCK_M=256 BLOCK_N=256`, or `none`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pinned: Vec<String> = [("BLOCK_M", self.block_m), ("BLOCK_N", self.block_n), ("BLOCK_K", self.block_k), ("STAGES", self.stages)]
            .iter()
            .filter_map(|(name, v)| v.map(|v| format!("{name}={v}")))
            .chain(self.cluster.map(|along| match self.cluster_ctas {
                Some(ctas) if along != Along::None => format!("cluster={}{ctas}", along.word()),
                _ => format!("cluster={}", along.word()),
            }))
            .collect();
        f.write_str(if pinned.is_empty() { "none" } else { "" })?;
        f.write_str(&pinned.join(" "))
    }
}

/// How split-K (`tile-split-k`) adds the partial tiles of a tile's splits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitReduce {
    /// The splits of a tile form a cluster and add their partial tiles
    /// through its shared memory (`tile.sum_splits`): at most a cluster's
    /// CTAs, all resident at once.
    Cluster,
    /// Each split parks its partial tile in a global workspace and the last
    /// to arrive adds them all (`tile.reduce_splits`): any number of CTAs,
    /// in any number of waves, for the price of the partial tiles' trips
    /// through L2, all of them read by one CTA.
    Workspace,
    /// As `Workspace`, but every split waits for the others and adds a
    /// share of the tile's values, so that the slots are read by all the
    /// tile's CTAs at once and the last reads the summed tile alone
    /// (`tile.reduce_splits` with `spread`): for grids no larger than the
    /// SMs, whose CTAs are all resident at once.
    Spread,
}

named_by_words!(SplitReduce { Cluster => "cluster", Workspace => "workspace", Spread => "spread" } default Cluster);

impl SplitReduce {
    /// Whether the splits add their partial tiles through a global
    /// workspace (`tile.reduce_splits`), one CTA for each split of each
    /// tile, in any schedule.
    pub fn through_workspace(self) -> bool {
        match self {
            SplitReduce::Cluster => false,
            SplitReduce::Workspace | SplitReduce::Spread => true,
        }
    }
}

/// The order in which a stream-K CTA (`tile-stream-k`) runs the pieces of
/// its contiguous range of K iterations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PieceOrder {
    /// Reversed: first the piece that starts the range's last tile, last
    /// the one that ends its first tile, so that every CTA reads K blocks
    /// at one of two offsets at a time and tiles that share an operand
    /// read it about together, as a wave does.
    Reversed,
    /// In the range's order: the CTAs' K offsets spread over the whole K
    /// loop, and an operand shared by the tiles of the last wave must stay
    /// in L2 throughout.
    InOrder,
}

named_by_words!(PieceOrder { Reversed => "reversed", InOrder => "in-order" } default Reversed);

/// One configuration, everything the passes after config selection need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// The kernel computes C^T = B A^T (`tile-swap-operands`): the block
    /// sizes and everything else are the swapped GEMM's, whose rows are
    /// B's and whose output is C stored column-major.
    pub swap_operands: bool,
    /// Rows of the output tile.
    pub block_m: i64,
    /// Columns of the output tile.
    pub block_n: i64,
    /// K per loop iteration.
    pub block_k: i64,
    /// Shared-memory stages of the operands.
    pub stages: i64,
    /// Warps of the plain pipeline: 8 when the accumulator needs two
    /// warpgroups' registers.
    pub num_warps: i64,
    /// The K loop's schedule.
    pub schedule: Schedule,
    /// How the output tile is stored.
    pub epilogue: Epilogue,
    /// Where block-scaled FP8's scales wait for their K step.
    pub scales: Scales,
    /// The dimension along which neighbouring CTAs form a cluster and
    /// multicast the operand tile they share.
    pub cluster: Along,
    /// CTAs per cluster (`DEFAULT_CLUSTER_CTAS` where there is none).
    pub cluster_ctas: i64,
    /// CTAs that share each output tile's K loop (`split_k`); 1
    /// without.
    pub splits: i64,
    /// How the splits add their partial tiles (through a cluster, or a
    /// global workspace for any number of them).
    pub split_reduce: SplitReduce,
    /// Tile rows per group of the plain pipeline's grouped tile order
    /// (`raster_group_for`); 0 for the grid's order.
    pub raster_group: i64,
    /// The persistent loop shares its partial last wave between the CTAs by
    /// K iterations, its pieces run in this order (stream-K,
    /// `stream_k_for`).
    pub stream_k: Option<PieceOrder>,
    /// The consumers store each output tile during the next tile's first K
    /// steps, a chunk a step (`tile-defer-epilogue`,
    /// `deferred_epilogue`).
    pub deferred_epilogue: bool,
    /// K steps between an L2 prefetch of each operand box and its load
    /// (`tile-prefetch-l2`); 0 for none.
    pub l2_prefetch: i64,
}

impl Config {
    /// A `block_m x block_n x block_k` tile with nothing decided: no stages
    /// or warps yet, the plain pipeline storing directly, no scales,
    /// cluster, split, tile order, stream-K or deferred epilogue.
    pub(super) fn neutral((block_m, block_n, block_k): (i64, i64, i64)) -> Config {
        Config {
            swap_operands: false,
            block_m,
            block_n,
            block_k,
            stages: 0,
            num_warps: 0,
            schedule: Schedule::Pipeline,
            epilogue: Epilogue::Global,
            scales: Scales::None,
            cluster: Along::None,
            cluster_ctas: DEFAULT_CLUSTER_CTAS,
            splits: 1,
            split_reduce: SplitReduce::Cluster,
            raster_group: 0,
            stream_k: None,
            deferred_epilogue: false,
            l2_prefetch: 0,
        }
    }

    /// The TMA epilogue's buffer columns where the tile goes
    /// through it in chunks; `None` for a buffer of the whole tile.
    pub fn epilogue_chunk(&self) -> Option<i64> {
        match self.epilogue {
            Epilogue::Tma { columns } if columns < self.block_n => Some(columns),
            _ => None,
        }
    }

    /// Whether one CTA an SM loops over the tiles (`tile-persistent`): every
    /// warp-specialised schedule, except one whose K loop is split through
    /// the workspace, whose grid holds a CTA for every split of every tile.
    pub fn persistent(&self) -> bool {
        self.schedule != Schedule::Pipeline && self.splits == 1
    }

    /// Whether each split of a tile stores its own share of the summed
    /// tile: splits added in shares (`spread`) whose kernel stores the
    /// output directly, for a program without an epilogue (the lowering,
    /// `lower/src/split_k.rs`, stores shares after any element-wise
    /// epilogue, but only a plain GEMM's were measured).
    pub fn stores_shares(&self, problem: &Problem) -> bool {
        self.split_reduce == SplitReduce::Spread && self.epilogue == Epilogue::Global && problem.epilogue.is_plain() && problem.column_group.is_none()
    }

    /// The GEMM this configuration is for, given the program's: the swapped
    /// one (M and N exchanged, C column-major) where it swaps the operands,
    /// which its block sizes, tiles and predicted time are figures of.
    pub fn problem_for(&self, problem: &Problem) -> Problem {
        if self.swap_operands {
            problem.swapped()
        } else {
            *problem
        }
    }

    /// The warpgroups one tile's accumulators are spread over: all of the
    /// plain pipeline's, a warp-specialised kernel's consumers, one of
    /// ping-pong's (each holds whole tiles).
    pub fn tile_warpgroups(&self) -> i64 {
        match self.schedule {
            Schedule::Pipeline => self.num_warps / 4,
            Schedule::WarpSpecialized { consumers } => consumers,
            Schedule::PingPong => 1,
            Schedule::ColumnHalves => 2,
        }
    }

    /// The m64 blocks of rows each warpgroup of the tile holds: the tile's
    /// rows over the warpgroups that split them (consumers sharing each
    /// tile's columns each hold all of its rows). A block-scaled tile's
    /// warpgroup waits for and promotes its blocks one at a time.
    pub fn row_blocks_per_warpgroup(&self) -> i64 {
        let splitting_rows = if self.schedule == Schedule::ColumnHalves { 1 } else { self.tile_warpgroups() };
        (self.block_m / (64 * splitting_rows)).max(1)
    }
}

/// A configuration with the figures that ranked it.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// The configuration.
    pub config: Config,
    /// Output tiles: ceil(M / BM) * ceil(N / BN).
    pub tiles: i64,
    /// Waves of tiles over the SMs: ceil(tiles / SMs).
    pub waves: i64,
    /// CTAs in the last wave (the machine's SM count when it is full).
    pub last_wave: i64,
    /// SMs the grid needs: the fewest that keep the wave count; for a
    /// persistent candidate, the CTAs the launcher starts (`persistent_sms`);
    /// every SM for stream-K.
    pub sms: i64,
    /// Shared memory the configuration uses, in bytes.
    pub smem_bytes: i64,
    /// Why it ranks where it does (the pick's reason, or the first policy or figure it lost on).
    pub reason: String,
}

impl Candidate {
    /// The last wave's use of the SMs, 0 to 1.
    pub fn last_wave_utilisation(&self, machine: &Machine) -> f64 {
        self.last_wave as f64 / machine.sms as f64
    }
}

impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let schedule = match self.schedule {
            Schedule::Pipeline => "pipeline".to_string(),
            Schedule::WarpSpecialized { consumers } => format!("ws{consumers}"),
            Schedule::PingPong => "pingpong".to_string(),
            Schedule::ColumnHalves => "ws2-columns".to_string(),
        };
        let schedule = if self.persistent() { format!("{schedule} persistent") } else { schedule };
        let cluster = match (self.cluster, self.cluster_ctas) {
            (Along::None, _) => String::new(),
            (along, DEFAULT_CLUSTER_CTAS) => format!(" cluster={}", along.word()),
            (along, ctas) => format!(" cluster={} cluster_ctas={ctas}", along.word()),
        };
        let scales = match self.scales {
            Scales::None => String::new(),
            scales => format!(" scales={}", scales.word()),
        };
        let splits = match (self.splits, self.split_reduce) {
            (1, _) => String::new(),
            (splits, SplitReduce::Cluster) => format!(" splits={splits}"),
            (splits, reduce) => format!(" splits={splits} split_reduce={}", reduce.word()),
        };
        let order = if self.raster_group > 0 { format!(" grouped={}", self.raster_group) } else { String::new() };
        let stream_k = self.stream_k.map_or(String::new(), |order| format!(" stream_k={}", order.word()));
        let chunks = self.epilogue_chunk().map_or(String::new(), |n| format!(" epilogue_cols={n}"));
        let deferred = if self.deferred_epilogue { " epilogue_deferred" } else { "" };
        let swapped = if self.swap_operands { " swapped" } else { "" };
        let l2_prefetch = if self.l2_prefetch > 0 { format!(" l2_prefetch={}", self.l2_prefetch) } else { String::new() };
        write!(
            f,
            "{}x{}x{}{swapped} stages={} warps={} {schedule} epilogue={}{chunks}{deferred}{scales}{cluster}{splits}{order}{stream_k}{l2_prefetch}",
            self.block_m,
            self.block_n,
            self.block_k,
            self.stages,
            self.num_warps,
            self.epilogue.word(),
        )
    }
}

impl std::str::FromStr for Config {
    type Err = String;

    /// The configuration [`Config`]'s `Display` writes (and `--explain`
    /// lists, with its ` sms=N` column, which is not part of it):
    /// `128x256x64 stages=4 warps=12 ws2 persistent epilogue=tma epilogue_cols=64`.
    fn from_str(text: &str) -> Result<Config, String> {
        let bad = |what: &str| format!("config '{text}': {what}");
        let mut words = text.split_whitespace();
        let tile: Vec<i64> = words.next().unwrap_or_default().split('x').map(|d| d.parse().map_err(|_| bad("expected BMxBNxBK first"))).collect::<Result<_, _>>()?;
        let [block_m, block_n, block_k] = tile[..] else { return Err(bad("expected BMxBNxBK first")) };
        let mut config = Config::neutral((block_m, block_n, block_k));
        let mut tma = false;
        let mut columns = None;
        for word in words {
            let (key, value) = word.split_once('=').unwrap_or((word, ""));
            let int = || value.parse::<i64>().map_err(|_| bad(&format!("'{key}' takes a number, found '{value}'")));
            let unknown = || bad(&format!("unknown word '{word}'"));
            match key {
                "swapped" => config.swap_operands = true,
                "stages" => config.stages = int()?,
                "warps" => config.num_warps = int()?,
                "pipeline" | "persistent" | "sms" => {}
                "pingpong" => config.schedule = Schedule::PingPong,
                "ws2-columns" => config.schedule = Schedule::ColumnHalves,
                "ws1" | "ws2" => config.schedule = Schedule::WarpSpecialized { consumers: if key == "ws1" { 1 } else { 2 } },
                "epilogue" if value == "tma" || value == "global" => tma = value == "tma",
                "epilogue_cols" => columns = Some(int()?),
                "epilogue_deferred" => config.deferred_epilogue = true,
                "scales" => config.scales = Scales::from_word(value).ok_or_else(unknown)?,
                "cluster" if Along::WORDS.contains(&value) => config.cluster = Along::parse(value),
                "cluster_ctas" => config.cluster_ctas = int()?,
                "splits" => config.splits = int()?,
                "split_reduce" if SplitReduce::WORDS.contains(&value) => config.split_reduce = SplitReduce::parse(value),
                "grouped" => config.raster_group = int()?,
                "stream_k" if PieceOrder::WORDS.contains(&value) => config.stream_k = Some(PieceOrder::parse(value)),
                "l2_prefetch" => config.l2_prefetch = int()?,
                _ => return Err(unknown()),
            }
        }
        if config.stages < 1 || config.num_warps < 1 {
            return Err(bad("needs stages=N and warps=N"));
        }
        check_cluster_ctas(config.cluster_ctas).map_err(|m| bad(&m))?;
        if tma {
            config.epilogue = Epilogue::Tma { columns: columns.unwrap_or(block_n) };
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selection::alternatives::alternatives;
    use crate::selection::rank::rank;
    use crate::selection::testing::{bf16, fp8};

    #[test]
    fn a_config_reads_back_as_it_prints() {
        for p in [bf16(4096, 4096, 4096), bf16(512, 512, 65536), bf16(64, 2112, 7168), fp8(4096, 7168, 16384), bf16(8192, 8192, 8192)] {
            let ranked = rank(&p, &Machine::H100, &Pins::default());
            for c in ranked.iter().chain(&alternatives(&p, &Machine::H100, &Pins::default(), &ranked)) {
                let text = format!("{} sms={}", c.config, c.sms);
                assert_eq!(text.parse::<Config>(), Ok(c.config), "{text}");
                let swapped = Config { swap_operands: true, ..c.config };
                assert_eq!(swapped.to_string().parse::<Config>(), Ok(swapped), "{swapped}");
            }
        }
        assert!("64x16x64 swapped stages=8 warps=4 pipeline epilogue=global".parse::<Config>().is_ok_and(|c| c.swap_operands && c.block_n == 16));
        assert!("128x128 stages=4 warps=4".parse::<Config>().unwrap_err().contains("BMxBNxBK"));
        assert!("128x128x64 stages=4 warps=4 pipeline fast".parse::<Config>().unwrap_err().contains("unknown word 'fast'"));
        assert!("128x128x128 stages=4 warps=4 pipeline scales=copied".parse::<Config>().unwrap_err().contains("unknown word 'scales=copied'"));
        assert!("128x128x64 pipeline".parse::<Config>().unwrap_err().contains("stages"));
        let four = "128x160x64 stages=5 warps=12 ws2 persistent epilogue=tma cluster=n cluster_ctas=4";
        assert_eq!(four.parse::<Config>().map(|c| (c.cluster, c.cluster_ctas, c.to_string())), Ok((Along::N, 4, four.to_string())));
        assert!("128x160x64 stages=5 warps=12 ws2 cluster=n cluster_ctas=3".parse::<Config>().unwrap_err().contains("not 3"));
        let ahead = "64x64x128 stages=8 warps=4 pipeline epilogue=tma scales=staged splits=2 l2_prefetch=4";
        assert_eq!(ahead.parse::<Config>().map(|c| (c.l2_prefetch, c.to_string())), Ok((4, ahead.to_string())));
    }

    /// A swapped configuration's figures are the swapped GEMM's.
    #[test]
    fn a_swapped_config_is_for_the_swapped_gemm() {
        let p = bf16(6, 3328, 4096);
        let swapped: Config = "64x16x64 swapped stages=8 warps=4 pipeline epilogue=global".parse().unwrap();
        assert_eq!(swapped.problem_for(&p), p.swapped());
        assert_eq!(Config { swap_operands: false, ..swapped }.problem_for(&p), p);
    }

    #[test]
    fn schedule_words_read_back() {
        for &word in Schedule::WORDS {
            assert_eq!(Schedule::from_word(word, 2).map(Schedule::word), Some(word));
        }
        assert_eq!(Schedule::from_word("warp_specialized", 1), Some(Schedule::WarpSpecialized { consumers: 1 }));
        assert_eq!(Schedule::from_word("cooperative", 2), None);
    }

    /// Whole-width promotion: a configuration names no `mma_n` (column
    /// halves stay a knob of `tile.config` and `tile-assign-layouts`).
    #[test]
    fn a_config_promotes_whole_width() {
        let err = "128x176x128 stages=4 warps=12 ws2 persistent epilogue=tma mma_n=88".parse::<Config>().unwrap_err();
        assert!(err.contains("unknown word 'mma_n=88'"), "{err}");
    }
}
