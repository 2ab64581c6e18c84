//! Rewrites shared by the passes that run part of an output tile's K loop in
//! a program instance and combine the parts (`tile-split-k`,
//! `tile-stream-k`): finding the K loop, narrowing it to a range of its
//! iterations, and guarding the stores of the tile so that only the
//! instance that combines the parts writes it. How split-K adds its parts
//! and the order of a stream-K CTA's pieces are config words
//! (`selection::SplitReduce`, `selection::PieceOrder`).

use crate::hopper::schedule::loop_block;
use crate::pass::op_error;
use tilec_dialects::ir::{Attributes, Block, Body, Builder, InsertPoint, Op, Value};
use tilec_dialects::registry::Opcode;
use tilec_dialects::tile::{Addi, For, If, Muli, Store, Yield};
use tilec_dialects::{Diagnostic, Location};

/// The one `tile.for` among the ops of `block` whose body holds a dot: the
/// K loop `pass` splits (errors at `loc` without one).
pub fn find_k_loop(body: &Body, block: Block, loc: Location, pass: &str) -> Result<For, Diagnostic> {
    let holds_dot = |o: Op| body.walk_region(body.ops[o].regions[0]).into_iter().any(|i| matches!(body.opcode(i), Opcode::TileDot | Opcode::TileDotScaled));
    let loops: Vec<For> = body.blocks[block].ops.iter().filter_map(|&o| For::of(body, o)).filter(|l| holds_dot(l.op())).collect();
    match loops[..] {
        [k_loop] => Ok(k_loop),
        [] => Err(Diagnostic::error(loc, format!("{pass} needs a K loop (a tile.for holding a dot) at the top level of the tile's work"))),
        [_, second, ..] => Err(op_error(body, second.op(), format!("is a second K loop; {pass} splits one"))),
    }
}

/// Narrows `k_loop` (`for kt = lb to ub step st`, built before it:
/// `first` and `iterations` too) to the `iterations` of its iterations
/// from the `first`-th on: it becomes `for j = lb to lb + iterations * st
/// step st` and its body reads kt = j + first * st, named `shifted_name`.
/// The loop keeps its lower bound, so that its iterations still count from
/// a constant (the pipeline's stage arithmetic, and the barrier verifier's
/// reading of it, rest on that); its body shifts K instead.
pub fn restrict_k_loop(body: &mut Body, k_loop: For, first: Value, iterations: Value, shifted_name: &str) {
    let loc = body.ops[k_loop.op()].loc.clone();
    let mut b = Builder::new(body, InsertPoint::Before(k_loop.op()), loc.clone());
    let (lb, step) = (k_loop.lower_bound(b.body), k_loop.step(b.body));
    let span = Muli::build(&mut b, iterations, step, Attributes::new()).result(b.body);
    let end = Addi::build(&mut b, lb, span, Attributes::new()).result(b.body);
    let skipped = Muli::build(&mut b, first, step, Attributes::new()).result(b.body);
    let skipped = b.name(skipped, "k_skipped");
    k_loop.set_upper_bound(body, end);
    let iv = body.blocks[loop_block(body, k_loop)].args[0];
    let first_op = body.blocks[loop_block(body, k_loop)].ops[0];
    let mut b = Builder::new(body, InsertPoint::Before(first_op), loc);
    let shifted = Addi::build(&mut b, iv, skipped, Attributes::new());
    let kt = shifted.result(b.body);
    let kt = b.name(kt, shifted_name);
    body.replace_uses_except(k_loop.region(body), iv, kt, shifted.op());
}

/// The `tile.store`s directly in `block`; a store nested deeper (in a loop
/// or branch of the block) is an error, as `pass` guards only these.
pub fn top_level_stores(body: &Body, block: Block, pass: &str) -> Result<Vec<Op>, Diagnostic> {
    let region = body.blocks[block].parent.expect("a block of a region");
    let stores: Vec<Op> = body.walk_region(region).into_iter().filter(|&o| Store::of(body, o).is_some()).collect();
    if let Some(&nested) = stores.iter().find(|&&store| body.ops[store].parent != Some(block)) {
        return Err(op_error(body, nested, format!("stores inside a loop or branch; {pass} guards the top-level stores of the combined tile")));
    }
    Ok(stores)
}

/// Moves each of `stores` into a `tile.if` on `condition` of its own, in
/// its place.
pub fn guard_stores(body: &mut Body, stores: &[Op], condition: Value) {
    for &store in stores {
        let loc = body.ops[store].loc.clone();
        let mut b = Builder::new(body, InsertPoint::Before(store), loc.clone());
        let guard = If::build(&mut b, condition, Attributes::new()).op();
        let (_, guarded) = b.body.add_region(guard, &[]);
        let end = Yield::build(&mut Builder::new(body, InsertPoint::End(guarded), loc), &[], Attributes::new()).op();
        body.remove_op(store);
        body.insert_op_before(end, store);
    }
}
