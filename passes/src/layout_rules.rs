//! The layout rules of DESIGN.md section 2, as pure functions: NVMMA shared
//! swizzles and padding, and the MMA v3 register layout's warp arrangement
//! and instruction shape.

/// Rows over which a swizzle pattern repeats; fewer rows cannot be swizzled.
pub const SWIZZLE_ROWS: i64 = 8;

/// The widest swizzle (128, 64 or 32 bytes) that divides a row of
/// `contiguous_elems` elements, or 0 when none does or the tile has fewer
/// than 8 rows.
pub fn swizzle_bytes(contiguous_elems: i64, elem_bits: u32, outer_rows: i64) -> u32 {
    if outer_rows < SWIZZLE_ROWS {
        return 0;
    }
    let row_bytes = contiguous_elems * i64::from(elem_bits) / 8;
    [128, 64, 32].into_iter().find(|&s| row_bytes % i64::from(s) == 0).unwrap_or(0)
}

/// Elements to pad each row of an unswizzled tile with, so that consecutive
/// rows start 4 banks apart modulo 8.
pub fn padding_elems(contiguous_elems: i64, elem_bits: u32) -> u32 {
    let elem_bytes = i64::from(elem_bits / 8).max(1);
    let bank_stride = contiguous_elems * elem_bytes / 4;
    let padding_words = (4 - bank_stride).rem_euclid(8);
    (padding_words * 4 / elem_bytes) as u32
}

/// How `num_warps` warps tile a BLOCK_M-row accumulator: grown along M
/// (16 rows a warp) while M has rows left, then along N.
pub fn warps_per_cta(block_m: i64, num_warps: u32) -> [u32; 2] {
    let mut warps = [4u32, 1];
    while warps[0] * warps[1] < num_warps {
        if block_m > 16 * i64::from(warps[0]) {
            warps[0] *= 2;
        } else {
            warps[1] *= 2;
        }
    }
    warps
}

/// The wgmma instruction N: the largest multiple of 8, at most 256, that
/// divides BLOCK_N and fits the N extent each warp group covers.
pub fn instr_shape_n(block_m: i64, block_n: i64, num_warps: u32) -> Option<u32> {
    let m_reps = (block_m + 15) / 16;
    let n_reps = (i64::from(num_warps) + m_reps - 1) / m_reps;
    let max_n = (block_n / n_reps.max(1)).max(8);
    (1..=32).rev().map(|i| i * 8).find(|&n| n <= max_n && block_n % n == 0).map(|n| n as u32)
}

/// wgmma's K per instruction: 32 bytes of the element type.
pub fn instr_shape_k(elem_bits: u32) -> u32 {
    256 / elem_bits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swizzle_is_the_widest_span_dividing_a_row() {
        // (contiguous elements, element bits, rows) -> swizzle bytes
        let table = [
            (64, 16, 128, 128), // 128 B rows
            (32, 16, 128, 64),  // 64 B
            (16, 16, 128, 32),  // 32 B
            (8, 16, 128, 0),    // 16 B: no span divides
            (128, 8, 128, 128), // fp8, 128 B
            (48, 16, 64, 32),   // 96 B: 32 divides, 64 does not
            (64, 16, 4, 0),     // under 8 rows
            (32, 32, 64, 128),  // f32, 128 B
            (16, 32, 64, 64),
        ];
        for (elems, bits, rows, want) in table {
            assert_eq!(swizzle_bytes(elems, bits, rows), want, "{elems} x {bits}-bit, {rows} rows");
        }
    }

    #[test]
    fn padding_follows_seed_001_for_block_n_16_to_160() {
        // Seed 001 pads only unswizzled output tiles; with bf16 its rule
        // gives (block_n, padding) below, worked out by hand from
        // padding_words = (4 - block_n / 2) mod 8, padding = 2 * words:
        // rows of a multiple of 16 elements shift by 4 banks, the others
        // already do.
        let table = [(16, 8), (24, 0), (32, 8), (40, 0), (64, 8), (72, 0), (120, 0), (128, 8), (152, 0), (160, 8)];
        for (n, want) in table {
            assert_eq!(padding_elems(n, 16), want, "block_n {n}");
        }
        for n in (16..=160).step_by(8) {
            let row_words = (n + i64::from(padding_elems(n, 16))) * 2 / 4;
            assert_eq!(row_words.rem_euclid(8), 4, "block_n {n}: padded rows must start 4 banks apart mod 8");
        }
    }

    #[test]
    fn warps_grow_along_m_first() {
        assert_eq!(warps_per_cta(64, 4), [4, 1]);
        assert_eq!(warps_per_cta(128, 4), [4, 1]);
        assert_eq!(warps_per_cta(128, 8), [8, 1]);
        assert_eq!(warps_per_cta(64, 8), [4, 2]);
        assert_eq!(warps_per_cta(256, 8), [8, 1]);
        assert_eq!(warps_per_cta(256, 16), [16, 1]);
    }

    #[test]
    fn instr_n_divides_block_n_and_fits_the_warps() {
        assert_eq!(instr_shape_n(128, 128, 4), Some(128));
        assert_eq!(instr_shape_n(128, 256, 4), Some(256));
        assert_eq!(instr_shape_n(64, 256, 8), Some(128));
        assert_eq!(instr_shape_n(64, 24, 4), Some(24));
        assert_eq!(instr_shape_n(64, 160, 4), Some(160));
        assert_eq!(instr_shape_n(64, 8, 8), Some(8));
        for block_m in [64, 128, 256] {
            for block_n in (8..=256).step_by(8) {
                for warps in [4, 8] {
                    let n = i64::from(instr_shape_n(block_m, block_n, warps).expect("8 always divides"));
                    assert!(n % 8 == 0 && block_n % n == 0 && n <= 256, "{block_m}x{block_n}, {warps} warps: {n}");
                    // No larger multiple of 8 also divides and fits.
                    let m_reps = (block_m + 15) / 16;
                    let n_reps = (i64::from(warps) + m_reps - 1) / m_reps;
                    let max_n = (block_n / n_reps).max(8);
                    assert!(((n + 8)..=max_n.min(256)).step_by(8).all(|c| block_n % c != 0), "{block_m}x{block_n}: {n} not maximal");
                }
            }
        }
    }

    #[test]
    fn instr_k_is_32_bytes() {
        assert_eq!(instr_shape_k(16), 16);
        assert_eq!(instr_shape_k(8), 32);
        assert_eq!(instr_shape_k(32), 8);
    }
}
