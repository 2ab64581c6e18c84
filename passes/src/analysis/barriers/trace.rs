//! Concrete traces: what each warp of a CTA executes, op by op, for one
//! choice of tensor sizes and grid, with every index evaluated.
//!
//! The symbolic checks reason about one pass through each loop; a trace
//! runs every iteration of every loop (every tile of a persistent kernel),
//! so the simulation built on it sees the steady state and the tile
//! boundaries as the GPU does. A warp is the unit: the warps of one role
//! run the same code, thread 0 (warp 0) alone issues the elected ops
//! (`expect_tx`, TMA loads and stores and their waits), or in a consumer
//! region the first warp of each consumer warpgroup, warp 1 alone copies
//! scales (`nv.copy_async`, [`COPYING_WARP`]), and a warp's `arrive` is 32
//! arrivals.
//!
//! Every op on the way is evaluated or classified: integer arithmetic,
//! comparisons and selects are computed; a value that depends on the data
//! (a scalar loaded from a tensor, a run offset that depends on a tensor's
//! strides) is symbolic, taken at the end of its range that
//! [`Config::data`] names, so that the simulation sees both ends (an
//! expert with no rows and one with all of them, a scale run at the start
//! and at the end of its 16-byte window); ops that compute tensors only
//! matter through the buffers and barriers they name. An op the trace
//! cannot follow (a synchronising op it does not model, a loop bound that
//! is not computable) stops it with the op and the reason, which the
//! verifier reports as a warning rather than passing the function.

use crate::pass::op_error;
use std::collections::HashSet;
use super::model::cluster_size;
use tilec_dialects::ir::{Block, Body, EntityRef, Op, Value};
use tilec_dialects::nv::memory::{COPYING_WARP, TMA_GLOBAL_ALIGN};
use tilec_dialects::registry::Opcode;
use tilec_dialects::tile::arith::{binary_int_fold, compare};
use tilec_dialects::{nv, tile};
use tilec_dialects::{Diagnostic, Function, Type};

/// Threads per warp: a warp's `arrive` counts this many arrivals.
pub const WARP: i64 = 32;
/// Warps per warpgroup: the producer role's size, and each consumer's.
const WARPS_PER_GROUP: i64 = 4;
/// A trace longer than this (in steps or loop iterations) is not simulated (the sizes the simulation
/// picks keep real kernels far below it).
const MAX_STEPS: usize = 200_000;

/// Tensor sizes, grid, CTA and data the trace is taken for.
#[derive(Clone, Debug, Hash)]
pub struct Config {
    /// Size of each named dimension (`tile.dims`); unnamed ones take `default`.
    pub dims: Vec<(&'static str, i64)>,
    pub default: i64,
    /// Number of CTAs along x (a persistent kernel's grid).
    pub grid: i64,
    /// The CTA traced: its block id along x.
    pub cta: i64,
    /// Where in their ranges the data-dependent values lie; `None` for a
    /// function that computes nothing from its data.
    pub data: Option<Data>,
}

/// The end of its range each data-dependent value takes in one trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Data {
    /// Loaded scalars 0 (an expert with no rows), run offsets 0, a split
    /// that does not arrive last.
    Low,
    /// Loaded scalars the largest size (an expert with every row), run
    /// offsets the last element before the next 16-byte boundary, the split
    /// that arrives last.
    High,
}

impl Config {
    pub fn describe(&self) -> String {
        let dims: Vec<String> = self.dims.iter().map(|(n, v)| format!("{n} = {v}")).collect();
        let data = match self.data {
            None => "",
            Some(Data::Low) => ", loaded scalars and run offsets 0, a split that does not arrive last",
            Some(Data::High) => ", loaded scalars the largest size, run offsets the largest, the split that arrives last",
        };
        format!("{}, {} CTA(s) on x, CTA {}{data}", dims.join(", "), self.grid, self.cta)
    }

    /// The end of its range a data-dependent value takes (a function with
    /// no such value asks for none).
    fn data(&self) -> Data {
        self.data.unwrap_or(Data::Low)
    }

