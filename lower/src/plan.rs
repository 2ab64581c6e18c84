//! What must be known before the kernel body is written: the shared-memory
//! carve-up, the global tensors and their dimension symbols, the TMA
//! descriptors, and from these the kernel's parameters and its manifest.

use std::collections::{HashMap, HashSet};
use tilec_artifact::{
    DType, Dim, GridRule, Interleave, L2Promotion, Manifest, OobFill, Param, Role, ScalarSource, ScalarType,
    Swizzle, TensorDecl, TmaParam, FORMAT_VERSION,
};
use tilec_dialects::nv::memory::{flat_box_fault, MIN_TMA_ROW_BYTES, TMA_SHARED_ALIGN};
use tilec_dialects::{nv, tile};
use tilec_dialects::registry::Opcode;
use tilec_dialects::{Diagnostic, ElemType, Function, Layout, Location, Type, Value};
use tilec_target::Target;

/// Alignment of every shared buffer: the 128-byte swizzle pattern repeats
/// every 1024 bytes, and TMA and wgmma derive it from absolute addresses.
pub(crate) const BUFFER_ALIGN: i64 = 1024;
/// Alignment of a narrow buffer (scales) that threads copy: no swizzle to
/// line up, and 16 bytes covers every copy and read of it. One that a TMA
/// load fills starts at [`TMA_SHARED_ALIGN`] instead.
const NARROW_ALIGN: i64 = 16;
/// Bytes of one mbarrier.
pub(crate) const MBARRIER_BYTES: i64 = 8;

pub(crate) fn error(loc: &Location, op: &str, message: impl std::fmt::Display) -> Diagnostic {
    Diagnostic::error(loc.clone(), format!("'{op}' op: {message}"))
}

/// How one stage of a shared buffer is stored. The tile is `rows x cols`
/// with `cols` contiguous (TMA writes it so from a row-major tensor). Its
/// columns are cut into blocks of `span` bytes (the swizzle width, or 16
/// bytes without swizzle: the wgmma "interleaved" core-matrix width), and
/// each block is a dense `rows x span` array: `[cols*eb/span][rows][span]`.
/// One TMA box fills one block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SmemGeom {
    pub rows: i64,
    pub cols: i64,
    pub elem: ElemType,
    /// Swizzle width in bytes: 128, 64, 32, or 0 for none.
    pub swizzle: i64,
}

impl SmemGeom {
    pub fn from_type(ty: &Type, loc: &Location, op: &str) -> Result<SmemGeom, Diagnostic> {
        let smem = ty.as_smem().ok_or_else(|| error(loc, op, "expected a shared buffer"))?;
        let tile = &smem.tile;
        let Some(Layout::NvmmaShared { swizzle_bytes, padding_elems, .. }) = &tile.layout else {
            return Err(error(loc, op, "a shared buffer needs a '#tile.nvmma_shared' layout"));
        };
        let [rows, cols] = tile.shape[..] else {
            return Err(error(loc, op, format!("rank-{} shared buffers are not supported by the lowering", tile.shape.len())));
        };
        let swizzle = i64::from(*swizzle_bytes);
        if !matches!(swizzle, 0 | 32 | 64 | 128) {
            return Err(error(loc, op, format!("swizzle {swizzle} is not supported by the lowering")));
        }
        if *padding_elems != 0 {
            return Err(error(loc, op, "padded shared layouts are not supported by the lowering (TMA writes dense rows)"));
        }
        let geom = SmemGeom { rows, cols, elem: tile.elem, swizzle };
        if !geom.elem.bits().is_multiple_of(8) || geom.elem.bits() > 32 {
            return Err(error(loc, op, format!("'{}' buffers are not supported by the lowering", geom.elem.mnemonic())));
        }
        let row_bytes = cols * geom.elem_bytes();
        if geom.is_narrow() {
            return Ok(geom);
        }
        if row_bytes % geom.span() != 0 {
            return Err(error(
                loc,
                op,
                format!("a {row_bytes}-byte contiguous dimension is not a multiple of the {}-byte swizzle span", geom.span()),
            ));
        }
        if rows % 8 != 0 {
            return Err(error(loc, op, format!("{rows} rows is not a multiple of 8 (one swizzle atom)")));
        }
        Ok(geom)
    }

    pub fn elem_bytes(&self) -> i64 {
        i64::from(self.elem.bits() / 8)
    }

    /// Bytes of one column block's row: the swizzle width, or 16 unswizzled
    /// (the whole row when it is narrower: one dense block).
    pub fn span(&self) -> i64 {
        if self.is_narrow() {
            self.cols * self.elem_bytes()
        } else if self.swizzle == 0 {
            16
        } else {
            self.swizzle
        }
    }

