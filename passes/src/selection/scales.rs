//! Where block-scaled FP8's scales wait for the K step that applies them,
//! chosen with the stages.

use super::candidate::{Pins, Scales, Schedule};
use super::problem::{Machine, Precision, Problem};
use super::smem::SmemLayout;

/// The stages, and where block-scaled FP8's scales wait.
/// They are staged with the operands unless, in the plain pipeline, that
/// costs more than one stage or a CTA an SM holds at once; then
/// prefetched. A thread's prefetched scale load misses L1 each K block
/// when A's scales are M-major (a K block's are one line, the next block's
/// another), which costs more than the one stage staging takes
/// (measured: docs/evidence.md, selection/scales.rs, stages_and_scales).
/// `layout`'s own scales are not read: they are what this chooses.
pub(super) fn stages_and_scales(problem: &Problem, machine: &Machine, pins: &Pins, layout: SmemLayout, filled: i64) -> Option<(i64, Scales)> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selection::rank::choose;
    use crate::selection::testing::fp8;

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
}
