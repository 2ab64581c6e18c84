//! Concrete traces: what each warp of a CTA executes, op by op, for one
//! choice of tensor sizes and grid, with every index evaluated.
//!
//! The symbolic checks reason about one pass through each loop; a trace
//! runs every iteration of every loop (every tile of a persistent kernel),
//! so the simulation built on it sees the steady state and the tile
//! boundaries as the GPU does. A warp is the unit: the warps of one role
//! run the same code, thread 0 (warp 0) alone issues the elected ops
//! (`expect_tx`, TMA loads and stores and their waits), or in a consumer
//! region the first warp of each consumer warpgroup, warp 0 alone copies
//! scales (`nv.copy_async`), and a warp's `arrive` is 32 arrivals.

use crate::op_error;
use tilec_dialects::ir::{Block, Body, Op, Value};
use tilec_dialects::registry::Opcode;
use tilec_dialects::{nv, tile};
use tilec_dialects::tile::arith::{binary_int_fold, compare};
use tilec_dialects::{Diagnostic, Function, Type};
use std::collections::HashMap;

/// Threads per warp: a warp's `arrive` counts this many arrivals.
pub const WARP: i64 = 32;
/// Warps per warpgroup: the producer role's size, and each consumer's.
const WARPS_PER_GROUP: i64 = 4;
/// A trace longer than this (in steps or loop iterations) is not simulated (the sizes the simulation
/// picks keep real kernels far below it).
const MAX_STEPS: usize = 200_000;

/// Tensor sizes and grid the trace is taken for.
#[derive(Clone, Debug)]
pub struct Config {
    /// Size of each named dimension (`tile.dims`); unnamed ones take `default`.
    pub dims: Vec<(&'static str, i64)>,
    pub default: i64,
    /// Number of CTAs along x (a persistent kernel's grid).
    pub grid: i64,
}

impl Config {
    pub fn describe(&self) -> String {
        let dims: Vec<String> = self.dims.iter().map(|(n, v)| format!("{n} = {v}")).collect();
        format!("{}, {} CTA(s) on x, CTA 0", dims.join(", "), self.grid)
    }
}

/// A (barrier or buffer) allocation and a concrete stage of it.
pub type Slot = (Value, i64);

/// The rows `[start, end)` of a buffer stage an access touches.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    pub slot: Slot,
    pub rows: (i64, i64),
}

#[derive(Clone, Debug)]
pub enum StepKind {
    Wait { barrier: Slot, parity: i64 },
    /// This warp's arrivals: every lane (32), or one for `per_warp`.
    Arrive { barrier: Slot, arrivals: i64 },
    /// The peer CTA's warp arriving on this CTA's barrier (one arrival):
    /// the mirror of this warp's `nv.mbarrier_arrive_remote`.
    RemoteArrive { barrier: Slot },
    ExpectTx { barrier: Slot, bytes: i64 },
    TmaLoad { buffer: Window, barrier: Slot, bytes: i64 },
    /// `nv.copy_async` (warp 0): writes the stage, then its 32 lanes arrive.
    CopyAsync { buffer: Window, barrier: Slot },
    /// `nv.load_shared`: a synchronous read of scales into registers.
    LoadShared { buffer: Window },
    /// An `nv.wgmma`: the buffer stages it reads, asynchronously.
    Wgmma { reads: Vec<Window> },
    WgmmaFence,
    WgmmaCommit,
    WgmmaWait { depth: i64 },
    /// `nv.load_fragment`: a synchronous read into registers.
    LoadFragment { buffer: Window },
    StoreShared { buffer: Window },
    FenceProxy,
    /// `nv.tma_store`: reads the stage until the warp's next `TmaStoreWait`.
    TmaStore { buffer: Window },
    TmaStoreWait,
    CtaBarrier,
    /// `nv.barrier {warpgroup}`: the `warps` warps from `first_warp` meet.
    WarpgroupBarrier { first_warp: usize, warps: usize },
}

#[derive(Clone, Debug)]
pub struct Step {
    pub op: Op,
    pub kind: StepKind,
}

/// Why a function has no trace: something it needs is not a concrete value.
pub struct Untraceable;

