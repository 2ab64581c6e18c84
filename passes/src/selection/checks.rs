//! Shapes and pins the passes cannot build, refused with a reason.

use crate::cluster::{check_cluster_ctas, Along};
use super::candidate::Pins;
use super::column_halves::{COLUMN_HALVES_TILES, widest_column_halves};
use super::problem::Problem;
use super::smem::STAGES_LIMIT;
use super::tiles::{BLOCK_MS, BLOCK_N_STEP, MAX_BLOCK_N};

/// Rejects shapes and pins the passes cannot build.
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
    if pins.cluster.is_some_and(|along| along != Along::None) && problem.output_column_major {
        return Err("a cluster along M or N needs a row-major output: a column-major one's grid walks its memory rows, across the pairs".to_string());
    }
    if let Some(ctas) = pins.cluster_ctas {
        if !pins.cluster.is_some_and(|along| along != Along::None) {
            return Err(format!("clusters of {ctas} CTAs need a dimension to cluster along: m or n"));
        }
        check_cluster_ctas(ctas)?;
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
    use crate::selection::problem::Machine;
    use crate::selection::rank::choose;
    use crate::selection::testing::{bf16, GLOBAL};

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
        // A cluster size needs a dimension, and one the passes build.
        assert!(err(Pins { cluster_ctas: Some(4), ..Pins::default() }).contains("clusters of 4 CTAs need a dimension to cluster along"));
        assert!(err(Pins { cluster: Some(Along::N), cluster_ctas: Some(6), ..Pins::default() }).contains("2, 4, 8 CTAs, not 6"));
        let four = choose(&p, &Machine::H100, &Pins { cluster: Some(Along::N), cluster_ctas: Some(4), ..Pins::default() }).unwrap();
        assert_eq!((four.config.cluster, four.config.cluster_ctas), (Along::N, 4));
    }
}
