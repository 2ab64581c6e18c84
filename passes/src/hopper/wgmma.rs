//! wgmma emission, for every pass that turns a dot on staged tiles into
//! Hopper's asynchronous warpgroup MMA: how the dot reads A, the fence /
//! wgmma / commit / wait sequence (and for a block-scaled dot, the
//! promotion of each block's product and where its scales are read), how
//! many groups a loop may leave in flight, and the drain after the loop.

use super::dot::{DotScales, StagedDot};
use super::staging::rows_window;
use crate::selection::Precision;
use tilec_dialects::ir::{Attribute, Attributes, Body, Builder, ElemType, EntityRef, InsertPoint, Op, Region, TileType, Type, Value};
use tilec_dialects::nv::{LoadFragment, LoadShared, MbarrierArrive, ScaleAccumulate, Wgmma, WgmmaCommit, WgmmaFence, WgmmaWait};
use tilec_dialects::{Layout, Location};
use tilec_dialects::tile::{Constant, ConvertLayout};

/// How a dot reads A: `staged` is the loaded tile (what the buffers are
/// keyed by), and `to_registers` the `tile.convert_layout` of it to a
/// dot-operand layout when the dot takes A in registers.
pub struct DotA {
    /// The tile loaded from global memory, which the buffers are keyed by.
    pub staged: Value,
    /// The conversion of it to registers, when the dot reads A there.
    pub to_registers: Option<Op>,
}

/// How `dot` reads its A operand.
pub fn dot_a(body: &Body, dot: StagedDot) -> DotA {
    let a = dot.lhs(body);
    match body.defining_op(a).and_then(|c| ConvertLayout::of(body, c)) {
        Some(convert) => DotA { staged: convert.input(body), to_registers: Some(convert.op()) },
        None => DotA { staged: a, to_registers: None },
    }
}

/// The wgmma groups a loop may leave in flight past `dot`, at most `wanted`.
/// With A in registers none may: the next iteration's ldmatrix rewrites
/// registers an in-flight wgmma still reads (undefined in PTX; on the GPU a
/// 1.4e-2 error in a warp-specialised kernel, and ptxas C7514 in a
/// pipelined one). Nor may a block-scaled dot's: its product is promoted
/// as soon as it is issued.
pub fn groups_in_flight(body: &Body, dot: StagedDot, wanted: i64) -> i64 {
    if dot_a(body, dot).to_registers.is_some() || dot.scales(body).is_some() {
        0
    } else {
        wanted
    }
}

/// Emits, before `dot`, the fence, `nv.wgmma`, commit and a wait leaving
/// `pending` groups in flight; returns the waited accumulator. `a` and `bb`
/// are the buffer (or row window) and stage A and B are read from. When the
/// dot reads A in registers (through a `tile.convert_layout` of the staged
/// tile), an `nv.load_fragment` reads the stage into registers first: after
/// whatever made the stage valid, before the fence that orders register
/// writes before the wgmma.
///
/// A block-scaled dot's wgmma starts from zero (`zero_init`, its
/// accumulator a zero splat made before the K loop), is waited for at once,
/// and `nv.scale_accumulate` folds the product into the running
/// accumulator with the row and block scales.
pub fn emit_wgmma(b: &mut Builder<'_>, dot: StagedDot, a: [Value; 2], bb: [Value; 2], pending: i64) -> Value {
    let mut attrs = b.body.ops[dot.op()].attrs.clone();
    let scales = dot.scales(b.body);
    let acc = match scales {
        Some(_) => {
            attrs.set("zero_init", Attribute::Unit);
            zero_before_loop(b.body, dot)
        }
        None => dot.acc(b.body),
    };
    let [a_buffer, a_stage] = a;
    let (a, a_stage) = match dot_a(b.body, dot).to_registers {
        Some(convert) => {
            let converted = b.body.result(convert, 0);
            let ty = b.body.value_type(converted).clone();
            let regs = LoadFragment::build(b, a_buffer, a_stage, ty, Attributes::new()).result(b.body);
            let hint = b.body.values[converted].name_hint.clone().unwrap_or_else(|| "a".into());
            (b.name(regs, &format!("{hint}_regs")), None)
        }
        None => (a_buffer, Some(a_stage)),
    };
    WgmmaFence::build(b, Attributes::new());
    let d = Wgmma::build(b, a, a_stage, bb[0], bb[1], acc, attrs).result(b.body);
    WgmmaCommit::build(b, Attributes::new());
    let Some(scales) = scales else {
        return WgmmaWait::build(b, &[d], pending, Attributes::new()).results(b.body)[0];
    };
    let partial = WgmmaWait::build(b, &[d], 0, Attributes::new()).results(b.body)[0];
    let partial = b.name(partial, "partial");
    let running = dot.acc(b.body);
    ScaleAccumulate::build(b, running, partial, scales.rows, scales.cols, scales.offset, scales.attrs()).result(b.body)
}