/// The steps of every warp of the CTA, or `Untraceable` where a loop bound,
/// branch condition or index is not computable from the sizes (or the
/// trace would be too long). Stage indices outside their allocation are
/// errors, located at the op.
pub fn trace(func: &Function, config: &Config) -> Result<Result<Vec<Vec<Step>>, Untraceable>, Diagnostic> {
    let warps = func.attrs.get_int("num_warps").unwrap_or(4);
    let mut traces = Vec::new();
    for warp in 0..warps {
        let mut tracer = Tracer { func, body: &func.body, config, warp, env: HashMap::new(), steps: Vec::new(), role: None, budget: MAX_STEPS };
        match tracer.block(func.entry_block()) {
            Ok(_) => traces.push(tracer.steps),
            Err(Stop::Untraceable) => return Ok(Err(Untraceable)),
            Err(Stop::Error(d)) => return Err(d),
        }
    }
    Ok(Ok(traces))
}

enum Stop {
    Untraceable,
    Error(Diagnostic),
}

/// The roles of an `nv.warp_specialize`.
#[derive(Clone, Copy)]
enum Role {
    Producer,
    Consumer,
}

struct Tracer<'a> {
    func: &'a Function,
    body: &'a Body,
    config: &'a Config,
    warp: i64,
    env: HashMap<Value, i64>,
    steps: Vec<Step>,
    /// The role of an `nv.warp_specialize` the warp is running, if any.
    role: Option<Role>,
    /// Loop iterations left before the trace is given up as too long.
    budget: usize,
}

