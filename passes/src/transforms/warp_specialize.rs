//! `tile-warp-specialize{consumers=1|2 stages=N wait-depth=auto|0|1 producer-regs=R consumer-regs=R scales=staged|prefetched pingpong=false}`:
//! splits a kernel whose K loop stages dot operands through shared memory
//! into a producer warpgroup and one or two consumer warpgroups, connected
//! by a full and an empty mbarrier per stage. It expands the same schedule
//! as `tile-pipeline` (`crate::hopper::schedule`) with the same stage and
//! phase counting (`crate::hopper::counting`), across roles.
//!
//! The kernel's work (the K loop and what follows it, or the loop over tiles
//! that `tile-persistent` made) is cloned into both roles of an
//! `nv.warp_specialize`, and each role keeps its part:
//! - the producer, with a small register budget, waits until a stage is
//!   empty (its first round passes at once: it waits for the parity before
//!   the barrier's first phase), arms the stage's full barrier and issues
//!   the TMA loads, and the copies of a block-scaled dot's scales
//!   (`scales=staged`, the default); the dots and the epilogue go;
//! - each consumer, with a large budget, waits until a stage is full, runs
//!   its wgmma with `wait-depth` groups in flight (`auto_wait_depth`: none
//!   where two consumers share each tile, one otherwise; always none for a
//!   block-scaled dot, whose product is promoted at once, with its scales
//!   read from the stage while its wgmma runs, or with `scales=prefetched`
//!   loaded one iteration ahead), releases the stage the retired group read
//!   (the stage just read when none stays in flight; lane 0 of each warp for
//!   it, or every thread when the stage carries scales the threads read
//!   themselves), drains, releases the last stage, and runs the epilogue.
//!   With two consumers each owns half of the M tile (a row window of A's
//!   buffer and of the row scales' buffer) and stores its half.
//!
//! Stages and phases count iterations from the kernel's start, so a
//! persistent loop keeps them in step across tiles and the producer runs
//! ahead into the next tile while the consumers finish an epilogue.
//!
//! With `pingpong=true` (two consumers, a persistent loop over tiles) the
//! consumers do not share a tile but take turns at whole tiles: consumer c
//! runs the CTA's tiles c, c + 2, ..., holding all of each tile's rows, so
//! one's epilogue runs beside the other's main loop. Their main loops take
//! turns through an `order` barrier of one stage per consumer: before tile
//! j's K loop a consumer waits until the other has finished the K loop of
//! tile j - 1 (completing its (j + 1) / 2-th phase), and once its own K
//! loop has drained it arrives on its stage. Besides keeping the tensor cores to one
//! consumer at a time, the turns keep each full-barrier wait within a
//! phase of the barrier's state: without them a consumer could wait for a
//! round two phases ahead, whose parity is that of the round just done.

use crate::config::{in_option_range, record_built, ConfigEntries};
use crate::selection::{Precision, Scales, Schedule};
use crate::hopper::counting::{enclosing_loop, loop_iteration, parity, Counting};
use crate::hopper::dot::StagedDot;
use crate::hopper::prefetch::prefetch_register_loads;
use crate::hopper::WARPS_PER_WARPGROUP;
use crate::hopper::schedule::{dots, loop_block, staged_loop, staged_loads, LoopSchedule};
use crate::hopper::staging::{column_major_tensors, outermost_ancestor, scale_form, record_given, rows_window, scales_option, RowShare, StagedBuffers, SCALES_OPTION};
use crate::hopper::wgmma::{completing_wait, dot_a, drain_after, emit_wgmma, next_op, promote_by_blocks, read_scales_behind_wgmma, replace_dot, RowBlocks};
use crate::options::{OptionKind, OptionSpec};
use crate::phase::{Phase, PhaseRule};
use crate::pass::PassInfo;
use crate::pass::{op_error, Pass};
use std::collections::HashMap;
use tilec_dialects::ir::{Attribute, Attributes, Block, Body, Builder, ElemType, EntityRef, InsertPoint, Op, Region, TileType, Type, Value};
use tilec_dialects::registry::Opcode;
use tilec_dialects::nv::roles::most_consumer_registers;
use tilec_dialects::nv::{self, AllocMbarriers, MbarrierArrive, MbarrierWait};
use tilec_dialects::tile::{AddParked, Addi, Cmpi, Divsi, For, If, Load, LoadBroadcast, Muli, ParkPartial, ReduceSplits, Store, Subi, Yield};
use tilec_dialects::{Diagnostic, Function, Layout, Location};

/// `tile-warp-specialize`'s registration: name, options, phases and constructor.
pub const INFO: PassInfo = PassInfo {
    name: "tile-warp-specialize",
    summary: "Split the K loop into a TMA producer warpgroup and wgmma consumer warpgroups",
    options: &[
        OptionSpec { name: "consumers", kind: OptionKind::Int { min: 1, max: 2 }, default: "2", help: "consumer warpgroups" },
        OptionSpec { name: "stages", kind: OptionKind::Int { min: 2, max: crate::selection::STAGES_LIMIT }, default: "4", help: "shared-memory stages" },
        OptionSpec {
            name: "wait-depth",
            kind: OptionKind::Enum(&["auto", "0", "1"]),
            default: "auto",
            help: "wgmma groups a consumer leaves in flight each iteration (auto: 0 where two consumers share each tile, else 1)",
        },
        OptionSpec { name: "producer-regs", kind: OptionKind::Int { min: 0, max: 256 }, default: "0", help: "registers per producer thread (0: 40, or 32 beside two consumers with wide block-scaled accumulators, 24 beside two that share each tile's columns)" },
        OptionSpec { name: "consumer-regs", kind: OptionKind::Int { min: 0, max: 256 }, default: "0", help: "registers per consumer thread (0: 232, or 240 for two that share each tile's columns, 256 for one consumer reading A from registers)" },
        SCALES_OPTION,
        OptionSpec { name: "pingpong", kind: OptionKind::Bool, default: "false", help: "two consumers take turns at whole tiles of a persistent loop instead of sharing each tile's rows" },
        OptionSpec {
            name: "halves",
            kind: OptionKind::Enum(Halves::WORDS),
            default: "rows",
            help: "how two consumers share a tile: rows (each half of BLOCK_M) or columns (each every row and half of BLOCK_N)",
        },
    ],
    phases: PhaseRule { needs: Phase::TileLayouts..=Phase::TileLayouts, leaves: Some(Phase::TileScheduled), reason: "it stages the tiles tile-assign-layouts puts in shared memory, and a K loop takes one schedule (run it after tile-assign-layouts, instead of tile-pipeline, before tile-lower-to-nv)" },
    create: |o| {
        Box::new(WarpSpecialize {
            consumers: o.int("consumers"),
            stages: o.int("stages"),
            wait_depth: o.word("wait-depth").parse().ok(),
            producer_regs: o.int("producer-regs"),
            consumer_regs: o.int("consumer-regs"),
            consumers_from_config: !o.given("consumers"),
            stages_from_config: !o.given("stages"),
            scales: scales_option(o),
            pingpong: o.given("pingpong").then(|| o.bool("pingpong")),
            halves: o.given("halves").then(|| Halves::parse(o.word("halves"))),
        })
    },
};

