//! `nv.load_fragment` -> `ldmatrix.sync.aligned.m8n8.x4.b16`: a K-major A
//! tile in a (swizzled) shared buffer read into wgmma's A register fragment.
//!
//! wgmma's A fragment for one m64 x k16 block of 16-bit elements (PTX ISA
//! "Register Fragments ... wgmma .m64nNk16", the same per warp as
//! `mma.m16n8k16`'s A): warp w of the warpgroup holds rows 16w..16w+15;
//! with lane l, g = l / 4, q = l % 4, its four `.b32` registers are
//!
//! ```text
//! reg 0: row 16w + g,     k 2q, 2q+1      reg 2: row 16w + g,     k 8 + 2q, 8 + 2q+1
//! reg 1: row 16w + g + 8, k 2q, 2q+1      reg 3: row 16w + g + 8, k 8 + 2q, 8 + 2q+1
//! ```
//!
//! `ldmatrix .x4` gives register j of lane l the elements (l / 4, 2(l % 4)
//! + {0, 1}) of 8x8 matrix j, whose eight rows lanes 8j..8j+7 address. So
//! matrix j is rows 8 (j % 2).., k 8 (j / 2).. of the block, and lane l
//! points at row 16w + (l % 8) + 8 ((l / 8) % 2), k 8 (l / 16): a 16-byte
//! chunk of one row, contiguous in every NVMMA layout.
//!
//! The chunk's address in a stage is the buffer layout's (see
//! [`SmemGeom::offset_of`]) with the swizzle applied ([`swizzle::apply`]).

use super::emitter::Emitter;
use super::plan::Buffer;
use super::swizzle;
use tilec_dialects::{ElemType, Layout, TileType};

/// The geometry of an A tile in registers.
#[derive(Clone, Debug)]
pub(crate) struct AFragGeom {
    /// Warpgroups along M.
    pub warpgroups: i64,
    /// m64 blocks per warpgroup.
    pub m_blocks: i64,
    /// k steps of the instruction K.
    pub k_steps: i64,
    pub instr_k: i64,
}

impl AFragGeom {
    /// The geometry of a tile in a `#tile.dot_operand` layout of operand A
    /// held by `warps` warps, or why the lowering does not support it.
    pub fn of(tile: &TileType, warps: i64) -> Result<AFragGeom, String> {
        let Some(Layout::DotOperand { op_idx: 0, parent, .. }) = &tile.layout else {
            return Err("A in registers needs a '#tile.dot_operand' layout of operand 0".into());
        };
        let Layout::Mma { warps_per_cta, instr_shape, .. } = &**parent else {
            return Err("the dot-operand layout's parent must be an MMA layout".into());
        };
        if tile.elem.bits() != 16 {
            return Err(format!("A in registers is lowered for 16-bit elements only, found '{}'", tile.elem.mnemonic()));
        }
        let (&[wm, 1], &[_, _, instr_k], &[rows, cols]) = (&warps_per_cta[..], &instr_shape[..], &tile.shape[..]) else {
            return Err("the parent must have warps_per_cta = [4G, 1] and a rank-2 tile".into());
        };
        let (wm, instr_k) = (i64::from(wm), i64::from(instr_k));
        if wm != warps || wm % 4 != 0 {
            return Err(format!("warps_per_cta = [{wm}, 1] does not match the {warps} warps that run this code"));
        }
        let warpgroups = wm / 4;
        if rows % (64 * warpgroups) != 0 || cols % instr_k != 0 {
            return Err(format!("a {rows}x{cols} A tile does not split into m64 x k{instr_k} blocks over {warpgroups} warpgroup(s)"));
        }
        Ok(AFragGeom { warpgroups, m_blocks: rows / (64 * warpgroups), k_steps: cols / instr_k, instr_k })
    }
}

/// A lowered A tile: per m64 block `r` and k step `ks`, one
/// `!llvm.struct<(i32, i32, i32, i32)>` at `r * k_steps + ks`.
#[derive(Clone, Debug)]
pub(crate) struct AFrag {
    pub geom: AFragGeom,
    pub elem: ElemType,
    pub chunks: Vec<String>,
}

impl AFrag {
    pub fn chunk(&self, r: i64, ks: i64) -> &str {
        &self.chunks[(r * self.geom.k_steps + ks) as usize]
    }
}

