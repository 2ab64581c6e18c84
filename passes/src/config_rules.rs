//! The rules config selection follows, as pure functions: a problem shape and
//! a machine in, candidate configurations ranked best first out, each with
//! the figures that ranked it (waves, last-wave utilisation, shared memory,
//! stages) and the reason it stands where it does. `tile-select-config`
//! (transforms/select_config.rs) binds the winner into the IR.
//!
//! The rules, in order (the measurements behind each are in
//! docs/evidence.md, under "config_rules.rs, rule N"):
//! 1. Tile shapes. Block M is 64, 128 or 256; block N any multiple of 16 up
//!    to 256; the FP32 accumulators fit two warpgroups'
//!    registers: the running result at most 128 a thread (BM * BN <= 2 *
//!    128 * 128) and, with block-scaled FP8's partial product of the m64
//!    row block being promoted (BN / 2 more), at most 192 when each
//!    warpgroup holds one m64 row block (128x192 over two), else 144 (at
//!    168, 256x112 over two spilled). One warpgroup takes
//!    the tile when all of it fits 128 a thread (4 warps, else 8, each
//!    warpgroup an m64 block of rows or more). A
//!    block-scaled tile whose warpgroups each hold more than one m64 block
//!    (256x96 over two) is ranked last, as a warp-specialised
//!    alternative, unless block M is pinned: over a long K it has fewer
//!    stages and each consumer promotes its two blocks in series; it gains
//!    only over a short K. Block K is 128 bytes of K (64 BF16,
//!    128 FP8): one row of the 128-byte swizzle, and FP8's scale
//!    granularity. A
//!    block-scaled dot whose tiles of B need not start a 128-row scale
//!    block (the program gives it the offset into the first) takes block N
//!    128 unless, over more than two waves, the best tile of another width
//!    takes at least 1% less time by waves x tiles an SM runs at once x
//!    tile area: its K loop is then lowered once per offset. Over fewer
//!    than 32 K blocks a width whose tiles span three scale blocks (176,
//!    eight loop copies) is left out: a short K loop does not pay for its
//!    copies, and a width spanning two ran faster there. A wider tile
//!    gains where it covers N in fewer tiles and loses where the narrower
//!    tiles fill more SMs. Where the best 128-wide tile
//!    runs in one wave and tiles half a scale block wide (64 columns,
//!    never across two blocks) would too, with more of them, block N is
//!    64: more CTAs stream B at once (not where the narrower tile would
//!    take a second wave).
//! 2. Fewest waves: ceil(tiles / SMs), where tiles = ceil(M/BM) * ceil(N/BN);
//!    in the plain pipeline, ceil(tiles / (SMs * R)) where R CTAs of the
//!    tile fit one SM's shared memory and registers and make more than two
//!    such waves. Rule 6 fills shared memory unless K is short, so R > 1
//!    mostly means a short K over many tiles, where one CTA's prologue
//!    and epilogue run beside the other's main loop; over two waves the
//!    smaller tile measured slower, hence more than two waves.
//!    Block-scaled FP8 CTAs that are more than the SMs
//!    make one wave where R to an SM hold them all; a pipelined pick over
//!    two waves one to an SM that would make one wave two to an SM, each
//!    with the stages that fit half an SM (at least 3), runs so (one GEMM,
//!    not batched or grouped): so it measured faster, and slower where the
//!    pairs take two or more waves.
//! 3. Fullest last wave: the SMs the last wave keeps busy, tiles - (waves -
//!    1) * SMs * R over R (all SMs when it divides).
//! 4. Least padded work: tiles * BM * BN, the elements computed including
//!    those past M and N.
//! 5. Widest N, then narrowest M: a wider tile re-reads A fewer times.
//! 6. Stages: the most that fit the shared-memory budget, at most 8 (16
//!    under rule 15) and at most the number of K blocks (more buffers than
//!    K blocks never fill), except in a persistent kernel over more than 2
//!    waves of tiles of several K blocks, whose producer fills them with
//!    the next tile's (`buffers_filled`). More than 8 in general measured no
//!    consistent gain at the picks they would change.
//! 7. Schedule: the plain software pipeline; warp specialisation (one or two
//!    consumers, persistent, grouped tile order) is ranked as an alternative,
//!    since with the same tile it measured below the plain pipeline.
//!    Block-scaled FP8 with
//!    a long K (at least 4096, 32 scale blocks) is the exception: there the
//!    warp-specialised tile is the pick, since each block's wgmma is waited
//!    for before its promotion and a second, independent consumer keeps the
//!    tensor cores busy meanwhile, and so is it
//!    over more than 2 waves of tiles, where the persistent producer hides
//!    each tile's prologue behind the last one's work (over 1 or 2 waves
//!    there is too little to hide). A
//!    64-row pick over more than 2 waves grows to 128 rows over two
//!    consumers, each promoting beside the other's wgmma. Over exactly 2
//!    waves a tile of 128 rows goes to two consumers too, a 64-row one
//!    stays pipelined (one consumer has no neighbour to overlap), unless
//!    the K loop's trip count is data (a masked
//!    grouped GEMM, whose tiles past an expert's rows run no K step) over
//!    more than 4 waves of tiles: a persistent CTA's static share of many
//!    tiles then holds data-dependent work, which the tiles grid balances
//!    in hardware. BF16 with at most 32 blocks of K over more
//!    than 2 waves is another, since its TMA-store epilogue overlaps the
//!    next tile's main loop (with a longer K the pipeline's tiles amortise
//!    their prologue and epilogue themselves); so is BF16 over at most 64
//!    K blocks where rule 8's chunks give the warp-specialised tile a
//!    stage more, and whatever K, from 2 waves on, where two
//!    consumers share the tile and store it by TMA: they leave no wgmma
//!    group in flight, so the producer gets each stage back an iteration
//!    sooner. Over at most 8 K blocks the 128x256 tile stays
//!    whole: with rule 8's fourth stage and rule 10's clusters it ran
//!    faster than 128x128 with one consumer. A
//!    tile at most 32 columns wide with a
//!    long K is the last exception: each K step's wgmma (64x16 or 64x32)
//!    is too short for one warpgroup that both waits on it and issues the
//!    next loads, and a dedicated producer hides the issue (64-column
//!    tiles have no such need). Ping-pong consumers (two taking turns at
//!    whole tiles of the best tile one warpgroup holds) are ranked as an
//!    alternative: where a tile two warpgroups share fits, they measured
//!    below it.
//!    Block-scaled FP8 at most 128 rows tall with at least 12 K blocks,
//!    whose pick is warp-specialised over at least 2 waves, takes them
//!    instead: one consumer's promotion overlaps the other's tile; with a
//!    short K or over one wave, where a CTA has one tile, there is nothing
//!    to take turns at.
//! 8. Epilogue: the TMA store (measured faster in both schedules) when
//!    C's rows are
//!    16-byte aligned (N * 2 bytes a multiple of 16), except in a
//!    warp-specialised tile at most 32 columns wide, where the store of a
//!    few kilobytes is no work to hide and its round trip through shared
//!    memory costs more than it saves; direct global stores otherwise.
//!    The pick with direct stores and the stage its output tile took is
//!    ranked as an alternative. A BF16 warp-specialised tile whose output,
//!    stored through a buffer half as wide in two chunks, leaves room for
//!    one more stage takes it: its consumers otherwise wait for data.
//! 9. SMs: the fewest that keep the wave count, ceil(tiles / waves); for a
//!    persistent candidate in 2-CTA clusters, counted in tile pairs, since
//!    the launcher starts whole clusters (the manifest's `wave_tile`).
//! 10. Clusters: pairs of CTAs that share an operand tile and load it once
//!     (TMA multicast), only where it is legal and there is more than one
//!     wave, as DeepGEMM does: along M (sharing B) when the tiles along M
//!     are even, else along N (sharing A) when those are, preferring the
//!     pair that shares the larger operand tile; an odd count would leave
//!     half a pair idle. The pick with clusters is ranked as an alternative,
//!     not picked: on the shapes of more than one wave it measured no
//!     better, on balance, than the same kernel without, except a BF16 pick
//!     that rule 7 warp-specialises for a short K over many waves, which
//!     takes its clusters (faster in every run), and
//!     a block-scaled FP8 pick that two
//!     consumers share over at least 32 K blocks and 3 waves (clusters
//!     along M, B multicast), which gained on average; with 16 K blocks or
//!     fewer such clusters lost.
//! 11. Scales (block-scaled FP8): copied into shared memory with their
//!     stage and read from there after its wait, unless in the plain
//!     pipeline that costs more than one stage or a CTA an SM holds at
//!     once; then each thread loads its scales from global memory one K
//!     step ahead. Staging was faster wherever it cost no stage, slower
//!     where it cost a pipeline a stage or an SM its second CTA; with A's
//!     scales M-major a prefetched load misses L1 every K block, so giving
//!     up one stage for staging wins. Staged
//!     M-major row scales are a
//!     flat TMA box of 32 rows more than the tile's (128 bytes a stage),
//!     which [`SmemLayout::smem_bytes`] counts.
//! 12. Split-K: where rule 7 would run a tile at most 32 columns wide over
//!     a long K in a single wave, two CTAs of a cluster share a tile twice
//!     as large instead, each running half the K loop in the plain
//!     pipeline, and sum their partial tiles in shared memory
//!     (`tile-split-k`): as many CTAs, each with half the K steps and twice
//!     the work per step. The tile grows along M where the pick's tiles
//!     cover M in more than one row without padding, else along N. More
//!     splits of larger tiles ran slower than two.
//!     Where the best tile leaves more than half the SMs idle (block-scaled
//!     FP8's 64x128 at M = 64 and 128), the same tile is split over the
//!     most CTAs, 2 to 4, that fit (clusters of 3 and 4 on at most 4/5 of
//!     the SMs: each cluster must fit one GPC) with each split's K loop
//!     under 32 blocks (a longer one keeps the one-consumer kernel, which
//!     beat the split). The unsplit pick is
//!     ranked next. Block-scaled tiles over more than one row of tiles (so
//!     that each tile of B serves several) are split into pairs instead:
//!     the most CTAs that run at once two to an SM (twice the capacity
//!     above), each with the stages that fit half an SM, where they are
//!     more than the SMs: two CTAs' promotions then overlap on each SM.
//!     With one row of tiles such pairs lost.
//! 13. Tile order: the plain pipeline over more than one wave of tiles,
//!     with more rows of tiles than a group and an A larger than the L2
//!     cache, takes its tiles in grouped order (`tile-rasterize`: groups of
//!     8 tile rows, down M, then across N) instead of the grid's column by
//!     column, in which the CTAs running at once cover every row of A and
//!     so stream all of it from memory for each column of tiles. With an A
//!     that L2 holds the column order already hits L2, and the grouped
//!     order measured slower.
//!     Persistent kernels keep their own grouped loop; clustered and split
//!     candidates their grid, and so does a masked grouped GEMM (each
//!     expert holds a few rows of tiles).
//! 14. Whole-width promotion: a block-scaled tile's K block goes out as one
//!     wgmma group as wide as the tile, promoted once it completes; the
//!     other consumer's group keeps the tensor cores busy meanwhile.
//!     Column halves (`mma_n`: two commit groups, the first promoted while
//!     the second runs) stay a knob of `tile.config` and
//!     `tile-assign-layouts`, not a pick: since the warpgroup index became
//!     warp-uniform, whole width ran faster than halves at every pick
//!     measured.
//! 15. Deep pairs: a BF16 pick of one wave over exactly two rows of 64-row
//!     tiles at most 64 columns wide, over at least 112 K blocks, runs
//!     warp-specialised with one consumer, both rows of tiles in 2-CTA
//!     clusters along M (each B tile loaded once for the pair) and the most
//!     stages that fit, past rule 6's 8 up to [`STAGES_LIMIT`]: cuBLAS's
//!     form for such shapes (`deep_paired_rows` says why).
//! 16. Tall shared tiles: a BF16 128x256 pick over at least 6 waves that
//!     two consumers share is shared as 256x128 instead, each consumer
//!     holding 128x128 (cuBLAS's tile for such shapes), where that tile
//!     takes as many waves; rule 10 then pairs its CTAs along N, which
//!     multicasts A's 256 rows. Over fewer waves it gained nothing.
//! 17. Stream-K: a BF16 pick that two consumers share, persistent and
//!     unclustered, whose last wave keeps at most 60% of the SMs busy, over
//!     at least 64 K blocks, shares that wave's tiles between all SMs by K
//!     iterations (`tile-stream-k`, pieces in order), each tile's pieces
//!     summed by the CTA that runs its first: the idle SMs of a thin last
//!     wave take work; with a fuller last wave or a shorter K the hand-over
//!     costs more than it saves (`stream_k_for`).
//! 18. Deferred epilogue: a BF16 pick that two consumers share, persistent,
//!     unclustered and without stream-K, at least 128 columns wide, over at
//!     least 4 waves and 64 K blocks, stores each tile during the next
//!     tile's first K steps, 64 columns a step (`tile-defer-epilogue`), so
//!     that the tensor cores no longer idle while the consumers store; with
//!     one chunk or in clusters over a short K it does not pay
//!     (`deferred_epilogue`).

use crate::cluster::{Along, CLUSTER_SIZE};
use crate::words::named_by_words;
use tilec_target::fewest_keeping_turns;
use tilec_dialects::ir::{ElemType, TileType};
use tilec_dialects::nv::memory::flat_box_rows_of;
use tilec_dialects::tile::dot::{blocks_covering, blocks_from_grid_offsets, SCALE_BLOCK_N};
use tilec_dialects::tile::reduce::MAX_SPLITS as SUM_SPLITS;
use tilec_target::Target;
use std::cmp::Ordering;
use std::fmt;

/// The operand precision, which fixes block K and the bytes per element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// BF16 operands, FP32 accumulation.
    Bf16,
    /// FP8 operands with per-128-element FP32 scales (SA per row, SB per
    /// 128x128 block of B).
    Fp8BlockScaled,
}

impl Precision {
    /// Bytes per operand element.
    pub fn operand_bytes(self) -> i64 {
        match self {
            Precision::Bf16 => 2,
            Precision::Fp8BlockScaled => 1,
        }
    }

    /// 128 bytes of K: a full 128-byte swizzle row.
    pub fn block_k(self) -> i64 {
        128 / self.operand_bytes()
    }

    /// FP32 accumulator registers a thread holds when `warpgroups` share a
    /// `bm x bn` tile: its share of the running result, and the total with
    /// block-scaled FP8's partial product, which is promoted one m64 row
    /// block at a time (64 x bn over a warpgroup's 128 threads).
    pub fn accumulator_registers(self, bm: i64, bn: i64, warpgroups: i64) -> AccumulatorRegisters {
        let running = bm * bn / (warpgroups * 128);
        let total = match self {
            Precision::Bf16 => running,
            Precision::Fp8BlockScaled => running + bn / 2,
        };
        AccumulatorRegisters { running, total }
    }
}

/// FP32 accumulator registers a thread holds (rule 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccumulatorRegisters {
    /// Its share of the running result.
    pub running: i64,
    /// With block-scaled FP8's partial product of one row block.
    pub total: i64,
}

impl AccumulatorRegisters {
    /// Within what a thread of a warpgroup that shares a tile may hold: a
    /// running result of at most 128 registers (the widest measured tiles,
    /// 128x256 and 256x128 over two warpgroups) and, with the partial, at
    /// most 192 of a consumer's 232 where the warpgroup holds one m64 row
    /// block (its partial as large as its running result), else 144; the
    /// rest go to addresses, loop state and scales. 128x192 FP8 tiles over
    /// two consumers fit since the TMA epilogue's shared-memory addresses
    /// stopped taking a register each; with two row blocks to address,
    /// 256x112 over two (112 running, 56 partial) spills and 256x96 (96
    /// and 48) does not
    /// (measured: docs/evidence.md, config_rules.rs, AccumulatorRegisters::fit_shared).
    pub fn fit_shared(self) -> bool {
        let one_row_block = self.total - self.running == self.running;
        self.running <= 128 && self.total <= if one_row_block { 192 } else { 144 }
    }

    /// Light enough for a warpgroup alone: at most 128 in all. A tile one
    /// warpgroup would hold with more goes to two, which overlap one's
    /// promotion with the other's wgmma.
    pub fn fit_alone(self) -> bool {
        self.total <= 128
    }
}

/// A GEMM's shape: C (M x N) = A (M x K) * B^T (N x K).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Problem {
    /// Rows of A and C.
    pub m: i64,
    /// Columns of C (rows of B).
    pub n: i64,
    /// The reduction dimension.
    pub k: i64,
    /// The operands' precision.
    pub precision: Precision,
    /// The kernel must serve any N, not just this one: rule 8 cannot count
    /// on aligned rows of C.
    pub any_n: bool,
    /// Neighbouring tiles read the same operand tiles (one GEMM, not a
    /// batch or a grouped GEMM whose operands are chosen by data), so
    /// rule 10 may pair them into clusters.
    pub clusterable: bool,
    /// The K loop's trip count is read from data (a masked grouped GEMM's
    /// row counts), so tiles differ in work: rule 7's exception is off.
    pub varying_k: bool,
    /// Rows of the tile of B's block scales a block-scaled dot reads when
    /// its tiles need not start a scale block (the dot takes the offset
    /// into the first, and block N is not a multiple of 128); `None` when
    /// they do, one per 128 of the tile's rows.
    pub b_scale_rows: Option<i64>,
    /// The dot reads A from registers, which a consumer holds beside its
    /// accumulators: no ping-pong consumers (rule 7), each of which would
    /// hold a whole tile's.
    pub a_in_registers: bool,
    /// B is given N x K (`transpose_b`): a tile's columns are rows of B's
    /// stage, which consumers can share by rows ([`Schedule::ColumnHalves`]).
    pub transpose_b: bool,
    /// A's row scales are a column of a column-major tensor (stored
    /// M-major): staged, each stage's is one flat TMA box, which holds
    /// [`flat_box_rows_of`] rows where it can.
    pub a_scales_by_run: bool,
    /// The epilogue reduces or stores one value a group of this many
    /// columns (an FP8 quantisation's 1x128 scales), which only a tile that
    /// holds whole groups can: block N a multiple of it.
    pub column_group: Option<i64>,
    /// Bytes of an element of C (2 for BF16, 1 for an FP8 output): TMA
    /// stores need rows of a multiple of 16 bytes.
    pub output_bytes: i64,
    /// What the program's epilogue (a bias, an activation) adds to each
    /// output element, which the cost model charges per tile.
    pub epilogue: crate::cost_model::epilogue::EpilogueWork,
}

impl Problem {
    /// K blocks of the precision's block K (rule 1's, when not pinned).
    fn k_blocks(&self) -> i64 {
        ceil_div(self.k, self.precision.block_k())
    }
}

/// What the kernel may use of the GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Machine {
    /// Streaming multiprocessors.
    pub sms: i64,
    /// Shared memory one CTA may use, in bytes.
    pub smem_bytes: i64,
    /// Shared memory of one SM, which its co-resident CTAs share.
    pub sm_smem_bytes: i64,
    /// The L2 cache, in bytes.
    pub l2_bytes: i64,
    /// 32-bit registers of one SM.
    pub sm_registers: i64,
    /// The most registers a thread may hold.
    pub max_thread_registers: i64,
}

impl Machine {
    /// The H100 SXM's ([`Target::H100`]).
    pub const H100: Machine = Machine::of(&Target::H100);

    /// What a kernel may use of `target`.
    pub const fn of(target: &Target) -> Machine {
        Machine {
            sms: target.sms as i64,
            smem_bytes: target.smem_per_cta_bytes as i64,
            sm_smem_bytes: target.smem_per_sm_bytes as i64,
            l2_bytes: target.l2_bytes as i64,
            sm_registers: target.registers_per_sm as i64,
            max_thread_registers: target.max_registers_per_thread as i64,
        }
    }

    /// CTAs using `smem_bytes` each that one SM holds at once (the hardware
    /// keeps 1 KiB of each CTA's shared memory for itself).
    pub fn ctas_per_sm(&self, smem_bytes: i64) -> i64 {
        self.sm_smem_bytes / (smem_bytes + CTA_RESERVED_SMEM_BYTES)
    }

    /// CTAs of `warps` warps that one SM's registers hold at once, each
    /// thread holding `accumulators` registers of accumulators and about
    /// 40 more (addresses, loop state, scales; what ptxas allocated
    /// besides the accumulators of the 128-register FP8 tiles).
    pub fn ctas_per_sm_by_registers(&self, warps: i64, accumulators: i64) -> i64 {
        let per_thread = (accumulators + THREAD_REGISTERS_BESIDES_ACCUMULATORS).min(self.max_thread_registers);
        self.sm_registers / (32 * warps * ceil_div(per_thread, 8) * 8)
    }

    /// The same machine with each CTA held to half an SM's shared memory,
    /// so that two CTAs share each SM (rules 2 and 12's pairs): rule 6 then
    /// fills that half.
    pub fn paired(&self) -> Machine {
        Machine { smem_bytes: self.sm_smem_bytes / 2 - CTA_RESERVED_SMEM_BYTES, ..*self }
    }
}

/// Registers a thread holds besides its accumulators (rule 2's estimate).
const THREAD_REGISTERS_BESIDES_ACCUMULATORS: i64 = 40;

/// Shared memory an SM sets aside for each resident CTA on sm_90.
const CTA_RESERVED_SMEM_BYTES: i64 = 1024;

/// Where block-scaled FP8's scales wait for the K step that applies them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scales {
    /// No scales (BF16).
    None,
    /// Copied into shared memory with their stage (`nv.copy_async`).
    Staged,
    /// Loaded from global memory into registers one K step ahead.
    Prefetched,
}

impl Scales {
    /// The option value `tile-pipeline` and `tile-warp-specialize` take
    /// (`staged`, `prefetched`); `none` without scales.
    pub fn word(self) -> &'static str {
        match self {
            Scales::None => "none",
            Scales::Staged => "staged",
            Scales::Prefetched => "prefetched",
        }
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
        /// goes through one after another (rule 8).
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
    /// A fixed cluster: every candidate pairs its CTAs along this dimension
    /// (`Along::None`: none does), instead of rule 10's alternative.
    pub cluster: Option<Along>,
}