    /// What a scalar loaded from a tensor stands for in this trace.
    fn loaded_scalar(&self) -> i64 {
        match self.data() {
            Data::Low => 0,
            Data::High => self.dims.iter().map(|&(_, v)| v).chain([self.default]).max().unwrap_or(self.default),
        }
    }
}

/// A (barrier or buffer) allocation and a concrete stage of it.
pub type Slot = (Value, i64);

/// The rows `[start, end)` of a buffer stage an access touches.
#[derive(Clone, Copy, Debug, Hash)]
pub struct Window {
    pub slot: Slot,
    pub rows: (i64, i64),
}

#[derive(Clone, Debug, Hash)]
pub enum StepKind {
    Wait { barrier: Slot, parity: i64 },
    /// This warp's arrivals: every lane (32), or one for `per_warp`.
    Arrive { barrier: Slot, arrivals: i64 },
    /// The peer CTA's warp arriving on this CTA's barrier (one arrival):
    /// the mirror of this warp's `nv.mbarrier_arrive_remote`.
    RemoteArrive { barrier: Slot, cta: i64 },
    ExpectTx { barrier: Slot, bytes: i64 },
    /// A TMA load into `buffer`; with `peer`, the mirror of the peer CTA's
    /// multicast of its half, issued once the peer's barrier lets it.
    TmaLoad { buffer: Window, barrier: Slot, bytes: i64, peer: bool },
    /// `nv.copy_async` (the copying warp): writes the stages (one, or its
    /// `stages` consecutive ones), then its 32 lanes arrive.
    CopyAsync { buffers: Vec<Window>, barrier: Slot },
    /// `nv.load_shared`: a synchronous read of scales into registers.
    LoadShared { buffer: Window },
    /// An `nv.wgmma`: the buffer stages it reads, asynchronously, and the
    /// value its result is (which a wait must take only once it is done).
    Wgmma { reads: Vec<Window>, result: Value },
    WgmmaFence,
    WgmmaCommit,
    /// An `nv.wgmma_wait`: the groups it leaves in flight, and the values
    /// it takes whose returned results something reads in registers (not
    /// only a later wgmma accumulating into them, a later wait or a loop's
    /// yield, which may take a result still being written).
    WgmmaWait { depth: i64, read: Vec<Value> },
    /// `nv.load_fragment`: a synchronous read into registers.
    LoadFragment { buffer: Window },
    StoreShared { buffer: Window },
    FenceProxy,
    /// `nv.tma_store`: reads the stage until the warp's next `TmaStoreWait`.
    TmaStore { buffer: Window },
    TmaStoreWait,
    CtaBarrier,
    /// Every warp of the CTA and of its (mirrored) peer meet.
    ClusterBarrier,
    /// `nv.barrier {warpgroup}`: the `warps` warps from `first_warp` meet.
    WarpgroupBarrier { first_warp: usize, warps: usize },
}

#[derive(Clone, Debug, Hash)]
pub struct Step {
    pub op: Op,
    pub kind: StepKind,
}

/// Why a function has no trace: the op the trace could not follow, and why.
pub struct Untraceable {
    pub op: Op,
    pub reason: String,
}

/// The steps of every warp of the CTA, or `Untraceable` where a loop bound,
/// branch condition or index is not computable from the sizes, an op is
/// one the trace does not model, or the trace would be too long. Stage
/// indices outside their allocation are errors, located at the op.
pub fn trace(func: &Function, config: &Config) -> Result<Result<Vec<Vec<Step>>, Untraceable>, Diagnostic> {
    let warps = func.attrs.get_int("num_warps").unwrap_or(4);
    let register_reads = read_in_registers(&func.body);
    let mut traces: Vec<Vec<Step>> = Vec::new();
    // The warps of a class trace alike: the first of each class is traced.
    let mut traced: Vec<(WarpClass, usize)> = Vec::new();
    for warp in 0..warps {
        let class = WarpClass::of(warp);
        if let Some(&(_, first)) = traced.iter().find(|(c, _)| *c == class) {
            let same = traces[first].clone();
            traces.push(same);
            continue;
        }
        let mut tracer = Tracer { func, body: &func.body, config, class, env: Env::new(&func.body), steps: Vec::new(), role: None, budget: MAX_STEPS, register_reads: &register_reads };
        match tracer.block(func.entry_block()) {
            Ok(_) => {
                check_releases_every_peer(func, &tracer.steps)?;
                traced.push((class, traces.len()));
                traces.push(tracer.steps);
            }
            Err(Stop::Untraceable(why)) => return Ok(Err(why)),
            Err(Stop::Error(d)) => return Err(d),
        }
    }
    Ok(Ok(traces))
}

