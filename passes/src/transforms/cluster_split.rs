//! `tile-cluster-split{along=m|n|none ctas=C}`: C neighbouring CTAs (2, 4
//! or 8) form a cluster and load the operand tile they all need once: each
//! CTA loads a C-th of its rows and TMA multicasts them into the same buffer
//! stage of every CTA of the cluster.
//!
//! Along M, CTAs with neighbouring M tiles and the same N tile form a
//! cluster and share B; along N, neighbours in N share A. The pass runs on
//! a scheduled K loop (after `tile-pipeline` or `tile-warp-specialize`) and
//! rewrites its synchronisation to cluster scope:
//! - every TMA load of the shared operand loads rows
//!   `[rank * R/C, (rank + 1) * R/C)` of its box into that row window of the
//!   buffer, with `multicast`; each CTA's full barrier still expects the
//!   whole box (its share and its peers');
//! - a stage is free only when every CTA of the cluster has read it: in a
//!   warp-specialised kernel, each consumer warp also arrives on each
//!   peer's empty barrier (`nv.mbarrier_arrive_remote`), whose arrival count
//!   grows by the peers' consumer warps; in a pipelined kernel the CTA
//!   barrier that orders a refill after the stage's reads becomes a cluster
//!   barrier;
//! - a cluster barrier after the mbarriers are initialised (no remote arrive
//!   or multicast before the peers' barriers exist) and one before exit (no
//!   CTA leaves while a peer may still write its shared memory or arrive on
//!   its barriers).
//!
//! The cluster must hold tiles that share the operand: in a grid kernel,
//! the shared operand's loads must not depend on the block id along the
//! cluster, and grid z (a batch, split-K's splits through the workspace)
//! stays out of the cluster; a persistent kernel must hand out a cluster's
//! tiles together along the same dimension
//! (`tile-persistent{cluster-along=... cluster-ctas=C}`).
//! Every CTA runs the same K loop, so a CTA whose tile lies past the edge
//! still loads (TMA fills zeros), takes part in every barrier and stores
//! nothing (stores are bounds-checked, TMA stores clipped).

use crate::config::ConfigEntries;
use crate::cluster::{check_cluster_ctas, shares_whole_atoms, Along};
use crate::hopper::wgmma::next_op;
use crate::hopper::WARPS_PER_WARPGROUP;
use crate::options::{OptionKind, OptionSpec};
use crate::phase::{Phase, PhaseRule};
use crate::pass::PassInfo;
use crate::pass::{op_error, Pass};
use tilec_dialects::ir::{Attribute, Attributes, Body, Builder, ElemType, InsertPoint, Op, Region, Type, Value};
use tilec_dialects::nv::{self, AllocMbarriers, Barrier, ClusterBarrier, ClusterRank, LoadFragment, MbarrierArrive, MbarrierArriveRemote, MbarrierWait, SmemRows, TmaLoad, Wgmma};
use tilec_dialects::tile::{Addi, BlockId, For, LoadScalar, Muli, Remsi};
use tilec_dialects::{Diagnostic, Function};

/// `tile-cluster-split`'s registration: name, options, phases and constructor.
pub const INFO: PassInfo = PassInfo {
    name: "tile-cluster-split",
    summary: "Group neighbouring CTAs into clusters that multicast the operand tile they share (TMA multicast, cluster-scope barriers)",
    options: &[
        OptionSpec {
            name: "along",
            kind: OptionKind::Enum(Along::WORDS),
            default: "m",
            help: "the tile dimension along which CTAs form a cluster: m shares B, n shares A, none leaves the kernel as it is (default: tile.config's cluster)",
        },
        OptionSpec { name: "ctas", kind: OptionKind::Int { min: 2, max: 8 }, default: "2", help: "CTAs per cluster: 2, 4 or 8 (default: tile.config's cluster_ctas)" },
    ],
    phases: PhaseRule {
        needs: Phase::TileScheduled..=Phase::TileScheduled,
        leaves: None,
        reason: "it multicasts the TMA loads and rewrites the barriers that tile-pipeline or tile-warp-specialize made (run it after them, before tile-lower-to-nv)",
    },
    create: |o| Box::new(ClusterSplit { along: Along::parse(o.word("along")), ctas: o.int("ctas"), along_from_config: !o.given("along"), ctas_from_config: !o.given("ctas") }),
};