impl std::fmt::Display for Pins {
    /// `BLOCK_M=256 BLOCK_N=256`, or `none`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pinned: Vec<String> = [("BLOCK_M", self.block_m), ("BLOCK_N", self.block_n), ("BLOCK_K", self.block_k), ("STAGES", self.stages)]
            .iter()
            .filter_map(|(name, v)| v.map(|v| format!("{name}={v}")))
            .chain(self.cluster.map(|along| format!("cluster={}", along.word())))
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
    /// through L2.
    Workspace,
}

named_by_words!(SplitReduce { Cluster => "cluster", Workspace => "workspace" } default Cluster);

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
    /// The dimension along which two CTAs form a cluster and multicast the
    /// operand tile they share.
    pub cluster: Along,
    /// CTAs that share each output tile's K loop (split-K, rule 12); 1
    /// without.
    pub splits: i64,
    /// How the splits add their partial tiles (through a cluster, or a
    /// global workspace for any number of them).
    pub split_reduce: SplitReduce,
    /// Tile rows per group of the plain pipeline's grouped tile order
    /// (rule 13); 0 for the grid's order.
    pub raster_group: i64,
    /// The persistent loop shares its partial last wave between the CTAs by
    /// K iterations, its pieces run in this order (stream-K, rule 17).
    pub stream_k: Option<PieceOrder>,
    /// The consumers store each output tile during the next tile's first K
    /// steps, a chunk a step (`tile-defer-epilogue`, rule 18).
    pub deferred_epilogue: bool,
}

/// Rule 1: the narrowest block-scaled tile [`promotion_work`] counts at
/// less than its area.
const WIDE_TILE_MIN_N: i64 = 176;

/// Rule 1: the share of its area a wide block-scaled tile counts at in
/// [`promotion_work`], in percent.
const WIDE_TILE_WORK_PERCENT: i64 = 92;

/// Rule 1: the fewest K blocks over which a block-scaled width whose tiles
/// span three of B's scale blocks (block N 176) is a candidate.
const THREE_BLOCK_SPAN_MIN_K_BLOCKS: i64 = 32;

impl Config {
    /// A `block_m x block_n x block_k` tile with nothing decided: no stages
    /// or warps yet, the plain pipeline storing directly, no scales,
    /// cluster, split, tile order, stream-K or deferred epilogue.
    fn neutral((block_m, block_n, block_k): (i64, i64, i64)) -> Config {
        Config {
            block_m,
            block_n,
            block_k,
            stages: 0,
            num_warps: 0,
            schedule: Schedule::Pipeline,
            epilogue: Epilogue::Global,
            scales: Scales::None,
            cluster: Along::None,
            splits: 1,
            split_reduce: SplitReduce::Cluster,
            raster_group: 0,
            stream_k: None,
            deferred_epilogue: false,
        }
    }

    /// What the configuration lays out in shared memory besides its stages.
    pub fn smem_layout(&self) -> SmemLayout {
        let splits = match self.split_reduce {
            SplitReduce::Cluster => self.splits,
            SplitReduce::Workspace => 1,
        };
        SmemLayout { tile: (self.block_m, self.block_n, self.block_k), epilogue: self.epilogue, scales: self.scales, schedule: self.schedule, splits }
    }

    /// Rule 8: the TMA epilogue's buffer columns where the tile goes
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
    /// Why it ranks where it does (the pick's reason, or the first rule it lost on).
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
        let cluster = match self.cluster {
            Along::None => String::new(),
            along => format!(" cluster={}", along.word()),
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
        write!(
            f,
            "{}x{}x{} stages={} warps={} {schedule} epilogue={}{chunks}{deferred}{scales}{cluster}{splits}{order}{stream_k}",
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
            match key {
                "stages" => config.stages = int()?,
                "warps" => config.num_warps = int()?,
                "pipeline" | "persistent" | "sms" => {}
                "pingpong" => config.schedule = Schedule::PingPong,
                "ws2-columns" => config.schedule = Schedule::ColumnHalves,
                "ws1" | "ws2" => config.schedule = Schedule::WarpSpecialized { consumers: if key == "ws1" { 1 } else { 2 } },
                "epilogue" if value == "tma" || value == "global" => tma = value == "tma",
                "epilogue_cols" => columns = Some(int()?),
                "epilogue_deferred" => config.deferred_epilogue = true,
                "scales" if value == "staged" => config.scales = Scales::Staged,
                "scales" if value == "prefetched" => config.scales = Scales::Prefetched,
                "cluster" if Along::WORDS.contains(&value) => config.cluster = Along::parse(value),
                "splits" => config.splits = int()?,
                "split_reduce" if SplitReduce::WORDS.contains(&value) => config.split_reduce = SplitReduce::parse(value),
                "grouped" => config.raster_group = int()?,
                "stream_k" if PieceOrder::WORDS.contains(&value) => config.stream_k = Some(PieceOrder::parse(value)),
                _ => return Err(bad(&format!("unknown word '{word}'"))),
            }
        }
        if config.stages < 1 || config.num_warps < 1 {
            return Err(bad("needs stages=N and warps=N"));
        }
        if tma {
            config.epilogue = Epilogue::Tma { columns: columns.unwrap_or(block_n) };
        }
        Ok(config)
    }
}

/// The block M values rule 1 allows.
pub const BLOCK_MS: [i64; 3] = [64, 128, 256];
/// The widest block N (one wgmma's N).
pub const MAX_BLOCK_N: i64 = 256;
/// wgmma's N step for BF16/FP8 operands with an FP32 accumulator, and the
/// granularity that keeps a row of C 32-byte aligned.
pub const BLOCK_N_STEP: i64 = 16;
/// The most stages considered (rule 6), except by rule 15.
pub const MAX_STAGES: i64 = 8;
/// The most stages the passes build, and rule 15 considers.
pub const STAGES_LIMIT: i64 = 16;
/// Bytes of one mbarrier.
const MBARRIER_BYTES: i64 = 8;

/// The lowering places a buffer that TMA or wgmma reads on a 1024-byte
/// boundary (where a 128-byte swizzle pattern repeats).
const BUFFER_ALIGN: i64 = 1024;

/// ceil(a / b) for positive b (shared with the cost model).
pub(crate) fn ceil_div(a: i64, b: i64) -> i64 {
    (a + b - 1) / b
}

/// What a configuration lays out in shared memory besides its stage count.
#[derive(Clone, Copy, Debug)]
pub struct SmemLayout {
    /// BLOCK_M, BLOCK_N and BLOCK_K.
    pub tile: (i64, i64, i64),
    /// The output tile's buffer, if any (rule 8).
    pub epilogue: Epilogue,
    /// Where block-scaled FP8's scales wait (rule 11).
    pub scales: Scales,
    /// The barriers a stage takes, and the output tiles (rule 7).
    pub schedule: Schedule,
    /// The CTAs that share a tile's K loop, and so its f32 partial (rule 12).
    pub splits: i64,
}

impl SmemLayout {
    /// Shared memory with `stages` stages, laid out as the lowering lays it
    /// out: the staged operand tiles (and staged scales: A's per row and B's
    /// per 128 columns, 4 bytes each, in small buffers packed after them),
    /// split-K's f32 partial tile and the TMA epilogue's output tile (one per
    /// consumer when ping-pong consumers each hold a whole tile), each on the
    /// next 1024-byte boundary, then the mbarriers: a full barrier per stage,
    /// an empty one too when a producer warpgroup feeds consumers, and the
    /// ping-pong consumers' turns.
    pub fn smem_bytes(&self, problem: &Problem, stages: i64) -> i64 {
        let SmemLayout { tile: (block_m, block_n, block_k), epilogue, scales, schedule, splits } = *self;
        // A tile that starts a scale block reads only the blocks it covers
        // (tile-canonicalize narrows the program's window to them).
        let b_scale_rows = match problem.b_scale_rows {
            Some(rows) if block_n % SCALE_BLOCK_N != 0 => rows,
            _ => blocks_covering(block_n),
        };
        let a_scales = TileType { shape: vec![block_m, 1], elem: ElemType::F32, layout: None };
        let a_scale_rows = flat_box_rows_of(&a_scales, problem.a_scales_by_run).unwrap_or(block_m);
        let scale_bytes = if scales == Scales::Staged { 4 * (a_scale_rows + b_scale_rows) } else { 0 };
        let staged = stages * ((block_m + block_n) * block_k * problem.precision.operand_bytes() + scale_bytes);
        let (output_tiles, barriers) = match schedule {
            Schedule::Pipeline => (1, stages),
            Schedule::WarpSpecialized { .. } => (1, 2 * stages),
            Schedule::PingPong => (2, 2 * stages + 2),
            // Each consumer's half of the tile, `columns` of it at a time.
            Schedule::ColumnHalves => (2, 2 * stages),
        };
        let partial = if splits > 1 { block_m * block_n * 4 } else { 0 };
        let output = match epilogue {
            Epilogue::Tma { columns } => output_tiles * block_m * columns * i64::from(OUTPUT_ELEM_BITS / 8),
            Epilogue::Global => 0,
        };
        let buffers = [partial, output].into_iter().filter(|&bytes| bytes > 0).fold(staged, |end, bytes| ceil_div(end, BUFFER_ALIGN) * BUFFER_ALIGN + bytes);
        // The barriers start on an 8-byte boundary: after an odd number of
        // staged block scales (3 a stage) the lowering pads 4 bytes.
        ceil_div(buffers, MBARRIER_BYTES) * MBARRIER_BYTES + barriers * MBARRIER_BYTES
    }

    /// Rule 6: the most stages that fit, at most `filled` (the pinned
    /// count, if it fits), or `None` when not even one does.
    fn most_stages(&self, problem: &Problem, machine: &Machine, pins: &Pins, filled: i64) -> Option<i64> {
        match pins.stages {
            Some(s) => Some(s).filter(|&s| self.smem_bytes(problem, s) <= machine.smem_bytes),
            None => self.stages_that_fit(problem, machine, MAX_STAGES, filled),
        }
    }

    /// The most stages, at most `most` and at most the `filled` buffers a
    /// producer ever fills at once ([`buffers_filled`]), whose shared
    /// memory fits.
    fn stages_that_fit(&self, problem: &Problem, machine: &Machine, most: i64, filled: i64) -> Option<i64> {
        (1..=filled.clamp(1, most)).rev().find(|&s| self.smem_bytes(problem, s) <= machine.smem_bytes)
    }

    /// The same layout with the scales waiting in `scales`.
    fn with_scales(self, scales: Scales) -> SmemLayout {
        SmemLayout { scales, ..self }
    }
}

/// Rules 6 and 11: the stages, and where block-scaled FP8's scales wait.
/// They are staged with the operands unless, in the plain pipeline, that
/// costs more than one stage or a CTA an SM holds at once; then
/// prefetched. A thread's prefetched scale load misses L1 each K block
/// when A's scales are M-major (a K block's are one line, the next block's
/// another), which costs more than the one stage staging takes
/// (measured: docs/evidence.md, config_rules.rs, stages_and_scales).
/// `layout`'s own scales are not read: they are what this chooses.
fn stages_and_scales(problem: &Problem, machine: &Machine, pins: &Pins, layout: SmemLayout, filled: i64) -> Option<(i64, Scales)> {
    if problem.precision != Precision::Fp8BlockScaled {
        return layout.with_scales(Scales::None).most_stages(problem, machine, pins, filled).map(|s| (s, Scales::None));
    }
    let staged = layout.with_scales(Scales::Staged).most_stages(problem, machine, pins, filled);
    if layout.schedule != Schedule::Pipeline {
        return staged.map(|s| (s, Scales::Staged));
    }
    let prefetched = layout.with_scales(Scales::Prefetched).most_stages(problem, machine, pins, filled)?;
    let resident = |stages: i64, scales: Scales| machine.ctas_per_sm(layout.with_scales(scales).smem_bytes(problem, stages));
    let keeps_residency = |s: &i64| resident(*s, Scales::Staged) >= resident(prefetched, Scales::Prefetched);
    let fewest = if pins.stages.is_some() { prefetched } else { (prefetched - 1).max(1) };
    match staged.and_then(|most| (fewest..=most.min(prefetched)).rev().find(keeps_residency)) {
        Some(s) => Some((s, Scales::Staged)),
        None => Some((prefetched, Scales::Prefetched)),
    }
}

/// Rule 6's cap: the stage buffers a producer ever fills at once. In the
/// plain pipeline, and in a persistent kernel whose CTAs take at most
/// [`RUN_AHEAD_MIN_WAVES`] waves of tiles or whose tiles take one K block,
/// a tile's K blocks; otherwise the persistent producer runs on into the
/// next tile's K blocks and fills any number. Running ahead pays over many
/// waves of tiles of a few K blocks; over few waves, or with one K block a
/// tile, the extra stages only cost
/// (measured: docs/evidence.md, config_rules.rs, buffers_filled).
fn buffers_filled(problem: &Problem, machine: &Machine, schedule: Schedule, block_k: i64, tiles: i64, splits: i64) -> i64 {
    let k_blocks = ceil_div(problem.k, block_k);
    let runs_ahead = schedule != Schedule::Pipeline && k_blocks > 1 && tiles * splits > RUN_AHEAD_MIN_WAVES * machine.sms;
    if runs_ahead {
        STAGES_LIMIT
    } else {
        k_blocks
    }
}

/// The K blocks each CTA of a K loop split `splits` ways through the
/// workspace runs at most: no more stages fill.
fn split_k_blocks(problem: &Problem, block_k: i64, splits: i64) -> i64 {
    ceil_div(ceil_div(problem.k, block_k), splits)
}

/// Rule 6: the waves of tiles a persistent kernel's CTAs take past which
/// its producer's stages run ahead into the next tile.
const RUN_AHEAD_MIN_WAVES: i64 = 2;

/// Rule 8: TMA stores need 16-byte aligned rows of C; a
/// warp-specialised narrow tile stores directly.
fn epilogue_for(problem: &Problem, block_n: i64, schedule: Schedule) -> Epilogue {
    let narrow_specialised = schedule != Schedule::Pipeline && block_n <= NARROW_BLOCK_N;
    if !problem.any_n && (problem.n * problem.output_bytes) % 16 == 0 && !narrow_specialised {
        Epilogue::Tma { columns: block_n }
    } else {
        Epilogue::Global
    }
}

/// Rules 1-6, 9 and 11 for one tile shape with the plain pipeline, each tile's
/// K loop shared by `splits` CTAs (rule 12; 1 without) that add their
/// partial tiles as `reduce` says; `None` when it breaks rule 1 or no
/// stage fits.
fn tile_candidate(problem: &Problem, machine: &Machine, pins: &Pins, (bm, bn, bk): (i64, i64, i64), splits: i64, reduce: SplitReduce) -> Option<Candidate> {
    let registers = |warpgroups| problem.precision.accumulator_registers(bm, bn, warpgroups);
    let warpgroups = if registers(1).fit_alone() { 1 } else { 2 };
    // Two warpgroups split a tile by rows (MMA layouts hold whole
    // warpgroups along M), whole m64 blocks each.
    if !registers(warpgroups).fit_shared() || bm % (64 * warpgroups) != 0 {
        return None;
    }
    let tiles = ceil_div(problem.m, bm) * ceil_div(problem.n, bn);
    let schedule = Schedule::Pipeline;
    let epilogue = epilogue_for(problem, bn, schedule);
    // Only a cluster's splits add their partial tiles in shared memory;
    // a workspace split fills no more stages than its share of K blocks.
    let (layout_splits, filled) = match reduce {
        SplitReduce::Cluster => (splits, buffers_filled(problem, machine, schedule, bk, tiles, splits)),
        SplitReduce::Workspace => (1, split_k_blocks(problem, bk, splits)),
    };
    let layout = SmemLayout { tile: (bm, bn, bk), epilogue, scales: Scales::None, schedule, splits: layout_splits };
    let (stages, scales) = stages_and_scales(problem, machine, pins, layout, filled)?;
    let smem = layout.with_scales(scales).smem_bytes(problem, stages);
    let num_warps = 4 * warpgroups;
    let config = Config { block_m: bm, block_n: bn, block_k: bk, stages, num_warps, schedule, epilogue, scales, cluster: Along::None, splits, split_reduce: reduce, raster_group: 0, stream_k: None, deferred_epilogue: false };
    Some(with_waves(problem, machine, Candidate { config, tiles, waves: 0, last_wave: 0, sms: 0, smem_bytes: smem, reason: String::new() }))
}

/// Rules 2 and 12: the fewest stages each CTA of a pair keeps.
const MIN_PAIRED_STAGES: i64 = 3;

/// Rules 2 and 12's pairs: `tile` in the plain pipeline, shared by
/// `splits` CTAs, with the stages that fit half an SM's shared memory
/// (at least [`MIN_PAIRED_STAGES`]), in one wave; `None` otherwise. Only
/// for one block-scaled GEMM (not batched or grouped), where they were
/// measured.
fn paired_candidate(problem: &Problem, machine: &Machine, pins: &Pins, tile: (i64, i64, i64), splits: i64) -> Option<Candidate> {
    if problem.precision != Precision::Fp8BlockScaled || !problem.clusterable || problem.varying_k {
        return None;
    }
    tile_candidate(problem, &machine.paired(), pins, tile, splits, SplitReduce::Cluster).filter(|pairs| pairs.waves == 1 && pairs.config.stages >= MIN_PAIRED_STAGES)
}

/// Rule 2's pairs: a pipelined `best` over two waves one to an SM, as one
/// wave two to an SM.
fn one_wave_of_pairs(problem: &Problem, machine: &Machine, pins: &Pins, best: &Candidate) -> Option<Candidate> {
    let c = best.config;
    if c.schedule != Schedule::Pipeline || best.waves != 2 {
        return None;
    }
    paired_candidate(problem, machine, pins, (c.block_m, c.block_n, c.block_k), c.splits)
}

/// Rules 2, 3 and 9 for `c`: its waves, the SMs its last wave keeps busy,
/// and the fewest SMs that keep the waves. A wave is the CTAs the GPU runs
/// at once: in the plain pipeline, R to an SM where its shared memory and
/// registers let R share one and they make more than two such waves (rule
/// 6 fills shared memory unless K is short, so most tiles run one to an
/// SM), or, block-scaled, where they are more than the SMs and R to an SM
/// runs them all at once; a persistent kernel runs one CTA an SM.
fn with_waves(problem: &Problem, machine: &Machine, mut c: Candidate) -> Candidate {
    let ctas = c.tiles * c.config.splits;
    let resident = match c.config.schedule {
        Schedule::Pipeline => {
            let accumulators = problem.precision.accumulator_registers(c.config.block_m, c.config.block_n, c.config.tile_warpgroups()).total;
            let fit = machine.ctas_per_sm(c.smem_bytes).min(machine.ctas_per_sm_by_registers(c.config.num_warps, accumulators));
            let held_at_once = problem.precision == Precision::Fp8BlockScaled && ctas > machine.sms && ctas <= machine.sms * fit;
            if fit > 1 && (ctas > 2 * machine.sms * fit || held_at_once) {
                fit
            } else {
                1
            }
        }
        Schedule::WarpSpecialized { .. } | Schedule::PingPong | Schedule::ColumnHalves => 1,
    };
    let at_once = machine.sms * resident;
    c.waves = ceil_div(ctas, at_once);
    c.last_wave = ceil_div(ctas - (c.waves - 1) * at_once, resident);
    c.sms = ceil_div(ctas, c.waves * resident);
    c
}

/// Rules 2-5 as an order: the better candidate first.
fn compare(a: &Candidate, b: &Candidate) -> Ordering {
    let padded = |c: &Candidate| c.tiles * c.config.block_m * c.config.block_n;
    a.waves
        .cmp(&b.waves)
        .then(b.last_wave.cmp(&a.last_wave))
        .then(padded(a).cmp(&padded(b)))
        .then(b.config.block_n.cmp(&a.config.block_n))
        .then(a.config.block_m.cmp(&b.config.block_m))
}

/// What made the pick win.
fn pick_reason(best: &Candidate, machine: &Machine, tall: bool) -> String {
    let shared_tall = format!("; warp-specialised (rule 7), two consumers sharing 256x128 rather than 128x256 over {TALL_SHARED_WAVES} waves or more (rule 16)");
    let schedule = match best.config.schedule {
        Schedule::WarpSpecialized { .. } if tall => &shared_tall,
        Schedule::Pipeline => "",
        Schedule::WarpSpecialized { .. } if best.config.block_n <= NARROW_BLOCK_N => "; warp-specialised (a narrow tile with a long K)",
        Schedule::WarpSpecialized { .. } if best.config.stages > MAX_STAGES => "; warp-specialised with the most stages that fit (rule 15: a narrow tile over a long K, both rows of tiles sharing B)",
        Schedule::WarpSpecialized { .. } => "; warp-specialised (rule 7: block-scaled FP8 with a long K, or two waves of tiles or more)",
        Schedule::PingPong => "; ping-pong consumers",
        Schedule::ColumnHalves => "; two consumers sharing each tile's columns",
    };
    let cluster = match best.config.cluster {
        Along::None => String::new(),
        along => format!("; in 2-CTA clusters along {}", along.word()),
    };
    let splits = match best.config.splits {
        1 => String::new(),
        splits => format!("; K split over {splits} CTAs of a cluster (a long K in one wave of narrow or few tiles)"),
    };
    let order = match best.config.raster_group {
        0 => String::new(),
        group => format!("; tiles in groups of {group} rows"),
    };
    let chunks = best.config.epilogue_chunk().map_or(String::new(), |n| format!("; the output stored {n} columns at a time (a stage more)"));
    let scales = match best.config.scales {
        Scales::None => "",
        Scales::Staged => "; scales staged with their stage",
        Scales::Prefetched => "; scales prefetched into registers (staging them would cost a stage or a co-resident CTA)",
    };
    let stream_k = match best.config.stream_k {
        None => String::new(),
        Some(order) => format!("; the last wave's tiles shared by K iterations over every SM, pieces {} (rule 17: a last wave at most {STREAM_K_LAST_WAVE_PERCENT}% full over {STREAM_K_MIN_K_BLOCKS} K blocks or more)", order.word()),
    };
    let deferred = if best.config.deferred_epilogue {
        format!("; each tile stored during the next one's first K steps, {DEFERRED_EPILOGUE_COLUMNS} columns a step (rule 18: two consumers, unclustered, {DEFERRED_EPILOGUE_MIN_WAVES} waves and {DEFERRED_EPILOGUE_MIN_K_BLOCKS} K blocks or more)")
    } else {
        String::new()
    };
    let ctas = best.tiles * best.config.splits;
    let (together, share) = match ceil_div(ctas, best.waves * machine.sms) {
        1 => (String::new(), String::new()),
        r => (format!(" of {r} CTAs an SM"), format!(", in 1/{r} of an SM")),
    };
    format!(
        "picked: fewest waves ({}{together}), fullest last wave ({}/{} SMs), least padding; the most stages that fit ({}{share}){chunks}{deferred}{scales}{schedule}{cluster}{splits}{order}{stream_k}",
        best.waves, best.last_wave, machine.sms, best.config.stages
    )
}

