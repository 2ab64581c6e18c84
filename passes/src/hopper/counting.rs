//! Stage and phase arithmetic of a multi-buffered K loop, shared by its
//! schedules (`tile-pipeline`, `tile-warp-specialize`) and the one-stage
//! lowering. Iteration g of the loop (counted from the kernel's start, so a
//! loop over output tiles keeps every barrier in step across tiles) uses
//! stage g mod N in round g / N, and waits on that round's parity.

use tilec_dialects::ir::{Body, Builder, Op, Value};

/// The `tile.for` directly enclosing `op`, if any.
pub fn enclosing_loop(body: &Body, op: Op) -> Option<Op> {
    let block = body.ops[op].parent?;
    let parent = body.regions[body.blocks[block].parent?].parent?;
    (body.ops[parent].def.name == "tile.for").then_some(parent)
}

/// The number of iterations of `for_op` before the current one:
/// (iv - lb) / step.
pub fn loop_iteration(b: &mut Builder<'_>, for_op: Op) -> Value {
    let block = b.body.entry_block(b.body.ops[for_op].regions[0]);
    let iv = b.body.blocks[block].args[0];
    let (lb, step) = (b.body.ops[for_op].operands[0], b.body.ops[for_op].operands[2]);
    let offset = b.index_op("tile.subi", iv, lb);
    b.index_op("tile.divsi", offset, step)
}

/// The iterations `for_op` runs: ceil((ub - lb) / step).
pub fn trip_count(b: &mut Builder<'_>, for_op: Op) -> Value {
    let operands = b.body.ops[for_op].operands.clone();
    let span = b.index_op("tile.subi", operands[1], operands[0]);
    b.index_op("tile.ceildivsi", span, operands[2])
}

/// Inside the loop over output tiles `outer`, the K iterations the earlier
/// tiles ran: the tiles before this one times `trip`.
pub fn iterations_before(b: &mut Builder<'_>, outer: Op, trip: Value) -> Value {
    let done = loop_iteration(b, outer);
    b.index_op("tile.muli", done, trip)
}

/// The parity a barrier is waited on in `round`: round mod 2.
pub fn parity(b: &mut Builder<'_>, round: Value) -> Value {
    let two = b.index(2);
    b.index_op("tile.remsi", round, two)
}

/// How a K loop's iterations map to stages: its trip count, the iterations
/// before it (inside a loop over tiles), and the stage count N, all built
/// before the loop.
pub struct Counting {
    pub trip: Value,
    pub base: Option<Value>,
    pub n: Value,
}

/// Where the current iteration stands: its local number, its stage and its
/// round.
pub struct Position {
    pub local: Value,
    pub stage: Value,
    pub round: Value,
}

impl Counting {
    /// The counting of `k_loop` with `stages` stages, built before it.
    pub fn build(b: &mut Builder<'_>, k_loop: Op, stages: i64) -> Counting {
        let trip = trip_count(b, k_loop);
        let base = enclosing_loop(b.body, k_loop).map(|outer| iterations_before(b, outer, trip));
        let n = b.index(stages);
        Counting { trip, base, n }
    }

    /// The current iteration's position, built inside `k_loop`.
    pub fn position(&self, b: &mut Builder<'_>, k_loop: Op) -> Position {
        let local = loop_iteration(b, k_loop);
        let global = match self.base {
            Some(base) => b.index_op("tile.addi", base, local),
            None => local,
        };
        let stage = b.index_op("tile.remsi", global, self.n);
        let round = b.index_op("tile.divsi", global, self.n);
        Position { local, stage: b.name(stage, "stage"), round }
    }

    /// The stage of local iteration `i`: (base + i) mod N.
    pub fn stage_of(&self, b: &mut Builder<'_>, i: Value) -> Value {
        let global = match self.base {
            Some(base) => b.index_op("tile.addi", base, i),
            None => i,
        };
        b.index_op("tile.remsi", global, self.n)
    }
}
