//! Stream-K: a thin last wave's tiles shared between every SM by K iterations.

use crate::cluster::Along;
use super::candidate::{Candidate, PieceOrder, Schedule};
use super::problem::{ceil_div, Machine, Precision, Problem};

/// Stream-K (`tile-stream-k`, pieces in order) for a BF16 pick
/// that two consumers share, persistent and unclustered, over a full wave
/// or more whose last wave keeps at most [`STREAM_K_LAST_WAVE_PERCENT`]% of
/// the SMs busy, over at least [`STREAM_K_MIN_K_BLOCKS`] K blocks; one GEMM
/// with a shape given (a batch's or a grouped GEMM's tiles are not one
/// range of iterations). The hand-over of each CTA's pieces costs about
/// what a fuller last wave or a short K saves, so only a thin last wave
/// over a long K gains
/// (measured: docs/evidence.md, selection/stream_k.rs, stream_k_for).
/// Block-scaled FP8's 128x176
/// consumers spill with the pass's index arithmetic, so it stays BF16.
pub(super) fn stream_k_for(problem: &Problem, machine: &Machine, best: &Candidate) -> Option<PieceOrder> {
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
}