/// Register budgets (producer, consumer) a pipeline that gives none gets:
/// 40 and [`CONSUMER_REGS`], except beside two consumers that share each
/// tile's columns ([`COLUMN_HALVES_PRODUCER_REGS`]), and where two consumers each hold more
/// than [`WIDE_ACCUMULATORS`] accumulator registers a thread (block-scaled
/// FP8's 128x176 tiles: 88 running and 88 partial): there the producer
/// takes 32, with which ptxas allocated the kernel without spilling (the
/// other budgets tried spilled). Three warpgroups start with 168 registers
/// a thread, and what the consumers gain the producer gives up. A lone
/// consumer that reads A from registers takes every register the producer
/// leaves ([`most_consumer_registers`]: 256): with 232 the A-in-registers
/// 128x128 tile spilled. Other lone consumers keep 232: more gained them
/// nothing (measured: docs/evidence.md, warp_specialize.rs, default_register_budgets).
fn default_register_budgets(consumers: i64, accumulators: i64, a_in_registers: bool, halves: Halves) -> (i64, i64) {
    if consumers == 2 && halves == Halves::Columns {
        (COLUMN_HALVES_PRODUCER_REGS, most_consumer_registers(COLUMN_HALVES_PRODUCER_REGS, 2))
    } else if consumers == 2 && accumulators > WIDE_ACCUMULATORS {
        (32, CONSUMER_REGS)
    } else if consumers == 1 && a_in_registers {
        (40, most_consumer_registers(40, 1))
    } else {
        (40, CONSUMER_REGS)
    }
}

/// The producer's registers beside two consumers that share each tile's
/// columns: the fewest a warpgroup may keep, so each consumer takes 240.
/// A consumer holds every row of its half, and with split-K's or
/// stream-K's hand-over beside its accumulators 232 spilled
/// (measured: docs/evidence.md, warp_specialize.rs, default_register_budgets).
const COLUMN_HALVES_PRODUCER_REGS: i64 = 24;

/// A consumer's registers a thread where the pipeline gives none and no
/// exception of [`default_register_budgets`] applies.
const CONSUMER_REGS: i64 = 232;

/// The wgmma groups a consumer leaves in flight where the pipeline gives no
/// `wait-depth`, with `sharing` consumers on each tile. Two consumers
/// sharing a tile wait for all of theirs and release the stage at once:
/// while one waits, the other's wgmma keeps the tensor cores busy, and each
/// stage goes back to the producer an iteration sooner, so the loads run an
/// iteration further ahead. A lone consumer (or one taking turns at whole
/// tiles) has no neighbour to fill its wait: one group stays in flight
/// (measured: docs/evidence.md, warp_specialize.rs, auto_wait_depth).
fn auto_wait_depth(sharing: i64) -> i64 {
    if sharing == 2 {
        0
    } else {
        1
    }
}

/// Accumulator registers a consumer thread holds above which the producer
/// beside two consumers drops to 32 registers.
const WIDE_ACCUMULATORS: i64 = 160;

/// The most accumulator registers a consumer thread holds for a dot of
/// `k_loop` with `rows` of its tile and one of `column_shares` of its
/// columns: the running result and, for a block-scaled dot, the partial
/// product of the m64 block being promoted.
fn consumer_accumulator_registers(body: &Body, k_loop: For, rows: i64, column_shares: i64) -> i64 {
    dots(body, loop_block(body, k_loop))
        .iter()
        .map(|&dot| {
            let cols = dot_columns(body, dot) / column_shares;
            let precision = if dot.scales(body).is_some() { Precision::Fp8BlockScaled } else { Precision::Bf16 };
            precision.accumulator_registers(rows, cols, 1).total
        })
        .max()
        .unwrap_or(0)
}

/// The `tile-warp-specialize` pass with its options resolved.
pub struct WarpSpecialize {
    consumers: i64,
    stages: i64,
    /// wgmma groups a consumer leaves in flight (0 or 1), `None` for
    /// [`auto_wait_depth`].
    wait_depth: Option<i64>,
    producer_regs: i64,
    consumer_regs: i64,
    /// Take `consumers` from `tile.config` (the pipeline gave none).
    consumers_from_config: bool,
    /// Take `stages` from `tile.config` (the pipeline gave none).
    stages_from_config: bool,
    /// The `scales` option: where the scales wait, `None` to follow `tile.config`.
    scales: Option<Scales>,
    /// The `pingpong` option, `None` to follow `tile.config`.
    pingpong: Option<bool>,
    /// The `halves` option, `None` to follow `tile.config`.
    halves: Option<Halves>,
}

/// How two consumers share each tile: by rows, each holding half of
/// BLOCK_M (whole m64 blocks) and all of its columns, or by columns, each
/// holding every row and half of BLOCK_N. Columns give tiles whose halves
/// of rows are no whole m64 blocks (192 rows: one tile covers M up to 192,
/// so B is read once) and tiles wider than one wgmma (each consumer's
/// half is one instruction's N), at the cost of both consumers reading all
/// of A's stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Halves {
    /// Each consumer holds half of the rows.
    Rows,
    /// Each consumer holds half of the columns.
    Columns,
}

crate::words::named_by_words!(Halves { Rows => "rows", Columns => "columns" } default Rows);

