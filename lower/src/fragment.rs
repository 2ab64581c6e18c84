//! Register tiles with a `#tile.mma` (MMA v3) layout: their geometry, and
//! the element-wise ops that work on them (their stores: `store.rs`).
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

use super::emitter::{mlir_type, register_type, Emitter};
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
/// The function that stores a thread's pair of adjacent columns of a tile
/// into a global tensor of `elem`s, bounds-checked: one per element type and
/// order of the tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StorePair {
    pub elem: ElemType,
    /// The tensor is column-major (its rows contiguous), so the pair's two
    /// values are a column apart in memory.
    pub column_major: bool,
}

impl StorePair {
    pub fn name(&self) -> String {
        let order = if self.column_major { "_column_major" } else { "" };
        format!("__tilec_store_pair{order}_{}", self.elem.mnemonic())
    }

    /// The helper's MLIR: `@name(p, row, col, v0, v1, rows, cols)` stores
    /// (row, col) and (row, col + 1) of a `rows x cols` tensor at `p`.
    pub fn text(&self) -> String {
        if self.column_major {
            self.column_major_text()
        } else {
            self.row_major_text()
        }
    }

    fn row_major_text(&self) -> String {
        let t = register_type(self.elem);
        let bytes = self.elem.bits() / 8;
        let name = self.name();
        format!(
            r#"    // Stores the pair (row, col), (row, col + 1) of a row-major rows x cols tensor, each only if
    // inside it; as one {pair}-byte store when both are inside and the pair's address is aligned
    // to it (not only its offset from `p`: a grouped tensor's `p` is an expert's first row, an
    // odd number of elements in when M_max x N is odd).
    func.func @{name}(%p: !llvm.ptr, %row: i32, %col: i32, %v0: {t}, %v1: {t}, %rows: i32, %cols: i32)
        attributes {{llvm.linkage = #llvm.linkage<internal>}} {{
{BOUNDS}      %c0_i64 = arith.constant 0 : i64
      %misalign = arith.constant {misalign} : i64
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
            misalign = 2 * bytes - 1,
            BOUNDS = PAIR_BOUNDS,
        )
    }

    fn column_major_text(&self) -> String {
        let t = register_type(self.elem);
        let name = self.name();
        format!(
            r#"    // Stores the pair (row, col), (row, col + 1) of a column-major rows x cols tensor (element
    // (r, c) at c * rows + r), each only if inside it: two stores a column apart.
    func.func @{name}(%p: !llvm.ptr, %row: i32, %col: i32, %v0: {t}, %v1: {t}, %rows: i32, %cols: i32)
        attributes {{llvm.linkage = #llvm.linkage<internal>}} {{
{BOUNDS}      %rows64 = arith.extui %rows : i32 to i64
      %col_off = arith.muli %col64, %rows64 : i64
      %idx = arith.addi %col_off, %row64 : i64
      %p0 = llvm.getelementptr %p[%idx] : (!llvm.ptr, i64) -> !llvm.ptr, {t}
      scf.if %ok0 {{
        llvm.store %v0, %p0 : {t}, !llvm.ptr
      }}
      scf.if %ok1 {{
        %p1 = llvm.getelementptr %p0[%rows64] : (!llvm.ptr, i64) -> !llvm.ptr, {t}
        llvm.store %v1, %p1 : {t}, !llvm.ptr
      }}
      return
    }}
"#,
            BOUNDS = PAIR_BOUNDS,
        )
    }
}

/// The first lines of both pair helpers: whether each of (row, col) and
/// (row, col + 1) lies inside the `rows x cols` tensor (`%ok0`, `%ok1`),
/// and row and column as i64.
const PAIR_BOUNDS: &str = "      %c1 = arith.constant 1 : i32\n      %row_ok = arith.cmpi ult, %row, %rows : i32\n      %col1 = arith.addi %col, %c1 : i32\n      %col0_ok = arith.cmpi ult, %col, %cols : i32\n      %col1_ok = arith.cmpi ult, %col1, %cols : i32\n      %ok0 = arith.andi %row_ok, %col0_ok : i1\n      %ok1 = arith.andi %row_ok, %col1_ok : i1\n      %row64 = arith.extui %row : i32 to i64\n      %col64 = arith.extui %col : i32 to i64\n";
