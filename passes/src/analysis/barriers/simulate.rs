//! Every round, every tile: the warps' concrete traces run against a model
//! of the hardware, with vector clocks for what is ordered before what.
//!
//! An mbarrier stage completes a phase when the arrivals it is initialised
//! for have come and its transaction bytes are in; a wait for parity `p`
//! passes once the stage's current phase parity differs from `p` (so a
//! fresh barrier passes a wait for parity 1), and orders the waiting warp
//! after everything that completed the last phase. A TMA load's data lands
//! when the phase it completes bytes on completes; a wgmma's reads of
//! shared memory end when an `nv.wgmma_wait` leaves fewer groups in flight
//! than came after it; a TMA store's reads of shared memory end at its
//! warp's next `nv.tma_store_wait`; `nv.barrier` orders all warps after
//! each other, `nv.barrier {warpgroup}` the warps of one warpgroup.
//!
//! With that, per buffer stage: every read must be ordered after the write
//! that filled it (a missing wait, a wait on the wrong stage or round); a
//! refill must be ordered after every read of the previous contents (a
//! missing or early release, a wgmma wait depth that releases a stage
//! still being read, a removed CTA barrier) and must not come before
//! anything read them (a prologue that fills every stage, a refill
//! distance off by one); data written by generic stores and read by the
//! async proxy needs an `nv.fence_async_shared` in the writing warp; a TMA
//! store must be waited for before its warp ends (the CTA's exit); each
//! `nv.wgmma` needs an `nv.wgmma_fence` since its warp last touched the
//! registers. A state where no warp can move is a hang (a missing arrive,
//! a phase that restarts with each persistent tile). Each trace is run for
//! a few tensor sizes so loops take 1 to over 2 x stages + 1 rounds.

use super::model::cluster_size;
use super::trace::{reads_data, trace, Config, Data, Slot, Step, StepKind, Untraceable, Window};
use crate::pass::{op_error, op_warning};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::VecDeque;
use std::hash::{BuildHasher, Hash, Hasher};
use tilec_dialects::ir::{Body, Op, Value};
use tilec_dialects::nv::memory::COPY_ARRIVALS;
use tilec_dialects::{Diagnostic, Function, Type};

/// The sizes each function is simulated for, as (M, N, K, grid, CTA): K
/// from one K tile to enough for over 2 x 6 + 1 rounds at any K tile
/// width, none (the paths of a tile with no K iteration, which grouped
/// GEMM's empty experts take), or for 2 x S + 1 rounds of the function's
/// deepest barrier at K tiles of 128 split over every CTA of a cluster;
/// several output tiles per CTA for a persistent kernel on a grid of 2
/// (or one cluster, where it has more CTAs), and with a larger M and N
/// three or more (so a tile's deferred
/// epilogue follows another's). A kernel not launched in clusters is also
/// traced at the last CTA of grids of 3 and 4, whose tile counts leave
/// stream-K pieces (whose hand-over the last CTA parks). A function that
/// reads data is traced at both ends of its data's ranges.
fn configs(func: &Function) -> Vec<Config> {
    let data: &[Option<Data>] = if reads_data(func) { &[Some(Data::Low), Some(Data::High)] } else { &[None] };
    let deepest = func.body.values.keys().filter_map(|v| match func.body.value_type(v) {
        Type::MBarrier(stages) => Some(*stages),
        _ => None,
    });
    let deep_k = (2 * deepest.max().unwrap_or(1) + 2) * DEEP_K_TILE * cluster_size(func);
    // A persistent loop over clusters' runs of tiles steps by whole
    // clusters, before tile-cluster-split launches them too.
    let ctas = cluster_size(func).max(func.attrs.get_int("cluster_ctas").unwrap_or(1));
    let grid = ctas.max(2);
    let mut sizes = vec![(384, 256, 64, grid, 0), (384, 256, 192, grid, 0), (384, 256, 448, grid, 0), (384, 256, 1000, grid, 0), (384, 256, 0, grid, 0)];
    if deep_k > 1000 {
        sizes.push((384, 256, deep_k, grid, 0));
    }
    sizes.extend([(768, 512, 0, grid, 0), (768, 512, 448, grid, 0)]);
    if ctas == 1 {
        sizes.extend([(384, 256, 448, 3, 2), (384, 256, 448, 4, 3)]);
    }
    // Grouped GEMM names its rows SM (the experts' rows end to end) or MM
    // (each expert's buffer) and its experts G, two of them so that a
    // persistent kernel's tiles span both; only the names the function
    // uses are given, so that messages name what the user wrote.
    let named: Vec<&str> = func.arg_attrs.iter().filter_map(|a| a.get("tile.dims")?.as_strings()).flatten().collect();
    let dims = move |m, n, k| [("G", 2), ("M", m), ("SM", m), ("MM", m), ("N", n), ("K", k)].into_iter().filter(|(d, _)| named.contains(d)).collect();
    let configs = sizes.into_iter().map(|(m, n, k, grid, cta)| Config { dims: dims(m, n, k), default: 256, grid, cta, data: None });
    configs.flat_map(|config| data.iter().map(move |&data| Config { data, ..config.clone() })).collect()
}

