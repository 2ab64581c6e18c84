//! Register loads issued one iteration ahead, for every pass that
//! schedules a K loop (`tile-pipeline`, `tile-warp-specialize`): a tile the
//! loop loads into registers (a block-scaled dot's scales, read from global
//! memory by each thread) is needed right after its iteration's wgmma, too
//! soon for a global load's latency. Iteration i therefore loads the tile
//! of iteration i + 1 and carries it in an iteration argument; the first
//! is loaded before the loop. The load past the last iteration reads
//! outside the tensor, which gives zeros and is never used.

use std::collections::{HashMap, HashSet};
use tilec_dialects::ir::{Attributes, Body, Builder, InsertPoint, Op, Value};
use tilec_dialects::tile::{Addi, For, Load};

/// Prefetches every register load of `k_loop`'s body whose indices are
/// computed from the induction variable and values defined outside the
/// loop by pure ops; returns how many it moved.
pub fn prefetch_register_loads(body: &mut Body, k_loop: For) -> usize {
    let block = body.entry_block(k_loop.region(body));
    let iv = body.blocks[block].args[0];
    let loads: Vec<Op> = body.blocks[block].ops.iter().copied().filter(|&o| is_register_load(body, o)).collect();
    let mut moved = 0;
    for load in loads {
        let operands = body.ops[load].operands.clone();
        let Some(slice) = iteration_slice(body, k_loop, &operands) else { continue };
        let loc = body.ops[load].loc.clone();
        let mut b = Builder::new(body, InsertPoint::Before(k_loop.op()), loc.clone());
        let first = k_loop.lower_bound(b.body);
        let init = clone_with_iv(&mut b, &slice, load, iv, first);
        let terminator = body.terminator(block).expect("a verified loop ends with tile.yield");
        let mut b = Builder::new(body, InsertPoint::Before(terminator), loc);
        let step = k_loop.step(b.body);
        let following = Addi::build(&mut b, iv, step, Attributes::new()).result(b.body);
        let next = clone_with_iv(&mut b, &slice, load, iv, following);
        let result = body.result(load, 0);
        let hint = body.values[result].name_hint.clone().unwrap_or_else(|| "loaded".into());
        body.values[next].name_hint = Some(format!("{hint}_next"));
        let (arg, _) = k_loop.add_iter_arg(body, init, next, Some(format!("{hint}_in")));
        body.replace_all_uses(k_loop.region(body), result, arg);
        body.remove_op(load);
        moved += 1;
    }
    moved
}

/// A `tile.load` of a tile held in registers (not staged in shared memory).
fn is_register_load(body: &Body, op: Op) -> bool {
    Load::of(body, op).is_some_and(|l| body.value_type(l.result(body)).as_tile().is_some_and(|t| t.layout.as_ref().is_some_and(|l| !l.is_shared())))
}

/// The ops of `k_loop`'s body (at any depth) computing `values`, in
/// order, when all are pure and read only the induction variable and
/// values from outside the loop (no loop-carried value): copied with the
/// induction variable standing for another iteration's, they compute that
/// iteration's `values` ([`clone_slice`]).
pub(crate) fn iteration_slice(body: &Body, k_loop: For, values: &[Value]) -> Option<Vec<Op>> {
    let block = body.entry_block(k_loop.region(body));
    let iv = body.blocks[block].args[0];
    let carried: HashSet<Value> = body.blocks[block].args[1..].iter().copied().collect();
    let mut slice = HashSet::new();
    let mut work: Vec<Value> = values.to_vec();
    while let Some(v) = work.pop() {
        if v == iv {
            continue;
        }
        if carried.contains(&v) {
            return None;
        }
        let Some(def) = body.defining_op(v).filter(|_| body.defined_within(v, k_loop.op())) else { continue };
        if !body.is_pure_leaf(def) {
            return None;
        }
        if slice.insert(def) {
            work.extend(body.ops[def].operands.iter().copied());
        }
    }
    Some(body.walk_region(k_loop.region(body)).into_iter().filter(|o| slice.contains(o)).collect())
}

/// Copies `slice` ([`iteration_slice`]) here with `iv` standing for `at`;
/// returns each original value's copy, `iv` mapped to `at`.
pub(crate) fn clone_slice(b: &mut Builder<'_>, slice: &[Op], iv: Value, at: Value) -> HashMap<Value, Value> {
    let mut map = HashMap::from([(iv, at)]);
    for &op in slice {
        b.clone_op(op, &mut map);
    }
    map
}

/// Copies `slice` and `load` here with `iv` standing for `at`; returns the
/// copied load's tile.
fn clone_with_iv(b: &mut Builder<'_>, slice: &[Op], load: Op, iv: Value, at: Value) -> Value {
    let mut map = clone_slice(b, slice, iv, at);
    let copy = b.clone_op(load, &mut map);
    b.body.result(copy, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilec_dialects::parse_module;

    #[test]
    fn a_row_scale_load_moves_one_iteration_ahead() {
        let src = r#"
tile.func @f(%S: !tile.ref<?x?xf32>, %n: index) {
  %c0 = tile.constant 0 : index
  %c1 = tile.constant 1 : index
  %zero = tile.constant 0.0 : tensor<64x128xf32, #tile.mma<version = 3, warps_per_cta = [4, 1], instr_shape = [16, 128, 32]>>
  %r = tile.for %kt = %c0 to %n step %c1 iter_args(%acc = %zero) -> (tensor<64x128xf32, #tile.mma<version = 3, warps_per_cta = [4, 1], instr_shape = [16, 128, 32]>>) {
    %row = tile.addi %c0, %c0 : index
    %s = tile.load %S[%row, %kt] : !tile.ref<?x?xf32> -> tensor<64x1xf32, #tile.slice<dim = 1, parent = #tile.mma<version = 3, warps_per_cta = [4, 1], instr_shape = [16, 128, 32]>>>
    tile.yield %acc : tensor<64x128xf32, #tile.mma<version = 3, warps_per_cta = [4, 1], instr_shape = [16, 128, 32]>>
  }
  tile.return
}
"#;
        let mut module = parse_module(src, "t.tile").unwrap();
        let f = &mut module.functions[0];
        let k_loop = f.body.walk_region(f.region).into_iter().find_map(|o| For::of(&f.body, o)).unwrap();
        assert_eq!(prefetch_register_loads(&mut f.body, k_loop), 1);
        // Two iteration arguments now, the second the scales; one load
        // before the loop (at %c0) and one at its end (at %kt + %c1).
        assert_eq!(k_loop.inits(&f.body).len(), 2);
        let outside = f.body.blocks[f.body.entry_block(f.region)].ops.iter().filter(|&&o| Load::of(&f.body, o).is_some()).count();
        assert_eq!(outside, 1);
        let block = f.body.entry_block(k_loop.region(&f.body));
        let inside: Vec<Op> = f.body.blocks[block].ops.iter().copied().filter(|&o| Load::of(&f.body, o).is_some()).collect();
        assert_eq!(inside.len(), 1);
        let yielded = f.body.ops[f.body.terminator(block).unwrap()].operands.clone();
        assert_eq!(yielded[1], f.body.result(inside[0], 0));
        tilec_dialects::verifier::verify_function(f).unwrap();
    }
}
