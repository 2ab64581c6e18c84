//! The stores of a register tile's values (a fragment's, or an
//! element-wise expression's evaluated as the store reaches each position,
//! `elementwise::Values`): to a global tensor, whole or as groups of a row's
//! columns, and to a shared-memory buffer stage laid out as TMA reads it.

use super::elementwise::Values;
use super::emitter::{register_type, Emitter};
use super::fragment::{StorePair, ThreadCoords};
use super::plan::SmemGeom;
use super::swizzle;

/// Emits the stores of `frag` at tile origin (`row0`, `col0`) of the tensor
/// at `ptr` (`rows x cols`, in `pair`'s order), each pair of columns by
/// `pair`'s helper: of every vector of four values of
/// each thread's tile, or, with a `share` (i64 bounds), of the vectors from
/// the first to before the second, in the order of
/// `stream_k::vectors` (a split-K split's share, `split_k::Reduced`).
pub(crate) fn store(
    em: &mut Emitter,
    values: &Values<'_>,
    thread: &ThreadCoords,
    pair: &StorePair,
    ptr: &str,
    (row0, col0): (&str, &str),
    (rows, cols): (&str, &str),
    share: Option<(&str, &str)>,
) {
    let g = values.geom();
    let t = register_type(values.elem());
    let helper = pair.name();
    let (row_base, col_base) = thread.first_in(em, row0, col0);
    // Both rows of a column pair one after the other: a value per column
    // (a bias) is then read by consecutive stores, not held across the
    // whole tile.
    for r in 0..g.m_blocks {
        let rows_of_block = [0, 1].map(|half| em.add_const("row", &row_base, g.block_row(r) + 8 * half, "i32"));
        for nb in 0..g.n_blocks {
            let chunk = (r * g.n_blocks + nb) as usize;
            for j in 0..g.instr_n / 8 {
                if let Some((first, end)) = share {
                    let vector = em.i64(chunk as i64 * (g.instr_n / 8) + j);
                    let from = em.assign("in_share", format!("arith.cmpi uge, {vector}, {first} : i64"));
                    let to = em.assign("in_share", format!("arith.cmpi ult, {vector}, {end} : i64"));
                    let mine = em.binop("in_share", "arith.andi", &from, &to, "i1");
                    em.open(format!("scf.if {mine} {{"));
                }
                let col = em.add_const("col", &col_base, nb * g.instr_n + 8 * j, "i32");
                for (half, row) in rows_of_block.iter().enumerate() {
                    let i = 4 * j as usize + 2 * half;
                    let [v0, v1] = values.pair(em, chunk, i);
                    em.line(format!(
                        "func.call @{helper}({ptr}, {row}, {col}, {v0}, {v1}, {rows}, {cols}) : (!llvm.ptr, i32, i32, {t}, {t}, i32, i32) -> ()"
                    ));
                }
                if share.is_some() {
                    em.close("}");
                }
            }
        }
    }
}