/// The widest K tile config selection picks (FP8's): the deep K above
/// gives every kernel at least as many rounds as it counts on.
const DEEP_K_TILE: i64 = 128;

/// Simulates `func` for each size; the first problem found is the error.
/// Where a trace cannot be taken for some size, the rounds the simulation
/// would check are unproven: the warning says at which op and why.
pub fn check_every_round(func: &Function, passed: &mut Passed) -> Result<Option<Diagnostic>, Diagnostic> {
    let body = &func.body;
    if !body.ops.keys().any(|op| tilec_dialects::nv::OPS.iter().any(|def| def.opcode == body.opcode(op))) {
        return Ok(None);
    }
    let mut unproven = None;
    for config in configs(func) {
        match trace(func, &config)? {
            Ok(traces) => {
                let key = simulation_key(body, &config, &traces);
                if !passed.0.contains(&key) {
                    Sim::new(body, &config, traces).run()?;
                    passed.0.insert(key);
                }
            }
            Err(Untraceable { op, reason }) => {
                if unproven.is_none() {
                    let msg = format!(
                        "stops the barrier verifier's trace: {reason} ({}); the ordering of every round's buffer reads and refills, the TMA store waits and the wgmma fences are unproven",
                        config.describe()
                    );
                    unproven = Some(op_warning(body, op, msg));
                }
            }
        }
    }
    Ok(unproven)
}

/// The simulations that passed, by [`simulation_key`]. A simulation's
/// outcome is a function of the size, the warps' traces and the barriers'
/// arrival counts alone, and the pass manager checks a function again
/// after each pass that may change its barriers: most leave every trace as
/// it was (a canonicalisation folding the index arithmetic around them),
/// and the run would repeat the last one's.
#[derive(Default)]
pub struct Passed(FxHashSet<u64>);

/// What a simulation's outcome depends on, hashed: the size, the traces
/// and every barrier's arrival count. The hash is foldhash's 64-bit
/// quality hash (SipHash costs more than the simulations it spares), so a
/// compile's few hundred simulations share one by chance with odds under
/// one in 10^14.
fn simulation_key(body: &Body, config: &Config, traces: &[Vec<Step>]) -> u64 {
    let mut hasher = foldhash::quality::FixedState::with_seed(0).build_hasher();
    (config, traces).hash(&mut hasher);
    for v in body.values.keys() {
        if let Type::MBarrier(_) = body.value_type(v) {
            let arrivals = body.defining_op(v).and_then(|op| body.ops[op].attrs.get_int("arrivals"));
            (v, arrivals).hash(&mut hasher);
        }
    }
    hasher.finish()
}

type Clock = Vec<u32>;

/// `a` happens before (or is) the state `b`.
fn before(a: &Clock, b: &Clock) -> bool {
    a.iter().zip(b).all(|(x, y)| x <= y)
}

