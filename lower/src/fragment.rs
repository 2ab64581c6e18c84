//! Register tiles with a `#tile.mma` (MMA v3) layout: their geometry, and
//! the element-wise ops and the global store that work on them.
//!
//! A warpgroup's wgmma accumulator for one m64 x n block is one
//! `!llvm.struct` of n/2 values per thread (PTX ISA "Matrix fragments for
//! wgmma.mma_async.m64nNk16", accumulator D; CUTLASS `CLayout_64xN`):
//!
//! ```text
//! t = thread in the warpgroup, w = t / 32, l = t % 32, g = l / 4, q = l % 4
//! value i: row = 16 w + g + 8 ((i / 2) % 2), col = 8 (i / 4) + 2 q + (i % 2)
//! ```
//!
//! A tile of `rows x cols` is held as `chunks`: for each m64 block this
//! warpgroup owns (`r`), for each n block of the layout's instruction N
//! (`nb`), one struct, at index `r * n_blocks + nb`. With `G` warpgroups
//! (`warps_per_cta = [4G, 1]`), warpgroup `wg` owns the m64 blocks
//! `G * r + wg`, as in Triton's MMA v3 layout.

use super::elementwise::Values;
use super::emitter::{mlir_type, register_type, Emitter};
use super::swizzle;
use tilec_dialects::{ElemType, Layout, TileType};

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FragGeom {
    pub rows: i64,
    pub cols: i64,
    /// Warpgroups along M.
    pub warpgroups: i64,
    /// m64 blocks per warpgroup.
    pub m_blocks: i64,
    /// The wgmma instruction's N.
    pub instr_n: i64,
    /// n blocks of `instr_n` columns.
    pub n_blocks: i64,
    /// The wgmma instruction's K.
    pub instr_k: i64,
}

impl FragGeom {
    /// The geometry of a tile with an MMA v3 layout held by `warps` warps
    /// (the CTA's, or one role's warpgroup), or why it has none the lowering
    /// supports.
    pub fn of(tile: &TileType, warps: i64) -> Result<FragGeom, String> {
        let Some(Layout::Mma { version, warps_per_cta, instr_shape }) = &tile.layout else {
            return Err("register tiles need a '#tile.mma' layout in the lowering".into());
        };
        if *version != 3 {
            return Err(format!("MMA version {version} is not supported by the lowering (only 3)"));
        }
        let [wm, wn] = warps_per_cta[..] else { return Err("warps_per_cta must have two entries".into()) };
        let [im, instr_n, instr_k] = instr_shape[..] else { return Err("instr_shape must be [M, N, K]".into()) };
        let [rows, cols] = tile.shape[..] else { return Err("only rank-2 register tiles are supported by the lowering".into()) };
        let (wm, wn) = (i64::from(wm), i64::from(wn));
        let (instr_n, instr_k) = (i64::from(instr_n), i64::from(instr_k));
        if wn != 1 || wm % 4 != 0 {
            return Err(format!("warps_per_cta = [{wm}, {wn}] is not supported by the lowering (whole warpgroups along M: [4G, 1])"));
        }
        if wm != warps {
            return Err(format!("warps_per_cta = [{wm}, 1] does not match the {warps} warps that run this code"));
        }
        if im != 16 {
            return Err(format!("instruction M {im} is not supported by the lowering (wgmma's warp slice is 16)"));
        }
        if instr_n % 8 != 0 || !(8..=256).contains(&instr_n) {
            return Err(format!("instruction N {instr_n} is not a multiple of 8 from 8 to 256"));
        }
        let warpgroups = wm / 4;
        if rows % (64 * warpgroups) != 0 {
            return Err(format!("{rows} rows do not split into m64 blocks over {warpgroups} warpgroup(s)"));
        }
        if cols % instr_n != 0 {
            return Err(format!("{cols} columns are not a multiple of the instruction N {instr_n}"));
        }
        Ok(FragGeom { rows, cols, warpgroups, m_blocks: rows / (64 * warpgroups), instr_n, n_blocks: cols / instr_n, instr_k })
    }

    pub fn chunks(&self) -> usize {
        (self.m_blocks * self.n_blocks) as usize
    }

    /// Values a thread holds of the whole tile.
    pub fn values_per_thread(&self) -> i64 {
        self.chunks() as i64 * self.chunk_len() as i64
    }

