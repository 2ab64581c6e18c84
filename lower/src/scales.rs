//! Block scales of FP8 dots: the per-thread reads of a dot's row scales
//! (`#tile.slice<dim = 1, parent = #tile.mma<...>>`: each thread reads the
//! rows of its accumulator fragment), column scales (`#tile.slice<dim = 0,
//! ...>`, the swapped GEMM's: the columns of its fragment) and block scales
//! (a blocked layout holding the whole tile in every thread), from global
//! memory (`nv.load_global`) or from a stage `nv.copy_async` filled
//! (`nv.load_shared`); the copying warp's copies of a tile into a stage; and
//! `nv.scale_accumulate`, the promotion
//! `acc + partial * row_scale[row] * block_scale[col / 128]` (or, swapped,
//! `acc + partial * block_scale[row / 128] * col_scale[col]`) as one FMA
//! per accumulator element.

use super::emitter::{mlir_type, Emitter};
use super::fragment::{Frag, FragGeom, ThreadCoords};
use tilec_dialects::tile::dot::{grid_offset_grain, SCALE_BLOCK_N};
use tilec_dialects::{ElemType, Layout, TileType};

/// A register tile of scales as the lowering holds it: the values of the
/// tile a thread holds, in the order its layout gives (`ScaleLayout`).
#[derive(Clone, Debug)]
pub(crate) struct Scales {
    pub layout: ScaleLayout,
    pub values: Vec<String>,
}

/// How a tile of scales is laid over the threads, from its layout, and the
/// order of the values a thread holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ScaleLayout {
    /// Row scales sliced from an MMA layout over this many warpgroups: the
    /// value of each row a thread accumulates, at index `2 * r + half` for
    /// its m64 block `r` and half (rows +0 / +8).
    Rows(i64),
    /// Column scales sliced from an MMA layout (every warpgroup holds the
    /// same columns): the value of each column a thread accumulates, at
    /// index `2 * g + parity` for the tile's 8-column group `g` and the
    /// column's place in the thread's pair.
    Cols,
    /// A small tile every thread holds whole, row-major.
    Whole,
}

/// How a thread holds a tile of `shape` in `layout`, or why the lowering
/// cannot load it.
pub(crate) fn scale_layout(tile: &TileType, warps: i64) -> Result<ScaleLayout, String> {
    if tile.elem != ElemType::F32 {
        return Err(format!("the lowering loads f32 register tiles (scales), not '{}'", tile.elem.mnemonic()));
    }
    match &tile.layout {
        Some(Layout::Slice { dim, parent }) if *dim <= 1 => {
            let Layout::Mma { warps_per_cta, .. } = &**parent else {
                return Err("only slices of a '#tile.mma' layout are loaded by the lowering".into());
            };
            let wm = i64::from(warps_per_cta.first().copied().unwrap_or(0));
            if wm != warps || wm % 4 != 0 || warps_per_cta.get(1) != Some(&1) {
                return Err(format!("the slice's parent must be held by the {warps} warps that run this code, whole warpgroups along M"));
            }
            if *dim == 0 {
                if tile.shape.len() != 2 || tile.shape[1] != 1 || tile.shape[0] % 8 != 0 {
                    return Err("column scales must be N x 1 with N a multiple of 8".into());
                }
                return Ok(ScaleLayout::Cols);
            }
            let warpgroups = wm / 4;
            if tile.shape.len() != 2 || tile.shape[1] != 1 || tile.shape[0] % (64 * warpgroups) != 0 {
                return Err(format!("row scales must be R x 1 with R a multiple of {}", 64 * warpgroups));
            }
            Ok(ScaleLayout::Rows(warpgroups))
        }
        Some(Layout::Blocked { size_per_thread, .. }) => {
            let whole = size_per_thread.len() == tile.shape.len() && size_per_thread.iter().zip(&tile.shape).all(|(&s, &d)| i64::from(s) == d);
            if !whole || tile.shape.len() != 2 {
                return Err("a blocked register tile is loaded by the lowering only when every thread holds all of it (size_per_thread = its rank-2 shape)".into());
            }
            Ok(ScaleLayout::Whole)
        }
        _ => Err("the lowering loads register tiles with a '#tile.slice' of an MMA layout or a blocked layout holding the whole tile".into()),
    }
}