/// Whether a block-scaled tile's warpgroups each hold more than one m64
/// block of rows, which they promote one block at a time (rule 1).
fn promotes_by_row_blocks(c: &Config) -> bool {
    c.scales != Scales::None && c.block_m > 64 * c.tile_warpgroups()
}

/// The first rule on which `c` loses to `best`; `tall` where rule 16 made
/// the pick's tile 256x128.
fn loss_reason(c: &Candidate, best: &Candidate, tall: bool) -> String {
    let padded = |c: &Candidate| c.tiles * c.config.block_m * c.config.block_n;
    let same_tile = (c.config.block_m, c.config.block_n) == (best.config.block_m, best.config.block_n);
    // The tile the split pick shares, or the narrow one it grew from.
    let (bm, bn) = (best.config.block_m, best.config.block_n);
    let split_of = |c: &Config| c.block_m <= bm && c.block_n <= bn && 2 * c.block_m * c.block_n >= bm * bn;
    if promotes_by_row_blocks(&c.config) && !promotes_by_row_blocks(&best.config) {
        format!("{}-row alternative, promoted an m64 block at a time (rule 1: ranked, not picked unless block M is pinned)", c.config.block_m)
    } else if best.config.splits > 1 && c.config.splits == 1 && split_of(&c.config) {
        format!("unsplit alternative of the pick: one CTA runs the whole K loop of a {}x{} tile", c.config.block_m, c.config.block_n)
    } else if c.config == (Config { cluster: c.config.cluster, raster_group: c.config.raster_group, ..best.config }) && c.config.cluster != Along::None {
        format!("the pick in 2-CTA clusters along {}, multicasting {}", c.config.cluster.word(), if c.config.cluster == Along::M { "B" } else { "A" })
    } else if c.config == (Config { cluster: Along::None, ..best.config }) && best.config.cluster != Along::None {
        "the pick without clusters (rule 10 clusters it here)".to_string()
    } else if best.config.deferred_epilogue && c.config == (Config { deferred_epilogue: false, epilogue: c.config.epilogue, stages: c.config.stages, ..best.config }) {
        "the pick with each tile stored between its K loop and the next tile's (rule 18)".to_string()
    } else if c.config == (Config { stream_k: None, ..best.config }) && best.config.stream_k.is_some() {
        "the pick without stream-K: its last wave's tiles whole, on fewer SMs (rule 17)".to_string()
    } else if c.config.schedule == Schedule::PingPong {
        format!("ping-pong alternative: two consumers take turns at whole {}x{} tiles", c.config.block_m, c.config.block_n)
    } else if c.config.schedule != Schedule::Pipeline {
        format!("warp-specialised alternative of the pick's tile ({} consumer(s))", c.config.num_warps / 4 - 1)
    } else if same_tile && best.config.schedule != Schedule::Pipeline && c.config.epilogue.word() != best.config.epilogue.word() {
        format!("pipelined direct-store alternative of the pick's tile ({} stages without the output tile)", c.config.stages)
    } else if same_tile && best.config.schedule != Schedule::Pipeline {
        "pipelined alternative of the pick's tile (rules 7 and 15 prefer warp specialisation here)".to_string()
    } else if same_tile && c.config.epilogue != best.config.epilogue {
        format!("direct-store alternative of the pick ({} stages without the output tile)", c.config.stages)
    } else if tall && (c.config.block_m, c.config.block_n) == (best.config.block_n, best.config.block_m) {
        format!("the {}x{} tile, which two consumers share as {}x{} over {TALL_SHARED_WAVES} waves or more (rule 16)", c.config.block_m, c.config.block_n, best.config.block_m, best.config.block_n)
    } else if c.waves > best.waves {
        format!("more waves ({} > {})", c.waves, best.waves)
    } else if c.last_wave < best.last_wave {
        format!("emptier last wave ({} < {} CTAs)", c.last_wave, best.last_wave)
    } else if padded(c) > padded(best) {
        format!("more padded work ({} > {} elements)", padded(c), padded(best))
    } else if c.config.block_n < best.config.block_n {
        format!("narrower N ({} < {})", c.config.block_n, best.config.block_n)
    } else {
        format!("taller M at equal figures ({} > {})", c.config.block_m, best.config.block_m)
    }
}

/// Every tile configuration the rules allow for `problem`, best first; right
/// after the pick, its clustered (rule 10), warp-specialised (rule 7) and
/// direct-store (rule 8) alternatives. Empty when the pins leave nothing that fits.
pub fn rank(problem: &Problem, machine: &Machine, pins: &Pins) -> Vec<Candidate> {
    let bk = pins.block_k.unwrap_or(problem.precision.block_k());
    let block_ms: Vec<i64> = pins.block_m.map_or(BLOCK_MS.to_vec(), |m| vec![m]);
    let block_ns: Vec<i64> = match pins.block_n {
        Some(n) => vec![n],
        None if problem.column_group.is_some() => every_block_n().into_iter().filter(|&n| holds_whole_groups(problem, n)).collect(),
        None if problem.b_scale_rows.is_some() => vec![block_n_across_scale_blocks(problem, machine, pins, &block_ms, bk)],
        None => every_block_n(),
    };
    // Rule 1's row-block tiles wait behind the others unless block M is pinned.
    let (mut row_blocked, mut ranked): (Vec<Candidate>, Vec<Candidate>) = block_ms
        .iter()
        .flat_map(|&bm| block_ns.iter().map(move |&bn| (bm, bn)))
        .filter_map(|(bm, bn)| tile_candidate(problem, machine, pins, (bm, bn, bk), 1, SplitReduce::Cluster))
        .partition(|c| pins.block_m.is_none() && promotes_by_row_blocks(&c.config));
    ranked.sort_by(compare);
    row_blocked.sort_by(compare);
    if let Some(pairs) = ranked.first().and_then(|best| one_wave_of_pairs(problem, machine, pins, best)) {
        ranked.insert(0, pairs);
    }
    if let Some(best) = ranked.first().cloned() {
        if let Some(direct) = direct_stores(problem, machine, pins, &best) {
            ranked.insert(1, direct);
        }
        if let Some(pingpong) = ping_pong(problem, machine, pins, &ranked) {
            ranked.insert(1, pingpong);
        }
        for consumers in [2, 1] {
            let tile = if consumers == 2 { two_consumer_tile(problem, machine, pins, &best) } else { Some(best.clone()) };
            if let Some(ws) = tile.and_then(|tile| warp_specialized(problem, machine, pins, &tile, consumers)) {
                ranked.insert(1, ws);
            }
        }
    }
    if ranked.first().is_some_and(|best| prefers_warp_specialized(problem, best, ranked.get(1))) {
        // Block-scaled FP8 takes two consumers where there are two (each
        // promotes beside the other's wgmma); otherwise the alternative
        // right after the pick.
        let fp8 = problem.precision == Precision::Fp8BlockScaled;
        let two = ranked.iter().position(|c| fp8 && c.config.schedule == Schedule::WarpSpecialized { consumers: 2 });
        if let Some(i) = two.or_else(|| ranked.get(1).filter(|c| c.config.schedule != Schedule::Pipeline).map(|_| 1)) {
            ranked[..=i].rotate_right(1);
        }
    }
    if ranked.first().is_some_and(|best| prefers_ping_pong(problem, best)) {
        if let Some(i) = ranked.iter().position(|c| c.config.schedule == Schedule::PingPong) {
            ranked[..=i].rotate_right(1);
        }
    }
    if let Some(split) = ranked.iter().find(|c| c.config.schedule == Schedule::Pipeline).and_then(|narrow| split_k(problem, machine, pins, narrow)) {
        ranked.insert(0, split);
    }
    if let Some(along) = pins.cluster {
        ranked.iter_mut().for_each(|c| c.config.cluster = along);
    } else if let Some(best) = ranked.first() {
        let cluster = cluster_for(problem, machine, best);
        if cluster != Along::None {
            let clustered = Candidate { config: Config { cluster, ..best.config }, ..best.clone() };
            let at = if prefers_clusters(problem, best) { 0 } else { 1 };
            ranked.insert(at, clustered);
        }
    }
    if let Some(deep) = ranked.first().and_then(|best| deep_paired_rows(problem, machine, pins, best)) {
        ranked.insert(0, deep);
    }
    if let Some(tall) = row_blocked.first().and_then(|tile| warp_specialized(problem, machine, pins, tile, 2)) {
        ranked.push(tall);
    }
    for c in &mut ranked {
        c.config.raster_group = raster_group_for(problem, machine, c);
        if c.config.schedule != Schedule::Pipeline {
            c.sms = persistent_sms(problem, machine, &c.config);
        }
    }
    if let Some(order) = ranked.first().and_then(|best| stream_k_for(problem, machine, best)) {
        let shared = Candidate { config: Config { stream_k: Some(order), ..ranked[0].config }, sms: machine.sms, ..ranked[0].clone() };
        ranked.insert(0, shared);
    }
    if let Some(deferred) = ranked.first().and_then(|best| deferred_epilogue(problem, machine, pins, best)) {
        ranked.insert(0, deferred);
    }
    if let Some(best) = ranked.first().cloned() {
        let tall = shares_tall_tile(problem, pins, &best);
        for (i, c) in ranked.iter_mut().enumerate() {
            c.reason = if i == 0 { pick_reason(&best, machine, tall) } else { loss_reason(c, &best, tall) };
        }
    }
    ranked
}

/// Rule 1's block N candidates: every multiple of [`BLOCK_N_STEP`] up to [`MAX_BLOCK_N`].
fn every_block_n() -> Vec<i64> {
    (1..=MAX_BLOCK_N / BLOCK_N_STEP).map(|i| i * BLOCK_N_STEP).collect()
}

/// Block N holds whole groups of the columns the epilogue reduces.
fn holds_whole_groups(problem: &Problem, block_n: i64) -> bool {
    problem.column_group.is_none_or(|g| block_n % g == 0)
}

/// Rule 1's block N for a block-scaled dot whose tiles of B need not start
/// a scale block: one scale block (128), unless over more than two waves
/// the best tile of any width [`spans_few_scale_blocks`] allows takes at
/// least 1% less [`promotion_work`] than the best 128 wide, or the best
/// 128 wide runs in one wave and more tiles half a scale block wide would
/// too (or no 128-wide tile fits the pins).
fn block_n_across_scale_blocks(problem: &Problem, machine: &Machine, pins: &Pins, block_ms: &[i64], bk: i64) -> i64 {
    let best_of = |block_ns: &[i64]| {
        block_ms
            .iter()
            .flat_map(|&bm| block_ns.iter().map(move |&bn| (bm, bn)))
            .filter_map(|(bm, bn)| tile_candidate(problem, machine, pins, (bm, bn, bk), 1, SplitReduce::Cluster))
            .filter(|c| pins.block_m.is_some() || !promotes_by_row_blocks(&c.config))
            .min_by(compare)
    };
    let half_block = SCALE_BLOCK_N / 2;
    let k_blocks = ceil_div(problem.k, bk);
    let widths: Vec<i64> = every_block_n().into_iter().filter(|&bn| spans_few_scale_blocks(bn, k_blocks)).collect();
    match (best_of(&[SCALE_BLOCK_N]), best_of(&widths)) {
        (Some(aligned), Some(any)) if aligned.waves > 2 && 100 * promotion_work(&any) < 99 * promotion_work(&aligned) => any.config.block_n,
        (Some(aligned), _) if aligned.waves == 1 && best_of(&[half_block]).is_some_and(|half| half.waves == 1 && half.tiles > aligned.tiles) => half_block,
        (None, Some(any)) => any.config.block_n,
        _ => SCALE_BLOCK_N,
    }
}

/// The time a block-scaled candidate's waves take, in hundredths of
/// [`wave_work`]: a tile at least [`WIDE_TILE_MIN_N`] columns wide whose
/// warpgroups each promote one m64 block of rows counts
/// [`WIDE_TILE_WORK_PERCENT`]% of its area: each promotion covers more of
/// the tensor cores' work, and wide tiles ran more elements a second than
/// 128x128 in proportion. Over a short K a tile spanning three of B's
/// scale blocks (176) loses, since each tile's prologue, epilogue and K-loop
/// copies weigh more than its promotions, while one spanning two (192)
/// still gains: over fewer than [`THREE_BLOCK_SPAN_MIN_K_BLOCKS`] K blocks
/// 176 is no candidate ([`spans_few_scale_blocks`]), and the wide tiles
/// left count as wide over any K
/// (measured: docs/evidence.md, config_rules.rs, promotion_work).
fn promotion_work(c: &Candidate) -> i64 {
    let wide = c.config.block_n >= WIDE_TILE_MIN_N && !promotes_by_row_blocks(&c.config);
    wave_work(c) * if wide { WIDE_TILE_WORK_PERCENT } else { 100 }
}

/// Whether block N `block_n` is a block-scaled candidate over `k_blocks`
/// K blocks: its tiles span at most two of B's scale blocks, or the K loop
/// is long enough ([`THREE_BLOCK_SPAN_MIN_K_BLOCKS`]) for a tile spanning
/// three (176: eight K-loop copies, one per offset into a scale block) to
/// pay: over a shorter K the copies cost more than the narrower tile's
/// fuller last wave saves
/// (measured: docs/evidence.md, config_rules.rs, spans_few_scale_blocks).
fn spans_few_scale_blocks(block_n: i64, k_blocks: i64) -> bool {
    blocks_from_grid_offsets(block_n) <= 2 || k_blocks >= THREE_BLOCK_SPAN_MIN_K_BLOCKS
}

/// The time rule 2's waves take, in elements of C an SM computes: waves
/// times the tiles an SM runs at once times their area (fewer waves of
/// wider tiles are not less work).
fn wave_work(c: &Candidate) -> i64 {
    let resident = ceil_div(c.tiles * c.config.splits, c.waves * c.sms);
    c.waves * resident * c.config.block_m * c.config.block_n
}

/// Rule 13: tile rows per group of the grouped tile order.
const RASTER_GROUP: i64 = 8;

/// Rule 13: [`RASTER_GROUP`] for a plain pipeline without clusters or
/// splits over more than one wave, more tile rows than a group and an A
/// larger than L2; 0 (the grid's order) otherwise, and for a masked
/// grouped GEMM, whose experts each hold a few rows of tiles.
fn raster_group_for(problem: &Problem, machine: &Machine, c: &Candidate) -> i64 {
    let plain = c.config.schedule == Schedule::Pipeline && c.config.cluster == Along::None && c.config.splits == 1 && !problem.varying_k;
    let a_bytes = problem.m * problem.k * problem.precision.operand_bytes();
    if plain && c.waves > 1 && ceil_div(problem.m, c.config.block_m) > RASTER_GROUP && a_bytes > machine.l2_bytes {
        RASTER_GROUP
    } else {
        0
    }
}

/// The CTAs the launcher starts for a persistent candidate: the fewest
/// whole clusters that keep the busiest one's turns over the tiles, or the
/// pairs of tiles 2-CTA clusters walk (the manifest's `wave_tile`). Over
/// single tiles that is [`with_waves`]' count; over pairs that count can
/// be odd.
fn persistent_sms(problem: &Problem, machine: &Machine, c: &Config) -> i64 {
    let [pair_m, pair_n] = c.cluster.tiles();
    let units = ceil_div(ceil_div(problem.m, c.block_m), pair_m) * ceil_div(ceil_div(problem.n, c.block_n), pair_n);
    let cluster = pair_m * pair_n;
    cluster * fewest_keeping_turns(units as u64, (machine.sms / cluster) as u64) as i64
}

/// Rule 10's alternative: the pair along M when the tiles along M are even and B's tile is
/// at least A's, else along N when the tiles along N are even, else along M
/// when those are; none for a single wave.
fn cluster_for(problem: &Problem, machine: &Machine, best: &Candidate) -> Along {
    let c = &best.config;
    if !problem.clusterable || best.tiles <= machine.sms {
        return Along::None;
    }
    let even = |extent: i64, block: i64| ceil_div(extent, block) % CLUSTER_SIZE == 0;
    let (along_m, along_n) = (even(problem.m, c.block_m), even(problem.n, c.block_n));
    match (along_m, along_n) {
        (true, _) if c.block_n >= c.block_m || !along_n => Along::M,
        (_, true) => Along::N,
        _ => Along::None,
    }
}

/// Rule 7's ping-pong exception: block-scaled FP8 at most 128 rows tall
/// with at least [`FP8_PING_PONG_K_BLOCKS`] K blocks, where the pick is
/// warp-specialised over at least [`PERSISTENT_WAVES`] waves, takes the
/// ping-pong consumers (64-row tiles in turn). Over one wave a CTA has one
/// tile and the second consumer nothing to take turns at
/// (measured: docs/evidence.md, config_rules.rs, prefers_ping_pong).
fn prefers_ping_pong(problem: &Problem, best: &Candidate) -> bool {
    let k_blocks = problem.k_blocks();
    problem.precision == Precision::Fp8BlockScaled
        && problem.m <= 128
        && k_blocks >= FP8_PING_PONG_K_BLOCKS
        && best.waves >= PERSISTENT_WAVES
        && matches!(best.config.schedule, Schedule::WarpSpecialized { .. })
}

/// Rule 7: the fewest K blocks over which block-scaled FP8's ping-pong
/// consumers beat the warp-specialised pick at M <= 128.
const FP8_PING_PONG_K_BLOCKS: i64 = 12;

/// Rule 10's exceptions, which take their clusters: a BF16 pick
/// warp-specialised for a short K (at most [`BF16_PERSISTENT_K_BLOCKS`])
/// over many waves (rule 7), and a block-scaled pick that two consumers
/// share over a long K (at least [`LONG_K_BLOCKS`]) and at least
/// [`FP8_CLUSTER_WAVES`] waves, wider than one scale block. A tile one
/// scale block wide is bound by its consumers' shared-memory reads (each
/// reads all of B's stage), which multicast does not lessen: in clusters
/// it ran slower (measured: docs/evidence.md, config_rules.rs,
/// prefers_clusters).
fn prefers_clusters(problem: &Problem, best: &Candidate) -> bool {
    let k_blocks = problem.k_blocks();
    let c = &best.config;
    let bf16_short = problem.precision == Precision::Bf16 && matches!(c.schedule, Schedule::WarpSpecialized { .. }) && k_blocks <= BF16_PERSISTENT_K_BLOCKS;
    let fp8_long = problem.precision == Precision::Fp8BlockScaled
        && c.schedule == (Schedule::WarpSpecialized { consumers: 2 })
        && c.block_n > SCALE_BLOCK_N
        && k_blocks >= LONG_K_BLOCKS
        && best.waves >= FP8_CLUSTER_WAVES;
    bf16_short || fp8_long
}

/// Rule 10: the fewest waves over which a block-scaled pick that two
/// consumers share takes its clusters.
const FP8_CLUSTER_WAVES: i64 = 3;

/// Rule 7's exceptions, with the same K loop for every tile or at most
/// [`FEW_WAVES`] waves of tiles: over at least 32 blocks of K, block-scaled
/// FP8 or a tile at most 32 columns wide; over more than
/// [`PERSISTENT_WAVES`] waves (from two with a tile of at least 128 rows),
/// block-scaled FP8, and BF16 where the warp-specialised `alternative` has
/// two consumers sharing each tile and a TMA-store epilogue, at any K (they
/// wait with no wgmma group in flight, which runs each stage's loads an
/// iteration further ahead; over one wave, or with direct stores whose
/// epilogue the consumers wait for, that gains nothing
/// (measured: docs/evidence.md, config_rules.rs, prefers_warp_specialized)),
/// and over more than [`PERSISTENT_WAVES`] waves BF16 with at most
/// [`BF16_PERSISTENT_K_BLOCKS`] K blocks, or
/// [`BF16_CHUNKED_PERSISTENT_K_BLOCKS`] with the extra stage of a chunked
/// epilogue (rule 8).
fn prefers_warp_specialized(problem: &Problem, best: &Candidate, alternative: Option<&Candidate>) -> bool {
    let k_blocks = problem.k_blocks();
    let fp8 = problem.precision == Precision::Fp8BlockScaled;
    let balanced = !problem.varying_k || best.waves <= FEW_WAVES;
    let long_k = k_blocks >= LONG_K_BLOCKS && (fp8 || best.config.block_n <= NARROW_BLOCK_N);
    // Over exactly two waves only a tile two consumers split gains (a
    // one-consumer 64-row tile has no neighbour to overlap).
    let two_consumer_waves = if best.config.block_m >= 128 { PERSISTENT_WAVES - 1 } else { PERSISTENT_WAVES };
    let many_fp8_tiles = fp8 && best.waves > two_consumer_waves;
    let chunked = alternative.is_some_and(|c| c.config.epilogue_chunk().is_some());
    let two_consumers_storing_by_tma = alternative.is_some_and(|c| c.config.schedule == Schedule::WarpSpecialized { consumers: 2 } && matches!(c.config.epilogue, Epilogue::Tma { .. }));
    let short_bf16_k_blocks = if chunked { BF16_CHUNKED_PERSISTENT_K_BLOCKS } else { BF16_PERSISTENT_K_BLOCKS };
    let shared_bf16_tiles = !fp8 && two_consumers_storing_by_tma && best.waves > two_consumer_waves;
    let many_short_bf16_tiles = !fp8 && k_blocks <= short_bf16_k_blocks && best.waves > PERSISTENT_WAVES;
    balanced && (long_k || many_fp8_tiles || shared_bf16_tiles || many_short_bf16_tiles)
}