impl WarpSpecialize {
    /// The consumers and stages config selection chose for a warp-specialised
    /// schedule, where the pipeline gave none.
    fn apply_config(&mut self, func: &Function) -> Result<(), Diagnostic> {
        let config = ConfigEntries::of(func)?;
        let Some(schedule) = config.schedule.filter(|&s| s != Schedule::Pipeline) else { return Ok(()) };
        if self.pingpong.is_none() {
            self.pingpong = Some(schedule == Schedule::PingPong);
        }
        if self.halves.is_none() {
            self.halves = Some(if schedule == Schedule::ColumnHalves { Halves::Columns } else { Halves::Rows });
        }
        if let Some(consumers) = in_option_range(func, &INFO, "consumers", "consumers", config.consumers)?.filter(|_| self.consumers_from_config) {
            self.consumers = consumers;
        }
        if let Some(stages) = in_option_range(func, &INFO, "stages", "stages", config.stages)?.filter(|_| self.stages_from_config) {
            self.stages = stages;
        }
        Ok(())
    }
}

/// How a consumer warpgroup releases a stage to the producer (or its turn
/// to the other consumer): lane 0 of every consumer warp arrives on `empty`
/// for its warp, once the warp's `wgmma.wait_group` has returned (the
/// warp's wgmma reads of the stage are then complete), unless the threads
/// read the stage themselves (staged scales), [`Release::PerThread`].
#[derive(Clone, Copy)]
enum Release {
    /// Lane 0 of each warp arrives for it, after the warp's wgmma wait.
    PerWarp,
    /// Every thread arrives: its own reads of the stage are ordered before
    /// its arrival.
    PerThread,
}

impl Release {
    /// Arrivals per consumer warpgroup.
    fn arrivals(self) -> i64 {
        match self {
            Release::PerWarp => WARPS_PER_WARPGROUP,
            Release::PerThread => 32 * WARPS_PER_WARPGROUP,
        }
    }

    /// Arrives on `stage` of `barrier`.
    fn arrive(self, b: &mut Builder<'_>, barrier: Value, stage: Value) {
        let mut attrs = Attributes::new();
        if let Release::PerWarp = self {
            attrs.set("per_warp", Attribute::Unit);
        }
        MbarrierArrive::build(b, barrier, stage, attrs);
    }
}

/// A register budget option's value, or `default` where it was not given (0).
fn given_or(option: i64, default: i64) -> i64 {
    if option > 0 {
        option
    } else {
        default
    }
}

impl WarpSpecialize {
    /// Errors at the function (`at`) when the budgets do not fit.
    fn check_budgets(&self, at: &Location, producer: i64, consumer: i64) -> Result<(), Diagnostic> {
        tilec_dialects::nv::roles::check_register_budgets(producer, consumer, self.consumers)
            .map_err(|m| Diagnostic::error(at.clone(), format!("tile-warp-specialize: {m}")))
    }
}

impl Pass for WarpSpecialize {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn run(&mut self, func: &mut Function) -> Result<(), Diagnostic> {
        self.apply_config(func)?;
        // The budgets the pipeline gave are checked before anything else.
        let (producer, consumer) = default_register_budgets(self.consumers, 0, false, Halves::Rows);
        let at = func.loc.clone();
        self.check_budgets(&at, given_or(self.producer_regs, producer), given_or(self.consumer_regs, consumer))?;
        let copy_scales = match scale_form(func, self.scales)? {
            Scales::Staged => true,
            Scales::Prefetched | Scales::None => false,
            // The producer runs on into later stages than a consumer reads:
            // a chunk could not be refilled without a barrier of the
            // consumers' own, which nothing here models.
            Scales::Resident => return Err(Diagnostic::error(func.loc.clone(), "scales=resident is built by tile-pipeline only: tile-warp-specialize stages the scales (scales=staged) or prefetches them (scales=prefetched)")),
        };
        if !self.consumers_from_config {
            record_built(func, "consumers", Attribute::Int(self.consumers, ElemType::I64));
        }
        record_given(func, (!self.stages_from_config).then_some(self.stages), self.scales);
        let column_major = column_major_tensors(func);
        let region = func.region;
        let body = &mut func.body;
        let Some(k_loop) = body.walk_region(region).into_iter().find_map(|op| staged_loop(body, op)) else {
            return Ok(());
        };
        let loads = staged_loads(body, loop_block(body, k_loop), copy_scales);
        let pingpong = self.pingpong.unwrap_or(false);
        let halves = self.halves.unwrap_or(Halves::Rows);
        check_split_k(body, region)?;
        if pingpong {
            check_turns(body, k_loop, self.consumers)?;
        }
        // Each consumer's share: all of the tile when the consumers take turns.
        let sharing = if pingpong { 1 } else { self.consumers };
        let (rows_sharing, columns_sharing) = match halves {
            Halves::Rows => (sharing, 1),
            Halves::Columns => {
                check_column_halves(body, region, k_loop, self.consumers, pingpong)?;
                (1, sharing)
            }
        };
        let block_m = check_split(body, k_loop, &dots(body, loop_block(body, k_loop)), rows_sharing)?;
        let accumulators = consumer_accumulator_registers(body, k_loop, block_m / rows_sharing, columns_sharing);
        let a_in_registers = dots(body, loop_block(body, k_loop)).iter().any(|&dot| dot_a(body, dot).to_registers.is_some());
        let (producer, consumer) = default_register_budgets(self.consumers, accumulators, a_in_registers, halves);
        self.producer_regs = given_or(self.producer_regs, producer);
        self.consumer_regs = given_or(self.consumer_regs, consumer);
        self.check_budgets(&at, self.producer_regs, self.consumer_regs)?;
        let wait_depth = self.wait_depth.unwrap_or_else(|| auto_wait_depth(sharing));
        let schedule = LoopSchedule::of_loop(body, k_loop, self.stages, wait_depth);

        // Buffers and barriers before the work; then the roles.
        let root = outermost_ancestor(body, k_loop.op());
        let entry = body.ops[root].parent.expect("attached");
        let loc = body.ops[k_loop.op()].loc.clone();
        let mut b = Builder::new(body, InsertPoint::Before(root), loc.clone());
        let staged = StagedBuffers::allocate(&mut b, &loads, self.stages, &column_major, None);
        // Two barriers per stage: full and empty.
        staged.check_budget(body, k_loop.op(), self.stages, 2)?;
        let mut b = Builder::new(body, InsertPoint::Before(root), loc.clone());
        // Scales copied into a stage are read by every consumer thread with
        // plain loads: each thread releases what it read (a lane-0 arrive
        // for the warp does not order the other lanes' reads before the
        // next round's copies, which racecheck reports).
        let release = if staged.narrow.is_empty() { Release::PerWarp } else { Release::PerThread };
        let empty = AllocMbarriers::build(&mut b, Type::MBarrier(self.stages), release.arrivals() * sharing, Attributes::new()).result(b.body);
        b.name(empty, "empty");
        let order = pingpong.then(|| {
            let order = AllocMbarriers::build(&mut b, Type::MBarrier(self.consumers), WARPS_PER_WARPGROUP, Attributes::new()).result(b.body);
            b.name(order, "order")
        });
        let mut attrs = Attributes::new();
        if pingpong {
            attrs.set("alternate", Attribute::Unit);
        }
        if halves == Halves::Columns {
            attrs.set("columns", Attribute::Unit);
        }
        let ws = nv::WarpSpecialize::build(&mut b, self.consumers, self.producer_regs, self.consumer_regs, attrs).op();
        let (_, producer) = b.body.add_region(ws, &[]);
        let (_, consumer) = b.body.add_region(ws, &[Type::INDEX]);
        let c = b.body.blocks[consumer].args[0];
        b.name(c, "consumer");

