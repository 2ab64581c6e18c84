//! Shared memory: what a configuration lays out there, and how many stages
//! fit it.

use super::candidate::{Config, Epilogue, Pins, Scales, Schedule, SplitReduce};
use super::problem::{ceil_div, Machine, Problem};
use tilec_dialects::ir::{ElemType, TileType};
use tilec_dialects::nv::memory::flat_box_rows_of;
use tilec_dialects::tile::dot::{blocks_covering, SCALE_BLOCK_N};

/// The most stages considered (`SmemLayout::most_stages`), except by
/// deep pairs (`deep_paired_rows`): more measured no consistent gain at the
/// picks they would change.
pub const MAX_STAGES: i64 = 8;

/// The most stages the passes build, and
/// `deep_paired_rows` considers.
pub const STAGES_LIMIT: i64 = 16;

/// Bytes of one mbarrier.
const MBARRIER_BYTES: i64 = 8;

/// The lowering places a buffer that TMA or wgmma reads on a 1024-byte
/// boundary (where a 128-byte swizzle pattern repeats).
const BUFFER_ALIGN: i64 = 1024;

/// Bits of an element of C (BF16).
pub(super) const OUTPUT_ELEM_BITS: u32 = 16;

/// What a configuration lays out in shared memory besides its stage count.
#[derive(Clone, Copy, Debug)]
pub struct SmemLayout {
    /// BLOCK_M, BLOCK_N and BLOCK_K.
    pub tile: (i64, i64, i64),
    /// The output tile's buffer, if any.
    pub epilogue: Epilogue,
    /// Where block-scaled FP8's scales wait.
    pub scales: Scales,
    /// The barriers a stage takes, and the output tiles.
    pub schedule: Schedule,
    /// The CTAs that share a tile's K loop, and so its f32 partial.
    pub splits: i64,
}

impl SmemLayout {
    /// Shared memory with `stages` stages, laid out as the lowering lays it
    /// out: the staged operand tiles (and staged scales: A's per row and B's
    /// per 128 columns, 4 bytes each, in small buffers packed after them, or
    /// the resident scales' buffers there),
    /// split-K's f32 partial tile and the TMA epilogue's output tile (one per
    /// consumer when ping-pong consumers each hold a whole tile), each on the
    /// next 1024-byte boundary, then the mbarriers: a full barrier per stage,
    /// an empty one too when a producer warpgroup feeds consumers, and the
    /// ping-pong consumers' turns.
    pub fn smem_bytes(&self, problem: &Problem, stages: i64) -> i64 {
        let SmemLayout { tile: (block_m, block_n, block_k), epilogue, scales, schedule, splits } = *self;
        // A tile that starts a scale block reads only the blocks it covers
        // (tile-canonicalize narrows the program's window to them).
        // The swapped GEMM's block scales run along the tile's rows, its
        // per-row scales (A's, a column of SA) along the columns.
        let (block_rows, block_tile, line_rows) = match problem.row_block_scales {
            Some(rows) => (block_m, Some(rows), block_n),
            None => (block_n, problem.b_scale_rows, block_m),
        };
        let block_scale_rows = match block_tile {
            Some(rows) if block_rows % SCALE_BLOCK_N != 0 => rows,
            _ => blocks_covering(block_rows),
        };
        let line_scales = TileType { shape: vec![line_rows, 1], elem: ElemType::F32, layout: None };
        let line_box_rows = flat_box_rows_of(&line_scales, problem.a_scales_by_run);
        let line_scale_rows = line_box_rows.unwrap_or(line_rows);
        // Resident scales: those threads copy (all but a line of A's scales
        // that one flat TMA box loads with its stage) held for a chunk of K
        // steps, counted at the longest chunk, and one barrier for them.
        let line_by_tma = line_box_rows.is_some();
        let (scale_bytes, resident_bytes, resident_barriers) = match scales {
            Scales::Staged => (4 * (line_scale_rows + block_scale_rows), 0, 0),
            Scales::Resident if line_by_tma => (4 * line_scale_rows, 4 * block_scale_rows * Scales::MAX_RESIDENT_CHUNK, 1),
            Scales::Resident => (0, 4 * (line_scale_rows + block_scale_rows) * Scales::MAX_RESIDENT_CHUNK, 1),
            Scales::None | Scales::Prefetched => (0, 0, 0),
        };
        let staged = stages * ((block_m + block_n) * block_k * problem.precision.operand_bytes() + scale_bytes) + resident_bytes;
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
        ceil_div(buffers, MBARRIER_BYTES) * MBARRIER_BYTES + (barriers + resident_barriers) * MBARRIER_BYTES
    }