    /// Values per thread in one chunk.
    pub fn chunk_len(&self) -> usize {
        (self.instr_n / 2) as usize
    }

    /// Tile row of chunk `r`'s m64 block for warpgroup 0 (add `64 * wg`).
    pub fn block_row(&self, r: i64) -> i64 {
        64 * self.warpgroups * r
    }
}

/// A lowered register tile: one struct per chunk.
#[derive(Clone, Debug)]
pub(crate) struct Frag {
    pub geom: FragGeom,
    pub elem: ElemType,
    pub chunks: Vec<String>,
}

impl Frag {
    pub fn chunk_type(&self, em: &mut Emitter) -> String {
        em.struct_type(self.elem, self.geom.chunk_len())
    }
}

/// A splat of `literal` (already spelled for `elem`; `bits` is its bit
/// pattern when `elem` is f32).
///
/// An f32 splat is a wgmma accumulator's initial value: each chunk is then
/// written by its own side-effecting `mov` asm, distinct registers in place
/// before the loop. A constant would let LLVM materialise the value as
/// register copies where it is used, e.g. between `wgmma.fence` and the
/// first wgmma of a peeled iteration, and ptxas then serialises the wgmma
/// (C7519).
pub(crate) fn splat(em: &mut Emitter, geom: &FragGeom, elem: ElemType, literal: &str, is_zero: bool, bits: u32) -> Frag {
    let ty = em.struct_type(elem, geom.chunk_len());
    if elem == ElemType::F32 {
        let n = geom.chunk_len();
        let movs: Vec<String> = (0..n).map(|i| format!("mov.b32 ${i}, 0f{bits:08X};")).collect();
        let constraints = vec!["=f"; n].join(",");
        let chunks = (0..geom.chunks())
            .map(|_| em.assign(if is_zero { "zero" } else { "splat" }, format!("llvm.inline_asm has_side_effects \"{}\", \"{constraints}\" : () -> {ty}", movs.join(" "))))
            .collect();
        return Frag { geom: geom.clone(), elem, chunks };
    }
    let chunk = if is_zero {
        em.assign("zero", format!("llvm.mlir.zero : {ty}"))
    } else {
        let c = em.assign("splat", format!("arith.constant {literal} : {}", mlir_type(elem)));
        let mut s = em.assign("undef", format!("llvm.mlir.undef : {ty}"));
        for i in 0..geom.chunk_len() {
            s = em.assign("splat", format!("llvm.insertvalue {c}, {s}[{i}] : {ty}"));
        }
        s
    };
    Frag { geom: geom.clone(), elem, chunks: vec![chunk; geom.chunks()] }
}

/// Applies `f` to the values at one position of every input and collects
/// the results (of type `out_elem`) into a new fragment.
pub(crate) fn map(
    em: &mut Emitter,
    inputs: &[&Frag],
    out_elem: ElemType,
    mut f: impl FnMut(&mut Emitter, &[String]) -> String,
) -> Frag {
    let geom = inputs[0].geom.clone();
    let in_types: Vec<String> = inputs.iter().map(|x| x.chunk_type(em)).collect();
    let out_ty = em.struct_type(out_elem, geom.chunk_len());
    let mut chunks = Vec::new();
    for c in 0..geom.chunks() {
        let mut s = em.assign("undef", format!("llvm.mlir.undef : {out_ty}"));
        for i in 0..geom.chunk_len() {
            let args: Vec<String> = inputs
                .iter()
                .zip(&in_types)
                .map(|(x, ty)| em.assign("e", format!("llvm.extractvalue {}[{i}] : {ty}", x.chunks[c])))
                .collect();
            let v = f(em, &args);
            s = em.assign("frag", format!("llvm.insertvalue {v}, {s}[{i}] : {out_ty}"));
        }
        chunks.push(s);
    }
    Frag { geom, elem: out_elem, chunks }
}

/// The thread's coordinates inside its warpgroup's accumulator fragment.
pub(crate) struct ThreadCoords {
    /// Warpgroup index (`i32`), or `None` with a single warpgroup.
    pub wg: Option<String>,
    /// 16 w + g: the thread's first row within an m64 block.
    pub row: String,
    /// 2 q: the thread's first column within an 8-column group.
    pub col: String,
}