/// The `tile-cluster-split` pass with its options resolved.
pub struct ClusterSplit {
    along: Along,
    /// CTAs per cluster.
    ctas: i64,
    /// Whether `along` was left out, so `tile.config`'s `cluster` decides.
    along_from_config: bool,
    /// Whether `ctas` was left out, so `tile.config`'s `cluster_ctas` decides.
    ctas_from_config: bool,
}

impl Pass for ClusterSplit {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn run(&mut self, func: &mut Function) -> Result<(), Diagnostic> {
        let entries = ConfigEntries::of(func)?;
        if let Some(along) = entries.cluster.filter(|_| self.along_from_config) {
            self.along = along;
        }
        if let Some(ctas) = entries.cluster_ctas.filter(|_| self.ctas_from_config) {
            self.ctas = ctas;
        }
        check_cluster_ctas(self.ctas).map_err(|m| Diagnostic::error(func.loc.clone(), format!("tile-cluster-split: {m}")))?;
        if self.along == Along::None {
            return Ok(());
        }
        if func.attrs.get("cluster_dims").is_some() {
            return Err(Diagnostic::error(func.loc.clone(), format!("'@{}' already runs in clusters ('cluster_dims', as tile-split-k or an earlier tile-cluster-split leaves it): tile-cluster-split groups the CTAs of an unclustered kernel into clusters", func.name)));
        }
        let persistent = func.attrs.get("grid").and_then(Attribute::as_str) == Some("sms");
        let region = func.region;
        let body = &mut func.body;
        let ops = body.walk_region(region);
        if !persistent {
            self.check_same_loops(body, &ops)?;
        }
        let wgmmas: Vec<Wgmma> = ops.iter().filter_map(|&o| Wgmma::of(body, o)).collect();
        let Some(&first) = wgmmas.first() else {
            return Err(Diagnostic::error(func.loc.clone(), format!("'@{}' has no scheduled K loop (nv.wgmma): run tile-pipeline or tile-warp-specialize before tile-cluster-split", func.name)));
        };
        let shared = shared_buffer(body, first, self.along).ok_or_else(|| op_error(body, first.op(), "reads its operand from neither a shared buffer nor a fragment loaded from one: nothing to multicast".into()))?;
        if wgmmas.iter().any(|&w| shared_buffer(body, w, self.along) != Some(shared)) {
            return Err(op_error(body, first.op(), "the MMAs read the shared operand from several buffers: tile-cluster-split multicasts one".into()));
        }
        let loads: Vec<Op> = ops.iter().copied().filter(|&o| TmaLoad::of(body, o).is_some_and(|l| l.buffer(body) == shared)).collect();
        let Some(&first_load) = loads.first() else {
            return Err(op_error(body, first.op(), "reads a shared operand that no nv.tma_load fills: nothing to multicast".into()));
        };
        let rows = body.value_type(shared).as_smem().expect("a TMA destination is a buffer").tile.shape[0];
        let ctas = self.ctas;
        if !shares_whole_atoms(rows, ctas) {
            return Err(op_error(body, first_load, format!("loads {rows} rows of the shared operand; each of a cluster's {ctas} CTAs loads a {ctas}th, which must be a multiple of 8 rows to keep the swizzle aligned")));
        }
        self.check_pairing(func, &loads, persistent)?;

        let body = &mut func.body;
        let entry = body.entry_block(region);
        let loc = func.loc.clone();
        let first_op = body.blocks[entry].ops[0];
        let mut b = Builder::new(body, InsertPoint::Before(first_op), loc.clone());
        let rank = ClusterRank::build(&mut b, Attributes::new()).result(b.body);
        let rank = b.name(rank, "cluster_rank");
        // The other CTAs of the cluster, each `(rank + i) % ctas`.
        let size = b.index(ctas);
        let peers: Vec<Value> = (1..ctas)
            .map(|i| {
                let step = b.index(i);
                let ahead = Addi::build(&mut b, rank, step, Attributes::new()).result(b.body);
                let peer = Remsi::build(&mut b, ahead, size, Attributes::new()).result(b.body);
                b.name(peer, &format!("peer{i}"))
            })
            .collect();

        multicast_loads(body, shared, rows / ctas, rank, &loads);
        match ops.iter().find_map(|&o| nv::WarpSpecialize::of(body, o)) {
            Some(ws) => release_to_peers(body, ws, &peers),
            None => widen_barriers(body, region),
        }

