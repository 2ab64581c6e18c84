//! The op-by-op walk: each tile/nv op of the function body becomes MLIR
//! text (`arith`, `scf`, `gpu`, `llvm`, `nvvm`), in order.

use super::elementwise::{self, Expr};
use super::emitter::{float_literal, mlir_type, Emitter};
use super::fragment::{self, Frag, FragGeom, StorePair, ThreadCoords};
use super::ldmatrix::{self, AFrag, AFragGeom};
use super::plan::{error, tma_box, DimSrc, Plan};
use super::smem_rows::{self, SmemRef};
use super::scales::{self, ColumnBlocks, Part, RowOffset, ScaleLayout, Scales};
use super::{cluster, holders, math, nvgpu, reduce, roles, split_k, store, stream_k, tma, wgmma};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;
use tilec_dialects::ir::{Block, Body, Op};
use tilec_dialects::registry::Opcode;
use tilec_dialects::nv::memory::{COPYING_WARP, TMA_GLOBAL_ALIGN};
use tilec_dialects::tile::dot::SCALE_BLOCK_N;
use tilec_dialects::{nv, tile};
use tilec_dialects::{Attribute, Diagnostic, ElemType, Function, Layout, Type, Value};
use tilec_target::Target;

/// What a tile/nv value became.
#[derive(Clone, Debug)]
enum Lv {
    /// An SSA value of `mlir_type(elem)`.
    Scalar { name: String, elem: ElemType },
    /// A register tile with an MMA layout.
    Frag(Frag),
    /// A register tile with an MMA layout that element-wise ops make, not
    /// yet evaluated (`elementwise`): made a `Frag` where an op that is not
    /// element-wise reads it.
    Lazy(Lazy),
    /// A register tile of wgmma's A (`nv.load_fragment`).
    AFrag(AFrag),
    /// A kernel argument tensor (index into `Plan::tensors`).
    Ref(usize),
    /// A shared buffer or a row window of one.
    Smem(SmemRef),
    /// An mbarrier group (key of `Plan::barriers`).
    Bars(Value),
    /// A block-scaled dot's row or block scales (`nv.load_global`).
    Scales(Scales),
}

/// An element-wise expression and where it was made: the block of the op
/// that made it and the emitter's depth there. Evaluated where the same
/// block reads it, at that depth, it replaces the expression for every
/// later reader; evaluated deeper (inside a loop), only for that reader.
#[derive(Clone, Debug)]
struct Lazy {
    expr: Rc<Expr>,
    geom: FragGeom,
    block: Option<Block>,
    depth: usize,
}

/// Per-thread values computed once at kernel entry.
struct Thread {
    tid: String,
    is_leader: String,
    smem: String,
    /// (shared address of the dynamic allocation & 0x3FFFF) >> 4, as i64.
    smem16: String,
    /// The CTA-wide warpgroup index (`tid / 128`), with more than one.
    wg: Option<String>,
}

/// Which threads run the ops being lowered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// Every thread of the CTA.
    Cta,
    /// Warpgroup 0 of a warp-specialised kernel.
    Producer,
    /// One consumer warpgroup of a warp-specialised kernel; its register
    /// tiles are its own (`warps_per_cta = [4, 1]`).
    Consumer,
}

/// `tid / 128`, the warpgroup of thread `tid`, read from the warp's lane 0.
/// The shuffle makes the index warp-uniform for ptxas: what it feeds (the
/// wgmma descriptors, shared-memory offsets, the role branch) then lives in
/// uniform registers instead of being recomputed per thread and moved over
/// with `R2UR` before every wgmma (docs/evidence.md, lower/src/kernel.rs,
/// warpgroup).
fn warpgroup(em: &mut Emitter, tid: &str) -> String {
    let c7 = em.i32(7);
    let per_thread = em.binop("tid_wg", "arith.shrui", tid, &c7, "i32");
    let all_lanes = em.i32(-1);
    let lane0 = em.i32(0);
    let clamp = em.i32(31);
    em.assign("wg", format!("nvvm.shfl.sync idx {all_lanes}, {per_thread}, {lane0}, {clamp} : i32 -> i32"))
}

/// The thread's first row and column in each wgmma accumulator fragment of
/// its warpgroup (from `tid % 128`), and with `warpgroups` > 1 sharing a
/// tile, its warpgroup.
fn thread_coords(em: &mut Emitter, tid: &str, warpgroups: i64) -> ThreadCoords {
    let wg = (warpgroups > 1).then(|| warpgroup(em, tid));
    let c5 = em.i32(5);
    let c3 = em.i32(3);
    let warp_all = em.binop("warp", "arith.shrui", tid, &c5, "i32");
    let warp = em.binop("warp", "arith.andi", &warp_all, &c3, "i32");
    let c31 = em.i32(31);
    let lane = em.binop("lane", "arith.andi", tid, &c31, "i32");
    let c2 = em.i32(2);
    let g = em.binop("g", "arith.shrui", &lane, &c2, "i32");
    let q = em.binop("q", "arith.andi", &lane, &c3, "i32");
    let c16 = em.i32(16);
    let warp_rows = em.binop("warp_rows", "arith.muli", &warp, &c16, "i32");
    let row = em.binop("frag_row", "arith.addi", &warp_rows, &g, "i32");
    let col = em.binop("frag_col", "arith.muli", &q, &c2, "i32");
    ThreadCoords { wg, row, col }
}

/// The MLIR text of the kernel function and what it needs around it.
pub(crate) struct KernelText {
    pub func: String,
    pub emitter_types: std::collections::BTreeSet<(&'static str, usize)>,
    /// Element types needing the store helper.
    pub store_helpers: Vec<StorePair>,
    /// The bytes of a workspace slot (split-K's or stream-K's), where the kernel parks partial tiles.
    pub workspace_slot_bytes: Option<i64>,
}

/// A row-major matrix in global memory and a tile origin in it, as the
/// per-thread loads and stores address it (names of emitted values).
struct Matrix {
    ptr: String,
    row0: String,
    col0: String,
    rows: String,
    cols: String,
    column_major: bool,
}

impl Matrix {
    /// The matrix as the scale reads and copies take it.
    fn tile(&self) -> scales::GlobalTile<'_> {
        scales::GlobalTile { ptr: &self.ptr, row0: &self.row0, col0: &self.col0, rows: &self.rows, cols: &self.cols, column_major: self.column_major }
    }
}

pub(crate) struct Lowerer<'a> {
    f: &'a Function,
    plan: &'a Plan,
    em: Emitter,
    vals: HashMap<Value, Lv>,
    thread: Option<Thread>,
    tma_args: Vec<String>,
    /// The TMA descriptor parameters as `nvgpu` takes them, in `tma_args` order.
    descriptors: Vec<tma::Descriptor>,
    /// The fitted loads whose stage's `expect_tx` counted them by the box
    /// they take, the full one or the tail one (`TmaDesc::tail`), so that
    /// they pick their descriptor by the same test ([`Lowerer::select_tail`]).
    tail_boxes: HashSet<Op>,
    /// Each mbarrier group (key of `Plan::barriers`) as an `!nvgpu.mbarrier.group`.
    groups: HashMap<Value, String>,
    ptr_args: HashMap<usize, String>,
    dim_args: HashMap<String, String>,
    store_helpers: BTreeMap<String, StorePair>,
    role: Role,
    /// Registers a thread of the current role may hold: the hardware's 255,
    /// or the consumers' `setmaxnreg` budget in a warp-specialised kernel.
    reg_budget: i64,
    /// Column offsets of block-scaled promotions fixed by the case of a
    /// loop lowered once per offset ([`Lowerer::lower_for`]).
    known_offsets: HashMap<Value, i64>,
    /// The consumers of the `nv.warp_specialize` being lowered take turns
    /// at whole tiles (`alternate`) instead of sharing each tile's rows.
    alternating: bool,
    /// The bytes of the stream-K workspace slot the kernel parks and adds (one size for all its hand-overs).
    workspace_slot_bytes: Option<i64>,
    /// The consumer index (`wg - 1`, i32) while a consumer region is lowered.
    consumer: Option<String>,
    /// The workspace parameter, when the kernel takes one (`tile.reduce_splits`).
    workspace_arg: Option<String>,
    /// The SMs of the GPU the kernel is for: a grid of at most this many
    /// CTAs is resident at once.
    sms: i64,
    /// Tiles that splits added in shares store in shares (`tile.reduce_splits`
    /// with `spread`, [`Lowerer::shares_storable`]), by their first chunk's
    /// name: the vectors of each thread's tile this split stores.
    stored_shares: HashMap<String, (String, String)>,
}

/// Registers per thread a kernel needs beside its register tiles (addresses,
/// loop state, barrier phases): a tile that leaves fewer spills.
const RESERVED_REGS: i64 = 24;
/// Registers a tile read in the epilogue leaves free, beside the f32
/// accumulator of its shape and its own packed values, for the stores'
/// addresses and the loop state, when it is read all at once (a residual:
/// `lower_load_global`); with fewer it is read pair by pair where stored.
const EAGER_READ_MARGIN: i64 = 64;

/// The most registers a thread can have without `setmaxnreg`.
const MAX_REGS: i64 = 255;

/// How many ops of integer arithmetic deep [`Lowerer::scalar_ahead`] lowers
/// a TMA load's first row ahead of where it stands.
const SCALAR_AHEAD_DEPTH: usize = 4;

/// A tile program location as MLIR writes it, `loc("file":line:col)`;
/// `None` for an unknown location (made by a pass without one).
fn mlir_loc(loc: &tilec_dialects::Location) -> Option<String> {
    (loc.line > 0).then(|| format!("loc({:?}:{}:{})", &*loc.file, loc.line, loc.col))
}

/// The MLIR op of a tile arithmetic op or cast.
fn arith_op(opcode: Opcode) -> &'static str {
    match opcode {
        Opcode::TileAddi => "arith.addi",
        Opcode::TileSubi => "arith.subi",
        Opcode::TileMuli => "arith.muli",
        Opcode::TileDivsi => "arith.divsi",
        Opcode::TileRemsi => "arith.remsi",
        Opcode::TileCeildivsi => "arith.ceildivsi",
        Opcode::TileMinsi => "arith.minsi",
        Opcode::TileMaxsi => "arith.maxsi",
        Opcode::TileAddf => "arith.addf",
        Opcode::TileSubf => "arith.subf",
        Opcode::TileMulf => "arith.mulf",
        Opcode::TileDivf => "arith.divf",
        Opcode::TileMaxf => "arith.maximumf",
        Opcode::TileMinf => "arith.minimumf",
        Opcode::TileTruncf => "arith.truncf",
        Opcode::TileExtf => "arith.extf",
        other => unreachable!("'{}' is not an arith op", other.name()),
    }
}

impl<'a> Lowerer<'a> {
    pub fn new(f: &'a Function, plan: &'a Plan, target: &Target) -> Self {
        Lowerer {
            f,
            plan,
            em: Emitter::new(3),
            vals: HashMap::new(),
            thread: None,
            tma_args: Vec::new(),
            descriptors: Vec::new(),
            tail_boxes: HashSet::new(),
            groups: HashMap::new(),
            ptr_args: HashMap::new(),
            dim_args: HashMap::new(),
            store_helpers: BTreeMap::new(),
            role: Role::Cta,
            reg_budget: MAX_REGS,
            known_offsets: HashMap::new(),
            stored_shares: HashMap::new(),
            alternating: false,
            workspace_slot_bytes: None,
            consumer: None,
            workspace_arg: None,
            sms: i64::from(target.sms),
        }
    }

    /// The `gpu.func` signature line, naming every parameter in PTX order.
    fn signature(&mut self) -> String {
        let mut params = Vec::new();
        let mut tma_indices = Vec::new();
        for (i, d) in self.plan.tma.iter().enumerate() {
            let name = self.em.fresh(&format!("tma_{}", self.plan.tensors[d.tensor].name));
            params.push(format!("{name}: !llvm.ptr"));
            tma_indices.push(i.to_string());
            self.tma_args.push(name);
        }
        for (i, t) in self.plan.tensors.iter().enumerate().filter(|(_, t)| t.ptr) {
            let name = self.em.fresh(&format!("ptr_{}", t.name));
            params.push(format!("{name}: !llvm.ptr {{llvm.noalias}}"));
            self.ptr_args.insert(i, name);
        }
        for s in &self.plan.symbols {
            let name = self.em.fresh(&format!("dim_{s}"));
            params.push(format!("{name}: i32"));
            self.dim_args.insert(s.clone(), name);
        }
        if self.plan.workspace.is_some() {
            let name = self.em.fresh("workspace");
            params.push(format!("{name}: !llvm.ptr {{llvm.noalias}}"));
            self.workspace_arg = Some(name);
        }
        let mut attrs = format!("known_block_size = array<i32: {}, 1, 1>", self.plan.threads());
        if self.plan.warp_specialized {
            attrs.push_str(&format!(", {}", roles::MIN_CTAS_ATTR));
        }
        if self.plan.cluster_size() > 1 {
            attrs.push_str(&format!(", {}", cluster::dims_attr(self.plan.cluster)));
        }
        if !tma_indices.is_empty() {
            attrs.push_str(&format!(", tilec.tma_params = array<i32: {}>", tma_indices.join(", ")));
        }
        format!("gpu.func @{}({}) kernel attributes {{{attrs}}} {{", self.f.name, params.join(", "))
    }