/// Which tile dimension a broadcast vector's elements run along.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Along {
    /// Element (row, col) takes the vector's element `start + row`.
    Rows,
    /// Element (row, col) takes the vector's element `start + col`.
    Cols,
}

/// A vector repeated over a fragment (`tile.load_broadcast`): the elements
/// `start..` of the `len`-element vector at `ptr`, along `along`, zero at
/// and past `len`. A thread loads each element it holds once, however many
/// of its values repeat it (along columns, every chunk of one n block is
/// the same struct; along rows, every chunk of one m64 block).
///
/// Along columns a thread holds 2 adjacent elements of every 8, a quarter
/// of the tile's columns. Where the tile's columns lie inside the vector
/// and it is aligned to a pair (the usual case: `start` and the thread's
/// first column are even), each pair is one load at a constant offset from
/// the vector's start; elsewhere each element is loaded alone, masked.
/// Either way a pair stays one vector until it is used, one register for
/// two 16-bit elements: as separate elements, an 8-warp 128x256 tile's 64
/// spilled beside its accumulators.
#[allow(clippy::too_many_arguments)]
pub(crate) fn load_broadcast(
    em: &mut Emitter,
    geom: &FragGeom,
    elem: ElemType,
    thread: &ThreadCoords,
    ptr: &str,
    start: &str,
    len: &str,
    along: Along,
) -> Frag {
    let ty = em.struct_type(elem, geom.chunk_len());
    let chunks = match along {
        Along::Cols => {
            let col_base = em.binop("vcol", "arith.addi", start, &thread.col, "i32");
            let end = em.add_const("vend", start, geom.cols, "i32");
            let inside = em.assign("vinside", format!("arith.cmpi ule, {end}, {len} : i32"));
            let pair_bytes = 2 * i64::from(elem.bits() / 8);
            let address = em.assign("vaddr", format!("llvm.ptrtoint {ptr} : !llvm.ptr to i64"));
            let mask = em.i64(pair_bytes - 1);
            let misalignment = em.binop("vmis", "arith.andi", &address, &mask, "i64");
            let zero = em.i64(0);
            let aligned = em.assign("valigned", format!("arith.cmpi eq, {misalignment}, {zero} : i64"));
            let whole = em.binop("vwhole", "arith.andi", &inside, &aligned, "i1");
            let t = mlir_type(elem);
            let pair_type = format!("vector<2x{t}>");
            let offsets: Vec<i64> = (0..geom.n_blocks).flat_map(|nb| (0..geom.instr_n / 8).map(move |j| nb * geom.instr_n + 8 * j)).collect();
            let types = vec![pair_type.clone(); offsets.len()];
            let name = em.fresh("vcols");
            em.open(format!("{name}:{} = scf.if {whole} -> ({}) {{", types.len(), types.join(", ")));
            let pairs: Vec<String> = offsets.iter().map(|&offset| pair_at(em, ptr, &col_base, offset, elem)).collect();
            em.yield_values(&pairs, &types);
            em.middle("} else {");
            let masked: Vec<String> = offsets
                .iter()
                .map(|&offset| {
                    let first = masked_element(em, ptr, &col_base, offset, len, elem);
                    let second = masked_element(em, ptr, &col_base, offset + 1, len, elem);
                    let undef = em.assign("u", format!("llvm.mlir.undef : {pair_type}"));
                    let (i0, i1) = (em.i32(0), em.i32(1));
                    let with_first = em.assign("w", format!("llvm.insertelement {first}, {undef}[{i0} : i32] : {pair_type}"));
                    em.assign("w", format!("llvm.insertelement {second}, {with_first}[{i1} : i32] : {pair_type}"))
                })
                .collect();
            em.yield_values(&masked, &types);
            em.close("}");
            let (i0, i1) = (em.i32(0), em.i32(1));
            let elements: Vec<String> = (0..types.len())
                .flat_map(|k| {
                    let pair = format!("{name}#{k}");
                    [i0.clone(), i1.clone()].map(|i| em.assign("v", format!("llvm.extractelement {pair}[{i} : i32] : {pair_type}")))
                })
                .collect();
            let per_n_block = column_structs(em, geom, &ty, &elements);
            (0..geom.m_blocks).flat_map(|_| per_n_block.iter().cloned()).collect()
        }
        Along::Rows => {
            let zero = em.i32(0);
            let (row_base, _) = thread.first_in(em, start, &zero);
            let mut chunks = Vec::with_capacity(geom.chunks());
            for r in 0..geom.m_blocks {
                let mut s = em.assign("undef", format!("llvm.mlir.undef : {ty}"));
                for half in 0..2 {
                    let v = masked_element(em, ptr, &row_base, geom.block_row(r) + 8 * half, len, elem);
                    for i in (0..geom.chunk_len()).filter(|i| (i / 2) % 2 == half as usize) {
                        s = em.assign("frag", format!("llvm.insertvalue {v}, {s}[{i}] : {ty}"));
                    }
                }
                chunks.extend(std::iter::repeat_n(s, geom.n_blocks as usize));
            }
            chunks
        }
    };
    Frag { geom: geom.clone(), elem, chunks }
}

