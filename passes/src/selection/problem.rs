//! Problem shapes and the machine config selection chooses for: the operands'
//! precision, the accumulators a thread holds, and what a kernel may use of
//! the GPU.

use super::candidate::Config;
use crate::cluster::Along;
use tilec_target::Target;

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

/// FP32 accumulator registers a thread holds, which bound the tile shapes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccumulatorRegisters {
    /// Its share of the running result.
    pub running: i64,
    /// With block-scaled FP8's partial product of one row block.
    pub total: i64,
}

/// The most accumulator registers a thread of a warpgroup that shares a
/// tile holds, the running result and a partial together, of a consumer's
/// 232 ([`AccumulatorRegisters::fit_shared`]).
const SHARED_TILE_ACCUMULATORS: i64 = 192;

impl AccumulatorRegisters {
    /// Within what a thread of a warpgroup that shares a tile may hold: a
    /// running result of at most 128 registers (the widest measured tiles,
    /// 128x256 and 256x128 over two warpgroups) and, with the partial, at
    /// most 192 of a consumer's 232; the rest go to addresses, loop state
    /// and scales. A warpgroup holding two m64 row blocks promotes them one
    /// at a time into one set of partial registers, so 256x128 over two
    /// (128 running, 64 partial) fits as 128x192 (96 and 96) does
    /// (measured: docs/evidence.md, selection/problem.rs, AccumulatorRegisters::fit_shared).
    pub fn fit_shared(self) -> bool {
        self.running <= 128 && self.total <= SHARED_TILE_ACCUMULATORS
    }

    /// Light enough for a warpgroup alone: at most 128 in all. A tile one
    /// warpgroup would hold with more goes to two, which overlap one's
    /// promotion with the other's wgmma.
    pub fn fit_alone(self) -> bool {
        self.total <= 128
    }

    /// The partial product's registers: one m64 row block's (none in BF16).
    pub fn partial(self) -> i64 {
        self.total - self.running
    }

    /// Whether the running result and two row blocks' partials, each in
    /// registers of its own, fit what a warpgroup sharing a tile holds.
    pub fn fit_two_partials(self) -> bool {
        self.running + 2 * self.partial() <= SHARED_TILE_ACCUMULATORS
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
    /// The kernel must serve any N, not just this one: the epilogue
    /// (`epilogue_for`) cannot count on
    /// aligned rows of C.
    pub any_n: bool,
    /// Neighbouring tiles read the same operand tiles (one GEMM, not a
    /// batch or a grouped GEMM whose operands are chosen by data), so
    /// `cluster_for` may pair them into
    /// clusters.
    pub clusterable: bool,
    /// The rows are groups concatenated by data: each row block's operand
    /// is chosen by an index the kernel reads (a contiguous grouped GEMM's
    /// experts). Every tile runs the same K loop, but the rows, and with
    /// them the tiles and their last wave, change from call to call.
    pub routed_rows: bool,
    /// The K loop's trip count is read from data (a masked grouped GEMM's
    /// row counts), so tiles differ in work: over many waves
    /// `prefers_warp_specialized`
    /// keeps the pipeline.
    pub varying_k: bool,
    /// Rows of the tile of B's block scales a block-scaled dot reads when
    /// its tiles need not start a scale block (the dot takes the offset
    /// into the first, and block N is not a multiple of 128); `None` when
    /// they do, one per 128 of the tile's rows.
    pub b_scale_rows: Option<i64>,
    /// The dot reads A from registers, which a consumer holds beside its
    /// accumulators: no ping-pong consumers (`ping_pong`), each of which would
    /// hold a whole tile's.
    pub a_in_registers: bool,
    /// B is given N x K (`transpose_b`): a tile's columns are rows of B's
    /// stage, which consumers can share by rows
    /// ([`Schedule::ColumnHalves`](super::Schedule::ColumnHalves)).
    pub transpose_b: bool,
    /// A's row scales are a column of a column-major tensor (stored
    /// M-major): staged, each stage's is one flat TMA box, which holds
    /// [`flat_box_rows_of`](tilec_dialects::nv::memory::flat_box_rows_of) rows where it can.
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
    /// C is stored column-major (the GEMM computes C^T into C's memory, as
    /// an operand-swapped one does): each thread stores its values, since a
    /// TMA store writes rows of the output tile.
    pub output_column_major: bool,
    /// The block scales run along the tile's rows, the per-row scales along
    /// its columns (the swapped block-scaled GEMM: B's 128 x 128 block
    /// scales, A's row scales): the rows of the block scales' tile, `None`
    /// for any other GEMM.
    pub row_block_scales: Option<i64>,
}

impl Problem {
    /// Whether CTAs may pair into clusters along M or N, multicasting the
    /// operand tile they share: tiles that share operands, and an output
    /// the grid walks by its rows (a column-major output's tile grid walks
    /// C's memory rows along x, across the pairs).
    pub fn pairs_tiles(&self) -> bool {
        self.clusterable && !self.output_column_major
    }