/// Rule 7: the waves of tiles to exceed for the persistent
/// warp-specialised kernel to hide each tile's prologue and epilogue
/// behind its neighbours' work.
const PERSISTENT_WAVES: i64 = 2;

/// Rule 7: the most K blocks at which the persistent warp-specialised
/// kernel with a TMA-store epilogue overtakes the pipeline for BF16 over
/// many waves (with a longer K the pipeline's tiles amortise their
/// prologue and epilogue themselves).
const BF16_PERSISTENT_K_BLOCKS: i64 = 32;

/// Rule 7: the same with the warp-specialised kernel's extra stage from a
/// chunked epilogue (rule 8), for a tile two consumers do not share: the
/// stage gains over a moderate K and is worth less than the pipeline's own
/// amortisation over a longer one; two consumers keep no wgmma group in
/// flight and take any K
/// (measured: docs/evidence.md, config_rules.rs, BF16_CHUNKED_PERSISTENT_K_BLOCKS).
const BF16_CHUNKED_PERSISTENT_K_BLOCKS: i64 = 64;

/// Rule 7: the most waves of tiles whose K loops are data (a masked grouped
/// GEMM) that a persistent CTA's static share still balances.
const FEW_WAVES: i64 = 4;

/// Rule 7: the widest tile whose K steps are too short for the plain
/// pipeline to hide its load issue.
const NARROW_BLOCK_N: i64 = 32;

/// Rules 7 and 12: the fewest K blocks that make a long K.
const LONG_K_BLOCKS: i64 = 32;

/// Rule 15: a BF16 pick of one wave over exactly two rows of 64-row tiles at
/// most [`DEEP_PAIR_MAX_BLOCK_N`] wide, over at least
/// [`DEEP_PAIR_K_BLOCKS`] K blocks, runs warp-specialised with one
/// consumer, its two rows of tiles in 2-CTA clusters along M (each B tile
/// loaded once for both) and the most stages that fit, up to
/// [`STAGES_LIMIT`]: B is nearly all the bytes, and a narrow tile's K steps
/// are too short for fewer stages to cover the memory's latency. cuBLAS
/// runs this shape so (`nvjet_sm90_tst_64x64_64x13_2x1`: 64x64, 13 stages,
/// 2x1 clusters). It needs all three: with fewer stages it loses, and the
/// pipeline with as many stages gains nothing; wider tiles gain nothing
/// (measured: docs/evidence.md, config_rules.rs, deep_paired_rows and DEEP_PAIR_K_BLOCKS).
fn deep_paired_rows(problem: &Problem, machine: &Machine, pins: &Pins, best: &Candidate) -> Option<Candidate> {
    let c = &best.config;
    let applies = problem.precision == Precision::Bf16
        && problem.clusterable
        && !problem.varying_k
        && pins.cluster.is_none()
        && pins.stages.is_none()
        && c.schedule == Schedule::Pipeline
        && c.splits == 1
        && best.waves == 1
        && c.block_m == 64
        && ceil_div(problem.m, c.block_m) == CLUSTER_SIZE
        && c.block_n <= DEEP_PAIR_MAX_BLOCK_N
        && problem.k_blocks() >= DEEP_PAIR_K_BLOCKS;
    if !applies {
        return None;
    }
    let ws = warp_specialized(problem, machine, pins, best, 1)?;
    let layout = ws.config.smem_layout();
    let stages = layout.stages_that_fit(problem, machine, STAGES_LIMIT, buffers_filled(problem, machine, ws.config.schedule, ws.config.block_k, ws.tiles, ws.config.splits))?;
    let config = Config { stages, cluster: Along::M, ..ws.config };
    Some(Candidate { config, smem_bytes: layout.smem_bytes(problem, stages), ..ws })
}

/// Rule 15: the widest tile that takes the deep clustered schedule.
const DEEP_PAIR_MAX_BLOCK_N: i64 = 64;

/// Rule 15: the fewest K blocks for it, the fewest it measured faster
/// over; half as many measured slower and between them is unmeasured
/// (measured: docs/evidence.md, config_rules.rs, deep_paired_rows and DEEP_PAIR_K_BLOCKS).
const DEEP_PAIR_K_BLOCKS: i64 = 112;

/// Rule 12: the CTAs that share a narrow tile's doubled K loop.
const SPLITS: i64 = 2;

/// Rule 12: the most CTAs that share one tile's K loop.
const MAX_SPLITS: i64 = 4;

/// Rule 12: the CTAs that `splits`-CTA clusters may occupy. Pairs fill
/// every SM; larger clusters must each fit the SMs of one GPC, which
/// leaves some SMs of each GPC out: 4/5 of the SMs held clusters of three
/// and four in one wave where more did not
/// (measured: docs/evidence.md, config_rules.rs, split_capacity).
fn split_capacity(machine: &Machine, splits: i64) -> i64 {
    if splits <= 2 {
        machine.sms
    } else {
        machine.sms * 4 / 5
    }
}

/// Rule 12, for `best`, the best pipelined candidate, over a long K in one
/// wave: where rule 7 would run its narrow tile (at most 32 columns), a
/// tile twice as tall (where that adds no padding along M) or else twice as
/// wide whose K loop two CTAs of a cluster share; where its tiles fill at
/// most half the SMs, the same tile shared by the most CTAs (2 to 4) that
/// fit, each with fewer than 32 K blocks, two to an SM where that suits
/// ([`paired_split_k`]). Pipelined either way. `None` where the program's tensors are chosen
/// by data or batched (a grouped or masked GEMM), where a cluster (or, to
/// grow the tile, the tile) is pinned, or where nothing fits.
fn split_k(problem: &Problem, machine: &Machine, pins: &Pins, best: &Candidate) -> Option<Candidate> {
    let c = best.config;
    let long_k = ceil_div(problem.k, c.block_k) >= LONG_K_BLOCKS;
    if !problem.clusterable || problem.varying_k || pins.cluster.is_some_and(|along| along != Along::None) || best.waves != 1 || !long_k {
        return None;
    }
    let tile_pinned = pins.block_m.is_some() || pins.block_n.is_some();
    let ((block_m, block_n), splits) = if c.block_n <= NARROW_BLOCK_N && !tile_pinned {
        let padded_m = |block_m: i64| ceil_div(problem.m, block_m) * block_m;
        let taller = SPLITS * c.block_m;
        let grown = if BLOCK_MS.contains(&taller) && padded_m(taller) == padded_m(c.block_m) { (taller, c.block_n) } else { (c.block_m, SPLITS * c.block_n) };
        (grown, SPLITS)
    } else {
        // Each split's K loop short enough that rule 7 pipelines it: a long
        // one keeps the one-consumer kernel, which beat the split
        // (measured: docs/evidence.md, config_rules.rs, split_k).
        let k_blocks = ceil_div(problem.k, c.block_k);
        let short = |s: i64| ceil_div(k_blocks, s) < LONG_K_BLOCKS;
        if let Some(pairs) = paired_split_k(problem, machine, pins, best, short) {
            return Some(pairs);
        }
        let fits = |s: i64| best.tiles * s <= split_capacity(machine, s) && short(s);
        let splits = (2..=MAX_SPLITS).rev().find(|&s| fits(s))?;
        ((c.block_m, c.block_n), splits)
    };
    tile_candidate(problem, machine, pins, (block_m, block_n, c.block_k), splits, SplitReduce::Cluster).filter(|split| split.last_wave <= split_capacity(machine, splits) && split.waves == 1)
}

/// Rule 12's pairs: `best`, whose tiles of B serve more than one row of
/// tiles, split over the most CTAs (2 to 4) that run at once two to an SM,
/// each split's K loop `short`, where that is more CTAs than SMs; `None`
/// otherwise.
fn paired_split_k(problem: &Problem, machine: &Machine, pins: &Pins, best: &Candidate, short: impl Fn(i64) -> bool) -> Option<Candidate> {
    let c = best.config;
    if ceil_div(problem.m, c.block_m) < 2 {
        return None;
    }
    let fits = |s: i64| best.tiles * s > machine.sms && best.tiles * s <= 2 * split_capacity(machine, s) && short(s);
    let splits = (2..=MAX_SPLITS).rev().find(|&s| fits(s))?;
    paired_candidate(problem, machine, pins, (c.block_m, c.block_n, c.block_k), splits)
}

/// Rule 8's alternative: the pick with direct stores, which frees the output
/// tile's shared memory for more stages (128x256: 4 stages instead of 3).
fn direct_stores(problem: &Problem, machine: &Machine, pins: &Pins, best: &Candidate) -> Option<Candidate> {
    let c = best.config;
    if !matches!(c.epilogue, Epilogue::Tma { .. }) {
        return None;
    }
    rescheduled(problem, machine, pins, best, c.schedule, c.num_warps, Epilogue::Global)
}

/// Rule 7: the tile two consumers split, the pick's; for block-scaled FP8
/// over more than two waves, a pick of 64 rows grows to 128 (where M has
/// them), so that each of two consumers promotes beside the other's wgmma
/// (measured: docs/evidence.md, config_rules.rs, two_consumer_tile).
///
/// Rule 16: a BF16 128x256 pick over at least [`TALL_SHARED_WAVES`] waves
/// is shared as 256x128 (each consumer 128x128) where that tile takes as
/// many waves.
fn two_consumer_tile(problem: &Problem, machine: &Machine, pins: &Pins, best: &Candidate) -> Option<Candidate> {
    let c = best.config;
    let tall = (c.block_m, c.block_n) == (128, 256) && tall_sharing_applies(problem, pins, best.waves);
    if let Some(turned) = tall.then(|| tile_candidate(problem, machine, pins, (256, 128, c.block_k), c.splits, c.split_reduce)).flatten().filter(|t| t.waves == best.waves) {
        return Some(turned);
    }
    let grow = problem.precision == Precision::Fp8BlockScaled && best.waves > PERSISTENT_WAVES && c.block_m == 64 && problem.m >= 128 && pins.block_m.is_none();
    if !grow {
        return Some(best.clone());
    }
    tile_candidate(problem, machine, pins, (128, c.block_n, c.block_k), c.splits, c.split_reduce)
}

/// Rule 16's conditions besides the tile: BF16, at least
/// [`TALL_SHARED_WAVES`] waves, and pins that leave the tile's shape.
fn tall_sharing_applies(problem: &Problem, pins: &Pins, waves: i64) -> bool {
    problem.precision == Precision::Bf16 && waves >= TALL_SHARED_WAVES && pins.block_m.is_none() && pins.block_n.is_none()
}

/// Whether rule 16 made `c` (a pick) two consumers sharing 256x128.
fn shares_tall_tile(problem: &Problem, pins: &Pins, c: &Candidate) -> bool {
    let shared = (c.config.block_m, c.config.block_n) == (256, 128) && c.config.schedule == (Schedule::WarpSpecialized { consumers: 2 });
    shared && tall_sharing_applies(problem, pins, c.waves)
}

/// Rule 16: the fewest waves of 128x256 tiles over which two consumers
/// share 256x128 ones instead: the taller tile gained over many waves,
/// nothing over four and less over two
/// (measured: docs/evidence.md, config_rules.rs, TALL_SHARED_WAVES).
const TALL_SHARED_WAVES: i64 = 6;

/// Rule 17: stream-K (`tile-stream-k`, pieces in order) for a BF16 pick
/// that two consumers share, persistent and unclustered, over a full wave
/// or more whose last wave keeps at most [`STREAM_K_LAST_WAVE_PERCENT`]% of
/// the SMs busy, over at least [`STREAM_K_MIN_K_BLOCKS`] K blocks; one GEMM
/// with a shape given (a batch's or a grouped GEMM's tiles are not one
/// range of iterations). The hand-over of each CTA's pieces costs about
/// what a fuller last wave or a short K saves, so only a thin last wave
/// over a long K gains
/// (measured: docs/evidence.md, config_rules.rs, stream_k_for).
/// Block-scaled FP8's 128x176
/// consumers spill with the pass's index arithmetic, so it stays BF16.
fn stream_k_for(problem: &Problem, machine: &Machine, best: &Candidate) -> Option<PieceOrder> {
    let c = &best.config;
    let shared = c.schedule == (Schedule::WarpSpecialized { consumers: 2 }) && c.cluster == Along::None && c.splits == 1;
    let one_gemm = problem.clusterable && !problem.varying_k && !problem.any_n;
    let left = best.tiles % machine.sms;
    let k_blocks = ceil_div(problem.k, c.block_k);
    let applies = problem.precision == Precision::Bf16
        && shared
        && one_gemm
        && best.tiles > machine.sms
        && left > 0
        && 100 * left <= STREAM_K_LAST_WAVE_PERCENT * machine.sms
        && k_blocks >= STREAM_K_MIN_K_BLOCKS;
    applies.then_some(PieceOrder::InOrder)
}

/// Rule 17: the fullest last wave, in percent of the SMs, that stream-K shares.
const STREAM_K_LAST_WAVE_PERCENT: i64 = 60;

/// Rule 17: the fewest K blocks over which stream-K pays for its hand-over.
const STREAM_K_MIN_K_BLOCKS: i64 = 64;

/// Rule 18: the deferred epilogue (`tile-defer-epilogue`) for a BF16 pick
/// that two consumers share, persistent, unclustered and without stream-K,
/// over at least [`DEFERRED_EPILOGUE_MIN_WAVES`] waves and
/// [`DEFERRED_EPILOGUE_MIN_K_BLOCKS`] K blocks, its output stored through a
/// buffer [`DEFERRED_EPILOGUE_COLUMNS`] wide, a chunk a K step: the stores
/// overlap the next tile's wgmma instead of idling the tensor cores. Where
/// the pick's output is one chunk, or its CTAs form clusters over a short
/// K, there is too little to overlap and it did not pay
/// (measured: docs/evidence.md, config_rules.rs, deferred_epilogue and its
/// constants). A stream-K loop over tiles carries its pieces' state,
/// which the pass does not take.
fn deferred_epilogue(problem: &Problem, machine: &Machine, pins: &Pins, best: &Candidate) -> Option<Candidate> {
    let c = &best.config;
    let Epilogue::Tma { columns } = c.epilogue else { return None };
    let chunks = c.block_n % DEFERRED_EPILOGUE_COLUMNS == 0 && c.block_n >= 2 * DEFERRED_EPILOGUE_COLUMNS;
    let applies = problem.precision == Precision::Bf16
        && takes_deferred_epilogue(problem, c)
        && chunks
        && keeps_output_swizzle(c, columns, DEFERRED_EPILOGUE_COLUMNS)
        && best.waves >= DEFERRED_EPILOGUE_MIN_WAVES
        && ceil_div(problem.k, c.block_k) >= DEFERRED_EPILOGUE_MIN_K_BLOCKS;
    if !applies {
        return None;
    }
    let chunked = rescheduled(problem, machine, pins, best, c.schedule, c.num_warps, Epilogue::Tma { columns: DEFERRED_EPILOGUE_COLUMNS })?;
    Some(Candidate { config: Config { deferred_epilogue: true, ..chunked.config }, ..chunked })
}

/// Whether `tile-defer-epilogue` takes `c` (two consumers sharing each
/// tile's rows, persistent, unclustered, its K loop whole and not shared
/// by stream-K, the TMA epilogue) and its consumers hold the carried tile,
/// BF16 pairs, beside the accumulators: at most
/// [`DEFERRED_CARRY_REGISTERS`] registers a thread in all.
fn takes_deferred_epilogue(problem: &Problem, c: &Config) -> bool {
    let registers = problem.precision.accumulator_registers(c.block_m, c.block_n, 2);
    c.schedule == (Schedule::WarpSpecialized { consumers: 2 })
        && c.persistent()
        && c.cluster == Along::None
        && c.splits == 1
        && c.stream_k.is_none()
        && matches!(c.epilogue, Epilogue::Tma { .. })
        && !c.deferred_epilogue
        && registers.total + registers.running / 2 <= DEFERRED_CARRY_REGISTERS
}

/// The most registers a consumer thread of a deferred epilogue holds in
/// accumulators, partial sums and the carried tile: block-scaled FP8
/// 128x128 (160) and BF16 128x256 (192) spill nothing, FP8 128x176 (220)
/// spilled 1300 bytes and more
/// (measured: docs/evidence.md, config_rules.rs, takes_deferred_epilogue).
const DEFERRED_CARRY_REGISTERS: i64 = 192;

/// Rule 18: the deferred output buffer's columns, one 128-byte swizzle row
/// of BF16: wider chunks leave fewer K steps to spread the stores over,
/// narrower ones a narrower swizzle; 64 ran faster than 128 and 32
/// (measured: docs/evidence.md, config_rules.rs, deferred_epilogue and its constants).
const DEFERRED_EPILOGUE_COLUMNS: i64 = 64;

/// Rule 18: the fewest K blocks over which the deferred epilogue measured
/// faster: a shorter K loop has fewer steps to hide the chunks in
/// (measured: docs/evidence.md, config_rules.rs, deferred_epilogue and its constants).
const DEFERRED_EPILOGUE_MIN_K_BLOCKS: i64 = 64;

/// Rule 18: the fewest waves of tiles it measured faster over: the last
/// tile's stores stay exposed, a larger share of fewer tiles
/// (measured: docs/evidence.md, config_rules.rs, deferred_epilogue and its constants).
const DEFERRED_EPILOGUE_MIN_WAVES: i64 = 4;

/// Rule 7's alternative: the best tile split over `consumers` warpgroups fed
/// by a producer, persistent over the fewest SMs that keep the waves.
fn warp_specialized(problem: &Problem, machine: &Machine, pins: &Pins, best: &Candidate, consumers: i64) -> Option<Candidate> {
    let c = best.config;
    // Each consumer owns BM / consumers rows, at least one m64 wgmma, and
    // accumulators that fit its registers (a lone consumer's as light as
    // a lone warpgroup's in the plain pipeline).
    let rows = c.block_m / consumers;
    let registers = problem.precision.accumulator_registers(rows, c.block_n, 1);
    let fits = if consumers == 1 { registers.fit_alone() } else { registers.fit_shared() };
    if c.block_m % (64 * consumers) != 0 || !fits {
        return None;
    }
    let schedule = Schedule::WarpSpecialized { consumers };
    let specialised = rescheduled(problem, machine, pins, best, schedule, 4 * (consumers + 1), epilogue_for(problem, c.block_n, schedule))?;
    let specialised = chunked_epilogue(problem, machine, pins, specialised);
    Some(specialised).filter(|s| s.config.stages >= 2)
}

/// Rule 8's chunks: a BF16 warp-specialised tile whose TMA epilogue, stored
/// through a buffer half the tile wide that keeps the tile's swizzle,
/// leaves room for one more stage takes that stage (block-scaled FP8 keeps
/// its whole buffer: the stage gained it little, and 128x176 has no such
/// half). Its consumers wait for data when only two stages run ahead of
/// them. A chunk must keep the tile's swizzle: 88-column chunks of
/// 128x176, whose 176-byte rows no swizzle divides, ran slower with the
/// extra stage than without
/// (measured: docs/evidence.md, config_rules.rs, chunked_epilogue).
fn chunked_epilogue(problem: &Problem, machine: &Machine, pins: &Pins, c: Candidate) -> Candidate {
    let Epilogue::Tma { columns } = c.config.epilogue else {
        return c;
    };
    if problem.precision != Precision::Bf16 {
        return c;
    }
    let half = columns / 2;
    if half % BLOCK_N_STEP != 0 || !keeps_output_swizzle(&c.config, columns, half) {
        return c;
    }
    match rescheduled(problem, machine, pins, &c, c.config.schedule, c.config.num_warps, Epilogue::Tma { columns: half }) {
        Some(chunked) if chunked.config.stages > c.config.stages => chunked,
        _ => c,
    }
}

/// Bits of an element of C (BF16).
const OUTPUT_ELEM_BITS: u32 = 16;

/// Whether an output buffer `chunk` columns wide swizzles C's rows as widely
/// as one `columns` wide does for `c`'s tile (rules 8 and 18 chunk only so).
fn keeps_output_swizzle(c: &Config, columns: i64, chunk: i64) -> bool {
    let swizzle = |columns| crate::layout_rules::swizzle_bytes(columns, OUTPUT_ELEM_BITS, c.block_m);
    swizzle(chunk) >= swizzle(columns)
}

/// Rule 7's ping-pong alternative: the best-ranked tile whose accumulators
/// one consumer warpgroup holds, split over two consumers that take turns at
/// whole tiles, persistent. None where the K loop's trip count is data (a
/// masked grouped GEMM: a consumer could not count the other's K steps), or
/// where the dot reads A from registers: a consumer of two holds a whole
/// tile's accumulators and A's fragments in 232 registers (128x128
/// spilled).
fn ping_pong(problem: &Problem, machine: &Machine, pins: &Pins, ranked: &[Candidate]) -> Option<Candidate> {
    if problem.varying_k || problem.a_in_registers {
        return None;
    }
    let fits_one_warpgroup = |c: &&Candidate| problem.precision.accumulator_registers(c.config.block_m, c.config.block_n, 1).fit_alone();
    let tile = ranked.iter().find(fits_one_warpgroup)?;
    let schedule = Schedule::PingPong;
    let pingpong = rescheduled(problem, machine, pins, tile, schedule, 12, epilogue_for(problem, tile.config.block_n, schedule))?;
    Some(pingpong).filter(|p| p.config.stages >= 2)
}