/// A tile of a `rows x cols` tensor at `ptr` (`i32` values), its origin at
/// (`row0`, `col0`); the tensor is row-major, or column-major where
/// `column_major` (its rows contiguous: `tile.contiguous`).
pub(crate) struct GlobalTile<'a> {
    pub ptr: &'a str,
    pub row0: &'a str,
    pub col0: &'a str,
    pub rows: &'a str,
    pub cols: &'a str,
    pub column_major: bool,
}

impl GlobalTile<'_> {
    /// The element index (i64) of (`row`, `col`) of the tensor, and whether
    /// it lies inside the tensor (i1); outside, the index is 0, so an access
    /// through it is always in bounds and needs no branch.
    fn element_index(&self, em: &mut Emitter, row: &str, col: &str) -> (String, String) {
        let row_ok = em.assign("row_ok", format!("arith.cmpi ult, {row}, {} : i32", self.rows));
        let col_ok = em.assign("col_ok", format!("arith.cmpi ult, {col}, {} : i32", self.cols));
        let ok = em.binop("in_bounds", "arith.andi", &row_ok, &col_ok, "i1");
        let row64 = em.assign("row64", format!("arith.extui {row} : i32 to i64"));
        let col64 = em.assign("col64", format!("arith.extui {col} : i32 to i64"));
        let (outer, inner, inner_dim) = if self.column_major { (col64, row64, self.rows) } else { (row64, col64, self.cols) };
        let extent64 = em.assign("extent64", format!("arith.extui {inner_dim} : i32 to i64"));
        let off = em.binop("off", "arith.muli", &outer, &extent64, "i64");
        let idx = em.binop("idx", "arith.addi", &off, &inner, "i64");
        let zero = em.i64(0);
        let idx = em.assign("idx", format!("arith.select {ok}, {idx}, {zero} : i64"));
        (idx, ok)
    }
}

/// The element at (`row`, `col`) of `tensor` (its origin ignored), or zero
/// outside it.
fn load_checked(em: &mut Emitter, tensor: &GlobalTile<'_>, row: &str, col: &str, elem: ElemType) -> String {
    let t = mlir_type(elem);
    let (idx, ok) = tensor.element_index(em, row, col);
    let p = em.assign("sp", format!("llvm.getelementptr {}[{idx}] : (!llvm.ptr, i64) -> !llvm.ptr, {t}", tensor.ptr));
    let v = em.assign("scale", format!("llvm.load {p} : !llvm.ptr -> {t}"));
    let zero = em.assign("zero", format!("arith.constant 0.0 : {t}"));
    em.assign("scale", format!("arith.select {ok}, {v}, {zero} : {t}"))
}