        // A cluster barrier once every mbarrier exists, and one before exit.
        let after_init = body.blocks[entry].ops.iter().rev().copied().find(|&o| AllocMbarriers::of(body, o).is_some());
        let start = match after_init {
            Some(alloc) => next_op(body, alloc),
            None => body.blocks[entry].ops[0],
        };
        ClusterBarrier::build(&mut Builder::new(body, InsertPoint::Before(start), loc.clone()), Attributes::new());
        let terminator = body.terminator(entry).expect("verified function");
        ClusterBarrier::build(&mut Builder::new(body, InsertPoint::Before(terminator), loc), Attributes::new());

        let dims = match (persistent, self.along) {
            (false, Along::N) => [1, ctas, 1],
            _ => [ctas, 1, 1],
        };
        func.attrs.set("cluster_dims", Attribute::ints(&dims));
        Ok(())
    }
}

impl ClusterSplit {
    /// In a grid kernel the CTAs of a cluster share their grid z (a batch
    /// of problems, split-K's splits), and so the operand, and must run the
    /// same loops: no trip count may hang on the block id along the cluster
    /// or on data (a masked expert's count of rows), or one CTA would wait
    /// for loads a peer never multicasts.
    fn check_same_loops(&self, body: &Body, ops: &[Op]) -> Result<(), Diagnostic> {
        let dim = if self.along == Along::M { 0 } else { 1 };
        let varies = |op: Op| BlockId::of(body, op).is_some_and(|b| b.dim(body) == dim) || LoadScalar::of(body, op).is_some();
        for &op in ops {
            let Some(l) = For::of(body, op) else { continue };
            if [l.lower_bound(body), l.upper_bound(body), l.step(body)].into_iter().any(|v| body.computed_from(v, varies)) {
                return Err(op_error(
                    body,
                    op,
                    format!("runs a loop whose trip count depends on 'tile.block_id {}' or on loaded data: the CTAs of a cluster along {} would run different K loops", ["x", "y"][dim as usize], self.along.word()),
                ));
            }
        }
        Ok(())
    }

    /// The CTAs of a cluster must hold tiles that share the operand.
    fn check_pairing(&self, func: &Function, loads: &[Op], persistent: bool) -> Result<(), Diagnostic> {
        let body = &func.body;
        if persistent {
            let along = func.attrs.get("cluster_along").and_then(Attribute::as_str);
            let ctas = func.attrs.get_int("cluster_ctas");
            return match (along, ctas) {
                (Some(along), Some(ctas)) if along == self.along.word() && ctas == self.ctas => Ok(()),
                _ => Err(Diagnostic::error(
                    func.loc.clone(),
                    format!(
                        "persistent '@{}' hands out {}; clusters of {ctas} along {along} need runs of {ctas} tiles along {along}: run tile-persistent{{cluster-along={along} cluster-ctas={ctas}}}",
                        func.name,
                        match (along, ctas) {
                            (Some(along), Some(ctas)) => format!("runs of {ctas} tiles along {along}"),
                            _ => "one tile per CTA".to_string(),
                        },
                        ctas = self.ctas,
                        along = self.along.word(),
                    ),
                )),
            };
        }
        // Along M the cluster spans grid x, along N grid y.
        let dim = if self.along == Along::M { 0 } else { 1 };
        for &load in loads {
            let coords = TmaLoad::of(body, load).expect("a TMA load").coords(body).to_vec();
            if coords.iter().any(|&c| body.computed_from(c, |op| BlockId::of(body, op).is_some_and(|b| b.dim(body) == dim))) {
                return Err(op_error(
                    body,
                    load,
                    format!("loads the shared operand at coordinates that depend on 'tile.block_id {}': the CTAs of a cluster along {} would need different tiles", ["x", "y"][dim as usize], self.along.word()),
                ));
            }
        }
        Ok(())
    }
}

/// The buffer the MMA reads its shared operand from (B along M, A along N),
/// through row windows and fragment loads.
fn shared_buffer(body: &Body, wgmma: Wgmma, along: Along) -> Option<Value> {
    let mut v = if along == Along::M { wgmma.b(body) } else { wgmma.a(body) };
    loop {
        let def = body.defining_op(v);
        if let Some(rows) = def.and_then(|d| SmemRows::of(body, d)) {
            v = rows.buffer(body);
        } else if let Some(fragment) = def.and_then(|d| LoadFragment::of(body, d)) {
            v = fragment.buffer(body);
        } else {
            return body.value_type(v).as_smem().map(|_| v);
        }
    }
}