    fn prologue(&mut self) {
        let em = &mut self.em;
        em.line("// Thread 0 issues elected ops; the warpgroup index picks fragments and roles.");
        let tid_idx = em.assign("tid_idx", "gpu.thread_id x");
        let tid = em.assign("tid", format!("arith.index_cast {tid_idx} : index to i32"));
        let c0 = em.i32(0);
        let is_leader = em.assign("is_leader", format!("arith.cmpi eq, {tid}, {c0} : i32"));
        let wg = (self.plan.num_warps > 4).then(|| warpgroup(em, &tid));
        em.line("// Dynamic shared memory (docs/backend.md): buffers 1024-aligned, then the mbarriers.");
        let smem = em.assign("smem", "llvm.mlir.addressof @__tilec_dyn_smem : !llvm.ptr<3>");
        let addr = em.assign("smem_addr", format!("llvm.ptrtoint {smem} : !llvm.ptr<3> to i64"));
        let mask = em.i64(0x3FFFF);
        let masked = em.binop("smem_addr", "arith.andi", &addr, &mask, "i64");
        let c4 = em.i64(4);
        let smem16 = em.binop("smem16", "arith.shrui", &masked, &c4, "i64");
        if !self.tma_args.is_empty() {
            em.line("// TMA descriptors as nvgpu values; thread 0 prefetches them into the descriptor cache.");
        }
        for (d, param) in self.plan.tma.iter().zip(&self.tma_args) {
            let elem = self.plan.tensors[d.tensor].elem;
            let ty = nvgpu::descriptor_type(&d.box_dims, elem, d.geom_swizzle);
            let value = nvgpu::typed_descriptor(em, param, &ty, &format!("tmap_{}", self.plan.tensors[d.tensor].name));
            self.descriptors.push(tma::Descriptor { param: param.clone(), value, ty, box_dims: d.box_dims.clone(), elem });
        }
        if !self.descriptors.is_empty() {
            em.open(format!("scf.if {is_leader} {{"));
            for d in &self.descriptors {
                em.line(format!("nvgpu.tma.prefetch.descriptor {} : {}", d.value, d.ty));
            }
            em.close("}");
        }
        self.thread = Some(Thread { tid, is_leader, smem, smem16, wg });
    }

    /// Writes the kernel function.
    pub fn run(mut self) -> Result<KernelText, Diagnostic> {
        let sig = self.signature();
        for (i, &arg) in self.f.args().iter().enumerate() {
            let t = self.plan.tensor_of_arg[&arg];
            debug_assert_eq!(t, i);
            self.vals.insert(arg, Lv::Ref(t));
        }
        self.prologue();
        self.lower_block(self.f.entry_block())?;
        let mut func = String::new();
        func.push_str(&format!("    {sig}\n"));
        let store_helpers = self.store_helpers.values().copied().collect();
        let types = self.em.struct_types.clone();
        func.push_str(&self.em.finish());
        func.push_str("    }\n");
        Ok(KernelText { func, emitter_types: types, store_helpers, workspace_slot_bytes: self.workspace_slot_bytes })
    }

    fn lower_block(&mut self, block: Block) -> Result<(), Diagnostic> {
        let ops = self.f.body.blocks[block].ops.clone();
        let mut i = 0;
        while i < ops.len() {
            if self.f.body.ops[ops[i]].def.traits.elected {
                // A run of elected ops: issued by thread 0 (in the producer
                // when specialised), or in a consumer region by the first
                // thread of each consumer warpgroup.
                if self.role == Role::Consumer {
                    let tid = self.thread().tid.clone();
                    roles::open_warpgroup_leader(&mut self.em, &tid);
                } else {
                    let leader = self.thread().is_leader.clone();
                    self.em.open(format!("scf.if {leader} {{"));
                }
                while i < ops.len() && self.f.body.ops[ops[i]].def.traits.elected {
                    self.lower_op(ops[i])?;
                    i += 1;
                }
                self.em.close("}");
            } else {
                self.lower_op(ops[i])?;
                i += 1;
            }
        }
        Ok(())
    }

    fn thread(&self) -> &Thread {
        self.thread.as_ref().expect("prologue written")
    }

    fn lv(&self, op: Op, v: Value) -> Result<&Lv, Diagnostic> {
        self.vals.get(&v).ok_or_else(|| {
            let data = &self.f.body.ops[op];
            error(&data.loc, data.def.name, "internal error: an operand was not lowered")
        })
    }

    fn scalar(&self, op: Op, v: Value) -> Result<String, Diagnostic> {
        match self.lv(op, v)? {
            Lv::Scalar { name, .. } => Ok(name.clone()),
            _ => Err(self.err(op, "expected a scalar operand")),
        }
    }

    fn frag(&self, op: Op, v: Value) -> Result<Frag, Diagnostic> {
        match self.lv(op, v)? {
            Lv::Frag(f) => Ok(f.clone()),
            _ => Err(self.err(op, "expected a register tile with a '#tile.mma' layout")),
        }
    }

    fn err(&self, op: Op, message: impl std::fmt::Display) -> Diagnostic {
        let data = &self.f.body.ops[op];
        error(&data.loc, data.def.name, message)
    }

    fn hint(&self, v: Value) -> String {
        self.f.body.values[v].name_hint.clone().unwrap_or_else(|| "v".into())
    }

    /// The fragment geometry of a register tile; a tile whose fragment would
    /// not fit the role's registers is an error here, not a silent spill.
    fn geom(&self, op: Op, ty: &Type) -> Result<FragGeom, Diagnostic> {
        let tile = ty.as_tile().ok_or_else(|| self.err(op, "expected a tile"))?;
        let geom = FragGeom::of(tile, self.warps()).map_err(|m| self.err(op, m))?;
        let regs = geom.values_per_thread() * i64::from(tile.elem.bits()).max(32) / 32;
        if regs + RESERVED_REGS > self.reg_budget {
            return Err(self.err(
                op,
                format!(
                    "a {}x{} {} tile needs {regs} registers per thread over {} warps, more than the {} a thread has here leaves beside \
                     {RESERVED_REGS} for addresses and loop state: it would spill (use a smaller tile, more warps or two consumers)",
                    geom.rows,
                    geom.cols,
                    tile.elem.mnemonic(),
                    self.warps(),
                    self.reg_budget
                ),
            ));
        }
        Ok(geom)
    }

    /// Warps holding one register tile: the CTA's, or in a warp-specialised
    /// kernel one consumer warpgroup's (a tile defined outside the roles,
    /// such as the accumulator's initial splat, is a copy per warpgroup).
    fn warps(&self) -> i64 {
        if self.plan.warp_specialized {
            4
        } else {
            self.plan.num_warps
        }
    }

    /// The matrix that element coordinates `coords` of tensor `t` address:
    /// its last two dimensions, at the leading coordinates. A rank-3 tensor
    /// `[G, R, C]` at `(g, r, c)` is the `R x C` matrix at element
    /// `g * R * C`; a leading coordinate outside the tensor gives a matrix of
    /// no rows, so every access is clipped.
    fn matrix_at(&mut self, op: Op, t: usize, coords: &[Value]) -> Result<Matrix, Diagnostic> {
        let rank = self.plan.tensors[t].dims.len();
        if coords.len() != rank || rank < 2 {
            return Err(self.err(op, "expects one coordinate per tensor dimension (rank 2 or more)"));
        }
        let (row0, col0) = (self.scalar(op, coords[rank - 2])?, self.scalar(op, coords[rank - 1])?);
        let (mut rows, cols) = (self.dim_value(t, rank - 2), self.dim_value(t, rank - 1));
        let mut ptr = self.ptr_args[&t].clone();
        if rank > 2 {
            let (index, inside) = self.element_index(op, t, &coords[..rank - 2])?;
            let (rows64, cols64) = (self.em.assign("d64", format!("arith.extui {rows} : i32 to i64")), self.em.assign("d64", format!("arith.extui {cols} : i32 to i64")));
            let matrix = self.em.binop("matrix", "arith.muli", &rows64, &cols64, "i64");
            let elems = self.em.binop("lead_elems", "arith.muli", &index, &matrix, "i64");
            let bytes = (self.plan.tensors[t].elem.bits() / 8) as i64;
            let eb = self.em.i64(bytes);
            let offset = self.em.binop("lead_bytes", "arith.muli", &elems, &eb, "i64");
            let zero = self.em.i64(0);
            let offset = self.em.assign("lead_bytes", format!("arith.select {inside}, {offset}, {zero} : i64"));
            ptr = self.em.assign("matrix", format!("llvm.getelementptr {ptr}[{offset}] : (!llvm.ptr, i64) -> !llvm.ptr, i8"));
            let no_rows = self.em.i32(0);
            rows = self.em.assign("rows", format!("arith.select {inside}, {rows}, {no_rows} : i32"));
        }
        Ok(Matrix { ptr, row0, col0, rows, cols, column_major: self.plan.tensors[t].column_major })
    }

    /// The row-major element index (i64) of `coords` in the leading
    /// `coords.len()` dimensions of tensor `t`, and whether every coordinate
    /// lies inside its dimension (i1).
    fn element_index(&mut self, op: Op, t: usize, coords: &[Value]) -> Result<(String, String), Diagnostic> {
        let (mut index, mut inside) = (self.em.i64(0), self.em.assign("inside", "arith.constant true"));
        for (d, &c) in coords.iter().enumerate() {
            let (c, extent) = (self.scalar(op, c)?, self.dim_value(t, d));
            let ok = self.em.assign("in_dim", format!("arith.cmpi ult, {c}, {extent} : i32"));
            inside = self.em.binop("inside", "arith.andi", &inside, &ok, "i1");
            let (c64, extent64) = (self.em.assign("i64", format!("arith.extui {c} : i32 to i64")), self.em.assign("d64", format!("arith.extui {extent} : i32 to i64")));
            let scaled = self.em.binop("off", "arith.muli", &index, &extent64, "i64");
            index = self.em.binop("off", "arith.addi", &scaled, &c64, "i64");
        }
        Ok((index, inside))
    }

    /// The bytes `expect_tx` arms its stage with (an `index` value): its
    /// count, the full boxes', less the rows its `fit_rows` loads leave
    /// out at this launch's shape ([`tilec_artifact::TmaParam::fitted_rows`], the runtime's
    /// rule for their descriptors), in every CTA a multicast box lands in.
    /// A fitted load that lands in one CTA and whose first row is known here
    /// takes the tail descriptor where its box passes the tensor's last row,
    /// and is counted by that box's rows ([`Lowerer::tail_boxes`]).
    fn expected_bytes(&mut self, expect_tx: Op, full: i64) -> Result<String, Diagnostic> {
        let body = &self.f.body;
        let fitted: Vec<Op> =
            nv::memory::armed_loads(body, expect_tx).into_iter().filter(|&l| nv::TmaLoad::of(body, l).is_some_and(|o| o.fit_rows(body))).collect();
        if fitted.is_empty() {
            return Ok(self.em.const_int(full, "index"));
        }
        let mut bytes = self.em.i32(full);
        for load in fitted {
            let o = self.view(load, nv::TmaLoad::of)?;
            let Lv::Ref(t) = *self.lv(load, o.tensor(&self.f.body))? else { return Err(self.err(load, "expected a tensor")) };
            let tile = &self.f.body.value_type(o.buffer(&self.f.body)).as_smem().ok_or_else(|| self.err(load, "expected a shared buffer"))?.tile;
            let rank = tile.shape.len();
            let (box_rows, row_bytes) = (tile.shape[rank - 2], tile.shape[rank - 1] * i64::from(tile.elem.bits() / 8));
            let tensor_rows = self.dim_value(t, self.plan.tensors[t].dims.len() - 2);
            let cap = self.em.i32(box_rows);
            let mut fitted = self.rows_fitted(&tensor_rows, &cap);
            // The box's first row, where the stage knows it: a box past the last whole one takes the tail descriptor.
            let mut restore = Vec::new();
            let first_row = match (box_row_coordinate(&o.coords(&self.f.body)), self.f.body.ops[expect_tx].parent) {
                (Some(c), Some(block)) => self.scalar_ahead(c, block, SCALAR_AHEAD_DEPTH, &mut restore)?,
                _ => None,
            };
            // The descriptor's box is the buffer's rows (as the fitted rule above takes it).
            let whole = match self.vals.get(&o.buffer(&self.f.body)) {
                Some(Lv::Smem(d)) => d.rows == box_rows,
                Some(_) => false,
                None => true,
            };
            if let Some(first_row) = first_row.filter(|_| whole && !o.multicast(&self.f.body)) {
                let tail = self.tail_rows(&tensor_rows, box_rows);
                let is_tail = self.box_is_tail(&first_row, &tail, &tensor_rows);
                fitted = self.em.assign("fitted_rows", format!("arith.select {is_tail}, {tail}, {fitted} : i32"));
                self.tail_boxes.insert(load);
            } else {
                // A block lowered again may count this load by its full box this time.
                self.tail_boxes.remove(&load);
            }
            for (v, before) in restore.into_iter().rev() {
                match before {
                    Some(lv) => self.vals.insert(v, lv),
                    None => self.vals.remove(&v),
                };
            }
            let left_out = self.em.binop("left_out", "arith.subi", &cap, &fitted, "i32");
            // A multicast box lands in every CTA of the cluster, each CTA's share with it.
            let copies = if o.multicast(&self.f.body) { self.plan.cluster_size() } else { 1 };
            let per_row = self.em.i32(row_bytes * copies);
            let short = self.em.binop("short", "arith.muli", &left_out, &per_row, "i32");
            bytes = self.em.binop("tx_bytes", "arith.subi", &bytes, &short, "i32");
        }
        Ok(self.em.assign("tx_bytes", format!("arith.index_cast {bytes} : i32 to index")))
    }