/// `from`'s tile under another schedule, warp count and epilogue, with the
/// stages and scales (rules 6 and 11) and the shared memory worked out for
/// them; `None` when not one stage fits.
fn rescheduled(problem: &Problem, machine: &Machine, pins: &Pins, from: &Candidate, schedule: Schedule, num_warps: i64, epilogue: Epilogue) -> Option<Candidate> {
    let c = from.config;
    let tile = (c.block_m, c.block_n, c.block_k);
    let layout = SmemLayout { tile, epilogue, scales: Scales::None, schedule, splits: c.smem_layout().splits };
    let filled = match c.split_reduce {
        SplitReduce::Workspace => split_k_blocks(problem, c.block_k, c.splits),
        SplitReduce::Cluster => buffers_filled(problem, machine, schedule, c.block_k, from.tiles, c.splits),
    };
    let (stages, scales) = stages_and_scales(problem, machine, pins, layout, filled)?;
    let config = Config { stages, num_warps, schedule, epilogue, scales, ..c };
    let rescheduled = Candidate { config, smem_bytes: layout.with_scales(scales).smem_bytes(problem, stages), reason: String::new(), ..from.clone() };
    Some(with_waves(problem, machine, rescheduled))
}

/// The configurations the cost model weighs besides [`rank`]'s, which the
/// passes apply to any tile: for a block-scaled program whose B scales
/// come in a fixed number of rows, [`rank`]'s forms of every other width
/// those rows serve; each tile's K loop split over 2 to
/// 8 CTAs of a cluster (as many as `tile.sum_splits` adds up)
/// where they run in one wave; split over 2 to 64 CTAs (`WORKSPACE_SPLITS`) that
/// add their partial tiles through a global workspace, where there are
/// fewer tiles than SMs and the CTAs run in at most
/// `WORKSPACE_SPLIT_MAX_WAVES` waves; and, for one BF16
/// GEMM, each 128-row tile
/// over two consumers with its last wave's tiles shared by K iterations
/// over every SM (stream-K), which spreads a K loop over more CTAs than
/// there are tiles; for a program with an epilogue, every tile one
/// warpgroup holds under ping-pong consumers, which hide one tile's
/// epilogue behind the other's K loop; and for one whose epilogue works on
/// the converted tile, each of these the deferred epilogue takes, deferred
/// (`takes_deferred_epilogue`). Those already in `ranked` are left out, and so are the
/// stream-K widths whose consumers spill (128x208 and 128x240).
pub fn alternatives(problem: &Problem, machine: &Machine, pins: &Pins, ranked: &[Candidate]) -> Vec<Candidate> {
    let bk = pins.block_k.unwrap_or(problem.precision.block_k());
    let k_blocks = ceil_div(problem.k, bk);
    let block_ms: Vec<i64> = pins.block_m.map_or(BLOCK_MS.to_vec(), |m| vec![m]);
    let block_ns: Vec<i64> = pins.block_n.map_or_else(every_block_n, |n| vec![n]);
    // A program whose B scales come in a fixed number of rows takes the
    // widths whose tiles find their scales in those rows, at any offset
    // into a scale block their grid starts them at.
    let block_ns: Vec<i64> = match problem.b_scale_rows {
        Some(rows) => block_ns.into_iter().filter(|&bn| blocks_from_grid_offsets(bn) <= rows && spans_few_scale_blocks(bn, k_blocks)).collect(),
        None => block_ns,
    };
    let mut shapes: Vec<(i64, i64, i64)> = block_ms.iter().flat_map(|&bm| block_ns.iter().map(move |&bn| (bm, bn, bk))).collect();
    shapes.retain(|&(_, bn, _)| holds_whole_groups(problem, bn));
    let tiles = || shapes.iter().copied();
    let unclustered = pins.cluster.is_none_or(|along| along == Along::None);
    let mut found = Vec::new();
    // The rules rank one width for such a program
    // ([`block_n_across_scale_blocks`]); every other width is weighed in
    // the forms the rules give it when pinned.
    if problem.b_scale_rows.is_some() && pins.block_n.is_none() {
        for &bn in block_ns.iter().filter(|&&bn| ranked.iter().all(|c| c.config.block_n != bn) && holds_whole_groups(problem, bn)) {
            found.extend(rank(problem, machine, &Pins { block_n: Some(bn), ..*pins }));
        }
    }
    if problem.clusterable && !problem.varying_k && pins.cluster.is_none() {
        for splits in 2..=SUM_SPLITS {
            found.extend(
                tiles()
                    .filter(|_| k_blocks >= 2 * splits)
                    .filter_map(|tile| tile_candidate(problem, machine, pins, tile, splits, SplitReduce::Cluster))
                    .filter(|c| c.waves == 1 && c.tiles * splits <= split_capacity(machine, splits)),
            );
        }
    }
    if problem.clusterable && !problem.varying_k && unclustered {
        for splits in WORKSPACE_SPLITS {
            let split: Vec<Candidate> = tiles()
                .filter(|&(bm, bn, _)| ceil_div(problem.m, bm) * ceil_div(problem.n, bn) < machine.sms)
                .filter(|_| k_blocks >= MIN_K_BLOCKS_PER_SPLIT * splits)
                .filter_map(|tile| tile_candidate(problem, machine, pins, tile, splits, SplitReduce::Workspace))
                .collect();
            // The same splits under a producer warpgroup and one or two
            // consumers, one CTA for each split of each tile; not beside a
            // program's epilogue, whose registers are not weighed: with
            // the reduction's they spilled (docs/cost-model.md).
            let specialised: Vec<Candidate> = split
                .iter()
                .filter(|_| problem.epilogue.is_plain())
                .flat_map(|c| [1, 2].map(|consumers| warp_specialized(problem, machine, pins, c, consumers)))
                .flatten()
                .map(|c| Candidate { sms: machine.sms, ..c })
                .collect();
            found.extend(split.into_iter().chain(specialised).filter(|c| c.waves <= WORKSPACE_SPLIT_MAX_WAVES));
        }
    }
    let one_gemm = problem.clusterable && !problem.varying_k && !problem.any_n;
    if problem.precision == Precision::Bf16 && one_gemm && unclustered {
        for tile in tiles().filter(|&(bm, bn, _)| bm == 128 && !STREAM_K_SPILLING_BLOCK_NS.contains(&bn)) {
            let Some(ws) = tile_candidate(problem, machine, pins, tile, 1, SplitReduce::Cluster).and_then(|c| warp_specialized(problem, machine, pins, &c, 2)) else {
                continue;
            };
            if ws.tiles % machine.sms == 0 {
                continue;
            }
            found.push(Candidate { config: Config { stream_k: Some(PieceOrder::InOrder), ..ws.config }, sms: machine.sms, ..ws });
        }
    }
    // An epilogue's element-wise work idles the tensor cores of every
    // schedule but ping-pong, whose consumers run one tile's epilogue beside
    // the other's K loop: every tile one warpgroup holds, in that form.
    if !problem.epilogue.is_plain() && !problem.varying_k && !problem.a_in_registers && unclustered {
        let fits_one_warpgroup = |&(bm, bn, _): &(i64, i64, i64)| bm % 64 == 0 && problem.precision.accumulator_registers(bm, bn, 1).fit_alone();
        for tile in tiles().filter(fits_one_warpgroup) {
            let Some(plain) = tile_candidate(problem, machine, pins, tile, 1, SplitReduce::Cluster) else { continue };
            let epilogue = epilogue_for(problem, tile.1, Schedule::PingPong);
            found.extend(rescheduled(problem, machine, pins, &plain, Schedule::PingPong, 12, epilogue).filter(|p| p.config.stages >= 2));
        }
    }
    // Two consumers sharing each tile's columns, where the kernel lets
    // them (`tile-warp-specialize`'s halves=columns): a BF16 dot with B
    // given N x K and no reduction over a row's columns in the epilogue;
    // persistent, and, as the tiles that share rows, with the last wave
    // shared by K iterations for one GEMM, and split through the
    // workspace where the tiles are fewer than the SMs.
    let shares_columns = problem.precision == Precision::Bf16 && problem.transpose_b && problem.column_group.is_none() && !problem.a_in_registers;
    if shares_columns && unclustered {
        let column_halves: Vec<(i64, i64, i64)> = COLUMN_HALVES_TILES
            .iter()
            .flat_map(|(bm, bns)| bns.clone().step_by(BLOCK_N_STEP as usize).map(move |bn| (*bm, bn, bk)))
            .filter(|&(bm, bn, _)| pins.block_m.is_none_or(|m| m == bm) && pins.block_n.is_none_or(|n| n == bn))
            .collect();
        for &tile in &column_halves {
            let persistent = column_halves_candidates(problem, machine, pins, tile, 1);
            // A split's or a stream-K piece's hand-over holds partial sums
            // beside the accumulators.
            if problem.precision.accumulator_registers(tile.0, tile.1 / 2, 1).running > COLUMN_HALF_HANDOVER_REGISTERS {
                found.extend(persistent);
                continue;
            }
            if one_gemm {
                let stream_k = persistent.iter().filter(|c| c.tiles % machine.sms != 0);
                found.extend(stream_k.map(|c| Candidate { config: Config { stream_k: Some(PieceOrder::InOrder), ..c.config }, sms: machine.sms, ..c.clone() }).collect::<Vec<_>>());
            }
            found.extend(persistent);
            let splittable = problem.clusterable && !problem.varying_k && problem.epilogue.is_plain() && ceil_div(problem.m, tile.0) * ceil_div(problem.n, tile.1) < machine.sms;
            for splits in WORKSPACE_SPLITS.into_iter().filter(|&s| splittable && k_blocks >= MIN_K_BLOCKS_PER_SPLIT * s) {
                found.extend(column_halves_candidates(problem, machine, pins, tile, splits).into_iter().filter(|c| c.waves <= WORKSPACE_SPLIT_MAX_WAVES));
            }
        }
    }
    // An epilogue that works on the converted tile (an FP8 quantisation's
    // absmax, scaling and codes) has that work, not only its stores, moved
    // beside the next tile's K loop by the deferred epilogue: each form
    // weighed so far that `tile-defer-epilogue` takes, deferred.
    if problem.epilogue.defers_work() {
        let deferred: Vec<Candidate> = ranked
            .iter()
            .chain(&found)
            .filter(|c| takes_deferred_epilogue(problem, &c.config))
            .map(|c| Candidate { config: Config { deferred_epilogue: true, ..c.config }, ..c.clone() })
            .collect();
        found.extend(deferred);
    }
    let mut fresh: Vec<Candidate> = Vec::new();
    // Block-scaled tiles promoted an m64 block of rows at a time, which
    // the rules rank only behind the others and the model predicts about a
    // fifth faster than they run (docs/cost-model.md), are no alternative
    // unless block M is pinned.
    found.retain(|c| pins.block_m.is_some() || !promotes_by_row_blocks(&c.config));
    for mut c in found {
        c.config.raster_group = raster_group_for(problem, machine, &c);
        if ranked.iter().chain(&fresh).all(|r| r.config != c.config) {
            c.reason = "an alternative the rules do not rank: weighed by the cost model".to_string();
            fresh.push(c);
        }
    }
    fresh
}

/// The tiles two consumers sharing each tile's columns take, as block M
/// and a range of block N: 192 rows (whose halves of rows hold no whole
/// m64 blocks), which cover M up to 192 in one row of tiles so that B is
/// read once, and 128 rows wider than one wgmma's 256 columns, which cover
/// N in fewer column tiles. A consumer holds every row and half of the
/// columns: at most [`COLUMN_HALF_RUNNING_REGISTERS`] accumulators a thread.
const COLUMN_HALVES_TILES: [(i64, std::ops::RangeInclusive<i64>); 2] = [(192, 32..=208), (128, 272..=320)];

/// The widest tile two consumers sharing its columns take.
fn widest_column_halves() -> i64 {
    COLUMN_HALVES_TILES.iter().map(|(_, bns)| *bns.end()).max().unwrap_or(MAX_BLOCK_N)
}

/// The most running accumulator registers a consumer thread that holds
/// half of a tile's columns keeps: of its 240, the rest hold addresses and
/// loop state (measured: docs/evidence.md, config_rules.rs, column halves).
const COLUMN_HALF_RUNNING_REGISTERS: i64 = 160;

/// The most running accumulator registers a consumer thread that holds
/// half of a tile's columns keeps where it also hands partial tiles over
/// (split-K through the workspace, stream-K): past it ptxas spilled under
/// stream-K (measured: docs/evidence.md, config_rules.rs, column halves).
const COLUMN_HALF_HANDOVER_REGISTERS: i64 = 128;

/// `tile` under two consumers that share each tile's columns
/// ([`Schedule::ColumnHalves`]): persistent over the fewest SMs that keep
/// the waves, or, its K loop split `splits` ways through the workspace,
/// one CTA for each split of each tile; with the TMA epilogue where C's
/// rows allow one, and storing directly, whose shared memory leaves room
/// for more stages (a 128x304 tile's TMA buffers leave two). None where a
/// consumer's half holds too many accumulators.
fn column_halves_candidates(problem: &Problem, machine: &Machine, pins: &Pins, tile: (i64, i64, i64), splits: i64) -> Vec<Candidate> {
    let (bm, bn, _) = tile;
    if bn % (2 * 8) != 0 || problem.precision.accumulator_registers(bm, bn / 2, 1).running > COLUMN_HALF_RUNNING_REGISTERS {
        return Vec::new();
    }
    let mut epilogues = vec![epilogue_for(problem, bn / 2, Schedule::ColumnHalves)];
    // Split in two, the direct stores' consumers spilled under ptxas where
    // the TMA store could have taken the half; split three ways or more, or
    // through the TMA store, none did (measured: docs/evidence.md,
    // config_rules.rs, column halves).
    if epilogues[0] != Epilogue::Global && splits != 2 {
        epilogues.push(Epilogue::Global);
    }
    epilogues.into_iter().filter_map(|epilogue| column_halves_candidate(problem, machine, pins, tile, epilogue, splits)).collect()
}

/// One of [`column_halves_candidates`]; `None` where not two stages fit.
fn column_halves_candidate(problem: &Problem, machine: &Machine, pins: &Pins, (bm, bn, bk): (i64, i64, i64), epilogue: Epilogue, splits: i64) -> Option<Candidate> {
    let schedule = Schedule::ColumnHalves;
    let tiles = ceil_div(problem.m, bm) * ceil_div(problem.n, bn);
    // A workspace split keeps no partial tile in shared memory and fills
    // no more stages than its share of K blocks.
    let layout = SmemLayout { tile: (bm, bn, bk), epilogue, scales: Scales::None, schedule, splits: 1 };
    let (filled, split_reduce) = match splits {
        1 => (buffers_filled(problem, machine, schedule, bk, tiles, 1), SplitReduce::Cluster),
        _ => (split_k_blocks(problem, bk, splits), SplitReduce::Workspace),
    };
    let (stages, scales) = stages_and_scales(problem, machine, pins, layout, filled)?;
    let config = Config { stages, num_warps: 12, schedule, epilogue, scales, splits, split_reduce, ..Config::neutral((bm, bn, bk)) };
    let candidate = Candidate { config, tiles, waves: 0, last_wave: 0, sms: 0, smem_bytes: layout.with_scales(scales).smem_bytes(problem, stages), reason: String::new() };
    let candidate = chunked_epilogue(problem, machine, pins, with_waves(problem, machine, candidate));
    let candidate = if splits > 1 { Candidate { sms: machine.sms, ..candidate } } else { candidate };
    Some(candidate).filter(|c| c.config.stages >= 2)
}

/// The split counts weighed for a K loop shared through a global
/// workspace: steps that grow by about half, so that some count fills the
/// SMs with any number of tiles, up to the most `tile.reduce_splits` adds.
const WORKSPACE_SPLITS: [i64; 11] = [2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64];

/// The most waves a workspace split's CTAs may take. Splits past one wave
/// can still fill the SMs better: 48 tiles over 132 SMs fill 73% of one
/// wave, split in eight they fill 91% of the third. The cost model weighs
/// that against the extra partial tiles through L2; past a few waves each
/// split's K range is short and its pipeline mostly fill and drain.
const WORKSPACE_SPLIT_MAX_WAVES: i64 = 4;

/// The fewest K blocks a workspace split runs: fewer leave its pipeline
/// mostly fill and drain, and its partial tile's trip through L2 costs
/// more than the K steps it takes off the others.
const MIN_K_BLOCKS_PER_SPLIT: i64 = 4;

/// Block N of the 128-row BF16 tiles whose two consumers spill registers
/// under `tile-stream-k`'s index arithmetic, as `ptxas -v` reports it (32
/// and 52 bytes; docs/cost-model.md): a kernel that spills is not a
/// candidate.
const STREAM_K_SPILLING_BLOCK_NS: [i64; 2] = [208, 240];

/// `config`'s figures for `problem` (tiles, waves, the SMs it runs on,
/// shared memory), as [`rank`] lists them: what the cost model reads of a
/// configuration taken from elsewhere (a measurement, a tuning file).
pub fn figures(problem: &Problem, machine: &Machine, config: Config) -> Candidate {
    let tiles = ceil_div(problem.m, config.block_m) * ceil_div(problem.n, config.block_n);
    let smem_bytes = config.smem_layout().smem_bytes(problem, config.stages);
    let mut c = with_waves(problem, machine, Candidate { config, tiles, waves: 0, last_wave: 0, sms: 0, smem_bytes, reason: String::new() });
    if config.stream_k.is_some() || (config.schedule != Schedule::Pipeline && !config.persistent()) {
        c.sms = machine.sms;
    } else if config.persistent() {
        c.sms = persistent_sms(problem, machine, &config);
    }
    c
}

/// The pick: the first of [`rank`], or why there is none.
pub fn choose(problem: &Problem, machine: &Machine, pins: &Pins) -> Result<Candidate, String> {
    check_pins(problem, pins)?;
    rank(problem, machine, pins).into_iter().next().ok_or_else(|| {
        format!(
            "no configuration fits {}x{}x{} with the pinned values {pins:?} in {} bytes of shared memory",
            problem.m, problem.n, problem.k, machine.smem_bytes
        )
    })
}

/// Rejects shapes and pins the rules cannot build.
pub fn check_pins(problem: &Problem, pins: &Pins) -> Result<(), String> {
    check_shape(problem.m, problem.n, problem.k)?;
    let pinned = [("BLOCK_M", pins.block_m), ("BLOCK_N", pins.block_n), ("BLOCK_K", pins.block_k), ("STAGES", pins.stages)];
    for (name, value) in pinned {
        value.map_or(Ok(()), |v| check_pin(name, v))?;
    }
    if let (Some(n), Some(g)) = (pins.block_n, problem.column_group) {
        if n % g != 0 {
            return Err(format!("BLOCK_N {n} must be a multiple of {g}: the epilogue reduces or stores groups of {g} columns, which a tile must hold whole"));
        }
    }
    if pins.cluster.is_some_and(|along| along != Along::None) && !problem.clusterable {
        return Err("a cluster needs CTAs whose tiles share an operand tile; scalar loads or a batch over grid z rule clusters out".to_string());
    }
    Ok(())
}

/// Rejects a problem shape no kernel can take: each of M, N and K must be
/// positive and fit the kernel's i32 scalar parameters.
pub fn check_shape(m: i64, n: i64, k: i64) -> Result<(), String> {
    if m < 1 || n < 1 || k < 1 {
        return Err(format!("problem shape {m}x{n}x{k} must be positive"));
    }
    if let Some(dim) = [m, n, k].into_iter().find(|&d| d > i64::from(i32::MAX)) {
        return Err(format!("problem shape {m}x{n}x{k}: {dim} is larger than {}, the most a kernel's i32 M, N and K parameters hold", i32::MAX));
    }
    Ok(())
}

/// Rejects a value the passes cannot build for the block size or stage
/// count `name` (`BLOCK_M`, `BLOCK_N`, `BLOCK_K` or `STAGES`).
pub fn check_pin(name: &str, value: i64) -> Result<(), String> {
    let ok = match name {
        "BLOCK_M" => BLOCK_MS.contains(&value) || COLUMN_HALVES_TILES.iter().any(|(bm, _)| *bm == value),
        "BLOCK_N" => (BLOCK_N_STEP..=widest_column_halves()).contains(&value) && value % BLOCK_N_STEP == 0,
        "BLOCK_K" => [16, 32, 64, 128].contains(&value),
        "STAGES" => (1..=STAGES_LIMIT).contains(&value),
        _ => return Err(format!("'{name}' is not a block size or the stage count (BLOCK_M, BLOCK_N, BLOCK_K, STAGES)")),
    };
    if ok {
        return Ok(());
    }
    Err(match name {
        "BLOCK_M" => format!("BLOCK_M must be 64, 128, 192 or 256, found {value}"),
        "BLOCK_N" => format!("BLOCK_N must be a multiple of {BLOCK_N_STEP} from {BLOCK_N_STEP} to {MAX_BLOCK_N}, or to {} with two consumers sharing each tile's columns, found {value}", widest_column_halves()),
        "BLOCK_K" => format!("BLOCK_K must be 16, 32, 64 or 128, found {value}"),
        _ => format!("stages must be from 1 to {STAGES_LIMIT}, found {value}"),
    })
}
#[cfg(test)]
mod tests {
    use super::*;

    /// A plain BF16 program's problem: A staged, tiles sharing operands, a
    /// K loop of fixed length.
    fn bf16(m: i64, n: i64, k: i64) -> Problem {
        Problem { m, n, k, precision: Precision::Bf16, any_n: false, clusterable: true, varying_k: false, b_scale_rows: None, a_in_registers: false, transpose_b: true, a_scales_by_run: false, column_group: None, output_bytes: 2, epilogue: crate::cost_model::epilogue::EpilogueWork::default() }
    }

    /// The same for block-scaled FP8, its tiles of B starting scale blocks.
    fn fp8(m: i64, n: i64, k: i64) -> Problem {
        Problem { precision: Precision::Fp8BlockScaled, ..bf16(m, n, k) }
    }

    fn pick(m: i64, n: i64, k: i64) -> Candidate {
        choose(&bf16(m, n, k), &Machine::H100, &Pins::default()).unwrap()
    }

    /// (block_m, block_n, stages, epilogue, waves, last wave) of the pick.
    fn summary(c: &Candidate) -> (i64, i64, i64, &'static str, i64, i64) {
        (c.config.block_m, c.config.block_n, c.config.stages, c.config.epilogue.word(), c.waves, c.last_wave)
    }

    /// Rule 8's epilogues as `summary` names them.
    const TMA: &str = "tma";
    const GLOBAL: &str = "global";

