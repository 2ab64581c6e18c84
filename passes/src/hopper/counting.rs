//! Stage and phase arithmetic of a multi-buffered K loop, shared by its
//! schedules (`tile-pipeline`, `tile-warp-specialize`) and the one-stage
//! lowering. Iteration g of the loop (counted from the kernel's start, so a
//! loop over output tiles keeps every barrier in step across tiles) uses
//! stage g mod N in round g / N, and waits on that round's parity.

use tilec_dialects::ir::{Attributes, Body, Builder, InsertPoint, Op, Value};
use tilec_dialects::tile::{Addi, Ceildivsi, Divsi, For, Muli, Remsi, Subi};

/// The `tile.for` directly enclosing `op`, if any.
pub fn enclosing_loop(body: &Body, op: Op) -> Option<For> {
    For::of(body, body.parent_op(op)?)
}

/// The induction variable of `for_op`.
pub fn induction_variable(body: &Body, for_op: For) -> Value {
    body.blocks[body.entry_block(for_op.region(body))].args[0]
}

/// The number of iterations of `for_op` before the current one:
/// (iv - lb) / step.
pub fn loop_iteration(b: &mut Builder<'_>, for_op: For) -> Value {
    let iv = induction_variable(b.body, for_op);
    let (lb, step) = (for_op.lower_bound(b.body), for_op.step(b.body));
    let offset = Subi::build(b, iv, lb, Attributes::new()).result(b.body);
    Divsi::build(b, offset, step, Attributes::new()).result(b.body)
}

/// The iterations `for_op` runs: ceil((ub - lb) / step).
pub fn trip_count(b: &mut Builder<'_>, for_op: For) -> Value {
    let (lb, ub, step) = (for_op.lower_bound(b.body), for_op.upper_bound(b.body), for_op.step(b.body));
    let span = Subi::build(b, ub, lb, Attributes::new()).result(b.body);
    Ceildivsi::build(b, span, step, Attributes::new()).result(b.body)
}

/// Inside the loop over output tiles `outer`, the K iterations the earlier
/// tiles ran, `trip` being `k_loop`'s trip count: the tiles before this one
/// times `trip` when `k_loop`'s bounds are the same for every tile;
/// otherwise (a masked grouped GEMM runs no K iteration for a tile past its
/// expert's rows) a running count that `outer` carries, to which each tile
/// adds its `trip` before the next.
pub fn iterations_before(b: &mut Builder<'_>, outer: For, k_loop: For, trip: Value) -> Value {
    let bounds = [k_loop.lower_bound(b.body), k_loop.upper_bound(b.body), k_loop.step(b.body)];
    if !bounds.iter().any(|&v| b.body.defined_within(v, outer.op())) {
        let done = loop_iteration(b, outer);
        return Muli::build(b, done, trip, Attributes::new()).result(b.body);
    }
    let loc = b.loc.clone();
    let zero = Builder::new(b.body, InsertPoint::Before(outer.op()), loc.clone()).index(0);
    let (base, _) = outer.add_iter_arg(b.body, zero, zero, Some("k_done".into()));
    let terminator = b.body.terminator(b.body.entry_block(outer.region(b.body))).expect("a verified loop ends with tile.yield");
    let next = Addi::build(&mut Builder::new(b.body, InsertPoint::Before(terminator), loc), base, trip, Attributes::new()).result(b.body);
    *b.body.ops[terminator].operands.last_mut().expect("the count was just added") = next;
    base
}

/// The parity a barrier is waited on in `round`: round mod 2.
pub fn parity(b: &mut Builder<'_>, round: Value) -> Value {
    let two = b.index(2);
    Remsi::build(b, round, two, Attributes::new()).result(b.body)
}

/// How a K loop's iterations map to stages: its trip count, the iterations
/// before it (inside a loop over tiles), and the stage count N, all built
/// before the loop.
pub struct Counting {
    /// The loop's trip count.
    pub trip: Value,
    /// Iterations of the K loop before this one's first, inside a loop over tiles (none outside one).
    pub base: Option<Value>,
    /// The stage count N.
    pub n: Value,
}

/// Where the current iteration stands: its local number, its stage and its
/// round.
pub struct Position {
    /// The iteration's number within this K loop.
    pub local: Value,
    /// Its stage: (base + local) mod N.
    pub stage: Value,
    /// Its round: (base + local) / N; the barrier parity is its low bit.
    pub round: Value,
}

impl Counting {
    /// The counting of `k_loop` with `stages` stages, built before it.
    pub fn build(b: &mut Builder<'_>, k_loop: For, stages: i64) -> Counting {
        let trip = trip_count(b, k_loop);
        let base = enclosing_loop(b.body, k_loop.op()).map(|outer| iterations_before(b, outer, k_loop, trip));
        let n = b.index(stages);
        Counting { trip, base, n }
    }

    /// The current iteration's position, built inside `k_loop`.
    pub fn position(&self, b: &mut Builder<'_>, k_loop: For) -> Position {
        let local = loop_iteration(b, k_loop);
        let global = match self.base {
            Some(base) => Addi::build(b, base, local, Attributes::new()).result(b.body),
            None => local,
        };
        let stage = Remsi::build(b, global, self.n, Attributes::new()).result(b.body);
        let round = Divsi::build(b, global, self.n, Attributes::new()).result(b.body);
        Position { local, stage: b.name(stage, "stage"), round }
    }

    /// The stage of local iteration `i`: (base + i) mod N.
    pub fn stage_of(&self, b: &mut Builder<'_>, i: Value) -> Value {
        let global = match self.base {
            Some(base) => Addi::build(b, base, i, Attributes::new()).result(b.body),
            None => i,
        };
        Remsi::build(b, global, self.n, Attributes::new()).result(b.body)
    }
}
