//! Why each ranked candidate stands where it does, as `--explain` prints it.

use crate::cluster::Along;
use super::candidate::{Candidate, Config, Scales, Schedule};
use super::deferred_epilogue::{DEFERRED_EPILOGUE_COLUMNS, DEFERRED_EPILOGUE_MIN_K_BLOCKS, DEFERRED_EPILOGUE_MIN_WAVES};
use super::problem::{ceil_div, Machine};
use super::smem::MAX_STAGES;
use super::stream_k::{STREAM_K_LAST_WAVE_PERCENT, STREAM_K_MIN_K_BLOCKS};
use super::tall_tiles::TALL_SHARED_WAVES;
use super::tiles::{NARROW_BLOCK_N, promotes_by_row_blocks};

/// What made the pick win.
pub(super) fn pick_reason(best: &Candidate, machine: &Machine, tall: bool) -> String {
    let shared_tall = format!("; warp-specialised (policy `prefers_warp_specialized`), two consumers sharing 256x128 rather than 128x256 over {TALL_SHARED_WAVES} waves or more (policy `prefers_tall_shared_tiles`)");
    let schedule = match best.config.schedule {
        Schedule::WarpSpecialized { .. } if tall => &shared_tall,
        Schedule::Pipeline => "",
        Schedule::WarpSpecialized { .. } if best.config.block_n <= NARROW_BLOCK_N => "; warp-specialised (a narrow tile with a long K)",
        Schedule::WarpSpecialized { .. } if best.config.stages > MAX_STAGES => "; warp-specialised with the most stages that fit (policy `deep_paired_rows`: a narrow tile over a long K, both rows of tiles sharing B)",
        Schedule::WarpSpecialized { .. } => "; warp-specialised (policy `prefers_warp_specialized`: block-scaled FP8 with a long K, or two waves of tiles or more)",
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
        Scales::Resident => "; scales copied a chunk of K blocks at a time into buffers of their own, so that a stage waits for its TMA loads alone (policy `prefers_resident_scales`: a swapped tile of one m64 row block over enough K blocks a CTA)",
    };
    let stream_k = match best.config.stream_k {
        None => String::new(),
        Some(order) => format!("; the last wave's tiles shared by K iterations over every SM, pieces {} (policy `stream_k_for`: a last wave at most {STREAM_K_LAST_WAVE_PERCENT}% full over {STREAM_K_MIN_K_BLOCKS} K blocks or more)", order.word()),
    };
    let deferred = if best.config.deferred_epilogue {
        format!("; each tile stored during the next one's first K steps, {DEFERRED_EPILOGUE_COLUMNS} columns a step (policy `deferred_epilogue`: two consumers, unclustered, {DEFERRED_EPILOGUE_MIN_WAVES} waves and {DEFERRED_EPILOGUE_MIN_K_BLOCKS} K blocks or more)")
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

/// The first policy or figure on which `c` loses to `best`; `tall` where
/// `prefers_tall_shared_tiles` made the pick's tile 256x128.
pub(super) fn loss_reason(c: &Candidate, best: &Candidate, tall: bool) -> String {
    let padded = |c: &Candidate| c.tiles * c.config.block_m * c.config.block_n;
    let same_tile = (c.config.block_m, c.config.block_n) == (best.config.block_m, best.config.block_n);
    // The tile the split pick shares, or the narrow one it grew from.
    let (bm, bn) = (best.config.block_m, best.config.block_n);
    let split_of = |c: &Config| c.block_m <= bm && c.block_n <= bn && 2 * c.block_m * c.block_n >= bm * bn;
    if promotes_by_row_blocks(&c.config) && !promotes_by_row_blocks(&best.config) {
        format!("{}-row alternative, promoted an m64 block at a time (policy `promotes_by_row_blocks`: ranked, not picked unless block M is pinned)", c.config.block_m)
    } else if best.config.splits > 1 && c.config.splits == 1 && split_of(&c.config) {
        format!("unsplit alternative of the pick: one CTA runs the whole K loop of a {}x{} tile", c.config.block_m, c.config.block_n)
    } else if c.config == (Config { cluster: c.config.cluster, raster_group: c.config.raster_group, ..best.config }) && c.config.cluster != Along::None {
        format!("the pick in 2-CTA clusters along {}, multicasting {}", c.config.cluster.word(), if c.config.cluster == Along::M { "B" } else { "A" })
    } else if c.config == (Config { cluster: Along::None, ..best.config }) && best.config.cluster != Along::None {
        "the pick without clusters (policy `prefers_clusters` clusters it here)".to_string()
    } else if best.config.deferred_epilogue && c.config == (Config { deferred_epilogue: false, epilogue: c.config.epilogue, stages: c.config.stages, ..best.config }) {
        "the pick with each tile stored between its K loop and the next tile's (policy `deferred_epilogue`)".to_string()
    } else if c.config == (Config { stream_k: None, ..best.config }) && best.config.stream_k.is_some() {
        "the pick without stream-K: its last wave's tiles whole, on fewer SMs (policy `stream_k_for`)".to_string()
    } else if c.config.schedule == Schedule::PingPong {
        format!("ping-pong alternative: two consumers take turns at whole {}x{} tiles", c.config.block_m, c.config.block_n)
    } else if c.config.schedule != Schedule::Pipeline {
        format!("warp-specialised alternative of the pick's tile ({} consumer(s))", c.config.num_warps / 4 - 1)
    } else if same_tile && best.config.schedule != Schedule::Pipeline && c.config.epilogue.word() != best.config.epilogue.word() {
        format!("pipelined direct-store alternative of the pick's tile ({} stages without the output tile)", c.config.stages)
    } else if same_tile && best.config.schedule != Schedule::Pipeline {
        "pipelined alternative of the pick's tile (policies `prefers_warp_specialized` and `deep_paired_rows` prefer warp specialisation here)".to_string()
    } else if same_tile && c.config.epilogue != best.config.epilogue {
        format!("direct-store alternative of the pick ({} stages without the output tile)", c.config.stages)
    } else if tall && (c.config.block_m, c.config.block_n) == (best.config.block_n, best.config.block_m) {
        format!("the {}x{} tile, which two consumers share as {}x{} over {TALL_SHARED_WAVES} waves or more (policy `prefers_tall_shared_tiles`)", c.config.block_m, c.config.block_n, best.config.block_m, best.config.block_n)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selection::candidate::Pins;
    use crate::selection::problem::Problem;
    use crate::selection::rank::rank;
    use crate::selection::testing::{bf16, fp8, GLOBAL, TMA};

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
    fn the_ranking_names_why_each_alternative_lost() {
        let ranked = rank(&bf16(2048, 4096, 7168), &Machine::H100, &Pins::default());
        // `prefers_warp_specialized`: two consumers share the 128x256 tile
        // over 2 waves, its TMA epilogue in 128-column chunks and a stage
        // more (`chunked_epilogue`).
        assert!(ranked[0].reason.starts_with("picked"));
        assert_eq!((ranked[0].config.schedule, ranked[0].config.cluster), (Schedule::WarpSpecialized { consumers: 2 }, Along::None));
        assert_eq!((ranked[0].config.stages, ranked[0].config.epilogue.word(), ranked[0].config.epilogue_chunk()), (4, TMA, Some(128)));
        assert!(ranked[0].reason.ends_with("; warp-specialised (policy `prefers_warp_specialized`: block-scaled FP8 with a long K, or two waves of tiles or more)"), "{}", ranked[0].reason);
        // `cluster_for`: 16 x 16 tiles over 2 waves; pairs along M share B's
        // 256-row tile, larger than A's 128.
        assert_eq!(ranked[1].config, Config { cluster: Along::M, ..ranked[0].config });
        assert_eq!(ranked[1].reason, "the pick in 2-CTA clusters along m, multicasting B");
        // The pipelined tile (the whole output tile, three stages), the
        // ping-pong alternative, and `direct_stores`': the pipeline with direct
        // stores and the stage the output tile took.
        assert_eq!((ranked[2].config.schedule, ranked[2].config.stages), (Schedule::Pipeline, 3));
        assert_eq!(ranked[2].reason, "pipelined alternative of the pick's tile (policies `prefers_warp_specialized` and `deep_paired_rows` prefer warp specialisation here)");
        assert_eq!(ranked[3].config.schedule, Schedule::PingPong);
        assert_eq!((ranked[4].config.schedule, ranked[4].config.stages, ranked[4].config.epilogue.word()), (Schedule::Pipeline, 4, GLOBAL));
        assert_eq!(ranked[4].reason, "pipelined direct-store alternative of the pick's tile (4 stages without the output tile)");
        assert_eq!(ranked[5].reason, "narrower N (128 < 256)");
        assert!(ranked.iter().skip(6).any(|c| c.reason.starts_with("more waves")));
        // No tile whose accumulators do not fit (both sides over 128) is weighed.
        assert!(ranked.iter().all(|c| c.config.block_m <= 128 || c.config.block_n <= 128));
    }
}
