//! Concrete traces: what each warp of a CTA executes, op by op, for one
//! choice of tensor sizes and grid, with every index evaluated.
//!
//! The symbolic checks reason about one pass through each loop; a trace
//! runs every iteration of every loop (every tile of a persistent kernel),
//! so the simulation built on it sees the steady state and the tile
//! boundaries as the GPU does. A warp is the unit: the warps of one role
//! run the same code, thread 0 (warp 0) alone issues the elected ops
//! (`expect_tx`, TMA loads and stores), and a warp's `arrive` is 32
//! arrivals.

use super::op_error;
use tilec_dialects::ir::{Block, Body, Op, Value};
use tilec_dialects::nv::memory::tma_load_operands;
use tilec_dialects::nv::mma::wgmma_operands;
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
    Arrive { barrier: Slot },
    ExpectTx { barrier: Slot, bytes: i64 },
    TmaLoad { buffer: Window, barrier: Slot, bytes: i64 },
    /// An `nv.wgmma`: the buffer stages it reads, asynchronously.
    Wgmma { reads: Vec<Window> },
    WgmmaFence,
    WgmmaCommit,
    WgmmaWait { depth: i64 },
    /// `nv.load_fragment`: a synchronous read into registers.
    LoadFragment { buffer: Window },
    StoreShared { buffer: Window },
    FenceProxy,
    TmaStore { buffer: Window },
    CtaBarrier,
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
        let mut tracer = Tracer { func, body: &func.body, config, warp, env: HashMap::new(), steps: Vec::new(), in_role: false, budget: MAX_STEPS };
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