    /// `v` as a scalar here, where `block` is the block lowered now: the
    /// integer arithmetic of `block` that makes it is lowered again here
    /// (a plain pipeline computes a load's coordinates after arming its
    /// stage, and a block may be lowered more than once), at most `depth`
    /// ops deep, from values of enclosing blocks; `None` where it cannot.
    /// Each value it lowers again and what it stood for before go into
    /// `restore`, to put back once the caller is done: the op is lowered
    /// where it stands too, and there its own value counts.
    fn scalar_ahead(&mut self, v: Value, block: Block, depth: usize, restore: &mut Vec<(Value, Option<Lv>)>) -> Result<Option<String>, Diagnostic> {
        let def = self.f.body.defining_op(v).filter(|&d| self.f.body.ops[d].parent == Some(block));
        let Some(def) = def else {
            return Ok(match self.vals.get(&v) {
                Some(Lv::Scalar { name, .. }) => Some(name.clone()),
                _ => None,
            });
        };
        let pure = matches!(self.f.body.opcode(def), Opcode::TileConstant | Opcode::TileAddi | Opcode::TileSubi | Opcode::TileMuli | Opcode::TileMinsi | Opcode::TileMaxsi);
        if !pure || depth == 0 {
            return Ok(None);
        }
        for operand in self.f.body.ops[def].operands.clone() {
            if self.scalar_ahead(operand, block, depth - 1, restore)?.is_none() {
                return Ok(None);
            }
        }
        restore.push((v, self.vals.get(&v).cloned()));
        self.lower_op(def)?;
        Ok(match self.vals.get(&v) {
            Some(Lv::Scalar { name, .. }) => Some(name.clone()),
            _ => None,
        })
    }

    /// The descriptor parameter a box `box_dims` of tensor `t` at `coords`
    /// takes (an `!llvm.ptr`): that of descriptor `tail` (an index into
    /// `descriptors`) where [`Lowerer::box_is_tail`] says so, else `full`'s.
    fn select_tail(&mut self, op: Op, t: usize, coords: &[Value], box_dims: &[i64], tail: usize, full: &str) -> Result<String, Diagnostic> {
        let tail = self.descriptors[tail].param.clone();
        let box_rows = box_dims[box_dims.len() - 2];
        let row = box_row_coordinate(coords).ok_or_else(|| self.err(op, "expected a box of two dimensions or more"))?;
        let first_row = self.scalar(op, row)?;
        let tensor_rows = self.dim_value(t, self.plan.tensors[t].dims.len() - 2);
        let rows = self.tail_rows(&tensor_rows, box_rows);
        let is_tail = self.box_is_tail(&first_row, &rows, &tensor_rows);
        Ok(self.em.assign("tmap", format!("llvm.select {is_tail}, {tail}, {full} : i1, !llvm.ptr")))
    }

    /// The rows of the tail descriptor's boxes (an `i32`), the runtime's
    /// rule ([`tilec_artifact::TmaParam::fitted_rows`]): the rows past the
    /// last whole box of `box_rows`, `((rows - 1) mod box) + 1`, fitted.
    fn tail_rows(&mut self, tensor_rows: &str, box_rows: i64) -> String {
        let one = self.em.i32(1);
        let cap = self.em.i32(box_rows);
        let last = self.em.binop("rows", "arith.subi", tensor_rows, &one, "i32");
        let rem = self.em.binop("rows", "arith.remsi", &last, &cap, "i32");
        let rem = self.em.binop("rows", "arith.addi", &rem, &one, "i32");
        self.rows_fitted(&rem, &cap)
    }

    /// Whether the box from `first_row` takes the tail descriptor (an
    /// `i1`): where its `tail` rows reach the tensor's last row, so that
    /// they hold every row of the box that exists. A box that starts off
    /// a multiple of the box's rows with more rows left keeps the full one.
    fn box_is_tail(&mut self, first_row: &str, tail: &str, tensor_rows: &str) -> String {
        let end = self.em.binop("box_end", "arith.addi", first_row, tail, "i32");
        self.em.assign("is_tail", format!("arith.cmpi sge, {end}, {tensor_rows} : i32"))
    }

    /// `rows` (an `i32`) rounded up to TMA's row grain, at least one grain
    /// and at most `cap`: the rows a fitted box copies.
    fn rows_fitted(&mut self, rows: &str, cap: &str) -> String {
        let grain = tilec_target::TMA_ROW_GRAIN as i64;
        let up = self.em.add_const("rows", rows, grain - 1, "i32");
        let mask = self.em.i32(-grain);
        let rounded = self.em.binop("rows", "arith.andi", &up, &mask, "i32");
        let floor = self.em.i32(grain);
        let rounded = self.em.binop("rows", "arith.maxsi", &rounded, &floor, "i32");
        self.em.binop("fitted_rows", "arith.minsi", &rounded, cap, "i32")
    }

    /// The i32 value of dimension `d` of tensor `t`.
    fn dim_value(&mut self, t: usize, d: usize) -> String {
        match &self.plan.tensors[t].dims[d] {
            DimSrc::Const(c) => self.em.i32(*c),
            DimSrc::Sym(s) => self.dim_args[s].clone(),
        }
    }

    fn flatten(&mut self, lv: &Lv) -> Vec<(String, String)> {
        match lv {
            Lv::Scalar { name, elem } => vec![(name.clone(), mlir_type(*elem).to_string())],
            Lv::Frag(f) => {
                let ty = f.chunk_type(&mut self.em);
                f.chunks.iter().map(|c| (c.clone(), ty.clone())).collect()
            }
            Lv::Scales(scales) => scales.values.iter().map(|v| (v.clone(), "f32".to_string())).collect(),
            _ => Vec::new(),
        }
    }

    /// A value shaped like `template` made of the next names of `names`.
    fn rebuild(template: &Lv, names: &mut impl Iterator<Item = String>) -> Lv {
        match template {
            Lv::Scalar { elem, .. } => Lv::Scalar { name: names.next().expect("one name per piece"), elem: *elem },
            Lv::Frag(f) => Lv::Frag(Frag {
                geom: f.geom.clone(),
                elem: f.elem,
                chunks: f.chunks.iter().map(|_| names.next().expect("one name per piece")).collect(),
            }),
            Lv::Scales(scales) => Lv::Scales(Scales { layout: scales.layout, values: scales.values.iter().map(|_| names.next().expect("one name per piece")).collect() }),
            other => other.clone(),
        }
    }

    /// The typed view of `op`; the verifier guarantees it, so a failure is
    /// reported as malformed IR rather than trusted.
    fn view<V>(&self, op: Op, of: fn(&Body, Op) -> Option<V>) -> Result<V, Diagnostic> {
        of(&self.f.body, op).ok_or_else(|| self.err(op, "is malformed"))
    }

    /// Lowers one op. The `match` is on `Opcode`, so a new op without a
    /// lowering arm does not compile.
    /// Lowers one op with its source location on every MLIR op it becomes
    /// (nested ops carry their own, and the outer one's comes back after).
    fn lower_op(&mut self, op: Op) -> Result<(), Diagnostic> {
        let outer = std::mem::replace(&mut self.em.loc, mlir_loc(&self.f.body.ops[op].loc));
        let restore = self.evaluate_operands(op);
        let lowered = self.lower_op_here(op);
        for (v, lazy) in restore {
            self.vals.insert(v, lazy);
        }
        self.em.loc = outer;
        lowered
    }

    /// Evaluates the element-wise expressions an op that is not element-wise
    /// reads; returns those evaluated for this op only, to put back after it.
    fn evaluate_operands(&mut self, op: Op) -> Vec<(Value, Lv)> {
        let data = &self.f.body.ops[op];
        // Stores evaluate an expression position by position as they store.
        if data.def.traits.elementwise || matches!(data.opcode(), Opcode::NvStoreGlobal | Opcode::NvStoreShared | Opcode::TileReduce) {
            return Vec::new();
        }
        let (operands, block) = (data.operands.clone(), data.parent);
        let mut restore = Vec::new();
        for v in operands {
            let Some(Lv::Lazy(lazy)) = self.vals.get(&v).cloned() else { continue };
            let frag = elementwise::evaluate(&mut self.em, &lazy.geom, &lazy.expr);
            if lazy.block != block || lazy.depth != self.em.depth() {
                restore.push((v, Lv::Lazy(lazy)));
            }
            self.vals.insert(v, Lv::Frag(frag));
        }
        restore
    }

    /// A register tile operand of an element-wise op as an expression.
    fn expr(&self, op: Op, v: Value) -> Option<Rc<Expr>> {
        match self.lv(op, v).ok()? {
            Lv::Frag(f) => Some(Rc::new(Expr::Frag(f.clone()))),
            Lv::Lazy(l) => Some(l.expr.clone()),
            _ => None,
        }
    }

    /// Records the result of an element-wise op, `expr`, unevaluated.
    fn defer(&mut self, op: Op, result: Value, expr: Expr) -> Result<(), Diagnostic> {
        let geom = self.geom(op, &self.f.body.value_type(result).clone())?;
        let lazy = Lazy { expr: Rc::new(expr), geom, block: self.f.body.ops[op].parent, depth: self.em.depth() };
        self.vals.insert(result, Lv::Lazy(lazy));
        Ok(())
    }