/// `nv.copy_async` for lane `lane` of the copying warp: it copies elements
/// `lane`, `lane + 32`, ... of the row-major `shape` tile of `src` into the
/// stage at `dst` (`!llvm.ptr<3>`), four bytes each with `cp.async` (an
/// element outside the tensor copies no bytes and is zero-filled), then has
/// the barrier at `bar` take its arrival once they have landed. The
/// barrier's count includes that arrival (`noinc`).
pub(crate) fn copy(em: &mut Emitter, src: &GlobalTile<'_>, dst: &str, shape: [i64; 2], (stages, stage_bytes): (i64, i64), lane: &str, bar: &str) {
    let [rows, cols] = shape;
    let per_stage = rows * cols;
    let elements = stages * per_stage;
    for first in (0..elements).step_by(32) {
        let e = em.add_const("e", lane, first, "i32");
        let partial = first + 32 > elements;
        if partial {
            let n = em.i32(elements);
            let inside = em.assign("in_tile", format!("arith.cmpi ult, {e}, {n} : i32"));
            em.open(format!("scf.if {inside} {{"));
        }
        // Element `e` of stage `e / per_stage`: that stage's tile lies
        // that many columns on, and its bytes that many stages in.
        let (stage, within) = if stages > 1 {
            let n = em.i32(per_stage);
            (Some(em.binop("stage", "arith.divui", &e, &n, "i32")), em.binop("within", "arith.remui", &e, &n, "i32"))
        } else {
            (None, e.clone())
        };
        let c = em.i32(cols);
        let row = em.binop("row", "arith.divui", &within, &c, "i32");
        let col = em.binop("col", "arith.remui", &within, &c, "i32");
        let row = em.binop("row", "arith.addi", src.row0, &row, "i32");
        let col = em.binop("col", "arith.addi", src.col0, &col, "i32");
        let col = match &stage {
            Some(s) => em.binop("col", "arith.addi", &col, s, "i32"),
            None => col,
        };
        let (idx, ok) = src.element_index(em, &row, &col);
        let p = em.assign("src", format!("llvm.getelementptr {}[{idx}] : (!llvm.ptr, i64) -> !llvm.ptr, f32", src.ptr));
        let p = em.assign("src", format!("llvm.addrspacecast {p} : !llvm.ptr to !llvm.ptr<1>"));
        let slot = match &stage {
            Some(s) => {
                let b = em.i32(stage_bytes / 4);
                let off = em.binop("slot", "arith.muli", s, &b, "i32");
                em.binop("slot", "arith.addi", &off, &within, "i32")
            }
            None => e.clone(),
        };
        let d = em.assign("dst", format!("llvm.getelementptr {dst}[{slot}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f32"));
        let (four, zero) = (em.i32(4), em.i32(0));
        let bytes = em.assign("bytes", format!("arith.select {ok}, {four}, {zero} : i32"));
        em.line(format!("nvvm.cp.async.shared.global {d}, {p}, 4, cache = ca, {bytes} : !llvm.ptr<3>, !llvm.ptr<1>, i32"));
        if partial {
            em.close("}");
        }
    }
    em.line(format!("nvvm.cp.async.mbarrier.arrive {bar} {{noinc = true}} : !llvm.ptr<3>"));
}

/// Where a tile of scales is read from.
pub(crate) enum Source<'a> {
    /// `nv.load_global`: the tensor, zero outside it.
    Global(GlobalTile<'a>),
    /// `nv.load_shared`: a stage of a narrow buffer at `ptr` (`!llvm.ptr<3>`),
    /// the tile stored densely, `cols` elements a row.
    Shared { ptr: &'a str, cols: i64 },
}

impl Source<'_> {
    /// The element at (`row`, `col`) of the tile (`i32` values, relative to
    /// its origin).
    fn read(&self, em: &mut Emitter, row: &str, col: &str, elem: ElemType) -> String {
        match self {
            Source::Global(g) => {
                let row = em.binop("row", "arith.addi", g.row0, row, "i32");
                let col = em.binop("col", "arith.addi", g.col0, col, "i32");
                load_checked(em, g, &row, &col, elem)
            }
            Source::Shared { ptr, cols } => {
                let c = em.i32(*cols);
                let off = em.binop("off", "arith.muli", row, &c, "i32");
                let idx = em.binop("idx", "arith.addi", &off, col, "i32");
                let t = mlir_type(elem);
                let p = em.assign("sp", format!("llvm.getelementptr {ptr}[{idx}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, {t}"));
                em.assign("scale", format!("llvm.load {p} : !llvm.ptr<3> -> {t}"))
            }
        }
    }
}

/// Loads a tile of scales; `layout` is what [`scale_layout`] gave.
///
/// Reads of a stage stay where they stand: an empty asm with side effects
/// that may touch memory follows them, which LLVM keeps in order with the
/// wgmma instructions and waits and does not move a load past. A
/// warp-specialised consumer reads its scales between its wgmma's commit
/// and the wait for it, and LLVM would otherwise sink the loads past the
/// wait (an intrinsic that touches no memory) to the promotion that uses
/// them, putting their latency in front of it. Loads nothing uses are
/// still dropped.
pub(crate) fn load(em: &mut Emitter, tile: &TileType, layout: ScaleLayout, thread: &ThreadCoords, src: &Source<'_>) -> Scales {
    let scales = read(em, tile, layout, thread, src);
    if let Source::Shared { .. } = src {
        em.line("llvm.inline_asm has_side_effects \"\", \"~{memory}\" : () -> ()");
    }
    scales
}