struct Tracer<'a> {
    func: &'a Function,
    body: &'a Body,
    config: &'a Config,
    warp: i64,
    env: HashMap<Value, i64>,
    steps: Vec<Step>,
    /// Inside a role of an `nv.warp_specialize`.
    in_role: bool,
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
        let (mut root, mut offset) = (v, 0);
        while let Some(def) = body.defining_op(root).filter(|&d| body.ops[d].def.name == "nv.smem_rows") {
            offset += self.get(body.ops[def].operands[1])?;
            root = body.ops[def].operands[0];
        }
        Ok((root, offset))
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
        let (end, total) = (start + rows(v)?, rows(slot.0)?);
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
            let operands = &data.operands;
            let elected = self.warp == 0;
            match data.def.name {
                "tile.yield" => return Ok(operands.iter().map(|v| self.env.get(v).copied()).collect()),
                "tile.constant" => {
                    if let Some(c) = data.attrs.get_int("value") {
                        self.env.insert(data.results[0], c);
                    }
                }
                "tile.index_cast" => {
                    if let Some(&c) = self.env.get(&operands[0]) {
                        self.env.insert(data.results[0], c);
                    }
                }
                "tile.cmpi" => {
                    let predicate = data.attrs.get("predicate").and_then(|a| a.as_str()).unwrap_or("");
                    if let (Some(&a), Some(&b)) = (self.env.get(&operands[0]), self.env.get(&operands[1])) {
                        if let Some(r) = compare(predicate, a, b) {
                            self.env.insert(data.results[0], i64::from(r));
                        }
                    }
                }
                "tile.block_id" => {
                    self.env.insert(data.results[0], 0);
                }
                "tile.num_blocks" => {
                    let grid = if data.attrs.get_int("dim") == Some(0) { self.config.grid } else { 1 };
                    self.env.insert(data.results[0], grid);
                }
                "tile.dim" => {
                    let arg = self.func.args().iter().position(|&a| a == operands[0]);
                    let index = data.attrs.get_int("index").and_then(|i| usize::try_from(i).ok());
                    let name = arg.zip(index).and_then(|(a, i)| {
                        let names = self.func.arg_attrs[a].get("tile.dims")?.as_strings()?;
                        names.get(i).map(|s| s.to_string())
                    });
                    let size = name
                        .and_then(|n| self.config.dims.iter().find(|(d, _)| *d == n).map(|&(_, v)| v))
                        .unwrap_or(self.config.default);
                    self.env.insert(data.results[0], size);
                }
                "tile.for" => self.for_loop(op)?,
                "tile.if" => {
                    if self.get(operands[0])? != 0 {
                        self.block(body.entry_block(data.regions[0]))?;
                    }
                }
                "nv.warp_specialize" => {
                    // A warp count that does not match the roles is the
                    // lowering's error to report.
                    let consumers = data.attrs.get_int("consumers").unwrap_or(0);
                    if self.func.attrs.get_int("num_warps") != Some(WARPS_PER_GROUP * (1 + consumers)) {
                        return Err(Stop::Untraceable);
                    }
                    let consumer = self.warp / WARPS_PER_GROUP - 1;
                    let region = if consumer < 0 { data.regions[0] } else { data.regions[1] };
                    let entry = body.entry_block(region);
                    if let Some(&arg) = body.blocks[entry].args.first() {
                        self.env.insert(arg, consumer);
                    }
                    self.in_role = true;
                    self.block(entry)?;
                    self.in_role = false;
                }
                "nv.mbarrier_wait" => {
                    let barrier = self.slot(op, operands[0], operands[1])?;
                    let parity = self.get(operands[2])?;
                    self.push(op, StepKind::Wait { barrier, parity })?;
                }
                "nv.mbarrier_arrive" => {
                    let barrier = self.slot(op, operands[0], operands[1])?;
                    self.push(op, StepKind::Arrive { barrier })?;
                }
                "nv.mbarrier_expect_tx" if elected => {
                    let barrier = self.slot(op, operands[0], operands[1])?;
                    let bytes = data.attrs.get_int("bytes").unwrap_or(0);
                    self.push(op, StepKind::ExpectTx { barrier, bytes })?;
                }
                "nv.tma_load" if elected => {
                    let Some(o) = tma_load_operands(body, op) else { return Err(Stop::Untraceable) };
                    let buffer = self.window(op, o.buffer, o.stage)?;
                    let barrier = self.slot(op, o.barrier, o.barrier_stage)?;
                    let tile = &body.value_type(o.buffer).as_smem().ok_or(Stop::Untraceable)?.tile;
                    let bytes = tile.num_elements() * i64::from(tile.elem.bits()) / 8;
                    self.push(op, StepKind::TmaLoad { buffer, barrier, bytes })?;
                }
                "nv.wgmma" => {
                    let (a, rest) = wgmma_operands(body, op);
                    let mut reads = Vec::new();
                    if let [buf, stage] = a {
                        reads.push(self.window(op, *buf, *stage)?);
                    }
                    if let [buf, stage, ..] = rest {
                        reads.push(self.window(op, *buf, *stage)?);
                    }
                    self.push(op, StepKind::Wgmma { reads })?;
                }
                "nv.wgmma_fence" => self.push(op, StepKind::WgmmaFence)?,
                "nv.wgmma_commit" => self.push(op, StepKind::WgmmaCommit)?,
                "nv.wgmma_wait" => {
                    let depth = data.attrs.get_int("pending").unwrap_or(0);
                    self.push(op, StepKind::WgmmaWait { depth })?;
                }
                "nv.load_fragment" => {
                    let buffer = self.window(op, operands[0], operands[1])?;
                    self.push(op, StepKind::LoadFragment { buffer })?;
                }
                "nv.store_shared" => {
                    let buffer = self.window(op, operands[1], operands[2])?;
                    self.push(op, StepKind::StoreShared { buffer })?;
                }
                "nv.fence_async_shared" => self.push(op, StepKind::FenceProxy)?,
                "nv.tma_store" if elected => {
                    let buffer = self.window(op, operands[0], operands[1])?;
                    self.push(op, StepKind::TmaStore { buffer })?;
                }
                // A CTA barrier inside one role is the lowering's error.
                "nv.barrier" if self.in_role => return Err(Stop::Untraceable),
                "nv.barrier" => self.push(op, StepKind::CtaBarrier)?,
                name => {
                    if let (Some(&a), Some(&b), [result]) =
                        (operands.first().and_then(|v| self.env.get(v)), operands.get(1).and_then(|v| self.env.get(v)), &data.results[..])
                    {
                        if let Some(r) = binary_int_fold(name, a, b) {
                            self.env.insert(*result, r);
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
        let (lb, ub, step) = (self.get(data.operands[0])?, self.get(data.operands[1])?, self.get(data.operands[2])?);
        if step <= 0 {
            return Err(Stop::Untraceable);
        }
        let entry = body.entry_block(data.regions[0]);
        let args = &body.blocks[entry].args;
        let mut carried: Vec<Option<i64>> = data.operands[3..].iter().map(|v| self.env.get(v).copied()).collect();
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
            iv += step;
        }
        for (&result, value) in data.results.iter().zip(&carried) {
            if let Some(c) = value {
                self.env.insert(result, *c);
            }
        }
        Ok(())
    }
}