/// The traced CTA is rank 0 of its cluster (`nv.cluster_rank` traces as 0),
/// and the simulation mirrors each of its remote arrivals as one a peer
/// makes on its own barrier, which cannot tell which peer a release
/// reached. So the trace checks it here: a warp releases each barrier it
/// arrives on remotely to every other CTA of the cluster, as often to
/// each (a peer left out may still be reading the stage its multicast
/// refills), and to none outside the cluster or itself.
fn check_releases_every_peer(func: &Function, steps: &[Step]) -> Result<(), Diagnostic> {
    let ctas = cluster_size(func);
    let mut released: Vec<(Value, Op, Vec<i64>)> = Vec::new();
    for step in steps {
        let StepKind::RemoteArrive { barrier, cta } = step.kind else { continue };
        if !(1..ctas).contains(&cta) {
            let msg = format!("arrives on the barrier of CTA {cta} of a cluster of {ctas}, traced as CTA 0: a remote arrive goes to another CTA of the cluster");
            return Err(op_error(&func.body, step.op, msg));
        }
        let at = match released.iter().position(|(b, _, _)| *b == barrier.0) {
            Some(at) => at,
            None => {
                released.push((barrier.0, step.op, vec![0; ctas as usize]));
                released.len() - 1
            }
        };
        released[at].2[cta as usize] += 1;
    }
    for (barrier, op, counts) in released {
        let peers = &counts[1..];
        if peers.iter().any(|&n| n != peers[0]) {
            let name = func.body.values[barrier].name_hint.as_deref().map_or_else(|| "its barrier".to_string(), |n| format!("'%{n}'"));
            let each: Vec<String> = peers.iter().enumerate().map(|(i, n)| format!("CTA {}: {n}", i + 1)).collect();
            let msg = format!("releases {name} unevenly to the other CTAs of its cluster of {ctas} ({}): every peer multicasts into the stage and must see it released as often", each.join(", "));
            return Err(op_error(&func.body, op, msg));
        }
    }
    Ok(())
}

/// What a warp's trace depends on of the warp: whether it is the CTA's
/// first, whether it is the copying warp, whether it leads its warpgroup,
/// and which warpgroup it is in. The tracer sees a warp only through this,
/// so the warps of one class (a consumer warpgroup's three others) take the
/// same steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct WarpClass {
    first: bool,
    copies: bool,
    leads_group: bool,
    group: i64,
}

impl WarpClass {
    fn of(warp: i64) -> WarpClass {
        WarpClass { first: warp == 0, copies: warp == COPYING_WARP, leads_group: warp % WARPS_PER_GROUP == 0, group: warp / WARPS_PER_GROUP }
    }

    /// Whether the warp issues the elected ops: in a consumer region the
    /// first warp of each consumer warpgroup, elsewhere the CTA's first.
    fn elected(self, role: Option<Role>) -> bool {
        match role {
            Some(Role::Consumer) => self.leads_group,
            Some(Role::Producer) | None => self.first,
        }
    }

    /// The consumer the warp's warpgroup is in a warp-specialised region
    /// (negative for the producer).
    fn consumer(self) -> i64 {
        self.group - 1
    }

    /// The first warp of its warpgroup.
    fn first_of_group(self) -> i64 {
        self.group * WARPS_PER_GROUP
    }
}