fn join(into: &mut Clock, other: &Clock) {
    for (x, y) in into.iter_mut().zip(other) {
        *x = (*x).max(*y);
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum AccessKind {
    TmaWrite,
    /// `nv.copy_async`: like a TMA load, it lands when the phase it
    /// arrives on completes.
    CopyWrite,
    GenericWrite,
    WgmmaRead,
    GenericRead,
    TmaStoreRead,
}

/// One access to a buffer stage. `done` is when it is over (a TMA write's
/// data landed, a wgmma's read retired); `fenced` when a generic write was
/// fenced for the async proxy.
struct Access {
    op: Op,
    warp: usize,
    kind: AccessKind,
    at: Clock,
    done: Option<Clock>,
    fenced: Option<Clock>,
}

/// Rows per unit of buffer state: row windows start at multiples of 8.
const GRANULE: i64 = 8;

/// A buffer stage's rows from `[8 g, 8 g + 8)` to the next cut of the
/// buffer ([`Cuts`]): the unit accesses are tracked in.
type Granule = (Value, i64, i64);

/// The granules `[start, end)` a window covers: its rows widened to
/// multiples of 8.
fn granule_range(window: &Window) -> (i64, i64) {
    let (start, end) = window.rows;
    (start.div_euclid(GRANULE), (end + GRANULE - 1).div_euclid(GRANULE))
}

/// For each buffer, every granule at which some window of the traces
/// starts or ends, in order. Between two cuts, every access touches all
/// granules or none, so they keep the same state and are tracked as one:
/// a window of a tile's 128 rows is one unit, not 16.
struct Cuts(FxHashMap<Value, Vec<i64>>);

impl Cuts {
    fn of(traces: &[Vec<Step>]) -> Cuts {
        let mut cuts: FxHashMap<Value, Vec<i64>> = FxHashMap::default();
        for step in traces.iter().flatten() {
            for window in windows(&step.kind) {
                let (start, end) = granule_range(window);
                cuts.entry(window.slot.0).or_default().extend([start, end]);
            }
        }
        for at in cuts.values_mut() {
            at.sort_unstable();
            at.dedup();
        }
        Cuts(cuts)
    }

    /// The units `window` covers, each named by its first granule.
    fn units(&self, window: Window) -> Vec<Granule> {
        let ((buffer, stage), (start, end)) = (window.slot, granule_range(&window));
        let at = &self.0[&buffer];
        let first = at.partition_point(|&c| c < start);
        at[first..].iter().take_while(|&&c| c < end).map(|&c| (buffer, stage, c)).collect()
    }
}

/// The buffer windows a step accesses.
fn windows(kind: &StepKind) -> &[Window] {
    match kind {
        StepKind::CopyAsync { buffers, .. } => buffers,
        StepKind::TmaLoad { buffer, .. }
        | StepKind::LoadShared { buffer }
        | StepKind::LoadFragment { buffer }
        | StepKind::StoreShared { buffer }
        | StepKind::TmaStore { buffer } => std::slice::from_ref(buffer),
        StepKind::Wgmma { reads, .. } => reads,
        StepKind::Wait { .. }
        | StepKind::Arrive { .. }
        | StepKind::RemoteArrive { .. }
        | StepKind::ExpectTx { .. }
        | StepKind::WgmmaFence
        | StepKind::WgmmaCommit
        | StepKind::WgmmaWait { .. }
        | StepKind::FenceProxy
        | StepKind::TmaStoreWait
        | StepKind::CtaBarrier
        | StepKind::ClusterBarrier
        | StepKind::WarpgroupBarrier { .. } => &[],
    }
}

/// The accesses to some rows of a buffer stage since they were last replaced.
#[derive(Default)]
struct StageState {
    writes: Vec<usize>,
    reads: Vec<usize>,
    /// The reads of the contents before: a generic write that joins the
    /// current contents (another warp's part) must still come after them.
    previous_reads: Vec<usize>,
}

struct BarrierState {
    arrivals: i64,
    completed: i64,
    missing: i64,
    tx: i64,
    arrived: Clock,
    last_phase: Clock,
    /// The same for the peer CTA's barrier at this slot, as the mirror
    /// sees it: this CTA's remote arrivals, the peer's own (mirrored)
    /// arrivals with what the peer knows of this CTA.
    peer_arrived: Clock,
    peer_last_phase: Clock,
    /// TMA writes that land when the current phase completes.
    landing: Vec<usize>,
}

/// A warp's wgmma since its last commit, or one committed group of them:
/// the stage reads they make and the results they write.
#[derive(Default)]
struct Group {
    reads: Vec<usize>,
    results: Vec<Value>,
}

#[derive(Default)]
struct Warp {
    pc: usize,
    clock: Clock,
    open_group: Group,
    in_flight: VecDeque<Group>,
    wgmma_fenced: bool,
    unfenced_writes: Vec<usize>,
    /// The generation of the CTA or warpgroup barrier the warp has arrived at.
    barrier_wait: Option<u64>,
    /// Its TMA stores no `nv.tma_store_wait` has waited for yet.
    unwaited_stores: Vec<usize>,
    /// What the peer CTA's copy of this warp is ordered after, in this
    /// CTA's events: only remote arrivals and cluster barriers order the
    /// two CTAs, however alike their code (the peer may run ahead).
    peer_clock: Clock,
}

/// The warps meeting at a CTA, warpgroup or cluster barrier: the first,
/// how many, and whether the peer CTA's warps meet them too.
type Meeting = (usize, usize, bool);

/// A CTA, warpgroup or cluster barrier: the warps arrived in the current
/// generation and their joined clocks.
#[derive(Default)]
struct MeetingState {
    arrived: usize,
    clock: Clock,
    peer_clock: Clock,
    generation: u64,
}

struct Sim<'a> {
    body: &'a Body,
    config: &'a Config,
    traces: Vec<Vec<Step>>,
    warps: Vec<Warp>,
    barriers: FxHashMap<Slot, BarrierState>,
    cuts: Cuts,
    stages: FxHashMap<Granule, StageState>,
    accesses: Vec<Access>,
    meetings: FxHashMap<Meeting, MeetingState>,
}

enum Outcome {
    Done,
    Blocked,
}

impl<'a> Sim<'a> {
    fn new(body: &'a Body, config: &'a Config, traces: Vec<Vec<Step>>) -> Self {
        let n = traces.len();
        let warps = (0..n).map(|_| Warp { clock: vec![0; n], peer_clock: vec![0; n], ..Warp::default() }).collect();
        Sim {
            body,
            config,
            cuts: Cuts::of(&traces),
            traces,
            warps,
            barriers: FxHashMap::default(),
            stages: FxHashMap::default(),
            accesses: Vec::new(),
            meetings: FxHashMap::default(),
        }
    }

    fn run(mut self) -> Result<(), Diagnostic> {
        let n = self.warps.len();
        loop {
            let mut progress = false;
            // One step per warp in turn: warps move at the same pace, so a
            // refill meets reads that are still in flight, as on the GPU.
            for w in 0..n {
                if self.warps[w].pc < self.traces[w].len() {
                    if let Outcome::Done = self.step(w)? {
                        self.warps[w].pc += 1;
                        progress = true;
                    }
                }
            }
            if (0..n).all(|w| self.warps[w].pc == self.traces[w].len()) {
                return self.check_stores_waited();
            }
            if !progress {
                return Err(self.hang());
            }
        }
    }

    fn name(&self, v: Value) -> String {
        match &self.body.values[v].name_hint {
            Some(n) => format!("'%{n}'"),
            None => "the allocation".to_string(),
        }
    }

    fn slot_name(&self, (v, s): Slot) -> String {
        format!("{}[{s}]", self.name(v))
    }

    fn error(&self, op: Op, msg: String) -> Diagnostic {
        op_error(self.body, op, format!("{msg} ({})", self.config.describe()))
    }

    fn barrier(&mut self, slot: Slot) -> &mut BarrierState {
        let n = self.warps.len();
        let arrivals = self.arrivals_of(slot.0);
        self.barriers.entry(slot).or_insert_with(|| BarrierState {
            arrivals,
            completed: 0,
            missing: arrivals,
            tx: 0,
            arrived: vec![0; n],
            last_phase: vec![0; n],
            peer_arrived: vec![0; n],
            peer_last_phase: vec![0; n],
            landing: Vec::new(),
        })
    }

    fn arrivals_of(&self, barrier: Value) -> i64 {
        let body = self.body;
        body.defining_op(barrier).and_then(|op| body.ops[op].attrs.get_int("arrivals")).unwrap_or(1)
    }

    /// Adds `count` arrivals and `tx` bytes (completed when negative) from
    /// warp `w` to `slot`, completing its phase when all are in. A remote
    /// arrival is the peer's on this CTA's barrier (ordered after what the
    /// peer knows) and this warp's on the peer's.
    fn arrive(&mut self, w: usize, op: Op, slot: Slot, count: i64, tx: i64, remote: bool) -> Result<(), Diagnostic> {
        let (mine, peers) = (self.warps[w].clock.clone(), self.warps[w].peer_clock.clone());
        let (clock, peer) = if remote { (peers, mine) } else { (mine, peers) };
        let state = self.barrier(slot);
        state.missing -= count;
        state.tx += tx;
        join(&mut state.arrived, &clock);
        join(&mut state.peer_arrived, &peer);
        if state.missing < 0 {
            let arrivals = state.arrivals;
            let msg = format!("arrives on {} more often in one phase than the {arrivals} arrival(s) it is initialised for", self.slot_name(slot));
            return Err(self.error(op, msg));
        }
        if state.missing == 0 && state.tx == 0 {
            state.completed += 1;
            state.missing = state.arrivals;
            state.last_phase = std::mem::replace(&mut state.arrived, vec![0; clock.len()]);
            state.peer_last_phase = std::mem::replace(&mut state.peer_arrived, vec![0; clock.len()]);
            let landed = state.last_phase.clone();
            for id in std::mem::take(&mut state.landing) {
                self.accesses[id].done = Some(landed.clone());
            }
        }
        Ok(())
    }

    fn access(&mut self, w: usize, op: Op, kind: AccessKind) -> usize {
        let at = self.warps[w].clock.clone();
        let done = matches!(kind, AccessKind::GenericWrite | AccessKind::GenericRead).then(|| at.clone());
        self.accesses.push(Access { op, warp: w, kind, at, done, fenced: None });
        self.accesses.len() - 1
    }

    fn step(&mut self, w: usize) -> Result<Outcome, Diagnostic> {
        let Step { op, kind } = self.traces[w][self.warps[w].pc].clone();
        let n = self.warps.len();
        match kind {
            StepKind::CtaBarrier => return Ok(self.meet(w, (0, n, false))),
            StepKind::ClusterBarrier => return Ok(self.meet(w, (0, n, true))),
            StepKind::WarpgroupBarrier { first_warp, warps } => return Ok(self.meet(w, (first_warp, warps, false))),
            _ => {}
        }
        if let StepKind::Wait { barrier, parity } = kind {
            let state = self.barrier(barrier);
            if state.completed % 2 == parity.rem_euclid(2) {
                return Ok(Outcome::Blocked);
            }
            let (phase, peer_phase) = (state.last_phase.clone(), state.peer_last_phase.clone());
            join(&mut self.warps[w].clock, &phase);
            join(&mut self.warps[w].peer_clock, &peer_phase);
        }
        self.warps[w].clock[w] += 1;
        match kind {
            StepKind::Wait { .. } | StepKind::CtaBarrier | StepKind::ClusterBarrier | StepKind::WarpgroupBarrier { .. } => {}
            StepKind::Arrive { barrier, arrivals } => self.arrive(w, op, barrier, arrivals, 0, false)?,
            StepKind::RemoteArrive { barrier, .. } => self.arrive(w, op, barrier, 1, 0, true)?,
            StepKind::ExpectTx { barrier, bytes } => self.arrive(w, op, barrier, 1, bytes, false)?,
            StepKind::TmaLoad { buffer, barrier, bytes, peer } => {
                let id = self.access(w, op, AccessKind::TmaWrite);
                // The peer's multicast into this CTA is ordered by what the
                // peer's producer knows, not by this producer's wait.
                let now = if peer { self.warps[w].peer_clock.clone() } else { self.warps[w].clock.clone() };
                self.write(now, buffer, id)?;
                self.barrier(barrier).landing.push(id);
                self.arrive(w, op, barrier, 0, -bytes, false)?;
            }
            StepKind::CopyAsync { buffers, barrier } => {
                let id = self.access(w, op, AccessKind::CopyWrite);
                for buffer in buffers {
                    self.write(self.warps[w].clock.clone(), buffer, id)?;
                }
                self.barrier(barrier).landing.push(id);
                self.arrive(w, op, barrier, COPY_ARRIVALS, 0, false)?;
            }
            StepKind::LoadShared { buffer } => {
                let id = self.access(w, op, AccessKind::GenericRead);
                self.read(w, buffer, id)?;
            }
            StepKind::Wgmma { reads, result } => {
                if !self.warps[w].wgmma_fenced {
                    let msg = "is not preceded by an 'nv.wgmma_fence' since its warp last touched the registers it uses (the last 'nv.wgmma_wait' or 'nv.load_fragment')";
                    return Err(self.error(op, msg.into()));
                }
                for window in reads {
                    let id = self.access(w, op, AccessKind::WgmmaRead);
                    self.read(w, window, id)?;
                    self.warps[w].open_group.reads.push(id);
                }
                self.warps[w].open_group.results.push(result);
            }
            StepKind::WgmmaFence => self.warps[w].wgmma_fenced = true,
            StepKind::WgmmaCommit => {
                let group = std::mem::take(&mut self.warps[w].open_group);
                self.warps[w].in_flight.push_back(group);
            }
            StepKind::WgmmaWait { depth, read } => {
                let warp = &mut self.warps[w];
                warp.wgmma_fenced = false;
                let left = usize::try_from(depth).unwrap_or(0);
                while warp.in_flight.len() > left {
                    for id in warp.in_flight.pop_front().expect("non-empty").reads {
                        self.accesses[id].done = Some(warp.clock.clone());
                    }
                }
                // What it returns for reading in registers must come from
                // wgmma that are done.
                let uncommitted = read.iter().any(|v| warp.open_group.results.contains(v));
                let running = read.iter().any(|v| warp.in_flight.iter().any(|g| g.results.contains(v)));
                if uncommitted {
                    let msg = "returns the result of an 'nv.wgmma' that no 'nv.wgmma_commit' put in a group before it, and an op reads it in registers: the wait does not wait for it";
                    return Err(self.error(op, msg.into()));
                }
                if running {
                    let msg = format!("returns the result of an 'nv.wgmma' that may still be running, and an op reads it in registers: the wait leaves {depth} group(s) in flight, and that wgmma's is among them");
                    return Err(self.error(op, msg));
                }
            }
            StepKind::LoadFragment { buffer } => {
                self.warps[w].wgmma_fenced = false;
                let id = self.access(w, op, AccessKind::GenericRead);
                self.read(w, buffer, id)?;
            }
            StepKind::StoreShared { buffer } => {
                let id = self.access(w, op, AccessKind::GenericWrite);
                self.write(self.warps[w].clock.clone(), buffer, id)?;
                self.warps[w].unfenced_writes.push(id);
            }
            StepKind::FenceProxy => {
                let clock = self.warps[w].clock.clone();
                for id in std::mem::take(&mut self.warps[w].unfenced_writes) {
                    self.accesses[id].fenced = Some(clock.clone());
                }
            }
            StepKind::TmaStore { buffer } => {
                let id = self.access(w, op, AccessKind::TmaStoreRead);
                self.read(w, buffer, id)?;
                self.warps[w].unwaited_stores.push(id);
            }
            StepKind::TmaStoreWait => {
                let clock = self.warps[w].clock.clone();
                for id in std::mem::take(&mut self.warps[w].unwaited_stores) {
                    self.accesses[id].done = Some(clock.clone());
                }
            }
        }
        Ok(Outcome::Done)
    }

    /// `nv.barrier` (the whole CTA), `nv.barrier {warpgroup}` or a
    /// cluster barrier: a warp waits until every warp of the meeting has
    /// arrived, then continues ordered after all of them (and at a cluster
    /// barrier after the peer's too; the peer's warps meet in the mirror).
    fn meet(&mut self, w: usize, meeting: Meeting) -> Outcome {
        let n = self.warps.len();
        let state = self.meetings.entry(meeting).or_insert_with(|| MeetingState { clock: vec![0; n], peer_clock: vec![0; n], ..MeetingState::default() });
        let generation = match self.warps[w].barrier_wait {
            Some(g) => g,
            None => {
                let g = state.generation;
                self.warps[w].barrier_wait = Some(g);
                self.warps[w].clock[w] += 1;
                join(&mut state.clock, &self.warps[w].clock);
                join(&mut state.peer_clock, &self.warps[w].peer_clock);
                state.arrived += 1;
                if state.arrived == meeting.1 {
                    state.arrived = 0;
                    state.generation += 1;
                    let mut released = std::mem::replace(&mut state.clock, vec![0; n]);
                    let mut peer_released = std::mem::replace(&mut state.peer_clock, vec![0; n]);
                    if meeting.2 {
                        join(&mut released, &peer_released);
                        peer_released = released.clone();
                    }
                    for warp in &mut self.warps[meeting.0..meeting.0 + meeting.1] {
                        join(&mut warp.clock, &released);
                        join(&mut warp.peer_clock, &peer_released);
                    }
                }
                g
            }
        };
        if self.meetings[&meeting].generation > generation {
            self.warps[w].barrier_wait = None;
            Outcome::Done
        } else {
            Outcome::Blocked
        }
    }

    /// A TMA store still reading shared memory when its warp ends would
    /// read a CTA that has exited.
    fn check_stores_waited(&self) -> Result<(), Diagnostic> {
        match self.warps.iter().find_map(|warp| warp.unwaited_stores.first()) {
            Some(&id) => {
                let msg = "may still be reading shared memory when the CTA exits: no 'nv.tma_store_wait' of its thread follows it";
                Err(self.error(self.accesses[id].op, msg.into()))
            }
            None => Ok(()),
        }
    }

    /// Warp `w` reads buffer stage `slot` (access `id`): every write of the
    /// current contents must be over and ordered before it.
    fn read(&mut self, w: usize, window: Window, id: usize) -> Result<(), Diagnostic> {
        let now = self.warps[w].clock.clone();
        for granule in self.cuts.units(window) {
            self.read_granule(w, &now, window.slot, granule, id)?;
        }
        Ok(())
    }

    fn read_granule(&mut self, w: usize, now: &Clock, slot: Slot, granule: Granule, id: usize) -> Result<(), Diagnostic> {
        let reader = &self.accesses[id];
        let (op, async_proxy) = (reader.op, matches!(reader.kind, AccessKind::WgmmaRead | AccessKind::TmaStoreRead));
        let writes = self.stages.get(&granule).map_or(&[][..], |s| &s.writes[..]);
        if writes.is_empty() {
            return Err(self.error(op, format!("reads {} before anything has written it: no barrier wait orders it after a write", self.slot_name(slot))));
        }
        for &wid in writes {
            let write = &self.accesses[wid];
            let problem = match write.kind {
                AccessKind::TmaWrite | AccessKind::CopyWrite if write.done.as_ref().is_none_or(|d| !before(d, now)) => {
                    let (what, short) = if write.kind == AccessKind::TmaWrite { ("TMA load", "load") } else { ("copy ('nv.copy_async')", "copy") };
                    Some(format!(
                        "reads {} with nothing ordering it after the {what} that fills it: no wait for the barrier phase that {short} completes precedes the read",
                        self.slot_name(slot)
                    ))
                }
                AccessKind::GenericWrite if !before(&write.at, now) => Some(format!(
                    "reads {} with nothing ordering it after another warp's store to it: a CTA barrier ('nv.barrier') is missing between them",
                    self.slot_name(slot)
                )),
                AccessKind::GenericWrite if async_proxy && write.fenced.as_ref().is_none_or(|f| !before(f, now)) => Some(format!(
                    "reads {} through the async proxy after generic-proxy stores with no 'nv.fence_async_shared' between them in the storing warp",
                    self.slot_name(slot)
                )),
                _ => None,
            };
            if let Some(msg) = problem {
                return Err(self.error(op, msg).with_note(self.body.ops[write.op].loc.clone(), "the write is here"));
            }
        }
        let state = self.stages.get_mut(&granule).expect("entered");
        // Every kernel consumes a load once per warp (an op may read it
        // twice, as A and B); a second read by a later step is of stale data (a stage or phase that does not move on, such as a
        // count restarting with each persistent tile).
        if let Some(&again) = state.reads.iter().find(|&&r| self.accesses[r].warp == w && self.accesses[r].op == op && self.accesses[r].at != self.accesses[id].at) {
            let msg = format!(
                "reads {} again: its warp already read what the last load put there, so this read is of stale data (the stage and phase do not move on with the iteration)",
                self.slot_name(slot)
            );
            return Err(self.error(op, msg).with_note(self.body.ops[self.accesses[again].op].loc.clone(), "the first read is here"));
        }
        state.reads.push(id);
        Ok(())
    }

    /// A warp at `now` writes buffer stage `slot` (access `id`): every read
    /// of the contents it replaces must be over and ordered before it, and a TMA
    /// load must not replace contents nothing has read (some of its rows,
    /// such as a flat box's padding, may never be read).
    fn write(&mut self, now: Clock, window: Window, id: usize) -> Result<(), Diagnostic> {
        let (op, kind) = (self.accesses[id].op, self.accesses[id].kind);
        let units = self.cuts.units(window);
        if matches!(kind, AccessKind::TmaWrite | AccessKind::CopyWrite) {
            let states: Vec<&StageState> = units.iter().filter_map(|g| self.stages.get(g)).collect();
            let previous = states.iter().flat_map(|s| &s.writes).find(|&&p| self.accesses[p].kind == kind);
            if let (Some(&prev), true) = (previous, states.iter().all(|s| s.reads.is_empty())) {
                let msg = format!("refills {} before anything has read what the previous load put there", self.slot_name(window.slot));
                return Err(self.error(op, msg).with_note(self.body.ops[self.accesses[prev].op].loc.clone(), "the previous load is here"));
            }
        }
        for granule in units {
            self.write_granule(&now, window.slot, granule, id)?;
        }
        Ok(())
    }

    fn write_granule(&mut self, now: &Clock, slot: Slot, granule: Granule, id: usize) -> Result<(), Diagnostic> {
        let (op, kind) = (self.accesses[id].op, self.accesses[id].kind);
        let state = self.stages.entry(granule).or_default();
        let asynchronous = matches!(kind, AccessKind::TmaWrite | AccessKind::CopyWrite);
        let replaces = asynchronous || !state.reads.is_empty() || state.writes.is_empty();
        let earlier_reads = if replaces { state.reads.clone() } else { state.previous_reads.clone() };
        for rid in earlier_reads {
            let read = &self.accesses[rid];
            if read.done.as_ref().is_none_or(|d| !before(d, now)) {
                let what = match read.kind {
                    AccessKind::WgmmaRead => "the 'nv.wgmma' reading its previous contents is known to be done: nothing orders its retirement (an 'nv.wgmma_wait' deep enough, then a release on the empty barrier or a CTA barrier) before this write",
                    AccessKind::TmaStoreRead => "the TMA store reading its previous contents is known to be done: no 'nv.tma_store_wait' of the storing thread, then a barrier, orders it before this write",
                    _ => "the read of its previous contents is ordered before it (a release or a CTA barrier is missing)",
                };
                let msg = format!("overwrites {} before {what}", self.slot_name(slot));
                return Err(self.error(op, msg).with_note(self.body.ops[read.op].loc.clone(), "the read is here"));
            }
        }
        let state = self.stages.get_mut(&granule).expect("entered");
        if replaces {
            state.previous_reads = std::mem::take(&mut state.reads);
            state.writes = vec![id];
        } else {
            state.writes.push(id);
        }
        Ok(())
    }

    /// The error for a state where no warp can move: the first warp blocked
    /// on an mbarrier wait, with what its barrier still lacks.
    fn hang(&self) -> Diagnostic {
        let blocked = |w: usize| self.traces[w].get(self.warps[w].pc);
        for w in 0..self.warps.len() {
            if let Some(Step { op, kind: StepKind::Wait { barrier, parity } }) = blocked(w) {
                let (completed, missing, tx) = match self.barriers.get(barrier) {
                    Some(s) => (s.completed, s.missing, s.tx),
                    None => (0, self.arrivals_of(barrier.0), 0),
                };
                let msg = format!(
                    "hangs: warp {w} waits on {} for the phase of parity {parity}, but the barrier has completed {completed} phase(s) and no warp left can complete the next ({missing} arrival(s) and {tx} transaction byte(s) missing)",
                    self.slot_name(*barrier)
                );
                let mut diag = self.error(*op, msg);
                let mut arrivals: Vec<Op> = Vec::new();
                for step in self.traces.iter().flatten() {
                    let on_barrier = matches!(step.kind, StepKind::Arrive { barrier: b, .. } | StepKind::RemoteArrive { barrier: b, .. } | StepKind::ExpectTx { barrier: b, .. } | StepKind::CopyAsync { barrier: b, .. } if b.0 == barrier.0);
                    if on_barrier && !arrivals.contains(&step.op) {
                        arrivals.push(step.op);
                    }
                }
                for arrival in arrivals {
                    diag = diag.with_note(self.body.ops[arrival].loc.clone(), format!("{} gets arrivals here", self.name(barrier.0)));
                }
                return diag;
            }
        }
        let w = (0..self.warps.len()).find(|&w| blocked(w).is_some()).expect("a blocked warp");
        let op = self.traces[w][self.warps[w].pc].op;
        self.error(op, "hangs: not every warp of the CTA (or of the warpgroup) reaches this barrier".into())
    }
}

#[cfg(test)]
mod tests {
    use super::{Cuts, Step, StepKind, Window};
    use tilec_dialects::ir::{EntityRef, Op, Value};

    /// A warp's step reading `rows` of stage 0 of buffer `v`.
    fn read(v: Value, rows: (i64, i64)) -> Step {
        Step { op: Op::new(0), kind: StepKind::LoadShared { buffer: Window { slot: (v, 0), rows } } }
    }

    /// A window is tracked in units that end wherever another window of
    /// the same buffer starts or ends (rows widened to granules of 8), so
    /// that two accesses overlap in a unit exactly when their rows share a
    /// granule.
    #[test]
    fn units_split_where_windows_of_the_buffer_start_and_end() {
        let (a, b) = (Value::new(0), Value::new(1));
        let cuts = Cuts::of(&[vec![read(a, (0, 128)), read(a, (64, 128))], vec![read(a, (3, 11)), read(b, (0, 128))]]);
        let units = |v, rows| cuts.units(Window { slot: (v, 1), rows });
        assert_eq!(units(a, (0, 128)), [(a, 1, 0), (a, 1, 2), (a, 1, 8)]);
        assert_eq!(units(a, (64, 128)), [(a, 1, 8)]);
        assert_eq!(units(a, (3, 11)), [(a, 1, 0)]);
        assert_eq!(units(b, (0, 128)), [(b, 1, 0)]);
    }
}