    /// An unswizzled buffer whose rows are under 16 bytes (a block-scaled
    /// dot's scales): stored densely, row after row, any number of rows.
    /// Threads copy and read it; TMA and wgmma cannot (their rows are
    /// 16-byte multiples).
    pub fn is_narrow(&self) -> bool {
        self.swizzle == 0 && self.cols * self.elem_bytes() < MIN_TMA_ROW_BYTES
    }

    /// Elements of one column block's row (the TMA box's inner extent).
    pub fn block_cols(&self) -> i64 {
        self.span() / self.elem_bytes()
    }

    /// Number of column blocks (TMA boxes per stage).
    pub fn col_blocks(&self) -> i64 {
        self.cols / self.block_cols()
    }

    /// Bytes of one column block.
    pub fn block_bytes(&self) -> i64 {
        self.rows * self.span()
    }

    pub fn stage_bytes(&self) -> i64 {
        self.rows * self.cols * self.elem_bytes()
    }

    /// Byte offset of element (`row`, `col`) from the start of a stage,
    /// before swizzling. `col` must lie at a 16-byte boundary.
    pub fn offset_of(&self, row: i64, col: i64) -> i64 {
        let byte = col * self.elem_bytes();
        (byte / self.span()) * self.block_bytes() + row * self.span() + byte % self.span()
    }