    fn lower_op_here(&mut self, op: Op) -> Result<(), Diagnostic> {
        let opcode = self.f.body.opcode(op);
        match opcode {
            Opcode::TileConstant => {
                let result = self.view(op, tile::Constant::of)?.result(&self.f.body);
                let value = self.f.body.ops[op].attrs.get("value").cloned();
                self.lower_constant(op, result, value.as_ref())
            }
            Opcode::TileAddi
            | Opcode::TileSubi
            | Opcode::TileMuli
            | Opcode::TileDivsi
            | Opcode::TileRemsi
            | Opcode::TileCeildivsi
            | Opcode::TileMinsi
            | Opcode::TileMaxsi => {
                let bin = self.view(op, tile::IntBinary::of)?;
                let (lhs, rhs, result) = (bin.lhs(&self.f.body), bin.rhs(&self.f.body), bin.result(&self.f.body));
                let Type::Scalar(elem) = *self.f.body.value_type(result) else {
                    return Err(self.err(op, "integer arithmetic on tiles is not supported by the lowering"));
                };
                let (a, b) = (self.scalar(op, lhs)?, self.scalar(op, rhs)?);
                let hint = self.hint(result);
                let r = self.em.binop(&hint, arith_op(opcode), &a, &b, mlir_type(elem));
                self.vals.insert(result, Lv::Scalar { name: r, elem });
                Ok(())
            }
            Opcode::TileAddf | Opcode::TileSubf | Opcode::TileMulf | Opcode::TileDivf | Opcode::TileMaxf | Opcode::TileMinf => {
                let bin = self.view(op, tile::FloatBinary::of)?;
                let (lhs, rhs, result) = (bin.lhs(&self.f.body), bin.rhs(&self.f.body), bin.result(&self.f.body));
                let mop = arith_op(opcode);
                let elem = self.f.body.value_type(result).elem();
                let hint = self.hint(result);
                if let (Some(a), Some(b)) = (self.expr(op, lhs), self.expr(op, rhs)) {
                    return self.defer(op, result, Expr::Binary { op: mop, lhs: a, rhs: b, elem });
                }
                let lv = match (self.lv(op, lhs)?.clone(), self.lv(op, rhs)?.clone()) {
                    (Lv::Scalar { name: a, .. }, Lv::Scalar { name: b, .. }) => {
                        Lv::Scalar { name: self.em.binop(&hint, mop, &a, &b, mlir_type(elem)), elem }
                    }
                    _ => return Err(self.err(op, "operands must both be scalars or both register tiles")),
                };
                self.vals.insert(result, lv);
                Ok(())
            }
            Opcode::TileNegf | Opcode::TileAbsf | Opcode::TileExp | Opcode::TileTanh | Opcode::TileErf | Opcode::TileRsqrt => {
                let unary = self.view(op, tile::FloatUnary::of)?;
                let (input, result) = (unary.input(&self.f.body), unary.result(&self.f.body));
                let elem = self.f.body.value_type(result).elem();
                if let Some(x) = self.expr(op, input) {
                    return self.defer(op, result, Expr::Unary { opcode, x, elem });
                }
                let lv = match self.lv(op, input)?.clone() {
                    Lv::Scalar { name: a, .. } => Lv::Scalar { name: math::unary(&mut self.em, opcode, &a, elem), elem },
                    _ => return Err(self.err(op, "expected a scalar or a register tile")),
                };
                self.vals.insert(result, lv);
                Ok(())
            }
            Opcode::TileLoadBroadcast => self.lower_load_broadcast(op),
            Opcode::TileDeinterleave => self.lower_deinterleave(op),
            Opcode::TileReduce => self.lower_reduce(op),
            Opcode::TileTruncf | Opcode::TileExtf => {
                let cast = self.view(op, tile::Cast::of)?;
                let (input, result) = (cast.input(&self.f.body), cast.result(&self.f.body));
                let from = self.f.body.value_type(input).elem();
                let to = self.f.body.value_type(result).elem();
                let mop = arith_op(opcode);
                let (ft, tt) = (mlir_type(from), mlir_type(to));
                if to.is_float() && to.bits() == 8 && from != ElemType::F32 {
                    return Err(self.err(op, format!("converts f32 to '{tt}' (PTX's cvt to 8-bit floats takes f32): extend '{ft}' to f32 first")));
                }
                if let Some(x) = self.expr(op, input) {
                    return self.defer(op, result, Expr::Cast { op: mop, x, from, to });
                }
                let hint = self.hint(result);
                let lv = match self.lv(op, input)?.clone() {
                    Lv::Scalar { name: a, .. } => {
                        Lv::Scalar { name: self.em.assign(&hint, format!("{mop} {a} : {ft} to {tt}")), elem: to }
                    }
                    _ => return Err(self.err(op, "expected a scalar or a register tile")),
                };
                self.vals.insert(result, lv);
                Ok(())
            }
            Opcode::TileIndexCast => {
                let cast = self.view(op, tile::IndexCast::of)?;
                let (input, result) = (cast.input(&self.f.body), cast.result(&self.f.body));
                let from = self.f.body.value_type(input).elem();
                let to = self.f.body.value_type(result).elem();
                let a = self.scalar(op, input)?;
                let (ft, tt) = (mlir_type(from), mlir_type(to));
                let r = match (ft, tt) {
                    _ if ft == tt => a,
                    ("i32", "i64") => self.em.assign(&self.hint(result), format!("arith.extsi {a} : i32 to i64")),
                    ("i64", "i32") => self.em.assign(&self.hint(result), format!("arith.trunci {a} : i64 to i32")),
                    _ => return Err(self.err(op, format!("a cast from '{ft}' to '{tt}' is not supported by the lowering"))),
                };
                self.vals.insert(result, Lv::Scalar { name: r, elem: to });
                Ok(())
            }
            Opcode::TileBlockId | Opcode::TileNumBlocks => {
                let query = self.view(op, tile::GridQuery::of)?;
                let result = query.result(&self.f.body);
                let dim = match query.dim(&self.f.body) {
                    d @ (0 | 1) if self.plan.grid_transposed() => 1 - d,
                    d => d,
                };
                let dim = tilec_dialects::tile::arith::dim_name(dim).unwrap_or("x");
                let gop = if opcode == Opcode::TileBlockId { "gpu.block_id" } else { "gpu.grid_dim" };
                let hint = self.hint(result);
                let idx = self.em.assign(&format!("{hint}_idx"), format!("{gop} {dim}"));
                let r = self.em.assign(&hint, format!("arith.index_cast {idx} : index to i32"));
                self.vals.insert(result, Lv::Scalar { name: r, elem: ElemType::Index });
                Ok(())
            }
            Opcode::TileDim => {
                let dim = self.view(op, tile::Dim::of)?;
                let Lv::Ref(t) = *self.lv(op, dim.tensor(&self.f.body))? else { return Err(self.err(op, "expected a tensor")) };
                let r = self.dim_value(t, dim.index(&self.f.body) as usize);
                self.vals.insert(dim.result(&self.f.body), Lv::Scalar { name: r, elem: ElemType::Index });
                Ok(())
            }
            Opcode::TileFor => self.lower_for(op),
            Opcode::TileIf => {
                let if_op = self.view(op, tile::If::of)?;
                let cond = self.scalar(op, if_op.condition(&self.f.body))?;
                let block = self.f.body.entry_block(if_op.region(&self.f.body));
                self.em.open(format!("scf.if {cond} {{"));
                self.lower_block(block)?;
                self.em.close("}");
                Ok(())
            }
            Opcode::TileSelect => {
                let select = self.view(op, tile::Select::of)?;
                let body = &self.f.body;
                let (cond, yes, no, result) = (select.condition(body), select.true_value(body), select.false_value(body), select.result(body));
                let Type::Scalar(elem) = *body.value_type(result) else {
                    return Err(self.err(op, "selects between scalars only"));
                };
                let (cond, yes, no) = (self.scalar(op, cond)?, self.scalar(op, yes)?, self.scalar(op, no)?);
                let hint = self.hint(result);
                let r = self.em.assign(&hint, format!("arith.select {cond}, {yes}, {no} : {}", mlir_type(elem)));
                self.vals.insert(result, Lv::Scalar { name: r, elem });
                Ok(())
            }
            Opcode::TileReduceSplits => self.lower_reduce_splits(op),
            Opcode::TileParkPartial => self.lower_park(op),
            Opcode::TileAddParked => self.lower_add_parked(op),
            Opcode::TileCmpi => {
                let cmpi = self.view(op, tile::Cmpi::of)?;
                let (lhs, rhs, result) = (cmpi.lhs(&self.f.body), cmpi.rhs(&self.f.body), cmpi.result(&self.f.body));
                let (a, b) = (self.scalar(op, lhs)?, self.scalar(op, rhs)?);
                let predicate = cmpi.predicate(&self.f.body).to_string();
                let ty = mlir_type(self.f.body.value_type(lhs).elem());
                let r = self.em.assign(&self.hint(result), format!("arith.cmpi {predicate}, {a}, {b} : {ty}"));
                self.vals.insert(result, Lv::Scalar { name: r, elem: ElemType::I1 });
                Ok(())
            }
            Opcode::TileYield => {
                let values = self.view(op, tile::Yield::of)?.values(&self.f.body).to_vec();
                let mut pieces = Vec::new();
                for v in values {
                    let lv = self.lv(op, v)?.clone();
                    pieces.extend(self.flatten(&lv));
                }
                if pieces.is_empty() {
                    self.em.line("scf.yield");
                } else {
                    let (names, types): (Vec<_>, Vec<_>) = pieces.into_iter().unzip();
                    self.em.line(format!("scf.yield {} : {}", names.join(", "), types.join(", ")));
                }
                Ok(())
            }
            Opcode::TileReturn => {
                self.em.line("gpu.return");
                Ok(())
            }
            Opcode::TileLoad | Opcode::TileStore | Opcode::TileDot | Opcode::TileDotScaled | Opcode::TileConvertLayout | Opcode::TileSumSplits => {
                Err(self.err(op, "is not supported by the lowering"))
            }
            Opcode::TileLoadScalar => self.lower_load_scalar(op),
            Opcode::TileParam => Err(self.err(op, "is an unbound config parameter: run tile-select-config (or pin it) before lowering")),
            Opcode::NvAllocSmem => {
                let result = self.view(op, nv::AllocSmem::of)?.result(&self.f.body);
                let b = &self.plan.buffers[&result];
                let (g, hint) = (&b.geom, self.hint(result));
                self.em.line(format!(
                    "// {hint}: {} stage(s) x {} bytes at byte {}: {}x{} {}, {} column block(s) of {} bytes (swizzle {})",
                    b.stages,
                    g.stage_bytes(),
                    b.offset,
                    g.rows,
                    g.cols,
                    g.elem.mnemonic(),
                    g.col_blocks(),
                    g.span(),
                    g.swizzle
                ));
                self.vals.insert(result, Lv::Smem(SmemRef::whole(result, g.rows)));
                Ok(())
            }
            Opcode::NvAllocMbarriers => {
                let result = self.view(op, nv::AllocMbarriers::of)?.result(&self.f.body);
                self.check_cta_wide(op)?;
                let bars = self.plan.barriers[&result].clone();
                let t = self.thread();
                let (smem, leader) = (t.smem.clone(), t.is_leader.clone());
                self.em.line(format!("// {}: {} mbarrier(s) at byte {}", self.hint(result), bars.count, bars.offset));
                let clustered = self.plan.cluster_size() > 1;
                let hint = format!("{}_group", self.hint(result));
                let group = tma::init_barriers(&mut self.em, &smem, &bars, &leader, clustered, &hint);
                self.groups.insert(result, group);
                self.vals.insert(result, Lv::Bars(result));
                Ok(())
            }
            Opcode::NvMbarrierExpectTx => {
                let expect = self.view(op, nv::MbarrierExpectTx::of)?;
                let bar = self.barrier_ref(op, expect.barrier(&self.f.body), expect.stage(&self.f.body))?;
                let bytes = self.expected_bytes(op, expect.bytes(&self.f.body))?;
                tma::expect_tx(&mut self.em, &bar, &bytes);
                Ok(())
            }
            Opcode::NvMbarrierWait => {
                let wait = self.view(op, nv::MbarrierWait::of)?;
                let bar = self.barrier(op, wait.barrier(&self.f.body), wait.stage(&self.f.body))?;
                let phase = self.scalar(op, wait.phase(&self.f.body))?;
                tma::wait(&mut self.em, &bar, &phase);
                Ok(())
            }
            Opcode::NvTmaLoad => self.lower_tma_load(op),
            Opcode::NvTmaPrefetch => self.lower_tma_prefetch(op),
            Opcode::NvWgmmaFence => {
                self.em.line("nvvm.wgmma.fence.aligned");
                Ok(())
            }
            Opcode::NvWgmmaCommit => {
                self.em.line("nvvm.wgmma.commit.group.sync.aligned");
                Ok(())
            }
            Opcode::NvWgmmaWait => {
                let wait = self.view(op, nv::WgmmaWait::of)?;
                let pending = wait.pending(&self.f.body);
                self.em.line(format!("nvvm.wgmma.wait.group.sync.aligned {pending}"));
                let (values, results) = (wait.values(&self.f.body).to_vec(), wait.results(&self.f.body).to_vec());
                for (o, r) in values.into_iter().zip(results) {
                    let lv = self.lv(op, o)?.clone();
                    self.vals.insert(r, lv);
                }
                Ok(())
            }
            Opcode::NvLoadFragment => self.lower_load_fragment(op),
            Opcode::NvWgmma => self.lower_wgmma(op),
            Opcode::NvBarrier if self.view(op, nv::Barrier::of)?.warpgroup(&self.f.body) => {
                let wg = self.thread().wg.clone();
                roles::warpgroup_barrier(&mut self.em, wg.as_deref());
                Ok(())
            }
            Opcode::NvBarrier => {
                self.check_cta_wide(op)?;
                self.em.line("gpu.barrier");
                Ok(())
            }
            Opcode::NvMbarrierArrive => {
                let arrive = self.view(op, nv::MbarrierArrive::of)?;
                let bar = self.barrier_ref(op, arrive.barrier(&self.f.body), arrive.stage(&self.f.body))?;
                if arrive.per_warp(&self.f.body) {
                    let tid = self.thread().tid.clone();
                    roles::open_first_lane(&mut self.em, &tid);
                    tma::arrive(&mut self.em, &bar);
                    roles::close(&mut self.em);
                } else {
                    tma::arrive(&mut self.em, &bar);
                }
                Ok(())
            }
            Opcode::NvMbarrierArriveRemote => {
                let arrive = self.view(op, nv::MbarrierArriveRemote::of)?;
                self.check_clustered(op)?;
                let bar = self.barrier(op, arrive.barrier(&self.f.body), arrive.stage(&self.f.body))?;
                let cta = self.scalar(op, arrive.cta(&self.f.body))?;
                let tid = self.thread().tid.clone();
                cluster::arrive_remote(&mut self.em, &tid, &bar, &cta);
                Ok(())
            }
            Opcode::NvClusterBarrier => {
                self.check_cta_wide(op)?;
                self.check_clustered(op)?;
                cluster::barrier(&mut self.em);
                Ok(())
            }
            Opcode::NvClusterSum => self.lower_cluster_sum(op),
            Opcode::NvClusterRank => {
                let result = self.view(op, nv::ClusterRank::of)?.result(&self.f.body);
                let hint = self.hint(result);
                let r = cluster::rank(&mut self.em, &hint);
                self.vals.insert(result, Lv::Scalar { name: r, elem: ElemType::Index });
                Ok(())
            }
            Opcode::NvSmemRows => {
                let rows_op = self.view(op, nv::SmemRows::of)?;
                let (buffer_v, row_v, result) = (rows_op.buffer(&self.f.body), rows_op.row(&self.f.body), rows_op.result(&self.f.body));
                let Lv::Smem(parent) = self.lv(op, buffer_v)?.clone() else {
                    return Err(self.err(op, "expected a shared buffer"));
                };
                let row = self.scalar(op, row_v)?;
                let rows = self.f.body.value_type(result).as_smem().map_or(0, |s| s.tile.shape[0]);
                let buffer = &self.plan.buffers[&parent.buffer];
                let window = smem_rows::window(&mut self.em, &self.f.body, op, &parent, buffer, (row_v, row), rows)?;
                self.vals.insert(result, Lv::Smem(window));
                Ok(())
            }
            Opcode::NvWarpSpecialize => self.lower_warp_specialize(op),
            Opcode::NvStoreGlobal => self.lower_store(op),
            Opcode::NvStoreShared => self.lower_store_shared(op),
            Opcode::NvFenceAsyncShared => {
                self.em.line("nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}");
                Ok(())
            }
            Opcode::NvTmaStore => self.lower_tma_store(op),
            Opcode::NvTmaStoreWait => {
                tma::store_wait(&mut self.em);
                Ok(())
            }
            Opcode::NvLoadGlobal => self.lower_load_global(op),
            Opcode::NvLoadShared => self.lower_load_shared(op),
            Opcode::NvRunOffset => {
                let run = self.view(op, nv::RunOffset::of)?;
                let (tensor, coords, result) = (run.tensor(&self.f.body), run.coords(&self.f.body).to_vec(), run.result(&self.f.body));
                let Lv::Ref(t) = *self.lv(op, tensor)? else { return Err(self.err(op, "expected a tensor")) };
                let (_, offset) = self.run_box_start(op, t, &coords)?;
                self.vals.insert(result, Lv::Scalar { name: offset, elem: ElemType::Index });
                Ok(())
            }
            Opcode::NvCopyAsync => self.lower_copy_async(op),
            Opcode::NvScaleAccumulate => self.lower_scale_accumulate(op),
            Opcode::NvGridDependencyWait => {
                self.em.line("nvvm.griddepcontrol wait");
                Ok(())
            }
            Opcode::NvLaunchDependents => {
                self.em.line("nvvm.griddepcontrol launch_dependents");
                Ok(())
            }
        }
    }

