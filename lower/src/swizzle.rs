//! The NVMMA swizzle of a byte offset in a shared-memory stage, as TMA
//! writes and reads tiles and wgmma reads them: the 128/64/32-byte
//! swizzles XOR the 16-byte chunk index (address bits [4:6], [4:5], [4])
//! with bits [7:9], [7:8], [7] (the row within the 8-row atom; every
//! buffer, stage, column block and row window starts on an atom, so the
//! offset in the stage swizzles like the absolute address). `ldmatrix`'s
//! reads and the TMA epilogue's stores both address through it.

use super::emitter::Emitter;

/// `((off >> 7) & (swizzle / 16 - 1)) << 4`: what a `swizzle`-byte swizzle
/// XORs into the `i32` offset `off`, from its row in the atom.
pub(crate) fn bits(em: &mut Emitter, off: &str, swizzle: i64) -> String {
    let c7 = em.i32(7);
    let row = em.binop("atom_row", "arith.shrui", off, &c7, "i32");
    let mask = em.i32(swizzle / 16 - 1);
    let phase = em.binop("phase", "arith.andi", &row, &mask, "i32");
    let c4 = em.i32(4);
    em.binop("phase", "arith.shli", &phase, &c4, "i32")
}

/// `off ^ bits(off)`: the swizzled offset (unchanged without swizzle).
pub(crate) fn apply(em: &mut Emitter, off: &str, swizzle: i64) -> String {
    if swizzle == 0 {
        return off.to_string();
    }
    let bits = bits(em, off, swizzle);
    em.binop("swz", "arith.xori", off, &bits, "i32")
}

/// [`apply`] on a constant offset, for tests.
#[cfg(test)]
pub(crate) fn swizzled(off: i64, swizzle: i64) -> i64 {
    if swizzle == 0 {
        off
    } else {
        off ^ (((off >> 7) & (swizzle / 16 - 1)) << 4)
    }
}

#[cfg(test)]
mod tests {
    use super::swizzled;
    use crate::plan::SmemGeom;
    use tilec_dialects::ElemType;

    #[test]
    fn swizzle_xors_the_chunk_with_the_row_in_the_atom() {
        // 128 B: row r, chunk c -> chunk c ^ (r % 8).
        let g = SmemGeom { rows: 128, cols: 64, elem: ElemType::BF16, swizzle: 128 };
        for row in 0..16 {
            for chunk in 0..8 {
                let off = g.offset_of(row, 8 * chunk);
                assert_eq!(swizzled(off, 128), row * 128 + 16 * (chunk ^ (row % 8)));
            }
        }
        // 64 B: 64-byte rows, two per 128 bytes: chunk c ^ ((r / 2) % 4).
        let g = SmemGeom { rows: 128, cols: 32, elem: ElemType::BF16, swizzle: 64 };
        for row in 0..16 {
            for chunk in 0..4 {
                let off = g.offset_of(row, 8 * chunk);
                assert_eq!(swizzled(off, 64), row * 64 + 16 * (chunk ^ ((row / 2) % 4)));
            }
        }
        // 32 B: chunk c ^ ((r / 4) % 2).
        let g = SmemGeom { rows: 128, cols: 16, elem: ElemType::BF16, swizzle: 32 };
        for row in 0..16 {
            for chunk in 0..2 {
                let off = g.offset_of(row, 8 * chunk);
                assert_eq!(swizzled(off, 32), row * 32 + 16 * (chunk ^ ((row / 4) % 2)));
            }
        }
    }
}