    pub fn manifest_swizzle(&self) -> Swizzle {
        match self.swizzle {
            128 => Swizzle::B128,
            64 => Swizzle::B64,
            32 => Swizzle::B32,
            _ => Swizzle::None,
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Buffer {
    /// Byte offset in the dynamic shared memory.
    pub offset: i64,
    pub stages: i64,
    pub geom: SmemGeom,
}

#[derive(Clone, Debug)]
pub(crate) struct Barriers {
    pub offset: i64,
    pub count: i64,
    pub arrivals: i64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum DimSrc {
    Const(i64),
    Sym(String),
}

#[derive(Clone, Debug)]
pub(crate) struct Tensor {
    pub name: String,
    pub elem: ElemType,
    pub dims: Vec<DimSrc>,
    pub stored: bool,
    /// Stored by `nv.store_global`: the kernel takes its pointer.
    pub ptr: bool,
    /// Its last two dimensions are stored swapped, the second-last
    /// contiguous (`tile.contiguous` names it): the manifest declares it
    /// with those two dimensions swapped, row-major.
    pub column_major: bool,
}

impl Tensor {
    /// Its dimensions in memory order, outermost first: the last two
    /// swapped where it is column-major.
    pub fn stored_dims(&self) -> impl Iterator<Item = &DimSrc> {
        let mut dims: Vec<&DimSrc> = self.dims.iter().collect();
        if self.column_major {
            let n = dims.len();
            dims.swap(n - 2, n - 1);
        }
        dims.into_iter()
    }
}

/// One TMA descriptor parameter: a tensor, a box (outer to inner; extent 1
/// in the leading dimensions of a tensor of rank above 2), a swizzle, and
/// whether its rows are fitted to the tensor's at launch.
/// A `flat` one addresses the tensor as one dimension of all its elements
/// in memory order, its box one run of them (a column of a column-major
/// tensor).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TmaDesc {
    pub tensor: usize,
    pub box_dims: Vec<i64>,
    pub swizzle: i64,
    pub geom_swizzle: Swizzle,
    pub flat: bool,
    /// The box's rows stop at the tensor's (`nv.tma_load {fit_rows}`).
    pub fit_rows: bool,
    /// With `fit_rows`, the descriptor of the boxes that pass the tensor's
    /// last row, whose rows stop at the rows past the last whole box
    /// (`TmaParam::tail`).
    pub tail: bool,
}

pub(crate) struct Plan {
    pub num_warps: i64,
    pub buffers: HashMap<Value, Buffer>,
    pub barriers: HashMap<Value, Barriers>,
    pub smem_bytes: i64,
    pub tensors: Vec<Tensor>,
    pub tensor_of_arg: HashMap<Value, usize>,
    pub tma: Vec<TmaDesc>,
    /// Dimension symbols, in order of first appearance in the arguments:
    /// one i32 kernel parameter each.
    pub symbols: Vec<String>,
    /// The CTA's output tile (`block_m`, `block_n`): the stored tile, times
    /// the consumers along M (or along N, `columns`) in a warp-specialised
    /// kernel.
    pub store_tile: [i64; 2],
    /// The function has `grid = "sms"`: one CTA per SM, looping over tiles.
    pub persistent: bool,
    /// The output a cluster takes each turn of the persistent loop
    /// (`wave_tile`, from `tile-persistent`), for a launch on the fewest
    /// CTAs that keep the number of turns; `None` launches one CTA per SM.
    pub wave_tile: Option<[i64; 2]>,
    /// The function holds an `nv.warp_specialize`.
    pub warp_specialized: bool,
    /// CTAs per cluster along x, y, z (`cluster_dims`; `[1, 1, 1]` without).
    pub cluster: [i64; 3],
    /// The function has `raster_group = G` (`tile-rasterize`): a 1-D grid
    /// of one CTA per tile, which the kernel maps to tiles in groups of G
    /// tile rows.
    pub raster_group: Option<i64>,
    /// The output tile is stored into a column-major tensor (an operand-
    /// swapped GEMM's C^T, `tile-swap-operands`): the manifest's grid rule
    /// tiles the tensor in memory order, its rows the tile's columns.
    pub output_column_major: bool,
    /// CTAs along grid z for each output tile (`grid_z`, split-K's splits
    /// with a workspace reduction); 1 without.
    pub grid_z: i64,
    /// The workspace the runtime allocates for the kernel, if it takes one.
    pub workspace: Option<Workspace>,
    /// The kernel waits for the previous grid before touching memory
    /// (`nv.grid_dependency_wait`), so it may be launched with programmatic
    /// dependent launch.
    pub programmatic_launch: bool,
}

/// What a kernel's workspace (its last parameter) is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Workspace {
    /// `tile.reduce_splits` of this many splits, added in shares where
    /// `spread`: a region for each output tile, sized once the kernel's
    /// slot is lowered ([`Plan::manifest`]).
    SplitK { splits: i64, spread: bool },
    /// Stream-K's hand-over: a region for each CTA of the persistent grid,
    /// sized once the kernel's slots are lowered ([`Plan::manifest`]).
    StreamK,
}

/// Bytes before a split-K region's slots: the counter, padded so that the
/// slots' vector accesses stay 16-byte aligned.
pub(crate) const SPLIT_K_COUNTER_BYTES: i64 = 16;

/// Bytes of a stream-K slot's flags: one i32 per holder group, padded so
/// that the next slot's vectors stay 16-byte aligned.
pub(crate) const STREAM_K_FLAG_BYTES: i64 = 16;

impl Workspace {
    /// The bytes of a split-K tile's region for `splits` slots of
    /// `slot_bytes`, and one more for the shares' sums where `spread`.
    pub fn split_k_region_bytes(splits: i64, spread: bool, slot_bytes: i64) -> i64 {
        SPLIT_K_COUNTER_BYTES + (splits + i64::from(spread)) * slot_bytes
    }

    /// The bytes of a stream-K CTA's region, for slots of `slot_bytes`.
    pub fn stream_k_region_bytes(slot_bytes: i64) -> i64 {
        slot_bytes + STREAM_K_FLAG_BYTES
    }
}

impl Plan {
    pub fn new(f: &Function) -> Result<Plan, Diagnostic> {
        let body = &f.body;
        let num_warps = match f.attrs.get("num_warps") {
            None => 4,
            Some(a) => a.as_int().ok_or_else(|| Diagnostic::error(f.loc.clone(), "'num_warps' must be an integer"))?,
        };
        if num_warps <= 0 || num_warps % 4 != 0 || num_warps > 32 {
            return Err(Diagnostic::error(
                f.loc.clone(),
                format!("num_warps = {num_warps} is not supported by the lowering (a multiple of 4 up to 32: whole warpgroups)"),
            ));
        }

        let persistent = match f.attrs.get("grid") {
            None => false,
            Some(a) => match a.as_str() {
                Some("tiles") => false,
                Some("sms") => true,
                _ => return Err(Diagnostic::error(f.loc.clone(), "'grid' must be \"tiles\" or \"sms\"")),
            },
        };

        let wave_tile = match f.attrs.get("wave_tile") {
            None => None,
            Some(a) => match a.as_ints().as_deref() {
                Some(&[rows, cols]) if rows > 0 && cols > 0 && persistent => Some([rows, cols]),
                _ => return Err(Diagnostic::error(f.loc.clone(), "'wave_tile' must be two positive integers, in a kernel with grid = \"sms\"")),
            },
        };
        let cluster = cluster_dims(f)?;
        let raster_group = match f.attrs.get("raster_group") {
            None => None,
            Some(a) => match a.as_int() {
                Some(g) if g >= 1 && !persistent => Some(g),
                _ => return Err(Diagnostic::error(f.loc.clone(), "'raster_group' must be a positive integer, in a kernel with one CTA per tile (no grid = \"sms\")")),
            },
        };
        let grid_z = match f.attrs.get("grid_z") {
            None => 1,
            Some(a) => match a.as_int() {
                Some(z) if (1..=65535).contains(&z) && !persistent && cluster[2] == 1 => z,
                _ => return Err(Diagnostic::error(f.loc.clone(), "'grid_z' must be an integer from 1 to 65535, in a kernel with one CTA per tile and no cluster along z")),
            },
        };
        let mut tensors = Vec::new();
        let mut tensor_of_arg = HashMap::new();
        let mut symbols: Vec<String> = Vec::new();
        for (i, &arg) in f.args().iter().enumerate() {
            let Type::Ref(r) = body.value_type(arg) else {
                return Err(Diagnostic::error(
                    f.loc.clone(),
                    format!("argument {i}: only '!tile.ref' arguments are supported by the lowering"),
                ));
            };
            let name = body.values[arg].name_hint.clone().filter(|n| tilec_artifact::is_identifier(n)).unwrap_or(format!("arg{i}"));
            let given = f.arg_attrs.get(i).and_then(|a| a.get("tile.dims")).and_then(|a| a.as_strings());
            if let Some(g) = &given {
                if g.len() != r.shape.len() {
                    return Err(Diagnostic::error(
                        f.loc.clone(),
                        format!("argument %{name}: tile.dims names {} dimensions of a rank-{} tensor", g.len(), r.shape.len()),
                    ));
                }
            }
            let mut dims = Vec::new();
            for (d, size) in r.shape.iter().enumerate() {
                let dim = match (size, &given) {
                    (Some(c), _) => DimSrc::Const(*c),
                    (None, Some(g)) if tilec_artifact::is_identifier(g[d]) => DimSrc::Sym(g[d].to_string()),
                    (None, _) => DimSrc::Sym(format!("{name}_{d}")),
                };
                if let DimSrc::Sym(s) = &dim {
                    if !symbols.contains(s) {
                        symbols.push(s.clone());
                    }
                }
                dims.push(dim);
            }
            let column_major = f.is_column_major(i);
            tensor_of_arg.insert(arg, tensors.len());
            tensors.push(Tensor { name, elem: r.elem, dims, stored: false, ptr: false, column_major });
        }

        let mut plan = Plan {
            num_warps,
            buffers: HashMap::new(),
            barriers: HashMap::new(),
            smem_bytes: 0,
            tensors,
            tensor_of_arg,
            tma: Vec::new(),
            symbols,
            store_tile: [0, 0],
            persistent,
            wave_tile,
            warp_specialized: false,
            cluster,
            raster_group,
            output_column_major: false,
            grid_z,
            workspace: None,
            programmatic_launch: false,
        };
        let mut cursor = 0i64;
        let mut bar_order = Vec::new();
        // The output tile's shape, which sets the grid: the tile stored
        // directly, or the tile written into a TMA store's buffer (a chunked
        // epilogue's box is narrower than the tile it stores).
        let mut store = None;
        let mut store_box = None;
        let mut consumers = 1;
        let mut consumers_share_columns = false;
        let tma_filled: HashSet<Value> = body.walk_region(f.region).into_iter().filter_map(|op| nv::TmaLoad::of(body, op)).map(|l| l.buffer(body)).collect();
        for op in body.walk_region(f.region) {
            let data = &body.ops[op];
            let name = data.def.name;
            let malformed = || error(&data.loc, name, "is malformed");
            match data.opcode() {
                Opcode::TileLoad | Opcode::TileStore | Opcode::TileDot | Opcode::TileDotScaled | Opcode::TileConvertLayout => {
                    return Err(error(
                        &data.loc,
                        name,
                        "tile-level memory, dot and layout ops are not supported by the lowering (run tile-lower-to-nv first)",
                    ));
                }
                Opcode::NvAllocSmem => {
                    let result = nv::AllocSmem::of(body, op).ok_or_else(malformed)?.result(body);
                    let ty = body.value_type(result);
                    let geom = SmemGeom::from_type(ty, &data.loc, name)?;
                    let stages = ty.as_smem().map_or(1, |s| s.stages);
                    let alignment = match (geom.is_narrow(), tma_filled.contains(&result)) {
                        (false, _) => BUFFER_ALIGN,
                        (true, true) => TMA_SHARED_ALIGN,
                        (true, false) => NARROW_ALIGN,
                    };
                    let offset = align(cursor, alignment);
                    cursor = offset + stages * geom.stage_bytes();
                    plan.buffers.insert(result, Buffer { offset, stages, geom });
                }
                Opcode::NvAllocMbarriers => {
                    let alloc = nv::AllocMbarriers::of(body, op).ok_or_else(malformed)?;
                    let result = alloc.result(body);
                    let Type::MBarrier(count) = body.value_type(result) else {
                        return Err(error(&data.loc, name, "expected '!nv.mbarrier'"));
                    };
                    bar_order.push(result);
                    plan.barriers.insert(result, Barriers { offset: 0, count: *count, arrivals: alloc.arrivals(body) });
                }
                Opcode::NvTmaLoad => {
                    let o = nv::TmaLoad::of(body, op).ok_or_else(malformed)?;
                    let tensor = tma_source(&plan, o.tensor(body), o.coords(body).len(), &data.loc, name)?;
                    let ty = body.value_type(o.buffer(body));
                    if SmemGeom::from_type(ty, &data.loc, name)?.is_narrow() {
                        let rows = plan.column_run(tensor, ty, &data.loc, name)?;
                        plan.add_flat_tma(tensor, rows);
                    } else {
                        let geom = tma_geom(ty, &data.loc, name)?;
                        plan.row_major(tensor, &data.loc, name)?;
                        plan.add_tma(tensor, &geom, o.coords(body).len(), o.fit_rows(body), false);
                        // A fitted box that lands in one CTA may take the tail descriptor
                        // (a multicast box's shares keep the box they split).
                        if o.fit_rows(body) && !o.multicast(body) {
                            plan.add_tma(tensor, &geom, o.coords(body).len(), true, true);
                        }
                    }
                }
                Opcode::NvTmaPrefetch => {
                    // The box and descriptor of the loads it runs ahead of.
                    let o = nv::TmaPrefetch::of(body, op).ok_or_else(malformed)?;
                    let tensor = tma_source(&plan, o.tensor(body), o.coords(body).len(), &data.loc, name)?;
                    let geom = tma_geom(body.value_type(o.buffer(body)), &data.loc, name)?;
                    plan.row_major(tensor, &data.loc, name)?;
                    plan.add_tma(tensor, &geom, o.coords(body).len(), o.fit_rows(body), false);
                }
                Opcode::TileReduceSplits => {
                    let reduce = tile::ReduceSplits::of(body, op).ok_or_else(malformed)?;
                    let splits = reduce.splits(body);
                    if splits != grid_z {
                        return Err(error(&data.loc, name, format!("adds {splits} splits, but the grid has {grid_z} CTAs along z ('grid_z')")));
                    }
                    if plan.workspace.is_some() {
                        return Err(error(&data.loc, name, "is a second reduction through the workspace; it has one region per tile"));
                    }
                    plan.workspace = Some(Workspace::SplitK { splits, spread: reduce.spread(body) });
                }
                Opcode::TileParkPartial | Opcode::TileAddParked => {
                    if matches!(plan.workspace, Some(Workspace::SplitK { .. })) {
                        return Err(error(&data.loc, name, "hands a stream-K piece over in a kernel whose workspace split-K uses"));
                    }
                    plan.workspace = Some(Workspace::StreamK);
                }
                Opcode::NvWarpSpecialize => {
                    let ws = nv::WarpSpecialize::of(body, op).ok_or_else(malformed)?;
                    consumers = ws.consumers(body);
                    consumers_share_columns = ws.columns(body);
                    if num_warps != 4 * (1 + consumers) {
                        return Err(error(
                            &data.loc,
                            name,
                            format!("a producer and {consumers} consumer warpgroup(s) need num_warps = {}, not {num_warps}", 4 * (1 + consumers)),
                        ));
                    }
                    plan.warp_specialized = true;
                }
                Opcode::NvStoreGlobal => {
                    let st = nv::StoreGlobal::of(body, op).ok_or_else(malformed)?;
                    let tensor = *plan
                        .tensor_of_arg
                        .get(&st.tensor(body))
                        .ok_or_else(|| error(&data.loc, name, "the destination must be a kernel argument"))?;
                    // One value a group is stored element by element, in either
                    // order; whole tiles value by value too, so a column-major
                    // output takes them transposed.
                    if st.group(body).is_none() {
                        plan.output_column_major = plan.tensors[tensor].column_major;
                    }
                    plan.tensors[tensor].stored = true;
                    plan.tensors[tensor].ptr = true;
                    let tile = body.value_type(st.value(body)).as_tile().expect("verified");
                    if tile.shape.len() != 2 || !(2..=3).contains(&st.coords(body).len()) {
                        return Err(error(&data.loc, name, "only rank-2 tiles stored into rank-2 and rank-3 tensors are supported by the lowering"));
                    }
                    let shape = [tile.shape[0], tile.shape[1]];
                    if store.is_some_and(|s| s != shape) {
                        return Err(error(&data.loc, name, "all stores must have one tile shape (it sets the grid)"));
                    }
                    store = Some(shape);
                }
                Opcode::TileLoadScalar => {
                    let load = tile::LoadScalar::of(body, op).ok_or_else(malformed)?;
                    if !matches!(body.value_type(load.result(body)).elem(), ElemType::I32) {
                        return Err(error(&data.loc, name, "only i32 elements are loaded as scalars by the lowering"));
                    }
                    plan.read_by_threads(load.tensor(body), &data.loc, name)?;
                }
                Opcode::TileLoadBroadcast => {
                    let load = tile::LoadBroadcast::of(body, op).ok_or_else(malformed)?;
                    plan.read_by_threads(load.tensor(body), &data.loc, name)?;
                }
                Opcode::NvLoadGlobal => {
                    let load = nv::LoadGlobal::of(body, op).ok_or_else(malformed)?;
                    if !(2..=3).contains(&load.coords(body).len()) {
                        return Err(error(&data.loc, name, "only loads from rank-2 and rank-3 tensors are supported by the lowering"));
                    }
                    plan.read_by_threads(load.tensor(body), &data.loc, name)?;
                }
                Opcode::NvCopyAsync => {
                    let copy = nv::CopyAsync::of(body, op).ok_or_else(malformed)?;
                    plan.read_by_threads(copy.tensor(body), &data.loc, name)?;
                }
                Opcode::NvGridDependencyWait => plan.programmatic_launch = true,
                Opcode::NvTmaStore => {
                    let st = nv::TmaStore::of(body, op).ok_or_else(malformed)?;
                    let geom = tma_geom(body.value_type(st.buffer(body)), &data.loc, name)?;
                    let tensor = *plan
                        .tensor_of_arg
                        .get(&st.tensor(body))
                        .ok_or_else(|| error(&data.loc, name, "the destination must be a kernel argument"))?;
                    if !(2..=3).contains(&st.coords(body).len()) {
                        return Err(error(&data.loc, name, "only rank-2 and rank-3 TMA stores are supported by the lowering"));
                    }
                    plan.row_major(tensor, &data.loc, name)?;
                    plan.tensors[tensor].stored = true;
                    plan.add_tma(tensor, &geom, st.coords(body).len(), false, false);
                    store_box.get_or_insert([geom.rows, geom.cols]);
                }
                Opcode::NvStoreShared => {
                    let st = nv::StoreShared::of(body, op).ok_or_else(malformed)?;
                    let tile = body.value_type(st.value(body)).as_tile().ok_or_else(malformed)?;
                    let &[rows, cols] = &tile.shape[..] else {
                        return Err(error(&data.loc, name, "only rank-2 tiles are stored into shared memory by the lowering"));
                    };
                    let shape = [rows, cols];
                    if store.is_some_and(|s| s != shape) {
                        return Err(error(&data.loc, name, "all stores must have one tile shape (it sets the grid)"));
                    }
                    store = Some(shape);
                }
                _ => {}
            }
        }
        cursor = align(cursor, MBARRIER_BYTES);
        for bar in bar_order {
            let b = plan.barriers.get_mut(&bar).expect("recorded");
            b.offset = cursor;
            cursor += b.count * MBARRIER_BYTES;
        }
        plan.smem_bytes = cursor;
        if plan.smem_bytes > i64::from(tilec_artifact::MAX_DYNAMIC_SMEM_SM90) {
            return Err(Diagnostic::error(
                f.loc.clone(),
                format!("the kernel needs {} bytes of shared memory, more than sm_90's {}", plan.smem_bytes, tilec_artifact::MAX_DYNAMIC_SMEM_SM90),
            ));
        }
        let [rows, cols] = store.or(store_box).ok_or_else(|| {
            Diagnostic::error(f.loc.clone(), "the lowering needs an 'nv.store_global' or 'nv.tma_store' of the output tile (it sets the grid)")
        })?;
        // Consumer warpgroups split the CTA's tile along M, each storing its
        // rows, or along N, each storing its columns.
        plan.store_tile = if consumers_share_columns { [rows, cols * consumers] } else { [rows * consumers, cols] };
        if plan.grid_transposed() && plan.cluster[..2] != [1, 1] {
            return Err(Diagnostic::error(
                f.loc.clone(),
                "clusters along x or y over a column-major output are not supported by the lowering (its grid walks the tensor's rows along x, the tile's columns)",
            ));
        }
        Ok(plan)
    }

    /// The tile grid's x walks the output tensor's rows in memory, which are
    /// the stored tile's columns: a two-dimensional grid of one CTA per tile
    /// over a column-major output. The kernel reads its tile coordinates
    /// with x and y exchanged.
    pub fn grid_transposed(&self) -> bool {
        self.output_column_major && !self.persistent && self.raster_group.is_none()
    }

    /// The output tile in the tensor's memory order: the stored tile's rows
    /// and columns, exchanged where the output is column-major.
    fn memory_tile(&self, tile: [i64; 2]) -> [i64; 2] {
        if self.output_column_major {
            [tile[1], tile[0]]
        } else {
            tile
        }
    }

    /// The TMA descriptor of `tensor` with `geom`'s box and swizzle, once
    /// however many loads and stores use it.
    /// The kernel takes a pointer to `tensor`, which threads read with plain
    /// loads; it must be a kernel argument.
    fn read_by_threads(&mut self, tensor: Value, loc: &Location, op: &str) -> Result<(), Diagnostic> {
        let t = *self.tensor_of_arg.get(&tensor).ok_or_else(|| error(loc, op, "the source must be a kernel argument"))?;
        self.tensors[t].ptr = true;
        Ok(())
    }

    /// TMA copies and fragment stores address row-major tensors only; a
    /// tensor stored with its second-last dimension contiguous is read
    /// element by element (scales), or written a value a group of columns.
    fn row_major(&self, tensor: usize, loc: &Location, op: &str) -> Result<(), Diagnostic> {
        let t = &self.tensors[tensor];
        if t.column_major {
            return Err(error(
                loc,
                op,
                format!("tensor %{} is stored with its second-last dimension contiguous (tile.contiguous): whole tiles are copied and stored to row-major tensors only; only tiles read element by element, like scales, may come from it", t.name),
            ));
        }
        Ok(())
    }

    /// The index in `tma` of `tensor`'s planned descriptor whose boxes are
    /// `box_dims` with `swizzle`, flat or not, fitted or not, tail or not.
    pub(crate) fn tma_index(&self, tensor: usize, box_dims: &[i64], swizzle: i64, flat: bool, fit_rows: bool, tail: bool) -> Option<usize> {
        self.tma.iter().position(|d| d.tensor == tensor && d.box_dims == box_dims && d.swizzle == swizzle && d.flat == flat && d.fit_rows == fit_rows && d.tail == tail)
    }

    /// The descriptor of `tensor`'s boxes for buffers of `geom`; with
    /// `tail`, the one of fitted boxes that pass the tensor's last row
    /// ([`TmaDesc::tail`]).
    fn add_tma(&mut self, tensor: usize, geom: &SmemGeom, rank: usize, fit_rows: bool, tail: bool) {
        let desc = TmaDesc { tensor, box_dims: tma_box(geom.rows, geom, rank), swizzle: geom.swizzle, geom_swizzle: geom.manifest_swizzle(), flat: false, fit_rows, tail };
        if !self.tma.contains(&desc) {
            self.tma.push(desc);
        }
    }

    /// The rows of the narrow buffer of type `ty` that a TMA load fills
    /// from `tensor`: one flat box, so `tensor` must be column-major and
    /// the buffer's tile a box [`flat_box_fault`] accepts.
    fn column_run(&self, tensor: usize, ty: &Type, loc: &Location, op: &str) -> Result<i64, Diagnostic> {
        let tile = &ty.as_smem().ok_or_else(|| error(loc, op, "expected a shared buffer"))?.tile;
        let t = &self.tensors[tensor];
        if !t.column_major {
            let msg = format!("TMA copies rows of 16 bytes or more, or a column of a column-major tensor as one run, and %{} is row-major (copy narrow tiles with nv.copy_async)", t.name);
            return Err(error(loc, op, msg));
        }
        if let Some(fault) = flat_box_fault(tile) {
            return Err(error(loc, op, format!("the narrow buffer is not one run of %{}: {fault}", t.name)));
        }
        Ok(tile.shape[0])
    }

    /// The flat descriptor of `tensor` whose box is a run of `rows` elements.
    fn add_flat_tma(&mut self, tensor: usize, rows: i64) {
        let desc = TmaDesc { tensor, box_dims: vec![rows], swizzle: 0, geom_swizzle: Swizzle::None, flat: true, fit_rows: false, tail: false };
        if !self.tma.contains(&desc) {
            self.tma.push(desc);
        }
    }

    pub fn threads(&self) -> i64 {
        32 * self.num_warps
    }

    /// The manifest describing the kernel the lowering writes for `target`;
    /// `workspace_slot_bytes` is the size of the workspace slot the kernel
    /// lowered, if it parks partial tiles (split-K or stream-K).
    pub fn manifest(&self, f: &Function, target: &Target, workspace_slot_bytes: Option<i64>) -> Result<Manifest, Diagnostic> {
        let mut tensors = Vec::new();
        for t in &self.tensors {
            tensors.push(TensorDecl {
                name: t.name.clone(),
                dtype: dtype(t.elem).ok_or_else(|| {
                    Diagnostic::error(f.loc.clone(), format!("tensor %{}: '{}' tensors have no manifest type", t.name, t.elem.mnemonic()))
                })?,
                shape: t.stored_dims().map(|d| match d {
                    DimSrc::Const(c) => Dim::Const(*c as u64),
                    DimSrc::Sym(s) => Dim::Sym(s.clone()),
                }).collect(),
                role: if t.stored { Role::Output } else { Role::Input },
            });
        }
        let mut params = Vec::new();
        for d in &self.tma {
            let t = &tensors[d.tensor];
            params.push(Param::Tma(TmaParam {
                tensor: t.name.clone(),
                dtype: t.dtype,
                box_dims: d.box_dims.iter().map(|&b| b as u32).collect(),
                flat: d.flat,
                fit_rows: d.fit_rows,
                tail: d.tail,
                swizzle: d.geom_swizzle,
                l2_promotion: L2Promotion::B128,
                oob_fill: OobFill::Zero,
                interleave: Interleave::None,
            }));
        }
        for t in self.tensors.iter().filter(|t| t.ptr) {
            params.push(Param::Ptr { tensor: t.name.clone() });
        }
        for s in &self.symbols {
            params.push(Param::Scalar { ty: ScalarType::I32, source: ScalarSource::Symbol(s.clone()) });
        }
        let region_bytes = match (self.workspace, workspace_slot_bytes) {
            (Some(Workspace::SplitK { splits, spread }), Some(slot_bytes)) => Some(Workspace::split_k_region_bytes(splits, spread, slot_bytes)),
            (Some(Workspace::StreamK), Some(slot_bytes)) => Some(Workspace::stream_k_region_bytes(slot_bytes)),
            (Some(_), None) => return Err(Diagnostic::error(f.loc.clone(), "the kernel parks partial tiles in a workspace but lowered no slot for them")),
            (None, _) => None,
        };
        if let Some(bytes) = region_bytes {
            params.push(Param::Workspace { bytes_per_tile: bytes as u64 });
        }
        Ok(Manifest {
            format_version: FORMAT_VERSION,
            kernel_name: f.name.clone(),
            entry: f.name.clone(),
            target: target.sm.into(),
            gpu: Some(target.name.into()),
            config: None,
            epilogue: None,
            block: [self.threads() as u32, 1, 1],
            cluster: self.cluster.map(|d| d as u32),
            grid: if self.persistent {
                GridRule::Sms { ctas_per_sm: 1, wave_tile: self.wave_tile.map(|t| self.memory_tile(t).map(|d| d as u32)) }
            } else {
                let [block_m, block_n] = self.memory_tile(self.store_tile);
                GridRule::Tiles {
                    block_m: block_m as u32,
                    block_n: block_n as u32,
                    group_m: self.raster_group.map(|g| g as u32),
                    splits: (self.grid_z > 1).then_some(self.grid_z as u32),
                }
            },
            dynamic_smem_bytes: self.smem_bytes as u32,
            programmatic_launch: self.programmatic_launch,
            tensors,
            params,
        })
    }
}

/// The function's `cluster_dims = [x, y, z]`: CTAs per cluster, at most 8
/// in all (the portable limit); `[1, 1, 1]` without the attribute.
fn cluster_dims(f: &Function) -> Result<[i64; 3], Diagnostic> {
    let Some(attr) = f.attrs.get("cluster_dims") else { return Ok([1, 1, 1]) };
    let bad = || Diagnostic::error(f.loc.clone(), "'cluster_dims' must be three positive integers with a product of at most 8");
    let dims = attr.as_ints().ok_or_else(bad)?;
    match dims[..] {
        [x, y, z] if x > 0 && y > 0 && z > 0 && x * y * z <= 8 => Ok([x, y, z]),
        _ => Err(bad()),
    }
}

impl Plan {
    /// CTAs per cluster (1 without a cluster launch).
    pub fn cluster_size(&self) -> i64 {
        self.cluster.iter().product()
    }
}

/// The planned tensor a TMA copy of `rank` coordinates reads: a kernel
/// argument of rank 2 or 3, the ranks the lowering copies.
fn tma_source(plan: &Plan, tensor: Value, rank: usize, loc: &Location, op: &str) -> Result<usize, Diagnostic> {
    let tensor = *plan.tensor_of_arg.get(&tensor).ok_or_else(|| error(loc, op, "the source must be a kernel argument"))?;
    if !(2..=3).contains(&rank) {
        return Err(error(loc, op, "only rank-2 and rank-3 TMA copies are supported by the lowering"));
    }
    Ok(tensor)
}

/// The geometry of a buffer a TMA copy fills or drains: its rows must be
/// 16-byte multiples.
fn tma_geom(ty: &Type, loc: &Location, op: &str) -> Result<SmemGeom, Diagnostic> {
    let geom = SmemGeom::from_type(ty, loc, op)?;
    if geom.is_narrow() {
        return Err(error(loc, op, format!("TMA copies rows of 16 bytes or more, not {} (copy narrow tiles with nv.copy_async)", geom.span())));
    }
    Ok(geom)
}

pub(crate) fn align(x: i64, a: i64) -> i64 {
    (x + a - 1) / a * a
}

/// The TMA box (outer to inner) that copies `rows` rows of one column block
/// of `geom` from a rank-`rank` tensor: extent 1 in the leading dimensions.
pub(crate) fn tma_box(rows: i64, geom: &SmemGeom, rank: usize) -> Vec<i64> {
    let mut dims = vec![1; rank - 2];
    dims.extend([rows, geom.block_cols()]);
    dims
}

pub(crate) fn dtype(e: ElemType) -> Option<DType> {
    Some(match e {
        ElemType::BF16 => DType::Bf16,
        ElemType::F16 => DType::F16,
        ElemType::F32 => DType::F32,
        ElemType::F8E4M3FN => DType::F8e4m3,
        ElemType::I32 => DType::I32,
        ElemType::I64 => DType::I64,
        ElemType::I1 | ElemType::Index => return None,
    })
}

#[cfg(test)]
mod tests {
    /// The box limit the IR verifier keeps is the one the runtime checks a
    /// manifest's TMA descriptors against.
    #[test]
    fn tma_box_limits_agree() {
        assert_eq!(tilec_dialects::nv::memory::MAX_TMA_BOX, i64::from(tilec_artifact::MAX_TMA_BOX_DIM));
    }
}
