//! `tile-select-config{m=M n=N k=K target=T sms=S block-m=.. block-n=.. block-k=.. stages=.. cluster=.. candidate=R}`:
//! chooses a GEMM's configuration (`selection`) for the GPU `target`
//! (tilec-target; `sms` overrides its SM count) and binds it into the IR;
//! `candidate` takes the R-th ranked configuration instead of the pick, so
//! that alternatives can be measured against it.
//!
//! The block sizes the program leaves as parameters (`tensor<BLOCK_Mx..>`,
//! `tile.param BLOCK_K`) are chosen; those it spells as numbers, those in a
//! `tile.config` attribute written in the file, and the `block-*` and
//! `stages` options are pinned. Afterwards every type is concrete, each
//! `tile.param` is a `tile.constant`, and the function carries the whole
//! decision as `tile.config = {block_m = .., stages = .., ...}` (and
//! `num_warps` when the program did not fix it), which the driver reads to
//! build the rest of the pipeline.
//!
//! The pass itself always selects; the `tilec` driver leaves it out for a
//! file whose `tile.config` already names a schedule (a whole decision)
//! unless config flags ask for a new one.
//!
//! Without a shape (m, n, k of 0) the pass picks for a 4096^3 problem and
//! keeps direct global stores, since the kernel must then serve any N
//! (a TMA store needs 16-byte aligned rows of C).

use crate::analysis::operand_swap::OperandSwap;
use crate::cluster::Along;
use crate::config::ConfigEntries;
use crate::words::named_by_words;
use crate::selection::{self, Candidate, Machine, Pins, Precision, Problem, Scales, Schedule};
use crate::cost_model::{self, Bound, Weighed};
use crate::hopper::staging::column_major_tensors;
use crate::options::{OptionKind, OptionSpec};
use crate::pass::PassInfo;
use crate::phase::{Phase, PhaseRule};
use crate::options::PassOptions;
use crate::pass::{op_error, Pass};
use tilec_dialects::ir::{Attribute, Attributes, Builder, ElemType, InsertPoint, Param, Type};
use tilec_dialects::registry::Opcode;
use tilec_dialects::tile::{self, BlockId, For};
use tilec_dialects::{Diagnostic, Function, Layout};
use tilec_target::Target;

const DIM: OptionKind = OptionKind::Int { min: 0, max: 1 << 40 };
/// A pinned block size or stage count: any number reaches
/// `selection::check_pins`, whose located error says what the passes can
/// build, as for `--param` and a `tile.config` in the file.
const PIN: OptionKind = OptionKind::Int { min: 0, max: 1 << 40 };

/// The words of `tile-select-config`'s `cluster` option: `auto`, `none`,
/// or a dimension and, after it, the cluster's CTAs (two without).
const CLUSTER_PINS: &[&str] = &["auto", "m", "n", "none", "m4", "n4", "m8", "n8"];

/// The cluster a word of [`CLUSTER_PINS`] pins, and its CTAs where the
/// word gives them; `None` for `auto`.
fn cluster_pin(word: &str) -> Option<(Along, Option<i64>)> {
    match word {
        "auto" => None,
        "none" => Some((Along::None, None)),
        _ => {
            let (along, ctas) = word.split_at(1);
            Some((Along::parse(along), ctas.parse().ok()))
        }
    }
}