    /// Every thread loads the element (a plain `ld.global`, which the
    /// whole CTA reads from one cache line); outside the tensor it reads
    /// zero, at an address clamped to element 0.
    fn lower_load_scalar(&mut self, op: Op) -> Result<(), Diagnostic> {
        let load = self.view(op, tile::LoadScalar::of)?;
        let (tensor, result) = (load.tensor(&self.f.body), load.result(&self.f.body));
        let indices = load.indices(&self.f.body).to_vec();
        let Lv::Ref(t) = *self.lv(op, tensor)? else { return Err(self.err(op, "expected a tensor")) };
        let elem = self.f.body.value_type(result).elem();
        let ty = mlir_type(elem);
        let (offset, inside) = self.element_index(op, t, &indices)?;
        let zero_offset = self.em.i64(0);
        let offset = self.em.assign("off", format!("arith.select {inside}, {offset}, {zero_offset} : i64"));
        let ptr = self.ptr_args[&t].clone();
        let p = self.em.assign("p", format!("llvm.getelementptr {ptr}[{offset}] : (!llvm.ptr, i64) -> !llvm.ptr, {ty}"));
        let v = self.em.assign("v", format!("llvm.load {p} : !llvm.ptr -> {ty}"));
        let zero = self.em.assign("zero", format!("arith.constant 0 : {ty}"));
        let hint = self.hint(result);
        let r = self.em.assign(&hint, format!("arith.select {inside}, {v}, {zero} : {ty}"));
        self.vals.insert(result, Lv::Scalar { name: r, elem });
        Ok(())
    }

    /// Each result takes its runs' chunks of the input, as they are: a
    /// thread holds the same positions of every n block, so where the
    /// wgmma instruction's N divides the run, splitting the columns is
    /// choosing structs, with no data movement.
    fn lower_deinterleave(&mut self, op: Op) -> Result<(), Diagnostic> {
        let d = self.view(op, tile::Deinterleave::of)?;
        let body = &self.f.body;
        let (input, results, block) = (d.input(body), [d.first(body), d.second(body)], d.block(body));
        let frag = self.frag(op, input)?;
        let instr_n = frag.geom.instr_n;
        if block % instr_n != 0 {
            return Err(self.err(op, format!("splits {block}-column runs of a tile whose wgmma instruction N is {instr_n}: the lowering needs the instruction N to divide the run")));
        }
        let geom = self.geom(op, &self.f.body.value_type(results[0]).clone())?;
        let per_run = block / instr_n;
        for (part, result) in results.into_iter().enumerate() {
            let mut chunks = Vec::with_capacity(geom.chunks());
            for r in 0..geom.m_blocks {
                for nb in 0..geom.n_blocks {
                    let source = (2 * (nb / per_run) + part as i64) * per_run + nb % per_run;
                    chunks.push(frag.chunks[(r * frag.geom.n_blocks + source) as usize].clone());
                }
            }
            self.vals.insert(result, Lv::Frag(Frag { geom: geom.clone(), elem: frag.elem, chunks }));
        }
        Ok(())
    }

    /// Each thread loads the vector's elements its fragment holds, once each.
    fn lower_load_broadcast(&mut self, op: Op) -> Result<(), Diagnostic> {
        let load = self.view(op, tile::LoadBroadcast::of)?;
        let body = &self.f.body;
        let (tensor, index, result) = (load.tensor(body), load.index(body), load.result(body));
        let along = if load.along(body) == "rows" { fragment::Along::Rows } else { fragment::Along::Cols };
        let ty = body.value_type(result).clone();
        let geom = self.geom(op, &ty)?;
        let Lv::Ref(t) = *self.lv(op, tensor)? else { return Err(self.err(op, "expected a tensor")) };
        let index = self.scalar(op, index)?;
        let extent = self.em.i32(if along == fragment::Along::Rows { geom.rows } else { geom.cols });
        let start = self.em.binop("vstart", "arith.muli", &index, &extent, "i32");
        let len = self.dim_value(t, 0);
        let ptr = self.ptr_args[&t].clone();
        let tid = self.thread().tid.clone();
        let coords = thread_coords(&mut self.em, &tid, geom.warpgroups);
        let frag = fragment::load_broadcast(&mut self.em, &geom, ty.elem(), &coords, &ptr, &start, &len, along);
        self.vals.insert(result, Lv::Frag(frag));
        Ok(())
    }

    fn lower_load_global(&mut self, op: Op) -> Result<(), Diagnostic> {
        let load = self.view(op, nv::LoadGlobal::of)?;
        let (tensor, result) = (load.tensor(&self.f.body), load.result(&self.f.body));
        let coords = load.coords(&self.f.body).to_vec();
        let Lv::Ref(t) = *self.lv(op, tensor)? else { return Err(self.err(op, "expected a tensor")) };
        let m = self.matrix_at(op, t, &coords)?;
        let ty = self.f.body.value_type(result).clone();
        if !matches!(ty.as_tile().and_then(|t| t.layout.as_ref()), Some(Layout::Mma { .. })) {
            return self.read_scales(op, result, &scales::Source::Global(m.tile()));
        }
        // A register tile in the accumulator's layout: a residual.
        if m.column_major {
            return Err(self.err(op, "reads a register tile from a column-major tensor, which the lowering does not support"));
        }
        let geom = self.geom(op, &ty)?;
        let tid = self.thread().tid.clone();
        let coords = thread_coords(&mut self.em, &tid, geom.warpgroups);
        let tile = fragment::GlobalTile::new(&mut self.em, &geom, ty.elem(), &coords, &m.ptr, &m.row0, &m.col0, &m.rows, &m.cols);
        // Where the tile fits beside an accumulator of its shape, every pair
        // is read here, all loads in flight at once; otherwise each where a
        // store needs it, not held whole beside the accumulator.
        let packed = geom.values_per_thread() * i64::from(ty.elem().bits()) / 32;
        if geom.values_per_thread() + packed + EAGER_READ_MARGIN <= self.reg_budget {
            let expr = Rc::new(Expr::Global(tile));
            let frag = elementwise::evaluate(&mut self.em, &geom, &expr);
            self.vals.insert(result, Lv::Frag(frag));
            return Ok(());
        }
        tile.prefetch(&mut self.em);
        self.defer(op, result, Expr::Global(tile))
    }

    fn lower_load_shared(&mut self, op: Op) -> Result<(), Diagnostic> {
        let load = self.view(op, nv::LoadShared::of)?;
        let (buffer, stage, result) = (load.buffer(&self.f.body), load.stage(&self.f.body), load.result(&self.f.body));
        let stage_ptr = self.narrow_stage(op, buffer, stage)?;
        let cols = self.f.body.value_type(result).as_tile().map_or(1, |t| t.shape[1]);
        self.read_scales(op, result, &scales::Source::Shared { ptr: &stage_ptr, cols })
    }

    /// Each thread reads, from `src`, the scales of `result`'s tile its
    /// register layout gives it.
    fn read_scales(&mut self, op: Op, result: Value, src: &scales::Source<'_>) -> Result<(), Diagnostic> {
        let tile = self.f.body.value_type(result).as_tile().cloned().ok_or_else(|| self.err(op, "expected a tile"))?;
        let layout = scales::scale_layout(&tile, self.warps()).map_err(|m| self.err(op, m))?;
        let tid = self.thread().tid.clone();
        let warpgroups = if let ScaleLayout::Rows(warpgroups) = layout { warpgroups } else { 1 };
        let coords = thread_coords(&mut self.em, &tid, warpgroups);
        let loaded = scales::load(&mut self.em, &tile, layout, &coords, src);
        self.vals.insert(result, Lv::Scales(loaded));
        Ok(())
    }

    /// The copying warp ([`COPYING_WARP`]) copies the tile; only the
    /// threads outside consumer warpgroups run it (the producer's, or the
    /// whole CTA's).
    fn lower_copy_async(&mut self, op: Op) -> Result<(), Diagnostic> {
        if self.role == Role::Consumer {
            return Err(self.err(op, "runs in the CTA's second warp: it belongs in the producer region, not a consumer's"));
        }
        let copy = self.view(op, nv::CopyAsync::of)?;
        let body = &self.f.body;
        let (tensor, coords, buffer, stage, barrier, bstage) =
            (copy.tensor(body), copy.coords(body).to_vec(), copy.buffer(body), copy.stage(body), copy.barrier(body), copy.barrier_stage(body));
        let shape = body.value_type(buffer).as_smem().map(|s| [s.tile.shape[0], s.tile.shape[1]]).ok_or_else(|| self.err(op, "expected a shared buffer"))?;
        let Lv::Ref(t) = *self.lv(op, tensor)? else { return Err(self.err(op, "expected a tensor")) };
        let m = self.matrix_at(op, t, &coords)?;
        let stages = copy.stages(body).unwrap_or(1);
        let dst = self.narrow_stage(op, buffer, stage)?;
        let stage_bytes = self.narrow_stage_bytes(op, buffer)?;
        let bar = self.barrier(op, barrier, bstage)?;
        let tid = self.thread().tid.clone();
        let lane = roles::open_warp(&mut self.em, &tid, COPYING_WARP);
        scales::copy(&mut self.em, &m.tile(), &dst, shape, (stages, stage_bytes), &lane, &bar);
        roles::close(&mut self.em);
        Ok(())
    }

    /// The bytes one stage of a narrow buffer takes.
    fn narrow_stage_bytes(&mut self, op: Op, buffer: Value) -> Result<i64, Diagnostic> {
        let Lv::Smem(view) = self.lv(op, buffer)?.clone() else { return Err(self.err(op, "expected a shared buffer")) };
        Ok(self.plan.buffers[&view.buffer].geom.stage_bytes())
    }

    /// The start of stage `stage` of a narrow buffer (or of a row window of
    /// one), as an `!llvm.ptr<3>`.
    fn narrow_stage(&mut self, op: Op, buffer: Value, stage: Value) -> Result<String, Diagnostic> {
        let Lv::Smem(view) = self.lv(op, buffer)?.clone() else { return Err(self.err(op, "expected a shared buffer")) };
        let buf = self.plan.buffers[&view.buffer].clone();
        if !buf.geom.is_narrow() {
            return Err(self.err(op, "threads copy and read scales in buffers of rows under 16 bytes, stored densely"));
        }
        let stage = self.scalar(op, stage)?;
        let smem = self.thread().smem.clone();
        let mut ptr = tma::smem_ptr(&mut self.em, &smem, buf.offset, &stage, buf.geom.stage_bytes(), "stage");
        if let Some(off) = &view.row_offset {
            ptr = self.em.assign("rows", format!("llvm.getelementptr {ptr}[{off}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8"));
        }
        Ok(ptr)
    }

    /// Whether an `nv.wgmma_wait` comes after `op` in its block.
    fn wgmma_wait_follows(&self, op: Op) -> bool {
        let body = &self.f.body;
        let Some(block) = body.ops[op].parent else { return false };
        let ops = &body.blocks[block].ops;
        ops.iter().skip_while(|&&o| o != op).any(|&o| body.opcode(o) == Opcode::NvWgmmaWait)
    }

