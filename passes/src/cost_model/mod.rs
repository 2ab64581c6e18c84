//! The cost model config selection ranks candidates by: a prediction of a
//! candidate's time on the target from the problem shape and the
//! configuration alone, with a handful of constants ([`Calibration`])
//! fitted to GPU measurements (`tilec calibrate`, docs/cost-model.md).
//!
//! A kernel runs its CTAs in waves over the SMs. In each wave an SM runs
//! its CTAs' K loops; a K block costs the larger of its MMA time (the
//! tile's FLOPs over the SM's share of the tensor-core peak, at the
//! schedule's efficiency, plus block-scaled FP8's promotion on the CUDA
//! cores and a fixed issue cost) and the time its loads take to arrive
//! with the stages in flight (latency over stages: Little's law). The wave
//! cannot run faster than its operand bytes allow, either: the bytes all
//! CTAs stage from L2 (less the reads of CTAs in step that L2 merges), and
//! the bytes L2 misses and HBM delivers, which
//! depend on the tiles the wave covers (its footprint in the tile order) and
//! on whether A and B stay in L2 between waves. Each tile adds its
//! pipeline's fill and drain and its epilogue's stores (hidden by ping-pong
//! consumers and the deferred epilogue), split-K adds the reduction of its
//! partial tiles, stream-K the hand-over of its pieces, and every launch a
//! fixed cost. The largest term of the main loop names what bounds the
//! candidate.

use crate::cluster::Along;
use crate::selection::{ceil_div, Candidate, Config, Epilogue, Machine, Precision, Problem, Schedule};
use crate::selection::SplitReduce;
use tilec_dialects::tile::arith::gcd;
use tilec_dialects::tile::reduce::slots_in_flight;
use std::fmt;
use tilec_target::Target;

/// The model's fitted constants for one target. Each is positive; the fit
/// (`tilec calibrate`) searches their logarithms.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Calibration {
    /// Fraction of the tensor-core peak a K block's wgmma reaches in the
    /// plain pipeline, where the same warps issue loads and MMAs.
    pub mma_efficiency_pipeline: f64,
    /// The same where two warpgroups of the plain pipeline share a tile:
    /// one's wgmma runs while the other waits or issues.
    pub mma_efficiency_pipeline_two_warpgroups: f64,
    /// The same with a producer warpgroup and one consumer.
    pub mma_efficiency_one_consumer: f64,
    /// The same with two consumers sharing a tile.
    pub mma_efficiency_two_consumers: f64,
    /// The same with two consumers taking turns at whole tiles.
    pub mma_efficiency_ping_pong: f64,
    /// The same with two consumers sharing a tile's columns, each reading
    /// all of A's stage.
    pub mma_efficiency_column_halves: f64,
    /// The factor block-scaled FP8's wgmma (k = 32, scales read beside
    /// it) reaches of BF16's efficiency under the same schedule.
    pub fp8_mma_efficiency: f64,
    /// Seconds each K block costs a CTA besides its MMAs: barrier waits,
    /// TMA issue, the loop's own instructions.
    pub k_block_overhead_s: f64,
    /// Block-scaled FP8's promotion, in FFMA issue slots per accumulator
    /// element and K block, where one warpgroup both promotes and waits
    /// for its wgmma.
    pub promotion_serial: f64,
    /// The same where a second consumer's wgmma runs meanwhile.
    pub promotion_overlapped: f64,
    /// Seconds each K block of block-scaled FP8 waits for an m64 row
    /// block's wgmma group to complete before promoting it, whatever the
    /// tile's width: the promotion reads the group's partial sums, so the
    /// wait is serial, and a warpgroup that holds two row blocks waits for
    /// each in turn.
    pub promotion_wait_s: f64,
    /// Seconds from a TMA load's issue to its data in shared memory.
    pub load_latency_s: f64,
    /// Bytes per second all SMs together stage from L2.
    pub l2_bytes_per_s: f64,
    /// The share of the first wave's repeated BF16 operand reads that L2's
    /// request coalescer merges, in a grid that does not loop over tiles:
    /// the wave's CTAs start together, and those that share a row or a
    /// column of tiles and a K range ask for the same sectors at about the
    /// same time, which L2 serves once.
    pub l2_merged_share: f64,
    /// The same for block-scaled FP8, whose CTAs fall out of step sooner
    /// over a long K loop: each K block waits for its wgmma group and
    /// promotes it before the stage is released, and the CTAs' loads drift
    /// apart (docs/cost-model.md, "Refits judged on the picks they move").
    pub fp8_l2_merged_share: f64,
    /// Fraction of the HBM bandwidth a GEMM's streaming reads reach.
    pub hbm_efficiency: f64,
    /// Seconds of a tile's pipeline fill and drain.
    pub tile_overhead_s: f64,
    /// Bytes per second one SM's epilogue stores through a TMA store.
    pub store_bytes_per_s: f64,
    /// Bytes per second one SM's epilogue stores directly from registers,
    /// each thread its own elements.
    pub direct_store_bytes_per_s: f64,
    /// Bytes per second one SM writes and reads partial f32 tiles (split-K
    /// and stream-K's hand-over).
    pub partial_bytes_per_s: f64,
    /// Seconds of one wait of split-K's workspace reduction for L2: a
    /// group of parked slots read back, or a count of the spread form.
    pub workspace_round_trip_s: f64,
    /// Seconds from a workspace-reduced CTA's last partial sum to knowing
    /// whether it is the tile's last: its parked tile's stores acknowledged
    /// by L2 (the count's atomic releases them) and the atomic's own round
    /// trip, besides the bytes. A fixed latency, seen most in small kernels.
    pub workspace_count_s: f64,
    /// Seconds the CTAs of a split tile's cluster take to meet and hand
    /// their partial tiles over through distributed shared memory, besides
    /// the bytes: the cluster barriers before and after the reads, once
    /// each turn of an SM ends a tile.
    pub cluster_handover_s: f64,
    /// The share of stream-K's operand reads that miss L2: its CTAs start
    /// their pieces at spread K offsets, so the CTAs that read the same
    /// rows of A or B seldom read them at the same time.
    pub stream_k_miss_share: f64,
    /// The p of the p-norm that combines times bounded by different
    /// resources (MMA, load latency, L2, HBM): large where they overlap
    /// perfectly, 1 where they add.
    pub overlap_exponent: f64,
    /// Seconds a launch costs before the first CTA runs.
    pub launch_s: f64,
}

impl Calibration {
    /// Starting values for a fit, from datasheets and microbenchmarks
    /// published for Hopper; a target's fitted constants replace them.
    pub const PRIOR: Calibration = Calibration {
        mma_efficiency_pipeline: 0.75,
        mma_efficiency_pipeline_two_warpgroups: 0.75,
        mma_efficiency_one_consumer: 0.8,
        mma_efficiency_two_consumers: 0.85,
        mma_efficiency_ping_pong: 0.85,
        mma_efficiency_column_halves: 0.85,
        fp8_mma_efficiency: 0.9,
        k_block_overhead_s: 30e-9,
        promotion_serial: 1.0,
        promotion_overlapped: 0.3,
        promotion_wait_s: 50e-9,
        load_latency_s: 1.0e-6,
        l2_bytes_per_s: 10e12,
        l2_merged_share: 0.5,
        fp8_l2_merged_share: 0.5,
        hbm_efficiency: 0.85,
        tile_overhead_s: 1.5e-6,
        store_bytes_per_s: 40e9,
        direct_store_bytes_per_s: 40e9,
        partial_bytes_per_s: 40e9,
        workspace_round_trip_s: 0.7e-6,
        workspace_count_s: 1.4e-6,
        cluster_handover_s: 0.5e-6,
        stream_k_miss_share: 0.5,
        overlap_exponent: 4.0,
        launch_s: 4e-6,
    };

    /// The constants as a vector, in [`Calibration::NAMES`]' order (the fit's search space).
    pub fn to_vec(&self) -> Vec<f64> {
        vec![
            self.mma_efficiency_pipeline,
            self.mma_efficiency_pipeline_two_warpgroups,
            self.mma_efficiency_one_consumer,
            self.mma_efficiency_two_consumers,
            self.mma_efficiency_ping_pong,
            self.mma_efficiency_column_halves,
            self.fp8_mma_efficiency,
            self.k_block_overhead_s,
            self.promotion_serial,
            self.promotion_overlapped,
            self.promotion_wait_s,
            self.load_latency_s,
            self.l2_bytes_per_s,
            self.l2_merged_share,
            self.fp8_l2_merged_share,
            self.hbm_efficiency,
            self.tile_overhead_s,
            self.store_bytes_per_s,
            self.direct_store_bytes_per_s,
            self.partial_bytes_per_s,
            self.workspace_round_trip_s,
            self.workspace_count_s,
            self.cluster_handover_s,
            self.stream_k_miss_share,
            self.overlap_exponent,
            self.launch_s,
        ]
    }