/// Whether `func` computes something from its data (a loaded scalar, a run
/// offset) or its run (the split that arrives last): its traces are then
/// taken at both ends of those values' ranges.
pub fn reads_data(func: &Function) -> bool {
    let body = &func.body;
    body.ops.keys().any(|op| matches!(body.opcode(op), Opcode::TileLoadScalar | Opcode::NvRunOffset | Opcode::TileReduceSplits))
}

enum Stop {
    Untraceable(Untraceable),
    Error(Diagnostic),
}

fn untraceable(op: Op, reason: impl Into<String>) -> Stop {
    Stop::Untraceable(Untraceable { op, reason: reason.into() })
}

/// The integers known at the current point of a trace, by value: a trace
/// binds every value it passes each iteration, so a table by the value's
/// index is much cheaper than a hash map.
struct Env(Vec<Option<i64>>);

impl Env {
    fn new(body: &Body) -> Self {
        Env(vec![None; body.values.len()])
    }

    fn get(&self, v: &Value) -> Option<&i64> {
        self.0[v.index()].as_ref()
    }

    fn insert(&mut self, v: Value, c: i64) {
        self.0[v.index()] = Some(c);
    }

    fn remove(&mut self, v: &Value) {
        self.0[v.index()] = None;
    }
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
    class: WarpClass,
    env: Env,
    steps: Vec<Step>,
    /// The role of an `nv.warp_specialize` the warp is running, if any.
    role: Option<Role>,
    /// Loop iterations left before the trace is given up as too long.
    budget: usize,
    /// The values some op reads in registers ([`read_in_registers`]).
    register_reads: &'a HashSet<Value>,
}

/// The values of `body` that an op other than `nv.wgmma` (accumulating into
/// them), `nv.wgmma_wait` or `tile.yield` takes: where a wgmma's result is
/// read, it must be done.
fn read_in_registers(body: &Body) -> HashSet<Value> {
    let passes_on = |op: Op| matches!(body.opcode(op), Opcode::NvWgmma | Opcode::NvWgmmaWait | Opcode::TileYield);
    body.ops.keys().filter(|&op| !passes_on(op)).flat_map(|op| body.ops[op].operands.iter().copied()).collect()
}