/// Each CTA loads its share (`share` rows) of the shared operand's rows into
/// that window of the buffer, multicast to every CTA of the cluster.
fn multicast_loads(body: &mut Body, buffer: Value, share: i64, rank: Value, loads: &[Op]) {
    let alloc = body.defining_op(buffer).expect("a buffer is allocated");
    let mut b = Builder::new(body, InsertPoint::Before(next_op(body, alloc)), body.ops[alloc].loc.clone());
    let h = b.index(share);
    let row = Muli::build(&mut b, rank, h, Attributes::new()).result(b.body);
    let row = b.name(row, "cluster_row");
    let mut smem = b.body.value_type(buffer).as_smem().expect("a buffer").clone();
    smem.tile.shape[0] = share;
    let window = SmemRows::build(&mut b, buffer, row, Type::Smem(smem), Attributes::new()).result(b.body);
    b.name(window, "multicast_rows");
    for &op in loads {
        let load = TmaLoad::of(body, op).expect("a TMA load");
        let (tensor, mut coords, stage, barrier, barrier_stage) = (load.tensor(body), load.coords(body).to_vec(), load.stage(body), load.barrier(body), load.barrier_stage(body));
        let mut attrs = body.ops[op].attrs.clone();
        attrs.set("multicast", Attribute::Unit);
        let mut b = Builder::new(body, InsertPoint::Before(op), body.ops[op].loc.clone());
        let row_coord = coords.len() - 2;
        coords[row_coord] = Addi::build(&mut b, coords[row_coord], row, Attributes::new()).result(b.body);
        TmaLoad::build(&mut b, tensor, &coords, window, stage, barrier, barrier_stage, attrs);
        body.remove_op(op);
    }
}

/// Warp-specialised: each consumer warp also releases the stage to every
/// peer's producer, whose empty barrier waits for those arrivals too. Only
/// the barriers the producer waits on are the cluster's; ping-pong
/// consumers' turn barrier stays the CTA's own.
fn release_to_peers(body: &mut Body, ws: nv::WarpSpecialize, peers: &[Value]) {
    // The consumers that release one stage: all of them, or in ping-pong
    // the one whose turn it is.
    let sharing = if ws.alternate(body) { 1 } else { ws.consumers(body) };
    let producer_waits: Vec<Value> = body.walk_region(ws.producer(body)).into_iter().filter_map(|op| MbarrierWait::of(body, op).map(|w| w.barrier(body))).collect();
    let mut groups = Vec::new();
    for op in body.walk_region(ws.consumer(body)) {
        let Some(arrive) = MbarrierArrive::of(body, op) else { continue };
        let (barrier, stage) = (arrive.barrier(body), arrive.stage(body));
        if !producer_waits.contains(&barrier) {
            continue;
        }
        let mut b = Builder::new(body, InsertPoint::Before(next_op(body, op)), body.ops[op].loc.clone());
        for &peer in peers {
            MbarrierArriveRemote::build(&mut b, barrier, stage, peer, Attributes::new());
        }
        if !groups.contains(&barrier) {
            groups.push(barrier);
        }
    }
    for barrier in groups {
        let alloc = body.defining_op(barrier).expect("barriers are allocated");
        let arrivals = AllocMbarriers::of(body, alloc).expect("an mbarrier group").arrivals(body);
        // One remote arrival per warp of each peer's releasing consumers.
        let remote = WARPS_PER_WARPGROUP * sharing * peers.len() as i64;
        body.ops[alloc].attrs.set("arrivals", Attribute::Int(arrivals + remote, ElemType::I64));
    }
}

/// Pipelined: the CTA barriers that order a refill after the stage's reads
/// order the peers' reads too (a warpgroup's barrier orders its own
/// epilogue only).
fn widen_barriers(body: &mut Body, region: Region) {
    for op in body.walk_region(region) {
        if Barrier::of(body, op).is_some_and(|b| !b.warpgroup(body)) {
            let (loc, attrs) = (body.ops[op].loc.clone(), body.ops[op].attrs.clone());
            ClusterBarrier::build(&mut Builder::new(body, InsertPoint::Before(op), loc), attrs);
            body.remove_op(op);
        }
    }
}