/// The reads of [`load`].
fn read(em: &mut Emitter, tile: &TileType, layout: ScaleLayout, thread: &ThreadCoords, src: &Source<'_>) -> Scales {
    let mut values = Vec::new();
    match layout {
        ScaleLayout::Rows(warpgroups) => {
            let mut row_base = thread.row.clone();
            if let Some(wg) = &thread.wg {
                let c64 = em.i32(64);
                let wg_rows = em.binop("wg_rows", "arith.muli", wg, &c64, "i32");
                row_base = em.binop("row_t", "arith.addi", &row_base, &wg_rows, "i32");
            }
            let col = em.i32(0);
            let m_blocks = tile.shape[0] / (64 * warpgroups);
            for r in 0..m_blocks {
                for half in 0..2 {
                    let row = em.add_const("row", &row_base, 64 * warpgroups * r + 8 * half, "i32");
                    values.push(src.read(em, &row, &col, tile.elem));
                }
            }
        }
        ScaleLayout::Cols => {
            // The tile is N x 1: a column's scale is its row.
            let zero = em.i32(0);
            for group in 0..tile.shape[0] / 8 {
                for parity in 0..2 {
                    let col = em.add_const("col", &thread.col, 8 * group + parity, "i32");
                    values.push(src.read(em, &col, &zero, tile.elem));
                }
            }
        }
        ScaleLayout::Whole => {
            for i in 0..tile.shape[0] {
                let row = em.i32(i);
                for j in 0..tile.shape[1] {
                    let col = em.i32(j);
                    values.push(src.read(em, &row, &col, tile.elem));
                }
            }
        }
    }
    Scales { layout, values }
}

/// Where column `col` of a promotion finds its block scale: block
/// `col / 128` (a tile that starts a block), or with the tile's first
/// column at `offset` in the first block (a multiple of 8 below 128),
/// `min((offset + col) / 128, last)`.
pub(crate) enum ColumnBlocks {
    /// The tile starts a block.
    FromStart,
    /// The offset is a constant, a multiple of 8 below 128.
    Known(i64),
    /// The offset is this i32 value, and a grid of tiles `step` columns
    /// wide (the accumulator's) starts its tiles at multiples of `step`.
    Dynamic { offset: String, step: i64 },
}

/// Which part of the accumulator a promotion folds its partial into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Part {
    /// All of it.
    Whole,
    /// One m64 row block (`row_block`).
    RowBlock(i64),
    /// The columns of one wgmma instruction (`col_block`).
    ColBlock(i64),
}

/// `acc + partial * rows[row] * blocks[block of col]`, element by element:
/// one product of scales per (row, block) the thread holds, then one FMA
/// per element. With a row or column block the partial is that part of the
/// accumulator alone; the rest passes through. With `pin` the promoted
/// values are pinned where they stand by an empty side-effecting asm that
/// reads them: LLVM would otherwise sink the FMAs past the next block's
/// wgmma or wait (they are pure), keeping two blocks' partials live, which
/// at 128 rows by 128 columns a warpgroup spills, or promoting a column
/// block, or the first K block of a pair, only after the wait for the next
/// one, which is what its own commit group is there to avoid.
///
/// With a dynamic offset, each column's block changes with the tile while
/// the offset stays the same for the whole K loop; instead of choosing a
/// scale per element, a switch on the offset runs one promotion per offset
/// a grid of accumulator-wide tiles gives (the multiples of gcd(N, 128)
/// below 128), each with its blocks fixed. Any other offset traps: a
/// default that chose per element kept its loop-invariant choices live
/// across the K loop (LLVM hoists them), which spilled 88 bytes at 64x176
/// a warpgroup.
pub(crate) fn scale_accumulate(em: &mut Emitter, acc: &Frag, partial: &Frag, rows: &[String], blocks: &[String], part: Part, pin: bool, columns: &ColumnBlocks) -> Frag {
    let last = blocks.len() as i64 - 1;
    let mut row_products = |em: &mut Emitter, r: i64| {
        [0, 1].map(|half| {
            let row = &rows[(2 * r + half) as usize];
            blocks.iter().map(|b| em.binop("s", "arith.mulf", row, b, "f32")).collect::<Vec<_>>()
        })
    };
    match columns {
        ColumnBlocks::FromStart => promote(em, acc, partial, part, pin, &mut row_products, &|scales, col, _| scales[(col / SCALE_BLOCK_N) as usize].clone()),
        ColumnBlocks::Known(offset) => promote(em, acc, partial, part, pin, &mut row_products, &|scales, col, _| scales[block_at(offset + col, last)].clone()),
        ColumnBlocks::Dynamic { offset, step } => {
            let Some(cases) = offset_cases(*step, blocks.len() as i64) else {
                trap_unless_case(em, offset, grid_offset_grain(*step));
                return promote(em, acc, partial, part, pin, &mut row_products, &|scales, col, _| scales[block_at(col, last)].clone());
            };
            let types = vec![acc.chunk_type(em); acc.chunks.len()];
            let promoted = em.index_switch("promoted", offset, &types);
            for known in cases {
                em.open(format!("case {known} {{"));
                let done = promote(em, acc, partial, part, pin, &mut row_products, &|scales, col, _| scales[block_at(known + col, last)].clone());
                em.yield_values(&done.chunks, &types);
                em.close("}");
            }
            // Any other offset breaks the op's contract: trap rather than
            // promote with the wrong scales.
            em.trap_default(&acc.chunks, &types);
            Frag { geom: acc.geom.clone(), elem: acc.elem, chunks: promoted }
        }
    }
}

