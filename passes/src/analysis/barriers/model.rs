//! What the barrier checks look at: every mbarrier group of a function,
//! the roles that run code (the whole CTA, or a warp_specialize's producer
//! and consumers), and the barrier events each role executes, in program
//! order.
//!
//! Each event is seen once, as in the first pass through its loop; `tile.if`
//! bodies count as taken, since the passes guard only boundary iterations
//! with them.

use crate::pass::op_error;
use tilec_dialects::ir::{Block, Body, Op, Value};
use tilec_dialects::nv;
use tilec_dialects::nv::memory::COPY_ARRIVALS;
use tilec_dialects::registry::Opcode;
use tilec_dialects::{Diagnostic, Function, Type};

/// One `nv.alloc_mbarriers`: `stages` barriers, each completing a phase
/// after `arrivals` arrivals (and the transaction bytes expected of it).
pub struct BarrierGroup {
    pub alloc: Op,
    pub value: Value,
    pub stages: i64,
    pub arrivals: i64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoleKind {
    Cta,
    Producer,
    Consumers,
}

pub struct Role {
    pub kind: RoleKind,
    pub threads: i64,
}

impl Role {
    /// The threads that issue each elected op: one, or in the consumer
    /// region one per consumer warpgroup (each runs the region as its own).
    pub fn elected_issuers(&self) -> i64 {
        match self.kind {
            RoleKind::Consumers => self.threads / 128,
            RoleKind::Cta | RoleKind::Producer => 1,
        }
    }

    pub fn name(&self) -> &'static str {
        match self.kind {
            RoleKind::Cta => "the whole CTA",
            RoleKind::Producer => "the producer",
            RoleKind::Consumers => "the consumers",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// `nv.mbarrier_arrive`: one arrival per thread of the role.
    Arrive,
    /// `nv.mbarrier_arrive {per_warp}`: one arrival per warp of the role.
    WarpArrive,
    /// `nv.mbarrier_arrive_remote`: one arrival per warp of the role, on
    /// the peer CTA's barrier; the peer's own arrives on this CTA's in the
    /// same way (the CTAs of a cluster run the same code), so it counts as
    /// an arrival on this CTA's barrier.
    RemoteArrive,
    /// `nv.mbarrier_expect_tx`: one (elected) arrival expecting the bytes,
    /// from each consumer warpgroup in a consumer region.
    ExpectTx(i64),
    /// `nv.copy_async`: the copying warp's 32 lanes arrive once their copies land.
    CopyArrive,
    /// `nv.tma_load`: completes the bytes, never an arrival.
    TmaComplete(i64),
    Wait { phase: Value },
}

pub struct Event {
    pub op: Op,
    pub kind: EventKind,
    /// Index into [`Model::groups`].
    pub group: usize,
    pub stage: Value,
    /// Index into [`Model::roles`].
    pub role: usize,
    /// The innermost `tile.for` around the event, `None` at a role's top.
    pub scope: Option<Op>,
}

pub struct Model {
    pub groups: Vec<BarrierGroup>,
    pub roles: Vec<Role>,
    pub events: Vec<Event>,
    /// `(a, b)`: event `a` comes right before event `b` in one role.
    pub program_order: Vec<(usize, usize)>,
    /// CTAs per cluster: a multicast load brings every CTA's share.
    pub cluster_size: i64,
}

impl Model {
    pub fn build(func: &Function) -> Result<Model, Diagnostic> {
        let warps = func.attrs.get_int("num_warps").unwrap_or(4);
        let mut model = Model {
            groups: Vec::new(),
            roles: vec![Role { kind: RoleKind::Cta, threads: 32 * warps }],
            events: Vec::new(),
            program_order: Vec::new(),
            cluster_size: cluster_size(func),
        };
        model.walk(&func.body, func.entry_block(), 0, None, vec![])?;
        Ok(model)
    }

    /// How many arrivals event `e` makes on its barrier.
    pub fn arrivals(&self, e: &Event) -> i64 {
        match e.kind {
            EventKind::Arrive => self.roles[e.role].threads,
            EventKind::WarpArrive | EventKind::RemoteArrive => self.roles[e.role].threads / 32,
            EventKind::ExpectTx(_) => self.roles[e.role].elected_issuers(),
            EventKind::CopyArrive => COPY_ARRIVALS,
            EventKind::TmaComplete(_) | EventKind::Wait { .. } => 0,
        }
    }