    // Shared memory per stage is (BM + BN) * 64 * 2 bytes + an 8-byte barrier;
    // the TMA epilogue adds BM * BN * 2 bytes; the budget is 232448 bytes.
    /// Consumers that share a tile's columns are weighed only where
    /// `tile-warp-specialize{halves=columns}` builds them (a BF16 dot with B
    /// given N x K and no reduction over a row's columns), and only in the
    /// forms that assembled without spills: at most 160 running
    /// accumulators a consumer, 128 with a split or stream-K, and no
    /// direct stores split in two where the TMA store can take the half.
    #[test]
    fn column_halves_are_weighed_where_the_passes_build_them() {
        let machine = Machine::of(&tilec_target::Target::DEFAULT);
        let halves = |p: &Problem| {
            let ranked = rank(p, &machine, &Pins::default());
            alternatives(p, &machine, &Pins::default(), &ranked).into_iter().filter(|c| c.config.schedule == Schedule::ColumnHalves).collect::<Vec<_>>()
        };
        for p in [bf16(154, 22384, 4944), bf16(2072, 656, 59056), bf16(11084, 896, 4864)] {
            let found = halves(&p);
            assert!(!found.is_empty(), "{}x{}x{}", p.m, p.n, p.k);
            for c in &found {
                let running = p.precision.accumulator_registers(c.config.block_m, c.config.block_n / 2, 1).running;
                let hands_over = c.config.splits > 1 || c.config.stream_k.is_some();
                assert!(running <= COLUMN_HALF_RUNNING_REGISTERS && (!hands_over || running <= COLUMN_HALF_HANDOVER_REGISTERS), "{}", c.config);
                // Split in two, a half wide enough for the TMA store takes it.
                assert!(!(c.config.splits == 2 && c.config.epilogue == Epilogue::Global && c.config.block_n / 2 > NARROW_BLOCK_N), "{}", c.config);
                assert!(c.config.block_n % 16 == 0 && c.config.cluster == Along::None, "{}", c.config);
            }
        }
        assert!(halves(&bf16(2072, 656, 59056)).iter().any(|c| c.config.splits > 1 && c.config.split_reduce == SplitReduce::Workspace));
        assert!(halves(&Problem { transpose_b: false, ..bf16(154, 22384, 4944) }).is_empty());
        assert!(halves(&Problem { column_group: Some(128), ..bf16(154, 22384, 4944) }).is_empty());
        assert!(halves(&Problem { a_in_registers: true, ..bf16(154, 22384, 4944) }).is_empty());
        assert!(halves(&fp8(154, 22384, 4944)).is_empty());
    }

    #[test]
    fn an_epilogue_brings_ping_pong_alternatives() {
        let machine = Machine::of(&Target::H200);
        let gelu = crate::cost_model::epilogue::EpilogueWork { lane_ops: 6, sfu_ops: 1, ..Default::default() };
        for (m, n, k) in [(4096, 4096, 4096), (4096, 32768, 512), (1000, 1000, 1000)] {
            let plain = bf16(m, n, k);
            let fused = Problem { epilogue: gelu, ..plain };
            let ping_pong = |p: &Problem| {
                let ranked = rank(p, &machine, &Pins::default());
                alternatives(p, &machine, &Pins::default(), &ranked).into_iter().filter(|c| c.config.schedule == Schedule::PingPong).collect::<Vec<_>>()
            };
            let added = ping_pong(&fused);
            assert!(!added.is_empty(), "{m}x{n}x{k}: no ping-pong alternative for an epilogue");
            assert!(added.iter().all(|c| precision_fits_one_warpgroup(c)), "{m}x{n}x{k}: a ping-pong tile one warpgroup cannot hold");
            assert!(ping_pong(&plain).is_empty(), "{m}x{n}x{k}: the plain program's alternatives are unchanged");
        }
    }

    fn precision_fits_one_warpgroup(c: &Candidate) -> bool {
        Precision::Bf16.accumulator_registers(c.config.block_m, c.config.block_n, 1).fit_alone() && c.config.stages >= 2
    }

    #[test]
    fn shapes_and_pins_the_passes_cannot_build_are_refused() {
        assert!(check_shape(274_877_906_944, 274_877_906_944, 8).unwrap_err().contains("274877906944 is larger than 2147483647"));
        assert!(check_shape(0, 8, 8).unwrap_err().contains("must be positive"));
        assert_eq!(check_shape(i64::from(i32::MAX), 1, 1), Ok(()));
        assert!(check_pin("BLOCK_N", 336).unwrap_err().contains("multiple of 16 from 16 to 256, or to 320 with two consumers sharing each tile's columns, found 336"));
        assert_eq!(check_pin("BLOCK_N", 304), Ok(()));
        assert!(check_pin("BLOCK_M", 96).unwrap_err().contains("64, 128, 192 or 256"));
        assert!(check_pin("STAGES", 17).unwrap_err().contains("from 1 to 16"));
        assert!(check_pin("BLOCK_Q", 1).is_err());
        assert_eq!(check_pin("BLOCK_K", 64), Ok(()));
    }

    #[test]
    fn a_config_reads_back_as_it_prints() {
        for p in [bf16(4096, 4096, 4096), bf16(512, 512, 65536), bf16(64, 2112, 7168), fp8(4096, 7168, 16384), bf16(8192, 8192, 8192)] {
            let ranked = rank(&p, &Machine::H100, &Pins::default());
            for c in ranked.iter().chain(&alternatives(&p, &Machine::H100, &Pins::default(), &ranked)) {
                let text = format!("{} sms={}", c.config, c.sms);
                assert_eq!(text.parse::<Config>(), Ok(c.config), "{text}");
            }
        }
        assert!("128x128 stages=4 warps=4".parse::<Config>().unwrap_err().contains("BMxBNxBK"));
        assert!("128x128x64 stages=4 warps=4 pipeline fast".parse::<Config>().unwrap_err().contains("unknown word 'fast'"));
        assert!("128x128x64 pipeline".parse::<Config>().unwrap_err().contains("stages"));
    }

    #[test]
    fn a_block_scaled_program_weighs_every_width_its_scale_rows_serve() {
        let widths = |p: &Problem| {
            let ranked = rank(p, &Machine::H100, &Pins::default());
            let all: Vec<Candidate> = ranked.iter().cloned().chain(alternatives(p, &Machine::H100, &Pins::default(), &ranked)).collect();
            let mut block_ns: Vec<i64> = all.iter().map(|c| c.config.block_n).collect();
            block_ns.sort_unstable();
            block_ns.dedup();
            block_ns
        };
        // Three scale rows serve any width up to 256 at any offset; the
        // rules rank one of them.
        let three = Problem { b_scale_rows: Some(3), ..fp8(64, 7168, 16384) };
        assert_eq!(rank(&three, &Machine::H100, &Pins::default()).iter().map(|c| c.config.block_n).collect::<std::collections::BTreeSet<_>>().len(), 1);
        // At 128 K blocks every width whose accumulators fit is weighed
        // (past 192 they outgrow the registers at 64 rows).
        let all = widths(&three);
        assert!(every_block_n().into_iter().filter(|&n| n <= 192).all(|n| all.contains(&n)), "{all:?}");
        // Two rows leave out the widths whose tiles touch three blocks
        // (176 starts a tile 112 rows into one).
        let two = widths(&Problem { b_scale_rows: Some(2), ..fp8(64, 7168, 16384) });
        assert!(two.contains(&192) && two.contains(&112) && !two.contains(&176), "{two:?}");
        // Below 32 K blocks a tile spanning three blocks is no candidate.
        let short = widths(&Problem { b_scale_rows: Some(3), ..fp8(64, 7168, 2048) });
        assert!(short.contains(&192) && !short.contains(&176), "{short:?}");
    }

    #[test]
    fn workspace_splits_are_weighed_where_tiles_are_fewer_than_the_sms() {
        let workspace = |p: &Problem| {
            let ranked = rank(p, &Machine::H100, &Pins::default());
            alternatives(p, &Machine::H100, &Pins::default(), &ranked).into_iter().filter(|c| c.config.split_reduce == SplitReduce::Workspace).collect::<Vec<_>>()
        };
        let deep = workspace(&bf16(512, 512, 65536));
        assert!(deep.iter().any(|c| c.config.splits > MAX_SPLITS * 2), "splits past a cluster's");
        for c in &deep {
            assert!(c.tiles < Machine::H100.sms && c.waves <= WORKSPACE_SPLIT_MAX_WAVES, "{}", c.config);
            assert!(ceil_div(65536, c.config.block_k) >= MIN_K_BLOCKS_PER_SPLIT * c.config.splits, "{}", c.config);
            // No partial tile in shared memory: the workspace holds them.
            assert_eq!(c.smem_bytes, SmemLayout { splits: 1, ..c.config.smem_layout() }.smem_bytes(&bf16(512, 512, 65536), c.config.stages));
        }
        assert!(workspace(&bf16(4096, 4096, 4096)).is_empty(), "as many tiles as SMs need no split");
        assert!(workspace(&bf16(512, 512, 128)).is_empty(), "two K blocks are too few to share");
        // 48 FP8 tiles of 128x128 fill 73% of one wave of the H100's SMs;
        // split in eight they fill most of a third, the split the H200 ran
        // faster at 1009x704x51264 (docs/cost-model.md).
        let few = workspace(&fp8(1009, 704, 51264));
        assert!(few.iter().any(|c| c.config.splits == 8 && c.waves == 3), "{:?}", few.iter().map(|c| c.config.to_string()).collect::<Vec<_>>());
        assert!(few.iter().all(|c| c.waves <= WORKSPACE_SPLIT_MAX_WAVES));
        assert!(!workspace(&fp8(256, 512, 16384)).is_empty(), "block-scaled FP8 takes its ranked widths");
        assert!(WORKSPACE_SPLITS.iter().all(|&s| (2..=tilec_dialects::tile::reduce::MAX_WORKSPACE_SPLITS).contains(&s)));
    }

    #[test]
    fn benchmark_shapes() {
        let table: &[((i64, i64, i64), (i64, i64, i64, &str, i64, i64))] = &[
            // 128x256: 32*16 = 512 tiles, 4 waves (3*132 = 396, last 116). Three waves
            // would need BM*BN >= 4096^2/396 = 42366 > 32768 (rule 1's largest tile).
            // 256x128 ties on waves, last wave and padding; wider N wins.
            // Stages: 3*49160 + 65536 = 213016 fits, 4 would be 262176; over
            // more than 2 waves the tile over two consumers is picked (rule 7),
            // whose output in 128-column chunks (32768 bytes) leaves room for 4.
            ((4096, 4096, 4096), (128, 256, 4, TMA, 4, 116)),
            // 64*32 = 2048 tiles, 16 waves, last 2048 - 15*132 = 68; 15 waves needs
            // BM*BN >= 8192^2/1980 = 33893. Over at least 6 waves the two
            // consumers share the tile as 256x128 (rule 16), with the output in
            // 64-column chunks: 4*49152 + 2*128*64*2 + 8 mbarriers = 229440.
            ((8192, 8192, 8192), (256, 128, 4, TMA, 16, 68)),
            // BM 64 pads M least; BN 16 gives ceil(2112/16) = 132 tiles, one full wave.
            // A 16-column tile over 112 K blocks is split (rule 12): 64x32 tiles,
            // 66 of them, two CTAs each (132). Stages capped at 8: 8*12296, the
            // partial tile on a 1024-byte boundary (8192) and the output (4096).
            ((64, 2112, 7168), (64, 32, 8, TMA, 1, 132)),
            // One wave needs ceil(24576/BN) <= 132, BN >= 187: BN 192 gives 128 tiles
            // (208: 119, 224: 110, 256: 96). 6*32776 + 24576 = 221232; 7 stages do not fit.
            ((64, 24576, 1536), (64, 192, 6, TMA, 1, 128)),
            // ceil(32768/BN) <= 132 needs BN 256: 128 tiles. 4*40968 + 32768 = 196640.
            ((64, 32768, 512), (64, 256, 4, TMA, 1, 128)),
            // BN 64: 112 tiles (48 would be 150 tiles, two waves; 80 gives 90).
            // 8*16392 + 8192 = 139328.
            ((64, 7168, 16384), (64, 64, 8, TMA, 1, 112)),
            // BN 32: 128 tiles (16 would be 256, two waves); narrow: split into
            // 64 tiles of 64x64, two CTAs each.
            ((64, 4096, 7168), (64, 64, 8, TMA, 1, 128)),
            ((64, 7168, 2048), (64, 64, 8, TMA, 1, 112)),
            // 64x32: 2*66 = 132 tiles; 128x16: 1*132, same padding (270336 elements);
            // wider N wins; narrow: split into 66 tiles of 128x32, two CTAs each.
            ((128, 2112, 7168), (128, 32, 8, TMA, 1, 132)),
            // BM 128: BN 192 gives 128 tiles; BM 64 would need ceil(24576/BN) <= 66.
            // 4*40968 + 49152 = 213024; 5 stages do not fit.
            ((128, 24576, 1536), (128, 192, 4, TMA, 1, 128)),
            // 128x256: 128 tiles. 3*49160 + 65536 = 213016.
            ((128, 32768, 512), (128, 256, 3, TMA, 1, 128)),
            // BM 64: ceil(7168/BN) <= 66 needs BN 112, 2*64 = 128 tiles; BM 128, BN 64
            // gives 112. 8*22536 + 14336 = 194624.
            ((128, 7168, 16384), (64, 112, 8, TMA, 1, 128)),
            // 64x64 and 128x32 both give 128 tiles and 524288 padded elements; wider N.
            // Its two rows of 64x64 tiles over 112 K blocks take rule 15: one
            // consumer, clusters along M, 13*16384 + 8192 + 26 mbarriers = 221392.
            ((128, 4096, 7168), (64, 64, 13, TMA, 1, 128)),
            ((128, 7168, 2048), (64, 112, 8, TMA, 1, 128)),
            // 128x176: 32*12 = 384 tiles, 3 waves, last 120. Two waves would need
            // <= 264 tiles (128x256 gives 288); 128x192 gives 352 (last 88), 128x160
            // 448 (4 waves). Two consumers (rule 7): 4*38920 + 45056 + 8
            // mbarriers = 200768; 5 stages do not fit.
            ((4096, 2112, 7168), (128, 176, 4, TMA, 3, 120)),
            // 32*96 = 3072 tiles, 24 waves, last 3072 - 23*132 = 36; 23 waves needs
            // BM*BN >= 33156. Shared as 256x128 as at 8192^3.
            ((4096, 24576, 1536), (256, 128, 4, TMA, 24, 36)),
            // 32*128 = 4096 tiles, 32 waves, last 4; 31 waves needs BM*BN >= 32800.
            // Warp-specialised (rule 7), shared as 256x128 (rule 16).
            ((4096, 32768, 512), (256, 128, 4, TMA, 32, 4)),
            // 32*28 = 896 tiles, 7 waves, last 104; 128x240 and 128x224 take 8
            // waves. Two consumers share 256x128 tiles (7 waves: rule 16).
            ((4096, 7168, 16384), (256, 128, 4, TMA, 7, 104)),
            // 4 waves: two consumers share the 128x256 tile itself, as at 4096^3.
            ((4096, 4096, 7168), (128, 256, 4, TMA, 4, 116)),
            ((4096, 7168, 2048), (256, 128, 4, TMA, 7, 104)),
        ];
        assert_eq!(table.len(), 20);
        for &((m, n, k), expected) in table {
            assert_eq!(summary(&pick(m, n, k)), expected, "{m}x{n}x{k}");
        }
    }

    #[test]
    fn a_in_registers_takes_no_ping_pong_consumers() {
        let tile = Pins { block_m: Some(128), block_n: Some(128), ..Pins::default() };
        // A 128x128 tile (the A-in-registers example's) over many waves has a
        // ping-pong alternative, but not when the dot reads A from registers.
        let has_ping_pong = |p: Problem| rank(&p, &Machine::H100, &tile).iter().any(|c| c.config.schedule == Schedule::PingPong);
        assert!(has_ping_pong(bf16(4096, 4096, 4096)));
        assert!(!has_ping_pong(Problem { a_in_registers: true, ..bf16(4096, 4096, 4096) }));
        assert!(!rank(&Problem { a_in_registers: true, ..bf16(4096, 4096, 4096) }, &Machine::H100, &tile).is_empty());
    }

    #[test]
    fn narrow_tiles_with_a_long_k_split_k_in_two() {
        // 64x16, 64x32 and 64x32 tiles over 112 K blocks in one wave: tiles
        // twice as large, two CTAs each, pipelined; taller where M holds two
        // rows of the narrow tiles (128x2112), wider where a taller tile
        // would pad M (64 rows); the unsplit tile, warp-specialised with one
        // consumer, next.
        for ((m, n), narrow, split_tile) in [((64, 2112), 16, (64, 32)), ((128, 2112), 32, (128, 32)), ((64, 4096), 32, (64, 64))] {
            let ranked = rank(&bf16(m, n, 7168), &Machine::H100, &Pins::default());
            let (split, unsplit) = (ranked[0].config, ranked[1].config);
            assert_eq!((split.block_m, split.block_n, split.splits, split.schedule), (split_tile.0, split_tile.1, 2, Schedule::Pipeline), "{m}x{n}x7168");
            assert_eq!((unsplit.block_m, unsplit.block_n, unsplit.splits, unsplit.schedule), (64, narrow, 1, Schedule::WarpSpecialized { consumers: 1 }), "{m}x{n}x7168");
            assert_eq!(ranked[0].tiles * 2, ranked[0].sms);
        }
        let c = pick(64, 2112, 7168);
        assert!(c.reason.ends_with("; K split over 2 CTAs of a cluster (a long K in one wave of narrow or few tiles)"), "{}", c.reason);
        // The partial f32 tile counts: 8 stages of (64 + 32) * 128 bytes and
        // 8 barriers, then 64*32*4 and the 64*32*2 output tile.
        assert_eq!(c.smem_bytes, 8 * 12288 + 8192 + 4096 + 8 * 8);
        // 64-column tiles, or K under 32 blocks, keep one CTA per tile (and
        // at 128x4096x7168 take rule 15's schedule).
        for (m, n, k) in [(128, 4096, 7168), (64, 2112, 1024)] {
            assert_eq!(pick(m, n, k).config.splits, 1, "{m}x{n}x{k}");
        }
        // Operands chosen by data or batched (grouped, masked): never split;
        // nor with N or a cluster pinned.
        let never = |p: Problem, pins: &Pins| rank(&p, &Machine::H100, pins).iter().all(|c| c.config.splits == 1);
        assert!(never(Problem { clusterable: false, ..bf16(64, 2112, 7168) }, &Pins::default()));
        assert!(never(Problem { varying_k: true, ..bf16(64, 2112, 7168) }, &Pins::default()));
        assert!(never(bf16(64, 2112, 7168), &Pins { block_n: Some(16), ..Pins::default() }));
        assert!(never(bf16(64, 2112, 7168), &Pins { cluster: Some(Along::N), ..Pins::default() }));
    }

    #[test]
    fn accumulator_registers_count_fp8s_partial_as_one_row_block() {
        let fp8 = Precision::Fp8BlockScaled;
        // 256x128 over two warpgroups: 128 running, 64 more for one block's
        // partial, past the 144 two row blocks fit; 256x112 takes 168 and
        // spills, 256x96 144.
        assert_eq!(fp8.accumulator_registers(256, 128, 2), AccumulatorRegisters { running: 128, total: 192 });
        assert!(!fp8.accumulator_registers(256, 128, 2).fit_shared());
        assert!(!fp8.accumulator_registers(256, 112, 2).fit_shared());
        assert!(fp8.accumulator_registers(256, 96, 2).fit_shared());
        // 128x176: 88 running and 88 partial; 128x192 fits, 128x208 does not.
        assert_eq!(fp8.accumulator_registers(128, 176, 2), AccumulatorRegisters { running: 88, total: 176 });
        assert!(fp8.accumulator_registers(128, 176, 2).fit_shared());
        assert!(fp8.accumulator_registers(128, 192, 2).fit_shared());
        assert!(!fp8.accumulator_registers(128, 208, 2).fit_shared());
        // 128x256: one block's partial is 128 wide, 256 in all.
        assert!(!fp8.accumulator_registers(128, 256, 2).fit_shared());
        // 64x128 fits a lone warpgroup; 128x128 goes to two.
        assert!(fp8.accumulator_registers(64, 128, 1).fit_alone());
        assert!(!fp8.accumulator_registers(128, 128, 1).fit_alone());
        assert_eq!(Precision::Bf16.accumulator_registers(128, 256, 2), AccumulatorRegisters { running: 128, total: 128 });
    }

    #[test]
    fn co_resident_ctas_make_a_wave_over_many_tiles() {
        let pins = Pins { block_n: Some(128), ..Pins::default() };
        // 64x128 tiles with 3 stages and staged scales (K is 4 blocks; rule
        // 11) take 91160 bytes and 168 registers a thread: two to an SM,
        // 16384 of them in 63 waves,
        // as many as 8192 128x128 tiles one to an SM; rule 5 ranks the
        // narrower M first, and rule 7 then grows it to 128 rows over two
        // consumers (block-scaled FP8 over many waves).
        let ranked = rank(&fp8(4096, 32768, 512), &Machine::H100, &pins);
        let pipelined = ranked.iter().find(|c| c.config.schedule == Schedule::Pipeline).expect("the pipelined tile");
        assert_eq!((pipelined.config.block_m, pipelined.config.num_warps, pipelined.config.stages, pipelined.waves, pipelined.last_wave), (64, 4, 3, 63, 8));
        assert_eq!(Machine::H100.ctas_per_sm(pipelined.smem_bytes), 2);
        let pick = &ranked[0];
        assert_eq!((pick.config.block_m, pick.config.schedule, pick.waves), (128, Schedule::WarpSpecialized { consumers: 2 }, 63));
        // Over two waves or fewer the tiles count one to an SM.
        let two_waves = choose(&fp8(128, 32768, 512), &Machine::H100, &pins).expect("a pick");
        assert_eq!((two_waves.config.block_m, two_waves.waves), (128, 2));
        assert_eq!(Machine::H100.ctas_per_sm_by_registers(8, 128), 1);
        assert_eq!(Machine::H100.ctas_per_sm_by_registers(4, 128), 3);
    }

