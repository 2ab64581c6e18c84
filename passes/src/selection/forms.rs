//! How a candidate is built: a tile shape in the plain pipeline, or a
//! candidate's tile under another schedule and epilogue, each with the
//! stages, scales and waves that fit.

use crate::cluster::{Along, DEFAULT_CLUSTER_CTAS};
use super::candidate::{Candidate, Config, Epilogue, Pins, Scales, Schedule, SplitReduce};
use super::epilogue::epilogue_for;
use super::problem::{ceil_div, Machine, Problem};
use super::scales::stages_and_scales;
use super::smem::{buffers_filled, SmemLayout, split_k_blocks};
use super::tiles::weighs_row_blocks;
use super::waves::with_waves;

/// One tile shape with the plain pipeline, its accumulators spread over
/// the fewest warpgroups whose registers hold them
/// ([`AccumulatorRegisters`](super::AccumulatorRegisters)), with the stages
/// and scales that fit ([`stages_and_scales`]) and its waves
/// ([`with_waves`]), each tile's K loop shared by `splits` CTAs (split-K; 1
/// without) that add their partial tiles as `reduce` says;
/// `None` when its accumulators fit no warpgroups or no stage fits.
pub(super) fn tile_candidate(problem: &Problem, machine: &Machine, pins: &Pins, (bm, bn, bk): (i64, i64, i64), splits: i64, reduce: SplitReduce) -> Option<Candidate> {
    let registers = |warpgroups| problem.precision.accumulator_registers(bm, bn, warpgroups);
    let warpgroups = if registers(1).fit_alone() { 1 } else { 2 };
    // Two warpgroups split a tile by rows (MMA layouts hold whole
    // warpgroups along M), whole m64 blocks each.
    if !registers(warpgroups).fit_shared() || !weighs_row_blocks(pins, registers(warpgroups)) || bm % (64 * warpgroups) != 0 {
        return None;
    }
    let tiles = ceil_div(problem.m, bm) * ceil_div(problem.n, bn);
    let schedule = Schedule::Pipeline;
    let epilogue = epilogue_for(problem, bn, schedule);
    // Only a cluster's splits add their partial tiles in shared memory;
    // a workspace split fills no more stages than its share of K blocks.
    let (layout_splits, filled) = match reduce {
        SplitReduce::Cluster => (splits, buffers_filled(problem, machine, schedule, bk, tiles, splits)),
        SplitReduce::Workspace | SplitReduce::Spread => (1, split_k_blocks(problem, bk, splits)),
    };
    let layout = SmemLayout { tile: (bm, bn, bk), epilogue, scales: Scales::None, schedule, splits: layout_splits };
    let (stages, scales) = stages_and_scales(problem, machine, pins, layout, filled)?;
    let smem = layout.with_scales(scales).smem_bytes(problem, stages);
    let num_warps = 4 * warpgroups;
    let config = Config { swap_operands: false, block_m: bm, block_n: bn, block_k: bk, stages, num_warps, schedule, epilogue, scales, cluster: Along::None, cluster_ctas: DEFAULT_CLUSTER_CTAS, splits, split_reduce: reduce, raster_group: 0, stream_k: None, deferred_epilogue: false, l2_prefetch: 0 };
    Some(with_waves(problem, machine, Candidate { config, tiles, waves: 0, last_wave: 0, sms: 0, smem_bytes: smem, reason: String::new() }))
}

/// `from`'s tile under another schedule, warp count and epilogue, with the
/// stages and scales ([`stages_and_scales`]) and the shared memory worked out for
/// them; `None` when not one stage fits.
pub(super) fn rescheduled(problem: &Problem, machine: &Machine, pins: &Pins, from: &Candidate, schedule: Schedule, num_warps: i64, epilogue: Epilogue) -> Option<Candidate> {
    let c = from.config;
    let tile = (c.block_m, c.block_n, c.block_k);
    let layout = SmemLayout { tile, epilogue, scales: Scales::None, schedule, splits: c.smem_layout().splits };
    let filled = match c.split_reduce {
        SplitReduce::Workspace | SplitReduce::Spread => split_k_blocks(problem, c.block_k, c.splits),
        SplitReduce::Cluster => buffers_filled(problem, machine, schedule, c.block_k, from.tiles, c.splits),
    };
    let (stages, scales) = stages_and_scales(problem, machine, pins, layout, filled)?;
    let config = Config { stages, num_warps, schedule, epilogue, scales, ..c };
    let rescheduled = Candidate { config, smem_bytes: layout.with_scales(scales).smem_bytes(problem, stages), reason: String::new(), ..from.clone() };
    Some(with_waves(problem, machine, rescheduled))
}

#[cfg(test)]
mod tests {
    use crate::selection::testing::pick;

    #[test]
    fn accumulators_beyond_one_warpgroup_take_eight_warps() {
        assert_eq!(pick(128, 32768, 512).config.num_warps, 8); // 128x256
        assert_eq!(pick(64, 7168, 2048).config.num_warps, 4); // 64x64
    }
}