/// Where the tile's rows start in the first of the row block scales.
pub(crate) enum RowOffset {
    /// A constant.
    Known(i64),
    /// This i32 value.
    Dynamic(String),
}

/// The swapped GEMM's promotion, `acc + partial * blocks[block of row] *
/// cols[col]` element by element (`blocks_along_rows`): one block scale
/// per m64 block the thread holds (64-row blocks never straddle a 128-row
/// scale block, since the tile's rows start at a multiple of 64 in it),
/// its products with the thread's column scales, then one FMA per element.
/// `wg` is the thread's warpgroup, `None` with one; `pin` as for
/// [`scale_accumulate`].
pub(crate) fn scale_accumulate_row_blocks(em: &mut Emitter, acc: &Frag, partial: &Frag, blocks: &[String], cols: &[String], part: Part, pin: bool, offset: &RowOffset, wg: Option<&str>) -> Frag {
    let mut row_products = |em: &mut Emitter, r: i64| {
        let block = row_block_scale(em, &acc.geom, r, blocks, offset, wg);
        let products: Vec<String> = cols.iter().map(|c| em.binop("s", "arith.mulf", &block, c, "f32")).collect();
        [products.clone(), products]
    };
    promote(em, acc, partial, part, pin, &mut row_products, &|scales, col, parity| scales[(2 * (col / 8)) as usize + parity].clone())
}

/// The block scale of the thread's m64 block `r`: `blocks[min((offset +
/// row) / 128, last)]` for the block's first row, a constant choice where
/// the offset and the warpgroup are known, a chain of selects otherwise.
fn row_block_scale(em: &mut Emitter, geom: &FragGeom, r: i64, blocks: &[String], offset: &RowOffset, wg: Option<&str>) -> String {
    let last = blocks.len() as i64 - 1;
    let row = geom.block_row(r);
    if let (RowOffset::Known(known), None) = (offset, wg) {
        return blocks[block_at(known + row, last)].clone();
    }
    let mut start = match offset {
        RowOffset::Known(known) => em.i32(known + row),
        RowOffset::Dynamic(v) => em.add_const("block_row", v, row, "i32"),
    };
    if let Some(wg) = wg {
        let c64 = em.i32(64);
        let wg_rows = em.binop("wg_rows", "arith.muli", wg, &c64, "i32");
        start = em.binop("block_row", "arith.addi", &start, &wg_rows, "i32");
    }
    let width = em.i32(SCALE_BLOCK_N);
    let index = em.binop("scale_block", "arith.divui", &start, &width, "i32");
    let mut chosen = blocks[last as usize].clone();
    for j in (0..last).rev() {
        let c = em.i32(j);
        let is = em.assign("is_block", format!("arith.cmpi eq, {index}, {c} : i32"));
        chosen = em.assign("block_scale", format!("arith.select {is}, {}, {chosen} : f32", blocks[j as usize]));
    }
    chosen
}