/// Emits the stores of one value per row and group of `group` columns of
/// `values` (its group's first column's, which a `tile.reduce` over the
/// group gave every column) at tile origin (`row0`, `col0`) of a `rows x
/// cols` tensor with a column per group (`col0` counts groups), stored
/// row-major or, with `column_major`, its rows contiguous. Of the four
/// threads of a quad that hold a row, the one holding the group's first
/// column stores.
#[allow(clippy::too_many_arguments)]
pub(crate) fn store_groups(
    em: &mut Emitter,
    values: &Values<'_>,
    thread: &ThreadCoords,
    ptr: &str,
    (row0, col0): (&str, &str),
    (rows, cols): (&str, &str),
    group: i64,
    column_major: bool,
) {
    let g = values.geom();
    let t = register_type(values.elem());
    let zero = em.i32(0);
    let (row_base, _) = thread.first_in(em, row0, &zero);
    let first_of_quad = em.assign("quad0", format!("arith.cmpi eq, {}, {zero} : i32", thread.col));
    let (rows64, cols64) = (em.assign("d64", format!("arith.extui {rows} : i32 to i64")), em.assign("d64", format!("arith.extui {cols} : i32 to i64")));
    for r in 0..g.m_blocks {
        for half in 0..2 {
            let row = em.add_const("grow", &row_base, g.block_row(r) + 8 * half, "i32");
            let row_ok = em.assign("grow_ok", format!("arith.cmpi ult, {row}, {rows} : i32"));
            let row_ok = em.binop("gok", "arith.andi", &row_ok, &first_of_quad, "i1");
            for first_col in (0..g.cols).step_by(group as usize) {
                let (nb, j) = (first_col / g.instr_n, (first_col % g.instr_n) / 8);
                let [v, _] = values.pair(em, (r * g.n_blocks + nb) as usize, (4 * j + 2 * half) as usize);
                let col = em.add_const("gcol", col0, first_col / group, "i32");
                let col_ok = em.assign("gcol_ok", format!("arith.cmpi ult, {col}, {cols} : i32"));
                let ok = em.binop("gok", "arith.andi", &row_ok, &col_ok, "i1");
                let (row64, col64) = (em.assign("i64", format!("arith.extui {row} : i32 to i64")), em.assign("i64", format!("arith.extui {col} : i32 to i64")));
                let (outer, inner, inner_extent) = if column_major { (&col64, &row64, &rows64) } else { (&row64, &col64, &cols64) };
                let scaled = em.binop("goff", "arith.muli", outer, inner_extent, "i64");
                let index = em.binop("goff", "arith.addi", &scaled, inner, "i64");
                em.open(format!("scf.if {ok} {{"));
                let p = em.assign("gp", format!("llvm.getelementptr {ptr}[{index}] : (!llvm.ptr, i64) -> !llvm.ptr, {t}"));
                em.line(format!("llvm.store {v}, {p} : {t}, !llvm.ptr"));
                em.close("}");
            }
        }
    }
}

/// Writes `frag` into one stage of a shared buffer (`base` points at the
/// stage), at the addresses a TMA box of the buffer's layout reads: the
/// stage is `[cols*eb/span][rows][span]` (`SmemGeom`), and with a swizzle
/// the 16-byte chunk index inside each 128-byte line is XORed with the
/// line's row bits, `off ^ (((off >> 7) & (span/16 - 1)) << 4)`, as TMA and
/// the hardware do (valid because stages and column blocks start on 8-row
/// atoms, 1024-byte aligned). Each adjacent column pair lies inside one
/// 16-byte chunk, so it is one `2 * eb`-byte store. A stage narrower than
/// the fragment takes its columns from `column_offset` on (a chunk of a
/// chunked epilogue): the fragment's 8-column groups inside that window,
/// which the verifier keeps aligned to them.
///
/// A swizzled address is built as `(group ^ x) + y + c`: `x` and `y` are
/// the thread's (its row's swizzle bits and chunk, its row and byte in the
/// chunk), `group` an 8-column group's byte in its span and `c` a constant
/// (the column block and the fragment row). XORing the whole offset instead
/// left LLVM one loop-invariant address per stored pair, which it hoisted
/// out of a persistent kernel's tile loop: at 128x192 a warpgroup they
/// stayed live through the K loop and spilled.
pub(crate) fn store_shared(em: &mut Emitter, values: &Values<'_>, thread: &ThreadCoords, base: &str, smem: &SmemGeom, column_offset: i64) {
    let g = values.geom();
    let t = register_type(values.elem());
    let eb = smem.elem_bytes();
    let span = smem.span();
    let mut row_base = thread.row.clone();
    if let Some(wg) = &thread.wg {
        let c64 = em.i32(64);
        let wg_rows = em.binop("wg_rows", "arith.muli", wg, &c64, "i32");
        row_base = em.binop("row_t", "arith.addi", &row_base, &wg_rows, "i32");
    }
    let c_eb = em.i32(eb);
    let col_bytes = em.binop("col_b", "arith.muli", &thread.col, &c_eb, "i32");
    let addressing = if smem.swizzle != 0 {
        Addressing::Swizzled(swizzle_terms(em, &row_base, &col_bytes, span))
    } else {
        Addressing::Plain { span: em.i32(span), block: em.i32(smem.block_bytes()) }
    };
    let pair = format!("vector<2x{t}>");
    let i0 = em.i32(0);
    let i1 = em.i32(1);
    for r in 0..g.m_blocks {
        for half in 0..2 {
            let row_shift = g.block_row(r) + 8 * half;
            for nb in 0..g.n_blocks {
                let chunk = (r * g.n_blocks + nb) as usize;
                for j in 0..g.instr_n / 8 {
                    let column = nb * g.instr_n + 8 * j - column_offset;
                    if !(0..smem.cols).contains(&column) {
                        continue;
                    }
                    let off = match &addressing {
                        Addressing::Swizzled(terms) => {
                            let group = em.i32(column * eb % span);
                            let chunk_off = em.binop("schunk", "arith.xori", &group, &terms.row_bits, "i32");
                            let off = em.binop("soff", "arith.addi", &chunk_off, &terms.row_and_byte, "i32");
                            em.add_const("soff", &off, column * eb / span * smem.block_bytes() + row_shift * span, "i32")
                        }
                        Addressing::Plain { span: c_span, block: c_block } => {
                            let row = em.add_const("srow", &row_base, row_shift, "i32");
                            let row_off = em.binop("srow_off", "arith.muli", &row, c_span, "i32");
                            let byte = em.add_const("sbyte", &col_bytes, column * eb, "i32");
                            let blk = em.binop("sblk", "arith.divui", &byte, c_span, "i32");
                            let within = em.binop("sin", "arith.remui", &byte, c_span, "i32");
                            let blk_off = em.binop("sblk_off", "arith.muli", &blk, c_block, "i32");
                            let off = em.binop("soff", "arith.addi", &blk_off, &row_off, "i32");
                            em.binop("soff", "arith.addi", &off, &within, "i32")
                        }
                    };
                    let p = em.assign("sp", format!("llvm.getelementptr {base}[{off}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8"));
                    let i = (4 * j + 2 * half) as usize;
                    let [v0, v1] = values.pair(em, chunk, i);
                    let u = em.assign("u", format!("llvm.mlir.undef : {pair}"));
                    let w0 = em.assign("w", format!("llvm.insertelement {v0}, {u}[{i0} : i32] : {pair}"));
                    let w1 = em.assign("w", format!("llvm.insertelement {v1}, {w0}[{i1} : i32] : {pair}"));
                    em.line(format!("llvm.store {w1}, {p} {{alignment = {} : i64}} : {pair}, !llvm.ptr<3>", 2 * eb));
                }
            }
        }
    }
}