        let work: Vec<Op> = {
            let ops = &body.blocks[entry].ops;
            let from = ops.iter().position(|&o| o == root).expect("root is in the entry block");
            ops[from..].iter().copied().filter(|&o| !body.ops[o].def.traits.terminator).collect()
        };
        let producer_map = clone_work(body, entry, &work, producer);
        let consumer_map = clone_work(body, entry, &work, consumer);
        for &op in work.iter().rev() {
            body.remove_op(op);
        }

        let block_n = dots(body, loop_block(body, k_loop)).first().map_or(0, |&dot| dot_columns(body, dot));
        let share = match halves {
            Halves::Rows => Share::Rows { sharing: rows_sharing, block_m },
            Halves::Columns => Share::Columns { block_n },
        };
        let roles = Roles { schedule, share, staged: &staged, empty, release, order, region };
        roles.producer(body, loop_clone(body, &producer_map, k_loop, producer), &producer_map, &loads)?;
        roles.consumer(body, loop_clone(body, &consumer_map, k_loop, consumer), &consumer_map, &loads, c)?;
        func.attrs.set("num_warps", Attribute::Int(4 * (1 + self.consumers), ElemType::I64));
        Ok(())
    }
}

/// The columns of `dot`'s accumulator: BLOCK_N.
fn dot_columns(body: &Body, dot: StagedDot) -> i64 {
    body.value_type(dot.acc(body)).as_tile().map_or(0, |t| t.shape[1])
}

/// Consumers that share a tile's columns: two of them, not taking turns,
/// each with whole wgmma columns (a multiple of 8) of B's rows (B is N x K,
/// `transpose_b`, so a consumer's columns are a row window of B's stage),
/// over a BF16 dot (a block-scaled dot's B scales come a 128-column block
/// at a time, which half a tile need not cover whole), with no reduction
/// over a row's columns in the epilogue (each consumer holds half of every
/// row). Split-K's and stream-K's partial tiles need nothing more: each
/// consumer parks and adds its own fragments whatever part of the tile
/// they are.
fn check_column_halves(body: &Body, region: Region, k_loop: For, consumers: i64, pingpong: bool) -> Result<(), Diagnostic> {
    let at = k_loop.op();
    if consumers != 2 || pingpong {
        return Err(op_error(body, at, format!("halves=columns takes two consumers that share each tile, found consumers={consumers}{}", if pingpong { " with pingpong=true" } else { "" })));
    }
    for dot in dots(body, loop_block(body, k_loop)) {
        let block_n = dot_columns(body, dot);
        if block_n % 16 != 0 {
            return Err(op_error(body, dot.op(), format!("halves=columns: BLOCK_N ({block_n}) does not split into two consumers of whole 8-column wgmma blocks")));
        }
        if !dot.transpose_b(body) {
            return Err(op_error(body, dot.op(), "halves=columns splits B's stage by rows (B as N x K, transpose_b); a K x N B is not supported".into()));
        }
        if dot.scales(body).is_some() {
            return Err(op_error(body, dot.op(), "halves=columns: a block-scaled dot is not supported (half a tile need not hold whole 128-column blocks of B's scales)".into()));
        }
    }
    let unsupported = |op: Op| match body.opcode(op) {
        Opcode::TileReduce => Some("reduces over a row's columns, which each consumer holds only half of"),
        Opcode::TileDeinterleave => Some("deinterleaves runs of columns, which each consumer holds only half of"),
        _ => None,
    };
    if let Some((op, why)) = body.walk_region(region).into_iter().find_map(|op| unsupported(op).map(|why| (op, why))) {
        return Err(op_error(body, op, format!("halves=columns: the kernel {why}")));
    }
    Ok(())
}

/// Split-K through a cluster's shared memory is the whole CTA's sum: every
/// consumer would run its own copy of it, which the lowering does not
/// support. Through the workspace each consumer adds its own rows of every
/// split's tile (`tile.reduce_splits` holds a consumer's rows).
fn check_split_k(body: &Body, region: Region) -> Result<(), Diagnostic> {
    match body.walk_region(region).into_iter().find(|&op| body.opcode(op) == Opcode::TileSumSplits) {
        Some(op) => Err(op_error(body, op, "adds split-K's partial tiles through a cluster, which tile-warp-specialize does not support: each consumer would add its own copy; split K with reduce=workspace, or in a plain pipeline (tile-pipeline)".into())),
        None => Ok(()),
    }
}

/// The tile's BLOCK_M, after checking that each of the `sharing` consumers
/// of a tile gets whole m64 blocks.
fn check_split(body: &Body, k_loop: For, dots: &[StagedDot], sharing: i64) -> Result<i64, Diagnostic> {
    let Some(&dot) = dots.first() else {
        return Err(op_error(body, k_loop.op(), "stages tiles through shared memory but has no tile.dot to specialise".into()));
    };
    let acc = body.value_type(dot.acc(body)).as_tile().expect("verified").clone();
    let block_m = acc.shape[0];
    if block_m % (64 * sharing) != 0 {
        return Err(op_error(body, dot.op(), format!("BLOCK_M ({block_m}) cannot be split into {sharing} consumers of whole 64-row wgmma blocks")));
    }
    if dot.transpose_a(body) {
        return Err(op_error(body, dot.op(), "tile-warp-specialize splits A by rows; a transposed A is not supported".into()));
    }
    Ok(block_m)
}