/// The offsets into the first of `blocks` scale blocks that a grid of
/// tiles `cols` wide gives (the multiples of gcd(cols, 128) below 128,
/// each a multiple of 8 since `cols` is), when they differ in which block
/// an 8-column group of the tile takes; `None` when every one maps the
/// groups alike (a tile as wide as a divisor of 128 never leaves its block).
pub(crate) fn offset_cases(cols: i64, blocks: i64) -> Option<Vec<i64>> {
    let last = blocks - 1;
    let cases: Vec<i64> = (0..SCALE_BLOCK_N).step_by(grid_offset_grain(cols) as usize).collect();
    let blocks_of = |known: i64| (0..cols).step_by(8).map(|col| block_at(known + col, last)).collect::<Vec<_>>();
    cases.iter().any(|&known| blocks_of(known) != blocks_of(0)).then_some(cases)
}

/// Traps unless `offset` (i32) is a multiple of `grain` below 128, as the
/// switch's default does for the offsets it has no case for.
fn trap_unless_case(em: &mut Emitter, offset: &str, grain: i64) {
    let g = em.i32(grain);
    let rem = em.binop("offset_rem", "arith.remui", offset, &g, "i32");
    let zero = em.i32(0);
    let off_grid = em.assign("off_grid", format!("arith.cmpi ne, {rem}, {zero} : i32"));
    let width = em.i32(SCALE_BLOCK_N);
    let past = em.assign("past_block", format!("arith.cmpi uge, {offset}, {width} : i32"));
    let bad = em.binop("bad_offset", "arith.ori", &off_grid, &past, "i1");
    em.open(format!("scf.if {bad} {{"));
    em.line("llvm.intr.trap");
    em.close("}");
}

/// The block of column `at` counted from the first block's first column,
/// at most `last`.
fn block_at(at: i64, last: i64) -> usize {
    (at / SCALE_BLOCK_N).clamp(0, last) as usize
}

/// The promotion with each element's scale chosen by `scale_of(products,
/// col, parity)` from the products `row_products` gives for its m64 block
/// and half (rows +0 / +8), `col` the first column of the element's
/// 8-column group and `parity` its place in the thread's pair.
fn promote(
    em: &mut Emitter,
    acc: &Frag,
    partial: &Frag,
    part: Part,
    pin: bool,
    row_products: &mut dyn FnMut(&mut Emitter, i64) -> [Vec<String>; 2],
    scale_of: &dyn Fn(&[String], i64, usize) -> String,
) -> Frag {
    let g = &acc.geom;
    let ty = acc.chunk_type(em);
    let mut chunks = acc.chunks.clone();
    let (row_blocks, col_blocks) = match part {
        Part::Whole => (0..g.m_blocks, 0..g.n_blocks),
        Part::RowBlock(r) => (r..r + 1, 0..g.n_blocks),
        Part::ColBlock(c) => (0..g.m_blocks, c..c + 1),
    };
    let mut promoted = Vec::new();
    for r in row_blocks {
        let factor = row_products(em, r);
        for nb in col_blocks.clone() {
            // The partial's own chunk: the whole tile's (r, nb), a block's only one along that axis.
            let pr = if let Part::RowBlock(_) = part { 0 } else { r };
            let pn = if let Part::ColBlock(_) = part { 0 } else { nb };
            let c = (r * g.n_blocks + nb) as usize;
            let p_chunk = &partial.chunks[(pr * partial.geom.n_blocks + pn) as usize];
            let mut out = em.assign("undef", format!("llvm.mlir.undef : {ty}"));
            for i in 0..g.chunk_len() {
                let half = (i / 2) % 2;
                let col = nb * g.instr_n + 8 * (i as i64 / 4);
                let s = scale_of(&factor[half], col, i % 2);
                let p = em.assign("p", format!("llvm.extractvalue {p_chunk}[{i}] : {ty}"));
                let a = em.assign("a", format!("llvm.extractvalue {}[{i}] : {ty}", acc.chunks[c]));
                let v = em.assign("promoted", format!("llvm.intr.fma({p}, {s}, {a}) : (f32, f32, f32) -> f32"));
                out = em.assign("acc", format!("llvm.insertvalue {v}, {out}[{i}] : {ty}"));
                promoted.push(v);
            }
            chunks[c] = out;
        }
    }
    if pin {
        let constraints = vec!["f"; promoted.len()].join(",");
        let types = vec!["f32"; promoted.len()].join(", ");
        em.line(format!("llvm.inline_asm has_side_effects \"\", \"{constraints}\" {} : ({types}) -> ()", promoted.join(", ")));
    }
    Frag { geom: g.clone(), elem: acc.elem, chunks }
}