impl Tracer<'_> {
    /// The concrete value of `v`, which `op` needs as its `what`.
    fn get(&self, op: Op, v: Value, what: &str) -> Result<i64, Stop> {
        self.env.get(&v).copied().ok_or_else(|| {
            let value = self.body.values[v].name_hint.as_deref().map_or(String::new(), |n| format!(" '%{n}'"));
            untraceable(op, format!("its {what}{value} is not computable from the tensor sizes, the grid and the data's ranges"))
        })
    }

    /// The allocation behind `v` (through `nv.smem_rows` views, adding up
    /// their row offsets) and the row offset of `v` in it.
    fn root(&self, op: Op, v: Value) -> Result<(Value, i64), Stop> {
        let body = self.body;
        let (mut root, mut offset) = (v, 0i64);
        while let Some(rows) = body.defining_op(root).and_then(|d| nv::SmemRows::of(body, d)) {
            let row = self.get(op, rows.row(body), "row offset")?;
            offset = offset.checked_add(row).ok_or_else(|| untraceable(op, "its row offset overflows"))?;
            root = rows.buffer(body);
        }
        Ok((root, offset))
    }

    /// The rows of a cluster's multicast buffer that the peer CTAs load:
    /// the shares of the allocation behind `v` that `mine` leaves, one a
    /// peer, for a cluster of `ctas` CTAs.
    fn peer_shares(&self, op: Op, v: Value, mine: Window, ctas: i64) -> Result<Vec<Window>, Stop> {
        let (root, _) = self.root(op, v)?;
        let rows = self.rows(op, root)?;
        let share = mine.rows.1 - mine.rows.0;
        if share * ctas != rows || mine.rows.0 % share != 0 {
            let msg = format!("multicasts rows {} to {} of the buffer's {rows}: each of a cluster's {ctas} CTAs must load its own {ctas}th", mine.rows.0, mine.rows.1);
            return Err(Stop::Error(op_error(self.body, op, msg)));
        }
        Ok((0..ctas).map(|i| i * share).filter(|&start| start != mine.rows.0).map(|start| Window { slot: mine.slot, rows: (start, start + share) }).collect())
    }

    /// The rows of the shared buffer `v` (the verifier has checked that
    /// buffer operands are buffers).
    fn rows(&self, op: Op, v: Value) -> Result<i64, Stop> {
        let shape = self.body.value_type(v).as_smem().map(|s| &s.tile.shape);
        shape.and_then(|s| s.first().copied()).ok_or_else(|| untraceable(op, "a buffer operand is not a shared buffer with rows"))
    }

    /// Stage `stage` of the allocation behind `v`, checked against its stages.
    fn slot(&self, op: Op, v: Value, stage: Value) -> Result<Slot, Stop> {
        let body = self.body;
        let (root, _) = self.root(op, v)?;
        let stages = match body.value_type(root) {
            Type::MBarrier(s) => *s,
            ty => ty.as_smem().map_or(1, |s| s.stages),
        };
        let index = self.get(op, stage, "stage index")?;
        if !(0..stages).contains(&index) {
            let msg = format!("uses stage {index} of {}, which has {stages} stage(s) ({})", self.name(root), self.config.describe());
            return Err(Stop::Error(op_error(body, op, msg)));
        }
        Ok((root, index))
    }

    /// The rows of a buffer stage that `v` (a buffer or a row window of
    /// one) covers, checked against the buffer's rows. A window need not
    /// start on a granule: a scale run starts where its run offset puts it.
    fn window(&self, op: Op, v: Value, stage: Value) -> Result<Window, Stop> {
        let body = self.body;
        let slot = self.slot(op, v, stage)?;
        let (_, start) = self.root(op, v)?;
        let end = start.checked_add(self.rows(op, v)?).ok_or_else(|| untraceable(op, "its row window overflows"))?;
        let total = self.rows(op, slot.0)?;
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
            return Err(untraceable(op, format!("a warp's trace grows past {MAX_STEPS} steps here")));
        }
        self.steps.push(Step { op, kind });
        Ok(())
    }

    /// Binds `result` to `value` where it is known.
    fn set(&mut self, result: Value, value: Option<i64>) {
        match value {
            Some(c) => self.env.insert(result, c),
            None => self.env.remove(&result),
        }
    }

    /// Runs `block`; returns what its `tile.yield` yields (`None` for a
    /// value that is not a known integer).
    fn block(&mut self, block: Block) -> Result<Vec<Option<i64>>, Stop> {
        let body = self.body;
        for &op in &body.blocks[block].ops {
            let data = &body.ops[op];
            // A consumer warpgroup's first warp issues its elected ops.
            let elected = self.class.elected(self.role);
            // Every view below is of the op the arm matched: `expect` cannot fail.
            match body.opcode(op) {
                Opcode::TileYield => {
                    let values = tile::Yield::of(body, op).expect("matched").values(body);
                    return Ok(values.iter().map(|v| self.env.get(v).copied()).collect());
                }
                Opcode::TileConstant => {
                    let value = data.attrs.get_int("value");
                    self.set(data.results[0], value);
                }
                Opcode::TileIndexCast => {
                    let cast = tile::IndexCast::of(body, op).expect("matched");
                    let value = self.env.get(&cast.input(body)).copied();
                    self.set(cast.result(body), value);
                }
                Opcode::TileCmpi => {
                    let cmp = tile::Cmpi::of(body, op).expect("matched");
                    let (a, b) = (self.env.get(&cmp.lhs(body)).copied(), self.env.get(&cmp.rhs(body)).copied());
                    let value = a.zip(b).and_then(|(a, b)| compare(cmp.predicate(body), a, b)).map(i64::from);
                    self.set(cmp.result(body), value);
                }
                Opcode::TileSelect => {
                    let select = tile::Select::of(body, op).expect("matched");
                    let chosen = self.env.get(&select.condition(body)).map(|&c| if c != 0 { select.true_value(body) } else { select.false_value(body) });
                    let value = chosen.and_then(|v| self.env.get(&v).copied());
                    self.set(select.result(body), value);
                }
                Opcode::TileLoadScalar => {
                    let value = self.config.loaded_scalar();
                    self.set(data.results[0], Some(value));
                }
                Opcode::NvRunOffset => {
                    let run = nv::RunOffset::of(body, op).expect("matched");
                    let value = match self.config.data() {
                        Data::Low => 0,
                        Data::High => {
                            let bytes = i64::from(body.value_type(run.tensor(body)).elem().bits() / 8).max(1);
                            TMA_GLOBAL_ALIGN / bytes - 1
                        }
                    };
                    self.set(run.result(body), Some(value));
                }
                Opcode::TileBlockId => {
                    let cta = if data.attrs.get_int("dim") == Some(0) { self.config.cta } else { 0 };
                    self.set(data.results[0], Some(cta));
                }
                Opcode::TileNumBlocks => {
                    let grid = if data.attrs.get_int("dim") == Some(0) { self.config.grid } else { 1 };
                    self.set(data.results[0], Some(grid));
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
                    self.set(dim.result(body), Some(size));
                }
                Opcode::TileAddi
                | Opcode::TileSubi
                | Opcode::TileMuli
                | Opcode::TileDivsi
                | Opcode::TileRemsi
                | Opcode::TileCeildivsi
                | Opcode::TileMinsi
                | Opcode::TileMaxsi => {
                    let binary = tile::IntBinary::of(body, op).expect("matched");
                    let (a, b) = (self.env.get(&binary.lhs(body)).copied(), self.env.get(&binary.rhs(body)).copied());
                    let value = a.zip(b).and_then(|(a, b)| binary_int_fold(body.opcode(op), a, b));
                    self.set(binary.result(body), value);
                }
                Opcode::TileFor => self.for_loop(op)?,
                Opcode::TileIf => {
                    let cond = tile::If::of(body, op).expect("matched").condition(body);
                    if self.get(op, cond, "condition")? != 0 {
                        self.block(body.entry_block(data.regions[0]))?;
                    }
                }
                Opcode::NvWarpSpecialize => {
                    let consumers = nv::WarpSpecialize::of(body, op).expect("matched").consumers(body);
                    let warps = self.func.attrs.get_int("num_warps");
                    if warps != Some(WARPS_PER_GROUP * (1 + consumers)) {
                        let have = warps.map_or("no 'num_warps'".to_string(), |w| format!("{w} warps"));
                        let msg = format!("its roles need {} warps (a producer and {consumers} consumer warpgroup(s)) but the function has {have}", WARPS_PER_GROUP * (1 + consumers));
                        return Err(untraceable(op, msg));
                    }
                    let consumer = self.class.consumer();
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
                    let parity = self.get(op, wait.phase(body), "phase")?;
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
                    let cta = self.get(op, arrive.cta(body), "target CTA")?;
                    self.push(op, StepKind::RemoteArrive { barrier, cta })?;
                }
                Opcode::NvClusterRank => self.set(data.results[0], Some(0)),
                // Barriers start fresh in the simulation, and a row window
                // is resolved where an op uses it (`root`).
                Opcode::NvAllocMbarriers | Opcode::NvSmemRows => {}
                Opcode::NvMbarrierExpectTx => {
                    if elected {
                        let expect = nv::MbarrierExpectTx::of(body, op).expect("matched");
                        let barrier = self.slot(op, expect.barrier(body), expect.stage(body))?;
                        self.push(op, StepKind::ExpectTx { barrier, bytes: expect.bytes(body) })?;
                    }
                }
                Opcode::NvTmaLoad => {
                    if elected {
                        let load = nv::TmaLoad::of(body, op).expect("matched");
                        let buffer = self.window(op, load.buffer(body), load.stage(body))?;
                        let barrier = self.slot(op, load.barrier(body), load.barrier_stage(body))?;
                        let smem = body.value_type(load.buffer(body)).as_smem().ok_or_else(|| untraceable(op, "its buffer is not a shared buffer"))?;
                        let bytes = smem.tile.num_elements() * i64::from(smem.tile.elem.bits()) / 8;
                        self.push(op, StepKind::TmaLoad { buffer, barrier, bytes, peer: false })?;
                        if load.multicast(body) {
                            // The peers' multicasts of the other shares, mirrored.
                            for peer in self.peer_shares(op, load.buffer(body), buffer, cluster_size(self.func))? {
                                self.push(op, StepKind::TmaLoad { buffer: peer, barrier, bytes, peer: true })?;
                            }
                        }
                    }
                }
                // It names its buffer for the box only: it writes no buffer
                // and arrives on no barrier.
                Opcode::NvTmaPrefetch => {}
                Opcode::NvCopyAsync => {
                    if self.class.copies {
                        let copy = nv::CopyAsync::of(body, op).expect("matched");
                        let first = self.window(op, copy.buffer(body), copy.stage(body))?;
                        let count = copy.stages(body).unwrap_or(1);
                        let (root, stage) = first.slot;
                        let stages = body.value_type(root).as_smem().map_or(1, |s| s.stages);
                        if count < 1 || stage + count > stages {
                            let msg = format!("copies stages [{stage}, {}) of {}, which has {stages} stage(s) ({})", stage + count, self.name(root), self.config.describe());
                            return Err(Stop::Error(op_error(body, op, msg)));
                        }
                        let buffers = (0..count).map(|k| Window { slot: (root, stage + k), rows: first.rows }).collect();
                        let barrier = self.slot(op, copy.barrier(body), copy.barrier_stage(body))?;
                        self.push(op, StepKind::CopyAsync { buffers, barrier })?;
                    }
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
                    self.push(op, StepKind::Wgmma { reads, result: mma.result(body) })?;
                }
                Opcode::NvWgmmaFence => self.push(op, StepKind::WgmmaFence)?,
                Opcode::NvWgmmaCommit => self.push(op, StepKind::WgmmaCommit)?,
                Opcode::NvWgmmaWait => {
                    let wait = nv::WgmmaWait::of(body, op).expect("matched");
                    let returned = wait.values(body).iter().zip(wait.results(body));
                    let read = returned.filter(|(_, r)| self.register_reads.contains(r)).map(|(&v, _)| v).collect();
                    self.push(op, StepKind::WgmmaWait { depth: wait.pending(body), read })?;
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
                // They order this grid against the previous and next grids
                // on the stream; nothing between this CTA's warps.
                Opcode::NvGridDependencyWait | Opcode::NvLaunchDependents => {}
                Opcode::NvTmaStore => {
                    if elected {
                        let store = nv::TmaStore::of(body, op).expect("matched");
                        let buffer = self.window(op, store.buffer(body), store.stage(body))?;
                        self.push(op, StepKind::TmaStore { buffer })?;
                    }
                }
                Opcode::NvTmaStoreWait => {
                    if elected {
                        self.push(op, StepKind::TmaStoreWait)?;
                    }
                }
                Opcode::NvBarrier if nv::Barrier::of(body, op).expect("matched").warpgroup(body) => self.warpgroup_barrier(op)?,
                // Stream-K's hand-over meets its holder group around the
                // workspace: a consumer warpgroup, or the whole CTA.
                Opcode::TileParkPartial | Opcode::TileAddParked if self.role.is_some() => self.warpgroup_barrier(op)?,
                // A CTA or cluster barrier inside one role is the lowering's
                // error; a cluster barrier orders the peer (mirrored) as this
                // CTA's warps. Split-K's cluster sum meets the cluster after
                // parking its tile, and so does `tile.sum_splits`, which
                // tile-lower-to-nv makes a cluster sum.
                Opcode::NvBarrier | Opcode::NvClusterBarrier | Opcode::NvClusterSum | Opcode::TileSumSplits if self.role.is_some() => {
                    return Err(untraceable(op, "meets the whole CTA inside one role of a warp-specialised region, which the lowering rejects"));
                }
                // Split-K's sum through the workspace meets its holder group
                // (a consumer warpgroup, or the whole CTA) after parking its
                // tile, and again to hand the group the last split's verdict.
                // Which split arrives last depends on the run: the low end of
                // the data's range is a split that parks and leaves, the high
                // end the one that adds and stores.
                Opcode::TileReduceSplits => {
                    let last = tile::ReduceSplits::of(body, op).expect("matched").last(body);
                    self.set(last, Some(i64::from(self.config.data() == Data::High)));
                    if self.role.is_some() {
                        self.warpgroup_barrier(op)?;
                    } else {
                        self.push(op, StepKind::CtaBarrier)?;
                    }
                }
                Opcode::NvBarrier | Opcode::TileParkPartial | Opcode::TileAddParked => self.push(op, StepKind::CtaBarrier)?,
                Opcode::NvClusterBarrier | Opcode::NvClusterSum | Opcode::TileSumSplits => self.push(op, StepKind::ClusterBarrier)?,
                _ => self.unmodelled(op)?,
            }
        }
        Ok(Vec::new())
    }

    /// `nv.barrier {warpgroup}` or a hand-over in a consumer region: the
    /// warps of the executing warp's warpgroup meet.
    fn warpgroup_barrier(&mut self, op: Op) -> Result<(), Stop> {
        let first_warp = usize::try_from(self.class.first_of_group()).map_err(|_| untraceable(op, "runs in a warp before the first"))?;
        self.push(op, StepKind::WarpgroupBarrier { first_warp, warps: WARPS_PER_GROUP as usize })
    }

    /// An op the arms above do not model, judged by its traits and
    /// operands: one that synchronises, has regions, or names a shared
    /// buffer or a barrier could change what the trace sees, so it stops
    /// the trace; any other computes values (tensors, addresses) that no
    /// barrier or buffer stage depends on, and its results stay unknown.
    fn unmodelled(&mut self, op: Op) -> Result<(), Stop> {
        let body = self.body;
        let data = &body.ops[op];
        let touches_shared = data.operands.iter().any(|&v| matches!(body.value_type(v), Type::Smem(_) | Type::MBarrier(_)));
        let why = if data.def.traits.synchronising {
            "synchronises in a way the barrier verifier does not model"
        } else if !data.regions.is_empty() {
            "has regions the barrier verifier does not model"
        } else if touches_shared {
            "uses a shared buffer or barrier in a way the barrier verifier does not model"
        } else {
            for &result in &data.results {
                self.env.remove(&result);
            }
            return Ok(());
        };
        Err(untraceable(op, why))
    }

    fn for_loop(&mut self, op: Op) -> Result<(), Stop> {
        let body = self.body;
        let data = &body.ops[op];
        let for_op = tile::For::of(body, op).expect("called on tile.for");
        let lb = self.get(op, for_op.lower_bound(body), "lower bound")?;
        let ub = self.get(op, for_op.upper_bound(body), "upper bound")?;
        let step = self.get(op, for_op.step(body), "step")?;
        if step <= 0 {
            return Err(untraceable(op, format!("its step is {step}, so the loop does not end")));
        }
        let entry = body.entry_block(data.regions[0]);
        let args = &body.blocks[entry].args;
        let mut carried: Vec<Option<i64>> = for_op.inits(body).iter().map(|v| self.env.get(v).copied()).collect();
        let mut iv = lb;
        while iv < ub {
            self.budget = self.budget.checked_sub(1).ok_or_else(|| untraceable(op, format!("the loops run past {MAX_STEPS} iterations in all")))?;
            self.env.insert(args[0], iv);
            for (&arg, value) in args[1..].iter().zip(&carried) {
                self.set(arg, *value);
            }
            carried = self.block(entry)?;
            // A trip past i64 ends the loop where the kernel's 32-bit indices
            // would long have failed; the index-range check reports that.
            let Some(next) = iv.checked_add(step) else { break };
            iv = next;
        }
        for (&result, value) in data.results.iter().zip(&carried) {
            self.set(result, *value);
        }
        Ok(())
    }
}