/// Consumers take turns at tiles of a persistent loop around the K loop
/// (tile-persistent) whose trip count is the same for every tile: each
/// counts the other's K iterations without running them.
fn check_turns(body: &Body, k_loop: For, consumers: i64) -> Result<(), Diagnostic> {
    if consumers != 2 {
        return Err(op_error(body, k_loop.op(), format!("pingpong=true takes two consumers, found consumers={consumers}")));
    }
    let Some(tiles) = enclosing_loop(body, k_loop.op()) else {
        return Err(op_error(body, k_loop.op(), "pingpong=true needs a persistent loop over tiles around the K loop (run tile-persistent first)".into()));
    };
    let bounds = [k_loop.lower_bound(body), k_loop.upper_bound(body), k_loop.step(body)];
    if bounds.iter().any(|&v| body.defined_within(v, tiles.op())) {
        return Err(op_error(body, k_loop.op(), "pingpong=true needs the same K loop for every tile; this one's bounds change with the tile (a masked grouped GEMM's row count, or a stream-K piece's K range)".into()));
    }
    Ok(())
}

/// Clones `work` into `role` (before its terminator, which this adds), with
/// the tile constants defined before the work copied first so each role can
/// retype its own.
fn clone_work(body: &mut Body, entry: Block, work: &[Op], role: Block) -> HashMap<Value, Value> {
    let mut map = HashMap::new();
    let loc = body.ops[work[0]].loc.clone();
    let mut b = Builder::new(body, InsertPoint::End(role), loc);
    let outside: Vec<Op> = b.body.blocks[entry].ops.iter().copied().filter(|o| !work.contains(o)).collect();
    for op in outside {
        let data = &b.body.ops[op];
        if data.def.traits.constant && b.body.value_type(data.results[0]).as_tile().is_some() {
            b.clone_op(op, &mut map);
        }
    }
    for &op in work {
        b.clone_op(op, &mut map);
    }
    Yield::build(&mut b, &[], Attributes::new());
    map
}

/// The copy in `role` of the original work's K loop.
fn loop_clone(body: &Body, map: &HashMap<Value, Value>, k_loop: For, role: Block) -> For {
    let region = body.blocks[role].parent.expect("in a region");
    let marker = k_loop.results(body).first().map(|r| map[r]);
    body.walk_region(region)
        .into_iter()
        .find(|&o| match marker {
            Some(m) => body.ops[o].results.first() == Some(&m),
            None => false,
        })
        .and_then(|o| For::of(body, o))
        .expect("the K loop was cloned")
}

/// How the consumers divide each tile between them.
#[derive(Clone, Copy)]
enum Share {
    /// `sharing` consumers (one, or two) each hold BLOCK_M / `sharing` rows.
    Rows { sharing: i64, block_m: i64 },
    /// Two consumers each hold half of BLOCK_N.
    Columns { block_n: i64 },
}

impl Share {
    /// The dimension the consumers divide (0: rows, 1: columns), the
    /// tile's extent along it, and into how many shares.
    fn along(self) -> (usize, i64, i64) {
        match self {
            Share::Rows { sharing, block_m } => (0, block_m, sharing),
            Share::Columns { block_n } => (1, block_n, 2),
        }
    }
}

struct Roles<'a> {
    schedule: LoopSchedule,
    /// How the consumers divide each tile (one, or two taking turns at
    /// whole tiles, divide nothing).
    share: Share,
    staged: &'a StagedBuffers,
    empty: Value,
    /// How the consumers arrive on `empty`.
    release: Release,
    /// The barrier the consumers take turns on (`pingpong`), a stage each.
    order: Option<Value>,
    region: Region,
}