    /// The constants from a vector in [`Calibration::NAMES`]' order.
    pub fn from_slice(v: &[f64]) -> Calibration {
        Calibration {
            mma_efficiency_pipeline: v[0],
            mma_efficiency_pipeline_two_warpgroups: v[1],
            mma_efficiency_one_consumer: v[2],
            mma_efficiency_two_consumers: v[3],
            mma_efficiency_ping_pong: v[4],
            mma_efficiency_column_halves: v[5],
            fp8_mma_efficiency: v[6],
            k_block_overhead_s: v[7],
            promotion_serial: v[8],
            promotion_overlapped: v[9],
            promotion_wait_s: v[10],
            load_latency_s: v[11],
            l2_bytes_per_s: v[12],
            l2_merged_share: v[13],
            fp8_l2_merged_share: v[14],
            hbm_efficiency: v[15],
            tile_overhead_s: v[16],
            store_bytes_per_s: v[17],
            direct_store_bytes_per_s: v[18],
            partial_bytes_per_s: v[19],
            workspace_round_trip_s: v[20],
            workspace_count_s: v[21],
            cluster_handover_s: v[22],
            stream_k_miss_share: v[23],
            overlap_exponent: v[24],
            launch_s: v[25],
        }
    }

    /// The constants' names, as the calibration file spells them.
    pub const NAMES: [&'static str; 26] = [
        "mma_efficiency_pipeline",
        "mma_efficiency_pipeline_two_warpgroups",
        "mma_efficiency_one_consumer",
        "mma_efficiency_two_consumers",
        "mma_efficiency_ping_pong",
        "mma_efficiency_column_halves",
        "fp8_mma_efficiency",
        "k_block_overhead_s",
        "promotion_serial",
        "promotion_overlapped",
        "promotion_wait_s",
        "load_latency_s",
        "l2_bytes_per_s",
        "l2_merged_share",
        "fp8_l2_merged_share",
        "hbm_efficiency",
        "tile_overhead_s",
        "store_bytes_per_s",
        "direct_store_bytes_per_s",
        "partial_bytes_per_s",
        "workspace_round_trip_s",
        "workspace_count_s",
        "cluster_handover_s",
        "stream_k_miss_share",
        "overlap_exponent",
        "launch_s",
    ];
}

/// What limits a candidate most.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// The tensor cores (and FP8's promotion): the K loop's arithmetic.
    Mma,
    /// Operand loads arriving too slowly for the stages in flight.
    Latency,
    /// Bytes staged from L2 into shared memory.
    L2,
    /// Bytes read from HBM.
    Hbm,
    /// SMs left idle: a partial last wave or too few CTAs for the SMs.
    Waves,
    /// Split-K's or stream-K's partial tiles.
    Reduction,
    /// Fixed costs: launch, pipeline fill, epilogue.
    Overhead,
}

impl Bound {
    /// The word `--explain` prints.
    pub fn word(self) -> &'static str {
        match self {
            Bound::Mma => "mma",
            Bound::Latency => "latency",
            Bound::L2 => "l2",
            Bound::Hbm => "hbm",
            Bound::Waves => "waves",
            Bound::Reduction => "reduction",
            Bound::Overhead => "overhead",
        }
    }
}

/// A candidate's predicted time and its parts, in seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prediction {
    /// The whole kernel.
    pub seconds: f64,
    /// The main loops' MMA (and promotion) time, summed over waves.
    pub mma: f64,
    /// The main loops' load-latency bound, summed over waves.
    pub latency: f64,
    /// The L2 staging bound, summed over waves.
    pub l2: f64,
    /// The HBM bound, summed over waves.
    pub hbm: f64,
    /// Time the SMs would idle for lack of CTAs, within the main-loop time.
    pub idle: f64,
    /// Split-K's reduction or stream-K's hand-over.
    pub reduction: f64,
    /// Launch, fill and drain, and the exposed epilogue.
    pub overhead: f64,
    /// What bounds it.
    pub bound: Bound,
}

impl fmt::Display for Prediction {
    /// `123.4us hbm`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.1}us {}", self.seconds * 1e6, self.bound.word())
    }
}

impl Prediction {
    /// The terms the time is made of, as `--explain` names them: the main
    /// loops' bounds (combined as a p-norm with the HBM bound, not added),
    /// then what adds to them.
    pub fn terms(&self) -> String {
        let us = |s: f64| format!("{:.1}us", s * 1e6);
        let body = self.seconds - self.reduction - self.overhead;
        format!(
            "{} = main loop {} (MMA {}, load latency {}, L2 {}, HBM {}, combined as a p-norm; SMs idle {}) + reduction {} + overhead {} (launch, fill and drain, exposed stores and epilogue)",
            us(self.seconds),
            us(body),
            us(self.mma),
            us(self.latency),
            us(self.l2),
            us(self.hbm),
            us(self.idle),
            us(self.reduction),
            us(self.overhead)
        )
    }
}

/// The GPU facts the model reads besides [`Machine`]'s: the target's rates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Throughput {
    /// Dense BF16 tensor-core peak, FLOP/s.
    pub bf16_flops: f64,
    /// Dense FP8 tensor-core peak, FLOP/s.
    pub fp8_flops: f64,
    /// HBM bandwidth, bytes/s.
    pub hbm_bytes_per_s: f64,
    /// SM clock at which the peaks hold, Hz.
    pub clock_hz: f64,
}

impl Throughput {
    /// `target`'s rates.
    pub fn of(target: &Target) -> Throughput {
        Throughput {
            bf16_flops: target.bf16_flops as f64,
            fp8_flops: target.fp8_flops as f64,
            hbm_bytes_per_s: target.hbm_bytes_per_s as f64,
            clock_hz: target.boost_clock_hz as f64,
        }
    }

    /// The tensor-core peak for `precision`.
    fn peak(&self, precision: Precision) -> f64 {
        match precision {
            Precision::Bf16 => self.bf16_flops,
            Precision::Fp8BlockScaled => self.fp8_flops,
        }
    }
}

pub mod calibration;
pub mod epilogue;
pub mod fit;

/// `target`'s rates and the constants fitted for it. A target not yet
/// fitted on its own takes the H200's constants, which describe the same
/// SMs, with its own rates: its HBM term still scales with its bandwidth.
pub fn for_target(target: &Target) -> (Throughput, Calibration) {
    let calibration = calibration::fitted(target.name).unwrap_or(calibration::H200);
    (Throughput::of(target), calibration)
}

/// A candidate and the cost model's prediction for it.
#[derive(Clone, Debug, PartialEq)]
pub struct Weighed {
    /// The configuration with the figures that ranked it.
    pub candidate: Candidate,
    /// Its predicted time and what bounds it.
    pub prediction: Prediction,
}

/// How much faster than the policies' pick the model must predict another
/// candidate to pick it instead. The model's median error is about 9%
/// (docs/cost-model.md), and the policies' picks were measured and tuned on
/// the benchmark shapes: a gain predicted within the model's error is not
/// taken. Of the margins tried on the training set (0 to 50%), 5% gave
/// the fastest picks.
pub const INCUMBENT_MARGIN: f64 = 0.05;

/// `weighed`, the policies' pick first, in the order config selection takes
/// them: by predicted time, except that the policies' pick stays first
/// unless another candidate is predicted faster by more than
/// [`INCUMBENT_MARGIN`]. Each candidate's reason says where it stands.
pub fn order(mut weighed: Vec<Weighed>) -> Vec<Weighed> {
    let Some(incumbent) = weighed.first().map(|w| w.candidate.config) else {
        return weighed;
    };
    weighed.sort_by(|a, b| a.prediction.seconds.total_cmp(&b.prediction.seconds));
    let fastest = weighed[0].prediction.seconds;
    let at = weighed.iter().position(|w| w.candidate.config == incumbent).expect("the incumbent is weighed");
    let kept = weighed[at].prediction.seconds <= fastest * (1.0 + INCUMBENT_MARGIN);
    if kept {
        weighed[..=at].rotate_right(1);
    }
    let pick = weighed[0].prediction.seconds;
    let incumbent_time = weighed.iter().find(|w| w.candidate.config == incumbent).map_or(pick, |w| w.prediction.seconds);
    for (i, w) in weighed.iter_mut().enumerate() {
        let bound = w.prediction.bound.word();
        w.candidate.reason = match i {
            0 if kept => format!("picked: the policies' pick, predicted within {:.0}% of the fastest; bound by {bound}", 100.0 * INCUMBENT_MARGIN),
            0 => format!("picked: least predicted time, {:.1}% under the policies' pick; bound by {bound}", 100.0 * (1.0 - pick / incumbent_time)),
            _ => format!("predicted {:+.1}% over the pick; bound by {bound}", 100.0 * (w.prediction.seconds / pick - 1.0)),
        };
    }
    weighed
}