    #[test]
    fn fp8_row_block_tiles_are_ranked_last_unless_pinned() {
        let p = Problem { b_scale_rows: Some(3), ..fp8(4096, 7168, 2048) };
        let pins = Pins { block_n: Some(96), ..Pins::default() };
        let ranked = rank(&p, &Machine::H100, &pins);
        assert_eq!((ranked[0].config.block_m, ranked[0].config.block_n), (128, 96));
        let tall = ranked.last().expect("candidates");
        assert_eq!((tall.config.block_m, tall.config.schedule), (256, Schedule::WarpSpecialized { consumers: 2 }));
        assert!(ranked[..ranked.len() - 1].iter().all(|c| c.config.block_m < 256));
        assert_eq!(tall.reason, "256-row alternative, promoted an m64 block at a time (rule 1: ranked, not picked unless block M is pinned)");
        let pinned = choose(&p, &Machine::H100, &Pins { block_m: Some(256), ..pins }).expect("a pinned 256-row tile fits");
        assert_eq!((pinned.config.block_m, pinned.config.schedule), (256, Schedule::WarpSpecialized { consumers: 2 }));
    }

    #[test]
    fn block_n_crosses_scale_blocks_only_where_it_saves_time() {
        let scaled = |m, n, k| Problem { b_scale_rows: Some(3), ..fp8(m, n, k) };
        let block_n = |p: Problem| choose(&p, &Machine::H100, &Pins::default()).expect("a pick").config.block_n;
        // 2112 = 12 x 176: 384 tiles in 3 waves of 128x176 against 544 in 5
        // of 128x128, 18% less time by wave_work.
        assert_eq!(block_n(scaled(4096, 2112, 7168)), 176);
        // 6 waves of 128x176 (768 tiles) are 3% more area than 8 of
        // 128x128, but a tile that wide over 32 K blocks counts at 92%: 5%
        // less time.
        assert_eq!(block_n(scaled(4096, 4096, 4096)), 176);
        // Over 4 K blocks 176 is no candidate (its tiles span three scale
        // blocks), and 6 waves of 128x192 take 3% more time than 8 of
        // 128x128: 128 wide.
        assert_eq!(block_n(scaled(4096, 4096, 512)), 128);
        // 10 waves of 128x176 or of 128x192 at N = 7168: 176 from 32 K
        // blocks, 192 below.
        assert_eq!(block_n(scaled(4096, 7168, 4096)), 176);
        assert_eq!(block_n(scaled(4096, 7168, 31 * 128)), 192);
        assert_eq!(block_n(scaled(4096, 7168, 2048)), 192);
        // 128x192's tiles span at most two scale blocks (128x176's three),
        // so they count as wide over 4 K blocks too: 42 waves of them take
        // 8% less time than 63 of 128x128.
        assert_eq!(block_n(scaled(4096, 32768, 512)), 192);
        // One wave of 128-wide tiles, and 64-wide ones would take two: 128.
        assert_eq!(block_n(scaled(128, 7168, 16384)), 128);
        assert_eq!(block_n(scaled(128, 7168, 2048)), 128);
        // One wave either way, twice the tiles at 64 columns: 64.
        assert_eq!(block_n(scaled(64, 4096, 7168)), 64);
        assert_eq!(block_n(scaled(128, 2112, 7168)), 64);
    }

    #[test]
    fn only_a_long_k_takes_tiles_spanning_three_scale_blocks() {
        assert!(!spans_few_scale_blocks(176, THREE_BLOCK_SPAN_MIN_K_BLOCKS - 1));
        assert!(spans_few_scale_blocks(176, THREE_BLOCK_SPAN_MIN_K_BLOCKS));
        for block_n in [64, 128, 144, 160, 192] {
            assert!(spans_few_scale_blocks(block_n, 1), "{block_n}");
        }
    }

    /// A persistent pick's clustered twin launches whole pairs of tiles, so
    /// its SM count differs from the pick's; its reason still names the
    /// cluster (the SM count is a figure, not part of the config).
    #[test]
    fn the_clustered_twin_of_a_pick_is_named_so() {
        let p = Problem { b_scale_rows: Some(3), ..fp8(4096, 32768, 512) };
        let ranked = rank(&p, &Machine::H100, &Pins::default());
        let (pick, twin) = (&ranked[0], &ranked[1]);
        assert_eq!(twin.config, Config { cluster: Along::M, ..pick.config });
        assert_eq!((pick.sms, twin.sms), (131, 132));
        assert_eq!(twin.reason, "the pick in 2-CTA clusters along m, multicasting B");
    }

    #[test]
    fn ping_pong_is_ranked_not_picked() {
        let p = bf16(4096, 4096, 4096);
        let ranked = rank(&p, &Machine::H100, &Pins::default());
        assert_ne!(ranked[0].config.schedule, Schedule::PingPong);
        // The best tile one warpgroup's registers hold (64x256 before 128x128
        // by rule 5), with an output tile per consumer: 4 stages of 40960
        // bytes, 2 * 32768 for the outputs, 10 barriers.
        let pingpong = ranked.iter().find(|c| c.config.schedule == Schedule::PingPong).expect("a ping-pong alternative");
        assert_eq!((pingpong.config.block_m, pingpong.config.block_n, pingpong.config.stages, pingpong.config.epilogue.word()), (64, 256, 4, TMA));
        assert_eq!(pingpong.smem_bytes, 4 * 40960 + 2 * 32768 + 10 * 8);
        assert_eq!(pingpong.reason, "ping-pong alternative: two consumers take turns at whole 64x256 tiles");
        // Block-scaled FP8 adds its partial product: 64x128 (64 + 64 registers).
        let fp8 = rank(&Problem { precision: Precision::Fp8BlockScaled, ..p }, &Machine::H100, &Pins { block_n: Some(128), ..Pins::default() });
        let fp8_pingpong = fp8.iter().find(|c| c.config.schedule == Schedule::PingPong).expect("an FP8 ping-pong alternative");
        assert_eq!((fp8_pingpong.config.block_m, fp8_pingpong.config.block_n), (64, 128));
        // A masked grouped GEMM's K loop is data: no ping-pong.
        let masked = rank(&Problem { varying_k: true, ..p }, &Machine::H100, &Pins::default());
        assert!(masked.iter().all(|c| c.config.schedule != Schedule::PingPong));
    }

    #[test]
    fn bf16_over_many_waves_is_warp_specialized_with_tma_stores() {
        let pick_of = |m, n, k| pick(m, n, k).config;
        // At most 32 K blocks over more than 2 waves: persistent, the
        // TMA-store epilogue, and pairs in clusters (rule 10's exception);
        // the same kernel without clusters ranks second. Over 8, 12 and 32
        // blocks (7 waves or more), 256x128 over two consumers (rule 16)
        // with 4 stages, its output stored 64 columns at a time (rule 8:
        // 4*(384*64*2) + 2*128*64*2 + 8 mbarriers = 229440 bytes), paired
        // along N to multicast A's 256 rows.
        for (n, k) in [(24576, 1536), (7168, 2048), (32768, 512)] {
            let c = pick_of(4096, n, k);
            let got = ((c.block_m, c.block_n), c.schedule, c.epilogue.word(), c.epilogue_chunk(), c.stages, c.cluster);
            assert_eq!(got, ((256, 128), Schedule::WarpSpecialized { consumers: 2 }, TMA, Some(64), 4, Along::N), "4096x{n}x{k}");
            let problem = bf16(4096, n, k);
            let second = &rank(&problem, &Machine::H100, &Pins::default())[1];
            assert_eq!(second.config, Config { cluster: Along::None, ..c });
        }
        // A longer K over more than 2 waves is warp-specialised too where
        // two consumers share the tile (with a stage more from the chunks),
        // without clusters past 32 blocks: 64, 112 and 256 K blocks; the
        // 128x256 tile itself over 4 waves, 256x128 over 7 (rule 16), all
        // three stored 64 columns a K step of the next tile (rule 18).
        for (n, k, tile, chunk) in [(4096, 4096, (128, 256), 64), (4096, 7168, (128, 256), 64), (7168, 16384, (256, 128), 64)] {
            let c = pick_of(4096, n, k);
            let got = ((c.block_m, c.block_n), c.schedule, c.stages, c.epilogue_chunk(), c.cluster);
            assert_eq!(got, (tile, Schedule::WarpSpecialized { consumers: 2 }, 4, Some(chunk), Along::None), "4096x{n}x{k}");
        }
        // Pinning the tile keeps it: 128x256 over two consumers at 8192^3.
        let pinned = choose(&bf16(8192, 8192, 8192), &Machine::H100, &Pins { block_n: Some(256), ..Pins::default() }).unwrap();
        assert_eq!((pinned.config.block_m, pinned.config.block_n, pinned.config.schedule), (128, 256, Schedule::WarpSpecialized { consumers: 2 }));
        assert!(!pinned.reason.contains("rule 16"), "{}", pinned.reason);
        // Unpinned, --explain says why 256x128 and why not 128x256.
        let ranked = rank(&bf16(8192, 8192, 8192), &Machine::H100, &Pins::default());
        assert!(ranked[0].reason.contains("over 6 waves or more (rule 16)"), "{}", ranked[0].reason);
        let wide = ranked.iter().find(|c| (c.config.block_m, c.config.block_n) == (128, 256)).expect("128x256 ranked");
        assert_eq!(wide.reason, "the 128x256 tile, which two consumers share as 256x128 over 6 waves or more (rule 16)");
        // So is 128x176, whose whole output tile leaves room for 4 stages.
        let narrow = pick_of(4096, 2112, 7168);
        assert_eq!((narrow.block_n, narrow.schedule, narrow.stages, narrow.epilogue_chunk()), (176, Schedule::WarpSpecialized { consumers: 2 }, 4, None));
        // Two waves too; one keeps the pipeline.
        assert_eq!(pick_of(2048, 4096, 7168).schedule, Schedule::WarpSpecialized { consumers: 2 });
        assert_eq!(pick_of(128, 24576, 1536).schedule, Schedule::Pipeline);
        // C rows that TMA cannot store (N * 2 bytes not a multiple of 16)
        // take direct stores in the warp-specialised tile too.
        assert_eq!(pick_of(4096, 24572, 1536).epilogue.word(), GLOBAL);
    }

    #[test]
    fn a_sparse_last_wave_over_a_long_k_is_shared_by_stream_k() {
        // 8192^3: 2048 tiles of 256x128 over 132 SMs leave 68 (52%) in the
        // last wave, over 128 K blocks: its tiles go by K iterations to
        // every SM, and the same kernel without it ranks next.
        let ranked = rank(&bf16(8192, 8192, 8192), &Machine::H100, &Pins::default());
        let (shared, next) = (&ranked[0], &ranked[1]);
        assert_eq!((shared.config.stream_k, shared.sms, shared.last_wave), (Some(PieceOrder::InOrder), 132, 68));
        assert!(shared.reason.ends_with("pieces in-order (rule 17: a last wave at most 60% full over 64 K blocks or more)"), "{}", shared.reason);
        assert_eq!(next.config, Config { stream_k: None, ..shared.config });
        assert_eq!(next.reason, "the pick without stream-K: its last wave's tiles whole, on fewer SMs (rule 17)");
        assert!(shared.config.to_string().ends_with(" stream_k=in-order"), "{}", shared.config);
        // Fuller last waves (116, 120 and 104 of 132) and a short K (24
        // blocks under a 27% full last wave) keep whole tiles.
        for (m, n, k) in [(4096, 4096, 4096), (4096, 2112, 7168), (4096, 7168, 16384), (4096, 24576, 1536)] {
            assert_eq!(pick(m, n, k).config.stream_k, None, "{m}x{n}x{k}");
        }
        // So do block-scaled FP8, pinned clusters, a batch or grouped GEMM
        // and a kernel for any N.
        let whole = |problem: Problem, pins: Pins| choose(&problem, &Machine::H100, &pins).unwrap().config.stream_k;
        assert_eq!(whole(fp8(8192, 8192, 8192), Pins::default()), None);
        assert_eq!(whole(bf16(8192, 8192, 8192), Pins { cluster: Some(Along::N), ..Pins::default() }), None);
        assert_eq!(whole(Problem { clusterable: false, ..bf16(8192, 8192, 8192) }, Pins::default()), None);
        assert_eq!(whole(Problem { any_n: true, ..bf16(8192, 8192, 8192) }, Pins::default()), None);
    }

    #[test]
    fn chunked_outputs_over_many_waves_and_a_long_k_defer_their_epilogue() {
        // 4096^3: 512 tiles of 128x256 over 4 waves and 64 K blocks, the
        // output in four 64-column chunks, one a K step; the same kernel
        // storing two 128-column chunks between tiles ranks next.
        let ranked = rank(&bf16(4096, 4096, 4096), &Machine::H100, &Pins::default());
        let (deferred, next) = (&ranked[0], &ranked[1]);
        assert!(deferred.config.deferred_epilogue && deferred.config.epilogue_chunk() == Some(64));
        assert_eq!((deferred.config.stages, deferred.smem_bytes), (4, 213056));
        assert!(deferred.reason.contains("; each tile stored during the next one's first K steps, 64 columns a step (rule 18"), "{}", deferred.reason);
        assert!(deferred.config.to_string().ends_with(" epilogue_cols=64 epilogue_deferred"), "{}", deferred.config);
        assert_eq!(next.config, Config { deferred_epilogue: false, epilogue: Epilogue::Tma { columns: 128 }, ..deferred.config });
        assert_eq!(next.reason, "the pick with each tile stored between its K loop and the next tile's (rule 18)");
        for (m, n, k) in [(4096, 4096, 7168), (4096, 7168, 16384)] {
            assert!(pick(m, n, k).config.deferred_epilogue, "{m}x{n}x{k}");
        }
        // Not with one chunk (128x176), in clusters over a short K, under
        // stream-K, over 2 waves or under 64 K blocks, nor for FP8.
        for (m, n, k) in [(4096, 2112, 7168), (4096, 32768, 512), (4096, 7168, 2048), (8192, 8192, 8192), (2048, 4096, 7168), (4096, 4096, 2048)] {
            assert!(!pick(m, n, k).config.deferred_epilogue, "{m}x{n}x{k}");
        }
        let deferred_for = |problem: Problem| choose(&problem, &Machine::H100, &Pins::default()).unwrap().config.deferred_epilogue;
        assert!(!deferred_for(fp8(4096, 4096, 4096)));
    }

    #[test]
    fn two_rows_of_narrow_tiles_pair_up_with_deep_pipelines() {
        // Rule 15: one wave of 64x64 tiles over two rows (M = 128) and 112 K
        // blocks: one consumer, pairs along M sharing B, the most stages that
        // fit (13 of 16: 14 do not). The pipelined tile follows.
        let ranked = rank(&bf16(128, 4096, 7168), &Machine::H100, &Pins::default());
        let deep = &ranked[0];
        assert_eq!((deep.config.schedule, deep.config.cluster, deep.config.stages), (Schedule::WarpSpecialized { consumers: 1 }, Along::M, 13));
        assert!(deep.reason.contains("rule 15"), "{}", deep.reason);
        assert_eq!((ranked[1].config.schedule, ranked[1].config.stages), (Schedule::Pipeline, 8));
        // Not for wider tiles (64x112), one row of tiles (M = 64), 64 K
        // blocks, data-chosen operands, or pinned stages or clusters.
        for (p, pins) in [
            (bf16(128, 7168, 16384), Pins::default()),
            (bf16(64, 4096, 7168), Pins::default()),
            (bf16(128, 4096, 4096), Pins::default()),
            (Problem { clusterable: false, ..bf16(128, 4096, 7168) }, Pins::default()),
            (bf16(128, 4096, 7168), Pins { stages: Some(8), ..Pins::default() }),
            (bf16(128, 4096, 7168), Pins { cluster: Some(Along::None), ..Pins::default() }),
        ] {
            let c = choose(&p, &Machine::H100, &pins).unwrap().config;
            let deep = c.schedule == Schedule::WarpSpecialized { consumers: 1 } && c.cluster == Along::M && c.stages > MAX_STAGES;
            assert!(!deep, "{}x{}x{} {pins}", p.m, p.n, p.k);
        }
    }

    #[test]
    fn flat_boxes_of_row_scales_take_a_spare_128_bytes_a_stage() {
        // A's row scales stored M-major: each stage's 128 (or 64) rows are
        // one flat TMA box of 32 rows more; stored K-major, threads copy
        // the tile's rows alone. 256 rows would not fit a box.
        let layout = |block_m| SmemLayout { tile: (block_m, 128, 128), epilogue: Epilogue::Global, scales: Scales::Staged, schedule: Schedule::Pipeline, splits: 1 };
        let by_run = Problem { a_scales_by_run: true, ..fp8(4096, 4096, 4096) };
        for (block_m, spare) in [(128, 4 * 128), (64, 4 * 128), (256, 0)] {
            let (flat, copied) = (layout(block_m).smem_bytes(&by_run, 4), layout(block_m).smem_bytes(&fp8(4096, 4096, 4096), 4));
            assert_eq!(flat - copied, spare, "BLOCK_M {block_m}");
        }
    }

    #[test]
    fn chunked_epilogues_keep_the_swizzle() {
        let problem = |precision| Problem { precision, ..bf16(4096, 24576, 1536) };
        let pinned = |precision, block_n| choose(&problem(precision), &Machine::H100, &Pins { block_n: Some(block_n), ..Pins::default() }).unwrap().config;
        // 128x256 over two consumers: 128-column halves keep the 128-byte
        // swizzle and free 32768 bytes, a fourth stage.
        let wide = pinned(Precision::Bf16, 256);
        assert_eq!((wide.schedule, wide.stages, wide.epilogue_chunk()), (Schedule::WarpSpecialized { consumers: 2 }, 4, Some(128)));
        assert_eq!(wide.smem_layout().smem_bytes(&problem(Precision::Bf16), 4), 229440);
        // 128x176: 352-byte rows take the 32-byte swizzle, 88-column halves
        // (176 bytes) none, so the whole buffer stays.
        let narrow = pinned(Precision::Bf16, 176);
        assert_eq!((narrow.schedule, narrow.epilogue_chunk()), (Schedule::WarpSpecialized { consumers: 2 }, None));
    }

    #[test]
    fn edge_cases() {
        // M = 1: BM 64 pads least; BN 32 gives 128 tiles (16 would be 256, two
        // waves); a narrow tile over 64 K blocks is split: 64 tiles of 64x64.
        assert_eq!(summary(&pick(1, 4096, 4096)), (64, 64, 8, TMA, 1, 128));
        // N = 4100: rows of 8200 bytes are not 16-byte aligned, so no TMA store.
        // 256x128: 16*33 = 528 tiles, four full waves; 128x256 gives 544 (5 waves).
        // 4*49160 = 196640; 5 stages would be 245800.
        assert_eq!(summary(&pick(4096, 4100, 4096)), (256, 128, 4, GLOBAL, 4, 132));
        // K = 32, less than one 64-wide block: one K block, so one stage,
        // and three 128x112 tiles an SM (rule 2): 1184 in 3 waves.
        assert_eq!(summary(&pick(4096, 4096, 32)), (128, 112, 1, TMA, 3, 131));
        // The smallest problem: one 64x16 tile.
        assert_eq!(summary(&pick(1, 8, 8)), (64, 16, 1, TMA, 1, 1));
    }

    #[test]
    fn fewest_sms_that_keep_the_waves() {
        // 512 tiles in 4 waves need ceil(512/4) = 128 SMs, not 132.
        assert_eq!(pick(4096, 4096, 4096).sms, 128);
        // 128 tiles in one wave: 128 SMs.
        assert_eq!(pick(64, 24576, 1536).sms, 128);
    }

    #[test]
    fn accumulators_beyond_one_warpgroup_take_eight_warps() {
        assert_eq!(pick(128, 32768, 512).config.num_warps, 8); // 128x256
        assert_eq!(pick(64, 7168, 2048).config.num_warps, 4); // 64x64
    }

    #[test]
    fn the_ranking_names_why_each_alternative_lost() {
        let ranked = rank(&bf16(2048, 4096, 7168), &Machine::H100, &Pins::default());
        // Rule 7: two consumers share the 128x256 tile over 2 waves, its TMA
        // epilogue in 128-column chunks and a stage more (rule 8).
        assert!(ranked[0].reason.starts_with("picked"));
        assert_eq!((ranked[0].config.schedule, ranked[0].config.cluster), (Schedule::WarpSpecialized { consumers: 2 }, Along::None));
        assert_eq!((ranked[0].config.stages, ranked[0].config.epilogue.word(), ranked[0].config.epilogue_chunk()), (4, TMA, Some(128)));
        assert!(ranked[0].reason.ends_with("; warp-specialised (rule 7: block-scaled FP8 with a long K, or two waves of tiles or more)"), "{}", ranked[0].reason);
        // Rule 10: 16 x 16 tiles over 2 waves; pairs along M share B's
        // 256-row tile, larger than A's 128.
        assert_eq!(ranked[1].config, Config { cluster: Along::M, ..ranked[0].config });
        assert_eq!(ranked[1].reason, "the pick in 2-CTA clusters along m, multicasting B");
        // The pipelined tile (the whole output tile, three stages), the
        // ping-pong alternative, and rule 8's: the pipeline with direct
        // stores and the stage the output tile took.
        assert_eq!((ranked[2].config.schedule, ranked[2].config.stages), (Schedule::Pipeline, 3));
        assert_eq!(ranked[2].reason, "pipelined alternative of the pick's tile (rules 7 and 15 prefer warp specialisation here)");
        assert_eq!(ranked[3].config.schedule, Schedule::PingPong);
        assert_eq!((ranked[4].config.schedule, ranked[4].config.stages, ranked[4].config.epilogue.word()), (Schedule::Pipeline, 4, GLOBAL));
        assert_eq!(ranked[4].reason, "pipelined direct-store alternative of the pick's tile (4 stages without the output tile)");
        assert_eq!(ranked[5].reason, "narrower N (128 < 256)");
        assert!(ranked.iter().skip(6).any(|c| c.reason.starts_with("more waves")));
        // No tile that breaks rule 1 (both sides over 128) is weighed.
        assert!(ranked.iter().all(|c| c.config.block_m <= 128 || c.config.block_n <= 128));
    }