impl Tracer<'_> {
    fn get(&self, v: Value) -> Result<i64, Stop> {
        self.env.get(&v).copied().ok_or(Stop::Untraceable)
    }

    /// The allocation behind `v` (through `nv.smem_rows` views, adding up
    /// their row offsets) and the row offset of `v` in it.
    fn root(&self, v: Value) -> Result<(Value, i64), Stop> {
        let body = self.body;
        let (mut root, mut offset) = (v, 0i64);
        while let Some(rows) = body.defining_op(root).and_then(|d| nv::SmemRows::of(body, d)) {
            offset = offset.checked_add(self.get(rows.row(body))?).ok_or(Stop::Untraceable)?;
            root = rows.buffer(body);
        }
        Ok((root, offset))
    }

    /// The rows of a cluster pair's multicast buffer that the peer CTA
    /// loads: the half of the allocation behind `v` that `mine` leaves.
    fn peer_half(&self, op: Op, v: Value, mine: Window) -> Result<Window, Stop> {
        let (root, _) = self.root(v)?;
        let rows = self.body.value_type(root).as_smem().ok_or(Stop::Untraceable)?.tile.shape[0];
        let half = mine.rows.1 - mine.rows.0;
        if 2 * half != rows {
            let msg = format!("multicasts {half} of the buffer's {rows} rows: each CTA of a pair must load one half");
            return Err(Stop::Error(op_error(self.body, op, msg)));
        }
        let start = if mine.rows.0 >= half { mine.rows.0 - half } else { mine.rows.0 + half };
        Ok(Window { slot: mine.slot, rows: (start, start + half) })
    }

    /// Stage `stage` of the allocation behind `v`, checked against its stages.
    fn slot(&self, op: Op, v: Value, stage: Value) -> Result<Slot, Stop> {
        let body = self.body;
        let (root, _) = self.root(v)?;
        let stages = match body.value_type(root) {
            Type::MBarrier(s) => *s,
            ty => ty.as_smem().map_or(1, |s| s.stages),
        };
        let index = self.get(stage)?;
        if !(0..stages).contains(&index) {
            let msg = format!("uses stage {index} of {}, which has {stages} stage(s) ({})", self.name(root), self.config.describe());
            return Err(Stop::Error(op_error(body, op, msg)));
        }
        Ok((root, index))
    }

    /// The rows of a buffer stage that `v` (a buffer or a row window of
    /// one) covers, checked against the buffer's rows.
    fn window(&self, op: Op, v: Value, stage: Value) -> Result<Window, Stop> {
        let body = self.body;
        let slot = self.slot(op, v, stage)?;
        let (_, start) = self.root(v)?;
        let rows = |x: Value| body.value_type(x).as_smem().and_then(|s| s.tile.shape.first().copied()).ok_or(Stop::Untraceable);
        // A window not on a multiple of 8 rows is the lowering's error.
        if start % 8 != 0 {
            return Err(Stop::Untraceable);
        }
        let (end, total) = (start.checked_add(rows(v)?).ok_or(Stop::Untraceable)?, rows(slot.0)?);
        if start < 0 || end > total {
            let msg = format!("uses rows [{start}, {end}) of {}, which has {total} row(s) ({})", self.name(slot.0), self.config.describe());
            return Err(Stop::Error(op_error(body, op, msg)));
        }
        Ok(Window { slot, rows: (start, end) })
    }

    fn name(&self, v: Value) -> String {
        self.body.values[v].name_hint.as_deref().map_or("the allocation".to_string(), |n| format!("'%{n}'"))
    }

    fn push(&mut self, op: Op, kind: StepKind) -> Result<(), Stop> {
        if self.steps.len() >= MAX_STEPS {
            return Err(Stop::Untraceable);
        }
        self.steps.push(Step { op, kind });
        Ok(())
    }

    /// Runs `block`; returns what its `tile.yield` yields (`None` for a
    /// value that is not a known integer).
    fn block(&mut self, block: Block) -> Result<Vec<Option<i64>>, Stop> {
        let body = self.body;
        for &op in &body.blocks[block].ops {
            let data = &body.ops[op];
            // A consumer warpgroup's first warp issues its elected ops.
            let elected = match self.role {
                Some(Role::Consumer) => self.warp % WARPS_PER_GROUP == 0,
                Some(Role::Producer) | None => self.warp == 0,
            };
            // Every view below is of the op the arm matched: `expect` cannot fail.
            match body.opcode(op) {
                Opcode::TileYield => {
                    let values = tile::Yield::of(body, op).expect("matched").values(body);
                    return Ok(values.iter().map(|v| self.env.get(v).copied()).collect());
                }
                Opcode::TileConstant => {
                    if let Some(c) = data.attrs.get_int("value") {
                        self.env.insert(data.results[0], c);
                    }
                }
                Opcode::TileIndexCast => {
                    let cast = tile::IndexCast::of(body, op).expect("matched");
                    if let Some(&c) = self.env.get(&cast.input(body)) {
                        self.env.insert(cast.result(body), c);
                    }
                }
                Opcode::TileCmpi => {
                    let cmp = tile::Cmpi::of(body, op).expect("matched");
                    if let (Some(&a), Some(&b)) = (self.env.get(&cmp.lhs(body)), self.env.get(&cmp.rhs(body))) {
                        if let Some(r) = compare(cmp.predicate(body), a, b) {
                            self.env.insert(cmp.result(body), i64::from(r));
                        }
                    }
                }
                Opcode::TileBlockId => {
                    self.env.insert(data.results[0], 0);
                }
                Opcode::TileNumBlocks => {
                    let grid = if data.attrs.get_int("dim") == Some(0) { self.config.grid } else { 1 };
                    self.env.insert(data.results[0], grid);
                }
                Opcode::TileDim => {
                    let dim = tile::Dim::of(body, op).expect("matched");
                    let arg = self.func.args().iter().position(|&a| a == dim.tensor(body));
                    let index = usize::try_from(dim.index(body)).ok();
                    let name = arg.zip(index).and_then(|(a, i)| {
                        let names = self.func.arg_attrs[a].get("tile.dims")?.as_strings()?;
                        names.get(i).map(|s| s.to_string())
                    });
                    let size = name
                        .and_then(|n| self.config.dims.iter().find(|(d, _)| *d == n).map(|&(_, v)| v))
                        .unwrap_or(self.config.default);
                    self.env.insert(dim.result(body), size);
                }
                Opcode::TileFor => self.for_loop(op)?,
                Opcode::TileIf => {
                    let cond = tile::If::of(body, op).expect("matched").condition(body);
                    if self.get(cond)? != 0 {
                        self.block(body.entry_block(data.regions[0]))?;
                    }
                }
                Opcode::NvWarpSpecialize => {
                    // A warp count that does not match the roles is the
                    // lowering's error to report.
                    let consumers = nv::WarpSpecialize::of(body, op).expect("matched").consumers(body);
                    if self.func.attrs.get_int("num_warps") != Some(WARPS_PER_GROUP * (1 + consumers)) {
                        return Err(Stop::Untraceable);
                    }
                    let consumer = self.warp / WARPS_PER_GROUP - 1;
                    let region = if consumer < 0 { data.regions[0] } else { data.regions[1] };
                    let entry = body.entry_block(region);
                    if let Some(&arg) = body.blocks[entry].args.first() {
                        self.env.insert(arg, consumer);
                    }
                    self.role = Some(if consumer < 0 { Role::Producer } else { Role::Consumer });
                    self.block(entry)?;
                    self.role = None;
                }
                Opcode::NvMbarrierWait => {
                    let wait = nv::MbarrierWait::of(body, op).expect("matched");
                    let barrier = self.slot(op, wait.barrier(body), wait.stage(body))?;
                    let parity = self.get(wait.phase(body))?;
                    self.push(op, StepKind::Wait { barrier, parity })?;
                }
                Opcode::NvMbarrierArrive => {
                    let arrive = nv::MbarrierArrive::of(body, op).expect("matched");
                    let barrier = self.slot(op, arrive.barrier(body), arrive.stage(body))?;
                    let arrivals = if arrive.per_warp(body) { 1 } else { WARP };
                    self.push(op, StepKind::Arrive { barrier, arrivals })?;
                }
                Opcode::NvMbarrierArriveRemote => {
                    let arrive = nv::MbarrierArriveRemote::of(body, op).expect("matched");
                    let barrier = self.slot(op, arrive.barrier(body), arrive.stage(body))?;
                    self.push(op, StepKind::RemoteArrive { barrier })?;
                }
                Opcode::NvClusterRank => {
                    self.env.insert(body.result(op, 0), 0);
                }
                Opcode::NvMbarrierExpectTx if elected => {
                    let expect = nv::MbarrierExpectTx::of(body, op).expect("matched");
                    let barrier = self.slot(op, expect.barrier(body), expect.stage(body))?;
                    self.push(op, StepKind::ExpectTx { barrier, bytes: expect.bytes(body) })?;
                }
                Opcode::NvTmaLoad if elected => {
                    let load = nv::TmaLoad::of(body, op).expect("matched");
                    let buffer = self.window(op, load.buffer(body), load.stage(body))?;
                    let barrier = self.slot(op, load.barrier(body), load.barrier_stage(body))?;
                    let tile = &body.value_type(load.buffer(body)).as_smem().ok_or(Stop::Untraceable)?.tile;
                    let bytes = tile.num_elements() * i64::from(tile.elem.bits()) / 8;
                    self.push(op, StepKind::TmaLoad { buffer, barrier, bytes })?;
                    if load.multicast(body) {
                        // The peer's multicast of the other half, mirrored.
                        let peer = self.peer_half(op, load.buffer(body), buffer)?;
                        self.push(op, StepKind::TmaLoad { buffer: peer, barrier, bytes })?;
                    }
                }
                Opcode::NvCopyAsync if self.warp == 0 => {
                    let copy = nv::CopyAsync::of(body, op).expect("matched");
                    let buffer = self.window(op, copy.buffer(body), copy.stage(body))?;
                    let barrier = self.slot(op, copy.barrier(body), copy.barrier_stage(body))?;
                    self.push(op, StepKind::CopyAsync { buffer, barrier })?;
                }
                Opcode::NvLoadShared => {
                    let load = nv::LoadShared::of(body, op).expect("matched");
                    let buffer = self.window(op, load.buffer(body), load.stage(body))?;
                    self.push(op, StepKind::LoadShared { buffer })?;
                }
                Opcode::NvWgmma => {
                    let mma = nv::Wgmma::of(body, op).expect("matched");
                    let mut reads = Vec::new();
                    if let Some(stage) = mma.a_stage(body) {
                        reads.push(self.window(op, mma.a(body), stage)?);
                    }
                    reads.push(self.window(op, mma.b(body), mma.b_stage(body))?);
                    self.push(op, StepKind::Wgmma { reads })?;
                }
                Opcode::NvWgmmaFence => self.push(op, StepKind::WgmmaFence)?,
                Opcode::NvWgmmaCommit => self.push(op, StepKind::WgmmaCommit)?,
                Opcode::NvWgmmaWait => {
                    let depth = data.attrs.get_int("pending").unwrap_or(0);
                    self.push(op, StepKind::WgmmaWait { depth })?;
                }
                Opcode::NvLoadFragment => {
                    let load = nv::LoadFragment::of(body, op).expect("matched");
                    let buffer = self.window(op, load.buffer(body), load.stage(body))?;
                    self.push(op, StepKind::LoadFragment { buffer })?;
                }
                Opcode::NvStoreShared => {
                    let store = nv::StoreShared::of(body, op).expect("matched");
                    let buffer = self.window(op, store.buffer(body), store.stage(body))?;
                    self.push(op, StepKind::StoreShared { buffer })?;
                }
                Opcode::NvFenceAsyncShared => self.push(op, StepKind::FenceProxy)?,
                Opcode::NvTmaStore if elected => {
                    let store = nv::TmaStore::of(body, op).expect("matched");
                    let buffer = self.window(op, store.buffer(body), store.stage(body))?;
                    self.push(op, StepKind::TmaStore { buffer })?;
                }
                Opcode::NvTmaStoreWait if elected => self.push(op, StepKind::TmaStoreWait)?,
                Opcode::NvBarrier if nv::Barrier::of(body, op).expect("matched").warpgroup(body) => {
                    let first_warp = usize::try_from(self.warp - self.warp % WARPS_PER_GROUP).map_err(|_| Stop::Untraceable)?;
                    self.push(op, StepKind::WarpgroupBarrier { first_warp, warps: WARPS_PER_GROUP as usize })?;
                }
                // A CTA or cluster barrier inside one role is the lowering's
                // error; a cluster barrier orders the peer (mirrored) as this
                // CTA's warps. Split-K's cluster sum meets the cluster after
                // parking its tile.
                Opcode::NvBarrier | Opcode::NvClusterBarrier | Opcode::NvClusterSum if self.role.is_some() => return Err(Stop::Untraceable),
                Opcode::NvBarrier | Opcode::NvClusterBarrier | Opcode::NvClusterSum => self.push(op, StepKind::CtaBarrier)?,
                _ => {
                    let Some(binary) = tile::IntBinary::of(body, op) else { continue };
                    if let (Some(&a), Some(&b)) = (self.env.get(&binary.lhs(body)), self.env.get(&binary.rhs(body))) {
                        if let Some(r) = binary_int_fold(body.opcode(op), a, b) {
                            self.env.insert(binary.result(body), r);
                        }
                    }
                }
            }
        }
        Ok(Vec::new())
    }

    fn for_loop(&mut self, op: Op) -> Result<(), Stop> {
        let body = self.body;
        let data = &body.ops[op];
        let for_op = tile::For::of(body, op).expect("called on tile.for");
        let (lb, ub, step) = (self.get(for_op.lower_bound(body))?, self.get(for_op.upper_bound(body))?, self.get(for_op.step(body))?);
        if step <= 0 {
            return Err(Stop::Untraceable);
        }
        let entry = body.entry_block(data.regions[0]);
        let args = &body.blocks[entry].args;
        let mut carried: Vec<Option<i64>> = for_op.inits(body).iter().map(|v| self.env.get(v).copied()).collect();
        let mut iv = lb;
        while iv < ub {
            self.budget = self.budget.checked_sub(1).ok_or(Stop::Untraceable)?;
            self.env.insert(args[0], iv);
            for (&arg, value) in args[1..].iter().zip(&carried) {
                match value {
                    Some(c) => self.env.insert(arg, *c),
                    None => self.env.remove(&arg),
                };
            }
            carried = self.block(entry)?;
            // A trip past i64 ends the loop where the kernel's 32-bit indices
            // would long have failed; the index-range check reports that.
            let Some(next) = iv.checked_add(step) else { break };
            iv = next;
        }
        for (&result, value) in data.results.iter().zip(&carried) {
            if let Some(c) = value {
                self.env.insert(result, *c);
            }
        }
        Ok(())
    }
}