    /// Whether stream-K may share tiles by K iterations: every tile runs
    /// the same K loop of one output (one GEMM, or a contiguous grouped
    /// GEMM's row blocks; not a batch, nor a masked grouped GEMM whose
    /// trip count is data), and the shape is given.
    pub fn one_k_range(&self) -> bool {
        (self.clusterable || self.routed_rows) && !self.varying_k && !self.any_n
    }

    /// The GEMM that computes C^T = B A^T into C stored column-major
    /// (`tile-swap-operands`): M and N exchanged, and a block-scaled dot's
    /// block scales along the tile's rows.
    pub fn swapped(&self) -> Problem {
        Problem { m: self.n, n: self.m, output_column_major: true, b_scale_rows: None, row_block_scales: self.b_scale_rows, ..*self }
    }

    /// K blocks of the precision's block K (the tile's, when not pinned).
    pub(super) fn k_blocks(&self) -> i64 {
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
    /// Bytes of an L2 sector.
    pub l2_sector_bytes: i64,
    /// 32-bit registers of one SM.
    pub sm_registers: i64,
    /// The most registers a thread may hold.
    pub max_thread_registers: i64,
    /// Clusters of 2, 4 and 8 CTAs that run at once, one CTA an SM, as
    /// `(CTAs, clusters)` ([`Target::active_clusters`]).
    pub active_clusters: [(u32, u32); 3],
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
            l2_sector_bytes: target.l2_sector_bytes as i64,
            sm_registers: target.registers_per_sm as i64,
            max_thread_registers: target.max_registers_per_thread as i64,
            active_clusters: target.active_clusters,
        }
    }

    /// The SMs `config`'s CTAs run on at once, one an SM: every SM without
    /// a cluster, the SMs whole clusters of its size fill with one (a
    /// cluster's CTAs share a GPC, which may leave SMs idle).
    pub fn sms_for(&self, config: &Config) -> i64 {
        if config.cluster == Along::None {
            return self.sms;
        }
        let ctas = config.cluster_ctas;
        let held = self.active_clusters.iter().find(|&&(c, _)| i64::from(c) == ctas).map(|&(c, clusters)| i64::from(c * clusters));
        held.map_or(self.sms / ctas * ctas, |sms| sms.min(self.sms))
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
    /// so that two CTAs share each SM (the pairs of
    /// `one_wave_of_pairs` and
    /// `paired_split_k`): the stages then
    /// fill that half.
    pub fn paired(&self) -> Machine {
        Machine { smem_bytes: self.sm_smem_bytes / 2 - CTA_RESERVED_SMEM_BYTES, ..*self }
    }
}

/// Registers a thread holds besides its accumulators (the estimate
/// [`Machine::ctas_per_sm_by_registers`] counts co-resident CTAs by).
const THREAD_REGISTERS_BESIDES_ACCUMULATORS: i64 = 40;

/// Shared memory an SM sets aside for each resident CTA on sm_90.
const CTA_RESERVED_SMEM_BYTES: i64 = 1024;

/// ceil(a / b) for positive b (shared with the cost model).
pub(crate) fn ceil_div(a: i64, b: i64) -> i64 {
    (a + b - 1) / b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accumulator_registers_count_fp8s_partial_as_one_row_block() {
        let fp8 = Precision::Fp8BlockScaled;
        // 256x128 over two warpgroups: 128 running, 64 more for the row
        // block being promoted: 192, which fits; 256x144 runs 144.
        assert_eq!(fp8.accumulator_registers(256, 128, 2), AccumulatorRegisters { running: 128, total: 192 });
        assert!(fp8.accumulator_registers(256, 128, 2).fit_shared());
        assert!(fp8.accumulator_registers(256, 112, 2).fit_shared());
        assert!(!fp8.accumulator_registers(256, 144, 2).fit_shared());
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
}