    #[test]
    fn clusters_pair_even_tiles_of_more_than_one_wave() {
        let p = bf16(4096, 4096, 4096);
        let tile = Pins { block_m: Some(128), block_n: Some(256), ..Pins::default() };
        // The direction of the ranking's clustered alternative.
        let cluster_of = |p: Problem, pins: &Pins| rank(&p, &Machine::H100, pins).iter().map(|c| c.config.cluster).find(|&a| a != Along::None).unwrap_or(Along::None);
        // 128x256 tiles: 32 x 16, B's tile the larger: along M.
        assert_eq!(cluster_of(p, &Pins::default()), Along::M);
        // 4096x4096 picks 256x128 when M is 3968 (16 x 32 tiles): A's tile is
        // the larger, so along N.
        assert_eq!(cluster_of(Problem { m: 3968, ..p }, &Pins::default()), Along::N);
        // 128x256 tiles of 3968 rows: 31 along M (odd), 16 along N: along N.
        assert_eq!(cluster_of(Problem { m: 3968, ..p }, &tile), Along::N);
        // Both odd (31 x 15): no cluster; none for a single wave (128x2112:
        // 132 tiles of 64x32) or a grouped GEMM either.
        let none = |p: Problem, pins: &Pins| rank(&p, &Machine::H100, pins).iter().all(|c| c.config.cluster == Along::None);
        assert!(none(Problem { m: 3968, n: 3840, ..p }, &tile));
        assert!(none(Problem { m: 128, n: 2112, k: 7168, ..p }, &Pins::default()));
        assert!(none(Problem { clusterable: false, ..p }, &Pins::default()));
    }

    #[test]
    fn a_cluster_pin_applies_to_every_candidate() {
        let p = bf16(128, 2112, 7168);
        // A single wave: rule 10 ranks no cluster, but a pin pairs every candidate.
        // The split pick (rule 12) is its own cluster: a pin leaves it out.
        let pinned = rank(&p, &Machine::H100, &Pins { cluster: Some(Along::N), ..Pins::default() });
        let unpinned: Vec<Candidate> = rank(&p, &Machine::H100, &Pins::default()).into_iter().filter(|c| c.config.splits == 1).collect();
        assert_eq!(pinned.len(), unpinned.len());
        assert!(pinned.iter().zip(&unpinned).all(|(c, u)| c.config == Config { cluster: Along::N, ..u.config }));
        assert!(pinned[0].reason.ends_with("; in 2-CTA clusters along n"));
        // Pinning none removes rule 10's alternative.
        let q = Problem { m: 4096, n: 4096, ..p };
        assert!(rank(&q, &Machine::H100, &Pins { cluster: Some(Along::None), ..Pins::default() }).iter().all(|c| c.config.cluster == Along::None));
        let err = choose(&Problem { clusterable: false, ..q }, &Machine::H100, &Pins { cluster: Some(Along::M), ..Pins::default() }).unwrap_err();
        assert!(err.contains("a cluster needs CTAs whose tiles share an operand tile"), "{err}");
    }

    #[test]
    fn few_tiles_share_their_k_loop_over_a_cluster() {
        let pins = Pins { block_n: Some(128), ..Pins::default() };
        let split = |m, n, k| {
            let pick = choose(&fp8(m, n, k), &Machine::H100, &pins).unwrap();
            let c = pick.config;
            (c.block_m, c.block_n, c.splits, c.schedule, pick.sms)
        };
        // 64x128 tiles over 56 K blocks: 17 tiles take 4 CTAs each (68);
        // 34 and 32 take 3 (102 and 96: four would pass 4/5 of the SMs);
        // 64 take 2, which pair on every SM.
        assert_eq!(split(64, 2112, 7168), (64, 128, 4, Schedule::Pipeline, 68));
        assert_eq!(split(128, 2112, 7168), (64, 128, 3, Schedule::Pipeline, 102));
        assert_eq!(split(64, 4096, 7168), (64, 128, 3, Schedule::Pipeline, 96));
        assert_eq!(split(128, 4096, 7168), (64, 128, 2, Schedule::Pipeline, 128));
        // 56 tiles over 128 K blocks: halves of 64 blocks stay long, so the
        // one-consumer kernel keeps the whole loop; 112 tiles fill the SMs.
        assert_eq!(split(64, 7168, 16384).2, 1);
        assert_eq!(split(128, 7168, 16384).2, 1);
        // The partial tile and its stages fit: 7 stages of (64 + 128) * 128
        // bytes and the staged scales, 32 KiB of partial, 16 KiB of output.
        let c = choose(&fp8(64, 2112, 7168), &Machine::H100, &pins).unwrap();
        assert_eq!(c.config.stages, 7);
        assert!(c.smem_bytes <= Machine::H100.smem_bytes);
    }

    #[test]
    fn block_scaled_ctas_pair_up_on_an_sm_where_that_makes_one_wave() {
        // The benchmark program's problem: tiles of B at any offset into a scale block.
        let scaled = |m, n, k| Problem { b_scale_rows: Some(3), ..fp8(m, n, k) };
        let pick = |m, n, k| choose(&scaled(m, n, k), &Machine::H100, &Pins::default()).unwrap();
        let form = |c: &Candidate| (c.config.block_m, c.config.block_n, c.config.splits, c.config.stages, c.config.schedule, c.waves);
        // Two rows of 64x64 tiles over 56 K blocks: split over the most CTAs
        // that run two to an SM (3 a tile, 198, in clusters of three on 4/5
        // of the SMs; 2 a tile, 256), each with the 5 stages that fit half.
        assert_eq!(form(&pick(128, 2112, 7168)), (64, 64, 3, 5, Schedule::Pipeline, 1));
        assert_eq!(form(&pick(128, 4096, 7168)), (64, 64, 2, 5, Schedule::Pipeline, 1));
        let pairs = pick(128, 4096, 7168);
        assert!(pairs.smem_bytes <= Machine::H100.paired().smem_bytes && Machine::H100.ctas_per_sm(pairs.smem_bytes) == 2);
        // One row of tiles (each B tile read once) keeps one CTA an SM and 8 stages.
        assert_eq!(form(&pick(64, 4096, 7168)), (64, 64, 2, 8, Schedule::Pipeline, 1));
        // 192 tiles of 64x128: two waves one to an SM, one wave two to an SM
        // with 3 stages each; the unpaired tile stays ranked, behind.
        let ranked = rank(&scaled(64, 24576, 1536), &Machine::H100, &Pins::default());
        assert_eq!(form(&ranked[0]), (64, 128, 1, 3, Schedule::Pipeline, 1));
        assert!(ranked[0].reason.starts_with("picked: fewest waves (1 of 2 CTAs an SM)") && ranked[0].reason.contains("the most stages that fit (3, in 1/2 of an SM)"), "{}", ranked[0].reason);
        let unpaired = ranked.iter().find(|c| form(c) == (64, 128, 1, 8, Schedule::Pipeline, 2) && c.config.epilogue == ranked[0].config.epilogue);
        assert_eq!(unpaired.map(|c| c.reason.as_str()), Some("more waves (2 > 1)"));
        // Pairs that would keep 2 stages each are not made (192x4096x4096:
        // 64x128 split in two), nor for BF16, batched or grouped GEMMs.
        assert_eq!(pick(192, 4096, 4096).config.splits, 1);
        assert_eq!(choose(&Problem { precision: Precision::Bf16, ..scaled(128, 4096, 7168) }, &Machine::H100, &Pins::default()).unwrap().config.splits, 1);
        let grouped = Problem { clusterable: false, varying_k: true, ..scaled(64, 24576, 1536) };
        assert_eq!(choose(&grouped, &Machine::H100, &Pins::default()).unwrap().waves, 2);
    }

    #[test]
    fn block_scaled_two_consumer_picks_cluster_over_a_long_k_and_many_waves() {
        let scaled = |m, n, k| Problem { b_scale_rows: Some(3), ..fp8(m, n, k) };
        let cluster = |m, n, k| choose(&scaled(m, n, k), &Machine::H100, &Pins::default()).unwrap().config.cluster;
        // 128x176 over two consumers: 32 K blocks and 6 waves, 64 and 23,
        // 56 and 3.
        assert_eq!(cluster(4096, 4096, 4096), Along::M);
        assert_eq!(cluster(8192, 8192, 8192), Along::M);
        assert_eq!(cluster(4096, 2112, 7168), Along::M);
        // 2 waves (2048x2112x7168), or 16 K blocks and fewer: none.
        for (m, n, k) in [(2048, 2112, 7168), (4096, 7168, 2048), (4096, 24576, 1536), (4096, 32768, 512)] {
            assert_eq!(cluster(m, n, k), Along::None, "{m}x{n}x{k}");
        }
        // Nor where the operands are chosen by data.
        let grouped = Problem { clusterable: false, ..scaled(4096, 4096, 4096) };
        assert_eq!(choose(&grouped, &Machine::H100, &Pins::default()).unwrap().config.cluster, Along::None);
        // Nor over tiles one scale block wide (pinned, or held by the
        // epilogue's 128-column groups), which shared memory bounds.
        let one_block = Pins { block_n: Some(SCALE_BLOCK_N), ..Pins::default() };
        for (m, n, k) in [(4096, 4096, 7168), (4096, 7168, 16384), (4096, 2112, 7168)] {
            let pick = choose(&scaled(m, n, k), &Machine::H100, &one_block).unwrap();
            assert_eq!((pick.config.block_n, pick.config.cluster), (SCALE_BLOCK_N, Along::None), "{m}x{n}x{k}");
        }
    }

    /// The deferred epilogue is weighed where it would hide an epilogue's
    /// work on the converted tile, in the forms the pass takes whose
    /// consumers hold the carried tile; a plain GEMM's or one whose
    /// epilogue works before the conversion gets no such alternative.
    #[test]
    fn deferred_forms_are_weighed_where_they_hide_work_after_the_conversion() {
        let machine = Machine::of(&Target::H200);
        let quantise = crate::cost_model::epilogue::EpilogueWork { lane_ops: 5, deferrable_lane_ops: 5, ..Default::default() };
        let gelu = crate::cost_model::epilogue::EpilogueWork { lane_ops: 6, sfu_ops: 1, ..Default::default() };
        let deferred_alternatives = |p: &Problem| {
            let ranked = rank(p, &machine, &Pins::default());
            alternatives(p, &machine, &Pins::default(), &ranked).into_iter().filter(|c| c.config.deferred_epilogue).collect::<Vec<_>>()
        };
        for (m, n, k) in [(4096, 24576, 1536), (4096, 7168, 2048), (4096, 4096, 7168)] {
            let scaled = Problem { b_scale_rows: Some(1), column_group: Some(SCALE_BLOCK_N), ..fp8(m, n, k) };
            let deferred = deferred_alternatives(&Problem { epilogue: quantise, ..scaled });
            assert!(!deferred.is_empty(), "{m}x{n}x{k}: no deferred form weighed");
            for c in &deferred {
                assert!(takes_deferred_epilogue(&scaled, &Config { deferred_epilogue: false, ..c.config }), "{m}x{n}x{k}: {}", c.config);
                assert_eq!((c.config.block_n, c.config.cluster), (SCALE_BLOCK_N, Along::None), "{}", c.config);
            }
            assert!(deferred_alternatives(&scaled).is_empty(), "{m}x{n}x{k}: a plain GEMM's forms deferred");
            assert!(deferred_alternatives(&Problem { epilogue: gelu, ..scaled }).is_empty(), "{m}x{n}x{k}: work before the conversion deferred");
        }
        // The carried tile fits beside 128x128's accumulators and partials
        // (160 registers), not beside 128x176's (220).
        let fp8_tile = |bn| Config { block_n: bn, schedule: Schedule::WarpSpecialized { consumers: 2 }, num_warps: 12, epilogue: Epilogue::Tma { columns: bn }, ..Config::neutral((128, bn, 128)) };
        let scaled = fp8(4096, 4096, 7168);
        assert!(fp8_tile(128).persistent() && takes_deferred_epilogue(&scaled, &fp8_tile(128)));
        assert!(!takes_deferred_epilogue(&scaled, &fp8_tile(176)));
    }

    #[test]
    fn schedule_words_read_back() {
        for &word in Schedule::WORDS {
            assert_eq!(Schedule::from_word(word, 2).map(Schedule::word), Some(word));
        }
        assert_eq!(Schedule::from_word("warp_specialized", 1), Some(Schedule::WarpSpecialized { consumers: 1 }));
        assert_eq!(Schedule::from_word("cooperative", 2), None);
    }

    #[test]
    fn a_plain_pipeline_over_several_waves_takes_tiles_in_groups() {
        let order = |m, n, k| pick(m, n, k).config.raster_group;
        // Pipelined for their direct stores (rows of C not 16-byte aligned,
        // rule 8): 16 rows of 256x128 tiles over 4 waves and 64 rows of
        // 128x256 over 16, A of 128 MiB: groups of 8 rows.
        assert_eq!(order(4096, 4100, 16384), 8);
        assert_eq!(order(8192, 8196, 8192), 8);
        // A of 32 MiB, which L2 holds; one wave; no more tile rows than a
        // group: the grid's order.
        assert_eq!(order(4096, 4096, 4096), 0);
        assert_eq!(order(128, 7168, 16384), 0);
        assert_eq!(order(1024, 8192, 65536), 0);
        // Persistent (warp-specialised) picks order their own loop; split
        // picks keep their grid.
        assert_eq!((pick(4096, 32768, 512).config.schedule, order(4096, 32768, 512)), (Schedule::WarpSpecialized { consumers: 2 }, 0));
        assert_eq!((pick(8192, 8192, 8192).config.schedule, order(8192, 8192, 8192)), (Schedule::WarpSpecialized { consumers: 2 }, 0));
        assert_eq!((pick(64, 2112, 7168).config.splits, order(64, 2112, 7168)), (2, 0));
    }

    #[test]
    fn pins_restrict_the_choice() {
        let square = fp8(4096, 4096, 4096);
        // FP8 with B's scales per 128x128 block: the program pins BN = 128.
        // 256x128 would hold 2 * 256 * 128 accumulators (the result and the
        // block being promoted), over two warpgroups' registers; 128x128
        // takes 8 warps. Per stage 256*128 bytes of operands + 8 = 32776;
        // 6*32776 + 32768 = 229424 fits, 7 stages do not.
        // With K = 4096 (32 scale blocks) the warp-specialised tile is the pick
        // (rule 7's exception): two consumers, the output tile (rule 8) and
        // its scales staged (rule 11): 5 stages of 32776 + 516 bytes and
        // 32768 for the output (6 would need 232520). With K = 2048 (16
        // blocks) or 512 (4) over 8 or more waves it is too, and so it is
        // over 2 waves (M = 128). One scale block wide it takes no clusters
        // (rule 10), ranking the clustered kernel next.
        let c = choose(&square, &Machine::H100, &Pins { block_n: Some(128), ..Pins::default() }).unwrap();
        assert_eq!((c.config.block_m, c.config.block_n, c.config.block_k, c.config.stages), (128, 128, 128, 5));
        assert_eq!((c.config.schedule, c.config.scales, c.config.cluster), (Schedule::WarpSpecialized { consumers: 2 }, Scales::Staged, Along::None));
        let ranked = rank(&square, &Machine::H100, &Pins { block_n: Some(128), ..Pins::default() });
        assert_eq!(ranked[1].config, Config { cluster: Along::M, ..c.config });
        assert_eq!(ranked[1].reason, "the pick in 2-CTA clusters along m, multicasting B");
        assert!(ranked[2].reason.starts_with("pipelined alternative of the pick's tile"));
        let pick = |p: Problem| choose(&p, &Machine::H100, &Pins { block_n: Some(128), ..Pins::default() }).unwrap();
        let shorter = pick(Problem { k: 2048, ..square });
        assert_eq!((shorter.config.schedule, shorter.waves), (Schedule::WarpSpecialized { consumers: 2 }, 8));
        // A short K over many tiles: 128x128 over two consumers too (rule
        // 7), rather than the 64x128 pipeline two to an SM that ranks first
        // by rule 2, with 5 stages for 4 K blocks: over 8 waves the producer
        // fills the fifth with the next tile's first K block (rule 6).
        let shortest = pick(Problem { k: 512, ..square });
        assert_eq!((shortest.config.block_m, shortest.config.schedule, shortest.config.stages, shortest.config.scales), (128, Schedule::WarpSpecialized { consumers: 2 }, 5, Scales::Staged));
        // Two waves of 128x128 go to two consumers as well, and with 4 K
        // blocks stay there, with as many stages as K blocks (a CTA's two
        // tiles leave little to run ahead into); with 12 (M = 128) the
        // ping-pong consumers take 64-row tiles in turn. 64x128 (M = 64),
        // whose warp-specialised form has one consumer, keeps the pipeline,
        // two CTAs to an SM in one wave (rule 2).
        let two_waves = pick(Problem { m: 128, n: 32768, k: 512, ..square });
        assert_eq!((two_waves.config.schedule, two_waves.waves, two_waves.config.stages), (Schedule::WarpSpecialized { consumers: 2 }, 2, 4));
        let few_tiles = pick(Problem { m: 128, n: 24576, k: 1536, ..square });
        assert_eq!((few_tiles.config.block_m, few_tiles.config.schedule), (64, Schedule::PingPong));
        // Over one wave a CTA has one tile: one consumer, not ping-pong.
        let one_wave = pick(Problem { m: 128, n: 7168, k: 16384, ..square });
        assert_eq!((one_wave.config.block_m, one_wave.config.schedule, one_wave.waves), (64, Schedule::WarpSpecialized { consumers: 1 }, 1));
        let few_short_tiles = pick(Problem { m: 64, n: 32768, k: 512, ..square });
        assert_eq!((few_short_tiles.config.block_m, few_short_tiles.config.schedule, few_short_tiles.waves), (64, Schedule::Pipeline, 1));
        // A K loop whose trip count is data over more than four waves (8
        // here) keeps the pipeline (its scales staged at the cost of one of
        // 6 stages, rule 11), and ranks the warp-specialised tile second;
        // over four waves (8 experts of 256 rows) it is warp-specialised.
        let masked = rank(&Problem { varying_k: true, clusterable: false, ..square }, &Machine::H100, &Pins { block_n: Some(128), ..Pins::default() });
        assert_eq!((masked[0].config.schedule, masked[0].config.stages, masked[0].config.scales, masked[0].waves), (Schedule::Pipeline, 5, Scales::Staged, 8));
        assert_eq!(masked[1].config.schedule, Schedule::WarpSpecialized { consumers: 2 });
        let few = choose(&Problem { m: 2048, k: 7168, varying_k: true, clusterable: false, ..square }, &Machine::H100, &Pins { block_n: Some(128), ..Pins::default() }).unwrap();
        assert_eq!((few.config.schedule, few.waves), (Schedule::WarpSpecialized { consumers: 2 }, 4));
        let c = choose(&Problem { precision: Precision::Bf16, ..square }, &Machine::H100, &Pins { block_n: Some(192), stages: Some(2), ..Pins::default() }).unwrap();
        assert_eq!((c.config.block_n, c.config.stages), (192, 2));
    }

    #[test]
    fn scales_are_staged_unless_a_pipeline_loses_two_stages_or_a_resident_cta() {
        let pinned = Pins { block_n: Some(128), ..Pins::default() };
        let scales = |p: Problem| {
            let c = choose(&p, &Machine::H100, &pinned).unwrap().config;
            (c.block_m, c.stages, c.scales)
        };
        // 64x128 tiles, 8 stages either way: staged.
        assert_eq!(scales(fp8(64, 7168, 2048)), (64, 8, Scales::Staged));
        // 64x128 tiles over K = 512: 4 stages hold two CTAs an SM only
        // without staged scales (2 * (114720 + 1024) fits 233472 bytes,
        // 2 * (116768 + 1024) does not), so the scales are staged in 3.
        assert_eq!(scales(fp8(64, 32768, 512)), (64, 3, Scales::Staged));
        assert_eq!(Machine::H100.ctas_per_sm(114_720), 2);
        assert_eq!(Machine::H100.ctas_per_sm(116_768), 1);
        // With 4 stages pinned, staging would cost the second CTA: prefetched.
        let four = choose(&fp8(64, 32768, 512), &Machine::H100, &Pins { stages: Some(4), ..pinned }).unwrap().config;
        assert_eq!((four.stages, four.scales), (4, Scales::Prefetched));
        // BF16 has none.
        let bf16 = choose(&Problem { precision: Precision::Bf16, ..fp8(4096, 4096, 4096) }, &Machine::H100, &Pins::default()).unwrap();
        assert_eq!(bf16.config.scales, Scales::None);
        assert!(!bf16.config.to_string().contains("scales"));
    }

    #[test]
    fn impossible_requests_are_errors() {
        let p = bf16(4096, 4096, 4096);
        let err = |pins: Pins| choose(&p, &Machine::H100, &pins).unwrap_err();
        assert!(err(Pins { block_n: Some(100), ..Pins::default() }).contains("BLOCK_N must be a multiple of 16"));
        assert!(err(Pins { block_m: Some(96), ..Pins::default() }).contains("BLOCK_M must be 64, 128, 192 or 256"));
        // 8 stages of 128x256x64 need 8*49160 + 65536 bytes.
        assert!(err(Pins { block_m: Some(128), block_n: Some(256), stages: Some(8), ..Pins::default() }).contains("no configuration fits"));
        // A kernel for any N keeps direct stores, and the stage its output
        // tile would take: 4*49160 = 196640.
        let general = choose(&Problem { any_n: true, ..p }, &Machine::H100, &Pins::default()).unwrap();
        assert_eq!((general.config.epilogue.word(), general.config.stages), (GLOBAL, 4));
        assert!(choose(&Problem { m: 0, ..p }, &Machine::H100, &Pins::default()).unwrap_err().contains("must be positive"));
    }
}