/// The `nv.wgmma_wait` after which the stages read by the wgmma that
/// [`emit_wgmma`] emitted for `done` are free, when it waited for every
/// group (a block-scaled dot's, whose promotion follows the wait).
pub fn completing_wait(body: &Body, done: Value) -> Option<Op> {
    let def = body.defining_op(done)?;
    let wait = match ScaleAccumulate::of(body, def) {
        Some(promotion) => body.defining_op(promotion.partial(body))?,
        None => def,
    };
    WgmmaWait::of(body, wait).filter(|w| w.pending(body) == 0).map(|w| w.op())
}

/// Splits the whole-tile promotions of block-scaled dots in `region` into
/// blocks, by rows where a warpgroup's accumulator holds more than one m64
/// row block, else by columns where more than one wgmma instruction covers
/// them. Run it once the accumulators have their final layouts (a
/// consumer's, after it takes its rows). A dot that reads A in registers
/// keeps its whole-tile promotion.
///
/// By columns, and by rows where `rows` says [`RowBlocks::Together`] and
/// every block's partial fits beside the running result
/// (`BlockSplit::reuses_partials` false): one wgmma and
/// commit group per block, all issued before the first wait, then per block
/// a wait that leaves the later blocks in flight and its promotion
/// (`col_block`, `row_block`): each block is promoted while the next
/// block's wgmma still runs, where a whole-tile promotion, or one block's
/// wgmma, wait and promotion after another's, left the warpgroup's tensor
/// cores idle (measured: docs/evidence.md, hopper/wgmma.rs,
/// promote_by_blocks). The partials together hold what the whole tile's
/// did. Each block's wgmma reads its instruction's rows of B (N x K), or
/// its m64 rows of A, through an `nv.smem_rows` window; a stage released
/// after the wait is released after the last block's.
///
/// Otherwise by rows: one wgmma, wait and promotion per block, in row
/// order, each block's wgmma starting from a zero, or where the partials
/// do not fit from the partial promoted before it. A thread then holds one
/// block's partial product (N / 2 registers) beside the running result
/// instead of a second copy of all of it: 192 registers rather than 256 at
/// 128 rows by 128 columns a warpgroup, which ptxas could only spill; a
/// stage released after the wait (a warp-specialised consumer's arrive) is
/// released after the last block's promotion.
pub fn promote_by_blocks(body: &mut Body, region: Region, rows: RowBlocks) {
    for axis in [Axis::Rows, Axis::Columns] {
        for op in body.walk_region(region) {
            let Some(promotion) = ScaleAccumulate::of(body, op).filter(|p| p.row_block(body).is_none() && p.col_block(body).is_none()) else { continue };
            let Some(split) = BlockSplit::of(body, promotion, axis, rows) else { continue };
            split.apply(body, promotion);
        }
    }
}