/// `tile-select-config`'s registration: name, options, phases and constructor.
pub const INFO: PassInfo = PassInfo {
    name: "tile-select-config",
    summary: "Choose block sizes, stages, schedule and epilogue for the problem shape and bind the parameters",
    options: &[
        OptionSpec { name: "m", kind: DIM, default: "0", help: "rows of A and C (0: the default shape policy)" },
        OptionSpec { name: "n", kind: DIM, default: "0", help: "columns of C (0: the default shape policy)" },
        OptionSpec { name: "k", kind: DIM, default: "0", help: "the reduction length (0: the default shape policy)" },
        OptionSpec { name: "target", kind: OptionKind::Enum(Target::NAMES), default: Target::DEFAULT.name, help: "the GPU to choose for" },
        OptionSpec { name: "sms", kind: OptionKind::Int { min: 0, max: 1024 }, default: "0", help: "SMs to choose for (0: the target's)" },
        OptionSpec { name: "block-m", kind: PIN, default: "0", help: "pin BLOCK_M (0: choose)" },
        OptionSpec { name: "block-n", kind: PIN, default: "0", help: "pin BLOCK_N (0: choose)" },
        OptionSpec { name: "block-k", kind: PIN, default: "0", help: "pin BLOCK_K (0: choose)" },
        OptionSpec { name: "stages", kind: PIN, default: "0", help: "pin the pipeline stages (0: the most that fit)" },
        OptionSpec {
            name: "cluster",
            kind: OptionKind::Enum(CLUSTER_PINS),
            default: "auto",
            help: "pin clusters along m or n, of 2 CTAs or of the count after the letter (n4: four along n), or none (auto: config selection weighs clusters as alternatives)",
        },
        OptionSpec {
            name: "ranking",
            kind: OptionKind::Enum(Ranking::WORDS),
            default: "model",
            help: "order the candidates by the cost model's predicted time (model), or by config selection's policies with the model's extra alternatives after them (rules)",
        },
        OptionSpec {
            name: "candidate",
            kind: OptionKind::Int { min: 1, max: MAX_CANDIDATE_RANK },
            default: "1",
            help: "take the candidate of this rank instead of the pick (1), to measure alternatives",
        },
    ],
    // Any phase: it binds parametric tile IR, and a function with nothing to
    // configure (nv-level input) passes through unchanged, so tilec can always
    // run it first.
    phases: PhaseRule {
        needs: Phase::Parametric..=Phase::Nv,
        leaves: Some(Phase::Tile),
        reason: "",
    },
    create: |o| Box::new(SelectConfigPass { select: SelectConfig::from_options(o), remarks: Vec::new() }),
};

/// The highest rank `candidate` takes: above the candidates any shape
/// weighs (a few thousand), so that every row `--explain` lists can be
/// compiled; a rank past those weighed is refused with their count.
pub const MAX_CANDIDATE_RANK: i64 = 100_000;

/// The shape a kernel compiled without one is chosen for.
pub const DEFAULT_SHAPE: (i64, i64, i64) = (4096, 4096, 4096);

/// The `tile-select-config` pass with its options resolved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SelectConfig {
    /// (m, n, k), or `None` for the default shape policy.
    pub shape: Option<(i64, i64, i64)>,
    /// The GPU the configuration is chosen for.
    pub target: &'static Target,
    /// SMs to choose for instead of the target's.
    pub sms: Option<i64>,
    /// Values fixed by options.
    pub pins: Pins,
    /// The rank taken, 1 for the pick.
    pub candidate: usize,
    /// How the candidates are ordered.
    pub ranking: Ranking,
}

/// How `tile-select-config` orders the candidates it weighs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Ranking {
    /// By the cost model's predicted time on the target, the policies' pick
    /// kept first unless beaten by more than the model's margin
    /// ([`cost_model::order`]).
    #[default]
    Model,
    /// By config selection's policies ([`crate::selection::rank`]), then the alternatives only
    /// the model weighs: the order the rules' measurements were taken in.
    Rules,
}

named_by_words!(Ranking { Model => "model", Rules => "rules" } default Model);

impl SelectConfig {
    /// The pass configured by its pipeline options.
    pub fn from_options(o: &PassOptions) -> SelectConfig {
        let pin = |name: &str| Some(o.int(name)).filter(|&v| v > 0);
        let (m, n, k) = (o.int("m"), o.int("n"), o.int("k"));
        let cluster = cluster_pin(o.word("cluster"));
        SelectConfig {
            shape: (m > 0 && n > 0 && k > 0).then_some((m, n, k)),
            target: Target::from_name(o.word("target")).expect("the option's words are the targets' names"),
            sms: Some(o.int("sms")).filter(|&s| s > 0),
            pins: Pins {
                block_m: pin("block-m"),
                block_n: pin("block-n"),
                block_k: pin("block-k"),
                stages: pin("stages"),
                cluster: cluster.map(|(along, _)| along),
                cluster_ctas: cluster.and_then(|(_, ctas)| ctas),
            },
            candidate: usize::try_from(o.int("candidate")).expect("option range"),
            ranking: Ranking::parse(o.word("ranking")),
        }
    }