/// How `store_shared` computes a stored pair's offset in the stage.
enum Addressing {
    /// The thread's terms of a swizzled address.
    Swizzled(SwizzleTerms),
    /// Unswizzled: the span's and a column block's bytes, as constants.
    Plain { span: String, block: String },
}

/// A thread's share of its swizzled shared-memory addresses (`store_shared`).
struct SwizzleTerms {
    /// The row's swizzle bits, already XORed with the thread's 16-byte chunk
    /// within its 8-column group: `((row * span >> 7) & (span/16 - 1)) << 4
    /// ^ (byte & ~15)`.
    row_bits: String,
    /// `row * span + (byte & 15)`.
    row_and_byte: String,
}

/// The terms of a thread's swizzled addresses, from its first row and its
/// byte within an 8-column group. Rows 8 apart share the swizzle bits (the
/// pattern repeats every 8 rows of 128 bytes), so every row the thread
/// stores takes its first row's; and a group's bytes (a multiple of its
/// 8 * eb bytes, at most the span) never carry into the thread's, so the
/// XOR and the sums commute with the chunk's place in the span.
fn swizzle_terms(em: &mut Emitter, row_base: &str, col_bytes: &str, span: i64) -> SwizzleTerms {
    let c_span = em.i32(span);
    let c_chunk = em.i32(!15);
    let c_byte = em.i32(15);
    let row_off = em.binop("srow_off", "arith.muli", row_base, &c_span, "i32");
    let xor = swizzle::bits(em, &row_off, span);
    let thread_chunk = em.binop("schunk_t", "arith.andi", col_bytes, &c_chunk, "i32");
    let row_bits = em.binop("sxor_t", "arith.xori", &xor, &thread_chunk, "i32");
    let byte = em.binop("sbyte_t", "arith.andi", col_bytes, &c_byte, "i32");
    let row_and_byte = em.binop("srow_b", "arith.addi", &row_off, &byte, "i32");
    SwizzleTerms { row_bits, row_and_byte }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fragment::{Frag, FragGeom};
    use tilec_dialects::ElemType;
    use std::collections::HashMap;

    /// Evaluates the i32 `arith` ops `store_shared` emits, for one thread,
    /// and returns the byte offset of each `llvm.getelementptr`, in order.
    fn emitted_offsets(text: &str, inputs: &[(&str, i64)]) -> Vec<i64> {
        let mut env: HashMap<String, i64> = inputs.iter().map(|&(n, v)| (n.to_string(), v)).collect();
        let mut offsets = Vec::new();
        for line in text.lines().map(str::trim) {
            let Some((name, rhs)) = line.split_once(" = ") else { continue };
            let mut words = rhs.split_whitespace();
            let op = words.next().unwrap_or_default();
            if op == "llvm.getelementptr" {
                let index = rhs.split_once('[').and_then(|(_, r)| r.split_once(']')).map(|(i, _)| i).expect("an index");
                offsets.push(env[index]);
                continue;
            }
            let operands: Vec<&str> = words.take_while(|w| *w != ":").map(|w| w.trim_end_matches(',')).collect();
            let value = |i: usize| env[operands[i]];
            let result = match op {
                "arith.constant" => operands[0].parse().expect("an integer constant"),
                "arith.addi" => value(0) + value(1),
                "arith.muli" => value(0) * value(1),
                "arith.xori" => value(0) ^ value(1),
                "arith.andi" => value(0) & value(1),
                "arith.shrui" => value(0) >> value(1),
                "arith.shli" => value(0) << value(1),
                "arith.divui" => value(0) / value(1),
                "arith.remui" => value(0) % value(1),
                _ => continue,
            };
            env.insert(name.to_string(), result);
        }
        offsets
    }

    #[test]
    fn store_shared_writes_where_tma_reads() {
        // (element, columns, swizzle, wgmma N, first column stored)
        let cases = [
            (ElemType::BF16, 192, 128, 192, 0),
            (ElemType::BF16, 176, 32, 176, 0),
            (ElemType::BF16, 160, 64, 160, 0),
            (ElemType::BF16, 64, 128, 128, 64),
            (ElemType::BF16, 128, 0, 64, 0),
            (ElemType::F32, 64, 128, 64, 0),
            (ElemType::F32, 32, 0, 32, 0),
        ];
        for (elem, cols, swizzle, instr_n, column_offset) in cases {
            let smem = SmemGeom { rows: 128, cols, elem, swizzle };
            let frag_cols = cols + column_offset;
            let geom = FragGeom { rows: 128, cols: frag_cols, warpgroups: 1, m_blocks: 2, instr_n, n_blocks: frag_cols / instr_n, instr_k: 16 };
            let frag = Frag { chunks: (0..geom.m_blocks * geom.n_blocks).map(|i| format!("%chunk{i}")).collect(), geom, elem };
            let thread = ThreadCoords { wg: None, row: "%row".into(), col: "%col".into() };
            let mut em = Emitter::new(0);
            store_shared(&mut em, &Values::Frag(&frag), &thread, "%base", &smem, column_offset);
            let text = em.finish();
            for lane in 0..128 {
                let (row, col) = (16 * (lane / 32) + lane % 32 / 4, 2 * (lane % 4));
                let mut expected = Vec::new();
                for r in 0..frag.geom.m_blocks {
                    for half in 0..2 {
                        for nb in 0..frag.geom.n_blocks {
                            for j in 0..instr_n / 8 {
                                let column = nb * instr_n + 8 * j - column_offset;
                                if (0..cols).contains(&column) {
                                    let logical = smem.offset_of(row + frag.geom.block_row(r) + 8 * half, col + column);
                                    expected.push(swizzle::swizzled(logical, smem.swizzle));
                                }
                            }
                        }
                    }
                }
                let got = emitted_offsets(&text, &[("%row", row), ("%col", col)]);
                assert_eq!(got, expected, "{elem:?} {cols} columns, {swizzle}-byte swizzle, lane {lane}");
            }
        }
    }
}