/// Moves each block-scaled dot's reads of its scales from the stage in
/// `region` from before its wgmma to just before the wait for it, so that
/// the reads' latency passes while the tensor cores work. Read before the
/// fence, the scales' first use (their product, which ptxas places among
/// the wgmma instructions) held back the issue of the rest of the group
/// until the reads returned. Warp-specialised consumers gain by moving
/// them. The plain pipeline keeps its reads before the fence: with one
/// warpgroup and short wgmma groups there is too little work to hide them
/// behind, and its picks ran slower with them moved (measured:
/// docs/evidence.md, hopper/wgmma.rs, read_scales_behind_wgmma). The stage
/// stays held: its release follows the wait.
pub fn read_scales_behind_wgmma(body: &mut Body, region: Region) {
    for op in body.walk_region(region) {
        let Some(promotion) = ScaleAccumulate::of(body, op) else { continue };
        for scale in [promotion.row_scale(body), promotion.col_scale(body)] {
            let Some(read) = body.defining_op(scale).filter(|&d| LoadShared::of(body, d).is_some()) else { continue };
            if let Some(wait) = wait_behind(body, read) {
                body.remove_op(read);
                body.insert_op_before(wait, read);
            }
        }
    }
}

/// The first `nv.wgmma_wait` after `read` in its block, where only the
/// fence, wgmma and commit that issue a group, other reads of a stage, and
/// pure ops that do not use what `read` reads stand between them.
fn wait_behind(body: &Body, read: Op) -> Option<Op> {
    let block = body.ops[read].parent?;
    let value = body.result(read, 0);
    for &op in &body.blocks[block].ops[body.position_in_block(read) + 1..] {
        if WgmmaWait::of(body, op).is_some() {
            return Some(op);
        }
        let issues = WgmmaFence::of(body, op).is_some() || Wgmma::of(body, op).is_some() || WgmmaCommit::of(body, op).is_some();
        let passable = issues || LoadShared::of(body, op).is_some() || body.is_pure_leaf(op);
        if !passable || body.ops[op].operands.contains(&value) {
            return None;
        }
    }
    None
}

/// How [`promote_by_blocks`] issues a warpgroup's m64 row blocks.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum RowBlocks {
    /// All blocks' wgmma before the first wait, where their partials fit
    /// and one warpgroup holds the tile (the plain pipeline of four warps),
    /// whose waits and promotions otherwise leave the tensor cores idle
    /// (measured: docs/evidence.md, hopper/wgmma.rs, promote_by_blocks).
    /// Two warpgroups on a tile keep their blocks in turn, as consumers do.
    Together,
    /// Each block's wgmma after the promotion before it: for consumers
    /// beside others, whose wgmma run during a consumer's waits and
    /// promotions, where issuing together measured slower.
    InTurn,
}

/// Which way [`promote_by_blocks`] splits a promotion.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Axis {
    /// m64 row blocks (`row_block`).
    Rows,
    /// One wgmma instruction's columns (`col_block`).
    Columns,
}

impl Axis {
    /// The accumulator dimension split.
    fn dim(self) -> usize {
        match self {
            Axis::Rows => 0,
            Axis::Columns => 1,
        }
    }

    /// The promotion attribute that names a block.
    fn attr(self) -> &'static str {
        match self {
            Axis::Rows => "row_block",
            Axis::Columns => "col_block",
        }
    }
}