    fn lower_scale_accumulate(&mut self, op: Op) -> Result<(), Diagnostic> {
        let sacc = self.view(op, nv::ScaleAccumulate::of)?;
        let body = &self.f.body;
        let (acc, partial, rows, cols, result) = (sacc.acc(body), sacc.partial(body), sacc.row_scale(body), sacc.col_scale(body), sacc.result(body));
        let along_rows = sacc.blocks_along_rows(body);
        let (acc, partial) = (self.frag(op, acc)?, self.frag(op, partial)?);
        let (Lv::Scales(rows), Lv::Scales(cols)) = (self.lv(op, rows)?.clone(), self.lv(op, cols)?.clone()) else {
            return Err(self.err(op, "expects scales loaded by nv.load_global or nv.load_shared"));
        };
        let laid_out = match (rows.layout, cols.layout) {
            (ScaleLayout::Whole, ScaleLayout::Cols) => along_rows,
            (ScaleLayout::Rows(_), ScaleLayout::Whole) => !along_rows,
            _ => false,
        };
        if !laid_out {
            let what = if along_rows { "block scales along the rows and column scales" } else { "row scales and block scales along the columns" };
            return Err(self.err(op, format!("expects {what} loaded by nv.load_global or nv.load_shared")));
        }
        // A thread holds two values of its per-line scales per m64 block
        // (rows) or per 8-column group (columns).
        let (lines, held, groups) = if along_rows { ("column", &cols, acc.geom.cols / 8) } else { ("row", &rows, acc.geom.m_blocks) };
        if held.values.len() as i64 != 2 * groups {
            return Err(self.err(op, format!("the {lines} scales do not cover the accumulator's {lines}s")));
        }
        let part = match (sacc.row_block(&self.f.body), sacc.col_block(&self.f.body)) {
            (Some(r), _) => Part::RowBlock(r),
            (None, Some(c)) => Part::ColBlock(c),
            (None, None) => Part::Whole,
        };
        // A block's promotion, or one a wgmma wait follows in its block (the
        // first K block's of a pair, placed under the second's wgmma), stays
        // where the IR puts it ([`scales::scale_accumulate`]).
        let pin = part != Part::Whole || self.wgmma_wait_follows(op);
        let (m_blocks, n_blocks) = match part {
            Part::Whole => (acc.geom.m_blocks, acc.geom.n_blocks),
            Part::RowBlock(_) => (1, acc.geom.n_blocks),
            Part::ColBlock(_) => (acc.geom.m_blocks, 1),
        };
        if (partial.geom.m_blocks, partial.geom.n_blocks) != (m_blocks, n_blocks) {
            return Err(self.err(op, "the partial does not cover the accumulator, or with 'row_block' one m64 block of it, or with 'col_block' one instruction's columns"));
        }
        let known = |s: &Self, v: Value| s.known_offsets.get(&v).copied().or_else(|| tile::arith::constant_int(&s.f.body, v));
        let offset = sacc.block_offset(&self.f.body);
        let promoted = if along_rows {
            let offset = match offset {
                None => RowOffset::Known(0),
                Some(v) => match known(self, v) {
                    Some(k) if k % 64 == 0 && k >= 0 => RowOffset::Known(k),
                    Some(k) => return Err(self.err(op, format!("the row offset {k} is not a multiple of 64: the m64 blocks would straddle the scale blocks"))),
                    None => RowOffset::Dynamic(self.scalar(op, v)?),
                },
            };
            let wg = (acc.geom.warpgroups > 1).then(|| {
                let tid = self.thread().tid.clone();
                warpgroup(&mut self.em, &tid)
            });
            scales::scale_accumulate_row_blocks(&mut self.em, &acc, &partial, &rows.values, &cols.values, part, pin, &offset, wg.as_deref())
        } else {
            let columns = match offset {
                None => ColumnBlocks::FromStart,
                Some(v) => match known(self, v) {
                    Some(k) if k % 8 == 0 && (0..SCALE_BLOCK_N).contains(&k) => ColumnBlocks::Known(k),
                    Some(k) => return Err(self.err(op, format!("the column offset {k} is not a multiple of 8 below {SCALE_BLOCK_N}"))),
                    None => ColumnBlocks::Dynamic { offset: self.scalar(op, v)?, step: acc.geom.cols },
                },
            };
            scales::scale_accumulate(&mut self.em, &acc, &partial, &rows.values, &cols.values, part, pin, &columns)
        };
        self.vals.insert(result, Lv::Frag(promoted));
        Ok(())
    }

    fn lower_constant(&mut self, op: Op, result: Value, value: Option<&Attribute>) -> Result<(), Diagnostic> {
        let ty = self.f.body.value_type(result).clone();
        let elem = ty.elem();
        if let (Type::Scalar(ElemType::Index | ElemType::I32), Some(Attribute::Int(v, _))) = (&ty, value) {
            if i32::try_from(*v).is_err() {
                let msg = format!("the constant {v} does not fit the kernel's 32-bit index arithmetic ({} to {})", i32::MIN, i32::MAX);
                return Err(self.err(op, msg));
            }
        }
        let (literal, is_zero) = match value {
            Some(Attribute::Int(v, ElemType::I1)) => ((if *v != 0 { "true" } else { "false" }).to_string(), *v == 0),
            Some(Attribute::Int(v, _)) => (v.to_string(), *v == 0),
            Some(Attribute::Float(v, _)) => (float_literal(*v, elem), *v == 0.0 && v.is_sign_positive()),
            _ => return Err(self.err(op, "expected an integer or float 'value'")),
        };
        let hint = self.hint(result);
        let lv = match &ty {
            // `true` and `false` are i1 literals already: MLIR takes no type after them.
            Type::Scalar(ElemType::I1) => Lv::Scalar { name: self.em.assign(&hint, format!("arith.constant {literal}")), elem },
            Type::Scalar(_) => {
                Lv::Scalar { name: self.em.assign(&hint, format!("arith.constant {literal} : {}", mlir_type(elem))), elem }
            }
            Type::Tile(_) => {
                let bits = match value {
                    Some(Attribute::Float(v, _)) => (*v as f32).to_bits(),
                    Some(Attribute::Int(v, _)) => (*v as f32).to_bits(),
                    _ => 0,
                };
                return self.defer(op, result, Expr::Splat { literal, elem, is_zero, bits });
            }
            _ => return Err(self.err(op, "expected a scalar or tile result")),
        };
        self.vals.insert(result, lv);
        Ok(())
    }

    /// A loop whose block-scaled promotions all take one column offset
    /// that the loop does not change (a tile's offset into its first scale
    /// block, the same for the whole K loop) is lowered once per offset the
    /// tile grid gives, inside one `scf.index_switch` on it (a default that
    /// traps): each copy's promotions have their blocks fixed, and the
    /// switch runs once per loop instead of once per K step.
    fn lower_for(&mut self, op: Op) -> Result<(), Diagnostic> {
        match self.loop_invariant_offset(op) {
            Some((offset, cases)) => self.lower_for_per_offset(op, offset, &cases),
            None => self.lower_for_once(op),
        }
    }

    /// The column offset every promotion in loop `op` takes, defined
    /// outside it and not yet fixed, with the offsets to lower it for.
    fn loop_invariant_offset(&self, op: Op) -> Option<(Value, Vec<i64>)> {
        let body = &self.f.body;
        let region = tile::For::of(body, op)?.region(body);
        let promotions: Vec<nv::ScaleAccumulate> = body.walk_region(region).into_iter().filter_map(|o| nv::ScaleAccumulate::of(body, o)).collect();
        let offset = promotions.first()?.block_offset(body)?;
        let invariant = !body.defined_within(offset, op) && !self.known_offsets.contains_key(&offset) && tile::arith::constant_int(&self.f.body, offset).is_none();
        // A promotion along the rows chooses its blocks by select, cheaply: one per m64 block.
        if !invariant || promotions.iter().any(|p| p.block_offset(body) != Some(offset) || p.blocks_along_rows(body)) {
            return None;
        }
        let cols = |p: &nv::ScaleAccumulate| body.value_type(p.acc(body)).as_tile().map(|t| t.shape[1]);
        let width = cols(&promotions[0])?;
        let blocks = body.value_type(promotions[0].col_scale(body)).as_tile()?.shape[0];
        if promotions.iter().any(|p| cols(p) != Some(width)) {
            return None;
        }
        scales::offset_cases(width, blocks).map(|cases| (offset, cases))
    }

    fn lower_for_per_offset(&mut self, op: Op, offset: Value, cases: &[i64]) -> Result<(), Diagnostic> {
        let for_op = self.view(op, tile::For::of)?;
        let body = &self.f.body;
        let (init_values, results) = (for_op.inits(body).to_vec(), for_op.results(body).to_vec());
        let inits: Vec<Lv> = init_values.iter().map(|&v| self.lv(op, v).cloned()).collect::<Result<_, _>>()?;
        let (init_names, types): (Vec<String>, Vec<String>) = inits.iter().flat_map(|lv| self.flatten(lv)).unzip();
        let off = self.scalar(op, offset)?;
        let switched = self.em.index_switch("per_offset", &off, &types);
        for &case in cases {
            self.em.open(format!("case {case} {{"));
            self.known_offsets.insert(offset, case);
            let lowered = self.lower_for_once(op);
            self.known_offsets.remove(&offset);
            lowered?;
            let outs: Vec<Lv> = results.iter().map(|&r| self.lv(op, r).cloned()).collect::<Result<_, _>>()?;
            let names: Vec<String> = outs.iter().flat_map(|lv| self.flatten(lv)).map(|(n, _)| n).collect();
            self.em.yield_values(&names, &types);
            self.em.close("}");
        }
        // Any other offset breaks the promotion's contract.
        self.em.trap_default(&init_names, &types);
        let mut names = switched.into_iter();
        for (&r, init) in results.iter().zip(&inits) {
            self.vals.insert(r, Self::rebuild(init, &mut names));
        }
        Ok(())
    }

    fn lower_for_once(&mut self, op: Op) -> Result<(), Diagnostic> {
        let for_op = self.view(op, tile::For::of)?;
        let body = &self.f.body;
        let (init_values, results, region) = (for_op.inits(body).to_vec(), for_op.results(body).to_vec(), for_op.region(body));
        let (lb, ub, step) = (for_op.lower_bound(body), for_op.upper_bound(body), for_op.step(body));
        let block = self.f.body.entry_block(region);
        let args = self.f.body.blocks[block].args.clone();
        let (lb, ub, step) = (self.scalar(op, lb)?, self.scalar(op, ub)?, self.scalar(op, step)?);
        let iv = self.em.fresh(&self.hint(args[0]));
        self.vals.insert(args[0], Lv::Scalar { name: iv.clone(), elem: ElemType::Index });

        let mut inits = Vec::new();
        let mut pieces = Vec::new();
        for v in init_values {
            let lv = self.lv(op, v)?.clone();
            if !matches!(lv, Lv::Scalar { .. } | Lv::Frag(_) | Lv::Scales(_)) {
                return Err(self.err(op, "only scalars and register tiles can be loop-carried by the lowering"));
            }
            pieces.extend(self.flatten(&lv));
            inits.push(lv);
        }
        if pieces.is_empty() {
            self.em.open(format!("scf.for {iv} = {lb} to {ub} step {step} : i32 {{"));
        } else {
            let mut arg_names = Vec::new();
            for (&arg, init) in args[1..].iter().zip(&inits) {
                let hint = self.hint(arg);
                let n = self.flatten(init).len();
                let names: Vec<String> = (0..n).map(|j| self.em.fresh(&format!("{hint}{}", if n > 1 { format!("_{j}") } else { String::new() }))).collect();
                let mut it = names.clone().into_iter();
                self.vals.insert(arg, Self::rebuild(init, &mut it));
                arg_names.extend(names);
            }
            let res = self.em.fresh(&results.first().map_or("for".into(), |&r| self.hint(r)));
            let head = if pieces.len() == 1 { res.clone() } else { format!("{res}:{}", pieces.len()) };
            let iter: Vec<String> = arg_names.iter().zip(&pieces).map(|(a, (init, _))| format!("{a} = {init}")).collect();
            let types: Vec<&str> = pieces.iter().map(|(_, t)| t.as_str()).collect();
            self.em.open(format!(
                "{head} = scf.for {iv} = {lb} to {ub} step {step} iter_args({}) -> ({}) : i32 {{",
                iter.join(", "),
                types.join(", ")
            ));
            let mut names = (0..pieces.len()).map(|k| if pieces.len() == 1 { res.clone() } else { format!("{res}#{k}") });
            for (&r, init) in results.iter().zip(&inits) {
                self.vals.insert(r, Self::rebuild(init, &mut names));
            }
        }
        self.lower_block(block)?;
        self.em.close("}");
        Ok(())
    }

    fn barrier(&mut self, op: Op, bars: Value, index: Value) -> Result<String, Diagnostic> {
        let Lv::Bars(key) = *self.lv(op, bars)? else { return Err(self.err(op, "expected an mbarrier group")) };
        let b = self.plan.barriers[&key].clone();
        let idx = self.scalar(op, index)?;
        let smem = self.thread().smem.clone();
        Ok(tma::barrier_ptr(&mut self.em, &smem, &b, &idx))
    }

    /// Barrier `index` of the group `bars`, as the `nvgpu` ops take it.
    fn barrier_ref(&mut self, op: Op, bars: Value, index: Value) -> Result<tma::BarrierRef, Diagnostic> {
        let Lv::Bars(key) = *self.lv(op, bars)? else { return Err(self.err(op, "expected an mbarrier group")) };
        let count = self.plan.barriers[&key].count;
        let idx = self.scalar(op, index)?;
        let index = nvgpu::index(&mut self.em, &idx);
        Ok(tma::BarrierRef { group: self.groups[&key].clone(), ty: nvgpu::group_type(count), index })
    }