/// One struct per n block of a fragment whose value at column `col` is
/// element `col` of a vector, from the thread's `elements`: the two at the
/// thread's columns of each 8-column group, n block by n block.
fn column_structs(em: &mut Emitter, geom: &FragGeom, ty: &str, elements: &[String]) -> Vec<String> {
    let groups = (geom.instr_n / 8) as usize;
    let mut structs = Vec::new();
    for nb in 0..geom.n_blocks as usize {
        let mut s = em.assign("undef", format!("llvm.mlir.undef : {ty}"));
        for j in 0..groups {
            for e in 0..2 {
                let v = &elements[2 * (nb * groups + j) + e];
                for half in 0..2 {
                    let i = 4 * j + 2 * half + e;
                    s = em.assign("frag", format!("llvm.insertvalue {v}, {s}[{i}] : {ty}"));
                }
            }
        }
        structs.push(s);
    }
    structs
}

/// Elements `base + offset` and `base + offset + 1` of the vector at `ptr`,
/// one aligned load of the pair.
fn pair_at(em: &mut Emitter, ptr: &str, base: &str, offset: i64, elem: ElemType) -> String {
    let t = mlir_type(elem);
    let index = em.add_const("vi", base, offset, "i32");
    let p = em.assign("vp", format!("llvm.getelementptr {ptr}[{index}] : (!llvm.ptr, i32) -> !llvm.ptr, {t}"));
    em.assign("vpair", format!("llvm.load {p} {{alignment = {} : i64}} : !llvm.ptr -> vector<2x{t}>", 2 * elem.bits() / 8))
}

/// Element `base + offset` of the `len`-element vector at `ptr`, zero at or
/// past `len`: a load at a constant offset from the address of element
/// `base`, under a branch (a predicated load), so that masked elements need
/// no address of their own.
fn masked_element(em: &mut Emitter, ptr: &str, base: &str, offset: i64, len: &str, elem: ElemType) -> String {
    let t = mlir_type(elem);
    let index = em.add_const("vi", base, offset, "i32");
    let inside = em.assign("in", format!("arith.cmpi ult, {index}, {len} : i32"));
    let name = em.fresh("bcast");
    em.open(format!("{name} = scf.if {inside} -> ({t}) {{"));
    let p = em.assign("vp", format!("llvm.getelementptr {ptr}[{base}] : (!llvm.ptr, i32) -> !llvm.ptr, {t}"));
    let q = em.assign("vq", format!("llvm.getelementptr {p}[{offset}] : (!llvm.ptr) -> !llvm.ptr, {t}"));
    let v = em.assign("v", format!("llvm.load {q} : !llvm.ptr -> {t}"));
    em.line(format!("scf.yield {v} : {t}"));
    em.middle("} else {");
    let zero = em.assign("zero", format!("arith.constant {} : {t}", super::emitter::float_literal(0.0, elem)));
    em.line(format!("scf.yield {zero} : {t}"));
    em.close("}");
    name
}

/// A register tile read from a row-major global tensor (`nv.load_global`
/// of a tile in the fragment layout: a residual read in the epilogue), as
/// each thread reads it: a column pair at a time, where a value needs it.
#[derive(Clone, Debug)]
pub(crate) struct GlobalTile {
    pub geom: FragGeom,
    pub elem: ElemType,
    ptr: String,
    /// The thread's first row and column in the tensor (i32).
    row_base: String,
    col_base: String,
    rows: String,
    cols: String,
    /// `cols` as i64, for element offsets.
    cols64: String,
}