/// A whole-tile promotion that [`promote_by_blocks`] splits: the wgmma and
/// wait that made its partial, and the blocks.
struct BlockSplit {
    axis: Axis,
    wgmma: Wgmma,
    wait: WgmmaWait,
    /// Rows (of an m64 block over the layout's warpgroups) or columns (of
    /// the MMA instruction) in one block.
    block_size: i64,
    blocks: i64,
    /// The partial product of one block: the accumulator type, `block_size` along the axis.
    partial_type: Type,
    /// Each row block's wgmma starts from the block promoted before it,
    /// taking its registers (`zero_init` does not read them), where two
    /// partials beside the running result would not fit a warpgroup's
    /// accumulators (`AccumulatorRegisters::fit_two_partials`): with a fresh zero
    /// each, ptxas gave every block's partial registers of its own and
    /// 256x112 and 256x128 tiles over two consumers spilled. Where they
    /// fit, fresh partials let a block's wgmma go out while the block
    /// before it is promoted, which reusing them would serialise (the
    /// swapped decode kernels' row blocks: docs/evidence.md, hopper/wgmma.rs,
    /// BlockSplit::reuses_partials).
    reuses_partials: bool,
    /// Every block's wgmma is issued before the first wait: column blocks,
    /// and row blocks as [`RowBlocks::Together`] allows.
    together: bool,
}

impl BlockSplit {
    fn of(body: &Body, promotion: ScaleAccumulate, axis: Axis, rows: RowBlocks) -> Option<BlockSplit> {
        let acc = body.value_type(promotion.acc(body)).as_tile()?;
        let Some(Layout::Mma { warps_per_cta, instr_shape, .. }) = &acc.layout else { return None };
        let block_size = match axis {
            Axis::Rows => 16 * i64::from(*warps_per_cta.first()?),
            Axis::Columns => i64::from(*instr_shape.get(1)?),
        };
        let blocks = acc.shape[axis.dim()] / block_size;
        let wait = WgmmaWait::of(body, body.defining_op(promotion.partial(body))?)?;
        let wgmma = Wgmma::of(body, body.defining_op(wait.values(body).first().copied()?)?)?;
        // The earlier blocks' promotions go before the last block's wait,
        // so the scales must be there already (read after the stage's wait,
        // or carried in from the last iteration).
        let in_time = DotScales::of_promotion(body, promotion).values().all(|s| !defined_after(body, s, wait.op()));
        let warpgroups = warps_per_cta.iter().map(|&w| i64::from(w)).product::<i64>() / 4;
        let registers = Precision::Fp8BlockScaled.accumulator_registers(acc.shape[0], acc.shape[1], warpgroups);
        let reuses_partials = axis == Axis::Rows && !registers.fit_two_partials();
        // Blocks issued together each wait with the later ones in flight,
        // counted from a wait that left nothing else in flight.
        let all_done = wait.pending(body) == 0;
        let together = match axis {
            Axis::Rows => rows == RowBlocks::Together && warpgroups == 1 && !reuses_partials && all_done,
            Axis::Columns => true,
        };
        // Column blocks read windows of B's rows (B is N x K) and all go
        // out before one wait for everything in flight.
        let axis_allows = match axis {
            Axis::Rows => true,
            Axis::Columns => warps_per_cta.get(1) == Some(&1) && wgmma.transpose_b(body) && all_done,
        };
        let splits = blocks > 1 && axis_allows && wait.values(body).len() == 1 && wgmma.a_stage(body).is_some() && wgmma.zero_init(body) && in_time;
        let mut shape = acc.shape.clone();
        shape[axis.dim()] = block_size;
        let partial_type = Type::Tile(TileType { shape, elem: acc.elem, layout: acc.layout.clone() });
        splits.then_some(BlockSplit { axis, wgmma, wait, block_size, blocks, partial_type, reuses_partials, together })
    }

    fn apply(self, body: &mut Body, promotion: ScaleAccumulate) {
        let w = self.wgmma;
        let operands = BlockOperands {
            loc: body.ops[w.op()].loc.clone(),
            a: w.a(body),
            a_stage: w.a_stage(body).expect("checked: A in shared memory"),
            b: w.b(body),
            b_stage: w.b_stage(body),
            attrs: body.ops[w.op()].attrs.clone(),
            scales: DotScales::of_promotion(body, promotion),
            zero: block_zero(body, w, self.partial_type.clone()),
        };
        if self.together {
            self.apply_together(body, promotion, operands)
        } else {
            self.apply_in_turn(body, promotion, operands)
        }
    }