    /// The problem and pins for `func`, or `None` when it has no dot to
    /// configure (an nv-level kernel).
    pub fn problem(&self, func: &Function) -> Result<Option<(Problem, Pins, Machine)>, Diagnostic> {
        let Some(ProgramDot { precision, pins: program, b_scale_rows, a_in_registers, transpose_b, a_scales_by_run, epilogue }) = program_dot(func)? else {
            return Ok(None);
        };
        let mut pins = self.pins;
        for (name, from_program, from_file) in block_sizes_fixed(func, &program)? {
            merge_pin(func, name, pin_of(&mut pins, name), from_program.or(from_file))?;
        }
        if pins.stages.is_none() {
            pins.stages = ConfigEntries::of(func)?.stages;
        }
        let (m, n, k) = self.shape.unwrap_or(DEFAULT_SHAPE);
        if self.shape.is_some() {
            check_interleaved_columns(func, n)?;
        }
        let machine = self.machine();
        let (clusterable, routed_rows) = operand_sources(func);
        let problem = Problem {
            m,
            n,
            k,
            precision,
            any_n: self.shape.is_none(),
            clusterable,
            routed_rows,
            varying_k: k_trip_count_is_data(func),
            b_scale_rows,
            a_in_registers,
            transpose_b,
            a_scales_by_run,
            column_group: column_group(func),
            output_bytes: output_bytes(func),
            epilogue,
            output_column_major: output_column_major(func),
            row_block_scales: None,
        };
        Ok(Some((problem, pins, machine)))
    }

    /// What the configuration may use: the target's machine, with `sms`
    /// SMs where given.
    pub fn machine(&self) -> Machine {
        let machine = Machine::of(self.target);
        Machine { sms: self.sms.unwrap_or(machine.sms), ..machine }
    }

    /// Every candidate weighed for `func` with its predicted time, best
    /// first in the pass's [`Ranking`] (for `--explain`).
    pub fn weigh(&self, func: &Function) -> Result<Vec<Weighed>, Diagnostic> {
        let Some((problem, pins, machine)) = self.problem(func)? else {
            return Ok(Vec::new());
        };
        selection::check_pins(&problem, &pins).map_err(|e| Diagnostic::error(func.loc.clone(), e))?;
        let (throughput, calibration) = cost_model::for_target(self.target);
        let weigh = |problem: &Problem| -> Vec<Weighed> {
            let mut ranked = selection::rank(problem, &machine, &pins);
            let alternatives = selection::alternatives(problem, &machine, &pins, &ranked);
            ranked.extend(alternatives);
            let ranked: Vec<Candidate> = ranked.into_iter().map(|c| selection::with_resident_scales(problem, &machine, c)).collect();
            let predicted = |candidate: Candidate| {
                let prediction = cost_model::predict(problem, &machine, &throughput, &calibration, &candidate);
                Weighed { candidate, prediction }
            };
            let mut weighed: Vec<Weighed> = ranked.into_iter().map(predicted).collect();
            // The clustered form of each candidate the model finds bound by L2 that the ranking does not pair.
            let clustered: Vec<Candidate> = weighed.iter().flat_map(|w| selection::clustered_alternatives(problem, &machine, &pins, &w.candidate, w.prediction.bound == Bound::L2)).collect();
            weighed.extend(clustered.into_iter().filter(|c| weighed.iter().all(|w| w.candidate.config != c.config)).map(predicted).collect::<Vec<_>>());
            weighed
        };
        let mut weighed = weigh(&problem);
        if selection::weighs_swapped(&problem, &pins) && OperandSwap::find(func).is_ok() {
            for mut w in weigh(&problem.swapped()) {
                w.candidate.config.swap_operands = true;
                weighed.push(w);
            }
        }
        if self.ranking == Ranking::Model {
            weighed = cost_model::order(weighed);
        }
        Ok(weighed)
    }
}