/// The struct type of one m64 x k step of A.
pub(crate) fn chunk_type(em: &mut Emitter) -> String {
    em.struct_type(ElemType::I32, 4)
}

/// Where the rows being read sit in the stage.
pub(crate) struct Source<'a> {
    pub buffer: &'a Buffer,
    /// A row window's byte offset in each column block (`i32`), if any.
    pub row_offset: Option<&'a str>,
    /// The stage (`i32`).
    pub stage: &'a str,
    /// The dynamic shared memory's base pointer.
    pub smem: &'a str,
}

/// Emits the `ldmatrix` of every m64 block and k step of a `rows x K`
/// A tile. `tid` is the CTA thread index (`i32`) and `wg`, with several
/// warpgroups sharing the tile, the warpgroup index.
pub(crate) fn load(em: &mut Emitter, geom: &AFragGeom, elem: ElemType, src: &Source<'_>, tid: &str, wg: Option<&str>) -> AFrag {
    let g = &src.buffer.geom;
    let span = g.span();
    // The row and 16-byte K chunk this lane points at, as a byte offset.
    let c5 = em.i32(5);
    let warp_all = em.binop("warp", "arith.shrui", tid, &c5, "i32");
    let c3 = em.i32(3);
    let warp = em.binop("warp", "arith.andi", &warp_all, &c3, "i32");
    let c31 = em.i32(31);
    let lane = em.binop("lane", "arith.andi", tid, &c31, "i32");
    let c7 = em.i32(7);
    let r8 = em.binop("lm_row", "arith.andi", &lane, &c7, "i32");
    let c8 = em.i32(8);
    let hi8 = em.binop("lm_hi", "arith.andi", &lane, &c8, "i32");
    let c16 = em.i32(16);
    let warp_rows = em.binop("lm_warp_rows", "arith.muli", &warp, &c16, "i32");
    let mut row = em.binop("lm_row", "arith.addi", &warp_rows, &r8, "i32");
    row = em.binop("lm_row", "arith.addi", &row, &hi8, "i32");
    if let Some(wg) = wg {
        let c64 = em.i32(64);
        let wg_rows = em.binop("wg_rows", "arith.muli", wg, &c64, "i32");
        row = em.binop("lm_row", "arith.addi", &row, &wg_rows, "i32");
    }
    let c4 = em.i32(4);
    let k_chunk = em.binop("lm_k", "arith.shrui", &lane, &c4, "i32");
    // The next 16 bytes of K: inside the span, or the next column block
    // when a span is 16 bytes (no swizzle).
    let chunk_stride = em.i32(if span == 16 { g.block_bytes() } else { 16 });
    let k_off = em.binop("lm_k_off", "arith.muli", &k_chunk, &chunk_stride, "i32");
    let c_span = em.i32(span);
    let row_off = em.binop("lm_row_off", "arith.muli", &row, &c_span, "i32");
    let mut base = em.binop("lm_off", "arith.addi", &row_off, &k_off, "i32");
    if let Some(window) = src.row_offset {
        base = em.binop("lm_off", "arith.addi", &base, window, "i32");
    }
    let stage_bytes = em.i32(g.stage_bytes());
    let stage_off = em.binop("stage_off", "arith.muli", src.stage, &stage_bytes, "i32");
    let stage_base = em.add_const("stage_base", &stage_off, src.buffer.offset, "i32");

    let ty = chunk_type(em);
    let mut chunks = Vec::new();
    for r in 0..geom.m_blocks {
        for ks in 0..geom.k_steps {
            let logical = em.add_const("lm_off", &base, g.offset_of(64 * geom.warpgroups * r, ks * geom.instr_k), "i32");
            let physical = swizzle::apply(em, &logical, g.swizzle);
            let off = em.binop("lm_addr", "arith.addi", &stage_base, &physical, "i32");
            let ptr = em.assign("lm_ptr", format!("llvm.getelementptr {}[{off}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8", src.smem));
            chunks.push(em.assign(
                "a_frag",
                format!(
                    "nvvm.ldmatrix {ptr} {{num = 4 : i32, layout = #nvvm.mma_layout<row>, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>, \
                     eltType = #nvvm.ld_st_matrix_elt_type<b16>}} : (!llvm.ptr<3>) -> {ty}"
                ),
            ));
        }
    }
    AFrag { geom: geom.clone(), elem, chunks }
}