    /// Row blocks in turn: block 0 takes the whole tile's wgmma and wait;
    /// blocks 1.. follow the wait, each promoted before the next one's
    /// wgmma, which starts from a zero, or, where
    /// [`BlockSplit::reuses_partials`], from the partial promoted before it;
    /// the promotion itself becomes the last block's.
    fn apply_in_turn(self, body: &mut Body, promotion: ScaleAccumulate, o: BlockOperands) {
        let BlockOperands { loc, a, a_stage, b: b_buffer, b_stage, attrs, scales, zero } = o;

        // Block 0's window goes before the fence that opens its wgmma.
        let mut b = Builder::new(body, InsertPoint::Before(opening_fence(body, self.wgmma)), loc.clone());
        let window = block_window(&mut b, a, self.block_size, 0, "a_block");
        self.wgmma.set_a(body, window);
        for v in [self.wgmma.result(body), self.wait.results(body)[0]] {
            body.values[v].ty = self.partial_type.clone();
        }

        let after_wait = next_op(body, self.wait.op());
        let mut b = Builder::new(body, InsertPoint::Before(after_wait), loc);
        let mut running = promotion.acc(b.body);
        let mut partial = self.wait.results(b.body)[0];
        for block in 1..self.blocks {
            running = promote_part(&mut b, running, partial, scales, self.axis, block - 1);
            let window = block_window(&mut b, a, self.block_size, block, "a_block");
            WgmmaFence::build(&mut b, Attributes::new());
            let start = if self.reuses_partials { partial } else { zero };
            let d = Wgmma::build(&mut b, window, Some(a_stage), b_buffer, b_stage, start, attrs.clone()).result(b.body);
            WgmmaCommit::build(&mut b, Attributes::new());
            partial = WgmmaWait::build(&mut b, &[d], 0, Attributes::new()).results(b.body)[0];
            partial = b.name(partial, "partial");
        }
        promotion.set_acc(body, running);
        promotion.set_partial(body, partial);
        body.ops[promotion.op()].attrs.set(self.axis.attr(), Attribute::Int(self.blocks - 1, ElemType::I64));
        // A stage released right after the wait is released after the last
        // promotion instead: every block's scales, read from the stage, are
        // then consumed before the producer may refill it.
        let last_wait = body.defining_op(partial).expect("a waited partial");
        let release = next_op(body, last_wait);
        if MbarrierArrive::of(body, release).is_some() {
            let after = next_op(body, promotion.op());
            body.remove_op(release);
            body.insert_op_before(after, release);
        }
    }