    /// Stages: the most that fit the shared-memory budget, at most
    /// [`MAX_STAGES`] and at most `filled`, the buffers a producer ever
    /// fills at once ([`buffers_filled`]: more buffers than K blocks never
    /// fill); the pinned count, if it fits; `None` when not even one does.
    pub(super) fn most_stages(&self, problem: &Problem, machine: &Machine, pins: &Pins, filled: i64) -> Option<i64> {
        match pins.stages {
            Some(s) => Some(s).filter(|&s| self.smem_bytes(problem, s) <= machine.smem_bytes),
            None => self.stages_that_fit(problem, machine, MAX_STAGES, filled),
        }
    }

    /// The most stages, at most `most` and at most the `filled` buffers a
    /// producer ever fills at once ([`buffers_filled`]), whose shared
    /// memory fits.
    pub(super) fn stages_that_fit(&self, problem: &Problem, machine: &Machine, most: i64, filled: i64) -> Option<i64> {
        (1..=filled.clamp(1, most)).rev().find(|&s| self.smem_bytes(problem, s) <= machine.smem_bytes)
    }

    /// The same layout with the scales waiting in `scales`.
    pub(super) fn with_scales(self, scales: Scales) -> SmemLayout {
        SmemLayout { scales, ..self }
    }
}

impl Config {
    /// What the configuration lays out in shared memory besides its stages.
    pub fn smem_layout(&self) -> SmemLayout {
        let splits = match self.split_reduce {
            SplitReduce::Cluster => self.splits,
            SplitReduce::Workspace | SplitReduce::Spread => 1,
        };
        SmemLayout { tile: (self.block_m, self.block_n, self.block_k), epilogue: self.epilogue, scales: self.scales, schedule: self.schedule, splits }
    }
}

/// The stages' cap: the stage buffers a producer ever fills at once. In the
/// plain pipeline, and in a persistent kernel whose CTAs take at most
/// [`RUN_AHEAD_MIN_WAVES`] waves of tiles or whose tiles take one K block,
/// a tile's K blocks; otherwise the persistent producer runs on into the
/// next tile's K blocks and fills any number. Running ahead pays over many
/// waves of tiles of a few K blocks; over few waves, or with one K block a
/// tile, the extra stages only cost
/// (measured: docs/evidence.md, selection/smem.rs, buffers_filled).
pub(super) fn buffers_filled(problem: &Problem, machine: &Machine, schedule: Schedule, block_k: i64, tiles: i64, splits: i64) -> i64 {
    let k_blocks = ceil_div(problem.k, block_k);
    let runs_ahead = schedule != Schedule::Pipeline && k_blocks > 1 && tiles * splits > RUN_AHEAD_MIN_WAVES * machine.sms;
    if runs_ahead {
        STAGES_LIMIT
    } else {
        k_blocks
    }
}

/// The waves of tiles a persistent kernel's CTAs take past which
/// its producer's stages run ahead into the next tile.
const RUN_AHEAD_MIN_WAVES: i64 = 2;

/// The K blocks each CTA of a K loop split `splits` ways through the
/// workspace runs at most: no more stages fill.
pub(super) fn split_k_blocks(problem: &Problem, block_k: i64, splits: i64) -> i64 {
    ceil_div(ceil_div(problem.k, block_k), splits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selection::testing::{bf16, fp8};

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
    fn a_producer_fills_past_a_tiles_k_blocks_only_over_many_waves() {
        let machine = Machine::H100;
        let ws = Schedule::WarpSpecialized { consumers: 2 };
        let p = bf16(4096, 4096, 512); // 8 K blocks of 64
        let many = RUN_AHEAD_MIN_WAVES * machine.sms + 1;
        assert_eq!(buffers_filled(&p, &machine, ws, 64, many, 1), STAGES_LIMIT);
        // The plain pipeline, few waves, or one K block: a tile's K blocks.
        assert_eq!(buffers_filled(&p, &machine, Schedule::Pipeline, 64, many, 1), 8);
        assert_eq!(buffers_filled(&p, &machine, ws, 64, many - 1, 1), 8);
        assert_eq!(buffers_filled(&bf16(4096, 4096, 64), &machine, ws, 64, many, 1), 1);
        // Stages never outnumber what fills: 8 K blocks, at most 8 stages.
        let layout = SmemLayout { tile: (64, 64, 64), epilogue: Epilogue::Global, scales: Scales::None, schedule: Schedule::Pipeline, splits: 1 };
        assert_eq!(layout.most_stages(&bf16(64, 64, 192), &machine, &Pins::default(), 3), Some(3));
        assert_eq!(layout.most_stages(&p, &machine, &Pins::default(), STAGES_LIMIT), Some(MAX_STAGES));
    }
}