/// CUDA-core lanes of one SM (FFMA issue slots a cycle).
const SM_LANES: f64 = 128.0;

/// Special-function-unit results one SM gives a cycle (`ex2`, `tanh`,
/// `rsqrt`: CUDA C Programming Guide, arithmetic instruction throughput,
/// compute capability 9.0).
const SFU_LANES: f64 = 16.0;

/// Bytes of an element of C (BF16) and of a partial f32 accumulator.
const OUTPUT_BYTES: f64 = 2.0;
const PARTIAL_BYTES: f64 = 4.0;

/// The share of L2 that A and B may fill and still be read once from HBM
/// whatever the tile order: the rest holds C's lines and other traffic.
const L2_RESIDENT_SHARE: f64 = 0.5;

/// Tile rows per group of a persistent kernel's grouped order
/// (`tile-persistent`'s default `group`).
const PERSISTENT_GROUP_ROWS: i64 = 8;

/// The time of work limited by several resources at once: their times'
/// p-norm, which is their maximum where one dominates and more than it
/// where two are close (neither overlaps the other perfectly).
fn overlapped(times: &[f64], p: f64) -> f64 {
    let top = times.iter().copied().fold(0.0, f64::max);
    if top == 0.0 {
        return 0.0;
    }
    top * times.iter().map(|t| (t / top).powf(p)).sum::<f64>().powf(1.0 / p)
}

/// The tiles one wave of `active` consecutive tiles covers in the tile
/// order: (rows of tiles, columns of tiles). The grid runs down M first;
/// a grouped order down `group` rows, then across N.
fn footprint(tiles_m: i64, active: i64, group: i64) -> (f64, f64) {
    let rows = if group > 0 { group.min(tiles_m) } else { tiles_m };
    let covered_rows = rows.min(active) as f64;
    // A wave that does not start on a column boundary straddles one more.
    let columns = active as f64 / rows as f64 + if active % rows == 0 { 0.0 } else { 1.0 };
    (covered_rows, columns.max(1.0))
}

/// The promotion's instructions per accumulator element, relative to one
/// FMA: 1 where the block scales run along the columns (a thread's few
/// row scales times its block scales are a handful of products a K
/// block); the swapped GEMM's (block scales along the rows) also takes,
/// per m64 row block, one product per column scale the thread holds (half
/// an instruction an element) and reads those column scales from shared
/// memory once per K block (half an instruction an element, shared by the
/// thread's m64 row blocks).
fn promotion_work(problem: &Problem, c: &Config) -> f64 {
    if problem.row_block_scales.is_none() {
        return 1.0;
    }
    let row_blocks = (c.block_m / (64 * c.tile_warpgroups())).max(1) as f64;
    1.5 + 0.5 / row_blocks
}

/// Whether `tile-pair-promotions` runs the K loop in pairs: block-scaled
/// FP8 in a plain pipeline of one warpgroup over one m64 row block (each
/// K block's wgmma waited for alone and then promoted), more than one
/// stage, and more than one K block a CTA. Taller tiles take a wgmma and a
/// promotion a row block, a form the pass leaves alone (docs/ir.md).
pub fn promotes_in_pairs(problem: &Problem, c: &Config) -> bool {
    let k_blocks_cta = ceil_div(ceil_div(problem.k, c.block_k), c.splits.max(1));
    problem.precision == Precision::Fp8BlockScaled && c.schedule == Schedule::Pipeline && c.num_warps == 4 && c.block_m == 64 && c.stages > 1 && k_blocks_cta > 1
}

/// A K block's time on the tensor cores and the serial chain after its
/// wgmma (the wait for it and block-scaled FP8's promotion): one after the
/// other, or, in pairs, the first K block's chain under the second's
/// wgmma and the second's exposed.
fn k_block_compute(mma: f64, chain: f64, paired: bool) -> f64 {
    if paired {
        (mma + chain / 2.0).max(mma / 2.0 + chain)
    } else {
        mma + chain
    }
}

/// The loads a K loop of `stages` keeps in flight behind the K block it
/// computes, on average over its `k_blocks`: a stage each but the one
/// computed; in pairs the first half's stage is refilled after the second
/// half's wgmma, a K block late, so over the K blocks that refill a stage
/// half a load fewer (none where every K block has a stage of its own).
fn loads_in_flight(stages: i64, k_blocks: i64, paired: bool) -> f64 {
    let ahead = (stages - 1) as f64;
    let refills = (k_blocks - (stages - 1)).max(0) as f64;
    let late = if paired && k_blocks > 0 { 0.5 * refills / k_blocks as f64 } else { 0.0 };
    (ahead - late).max(1.0)
}

/// The L2 throughput a TMA box's bytes take, over that of rows that start
/// on a sector, where the tensor's rows lie `stride` bytes apart: rows an
/// odd multiple of 16 bytes apart (every other one starting half a sector
/// in) took twice it, those a multiple of a sector apart within a few
/// percent of aligned ones (measured: docs/findings.md, "TMA").
fn l2_throughput_factor(stride: i64, sector: i64) -> f64 {
    sector as f64 / gcd(stride, sector).max(1) as f64
}

/// The L2 throughput each of A's and B's stages takes over its bytes: 2
/// where the operand's rows are an odd multiple of 16 bytes apart (off the
/// L2's sectors), 1 where they start on sectors.
pub fn operand_l2_factors(problem: &Problem, machine: &Machine) -> (f64, f64) {
    let (a_stride, b_stride) = operand_row_bytes(problem);
    (l2_throughput_factor(a_stride, machine.l2_sector_bytes), l2_throughput_factor(b_stride, machine.l2_sector_bytes))
}

/// The bytes apart that rows of A (M x K) and of B (N x K, or K x N without
/// `transpose_b`) lie.
pub fn operand_row_bytes(problem: &Problem) -> (i64, i64) {
    let el = problem.precision.operand_bytes();
    (problem.k * el, if problem.transpose_b { problem.k } else { problem.n } * el)
}

/// Whether `c`'s CTAs read in step: a grid that does not loop over tiles
/// (no persistent loop, no stream-K), without a cluster's multicast, whose
/// first wave's CTAs start their K ranges together, so that of their reads
/// of a row of A's tiles or a column of B's over a K range that another CTA
/// of the wave also reads, [`merged_share`] is merged before L2 (ncu's L2
/// request-coalescer counters: docs/cost-model.md, "Refits judged on the
/// picks they move").
pub fn reads_in_step(c: &Config) -> bool {
    !c.persistent() && c.stream_k.is_none() && c.cluster == Along::None
}

/// The share of in-step CTAs' repeated operand reads merged before L2 for
/// `precision`, and the constant it comes from.
pub fn merged_share(cal: &Calibration, precision: Precision) -> (f64, &'static str) {
    match precision {
        Precision::Bf16 => (cal.l2_merged_share.min(1.0), "l2_merged_share"),
        Precision::Fp8BlockScaled => (cal.fp8_l2_merged_share.min(1.0), "fp8_l2_merged_share"),
    }
}