impl Roles<'_> {
    /// The K loop's stage counting, built before the loop.
    fn counting(&self, body: &mut Body, k_loop: For) -> Counting {
        let mut b = Builder::new(body, InsertPoint::Before(k_loop.op()), body.ops[k_loop.op()].loc.clone());
        Counting::build(&mut b, k_loop, self.schedule.stages)
    }

    fn producer(&self, body: &mut Body, k_loop: For, map: &HashMap<Value, Value>, loads: &[Op]) -> Result<(), Diagnostic> {
        let clones: Vec<Op> = loads.iter().map(|&l| body.defining_op(map[&body.result(l, 0)]).expect("cloned load")).collect();
        let staged = self.staged.rekeyed(body, loads, &clones);
        let count = self.counting(body, k_loop);
        let first = clones[0];
        let mut b = Builder::new(body, InsertPoint::Before(first), body.ops[first].loc.clone());
        let position = count.position(&mut b, k_loop);
        let c1 = b.index(1);
        let next_round = Addi::build(&mut b, position.round, c1, Attributes::new()).result(b.body);
        let phase = parity(&mut b, next_round);
        let phase = b.name(phase, "empty_phase");
        let stage = position.stage;
        MbarrierWait::build(&mut b, self.empty, stage, phase, Attributes::new());
        let coords: Vec<Vec<Value>> = clones.iter().map(|&l| Load::of(b.body, l).expect("cloned load").indices(b.body).to_vec()).collect();
        staged.issue(&mut b, &clones, &coords, stage);
        for dot in dots(body, loop_block(body, k_loop)) {
            let (result, acc) = (dot.result(body), dot.acc(body));
            let to_registers = dot_a(body, dot).to_registers;
            body.replace_all_uses(self.region, result, acc);
            body.remove_op(dot.op());
            if let Some(convert) = to_registers {
                body.remove_op(convert);
            }
        }
        for load in clones {
            body.remove_op(load);
        }
        remove_unused_loads(body, loop_block(body, k_loop));
        // The epilogue goes: stores, stream-K's hand-over of partial tiles
        // and split-K's reduction (the producer is never the split that
        // stores: its `last` is false).
        let role = body.ops[k_loop.op()].parent.map(|b| outer_role_block(body, b)).expect("attached");
        let role_region = body.blocks[role].parent.expect("in a region");
        for op in body.walk_region(role_region) {
            if let Some(add) = AddParked::of(body, op) {
                let (result, value) = (add.result(body), add.value(body));
                body.replace_all_uses(role_region, result, value);
                body.remove_op(op);
            } else if let Some(reduce) = ReduceSplits::of(body, op) {
                let (result, value, last) = (reduce.result(body), reduce.value(body), reduce.last(body));
                let mut b = Builder::new(body, InsertPoint::Before(op), body.ops[op].loc.clone());
                let never = b.bool(false);
                body.replace_all_uses(role_region, result, value);
                body.replace_all_uses(role_region, last, never);
                body.remove_op(op);
            } else if Store::of(body, op).is_some() || ParkPartial::of(body, op).is_some() {
                body.remove_op(op);
            }
        }
        // And with them what only they read: the epilogue's element-wise
        // ops and its loads (a residual's tile), which lowering would
        // otherwise turn into reads the producer makes for nothing.
        remove_dead_pure_ops(body, role_region);
        Ok(())
    }

    fn consumer(&self, body: &mut Body, k_loop: For, map: &HashMap<Value, Value>, loads: &[Op], c: Value) -> Result<(), Diagnostic> {
        let clones: Vec<Op> = loads.iter().map(|&l| body.defining_op(map[&body.result(l, 0)]).expect("cloned load")).collect();
        let staged = self.staged.rekeyed(body, loads, &clones);
        let role = outer_role_block(body, body.ops[k_loop.op()].parent.expect("attached"));
        let role_region = body.blocks[role].parent.expect("in a region");
        let loc = body.ops[k_loop.op()].loc.clone();

        // Consumers sharing a tile each read their own rows of A's buffer
        // (halves of rows) or of B's (halves of columns: B is N x K).
        let role_first = body.blocks[role].ops[0];
        let mut b = Builder::new(body, InsertPoint::Before(role_first), loc.clone());
        let window = match self.share {
            Share::Rows { sharing: 1, .. } => None,
            Share::Rows { sharing, block_m } => Some((block_m / sharing, "row")),
            Share::Columns { block_n } => Some((block_n / 2, "column")),
        };
        let share_start = window.map(|(extent, name)| {
            let e = b.index(extent);
            let start = Muli::build(&mut b, c, e, Attributes::new()).result(b.body);
            b.name(start, name)
        });
        let dots = dots(b.body, loop_block(b.body, k_loop));
        let mut views: HashMap<Value, Value> = HashMap::new();
        for &dot in &dots {
            let (a, rhs) = (dot_a(b.body, dot).staged, dot.rhs(b.body));
            for operand in [a, rhs] {
                let buf = staged.buffer_of[&operand];
                let own = match (self.share, share_start, window) {
                    (Share::Rows { .. }, Some(row), Some((rows, _))) if operand == a => rows_window(&mut b, buf, row, rows, "a_rows"),
                    (Share::Columns { .. }, Some(column), Some((columns, _))) if operand == rhs => rows_window(&mut b, buf, column, columns, "b_rows"),
                    _ => buf,
                };
                views.entry(operand).or_insert(own);
            }
        }
        // And, halves of rows, its rows of the row scales loaded with each stage.
        let share = match (self.share, share_start) {
            (Share::Rows { block_m, sharing }, Some(first)) => Some(RowShare { first, rows: block_m / sharing, of: block_m }),
            _ => None,
        };

        // The loop: wait full, wgmma, release the previous stage.
        let count = self.counting(body, k_loop);
        let first = body.blocks[loop_block(body, k_loop)].ops[0];
        let mut b = Builder::new(body, InsertPoint::Before(first), loc.clone());
        let position = count.position(&mut b, k_loop);
        let (local, stage) = (position.local, position.stage);
        let phase = parity(&mut b, position.round);
        let phase = b.name(phase, "phase");
        MbarrierWait::build(&mut b, staged.full, stage, phase, Attributes::new());
        for &dot in &dots {
            let (a, bb) = (views[&dot_a(body, dot).staged], views[&dot.rhs(body)]);
            let mut b = Builder::new(body, InsertPoint::Before(dot.op()), body.ops[dot.op()].loc.clone());
            let done = emit_wgmma(&mut b, dot, [a, stage], [bb, stage], self.schedule.in_flight);
            replace_dot(body, self.region, dot, done);
            // With no group left in flight the stage is free once the wait
            // returns: release it there, before the promotion or the next
            // iteration's wait.
            if self.schedule.in_flight == 0 {
                let wait = completing_wait(body, done).expect("no group in flight: the wait took them all");
                let next = next_op(body, wait);
                let mut b = Builder::new(body, InsertPoint::Before(next), loc.clone());
                self.release.arrive(&mut b, self.empty, stage);
            }
        }
        staged.read_narrow(body, self.region, &clones, stage, stage, share);
        for load in clones {
            body.remove_op(load);
        }
        if self.schedule.in_flight == 0 {
            drain_after(body, self.region, k_loop.op());
            return self.finish_consumer(body, k_loop, role_region, share_start.is_some(), c);
        }
        let terminator = body.terminator(loop_block(body, k_loop)).expect("verified");
        let mut b = Builder::new(body, InsertPoint::Before(terminator), loc.clone());
        let c0 = b.index(0);
        let has_prev = cmp(&mut b, "sgt", local, c0);
        let release = If::build(&mut b, has_prev, Attributes::new()).op();
        let (_, rb) = b.body.add_region(release, &[]);
        let mut r = Builder::new(body, InsertPoint::End(rb), loc.clone());
        let c1 = r.index(1);
        let before = Subi::build(&mut r, local, c1, Attributes::new()).result(r.body);
        let prev = count.stage_of(&mut r, before);
        let prev = r.name(prev, "prev");
        self.release.arrive(&mut r, self.empty, prev);
        Yield::build(&mut r, &[], Attributes::new());

        // After the loop: drain, release the last stage, then the epilogue.
        let after = drain_after(body, self.region, k_loop.op());
        let mut b = Builder::new(body, InsertPoint::Before(after), loc.clone());
        let c0 = b.index(0);
        let ran = cmp(&mut b, "sgt", count.trip, c0);
        let last = If::build(&mut b, ran, Attributes::new()).op();
        let (_, lb) = b.body.add_region(last, &[]);
        let mut l = Builder::new(body, InsertPoint::End(lb), loc);
        let c1 = l.index(1);
        let last_local = Subi::build(&mut l, count.trip, c1, Attributes::new()).result(l.body);
        let last_stage = count.stage_of(&mut l, last_local);
        self.release.arrive(&mut l, self.empty, last_stage);
        Yield::build(&mut l, &[], Attributes::new());
        self.finish_consumer(body, k_loop, role_region, share_start.is_some(), c)
    }

    /// The consumer's tiles shrink to its share (and, with several
    /// consumers sharing a tile, move to it; a block-scaled dot over more
    /// than 64 rows promotes them an m64 block at a time, one whose
    /// columns take several wgmma instructions an instruction's columns at
    /// a time, and reads its scales from the stage while its wgmma runs),
    /// the register loads its stages do not carry run one iteration ahead,
    /// and consumers that take turns at tiles take them.
    fn finish_consumer(&self, body: &mut Body, k_loop: For, role_region: Region, split: bool, c: Value) -> Result<(), Diagnostic> {
        self.retype_consumer(body, role_region);
        promote_by_blocks(body, role_region, RowBlocks::InTurn);
        read_scales_behind_wgmma(body, role_region);
        if split {
            self.offset_tiles(body, role_region, c);
        }
        prefetch_register_loads(body, k_loop);
        if let Some(order) = self.order {
            take_turns(body, k_loop, order, c);
        }
        Ok(())
    }

    /// A consumer is one warpgroup holding its share of the tile: its
    /// MMA-layout tiles (and A's register tiles, whose layout has an MMA
    /// parent) shrink to its rows or columns and their layout to one
    /// warpgroup's warps.
    fn retype_consumer(&self, body: &mut Body, role_region: Region) {
        let mut values: Vec<Value> = Vec::new();
        for op in body.walk_region(role_region) {
            values.extend(body.ops[op].results.iter().copied());
            for &r in &body.ops[op].regions {
                values.extend(body.blocks[body.entry_block(r)].args.iter().copied());
            }
        }
        let (along, extent, shares) = self.share.along();
        for v in values {
            let Some(tile) = body.value_type(v).as_tile() else { continue };
            let mut shape = tile.shape.clone();
            let layout = match &tile.layout {
                Some(mma @ Layout::Mma { .. }) => {
                    if shape.get(along) == Some(&extent) {
                        shape[along] = extent / shares;
                    }
                    one_warpgroup(mma, shape.get(1).copied().unwrap_or(0))
                }
                // A in registers: rows of this consumer, for its one warpgroup.
                Some(Layout::DotOperand { op_idx, k_width, parent }) if matches!(**parent, Layout::Mma { .. }) => {
                    if along == 0 && shape[0] == extent {
                        shape[0] = extent / shares;
                    }
                    Layout::DotOperand { op_idx: *op_idx, k_width: *k_width, parent: Box::new(one_warpgroup(parent, 0)) }
                }
                // A vector along the rows (a block-scaled dot's row scales)
                // or along the columns (a bias): this consumer's share of
                // it where the consumers divide that dimension (a vector
                // along the rows drops dimension 1, one along the columns
                // dimension 0).
                Some(Layout::Slice { dim, parent }) if matches!(**parent, Layout::Mma { .. }) => {
                    if usize::try_from(*dim).is_ok_and(|dim| dim + along == 1) && shape[0] == extent {
                        shape[0] = extent / shares;
                    }
                    Layout::Slice { dim: *dim, parent: Box::new(one_warpgroup(parent, 0)) }
                }
                // Its block scales, whole in every thread of the warpgroup.
                Some(Layout::Blocked { size_per_thread, threads_per_warp, order, .. }) => Layout::Blocked {
                    size_per_thread: size_per_thread.clone(),
                    threads_per_warp: threads_per_warp.clone(),
                    warps_per_cta: vec![1, 4],
                    order: order.clone(),
                },
                _ => continue,
            };
            body.values[v].ty = Type::Tile(TileType { shape, elem: tile.elem, layout: Some(layout) });
        }
    }

    /// Consumer `c` stores tile `m * sharing + c` of the halved tiles along
    /// the extent it shares (rows or columns), and reads its share of the
    /// tiles and vectors along it there (a residual, a bias, row scales).
    fn offset_tiles(&self, body: &mut Body, role_region: Region, c: Value) {
        let (along, whole, shares) = self.share.along();
        let (extent, vector_along) = (whole / shares, ["rows", "cols"][along]);
        // A vector along the other extent (the swapped GEMM's column
        // scales under shared rows) is every consumer's whole.
        let across = |t: &TileType| matches!(&t.layout, Some(Layout::Slice { dim, .. }) if *dim as usize == along);
        let shares = |body: &Body, v: Value| body.value_type(v).as_tile().is_some_and(|t| t.shape.len() == 2 && t.shape[along] == extent && !across(t));
        for op in body.walk_region(role_region) {
            if let Some(promotion) = nv::ScaleAccumulate::of(body, op).filter(|p| along == 0 && p.blocks_along_rows(body)) {
                // Block scales along the rows: the consumer's rows start
                // `c * extent` further into them.
                let tile_offset = promotion.block_offset(body);
                let mut b = Builder::new(body, InsertPoint::Before(op), body.ops[op].loc.clone());
                let e = b.index(extent);
                let own = Muli::build(&mut b, c, e, Attributes::new()).result(b.body);
                let first = match tile_offset {
                    Some(offset) => Addi::build(&mut b, offset, own, Attributes::new()).result(b.body),
                    None => own,
                };
                let first = b.name(first, "block_row");
                let operands = &mut body.ops[op].operands;
                match tile_offset.and_then(|offset| operands.iter().position(|&v| v == offset)) {
                    Some(at) => operands[at] = first,
                    None => operands.push(first),
                }
            } else if let Some(store) = Store::of(body, op) {
                let mut indices = store.indices(body).to_vec();
                let (value, tensor, attrs) = (store.value(body), store.tensor(body), body.ops[op].attrs.clone());
                let mut b = Builder::new(body, InsertPoint::Before(op), body.ops[op].loc.clone());
                let at = tile_index(&indices, along);
                indices[at] = self.consumer_tile(&mut b, indices[at], c);
                Store::build(&mut b, value, tensor, &indices, attrs);
                body.remove_op(op);
            } else if let Some(load) = LoadBroadcast::of(body, op).filter(|l| l.along(body) == vector_along && shares(body, l.result(body))) {
                // A vector along the shared extent: its tile index counts halved tiles too.
                let (tensor, index, result, attrs) = (load.tensor(body), load.index(body), load.result(body), body.ops[op].attrs.clone());
                let ty = body.value_type(result).clone();
                let mut b = Builder::new(body, InsertPoint::Before(op), body.ops[op].loc.clone());
                let index = self.consumer_tile(&mut b, index, c);
                let moved = LoadBroadcast::build(&mut b, tensor, index, ty, vector_along, attrs).result(b.body);
                body.values[moved].name_hint = body.values[result].name_hint.clone();
                body.replace_all_uses(role_region, result, moved);
                body.remove_op(op);
            } else if let Some(load) = Load::of(body, op).filter(|l| shares(body, l.result(body))) {
                let mut indices = load.indices(body).to_vec();
                let (tensor, result, attrs) = (load.tensor(body), load.result(body), body.ops[op].attrs.clone());
                let ty = body.value_type(result).clone();
                let mut b = Builder::new(body, InsertPoint::Before(op), body.ops[op].loc.clone());
                let at = tile_index(&indices, along);
                indices[at] = self.consumer_tile(&mut b, indices[at], c);
                let moved = Load::build(&mut b, tensor, &indices, ty, attrs).result(b.body);
                body.values[moved].name_hint = body.values[result].name_hint.clone();
                body.replace_all_uses(role_region, result, moved);
                body.remove_op(op);
            }
        }
    }

    /// `m * shares + c`: consumer `c`'s tile index along the extent its
    /// consumers share.
    fn consumer_tile(&self, b: &mut Builder<'_>, m: Value, c: Value) -> Value {
        let (_, _, shares) = self.share.along();
        let k = b.index(shares);
        let scaled = Muli::build(b, m, k, Attributes::new()).result(b.body);
        Addi::build(b, scaled, c, Attributes::new()).result(b.body)
    }
}

