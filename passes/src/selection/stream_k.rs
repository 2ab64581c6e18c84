//! Stream-K: a thin last wave's tiles shared between every SM by K iterations.

use crate::cluster::Along;
use super::candidate::{Candidate, PieceOrder, Schedule};
use super::problem::{ceil_div, Machine, Precision, Problem};

/// Stream-K (`tile-stream-k`, pieces in order) for a BF16 pick
/// that two consumers share, persistent and unclustered, over at least
/// [`STREAM_K_MIN_K_BLOCKS`] K blocks, where every tile runs the same K
/// loop (`Problem::one_k_range`). For one GEMM, over a full wave or more
/// whose last wave keeps at most [`STREAM_K_LAST_WAVE_PERCENT`]% of the
/// SMs busy: the hand-over of each CTA's pieces costs about what a fuller
/// last wave or a short K saves, so only a thin last wave over a long K
/// gains (measured: docs/evidence.md, selection/stream_k.rs,
/// stream_k_for). For a contiguous grouped GEMM without an epilogue, at
/// any shape: its rows follow each call's routing, so the last wave of
/// the shape it is compiled for is not the one a call gets, and stream-K
/// evens out whichever that is (measured: docs/evidence.md, the same
/// section).
/// Block-scaled FP8's 128x176
/// consumers spill with the pass's index arithmetic, so it stays BF16.
pub(super) fn stream_k_for(problem: &Problem, machine: &Machine, best: &Candidate) -> Option<PieceOrder> {
    let c = &best.config;
    let shared = c.schedule == (Schedule::WarpSpecialized { consumers: 2 }) && c.cluster == Along::None && c.splits == 1;
    let left = best.tiles % machine.sms;
    let thin_last_wave = best.tiles > machine.sms && left > 0 && 100 * left <= STREAM_K_LAST_WAVE_PERCENT * machine.sms;
    let k_blocks = ceil_div(problem.k, c.block_k);
    let applies = problem.precision == Precision::Bf16
        && shared
        && takes_stream_k(problem)
        && (problem.routed_rows || thin_last_wave)
        && k_blocks >= STREAM_K_MIN_K_BLOCKS;
    applies.then_some(PieceOrder::InOrder)
}

/// Whether stream-K may share the problem's tiles by K iterations: every
/// tile runs the same K loop (`Problem::one_k_range`), and a contiguous
/// grouped GEMM has no epilogue (one with an epilogue, whose deferred
/// stores stream-K gives up, was not measured with it).
pub(super) fn takes_stream_k(problem: &Problem) -> bool {
    problem.one_k_range() && (!problem.routed_rows || problem.epilogue.is_plain())
}

/// The fullest last wave, in percent of the SMs, that stream-K shares.
pub(super) const STREAM_K_LAST_WAVE_PERCENT: i64 = 60;

/// The fewest K blocks over which stream-K pays for its hand-over.
pub(super) const STREAM_K_MIN_K_BLOCKS: i64 = 64;

/// Block N of the 128-row BF16 tiles whose two consumers spill registers
/// under `tile-stream-k`'s index arithmetic, as `ptxas -v` reports it (32
/// and 52 bytes; docs/cost-model.md): a kernel that spills is not a
/// candidate.
pub(super) const STREAM_K_SPILLING_BLOCK_NS: [i64; 2] = [208, 240];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selection::candidate::{Config, Pins};
    use crate::selection::rank::{choose, rank};
    use crate::selection::testing::{bf16, fp8, pick};

    #[test]
    fn a_sparse_last_wave_over_a_long_k_is_shared_by_stream_k() {
        // 8192^3: 2048 tiles of 256x128 over 132 SMs leave 68 (52%) in the
        // last wave, over 128 K blocks: its tiles go by K iterations to
        // every SM, and the same kernel without it ranks next.
        let ranked = rank(&bf16(8192, 8192, 8192), &Machine::H100, &Pins::default());
        let (shared, next) = (&ranked[0], &ranked[1]);
        assert_eq!((shared.config.stream_k, shared.sms, shared.last_wave), (Some(PieceOrder::InOrder), 132, 68));
        assert!(shared.reason.ends_with("pieces in-order (policy `stream_k_for`: a last wave at most 60% full over 64 K blocks or more)"), "{}", shared.reason);
        assert_eq!(next.config, Config { stream_k: None, ..shared.config });
        assert_eq!(next.reason, "the pick without stream-K: its last wave's tiles whole, on fewer SMs (policy `stream_k_for`)");
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
    fn a_contiguous_grouped_gemm_shares_whatever_last_wave_a_call_gets() {
        // Its rows follow each call's routing, so the last wave of the
        // compiled shape says nothing: at 4096^3, whose last wave keeps one
        // GEMM's tiles whole, its pick shares the last wave by K iterations.
        let grouped = |p: Problem| Problem { clusterable: false, routed_rows: true, ..p };
        let shared = |problem: Problem| choose(&problem, &Machine::H100, &Pins::default()).unwrap().config.stream_k;
        assert_eq!(pick(4096, 4096, 4096).config.stream_k, None);
        assert_eq!(shared(grouped(bf16(4096, 4096, 4096))), Some(PieceOrder::InOrder));
        // Not over a short K (32 blocks), nor with an epilogue (measured
        // only without), nor in block-scaled FP8, nor for a masked grouped
        // GEMM, whose K loop's trip count is data.
        let gelu = crate::cost_model::epilogue::EpilogueWork { lane_ops: 6, sfu_ops: 1, ..Default::default() };
        assert_eq!(shared(grouped(bf16(4096, 4096, 2048))), None);
        assert_eq!(shared(Problem { epilogue: gelu, ..grouped(bf16(4096, 4096, 4096)) }), None);
        assert_eq!(shared(grouped(fp8(4096, 4096, 4096))), None);
        assert_eq!(shared(Problem { varying_k: true, ..grouped(bf16(4096, 4096, 4096)) }), None);
    }
}