    /// Blocks together: block 0 takes the whole tile's wgmma; blocks 1..
    /// follow its commit, each in a group of its own from a zero. The waits
    /// for blocks 0.. but the last, each with its promotion, go before the
    /// tile's wait, which becomes the last block's, as the promotion itself
    /// does.
    fn apply_together(self, body: &mut Body, promotion: ScaleAccumulate, o: BlockOperands) {
        let BlockOperands { loc, a, a_stage, b: b_buffer, b_stage, attrs, scales, zero } = o;

        // The windows go before the fence that opens block 0's wgmma.
        let mut b = Builder::new(body, InsertPoint::Before(opening_fence(body, self.wgmma)), loc.clone());
        let (windowed, name) = match self.axis {
            Axis::Rows => (a, "a_block"),
            Axis::Columns => (b_buffer, "b_block"),
        };
        let windows: Vec<Value> = (0..self.blocks).map(|block| block_window(&mut b, windowed, self.block_size, block, name)).collect();
        match self.axis {
            Axis::Rows => self.wgmma.set_a(body, windows[0]),
            Axis::Columns => self.wgmma.set_b(body, windows[0]),
        }
        let first = self.wgmma.result(body);
        body.values[first].ty = self.partial_type.clone();

        let commit = next_op(body, self.wgmma.op());
        let mut b = Builder::new(body, InsertPoint::Before(next_op(body, commit)), loc.clone());
        let mut issued = vec![first];
        for &window in &windows[1..] {
            let (a, b_buffer) = match self.axis {
                Axis::Rows => (window, b_buffer),
                Axis::Columns => (a, window),
            };
            issued.push(Wgmma::build(&mut b, a, Some(a_stage), b_buffer, b_stage, zero, attrs.clone()).result(b.body));
            WgmmaCommit::build(&mut b, Attributes::new());
        }

        let mut b = Builder::new(body, InsertPoint::Before(self.wait.op()), loc);
        let mut running = promotion.acc(b.body);
        for (block, &d) in issued[..issued.len() - 1].iter().enumerate() {
            let block = block as i64;
            let partial = WgmmaWait::build(&mut b, &[d], self.blocks - 1 - block, Attributes::new()).results(b.body)[0];
            let partial = b.name(partial, "partial");
            running = promote_part(&mut b, running, partial, scales, self.axis, block);
        }
        body.ops[self.wait.op()].operands[0] = *issued.last().expect("blocks > 1");
        let last = self.wait.results(body)[0];
        body.values[last].ty = self.partial_type.clone();
        promotion.set_acc(body, running);
        body.ops[promotion.op()].attrs.set(self.axis.attr(), Attribute::Int(self.blocks - 1, ElemType::I64));
    }
}

/// What every block's wgmma and promotion take from the whole tile's.
struct BlockOperands {
    loc: Location,
    a: Value,
    a_stage: Value,
    b: Value,
    b_stage: Value,
    attrs: Attributes,
    scales: DotScales,
    /// A zero splat of one block's partial type.
    zero: Value,
}

/// `running` with block `block` along `axis` promoted from `partial`.
fn promote_part(b: &mut Builder<'_>, running: Value, partial: Value, scales: DotScales, axis: Axis, block: i64) -> Value {
    let mut attrs = scales.attrs();
    attrs.set(axis.attr(), Attribute::Int(block, ElemType::I64));
    let promoted = ScaleAccumulate::build(b, running, partial, scales.rows, scales.cols, scales.offset, attrs).result(b.body);
    b.name(promoted, "acc_block")
}

/// Rows `[block * rows, (block + 1) * rows)` of `buffer` (or window).
fn block_window(b: &mut Builder<'_>, buffer: Value, rows: i64, block: i64, name: &str) -> Value {
    let row = b.index(block * rows);
    rows_window(b, buffer, row, rows, name)
}

/// Gives `wgmma` a zero splat of one block's partial type, made where the
/// whole tile's was, and removes the whole tile's once nothing reads it.
fn block_zero(body: &mut Body, wgmma: Wgmma, ty: Type) -> Value {
    let whole_zero = wgmma.acc(body);
    let zero_at = body.defining_op(whole_zero).expect("a zero splat");
    let loc = body.ops[wgmma.op()].loc.clone();
    let zero = zero_splat(&mut Builder::new(body, InsertPoint::Before(zero_at), loc), ty);
    wgmma.set_acc(body, zero);
    if body.use_counts(body.ops[zero_at].parent.and_then(|blk| body.blocks[blk].parent).expect("attached"))[whole_zero.index()] == 0 {
        body.remove_op(zero_at);
    }
    zero
}

/// The fence that opens `wgmma`'s group, or the wgmma itself without one.
fn opening_fence(body: &Body, wgmma: Wgmma) -> Op {
    previous_op(body, wgmma.op()).filter(|&op| WgmmaFence::of(body, op).is_some()).unwrap_or(wgmma.op())
}