/// Consumer `c` of two that take turns: it runs tiles c, c + 2, ... of the
/// persistent loop around `k_loop`, and before tile j's K loop waits on
/// `order`'s stage of the other consumer until that has finished the K
/// loop of tile j - 1, its (j + 1) / 2-th (the first wait of consumer 0
/// waits for parity 1, which a fresh barrier passes); after the K loop and
/// its drain it arrives on its own stage. Stages and phases still count the tiles of
/// both, from the loop's original bounds.
fn take_turns(body: &mut Body, k_loop: For, order: Value, c: Value) {
    let tiles = enclosing_loop(body, k_loop.op()).expect("checked before the split");
    let loc = body.ops[k_loop.op()].loc.clone();
    let mut b = Builder::new(body, InsertPoint::Before(k_loop.op()), loc.clone());
    let tile = loop_iteration(&mut b, tiles);
    let (c1, c2) = (b.index(1), b.index(2));
    let next = Addi::build(&mut b, tile, c1, Attributes::new()).result(b.body);
    let others_before = Divsi::build(&mut b, next, c2, Attributes::new()).result(b.body);
    let last_phase = Addi::build(&mut b, others_before, c1, Attributes::new()).result(b.body);
    let turn_phase = parity(&mut b, last_phase);
    let turn_phase = b.name(turn_phase, "turn_phase");
    let other = Subi::build(&mut b, c1, c, Attributes::new()).result(b.body);
    MbarrierWait::build(&mut b, order, other, turn_phase, Attributes::new());
    // Its turn ends once its last wgmma group has retired (after the
    // drain): an arrive with groups still in flight hung the GPU
    // (docs/evidence.md, warp_specialize.rs, ping-pong turn barrier).
    let drain = next_op(body, k_loop.op());
    let after = next_op(body, drain);
    Release::PerWarp.arrive(&mut Builder::new(body, InsertPoint::Before(after), loc.clone()), order, c);
    let (lb, step) = (tiles.lower_bound(body), tiles.step(body));
    let mut b = Builder::new(body, InsertPoint::Before(tiles.op()), loc);
    let skipped = Muli::build(&mut b, c, step, Attributes::new()).result(b.body);
    let first = Addi::build(&mut b, lb, skipped, Attributes::new()).result(b.body);
    let c2 = b.index(2);
    let stride = Muli::build(&mut b, step, c2, Attributes::new()).result(b.body);
    tiles.set_lower_bound(body, first);
    tiles.set_step(body, stride);
}

