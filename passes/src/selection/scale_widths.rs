//! Block-scaled widths: the block N a block-scaled dot takes where its
//! tiles of B need not start one of B's scale blocks.

use super::candidate::{Candidate, Pins, SplitReduce};
use super::forms::tile_candidate;
use super::problem::{ceil_div, Machine, Problem};
use super::tiles::{every_block_n, promotes_by_row_blocks};
use super::waves::{compare, wave_work};
use tilec_dialects::tile::dot::{blocks_from_grid_offsets, SCALE_BLOCK_N};

/// The block N of a block-scaled dot whose tiles of B need not start a
/// scale block (the program gives it the offset into the first): one scale
/// block (128), unless over more than [`CROSS_SCALE_BLOCK_MIN_WAVES`] waves
/// the best tile of any width [`spans_few_scale_blocks`] allows takes at
/// least [`CROSS_SCALE_BLOCK_GAIN_PERCENT`]% less [`promotion_work`] than
/// the best 128 wide, or the best 128 wide runs in one wave and more tiles
/// half a scale block wide would too (or no 128-wide tile fits the pins).
/// A width that crosses scale blocks has its K loop lowered once per
/// offset into a scale block, which only a clear gain pays for: a wider
/// tile gains where it covers N in fewer tiles and loses where the
/// narrower tiles fill more SMs. Half a scale block (64 columns, never
/// across two blocks) lets more CTAs stream B at once, where it keeps the
/// one wave.
pub(super) fn block_n_across_scale_blocks(problem: &Problem, machine: &Machine, pins: &Pins, block_ms: &[i64], bk: i64) -> i64 {
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
        (Some(aligned), Some(any)) if aligned.waves > CROSS_SCALE_BLOCK_MIN_WAVES && 100 * promotion_work(&any) < (100 - CROSS_SCALE_BLOCK_GAIN_PERCENT) * promotion_work(&aligned) => any.config.block_n,
        (Some(aligned), _) if aligned.waves == 1 && best_of(&[half_block]).is_some_and(|half| half.waves == 1 && half.tiles > aligned.tiles) => half_block,
        (None, Some(any)) => any.config.block_n,
        _ => SCALE_BLOCK_N,
    }
}

/// The waves of one-scale-block tiles past which a block-scaled dot weighs
/// widths that cross scale blocks ([`block_n_across_scale_blocks`]).
const CROSS_SCALE_BLOCK_MIN_WAVES: i64 = 2;

/// The least saving, in percent of [`promotion_work`], for which a width
/// that crosses scale blocks replaces one scale block
/// ([`block_n_across_scale_blocks`]).
const CROSS_SCALE_BLOCK_GAIN_PERCENT: i64 = 1;

/// The narrowest block-scaled tile [`promotion_work`] counts at
/// less than its area.
const WIDE_TILE_MIN_N: i64 = 176;

/// The share of its area a wide block-scaled tile counts at in
/// [`promotion_work`], in percent.
const WIDE_TILE_WORK_PERCENT: i64 = 92;

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
/// (measured: docs/evidence.md, selection/scale_widths.rs, promotion_work).
fn promotion_work(c: &Candidate) -> i64 {
    let wide = c.config.block_n >= WIDE_TILE_MIN_N && !promotes_by_row_blocks(&c.config);
    wave_work(c) * if wide { WIDE_TILE_WORK_PERCENT } else { 100 }
}

/// The fewest K blocks over which a block-scaled width whose tiles
/// span three of B's scale blocks (block N 176) is a candidate.
const THREE_BLOCK_SPAN_MIN_K_BLOCKS: i64 = 32;

/// Whether block N `block_n` is a block-scaled candidate over `k_blocks`
/// K blocks: its tiles span at most two of B's scale blocks, or the K loop
/// is long enough ([`THREE_BLOCK_SPAN_MIN_K_BLOCKS`]) for a tile spanning
/// three (176: eight K-loop copies, one per offset into a scale block) to
/// pay: over a shorter K the copies cost more than the narrower tile's
/// fuller last wave saves
/// (measured: docs/evidence.md, selection/scale_widths.rs, spans_few_scale_blocks).
pub(super) fn spans_few_scale_blocks(block_n: i64, k_blocks: i64) -> bool {
    blocks_from_grid_offsets(block_n) <= 2 || k_blocks >= THREE_BLOCK_SPAN_MIN_K_BLOCKS
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selection::rank::choose;
    use crate::selection::testing::fp8;

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
}