impl GlobalTile {
    /// The tile at (`row0`, `col0`) of the `rows x cols` tensor at `ptr`,
    /// read by the thread at `thread`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(em: &mut Emitter, geom: &FragGeom, elem: ElemType, thread: &ThreadCoords, ptr: &str, row0: &str, col0: &str, rows: &str, cols: &str) -> Self {
        let (row_base, col_base) = thread.first_in(em, row0, col0);
        let cols64 = em.assign("cols64", format!("arith.extui {cols} : i32 to i64"));
        GlobalTile { geom: geom.clone(), elem, ptr: ptr.into(), row_base, col_base, rows: rows.into(), cols: cols.into(), cols64 }
    }

    /// Asks L2 for every 128-byte line of the tile the thread reads, without
    /// waiting: its later pair loads, issued one at a time where the store
    /// needs them, then find their lines in flight or arrived rather than
    /// each waiting a round trip to HBM. A thread asks for the line of its
    /// first pair in each 64-column span of each of its rows (the warp's
    /// lanes of one row ask for the same line, which the request merges).
    pub fn prefetch(&self, em: &mut Emitter) {
        let g = &self.geom;
        let span = (128 / (self.elem.bits() / 8)) as i64;
        let ptr = &self.ptr;
        let t = mlir_type(self.elem);
        for r in 0..g.m_blocks {
            for half in 0..2 {
                let row = em.add_const("row", &self.row_base, g.block_row(r) + 8 * half, "i32");
                let row_ok = em.assign("row_ok", format!("arith.cmpi ult, {row}, {} : i32", self.rows));
                let row64 = em.assign("row64", format!("arith.extui {row} : i32 to i64"));
                let row_off = em.binop("row_off", "arith.muli", &row64, &self.cols64, "i64");
                for seg in 0..(g.cols + span - 1) / span {
                    let col = em.add_const("col", &self.col_base, seg * span, "i32");
                    let col_ok = em.assign("c_ok", format!("arith.cmpi ult, {col}, {} : i32", self.cols));
                    let ok = em.binop("ok", "arith.andi", &row_ok, &col_ok, "i1");
                    let col64 = em.assign("col64", format!("arith.extui {col} : i32 to i64"));
                    let idx = em.binop("idx", "arith.addi", &row_off, &col64, "i64");
                    em.open(format!("scf.if {ok} {{"));
                    let p = em.assign("pf", format!("llvm.getelementptr {ptr}[{idx}] : (!llvm.ptr, i64) -> !llvm.ptr, {t}"));
                    em.line(format!("llvm.inline_asm has_side_effects asm_dialect = att \"prefetch.global.L2 [$0];\", \"l\" {p} : (!llvm.ptr) -> ()"));
                    em.close("}");
                }
            }
        }
    }

    /// The `vector<2 x elem>` of values `i & !1` and `i | 1` of chunk `c`
    /// (a column pair of one row), zero outside the tensor: one aligned load
    /// where both lie inside and the pair's address is aligned to it, else
    /// each element masked.
    pub fn pair(&self, em: &mut Emitter, c: usize, i: usize) -> String {
        let g = &self.geom;
        let t = mlir_type(self.elem);
        let pair_type = format!("vector<2x{t}>");
        let (r, nb) = (c as i64 / g.n_blocks, c as i64 % g.n_blocks);
        let (j, half) = ((i / 4) as i64, ((i / 2) % 2) as i64);
        let row = em.add_const("row", &self.row_base, g.block_row(r) + 8 * half, "i32");
        let col = em.add_const("col", &self.col_base, nb * g.instr_n + 8 * j, "i32");
        let col1 = em.add_const("col", &col, 1, "i32");
        let (rows, cols) = (&self.rows, &self.cols);
        let row_ok = em.assign("row_ok", format!("arith.cmpi ult, {row}, {rows} : i32"));
        let first_ok = em.assign("c_ok", format!("arith.cmpi ult, {col}, {cols} : i32"));
        let second_ok = em.assign("c_ok", format!("arith.cmpi ult, {col1}, {cols} : i32"));
        let ok0 = em.binop("ok", "arith.andi", &row_ok, &first_ok, "i1");
        let ok1 = em.binop("ok", "arith.andi", &row_ok, &second_ok, "i1");
        let row64 = em.assign("row64", format!("arith.extui {row} : i32 to i64"));
        let row_off = em.binop("row_off", "arith.muli", &row64, &self.cols64, "i64");
        let col64 = em.assign("col64", format!("arith.extui {col} : i32 to i64"));
        let idx = em.binop("idx", "arith.addi", &row_off, &col64, "i64");
        let ptr = &self.ptr;
        let p = em.assign("rp", format!("llvm.getelementptr {ptr}[{idx}] : (!llvm.ptr, i64) -> !llvm.ptr, {t}"));
        // The pair's address, not only its offset from `ptr`, must be aligned to the pair.
        let addr = em.assign("raddr", format!("llvm.ptrtoint {p} : !llvm.ptr to i64"));
        let (zero64, misalign) = (em.i64(0), em.i64(2 * i64::from(self.elem.bits() / 8) - 1));
        let off = em.binop("roff", "arith.andi", &addr, &misalign, "i64");
        let aligned = em.assign("aligned", format!("arith.cmpi eq, {off}, {zero64} : i64"));
        let both = em.binop("both", "arith.andi", &ok1, &aligned, "i1");
        let name = em.fresh("rpair");
        em.open(format!("{name} = scf.if {both} -> ({pair_type}) {{"));
        let v = em.assign("rv", format!("llvm.load {p} {{alignment = {} : i64}} : !llvm.ptr -> {pair_type}", 2 * self.elem.bits() / 8));
        em.line(format!("scf.yield {v} : {pair_type}"));
        em.middle("} else {");
        let zero = em.assign("zero", format!("arith.constant {} : {t}", super::emitter::float_literal(0.0, self.elem)));
        let mut pair = em.assign("u", format!("llvm.mlir.undef : {pair_type}"));
        for (e, ok) in [(0, &ok0), (1, &ok1)] {
            let v = em.fresh("re");
            em.open(format!("{v} = scf.if {ok} -> ({t}) {{"));
            let at = em.add_const("at", &idx, e, "i64");
            let p = em.assign("rp", format!("llvm.getelementptr {ptr}[{at}] : (!llvm.ptr, i64) -> !llvm.ptr, {t}"));
            let x = em.assign("rx", format!("llvm.load {p} : !llvm.ptr -> {t}"));
            em.line(format!("scf.yield {x} : {t}"));
            em.middle("} else {");
            em.line(format!("scf.yield {zero} : {t}"));
            em.close("}");
            let lane = em.i32(e);
            pair = em.assign("w", format!("llvm.insertelement {v}, {pair}[{lane} : i32] : {pair_type}"));
        }
        em.line(format!("scf.yield {pair} : {pair_type}"));
        em.close("}");
        name
    }
}