/// Removes the loads of `block` nothing reads any more: the producer's
/// copies of register loads its stages do not carry, whose dot went to the
/// consumers.
/// Removes the pure ops of `region` whose results nothing reads, until none
/// is left.
fn remove_dead_pure_ops(body: &mut Body, region: Region) {
    loop {
        let uses = body.use_counts(region);
        let dead: Vec<Op> = body
            .walk_region(region)
            .into_iter()
            .filter(|&op| body.is_pure_leaf(op) && !body.ops[op].results.is_empty() && body.ops[op].results.iter().all(|r| uses[r.index()] == 0))
            .collect();
        if dead.is_empty() {
            return;
        }
        for op in dead {
            body.remove_op(op);
        }
    }
}

fn remove_unused_loads(body: &mut Body, block: Block) {
    let region = body.blocks[block].parent.expect("in a region");
    let uses = body.use_counts(region);
    for op in body.blocks[block].ops.clone() {
        if Load::of(body, op).is_some_and(|l| uses[l.result(body).index()] == 0) {
            body.remove_op(op);
        }
    }
}

/// An MMA layout held by one warpgroup (a consumer's) whose tile is
/// `columns` wide (0: as wide as the layout was assigned for). Layouts
/// assigned for warpgroups side by side along N (`num_warps = 8` over 64
/// rows) gave each a part of BLOCK_N; the one warpgroup covers them all, so
/// its instruction N widens by as much, or each K step would issue
/// narrower wgmma that ptxas serialises. A consumer holding half of the
/// columns takes the widest instruction N that divides its half.
fn one_warpgroup(mma: &Layout, columns: i64) -> Layout {
    let Layout::Mma { version, instr_shape, warps_per_cta } = mma else { unreachable!("callers match an MMA layout") };
    let mut instr_shape = instr_shape.clone();
    instr_shape[1] *= warps_per_cta[1];
    let n = i64::from(instr_shape[1]);
    if columns > 0 && (n > columns || columns % n != 0) {
        instr_shape[1] = (1..=32u32).rev().map(|i| i * 8).find(|&n| i64::from(n) <= columns && columns % i64::from(n) == 0).unwrap_or(8);
    }
    Layout::Mma { version: *version, warps_per_cta: vec![4, 1], instr_shape }
}

fn cmp(b: &mut Builder<'_>, predicate: &str, lhs: Value, rhs: Value) -> Value {
    Cmpi::build(b, lhs, rhs, predicate, Attributes::new()).result(b.body)
}

/// The block of the `nv.warp_specialize` region that (transitively) holds
/// `block`.
fn outer_role_block(body: &Body, mut block: Block) -> Block {
    loop {
        let region = body.blocks[block].parent.expect("in a region");
        let owner = body.regions[region].parent.expect("inside nv.warp_specialize");
        if nv::WarpSpecialize::of(body, owner).is_some() {
            return block;
        }
        block = body.ops[owner].parent.expect("attached");
    }
}

/// The coordinate of a rank-2 tile's rows (`along` 0) or columns (1):
/// one of the tensor's last two (the leading ones of a higher-rank tensor
/// are element coordinates).
fn tile_index(indices: &[Value], along: usize) -> usize {
    indices.len().saturating_sub(2) + along
}