    /// A TMA copy's coordinates (given outer to inner), as TMA takes them:
    /// the innermost (the column), then the others inner first.
    fn tma_coords(&mut self, op: Op, coords: &[Value]) -> Result<(String, Vec<String>), Diagnostic> {
        let mut inner_first = coords.iter().rev().map(|&c| self.scalar(op, c)).collect::<Result<Vec<_>, _>>()?;
        let col = inner_first.remove(0);
        Ok((col, inner_first))
    }

    /// Where the flat box holding the element at `coords` of column-major
    /// tensor `t` starts, and the element's place in it (`i32`s): the
    /// element's memory-order index rounded down to TMA's 16-byte
    /// alignment, and the rest. The runtime holds a tensor with a flat
    /// descriptor under 2^31 elements.
    fn run_box_start(&mut self, op: Op, t: usize, coords: &[Value]) -> Result<(String, String), Diagnostic> {
        let rank = coords.len();
        if rank < 2 || !self.plan.tensors[t].column_major {
            return Err(self.err(op, "a flat box holds a column of a column-major tensor (tile.contiguous names its second-last dimension)"));
        }
        // Memory order: the leading dimensions, the columns, then the rows.
        let mut order = (0..rank - 2).chain([rank - 1, rank - 2]);
        let mut index = self.scalar(op, coords[order.next().expect("rank 2 or more")])?;
        for d in order {
            let (c, extent) = (self.scalar(op, coords[d])?, self.dim_value(t, d));
            let scaled = self.em.binop("run", "arith.muli", &index, &extent, "i32");
            index = self.em.binop("run", "arith.addi", &scaled, &c, "i32");
        }
        let per_unit = TMA_GLOBAL_ALIGN / i64::from(self.plan.tensors[t].elem.bits() / 8);
        let (low, high) = (self.em.i32(per_unit - 1), self.em.i32(-per_unit));
        let start = self.em.binop("run_box", "arith.andi", &index, &high, "i32");
        let offset = self.em.binop("run_offset", "arith.andi", &index, &low, "i32");
        Ok((start, offset))
    }

    fn lower_tma_load(&mut self, op: Op) -> Result<(), Diagnostic> {
        let o = self.view(op, nv::TmaLoad::of)?;
        let body = &self.f.body;
        let (tensor, coords, buffer, stage, barrier, bstage) =
            (o.tensor(body), o.coords(body).to_vec(), o.buffer(body), o.stage(body), o.barrier(body), o.barrier_stage(body));
        let Lv::Ref(t) = *self.lv(op, tensor)? else { return Err(self.err(op, "expected a tensor")) };
        let Lv::Smem(dst) = self.lv(op, buffer)?.clone() else { return Err(self.err(op, "expected a shared buffer")) };
        let buf = self.plan.buffers[&dst.buffer].clone();
        let flat = buf.geom.is_narrow();
        let box_dims = if flat { vec![dst.rows] } else { tma_box(dst.rows, &buf.geom, coords.len()) };
        let fit_rows = o.fit_rows(&self.f.body);
        let find = |tail: bool| self.plan.tma_index(t, &box_dims, buf.geom.swizzle, flat, fit_rows, tail).expect("planned");
        let full = self.descriptors[find(false)].clone();
        // A box past the tensor's last whole box takes the tail descriptor (its stage counted it so).
        let desc = if self.tail_boxes.contains(&op) {
            let param = self.select_tail(op, t, &coords, &box_dims, find(true), &full.param)?;
            let value = nvgpu::typed_descriptor(&mut self.em, &param, &full.ty, "tmap");
            tma::Descriptor { param, value, ..full }
        } else {
            full
        };
        let (col, outer) = if flat { (self.run_box_start(op, t, &coords)?.0, Vec::new()) } else { self.tma_coords(op, &coords)? };
        let stage = self.scalar(op, stage)?;
        let bar = self.barrier_ref(op, barrier, bstage)?;
        let smem = self.thread().smem.clone();
        let multicast = if o.multicast(&self.f.body) {
            self.check_clustered(op)?;
            Some(cluster::all_ctas_mask(&mut self.em, self.plan.cluster_size()))
        } else {
            None
        };
        let dst = tma::Destination { smem: &smem, buffer: &buf, row_off: dst.row_offset.as_deref(), stage: &stage, multicast: multicast.as_deref() };
        tma::load(&mut self.em, &dst, &desc, &bar, &col, &outer);
        Ok(())
    }

    fn lower_tma_prefetch(&mut self, op: Op) -> Result<(), Diagnostic> {
        let o = self.view(op, nv::TmaPrefetch::of)?;
        let body = &self.f.body;
        let (tensor, coords, buffer, fit_rows) = (o.tensor(body), o.coords(body).to_vec(), o.buffer(body), o.fit_rows(body));
        let Lv::Ref(t) = *self.lv(op, tensor)? else { return Err(self.err(op, "expected a tensor")) };
        let Lv::Smem(like) = self.lv(op, buffer)?.clone() else { return Err(self.err(op, "expected a shared buffer")) };
        let geom = self.plan.buffers[&like.buffer].geom.clone();
        let box_dims = tma_box(like.rows, &geom, coords.len());
        let find = |tail: bool| self.plan.tma_index(t, &box_dims, geom.swizzle, false, fit_rows, tail);
        let full = self.descriptors[find(false).expect("planned")].clone();
        // The box the load from the same coordinates copies: past the last whole box, the tail one.
        let desc = match find(true) {
            Some(tail) => tma::Descriptor { param: self.select_tail(op, t, &coords, &box_dims, tail, &full.param)?, ..full },
            None => full,
        };
        let (col, outer) = self.tma_coords(op, &coords)?;
        tma::prefetch(&mut self.em, &geom, &desc, &col, &outer);
        Ok(())
    }

    fn lower_load_fragment(&mut self, op: Op) -> Result<(), Diagnostic> {
        let load = self.view(op, nv::LoadFragment::of)?;
        let (buffer, stage, result) = (load.buffer(&self.f.body), load.stage(&self.f.body), load.result(&self.f.body));
        let Lv::Smem(src) = self.lv(op, buffer)?.clone() else { return Err(self.err(op, "expected a shared buffer")) };
        let tile = self.f.body.value_type(result).as_tile().cloned().ok_or_else(|| self.err(op, "expected a tile"))?;
        let geom = AFragGeom::of(&tile, self.warps()).map_err(|m| self.err(op, m))?;
        let stage = self.scalar(op, stage)?;
        let t = self.thread();
        let (smem, wg) = (t.smem.clone(), if geom.warpgroups > 1 { t.wg.clone() } else { None });
        let source = ldmatrix::Source { buffer: &self.plan.buffers[&src.buffer], row_offset: src.row_offset.as_deref(), stage: &stage, smem: &smem };
        let tid_idx = self.em.assign("tid_idx", "gpu.thread_id x");
        let tid = self.em.assign("tid", format!("arith.index_cast {tid_idx} : index to i32"));
        let frag = ldmatrix::load(&mut self.em, &geom, tile.elem, &source, &tid, wg.as_deref());
        self.vals.insert(result, Lv::AFrag(frag));
        Ok(())
    }

    fn lower_wgmma(&mut self, op: Op) -> Result<(), Diagnostic> {
        if self.plan.warp_specialized && self.role != Role::Consumer {
            return Err(self.err(op, "in a warp-specialised kernel, wgmma runs in a consumer region"));
        }
        let mma = self.view(op, nv::Wgmma::of)?;
        let body = &self.f.body;
        let (result, loc) = (mma.result(body), body.ops[op].loc.clone());
        let (transpose_a, transpose_b) = (mma.transpose_a(body), mma.transpose_b(body));
        let (a_value, a_stage, b_value, b_stage, acc_value) = (mma.a(body), mma.a_stage(body), mma.b(body), mma.b_stage(body), mma.acc(body));
        let Lv::Smem(b_ref) = self.lv(op, b_value)?.clone() else { return Err(self.err(op, "B must be a shared buffer")) };
        let a_lv = self.lv(op, a_value)?.clone();
        let a = match &a_lv {
            Lv::Smem(a_ref) => wgmma::AOperand::Smem(wgmma::Operand {
                buffer: &self.plan.buffers[&a_ref.buffer],
                rows: a_ref.rows,
                row_offset: a_ref.row_offset.clone(),
                stage: self.scalar(op, a_stage.ok_or_else(|| self.err(op, "A in shared memory needs a stage"))?)?,
                k_major: !transpose_a,
            }),
            Lv::AFrag(regs) => wgmma::AOperand::Regs(regs),
            _ => return Err(self.err(op, "A must be a shared buffer or registers from nv.load_fragment")),
        };
        let b = wgmma::Operand {
            buffer: &self.plan.buffers[&b_ref.buffer],
            rows: b_ref.rows,
            row_offset: b_ref.row_offset,
            stage: self.scalar(op, b_stage)?,
            k_major: transpose_b,
        };
        let acc = self.frag(op, acc_value)?;
        let t = self.thread.as_ref().expect("prologue written");
        // Only warpgroups sharing one tile split it by the CTA-wide index.
        let wg = if acc.geom.warpgroups > 1 { t.wg.as_deref() } else { None };
        let init = if !mma.zero_init(body) {
            wgmma::Init::Accumulate
        } else if nv::mma::is_zero_splat(body, acc_value) {
            wgmma::Init::Zero
        } else {
            wgmma::Init::ZeroInPlace
        };
        let r = wgmma::lower(&mut self.em, &loc, &a, &b, &acc, init, &t.smem16, wg)?;
        self.vals.insert(result, Lv::Frag(r));
        Ok(())
    }

    /// An 8-bit float tile is stored as its conversion from f32 makes its
    /// codes, value by value: held as a tile it would have no LLVM form, so
    /// a store of one is rejected at the store, saying so.
    fn check_storable(&self, op: Op, value: Value) -> Result<(), Diagnostic> {
        let elem = self.f.body.value_type(value).elem();
        let converted_here = matches!(self.vals.get(&value), Some(Lv::Lazy(l)) if matches!(&*l.expr, Expr::Cast { .. }));
        if elem.is_float() && elem.bits() == 8 && !converted_here {
            let msg = format!(
                "stores an {} tile that is not converted from f32 right before the store ('tile.truncf'): register tiles of 8-bit floats have no LLVM form in the lowering",
                elem.mnemonic()
            );
            return Err(self.err(op, msg));
        }
        Ok(())
    }

    fn lower_store(&mut self, op: Op) -> Result<(), Diagnostic> {
        let store = self.view(op, nv::StoreGlobal::of)?;
        let (value, tensor) = (store.value(&self.f.body), store.tensor(&self.f.body));
        let coords = store.coords(&self.f.body).to_vec();
        self.check_storable(op, value)?;
        let stored = self.lv(op, value)?.clone();
        let values = self.values(op, &stored)?;
        let Lv::Ref(t) = *self.lv(op, tensor)? else { return Err(self.err(op, "expected a tensor")) };
        let m = self.matrix_at(op, t, &coords)?;
        let tid = self.thread().tid.clone();
        let thread = thread_coords(&mut self.em, &tid, values.geom().warpgroups);
        if let Some(group) = store.group(&self.f.body) {
            if values.geom().cols % group != 0 {
                return Err(self.err(op, format!("stores one value a group of {group} columns of a tile {} wide", values.geom().cols)));
            }
            store::store_groups(&mut self.em, &values, &thread, &m.ptr, (&m.row0, &m.col0), (&m.rows, &m.cols), group, m.column_major);
            return Ok(());
        }
        let pair = StorePair { elem: values.elem(), column_major: m.column_major };
        self.store_helpers.insert(pair.name(), pair);
        let share = values.frags().find_map(|f| self.stored_shares.get(&f.chunks[0])).cloned();
        let share = share.as_ref().map(|(lo, hi)| (lo.as_str(), hi.as_str()));
        store::store(&mut self.em, &values, &thread, &pair, &m.ptr, (&m.row0, &m.col0), (&m.rows, &m.cols), share);
        Ok(())
    }

    /// `tile.reduce`: each row's groups reduced in registers and shuffles
    /// (reduce.rs), its operand read position by position.
    fn lower_reduce(&mut self, op: Op) -> Result<(), Diagnostic> {
        let r = self.view(op, tile::Reduce::of)?;
        let body = &self.f.body;
        let (input, result, group) = (r.input(body), r.result(body), r.group(body));
        let kind = reduce::Kind::of_word(r.kind(body)).ok_or_else(|| self.err(op, format!("unknown reduction '{}'", r.kind(body))))?;
        let operand = self.lv(op, input)?.clone();
        let values = self.values(op, &operand)?;
        if values.geom().cols % group != 0 || group % 8 != 0 {
            return Err(self.err(op, format!("reduces groups of {group} columns of a tile {} wide", values.geom().cols)));
        }
        let frag = reduce::reduce_groups(&mut self.em, &values, kind, group);
        self.vals.insert(result, Lv::Frag(frag));
        Ok(())
    }