/// The op before `op` in its block, if any.
fn previous_op(body: &Body, op: Op) -> Option<Op> {
    let ops = &body.blocks[body.ops[op].parent.expect("attached")].ops;
    body.position_in_block(op).checked_sub(1).map(|i| ops[i])
}

/// Whether `v` is defined by an op after `op` in `op`'s block.
fn defined_after(body: &Body, v: Value, op: Op) -> bool {
    body.defining_op(v)
        .filter(|&def| body.ops[def].parent == body.ops[op].parent)
        .is_some_and(|def| body.position_in_block(def) > body.position_in_block(op))
}

/// A zero splat of `dot`'s accumulator type, made just before the loop
/// that holds the dot (once per tile, not once per K block).
fn zero_before_loop(body: &mut Body, dot: StagedDot) -> Value {
    let ty = body.value_type(dot.acc(body)).clone();
    let owner = body.parent_op(dot.op()).unwrap_or(dot.op());
    zero_splat(&mut Builder::new(body, InsertPoint::Before(owner), body.ops[dot.op()].loc.clone()), ty)
}

/// A zero splat of `ty`, an f32 accumulator tile for a `zero_init` wgmma.
fn zero_splat(b: &mut Builder<'_>, ty: Type) -> Value {
    let mut attrs = Attributes::new();
    attrs.set("value", Attribute::Float(0.0, ElemType::F32));
    let zero = Constant::build(b, ty, attrs).result(b.body);
    b.name(zero, "block_zero")
}

/// Replaces `dot`'s result by `done` (under the dot's name) and removes the
/// dot, and the conversion of A to registers it read.
pub fn replace_dot(body: &mut Body, region: Region, dot: StagedDot, done: Value) {
    let result = dot.result(body);
    let to_registers = dot_a(body, dot).to_registers;
    body.values[done].name_hint = body.values[result].name_hint.clone();
    body.replace_all_uses(region, result, done);
    body.remove_op(dot.op());
    if let Some(convert) = to_registers {
        body.remove_op(convert);
    }
}

/// After a loop that leaves wgmma groups in flight, one wait for all of
/// them before anything reads the accumulators the loop returns. Returns
/// the op that followed the loop: what comes after the drain goes before it.
pub fn drain_after(body: &mut Body, region: Region, for_op: Op) -> Op {
    let after = next_op(body, for_op);
    let results = body.ops[for_op].results.clone();
    if results.is_empty() {
        return after;
    }
    let mut b = Builder::new(body, InsertPoint::Before(after), body.ops[for_op].loc.clone());
    let drain = WgmmaWait::build(&mut b, &results, 0, Attributes::new());
    for (&r, &drained) in results.iter().zip(&drain.results(body).to_vec()) {
        body.values[drained].name_hint = body.values[r].name_hint.take();
        // The drain itself still waits on the loop's results.
        body.replace_uses_except(region, r, drained, drain.op());
    }
    after
}