/// Predicts `candidate`'s time for `problem` on `machine`.
pub fn predict(problem: &Problem, machine: &Machine, throughput: &Throughput, cal: &Calibration, candidate: &Candidate) -> Prediction {
    let c = &candidate.config;
    let (m, n, k) = (problem.m, problem.n, problem.k);
    let el = problem.precision.operand_bytes() as f64;
    let sms = machine.sms as f64;
    let (bm, bn, bk) = (c.block_m as f64, c.block_n as f64, c.block_k as f64);
    let tiles_m = ceil_div(m, c.block_m);
    let tiles_n = ceil_div(n, c.block_n);
    let tiles = candidate.tiles;
    let k_blocks = ceil_div(k, c.block_k);
    let splits = c.splits.max(1);
    let k_blocks_cta = ceil_div(k_blocks, splits);

    // One K block on one SM.
    let (efficiency, promotion) = match c.schedule {
        Schedule::Pipeline if c.num_warps > 4 => (cal.mma_efficiency_pipeline_two_warpgroups, cal.promotion_overlapped),
        Schedule::Pipeline => (cal.mma_efficiency_pipeline, cal.promotion_serial),
        Schedule::WarpSpecialized { consumers: 1 } => (cal.mma_efficiency_one_consumer, cal.promotion_serial),
        Schedule::WarpSpecialized { .. } => (cal.mma_efficiency_two_consumers, cal.promotion_overlapped),
        Schedule::PingPong => (cal.mma_efficiency_ping_pong, cal.promotion_overlapped),
        Schedule::ColumnHalves => (cal.mma_efficiency_column_halves, cal.promotion_overlapped),
    };
    let efficiency = match problem.precision {
        Precision::Bf16 => efficiency,
        Precision::Fp8BlockScaled => efficiency * cal.fp8_mma_efficiency,
    };
    let sm_flops = throughput.peak(problem.precision) / sms;
    let mma_kb = 2.0 * bm * bn * bk / (sm_flops * efficiency.min(1.0));
    let promotion_kb = match problem.precision {
        Precision::Bf16 => 0.0,
        Precision::Fp8BlockScaled => promotion * promotion_work(problem, c) * bm * bn / (SM_LANES * throughput.clock_hz),
    };
    // Every warpgroup on the tile waits for its own wgmma group at each K
    // block (consumers sharing a tile take the same K block together), once
    // for each m64 block of rows it holds: it promotes them one at a time.
    let promotion_wait = match problem.precision {
        Precision::Bf16 => 0.0,
        Precision::Fp8BlockScaled => cal.promotion_wait_s * c.row_blocks_per_warpgroup() as f64,
    };
    let paired = promotes_in_pairs(problem, c);
    let compute_kb = k_block_compute(mma_kb, promotion_kb + promotion_wait, paired) + cal.k_block_overhead_s;
    let in_flight = loads_in_flight(c.stages, k_blocks_cta, paired);
    let latency_kb = cal.load_latency_s / in_flight;
    // Each operand's bytes a stage, as L2 throughput (rows off its sectors
    // take more of it).
    let (a_rows, b_rows) = operand_l2_factors(problem, machine);
    let (a_stage, b_stage) = (bm * bk * el * a_rows, bn * bk * el * b_rows);
    let stage_bytes = a_stage + b_stage;
    // A cluster's CTAs load the operand tile they share once, multicast.
    let ctas = c.cluster_ctas as f64;
    let staged_bytes_kb = match c.cluster {
        Along::M => a_stage + b_stage / ctas,
        Along::N => a_stage / ctas + b_stage,
        Along::None => stage_bytes,
    };

    // Waves: a persistent kernel runs one CTA an SM over its tiles; the
    // plain pipeline's grid as many CTAs an SM as its shared memory and
    // registers let the hardware hold, and no more than there are.
    let ctas = tiles * splits;
    let (stream_k_tiles, whole_tiles) = match c.stream_k {
        Some(_) => (tiles % machine.sms, tiles - tiles % machine.sms),
        None => (0, tiles),
    };
    let whole_ctas = whole_tiles * splits;
    let (resident, grid_sms) = match c.schedule {
        Schedule::Pipeline => {
            let accumulators = problem.precision.accumulator_registers(c.block_m, c.block_n, c.tile_warpgroups()).total;
            let fit = machine.ctas_per_sm(candidate.smem_bytes).min(machine.ctas_per_sm_by_registers(c.num_warps, accumulators)).max(1);
            let sms = machine.sms_for(c);
            (fit.min(ceil_div(ctas, sms)).max(1), sms)
        }
        _ => (1, if c.stream_k.is_some() { machine.sms } else { candidate.sms.max(1) }),
    };
    let slots = grid_sms * resident;
    let group = match c.schedule {
        Schedule::Pipeline => c.raster_group,
        _ => PERSISTENT_GROUP_ROWS,
    };

    let a_bytes = (m * k) as f64 * el;
    let b_bytes = (n * k) as f64 * el;
    let operands_resident = a_bytes + b_bytes <= L2_RESIDENT_SHARE * machine.l2_bytes as f64;
    let hbm_rate = throughput.hbm_bytes_per_s * cal.hbm_efficiency.min(1.0);

    let mut mma = 0.0;
    let mut latency = 0.0;
    let mut l2 = 0.0;
    let mut hbm = 0.0;
    let mut idle = 0.0;
    let mut main_loop = 0.0;
    let mut footprints = Vec::new();
    // Whole waves of the same size cost the same: time one and count it.
    let full_waves = whole_ctas / slots;
    let last = whole_ctas % slots;
    let (share, _) = merged_share(cal, problem.precision);
    // Only the first wave's CTAs start together: a later wave's start as
    // the CTAs before them end, out of step.
    let grid_in_step = reads_in_step(c);
    let waves = [
        (slots, i64::from(full_waves > 0), grid_in_step),
        (slots, (full_waves - 1).max(0), false),
        (last, i64::from(last > 0), grid_in_step && full_waves == 0),
    ];
    for (active, count, in_step) in waves {
        if count == 0 {
            continue;
        }
        let per_sm = ceil_div(active, grid_sms) as f64;
        let wave_mma = per_sm * k_blocks_cta as f64 * compute_kb;
        let wave_latency = k_blocks_cta as f64 * latency_kb;
        let (rows, cols) = footprint(tiles_m, ceil_div(active, splits), group);
        // In step, each row of A's tiles and each column of B's over each K
        // range is read once and the merged share of the repeats not again.
        // The wave is taken to touch as many rows and columns as it could
        // (its tiles, at most the grid's) whatever their order, so that
        // the reads grow with the grid.
        let wave_l2 = if in_step {
            let tiles_in_wave = ceil_div(active, splits);
            let once = (tiles_m.min(tiles_in_wave) as f64 * a_stage + tiles_n.min(tiles_in_wave) as f64 * b_stage) * splits as f64;
            let all = active as f64 * stage_bytes;
            let merged = share * (all - once).max(0.0);
            k_blocks_cta as f64 * (all - merged) / cal.l2_bytes_per_s
        } else {
            active as f64 * k_blocks_cta as f64 * staged_bytes_kb / cal.l2_bytes_per_s
        };
        let wave_hbm_bytes = (rows * bm + cols * bn) * k as f64 * el;
        footprints.push((wave_hbm_bytes, count));
        let wave = overlapped(&[wave_mma, wave_latency, wave_l2], cal.overlap_exponent);
        // The busiest SM's MMA time against all SMs': what idles.
        let busy = active as f64 * k_blocks_cta as f64 * compute_kb / sms;
        mma += count as f64 * wave_mma;
        latency += count as f64 * wave_latency;
        l2 += count as f64 * wave_l2;
        idle += count as f64 * (wave_mma - busy).max(0.0);
        main_loop += count as f64 * wave;
    }
    // HBM: each wave's footprint, unless A and B stay in L2 across waves.
    let footprint_bytes: f64 = footprints.iter().map(|(b, count)| b * *count as f64).sum();
    let operand_bytes = if operands_resident { a_bytes + b_bytes } else { footprint_bytes.max(a_bytes + b_bytes) };
    let output_bytes = (m * n) as f64 * OUTPUT_BYTES;
    hbm += (operand_bytes + output_bytes) / hbm_rate;

    // Stream-K: the last wave's tiles' K blocks spread over every SM.
    let mut reduction = 0.0;
    if stream_k_tiles > 0 {
        let iterations = (stream_k_tiles * k_blocks) as f64;
        let share = (iterations / sms).ceil();
        let piece = share.max(1.0);
        // Ranges of `piece` iterations cut a tile's `k_blocks` at offsets
        // that shift from tile to tile: on average 1 + (k_blocks - 1) / piece
        // pieces a tile.
        let pieces_per_tile = 1.0 + (k_blocks - 1).max(0) as f64 / piece;
        mma += share * compute_kb;
        latency += share * latency_kb;
        l2 += iterations * stage_bytes / cal.l2_bytes_per_s;
        // Each tile's operand panels, read by its pieces' CTAs at spread K
        // offsets: the share that misses L2 comes from HBM again.
        let panels = stream_k_tiles as f64 * (bm + bn) * k as f64 * el;
        let stream_k_hbm = (panels * cal.stream_k_miss_share.min(1.0)) / hbm_rate;
        hbm += stream_k_hbm;
        main_loop += overlapped(&[share * compute_kb, share * latency_kb, iterations * stage_bytes / cal.l2_bytes_per_s, stream_k_hbm], cal.overlap_exponent);
        // Each owner adds its tile's other pieces, parked as f32 tiles.
        reduction += (pieces_per_tile - 1.0) * bm * bn * PARTIAL_BYTES * 2.0 / cal.partial_bytes_per_s;
    }
    // Per tile on the busiest SM: fill and drain, and its stores unless
    // hidden behind the next tile's main loop. A split tile's CTAs each
    // fill and drain their own pipeline, so it is CTAs the SM takes in turn
    // that pay those.
    let tiles_per_sm = ceil_div(tiles, (slots / resident).max(1)) as f64;
    let ctas_per_sm = ceil_div(ctas, (slots / resident).max(1)) as f64;

    // Split-K: through a cluster, each CTA but one hands its partial tile
    // over and the first adds them, the cluster's CTAs meeting before and
    // after the reads (each turn of the busiest SM ends a tile); through a
    // workspace, each CTA parks its tile as it ends (every turn of the
    // busiest SM parks one) and the last of a tile's CTAs reads them all
    // back, or, spread, every CTA reads its share of them all and stores
    // its share's sums, and the last reads the summed tile. Besides the
    // tiles moved, each waits: for the cluster, or for L2 round trips.
    if splits > 1 {
        let round_trips = |n: i64| n as f64 * cal.workspace_round_trip_s;
        let (tiles_moved, waits) = match c.split_reduce {
            SplitReduce::Cluster => (2.0 * (splits - 1) as f64, ctas_per_sm * cal.cluster_handover_s),
            // The count (its atomic releasing the parked tile), then the
            // slots a group at a time.
            SplitReduce::Workspace => {
                let values = c.block_m * c.block_n / (32 * c.num_warps);
                (ctas_per_sm + splits as f64, cal.workspace_count_s + round_trips(splits / slots_in_flight(values, splits)))
            }
            // The park, the share's reads of every slot (a tile in all, at
            // about half the last split's rate: all the tile's CTAs read at
            // once), its sums, the summed tile read back; two counts, the
            // wait, and a round trip a slot, since every share reads every
            // slot (fitted to same-config pairs, docs/evidence.md). Where
            // each split stores its share, half a tile less: the summed tile
            // is not read back, but every split's share of the output is
            // stored beside the others' (fitted to pairs as above).
            SplitReduce::Spread if c.stores_shares(problem) => (ctas_per_sm + 2.5 + 1.0 / splits as f64, round_trips(3 + splits)),
            SplitReduce::Spread => (ctas_per_sm + 3.0 + 1.0 / splits as f64, round_trips(3 + splits)),
        };
        reduction += tiles_moved * bm * bn * PARTIAL_BYTES / cal.partial_bytes_per_s + waits;
    }

    let store_rate = match c.epilogue {
        Epilogue::Tma { .. } => cal.store_bytes_per_s,
        Epilogue::Global => cal.direct_store_bytes_per_s,
    };
    // Splits that store their shares each store a split's share of the tile.
    let stored_share = if c.stores_shares(problem) { 1.0 / splits as f64 } else { 1.0 };
    let store = stored_share * bm * bn * OUTPUT_BYTES / store_rate;
    let hidden = c.schedule == Schedule::PingPong || c.deferred_epilogue;
    let exposed_stores = if hidden { 1.0 } else { tiles_per_sm };
    // The epilogue's ops on the CUDA cores and SFUs and its reads (a
    // residual, at the stores' rate). The deferred epilogue hides those
    // after the conversion it defers (an FP8 quantisation's), not those
    // before it; ping-pong runs them all beside the other consumer's K loop.
    let work = problem.epilogue;
    let instructions = |lane: i64, sfu: i64| bm * bn * (lane as f64 / SM_LANES + sfu as f64 / SFU_LANES) / throughput.clock_hz;
    let deferrable = instructions(work.deferrable_lane_ops, work.deferrable_sfu_ops);
    let kept = instructions(work.lane_ops - work.deferrable_lane_ops, work.sfu_ops - work.deferrable_sfu_ops) + bm * bn * work.read_bytes as f64 / cal.store_bytes_per_s;
    let exposed_epilogues = if c.schedule == Schedule::PingPong { 1.0 } else { tiles_per_sm };
    let overhead = cal.launch_s + ctas_per_sm * cal.tile_overhead_s + exposed_stores * (store + deferrable) + exposed_epilogues * kept;

    let body = overlapped(&[main_loop, hbm], cal.overlap_exponent);
    let seconds = body + reduction + overhead;
    let bound = if reduction > body.max(overhead) {
        Bound::Reduction
    } else if overhead > body {
        Bound::Overhead
    } else if hbm >= main_loop {
        Bound::Hbm
    } else if idle > 0.5 * mma && mma >= latency.max(l2) {
        Bound::Waves
    } else if mma >= latency && mma >= l2 {
        Bound::Mma
    } else if latency >= l2 {
        Bound::Latency
    } else {
        Bound::L2
    };
    Prediction { seconds, mma, latency, l2, hbm, idle, reduction, overhead, bound }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selection::{figures, rank, Config, Pins};
    use crate::cost_model::epilogue::EpilogueWork;

    fn h200() -> Throughput {
        Throughput::of(&Target::H200)
    }

    fn bf16(m: i64, n: i64, k: i64) -> Problem {
        Problem { m, n, k, precision: Precision::Bf16, any_n: false, clusterable: true, routed_rows: false, varying_k: false, b_scale_rows: None, a_in_registers: false, transpose_b: true, a_scales_by_run: false, column_group: None, output_bytes: 2, epilogue: EpilogueWork::default(), output_column_major: false, row_block_scales: None }
    }

    fn predictions(p: &Problem) -> Vec<(Candidate, Prediction)> {
        rank(p, &Machine::H100, &Pins::default()).into_iter().map(|c| {
            let pred = predict(p, &Machine::H100, &h200(), &Calibration::PRIOR, &c);
            (c, pred)
        }).collect()
    }

    /// Shapes drawn as a user brings them (M from 1, N and K from 256,
    /// log-uniform up to 16384), from a fixed seed.
    fn drawn_shapes(count: usize) -> Vec<(i64, i64, i64)> {
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move |lo: f64, hi: f64, step: i64| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let u = (state >> 11) as f64 / (1u64 << 53) as f64;
            let x = (lo.ln() + u * (hi.ln() - lo.ln())).exp() as i64;
            (x / step).max(1) * step
        };
        (0..count).map(|_| (next(1.0, 16384.0, 1), next(256.0, 16384.0, 8), next(256.0, 16384.0, 16))).collect()
    }

    /// Every candidate of `p`, the rules' and the alternatives, as figured
    /// for `at` (the same configuration on a neighbouring shape).
    fn candidates_at(p: &Problem, at: &Problem) -> Vec<(Candidate, Candidate)> {
        let machine = Machine::of(&Target::H200);
        let ranked = rank(p, &machine, &Pins::default());
        let alternatives = crate::selection::alternatives(p, &machine, &Pins::default(), &ranked);
        ranked.into_iter().chain(alternatives).map(|c| (c.clone(), figures(at, &machine, c.config))).collect()
    }

    /// CTAs of a split grid's wave that start together and share rows and
    /// columns of tiles are charged the merged share of their repeated reads
    /// less L2; a persistent grid, whose CTAs fall out of step, all of them.
    #[test]
    fn reads_in_step_are_merged_before_l2() {
        let (machine, p) = (Machine::of(&Target::H200), bf16(512, 512, 65536));
        let split: Config = "128x128x64 stages=7 warps=12 ws2 epilogue=global splits=8 split_reduce=spread".parse().unwrap();
        let persistent: Config = "128x128x64 stages=6 warps=12 ws2 persistent epilogue=tma".parse().unwrap();
        let l2 = |c: Config, share: f64| predict(&p, &machine, &h200(), &Calibration { l2_merged_share: share, ..Calibration::PRIOR }, &figures(&p, &machine, c)).l2;
        // 16 tiles in 4 rows and 4 columns, 8 splits: 128 CTAs reading 32
        // distinct row and column panels, 96 of their 128 reads of A (and
        // of B) repeats; half of those merged leaves 80 of 128.
        let ratio = l2(split, 0.5) / l2(split, 0.0);
        assert!((ratio - 80.0 / 128.0).abs() < 1e-9, "{ratio}");
        assert_eq!(l2(persistent, 0.5), l2(persistent, 0.0));
    }

    /// Only a grid's first wave starts together: a later wave's CTAs start
    /// as those before them end, and are charged all their reads.
    #[test]
    fn only_the_first_wave_reads_in_step() {
        let (machine, p) = (Machine::of(&Target::H200), bf16(1024, 512, 65536));
        let split: Config = "128x128x64 stages=7 warps=8 ws1 epilogue=global splits=8 split_reduce=spread".parse().unwrap();
        let candidate = figures(&p, &machine, split);
        assert_eq!(candidate.waves, 2, "32 tiles split in eight over {} SMs", candidate.sms);
        let l2 = |share: f64| predict(&p, &machine, &h200(), &Calibration { l2_merged_share: share, ..Calibration::PRIOR }, &candidate).l2;
        // The first wave's CTAs cover 8 rows of A's tiles and 4 columns of
        // B's (at most its tiles of each), over 8 K ranges of 128 K blocks.
        let (first, tiles) = (candidate.sms as f64, ceil_div(candidate.sms, 8) as f64);
        let stage = (128 * 64 * 2) as f64;
        let once = (tiles.min(8.0) + tiles.min(4.0)) * stage * 8.0;
        let repeats = first * 2.0 * stage - once;
        let merged = 0.5 * repeats * 128.0 / Calibration::PRIOR.l2_bytes_per_s;
        let saved = l2(0.0) - l2(0.5);
        assert!((saved / merged - 1.0).abs() < 1e-9, "saved {saved}, the first wave's merged reads {merged}");
    }

    /// Block-scaled FP8's in-step reads merge by a share of their own.
    #[test]
    fn fp8_reads_in_step_merge_by_their_own_share() {
        let machine = Machine::of(&Target::H200);
        let p = Problem { precision: Precision::Fp8BlockScaled, ..bf16(512, 512, 65536) };
        let split: Config = "128x128x128 stages=5 warps=12 ws2 epilogue=tma scales=staged splits=8 split_reduce=spread".parse().unwrap();
        let candidate = figures(&p, &machine, split);
        let l2 = |bf16: f64, fp8: f64| predict(&p, &machine, &h200(), &Calibration { l2_merged_share: bf16, fp8_l2_merged_share: fp8, ..Calibration::PRIOR }, &candidate).l2;
        assert_eq!(l2(0.0, 0.5), l2(0.9, 0.5));
        assert!(l2(0.0, 0.5) < l2(0.0, 0.0));
    }

    /// Rows an odd multiple of 16 bytes apart take twice the L2
    /// throughput; rows a multiple of a sector apart, none more.
    #[test]
    fn rows_off_the_sectors_take_twice_the_l2_throughput() {
        for stride in [3840, 3872, 3904, 2 * 3888, 32] {
            assert_eq!(l2_throughput_factor(stride, 32), 1.0, "{stride}");
        }
        for stride in [3856, 3888, 2 * 3848, 16] {
            assert_eq!(l2_throughput_factor(stride, 32), 2.0, "{stride}");
        }
    }

    /// The L2 term of the same candidate at a K whose FP8 rows are off the
    /// sectors doubles, and nothing else grows.
    #[test]
    fn rows_off_the_sectors_weigh_on_l2_only() {
        let fp8 = |k| Problem { precision: Precision::Fp8BlockScaled, ..bf16(5733, 3280, k) };
        let (aligned, off) = (fp8(3840), fp8(3888));
        for (candidate, _) in predictions(&aligned).into_iter().take(8) {
            let at = |p: &Problem| predict(p, &Machine::H100, &h200(), &Calibration::PRIOR, &figures(p, &Machine::H100, candidate.config.clone()));
            let (a, o) = (at(&aligned), at(&off));
            let blocks = |p: &Problem| ceil_div(p.k, candidate.config.block_k) as f64;
            let grown = o.l2 / a.l2 / (blocks(&off) / blocks(&aligned));
            assert!((grown - 2.0).abs() < 1e-9, "{}: L2 grew {grown}x", candidate.config);
            let mma_per_block = (o.mma / blocks(&off)) / (a.mma / blocks(&aligned));
            assert!((mma_per_block - 1.0).abs() < 1e-9, "{}: MMA a K block {mma_per_block}x", candidate.config);
        }
    }

    /// An epilogue's work never predicts a candidate faster, and costs a
    /// ping-pong kernel (which runs one consumer's epilogue beside the
    /// other's K loop) at most one tile's worth, where it costs the other
    /// schedules one a tile.
    #[test]
    fn an_epilogue_costs_its_exposed_tiles() {
        let gelu = EpilogueWork { lane_ops: 10, sfu_ops: 1, ..Default::default() };
        for (m, n, k) in drawn_shapes(40) {
            let plain = bf16(m, n, k);
            let fused = Problem { epilogue: gelu, ..plain };
            for (candidate, before) in predictions(&plain) {
                let after = predict(&fused, &Machine::H100, &h200(), &Calibration::PRIOR, &candidate);
                let c = &candidate.config;
                let one_tile = (c.block_m * c.block_n) as f64 * (10.0 / SM_LANES + 1.0 / SFU_LANES) / h200().clock_hz;
                let added = after.seconds - before.seconds;
                assert!(added > 0.0, "{m}x{n}x{k} {c}: an epilogue predicted no slower");
                if c.schedule == Schedule::PingPong {
                    assert!((added - one_tile).abs() < 1e-12, "{m}x{n}x{k} {c}: ping-pong exposes one tile's epilogue, added {added}");
                } else {
                    assert!(added >= one_tile * (1.0 - 1e-9), "{m}x{n}x{k} {c}: each tile's epilogue is exposed");
                }
            }
        }
    }

    /// The deferred epilogue hides the epilogue's work on the converted
    /// tile (an FP8 quantisation's) as it hides the stores: deferring gains
    /// all but one tile's worth of it more where a CTA takes several
    /// tiles; the work before the conversion it leaves where it was.
    #[test]
    fn a_deferred_epilogue_hides_the_work_after_the_conversion() {
        let after = EpilogueWork { lane_ops: 5, deferrable_lane_ops: 5, ..Default::default() };
        let before = EpilogueWork { lane_ops: 5, ..Default::default() };
        for (m, n, k) in drawn_shapes(40) {
            let plain = bf16(m, n, k);
            for (candidate, _) in predictions(&plain) {
                let deferred = Candidate { config: Config { deferred_epilogue: true, ..candidate.config }, ..candidate.clone() };
                let gain = |work: EpilogueWork| {
                    let p = Problem { epilogue: work, ..plain };
                    let time = |c: &Candidate| predict(&p, &Machine::H100, &h200(), &Calibration::PRIOR, c).seconds;
                    time(&candidate) - time(&deferred)
                };
                let c = &candidate.config;
                assert!((gain(before) - gain(EpilogueWork::default())).abs() < 1e-12, "{m}x{n}x{k} {c}: work before the conversion is not deferred");
                let hidden = gain(after) - gain(EpilogueWork::default());
                let one_tile = (c.block_m * c.block_n) as f64 * 5.0 / SM_LANES / h200().clock_hz;
                if c.schedule == Schedule::PingPong || candidate.waves == 1 {
                    assert!(hidden.abs() < 1e-12, "{m}x{n}x{k} {c}: nothing more to hide, hid {hidden}");
                } else {
                    assert!(hidden >= one_tile * (1.0 - 1e-9), "{m}x{n}x{k} {c}: over {} waves deferring hid only {hidden}", candidate.waves);
                }
            }
        }
    }

    /// In pairs, a K block pays half its wait and promotion where the
    /// tensor cores' work covers it, and never more than one after the
    /// other; the late refills cost only loops that refill, at most half a
    /// load in flight.
    #[test]
    fn paired_promotions_hide_half_the_chain_and_refill_late() {
        assert_eq!(k_block_compute(1.0, 0.4, false), 1.4);
        assert_eq!(k_block_compute(1.0, 0.4, true), 1.2);
        assert_eq!(k_block_compute(0.2, 1.0, true), 1.1);
        for (mma, chain) in [(0.1, 1.0), (1.0, 1.0), (1.0, 0.1)] {
            assert!(k_block_compute(mma, chain, true) <= k_block_compute(mma, chain, false));
        }
        assert_eq!(loads_in_flight(8, 4, true), 7.0, "every K block has a stage: nothing refills");
        assert_eq!(loads_in_flight(8, 4, false), 7.0);
        assert_eq!(loads_in_flight(8, 14, true), 6.75);
        assert!(loads_in_flight(8, 10_000, true) > 6.5 && loads_in_flight(8, 10_000, false) == 7.0);
        assert_eq!(loads_in_flight(2, 100, true), 1.0, "at least one load in flight");
    }

    /// `tile-pair-promotions` rewrites the block-scaled plain pipeline of
    /// one warpgroup over one m64 row block with two K blocks or more a CTA:
    /// the model weighs those kernels in pairs and no other.
    #[test]
    fn only_the_kernels_tile_pair_promotions_rewrites_are_weighed_in_pairs() {
        let fp8 = Problem { precision: Precision::Fp8BlockScaled, ..bf16(75, 896, 4480) };
        let any = rank(&fp8, &Machine::of(&Target::H200), &Pins::default()).remove(0).config;
        let pipeline = Config { block_m: 64, block_n: 64, block_k: 128, stages: 8, num_warps: 4, schedule: Schedule::Pipeline, splits: 3, ..any };
        assert!(promotes_in_pairs(&fp8, &pipeline));
        assert!(!promotes_in_pairs(&bf16(75, 896, 4480), &pipeline));
        assert!(!promotes_in_pairs(&fp8, &Config { num_warps: 8, ..pipeline }));
        assert!(!promotes_in_pairs(&fp8, &Config { block_m: 128, ..pipeline }));
        assert!(!promotes_in_pairs(&fp8, &Config { stages: 1, ..pipeline }));
        assert!(!promotes_in_pairs(&fp8, &Config { schedule: Schedule::WarpSpecialized { consumers: 1 }, num_warps: 8, ..pipeline }));
        assert!(!promotes_in_pairs(&Problem { k: 128, ..fp8 }, &pipeline), "one K block a CTA");
    }

    /// One K block more costs a configuration at most the share of work it
    /// adds to the busiest CTA's K loop (its split's, or its stream-K
    /// share), and never makes it faster but under stream-K, whose pieces
    /// are whole K blocks: one more can lengthen every CTA's share and cut
    /// each tile into fewer pieces to hand over. No threshold of the model
    /// jumps at a K of its own.
    #[test]
    fn one_more_k_block_costs_at_most_the_work_it_adds() {
        let (machine, cal) = (Machine::of(&Target::H200), crate::cost_model::calibration::H200);
        for (m, n, k) in drawn_shapes(60) {
            let p = bf16(m, n, k);
            for (c, _) in candidates_at(&p, &p) {
                let bk = c.config.block_k;
                let deeper = Problem { k: k + bk, ..p };
                let more = figures(&deeper, &machine, c.config);
                let (t0, t1) = (predict(&p, &machine, &h200(), &cal, &c).seconds, predict(&deeper, &machine, &h200(), &cal, &more).seconds);
                let stream_k_tiles = if c.config.stream_k.is_some() { c.tiles % machine.sms } else { 0 };
                let per_cta = |k: i64| {
                    let k_blocks = ceil_div(k, bk);
                    ceil_div(k_blocks, c.config.splits.max(1)).max(ceil_div(stream_k_tiles * k_blocks, machine.sms)) as f64
                };
                let bound = t0 * (per_cta(k + bk) / per_cta(k)).max((k + bk) as f64 / k as f64);
                if stream_k_tiles == 0 {
                    assert!(t1 >= t0 * (1.0 - 1e-9), "{m}x{n}x{k} {}: {t1} faster than {t0} with one more K block", c.config);
                }
                assert!(t1 <= bound * (1.0 + 1e-9), "{m}x{n}x{k} {}: {t1} over {bound}, the work one more K block adds", c.config);
            }
        }
    }

    /// One more row or column of tiles never makes a configuration faster
    /// (but under stream-K, whose pieces grow with the tiles shared).
    #[test]
    fn one_more_tile_row_or_column_never_predicts_faster() {
        let (machine, cal) = (Machine::of(&Target::H200), crate::cost_model::calibration::H200);
        for (m, n, k) in drawn_shapes(40) {
            let p = bf16(m, n, k);
            for (c, _) in candidates_at(&p, &p).into_iter().filter(|(c, _)| c.config.stream_k.is_none()) {
                for grown in [Problem { m: m + c.config.block_m, ..p }, Problem { n: n + c.config.block_n, ..p }] {
                    let more = figures(&grown, &machine, c.config);
                    let (t0, t1) = (predict(&p, &machine, &h200(), &cal, &c).seconds, predict(&grown, &machine, &h200(), &cal, &more).seconds);
                    assert!(t1 >= t0 * (1.0 - 1e-9), "{m}x{n}x{k} -> {}x{}: {} predicted faster with more tiles ({t1} < {t0})", grown.m, grown.n, c.config);
                }
            }
        }
    }

    /// A workspace split whose CTAs outnumber the SMs runs them in turns,
    /// and each turn fills its own pipeline and parks its own partial tile:
    /// splitting a tile's K loop four ways over two turns costs, besides
    /// the two more slots the last CTA reads back, the second turn's fill
    /// and parked tile, for the same K blocks a busiest SM runs.
    #[test]
    fn every_turn_of_a_split_fills_and_parks() {
        let (machine, cal) = (Machine::of(&Target::H200), crate::cost_model::calibration::H200);
        let p = bf16(1024, 1024, 16384);
        let split = |splits: i64| {
            let config: Config = format!("128x128x64 stages=6 warps=8 ws1 epilogue=tma splits={splits} split_reduce=workspace").parse().expect("a config");
            let c = figures(&p, &machine, config);
            assert_eq!(c.tiles * splits <= machine.sms, splits == 2, "{config}");
            predict(&p, &machine, &h200(), &cal, &c)
        };
        let (one_turn, two_turns) = (split(2), split(4));
        let parked = 128.0 * 128.0 * PARTIAL_BYTES / cal.partial_bytes_per_s;
        let added = (two_turns.reduction + two_turns.overhead) - (one_turn.reduction + one_turn.overhead);
        assert!(added >= cal.tile_overhead_s + 3.0 * parked, "two turns add {added} s");
    }

    /// The reduction term `cal` predicts for `config` on a split decode
    /// tile's problem (2x7680x3584, swapped), the tile the split tests share.
    fn reduction(config: &str, cal: &Calibration) -> f64 {
        let machine = Machine::of(&Target::H200);
        let p = bf16(2, 7680, 3584).swapped();
        let config: Config = config.parse().expect("a config");
        predict(&p, &machine, &h200(), cal, &figures(&p, &machine, config)).reduction
    }

    /// A split tile handed over through its cluster costs the hand-over's
    /// fixed time once a turn of the busiest SM besides the tiles it
    /// moves: a split decode tile over two CTAs of a cluster pays it once,
    /// a workspace split of the same tile not at all.
    #[test]
    fn a_cluster_split_pays_the_hand_over_once_a_turn() {
        let with = crate::cost_model::calibration::H200;
        let without = Calibration { cluster_handover_s: 0.0, ..with };
        let cluster = "128x16x64 stages=8 warps=4 pipeline epilogue=global splits=2";
        let handed_over = reduction(cluster, &with) - reduction(cluster, &without);
        assert!((handed_over - with.cluster_handover_s).abs() < 1e-12, "{handed_over} s");
        let workspace = "128x16x64 stages=8 warps=4 pipeline epilogue=global splits=2 split_reduce=workspace";
        assert_eq!(reduction(workspace, &with), reduction(workspace, &without));
    }

    /// A workspace split pays the count's fixed latency once a tile,
    /// whatever its splits and however many slots its last CTA reads: the
    /// same split decode tile reduced through a cluster or spread over its
    /// CTAs does not pay it.
    #[test]
    fn a_workspace_split_pays_the_count_once() {
        let with = crate::cost_model::calibration::H200;
        let without = Calibration { workspace_count_s: 0.0, ..with };
        for splits in [2, 5] {
            let workspace = format!("128x16x64 stages=8 warps=4 pipeline epilogue=global splits={splits} split_reduce=workspace");
            let counted = reduction(&workspace, &with) - reduction(&workspace, &without);
            assert!((counted - with.workspace_count_s).abs() < 1e-12, "{splits} splits: {counted} s");
        }
        for other in ["128x16x64 stages=8 warps=4 pipeline epilogue=global splits=2", "128x16x64 stages=8 warps=4 pipeline epilogue=global splits=2 split_reduce=spread"] {
            assert_eq!(reduction(other, &with), reduction(other, &without), "{other}");
        }
    }

    /// The swapped GEMM's promotion (block scales along the rows) reads
    /// and multiplies a column scale beside each pair of FMAs: the same
    /// tile costs it more MMA-side time than the GEMM's own promotion, by
    /// at most the promotion once more.
    #[test]
    fn the_swapped_promotion_costs_more_than_the_gemms_own() {
        let (machine, cal) = (Machine::of(&Target::H200), crate::cost_model::calibration::H200);
        let fp8 = Problem { precision: Precision::Fp8BlockScaled, b_scale_rows: Some(3), ..bf16(8, 4096, 7168) };
        let swapped = fp8.swapped();
        let config: Config = "128x16x128 stages=8 warps=12 ws2 epilogue=global splits=3 split_reduce=workspace".parse().expect("a config");
        let own = predict(&swapped, &machine, &h200(), &cal, &figures(&swapped, &machine, config));
        let plain = Problem { row_block_scales: None, ..swapped };
        let without = predict(&plain, &machine, &h200(), &cal, &figures(&plain, &machine, config));
        assert!(own.mma > without.mma, "{} s against {} s", own.mma, without.mma);
        assert_eq!(promotion_work(&swapped, &config), 2.0, "one row block a consumer: a product and a read per element pair");
        let tall: Config = "256x16x128 stages=6 warps=12 ws2 persistent epilogue=global".parse().expect("a config");
        assert_eq!(promotion_work(&swapped, &tall), 1.75, "two row blocks share each column scale's read");
        assert_eq!(promotion_work(&fp8, &config), 1.0);
    }

    /// A block-scaled warpgroup waits for each m64 row block it holds: a
    /// longer wait costs the one-warpgroup 128-row pipeline (two blocks)
    /// twice what it costs the same tile over two consumers (one each), at
    /// the same K blocks a CTA; BF16 waits for no promotion.
    #[test]
    fn each_row_block_a_warpgroup_holds_waits() {
        let machine = Machine::of(&Target::H200);
        let cal = crate::cost_model::calibration::H200;
        let longer = Calibration { promotion_wait_s: cal.promotion_wait_s + 1e-6, ..cal };
        let fp8 = Problem { precision: Precision::Fp8BlockScaled, b_scale_rows: Some(3), ..bf16(4, 5120, 6912) }.swapped();
        let mma_growth = |problem: &Problem, config: &str| {
            let config: Config = config.parse().expect("a config");
            let at = |cal: &Calibration| predict(problem, &machine, &h200(), cal, &figures(problem, &machine, config)).mma;
            at(&longer) - at(&cal)
        };
        let one_warpgroup = mma_growth(&fp8, "128x16x128 stages=8 warps=4 pipeline epilogue=global splits=2");
        let two_consumers = mma_growth(&fp8, "128x16x128 stages=8 warps=12 ws2 epilogue=global splits=2 split_reduce=workspace");
        assert!(two_consumers > 0.0);
        assert!((one_warpgroup / two_consumers - 2.0).abs() < 1e-6, "{one_warpgroup} s against {two_consumers} s");
        assert_eq!(mma_growth(&bf16(4, 5120, 6912).swapped(), "128x16x64 stages=8 warps=4 pipeline epilogue=global splits=2"), 0.0);
        let rows = |config: &str| config.parse::<Config>().expect("a config").row_blocks_per_warpgroup();
        assert_eq!((rows("64x16x128 stages=8 warps=4 pipeline"), rows("128x16x128 stages=8 warps=4 pipeline")), (1, 2));
        assert_eq!((rows("128x176x128 stages=4 warps=12 ws2 persistent"), rows("256x128x128 stages=3 warps=12 ws2 persistent")), (1, 2));
        assert_eq!(rows("128x128x64 stages=4 warps=8 pipeline"), 1, "two warpgroups of one plain pipeline");
    }

    /// Added in shares, a tile's splits each read a share of every slot
    /// and the last reads the summed tile: where eight splits of a 128x128
    /// tile leave the last CTA eight slots to read, the shares cost less;
    /// where four splits of a 64x96 tile leave it little to read, the wait
    /// and the second count cost more than they save.
    #[test]
    fn shares_pay_where_the_last_split_reads_many_slots() {
        let (machine, cal) = (Machine::of(&Target::H200), crate::cost_model::calibration::H200);
        let reduction = |p: &Problem, config: &str, reduce: &str| {
            let config: Config = format!("{config} split_reduce={reduce}").parse().expect("a config");
            predict(p, &machine, &h200(), &cal, &figures(p, &machine, config)).reduction
        };
        let deep = bf16(512, 512, 65536);
        let deep_tile = "128x128x64 stages=6 warps=8 ws1 epilogue=tma splits=8";
        assert!(reduction(&deep, deep_tile, "spread") < reduction(&deep, deep_tile, "workspace"));
        let narrow = bf16(4, 3072, 32576);
        let narrow_tile = "64x96x64 stages=8 warps=8 ws1 epilogue=tma splits=4";
        assert!(reduction(&narrow, narrow_tile, "spread") > reduction(&narrow, narrow_tile, "workspace"));
    }

    /// Splits that store their own shares of the output (spread, direct
    /// stores, a plain GEMM) read no summed tile back and each store a
    /// split's share: less reduction and fewer stores than the same split
    /// added in shares and stored whole, by its direct stores or its TMA
    /// store; after an epilogue they are charged as stored whole.
    #[test]
    fn splits_storing_their_shares_pay_less_than_one_storing_the_tile() {
        let (machine, cal) = (Machine::of(&Target::H200), crate::cost_model::calibration::H200);
        let at = |p: &Problem, config: &str| {
            let config: Config = config.parse().expect("a config");
            predict(p, &machine, &h200(), &cal, &figures(p, &machine, config))
        };
        let deep = bf16(512, 512, 65536);
        let direct = "128x256x64 stages=4 warps=12 ws2 epilogue=global splits=16 split_reduce=spread";
        let tma = "128x256x64 stages=4 warps=12 ws2 epilogue=tma epilogue_cols=128 splits=16 split_reduce=spread";
        let (shares, whole) = (at(&deep, direct), at(&deep, tma));
        assert!(shares.reduction < whole.reduction && shares.overhead < whole.overhead, "{shares:?} against {whole:?}");
        let gelu = Problem { epilogue: EpilogueWork { lane_ops: 10, sfu_ops: 1, ..Default::default() }, ..deep };
        let after_gelu = at(&gelu, direct);
        assert!(after_gelu.reduction > shares.reduction && after_gelu.overhead > shares.overhead, "{after_gelu:?}");
    }

    #[test]
    fn the_policies_pick_stays_first_unless_beaten_by_more_than_the_margin() {
        let p = bf16(4096, 4096, 4096);
        let ranked = rank(&p, &Machine::H100, &Pins::default());
        let weighed = |seconds: &[f64]| -> Vec<Weighed> {
            ranked.iter().take(seconds.len()).zip(seconds).map(|(c, &s)| Weighed { candidate: c.clone(), prediction: Prediction { seconds: s, ..predict(&p, &Machine::H100, &h200(), &Calibration::PRIOR, c) } }).collect()
        };
        let incumbent = ranked[0].config;
        // 4% slower than the fastest: kept.
        let kept = order(weighed(&[1.04, 1.0, 1.2]));
        assert_eq!(kept[0].candidate.config, incumbent);
        assert_eq!(kept[1].candidate.config, ranked[1].config);
        assert!(kept[0].candidate.reason.contains("the policies' pick"), "{}", kept[0].candidate.reason);
        // 10% slower: the fastest is picked and the policies' pick ranks by its time.
        let beaten = order(weighed(&[1.10, 1.0, 1.2]));
        assert_eq!(beaten[0].candidate.config, ranked[1].config);
        assert_eq!(beaten[1].candidate.config, incumbent);
        assert!(beaten[0].candidate.reason.contains("9.1% under the policies' pick"), "{}", beaten[0].candidate.reason);
    }

    #[test]
    fn no_candidate_beats_the_roofline() {
        for (m, n, k) in [(4096, 4096, 4096), (1, 4096, 4096), (512, 512, 65536), (64, 2112, 7168), (3000, 5000, 2000)] {
            let p = bf16(m, n, k);
            let flops = 2.0 * (m * n * k) as f64;
            let bytes = ((m * k + n * k) * 2 + m * n * 2) as f64;
            let floor = (flops / h200().bf16_flops).max(bytes / h200().hbm_bytes_per_s);
            for (c, pred) in predictions(&p) {
                assert!(pred.seconds >= floor, "{m}x{n}x{k} {}: {} under the roofline {floor}", c.config, pred.seconds);
            }
        }
    }

    #[test]
    fn small_m_is_bound_by_memory_and_large_squares_by_the_tensor_cores() {
        let best = |p: Problem| predictions(&p).into_iter().map(|(_, pred)| pred).min_by(|a, b| a.seconds.total_cmp(&b.seconds)).unwrap();
        assert!(matches!(best(bf16(1, 8192, 8192)).bound, Bound::Hbm | Bound::Latency), "{:?}", best(bf16(1, 8192, 8192)));
        assert_eq!(best(bf16(8192, 8192, 8192)).bound, Bound::Mma);
    }

    #[test]
    fn more_work_never_takes_less_time() {
        // A shape one K block, one tile row or one tile column larger: the
        // same candidate is predicted no faster, and slower by no more than
        // the work it adds, counted in the turns each launched CTA takes
        // (a tile row that opens a new turn costs that turn) and K blocks.
        // A turn after the first of a grid that reads in step reads
        // unmerged, so the work is counted at the unmerged rate: the same
        // candidate predicted with no reads merged.
        let unmerged = Calibration { l2_merged_share: 0.0, fp8_l2_merged_share: 0.0, ..Calibration::PRIOR };
        for (m, n, k) in [(4096, 4096, 4096), (128, 4096, 7104), (512, 512, 65536), (1000, 3000, 2000), (64, 2112, 7168)] {
            let p = bf16(m, n, k);
            for (c, before) in predictions(&p).into_iter().take(8) {
                let k_blocks = |k: i64| ceil_div(k, c.config.block_k) as f64;
                let before_unmerged = predict(&p, &Machine::H100, &h200(), &unmerged, &c);
                for grown in [bf16(m, n, k + c.config.block_k), bf16(m + c.config.block_m, n, k), bf16(m, n + c.config.block_n, k)] {
                    let same = figures(&grown, &Machine::H100, c.config);
                    let after = predict(&grown, &Machine::H100, &h200(), &Calibration::PRIOR, &same);
                    assert!(after.seconds >= before.seconds * 0.999, "{} at {m}x{n}x{k} grown: {after} < {before}", c.config);
                    let turns = |c: &Candidate| ceil_div(c.tiles * c.config.splits, c.sms) as f64;
                    let work = (turns(&same) / turns(&c)).max(same.tiles as f64 / c.tiles as f64) * k_blocks(grown.k) / k_blocks(k);
                    assert!(after.seconds <= before_unmerged.seconds * work * 1.01, "{} at {m}x{n}x{k} grown to {}x{}x{}: {after} over {before_unmerged} x {work:.3}", c.config, grown.m, grown.n, grown.k);
                }
            }
        }
    }
}