impl ThreadCoords {
    /// The thread's first row and column in a tensor whose tile starts at
    /// (`row0`, `col0`): its warpgroup's rows, its warp's and lane's.
    pub fn first_in(&self, em: &mut Emitter, row0: &str, col0: &str) -> (String, String) {
        let mut row = em.binop("row_t", "arith.addi", row0, &self.row, "i32");
        if let Some(wg) = &self.wg {
            let c64 = em.i32(64);
            let wg_rows = em.binop("wg_rows", "arith.muli", wg, &c64, "i32");
            row = em.binop("row_t", "arith.addi", &row, &wg_rows, "i32");
        }
        (row, em.binop("col_t", "arith.addi", col0, &self.col, "i32"))
    }
}

/// The store helper for `elem`: `(ptr, row, col, v0, v1, rows, cols)` writes
/// `v0` to (row, col) and `v1` to (row, col + 1) of a row-major
/// `rows x cols` tensor, each only where inside it; both with one 2-element
/// store when both are inside and the pair is aligned.
pub(crate) fn store_pair_helper_name(elem: ElemType) -> String {
    format!("__tilec_store_pair_{}", elem.mnemonic())
}

pub(crate) fn store_pair_helper(elem: ElemType) -> String {
    let t = register_type(elem);
    let bytes = elem.bits() / 8;
    let name = store_pair_helper_name(elem);
    format!(
        r#"    // Stores the pair (row, col), (row, col + 1) of a row-major rows x cols tensor, each only if
    // inside it; as one {pair}-byte store when both are inside and the pair's address is aligned
    // to it (not only its offset from `p`: a grouped tensor's `p` is an expert's first row, an
    // odd number of elements in when M_max x N is odd).
    func.func @{name}(%p: !llvm.ptr, %row: i32, %col: i32, %v0: {t}, %v1: {t}, %rows: i32, %cols: i32)
        attributes {{llvm.linkage = #llvm.linkage<internal>}} {{
      %c1 = arith.constant 1 : i32
      %c0_i64 = arith.constant 0 : i64
      %misalign = arith.constant {misalign} : i64
      %row_ok = arith.cmpi ult, %row, %rows : i32
      %col1 = arith.addi %col, %c1 : i32
      %col0_ok = arith.cmpi ult, %col, %cols : i32
      %col1_ok = arith.cmpi ult, %col1, %cols : i32
      %ok0 = arith.andi %row_ok, %col0_ok : i1
      %ok1 = arith.andi %row_ok, %col1_ok : i1
      %row64 = arith.extui %row : i32 to i64
      %col64 = arith.extui %col : i32 to i64
      %cols64 = arith.extui %cols : i32 to i64
      %row_off = arith.muli %row64, %cols64 : i64
      %idx = arith.addi %row_off, %col64 : i64
      %p0 = llvm.getelementptr %p[%idx] : (!llvm.ptr, i64) -> !llvm.ptr, {t}
      %addr = llvm.ptrtoint %p0 : !llvm.ptr to i64
      %off = arith.andi %addr, %misalign : i64
      %aligned = arith.cmpi eq, %off, %c0_i64 : i64
      %both = arith.andi %ok1, %aligned : i1
      scf.if %both {{
        %u = llvm.mlir.undef : vector<2x{t}>
        %i0 = arith.constant 0 : i32
        %w0 = llvm.insertelement %v0, %u[%i0 : i32] : vector<2x{t}>
        %w1 = llvm.insertelement %v1, %w0[%c1 : i32] : vector<2x{t}>
        llvm.store %w1, %p0 {{alignment = {pair} : i64}} : vector<2x{t}>, !llvm.ptr
      }} else {{
        scf.if %ok0 {{
          llvm.store %v0, %p0 : {t}, !llvm.ptr
        }}
        scf.if %ok1 {{
          %p1 = llvm.getelementptr %p0[1] : (!llvm.ptr) -> !llvm.ptr, {t}
          llvm.store %v1, %p1 : {t}, !llvm.ptr
        }}
      }}
      return
    }}
"#,
        pair = 2 * bytes,
        misalign = 2 * bytes - 1
    )
}