    /// A stored register tile's values: a fragment's, or an element-wise
    /// expression's, evaluated as the store reaches each position.
    fn values<'v>(&self, op: Op, stored: &'v Lv) -> Result<elementwise::Values<'v>, Diagnostic> {
        match stored {
            Lv::Frag(f) => Ok(elementwise::Values::Frag(f)),
            Lv::Lazy(l) => Ok(elementwise::Values::Expr { expr: &l.expr, geom: &l.geom }),
            _ => Err(self.err(op, "expected a register tile with a '#tile.mma' layout")),
        }
    }

    fn lower_store_shared(&mut self, op: Op) -> Result<(), Diagnostic> {
        let store = self.view(op, nv::StoreShared::of)?;
        let (value, buffer, stage) = (store.value(&self.f.body), store.buffer(&self.f.body), store.stage(&self.f.body));
        self.check_storable(op, value)?;
        let stored = self.lv(op, value)?.clone();
        let values = self.values(op, &stored)?;
        let Lv::Smem(dst) = self.lv(op, buffer)?.clone() else { return Err(self.err(op, "expected a shared buffer")) };
        if dst.row_offset.is_some() {
            return Err(self.err(op, "stores into row windows are not supported by the lowering"));
        }
        let buf = self.plan.buffers[&dst.buffer].clone();
        let stage = self.scalar(op, stage)?;
        let t = self.thread();
        let (tid, smem) = (t.tid.clone(), t.smem.clone());
        let base = tma::smem_ptr(&mut self.em, &smem, buf.offset, &stage, buf.geom.stage_bytes(), "c_stage");
        let coords = thread_coords(&mut self.em, &tid, values.geom().warpgroups);
        store::store_shared(&mut self.em, &values, &coords, &base, &buf.geom, store.column_offset(&self.f.body).unwrap_or(0));
        Ok(())
    }

    fn lower_tma_store(&mut self, op: Op) -> Result<(), Diagnostic> {
        let store = self.view(op, nv::TmaStore::of)?;
        let body = &self.f.body;
        let (buffer, stage, tensor) = (store.buffer(body), store.stage(body), store.tensor(body));
        let coords = store.coords(body).to_vec();
        let Lv::Smem(src) = self.lv(op, buffer)?.clone() else { return Err(self.err(op, "expected a shared buffer")) };
        if src.row_offset.is_some() {
            return Err(self.err(op, "TMA stores from row windows are not supported by the lowering"));
        }
        let Lv::Ref(t) = *self.lv(op, tensor)? else { return Err(self.err(op, "expected a tensor")) };
        let buf = self.plan.buffers[&src.buffer].clone();
        let desc_idx = self.plan.tma_index(t, &tma_box(buf.geom.rows, &buf.geom, coords.len()), buf.geom.swizzle, false, false, false).expect("planned");
        let stage = self.scalar(op, stage)?;
        let (col, outer) = self.tma_coords(op, &coords)?;
        let smem = self.thread().smem.clone();
        tma::store(&mut self.em, &smem, &buf, &stage, &self.descriptors[desc_idx], &col, &outer);
        Ok(())
    }

    fn lower_cluster_sum(&mut self, op: Op) -> Result<(), Diagnostic> {
        let sum = self.view(op, nv::ClusterSum::of)?;
        let body = &self.f.body;
        let (value, buffer, result) = (sum.value(body), sum.buffer(body), sum.result(body));
        self.check_cta_wide(op)?;
        self.check_clustered(op)?;
        let frag = self.frag(op, value)?;
        let Lv::Smem(parked) = self.lv(op, buffer)?.clone() else { return Err(self.err(op, "expected a shared buffer")) };
        let buf = self.plan.buffers[&parked.buffer].clone();
        let t = self.thread();
        let (tid, smem) = (t.tid.clone(), t.smem.clone());
        let c0 = self.em.i32(0);
        let base = tma::smem_ptr(&mut self.em, &smem, buf.offset, &c0, buf.geom.stage_bytes(), "parked");
        let total = cluster::sum(&mut self.em, &frag, &tid, &base, self.plan.threads(), self.plan.cluster_size());
        self.vals.insert(result, Lv::Frag(total));
        Ok(())
    }

    /// Cluster-scope ops need a kernel launched in clusters.
    fn check_clustered(&self, op: Op) -> Result<(), Diagnostic> {
        if self.plan.cluster_size() > 1 {
            return Ok(());
        }
        Err(self.err(op, "needs a kernel launched in clusters ('cluster_dims' with more than one CTA)"))
    }

    /// CTA-wide synchronisation inside a role would wait for the other
    /// role's warpgroups, which never arrive.
    fn check_cta_wide(&self, op: Op) -> Result<(), Diagnostic> {
        if self.role == Role::Cta {
            return Ok(());
        }
        Err(self.err(op, "waits for every thread of the CTA and cannot run inside one role of 'nv.warp_specialize'"))
    }

    /// The threads holding the register tiles of the current role, for
    /// stream-K's workspace: the CTA's, or all consumers' sharing each tile.
    fn holders(&mut self, op: Op) -> Result<holders::Holders, Diagnostic> {
        let Thread { tid, is_leader, wg, .. } = self.thread();
        let (tid, is_leader, wg) = (tid.clone(), is_leader.clone(), wg.clone());
        match self.role {
            Role::Cta => {
                let group = self.em.i32(0);
                Ok(holders::Holders { index: tid, count: self.plan.num_warps * 32, group, scope: holders::Scope::Cta { is_leader } })
            }
            Role::Consumer if self.alternating => Err(self.err(op, "adds partial tiles across CTAs, which consumers taking turns at whole tiles cannot share")),
            Role::Consumer => {
                let consumers = self.plan.num_warps / 4 - 1;
                if consumers > holders::MAX_GROUPS {
                    return Err(self.err(op, format!("adds partial tiles for {consumers} consumers; the workspace has counters and flags for {}", holders::MAX_GROUPS)));
                }
                let wg = wg.expect("plan checked: a specialised kernel has several warpgroups");
                let group = self.consumer.clone().expect("set while a consumer region is lowered");
                // The producer warpgroup comes first.
                let producer = self.em.i32(roles::WARPGROUP_THREADS);
                let index = self.em.binop("holder", "arith.subi", &tid, &producer, "i32");
                Ok(holders::Holders { index, count: roles::WARPGROUP_THREADS * consumers, group, scope: holders::Scope::Warpgroup { wg, tid } })
            }
            Role::Producer => Err(self.err(op, "adds partial tiles in the producer, which holds no tile (it belongs in the consumers)")),
        }
    }

    /// The holders of `value`'s tile and the bytes of a workspace slot,
    /// recorded for the manifest: a kernel's slots are all of one size.
    fn workspace_slot(&mut self, op: Op, value: Value) -> Result<(Frag, holders::Holders, i64), Diagnostic> {
        let frag = self.frag(op, value)?;
        if frag.elem != ElemType::F32 {
            return Err(self.err(op, "adds f32 register tiles only"));
        }
        let holders = self.holders(op)?;
        let bytes = stream_k::slot_bytes(&frag, &holders);
        if self.workspace_slot_bytes.is_some_and(|b| b != bytes) {
            return Err(self.err(op, "parks a tile of another size than the kernel's other workspace slots; the workspace has slots of one size"));
        }
        self.workspace_slot_bytes = Some(bytes);
        Ok((frag, holders, bytes))
    }

    fn lower_park(&mut self, op: Op) -> Result<(), Diagnostic> {
        let park = self.view(op, tile::ParkPartial::of)?;
        let (value, slot) = (park.value(&self.f.body), park.slot(&self.f.body));
        let (frag, holders, bytes) = self.workspace_slot(op, value)?;
        let slot = self.scalar(op, slot)?;
        let workspace = self.workspace_arg.clone().expect("a parameter when planned");
        stream_k::park(&mut self.em, &frag, &slot, &holders, bytes, &workspace);
        Ok(())
    }

    fn lower_add_parked(&mut self, op: Op) -> Result<(), Diagnostic> {
        let add = self.view(op, tile::AddParked::of)?;
        let body = &self.f.body;
        let (value, slot, result) = (add.value(body), add.slot(body), add.result(body));
        let (frag, holders, bytes) = self.workspace_slot(op, value)?;
        let slot = self.scalar(op, slot)?;
        let workspace = self.workspace_arg.clone().expect("a parameter when planned");
        let summed = stream_k::add(&mut self.em, &frag, &slot, &holders, bytes, &workspace);
        self.vals.insert(result, Lv::Frag(summed));
        Ok(())
    }

    fn lower_reduce_splits(&mut self, op: Op) -> Result<(), Diagnostic> {
        let reduce = self.view(op, tile::ReduceSplits::of)?;
        let body = &self.f.body;
        let (value, result, last, splits) = (reduce.value(body), reduce.result(body), reduce.last(body), reduce.splits(body));
        let (frag, holders, slot_bytes) = self.workspace_slot(op, value)?;
        let workspace = self.workspace_arg.clone().expect("a parameter when planned");
        let spread = reduce.spread(body).then_some(self.sms);
        let store_shares = spread.is_some() && self.shares_storable(op);
        let reduction = split_k::Reduction { workspace: &workspace, holders: &holders, splits, spread, store_shares };
        let reduced = split_k::reduce(&mut self.em, &frag, slot_bytes, &reduction);
        if let Some(share) = reduced.share {
            self.stored_shares.insert(reduced.frag.chunks[0].clone(), share);
        }
        self.vals.insert(result, Lv::Frag(reduced.frag));
        self.vals.insert(last, Lv::Scalar { name: reduced.stores, elem: ElemType::I1 });
        Ok(())
    }

    /// Whether the splits of `tile.reduce_splits` op `op` may each store
    /// their share of the summed tile instead of one split storing it all:
    /// everything computed from the tile after it, in its block, is
    /// element-wise (a column's value depends on no other column) and
    /// reaches memory only through direct stores of whole tiles (not a
    /// shared-memory buffer for TMA, not one value a group of columns),
    /// and the split flag only chooses, as `tile.if`'s condition, whether
    /// to run a region that writes memory through those stores alone.
    fn shares_storable(&self, op: Op) -> bool {
        let body = &self.f.body;
        let (summed, last) = (body.result(op, 0), body.result(op, 1));
        let Some(block) = body.ops[op].parent else { return false };
        let ops = &body.blocks[block].ops;
        let after = &ops[body.position_in_block(op) + 1..];
        let mut from_tile: HashSet<Value> = HashSet::from([summed]);
        let mut stores = 0;
        for &top in after {
            let nested = std::iter::once(top).chain(body.ops[top].regions.iter().flat_map(|&r| body.walk_region(r)));
            for o in nested {
                let data = &body.ops[o];
                let reads_tile = data.operands.iter().any(|v| from_tile.contains(v));
                if data.operands.contains(&last) && !(data.opcode() == Opcode::TileIf && data.operands == [last]) {
                    return false;
                }
                if data.opcode() == Opcode::NvStoreGlobal && reads_tile {
                    if nv::StoreGlobal::of(body, o).is_some_and(|s| s.group(body).is_some()) {
                        return false;
                    }
                    stores += 1;
                } else if reads_tile {
                    if !data.def.traits.elementwise || data.def.traits.crosses_columns {
                        return false;
                    }
                    from_tile.extend(data.results.iter().copied());
                } else if data.def.traits.writes_memory && body.ancestors(o).any(|a| body.ops[a].operands == [last]) {
                    return false;
                }
            }
        }
        stores > 0
    }

    fn lower_warp_specialize(&mut self, op: Op) -> Result<(), Diagnostic> {
        if self.role != Role::Cta {
            return Err(self.err(op, "nested warp specialisation is not supported by the lowering"));
        }
        let ws = self.view(op, nv::WarpSpecialize::of)?;
        let body = &self.f.body;
        let budgets = roles::Budgets { producer_regs: ws.producer_regs(body), consumer_regs: ws.consumer_regs(body) };
        let (producer, consumer) = (body.entry_block(ws.producer(body)), body.entry_block(ws.consumer(body)));
        let c_arg = self.f.body.blocks[consumer].args[0];
        let wg = self.thread().wg.clone().expect("plan checked: a specialised kernel has several warpgroups");

        self.alternating = body.ops[op].attrs.get("alternate").is_some();
        roles::open_producer(&mut self.em, &wg, &budgets);
        self.role = Role::Producer;
        self.lower_block(producer)?;
        let c = roles::open_consumer(&mut self.em, &wg, &budgets);
        self.vals.insert(c_arg, Lv::Scalar { name: c.clone(), elem: ElemType::Index });
        self.consumer = Some(c);
        self.role = Role::Consumer;
        self.reg_budget = budgets.consumer_regs;
        self.lower_block(consumer)?;
        roles::close(&mut self.em);
        self.role = Role::Cta;
        self.consumer = None;
        self.reg_budget = MAX_REGS;
        Ok(())
    }
}

/// The coordinate of a TMA box's first row: the tensor's second-last (its
/// last is the contiguous one). A stage's expected bytes and the load's
/// descriptor both choose the tail box by it, so that they agree: a
/// rank-3 tensor (a grouped GEMM's experts, a batch) has its group first,
/// and its tile only the two dimensions after.
fn box_row_coordinate(coords: &[Value]) -> Option<Value> {
    coords.len().checked_sub(2).map(|i| coords[i])
}