fn pin_of<'a>(pins: &'a mut Pins, name: &str) -> &'a mut Option<i64> {
    match name {
        "BLOCK_M" => &mut pins.block_m,
        "BLOCK_N" => &mut pins.block_n,
        _ => &mut pins.block_k,
    }
}

/// Each block size as the program's types fix it and as its `tile.config`
/// does; where both do they must agree, since the types are what the passes
/// build (a hand-edited `block_n` in a bound program would otherwise be
/// ignored). A config that swaps the operands of a program not yet swapped
/// gives the swapped GEMM's block sizes, its `block_n` the program's rows.
fn block_sizes_fixed(func: &Function, program: &Pins) -> Result<[(&'static str, Option<i64>, Option<i64>); 3], Diagnostic> {
    let config = ConfigEntries::of(func)?;
    let (block_m, block_n) = if config.swap_operands == Some(true) && !output_column_major(func) { (config.block_n, config.block_m) } else { (config.block_m, config.block_n) };
    let fixed = [("BLOCK_M", program.block_m, block_m), ("BLOCK_N", program.block_n, block_n), ("BLOCK_K", program.block_k, config.block_k)];
    for (name, from_program, from_file) in fixed {
        if let (Some(p), Some(f)) = (from_program, from_file) {
            if p != f {
                let key = name.to_ascii_lowercase();
                return Err(Diagnostic::error(
                    func.loc.clone(),
                    format!("tile.config's '{key}' is {f}, but '@{}' fixes {name} to {p} in its types (a bound program keeps its block sizes: select again from the program with parameters, --param {name}={f})", func.name),
                ));
            }
        }
    }
    Ok(fixed)
}

/// Checks a function that already holds a whole decision, for the driver
/// that compiles it as written: its `tile.config`'s block sizes must be the
/// ones its types are bound to.
pub fn check_decided(func: &Function) -> Result<(), Diagnostic> {
    match program_dot(func)? {
        Some(program) => block_sizes_fixed(func, &program.pins).map(|_| ()),
        None => Ok(()),
    }
}

/// A value the program or its `tile.config` fixes must agree with the option.
fn merge_pin(func: &Function, name: &str, option: &mut Option<i64>, fixed: Option<i64>) -> Result<(), Diagnostic> {
    match (*option, fixed) {
        (Some(o), Some(f)) if o != f => {
            Err(Diagnostic::error(func.loc.clone(), format!("{name} is pinned to {o}, but '@{}' fixes it to {f}", func.name)))
        }
        (None, Some(f)) => {
            *option = Some(f);
            Ok(())
        }
        _ => Ok(()),
    }
}

/// The columns of the groups the function's epilogue reduces or stores a
/// value of (`tile.reduce`, `tile.store {group}`), which a tile must hold
/// whole: their least common multiple, `None` without any.
fn column_group(func: &Function) -> Option<i64> {
    let body = &func.body;
    let groups = body.walk_region(func.region).into_iter().filter_map(|op| {
        tile::Reduce::of(body, op).map(|r| r.group(body)).or_else(|| tile::Store::of(body, op).and_then(|s| s.group(body)))
    });
    groups.filter(|&g| g > 0).reduce(|a, b| a / tile::arith::gcd(a, b) * b)
}

/// Refuses a shape whose `n` product columns a `tile.deinterleave` cannot
/// split into its two tiles: the runtime takes only whole pairs of runs
/// (a SwiGLU MLP's gate and up runs), so a kernel compiled for any other
/// N could never run at it.
fn check_interleaved_columns(func: &Function, n: i64) -> Result<(), Diagnostic> {
    let body = &func.body;
    for op in body.walk_region(func.region) {
        if let Some(d) = tile::Deinterleave::of(body, op) {
            let pair = 2 * d.block(body);
            if n % pair != 0 {
                return Err(Diagnostic::error(
                    body.ops[op].loc.clone(),
                    format!("the shape's N = {n} product columns do not interleave the two tiles of 'tile.deinterleave' in whole runs of {} columns: N must be a multiple of {pair} (the output then has N/2 columns)", d.block(body)),
                ));
            }
        }
    }
    Ok(())
}

/// Whether the tensor the function stores whole tiles into (C) is
/// column-major: a program that computes C^T.
fn output_column_major(func: &Function) -> bool {
    let body = &func.body;
    let column_major = column_major_tensors(func);
    let mut stored = body.walk_region(func.region).into_iter().filter_map(|op| tile::Store::of(body, op).filter(|s| s.group(body).is_none()));
    stored.any(|s| column_major.contains(&s.tensor(body)))
}

/// Bytes of an element of the tile the function stores whole (C), 2 (BF16)
/// where it stores none.
fn output_bytes(func: &Function) -> i64 {
    let body = &func.body;
    let stored = body.walk_region(func.region).into_iter().filter_map(|op| tile::Store::of(body, op).filter(|s| s.group(body).is_none()));
    stored.map(|s| i64::from(body.value_type(s.value(body)).elem().bits() / 8)).min().unwrap_or(2)
}

/// What the function's dot fixes for config selection.
struct ProgramDot {
    precision: Precision,
    /// The block sizes its types spell as numbers (A is BLOCK_M x BLOCK_K
    /// and the accumulator BLOCK_M x BLOCK_N).
    pins: Pins,
    /// The rows of B's scale tile when a block-scaled dot takes the offset
    /// of its tiles into the first scale block.
    b_scale_rows: Option<i64>,
    /// A reaches the dot in registers (a dot-operand layout).
    a_in_registers: bool,
    /// B reaches the dot N x K.
    transpose_b: bool,
    /// A block-scaled dot's row scales are loaded from a column-major
    /// tensor (stored M-major).
    a_scales_by_run: bool,
    /// What the ops between the K loop and the store add per element.
    epilogue: crate::cost_model::epilogue::EpilogueWork,
}

/// The function's one dot, `None` without one.
fn program_dot(func: &Function) -> Result<Option<ProgramDot>, Diagnostic> {
    let body = &func.body;
    let dots: Vec<_> = body
        .walk_region(func.region)
        .into_iter()
        .filter(|&o| matches!(body.opcode(o), Opcode::TileDot | Opcode::TileDotScaled))
        .collect();
    let Some(&dot) = dots.first() else {
        return Ok(None);
    };
    if dots.len() > 1 {
        return Err(op_error(body, dots[1], "is a second dot: tile-select-config configures one GEMM a function".into()));
    }
    let tile = |v| body.value_type(v).as_tile().expect("verified dot").clone();
    let (lhs, acc, precision, b_scale_rows) = match (tile::Dot::of(body, dot), tile::DotScaled::of(body, dot)) {
        (Some(d), _) => (d.lhs(body), d.acc(body), Precision::Bf16, None),
        (_, Some(d)) if d.blocks_along_rows(body) => {
            return Err(op_error(body, dot, "has its block scales along the rows (blocks_along_rows): tile-select-config configures C = A B^T as written and weighs the swapped GEMM itself".into()));
        }
        (_, Some(d)) => (d.lhs(body), d.acc(body), Precision::Fp8BlockScaled, d.block_offset(body).map(|_| tile(d.block_scales(body)).shape[0])),
        _ => unreachable!("filtered to dots"),
    };
    let (a, acc) = (tile(lhs), tile(acc));
    let (bm, bk) = if body.ops[dot].attrs.has("transpose_a") { (a.shape[1], a.shape[0]) } else { (a.shape[0], a.shape[1]) };
    let fixed = |d: i64| Some(d).filter(|&d| Param::from_extent(d).is_none());
    let pins = Pins { block_m: fixed(bm), block_n: fixed(acc.shape[1]), block_k: fixed(bk), stages: None, cluster: None, cluster_ctas: None };
    let a_in_registers = matches!(a.layout, Some(Layout::DotOperand { .. }));
    let transpose_b = body.ops[dot].attrs.has("transpose_b");
    let column_major = column_major_tensors(func);
    let a_scales_by_run = tile::DotScaled::of(body, dot).is_some_and(|d| {
        let scales = body.defining_op(d.lhs_scale(body)).and_then(|op| tile::Load::of(body, op));
        scales.is_some_and(|load| column_major.contains(&load.tensor(body)))
    });
    // The ops after the K loop, in its block: the epilogue.
    let epilogue = match body.parent_op(dot).and_then(|k_loop| Some((k_loop, body.ops[k_loop].parent?))) {
        Some((k_loop, block)) => {
            let ops = &body.blocks[block].ops;
            let after = ops.iter().position(|&o| o == k_loop).map_or(0, |p| p + 1);
            crate::cost_model::epilogue::work(func, &ops[after..])
        }
        None => crate::cost_model::epilogue::EpilogueWork::default(),
    };
    Ok(Some(ProgramDot { precision, pins, b_scale_rows, a_in_registers, transpose_b, a_scales_by_run, epilogue }))
}

/// The pass: [`SelectConfig`] run on each function, with the remark that
/// says what it chose.
pub struct SelectConfigPass {
    /// What it chooses for.
    pub select: SelectConfig,
    /// One remark per function configured since the last take.
    remarks: Vec<Diagnostic>,
}

impl Pass for SelectConfigPass {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn run(&mut self, func: &mut Function) -> Result<(), Diagnostic> {
        let select = &self.select;
        let ranked = select.weigh(func)?;
        let Some((problem, pins, _)) = select.problem(func)? else {
            return Ok(());
        };
        if ranked.is_empty() {
            // A cluster's CTAs each load whole 8-row atoms of the shared tile.
            let split = pins.cluster_ctas.map_or(String::new(), |ctas| format!(", or a cluster of {ctas} cannot split the shared operand tile's rows into shares of a multiple of 8"));
            return Err(Diagnostic::error(
                func.loc.clone(),
                format!(
                    "no configuration of '@{}' fits {}x{}x{} with the pinned values {pins} (shared memory, registers or the tile rules rule them out{split}; --explain lists what fits)",
                    func.name, problem.m, problem.n, problem.k
                ),
            ));
        }
        let count = ranked.len();
        let Some(Weighed { candidate: pick, prediction }) = ranked.into_iter().nth(select.candidate - 1) else {
            return Err(Diagnostic::error(func.loc.clone(), format!("candidate {} asked for, but only {count} configuration(s) were weighed", select.candidate)));
        };
        self.remarks.push(Diagnostic::remark(
            func.loc.clone(),
            format!(
                "config selection chose {} for {}x{}x{} on the {}: candidate {} of {count} by the {} ranking, predicted {:.1} us, bound by {}",
                pick.config,
                problem.m,
                problem.n,
                problem.k,
                select.target.name,
                select.candidate,
                select.ranking.word(),
                prediction.seconds * 1e6,
                prediction.bound.word()
            ),
        ));
        bind(func, &pick);
        record(func, &problem, &pick, select.shape.is_some());
        Ok(())
    }

    fn take_diagnostics(&mut self) -> Vec<Diagnostic> {
        std::mem::take(&mut self.remarks)
    }
}

/// Replaces every parameter in types and `tile.param` ops by its value: a
/// swapped pick's block sizes are the swapped GEMM's, whose rows are the
/// program's BLOCK_N.
fn bind(func: &mut Function, pick: &Candidate) {
    let c = pick.config;
    let (block_m, block_n) = if c.swap_operands { (c.block_n, c.block_m) } else { (c.block_m, c.block_n) };
    let value = |p: Param| match p {
        Param::BlockM => block_m,
        Param::BlockN => block_n,
        Param::BlockK => c.block_k,
    };
    let body = &mut func.body;
    let values: Vec<_> = body.values.keys().collect();
    for v in values {
        if let Type::Tile(t) = &body.values[v].ty {
            if t.is_parametric() {
                body.values[v].ty = Type::Tile(t.bind(value));
            }
        }
    }
    for op in body.walk_region(func.region) {
        let Some(param_op) = tile::Param::of(body, op) else { continue };
        let param = Param::from_name(param_op.name(body)).expect("verified tile.param");
        let old = body.result(op, 0);
        let loc = body.ops[op].loc.clone();
        let mut b = Builder::new(body, InsertPoint::Before(op), loc);
        let constant = b.index(value(param));
        if let Some(hint) = body.values[old].name_hint.clone() {
            body.values[constant].name_hint = Some(hint);
        }
        body.replace_all_uses(func.region, old, constant);
        body.remove_op(op);
    }
}

/// Writes the decision into `tile.config` (and `num_warps` for the plain
/// pipeline, unless the program fixed it).
fn record(func: &mut Function, problem: &Problem, pick: &Candidate, shape_given: bool) {
    let c = pick.config;
    let int = |v: i64| Attribute::Int(v, ElemType::I64);
    let mut d = Attributes::new();
    if shape_given {
        d.set("m", int(problem.m));
        d.set("n", int(problem.n));
        d.set("k", int(problem.k));
    }
    if c.swap_operands {
        d.set("swap_operands", Attribute::Bool(true));
    }
    d.set("block_m", int(c.block_m));
    d.set("block_n", int(c.block_n));
    d.set("block_k", int(c.block_k));
    d.set("stages", int(c.stages));
    let consumers = match c.schedule {
        Schedule::Pipeline => 0,
        Schedule::WarpSpecialized { consumers } => consumers,
        Schedule::PingPong | Schedule::ColumnHalves => 2,
    };
    let persistent = c.persistent();
    d.set("schedule", Attribute::String(c.schedule.word().into()));
    d.set("consumers", int(consumers));
    d.set("persistent", Attribute::Bool(persistent));
    d.set("tile_order", Attribute::String(if persistent || c.raster_group > 0 { "grouped" } else { "grid" }.into()));
    if c.raster_group > 0 {
        d.set("raster_group", int(c.raster_group));
    }
    d.set("epilogue", Attribute::String(c.epilogue.word().into()));
    if let Some(columns) = c.epilogue_chunk() {
        d.set("epilogue_cols", int(columns));
    }
    if c.scales != Scales::None {
        d.set("scales", Attribute::String(c.scales.word().into()));
    }
    d.set("cluster", Attribute::String(c.cluster.word().into()));
    if c.cluster != Along::None {
        d.set("cluster_ctas", int(c.cluster_ctas));
    }
    if c.splits > 1 {
        d.set("splits", int(c.splits));
        d.set("split_reduce", Attribute::String(c.split_reduce.word().into()));
    }
    if let Some(order) = c.stream_k {
        d.set("stream_k", Attribute::String(order.word().into()));
    }
    if c.deferred_epilogue {
        d.set("epilogue_deferred", Attribute::Bool(true));
    }
    if c.l2_prefetch > 0 {
        d.set("l2_prefetch", int(c.l2_prefetch));
    }
    d.set("sms", int(pick.sms));
    d.set("waves", int(pick.waves));
    d.set("last_wave", int(pick.last_wave));
    d.set("smem_bytes", int(pick.smem_bytes));
    func.attrs.set("tile.config", Attribute::Dict(d));
    if c.schedule == Schedule::Pipeline && func.attrs.get_int("num_warps").is_none() {
        func.attrs.set("num_warps", int(c.num_warps));
    }
}

/// Whether a loop around the dot runs a trip count computed from a
/// `tile.load_scalar` (a masked grouped GEMM's row count), so that tiles
/// differ in work.
fn k_trip_count_is_data(func: &Function) -> bool {
    let body = &func.body;
    let ops = body.walk_region(func.region);
    let Some(dot_result) = ops.iter().find(|&&o| matches!(body.opcode(o), Opcode::TileDot | Opcode::TileDotScaled)).map(|&d| body.result(d, 0)) else {
        return false;
    };
    ops.iter()
        .filter_map(|&o| For::of(body, o))
        .filter(|l| body.defined_within(dot_result, l.op()))
        .flat_map(|l| [l.lower_bound(body), l.upper_bound(body), l.step(body)])
        .any(|bound| body.computed_from(bound, |op| body.opcode(op) == Opcode::TileLoadScalar))
}

/// Where a program's tiles find their operands, as (`clusterable`,
/// `routed_rows`): neighbouring tiles read the same operand tiles unless
/// the grid runs a batch of problems or data chooses a tile's operands;
/// in one output whose row blocks data chooses operands for (a contiguous
/// grouped GEMM's expert of each row block) the rows are routed. A masked
/// grouped GEMM is a batch of its experts, and its K loop's trip count is
/// data besides (`Problem::varying_k`).
fn operand_sources(func: &Function) -> (bool, bool) {
    let (scalars, batch) = (reads_scalars(func), batched(func));
    (!scalars && !batch, scalars && !batch)
}

/// Whether the kernel reads scalars from memory (`tile.load_scalar`: a
/// grouped GEMM's expert or row count).
fn reads_scalars(func: &Function) -> bool {
    let body = &func.body;
    body.walk_region(func.region).into_iter().any(|op| body.opcode(op) == Opcode::TileLoadScalar)
}

/// Whether the grid runs a batch of problems (`tile.block_id z`).
fn batched(func: &Function) -> bool {
    let body = &func.body;
    body.walk_region(func.region).into_iter().any(|op| BlockId::of(body, op).is_some_and(|b| b.dim(body) == 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configured(options: &[(&str, &str)]) -> SelectConfig {
        let given: Vec<(String, String)> = options.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        SelectConfig::from_options(&PassOptions::resolve(INFO.name, INFO.options, &given).expect("valid options"))
    }

    #[test]
    fn cluster_pins_name_a_dimension_and_a_size() {
        assert_eq!(cluster_pin("auto"), None);
        assert_eq!(cluster_pin("none"), Some((Along::None, None)));
        assert_eq!(cluster_pin("m"), Some((Along::M, None)));
        assert_eq!(cluster_pin("n4"), Some((Along::N, Some(4))));
        assert!(CLUSTER_PINS.iter().all(|w| *w == "auto" || cluster_pin(w).is_some()));
        let pins = configured(&[("cluster", "m8")]).pins;
        assert_eq!((pins.cluster, pins.cluster_ctas), (Some(Along::M), Some(8)));
    }

    #[test]
    fn a_recorded_decision_reads_back_as_its_config() {
        let text = include_str!("../../../examples/gemm_bf16.tile");
        let module = tilec_dialects::parse_module(text, "gemm_bf16.tile").expect("the example parses");
        let machine = Machine::of(&Target::DEFAULT);
        for (m, n, k) in [(512, 512, 65536), (4096, 4096, 4096), (64, 2112, 7168), (8192, 8192, 8192), (1000, 1000, 2000)] {
            let problem = Problem {
                m,
                n,
                k,
                precision: selection::Precision::Bf16,
                any_n: false,
                clusterable: true,
                routed_rows: false,
                varying_k: false,
                b_scale_rows: None,
                a_in_registers: false,
                transpose_b: true,
                a_scales_by_run: false,
                column_group: None,
                output_bytes: 2,
                epilogue: crate::cost_model::epilogue::EpilogueWork::default(),
                output_column_major: false,
                row_block_scales: None,
            };
            let ranked = selection::rank(&problem, &machine, &Pins::default());
            for c in ranked.iter().chain(&selection::alternatives(&problem, &machine, &Pins::default(), &ranked)) {
                let mut func = module.functions[0].clone();
                record(&mut func, &problem, c, true);
                assert_eq!(crate::config::decided_config(&func).expect("readable"), Some(c.config), "{}", c.config);
            }
        }
    }

    #[test]
    fn config_selection_assumes_the_default_target() {
        let select = configured(&[]);
        assert_eq!(select.target, &Target::DEFAULT);
        assert_eq!(select.machine(), Machine::of(&Target::DEFAULT));
    }

    #[test]
    fn the_target_gives_the_machine_and_sms_overrides_its_sms() {
        assert_eq!(configured(&[("target", "h100")]).machine(), Machine::of(&Target::H100));
        let fewer = configured(&[("target", "h100"), ("sms", "114")]).machine();
        assert_eq!(fewer, Machine { sms: 114, ..Machine::of(&Target::H100) });
        let err = PassOptions::resolve(INFO.name, INFO.options, &[("target".into(), "h300".into())]).unwrap_err();
        assert!(err.contains("one of h100, h200"), "{err}");
    }
}