/// The op after `op` in its block.
pub fn next_op(body: &Body, op: Op) -> Op {
    let block = body.ops[op].parent.expect("attached");
    body.blocks[block].ops[body.position_in_block(op) + 1]
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilec_dialects::parse_module;

    /// A consumer's K step over one stage, with `between` after its scale
    /// reads and before the fence.
    fn k_step(between: &str) -> String {
        let mma = "#tile.mma<version = 3, warps_per_cta = [4, 1], instr_shape = [16, 128, 32]>";
        let rows = format!("tensor<64x1xf32, #tile.slice<dim = 1, parent = {mma}>>");
        let blocks = "tensor<1x1xf32, #tile.blocked<size_per_thread = [1, 1], threads_per_warp = [1, 32], warps_per_cta = [1, 4], order = [1, 0]>>";
        let acc = format!("tensor<64x128xf32, {mma}>");
        let fp8 = "!nv.smem<2x64x128xf8E4M3FN, #tile.nvmma_shared<swizzle = 128>>";
        let b = "!nv.smem<2x128x128xf8E4M3FN, #tile.nvmma_shared<swizzle = 128>>";
        format!(
            r#"
tile.func @f(%n: index) {{
  %c0 = tile.constant 0 : index
  %c1 = tile.constant 1 : index
  %zero = tile.constant 0.0 : {acc}
  %a_smem = nv.alloc_smem : {fp8}
  %b_smem = nv.alloc_smem : {b}
  %sa_smem = nv.alloc_smem : !nv.smem<2x64x1xf32, #tile.nvmma_shared<swizzle = 0>>
  %sb_smem = nv.alloc_smem : !nv.smem<2x1x1xf32, #tile.nvmma_shared<swizzle = 0>>
  %full = nv.alloc_mbarriers {{arrivals = 1}} : !nv.mbarrier<2>
  %empty = nv.alloc_mbarriers {{arrivals = 128}} : !nv.mbarrier<2>
  %r = tile.for %kt = %c0 to %n step %c1 iter_args(%acc_in = %zero) -> ({acc}) {{
    %stage = tile.remsi %kt, %c1 : index
    nv.mbarrier_wait %full[%stage], %c0 : !nv.mbarrier<2>
    %sa = nv.load_shared %sa_smem[%stage] : !nv.smem<2x64x1xf32, #tile.nvmma_shared<swizzle = 0>> -> {rows}
    %sb = nv.load_shared %sb_smem[%stage] : !nv.smem<2x1x1xf32, #tile.nvmma_shared<swizzle = 0>> -> {blocks}
    {between}
    nv.wgmma_fence
    %d = nv.wgmma %a_smem[%stage], %b_smem[%stage], %zero {{transpose_b, zero_init}} : {fp8}, {b} -> {acc}
    nv.wgmma_commit
    %partial = nv.wgmma_wait 0, %d : {acc}
    nv.mbarrier_arrive %empty[%stage] : !nv.mbarrier<2>
    %acc_out = nv.scale_accumulate %acc_in, %partial, %sa, %sb : {acc}, {rows}, {blocks} -> {acc}
    tile.yield %acc_out : {acc}
  }}
  tile.return
}}
"#
        )
    }

    /// The opcodes of the K loop's body after [`read_scales_behind_wgmma`].
    fn step_after_move(between: &str) -> Vec<&'static str> {
        let mut module = parse_module(&k_step(between), "t.tile").unwrap();
        let f = &mut module.functions[0];
        read_scales_behind_wgmma(&mut f.body, f.region);
        tilec_dialects::verifier::verify_function(f).unwrap();
        let k_loop = f.body.walk_region(f.region).into_iter().find(|&o| f.body.opcode(o).name() == "tile.for").unwrap();
        let block = f.body.entry_block(f.body.ops[k_loop].regions[0]);
        f.body.blocks[block].ops.iter().map(|&o| f.body.opcode(o).name()).collect()
    }

    #[test]
    fn scale_reads_move_between_the_commit_and_the_wait() {
        let ops = step_after_move("");
        let at = |name: &str| ops.iter().position(|&o| o == name).unwrap();
        assert!(at("nv.wgmma_commit") < at("nv.load_shared"), "{ops:?}");
        assert_eq!(&ops[at("nv.load_shared")..at("nv.wgmma_wait")], ["nv.load_shared", "nv.load_shared"]);
    }

    #[test]
    fn scale_reads_stay_before_an_op_with_effects() {
        // An arrive between the reads and the wgmma may release the stage:
        // the reads must not pass it.
        let ops = step_after_move("nv.mbarrier_arrive %empty[%stage] : !nv.mbarrier<2>");
        let at = |name: &str| ops.iter().position(|&o| o == name).unwrap();
        assert!(at("nv.load_shared") < at("nv.mbarrier_arrive"), "{ops:?}");
        assert!(at("nv.load_shared") < at("nv.wgmma_fence"), "{ops:?}");
    }
}