    /// Walks `block` in `role`, chaining events after `last` (the events
    /// that may have run just before); returns the events that may have run
    /// last.
    fn walk(&mut self, body: &Body, block: Block, role: usize, scope: Option<Op>, mut last: Vec<usize>) -> Result<Vec<usize>, Diagnostic> {
        for &op in &body.blocks[block].ops {
            let event = match body.opcode(op) {
                Opcode::NvAllocMbarriers => {
                    let alloc = nv::AllocMbarriers::of(body, op).expect("verified");
                    let value = alloc.result(body);
                    let Type::MBarrier(stages) = *body.value_type(value) else { unreachable!("verified") };
                    self.groups.push(BarrierGroup { alloc: op, value, stages, arrivals: alloc.arrivals(body) });
                    None
                }
                Opcode::NvMbarrierArrive => {
                    let arrive = nv::MbarrierArrive::of(body, op).expect("verified");
                    let kind = if arrive.per_warp(body) { EventKind::WarpArrive } else { EventKind::Arrive };
                    Some((kind, arrive.barrier(body), arrive.stage(body)))
                }
                Opcode::NvMbarrierArriveRemote => {
                    let arrive = nv::MbarrierArriveRemote::of(body, op).expect("verified");
                    Some((EventKind::RemoteArrive, arrive.barrier(body), arrive.stage(body)))
                }
                Opcode::NvMbarrierExpectTx => {
                    let expect = nv::MbarrierExpectTx::of(body, op).expect("verified");
                    Some((EventKind::ExpectTx(expect.bytes(body)), expect.barrier(body), expect.stage(body)))
                }
                Opcode::NvMbarrierWait => {
                    let wait = nv::MbarrierWait::of(body, op).expect("verified");
                    Some((EventKind::Wait { phase: wait.phase(body) }, wait.barrier(body), wait.stage(body)))
                }
                Opcode::NvCopyAsync => {
                    if self.roles[role].kind == RoleKind::Consumers {
                        let msg = "runs in the CTA's second warp, which is the producer's: a copy in a consumer region would never run";
                        return Err(op_error(body, op, msg.into()));
                    }
                    let copy = nv::CopyAsync::of(body, op).expect("verified");
                    Some((EventKind::CopyArrive, copy.barrier(body), copy.barrier_stage(body)))
                }
                Opcode::NvTmaLoad => {
                    let load = nv::TmaLoad::of(body, op).expect("verified");
                    // TMA writes the box; row padding in the layout is never transferred.
                    let box_tile = &body.value_type(load.buffer(body)).as_smem().expect("verified").tile;
                    let bytes = box_tile.num_elements() * i64::from(box_tile.elem.bits()) / 8;
                    // A multicast box lands in every CTA, each CTA's share with it.
                    let bytes = if load.multicast(body) { bytes * self.cluster_size } else { bytes };
                    Some((EventKind::TmaComplete(bytes), load.barrier(body), load.barrier_stage(body)))
                }
                _ => None,
            };
            if let Some((kind, barrier, stage)) = event {
                let Some(group) = self.groups.iter().position(|g| g.value == barrier) else {
                    let msg = "takes a barrier that is not an 'nv.alloc_mbarriers' result; the barrier verifier cannot follow it";
                    return Err(op_error(body, op, msg.into()));
                };
                let e = self.events.len();
                self.events.push(Event { op, kind, group, stage, role, scope });
                self.program_order.extend(last.iter().map(|&l| (l, e)));
                last = vec![e];
            }
            last = self.walk_regions(body, op, role, scope, last)?;
        }
        Ok(last)
    }

    /// The regions of `op`: a warp_specialize starts its two roles from the
    /// same point and both go on to what follows; a loop or `if` body runs
    /// in the current role.
    fn walk_regions(&mut self, body: &Body, op: Op, role: usize, scope: Option<Op>, last: Vec<usize>) -> Result<Vec<usize>, Diagnostic> {
        let data = &body.ops[op];
        if data.regions.is_empty() {
            return Ok(last);
        }
        let roles = if let Some(ws) = nv::WarpSpecialize::of(body, op) {
            // Consumers that take turns at whole tiles arrive one warpgroup
            // at a time.
            let arriving = if ws.alternate(body) { 1 } else { ws.consumers(body) };
            self.roles.push(Role { kind: RoleKind::Producer, threads: 128 });
            self.roles.push(Role { kind: RoleKind::Consumers, threads: 128 * arriving });
            vec![self.roles.len() - 2, self.roles.len() - 1]
        } else {
            vec![role; data.regions.len()]
        };
        let scope = if body.opcode(op) == Opcode::TileFor { Some(op) } else { scope };
        let mut ends = Vec::new();
        for (&region, role) in data.regions.iter().zip(roles) {
            for &block in &body.regions[region].blocks {
                ends.extend(self.walk(body, block, role, scope, last.clone())?);
            }
        }
        ends.sort_unstable();
        ends.dedup();
        Ok(ends)
    }
}

/// CTAs per cluster: the product of the function's `cluster_dims`, 1 without.
pub fn cluster_size(func: &Function) -> i64 {
    match func.attrs.get("cluster_dims") {
        Some(tilec_dialects::ir::Attribute::Array(dims)) => dims.iter().filter_map(tilec_dialects::ir::Attribute::as_int).product(),
        _ => 1,
    }
}