/// Emits the stores of `frag` at tile origin (`row0`, `col0`) of the tensor
/// at `ptr` (`rows x cols`, row-major).
#[allow(clippy::too_many_arguments)]
pub(crate) fn store(
    em: &mut Emitter,
    values: &Values<'_>,
    thread: &ThreadCoords,
    ptr: &str,
    row0: &str,
    col0: &str,
    rows: &str,
    cols: &str,
) {
    let g = values.geom();
    let t = register_type(values.elem());
    let helper = store_pair_helper_name(values.elem());
    let (row_base, col_base) = thread.first_in(em, row0, col0);
    // Both rows of a column pair one after the other: a value per column
    // (a bias) is then read by consecutive stores, not held across the
    // whole tile.
    for r in 0..g.m_blocks {
        let rows_of_block = [0, 1].map(|half| em.add_const("row", &row_base, g.block_row(r) + 8 * half, "i32"));
        for nb in 0..g.n_blocks {
            let chunk = (r * g.n_blocks + nb) as usize;
            for j in 0..g.instr_n / 8 {
                let col = em.add_const("col", &col_base, nb * g.instr_n + 8 * j, "i32");
                for (half, row) in rows_of_block.iter().enumerate() {
                    let i = 4 * j as usize + 2 * half;
                    let [v0, v1] = values.pair(em, chunk, i);
                    em.line(format!(
                        "func.call @{helper}({ptr}, {row}, {col}, {v0}, {v1}, {rows}, {cols}) : (!llvm.ptr, i32, i32, {t}, {t}, i32, i32) -> ()"
                    ));
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
pub(crate) fn store_shared(em: &mut Emitter, values: &Values<'_>, thread: &ThreadCoords, base: &str, smem: &super::plan::SmemGeom, column_offset: i64) {
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
    use crate::plan::SmemGeom;
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
