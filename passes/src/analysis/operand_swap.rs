//! Whether and how a program's GEMM can compute C^T = B A^T instead of
//! C = A B^T (`tile-swap-operands` rewrites it so; config selection weighs
//! the swapped GEMM only where it can): what the rewrite changes, found and
//! checked before anything changes.

use crate::pass::op_error;
use std::collections::HashSet;
use tilec_dialects::ir::{Attribute, Body, Op};
use tilec_dialects::registry::Opcode;
use crate::hopper::dot::StagedDot;
use tilec_dialects::tile::{GridQuery, Store, Yield};
use tilec_dialects::{Diagnostic, Function, Value};

/// What the rewrite changes, found and checked before anything changes.
pub struct OperandSwap {
    /// The dot whose operands exchange.
    pub dot: Op,
    /// The values of the accumulator's type, from the initial value through
    /// the K loop to the stored tile.
    pub transposed: Vec<Value>,
    /// The store of the output tile, whose indices exchange.
    pub store: Op,
    /// The output's position among the function's arguments.
    pub output_arg: usize,
    /// Every `tile.block_id` and `tile.num_blocks` along x or y.
    pub grid_queries: Vec<Op>,
    /// The vectors broadcast over the accumulator's type (a bias along C's
    /// columns), which then run along its rows.
    pub broadcasts: Vec<Op>,
}

impl OperandSwap {
    /// The rewrite of `func`'s one dot (BF16, or block-scaled FP8 whose
    /// scales then exchange too), or an error at what it cannot transpose.
    pub fn find(func: &Function) -> Result<OperandSwap, Diagnostic> {
        let body = &func.body;
        let ops = body.walk_region(func.region);
        let dots: Vec<Op> = ops.iter().copied().filter(|&o| matches!(body.opcode(o), Opcode::TileDot | Opcode::TileDotScaled)).collect();
        let &[dot] = &dots[..] else {
            return Err(Diagnostic::error(func.loc.clone(), format!("tile-swap-operands swaps the operands of one dot, '@{}' has {}", func.name, dots.len())));
        };
        let view = StagedDot::of(body, dot).expect("a dot");
        let attrs = &body.ops[dot].attrs;
        if attrs.has("transpose_a") || !attrs.has("transpose_b") {
            return Err(op_error(body, dot, "must read A as M x K and B as N x K (transpose_b): tile-swap-operands makes B's tile the first operand, which then reads K-major as A's did".into()));
        }
        let laid_out = [view.lhs(body), view.rhs(body)].into_iter().any(|v| body.value_type(v).as_tile().is_some_and(|t| t.layout.is_some()));
        if laid_out {
            return Err(op_error(body, dot, "reads an operand whose layout the program fixes (A in registers): tile-swap-operands exchanges the operands before layouts are chosen".into()));
        }
        let (transposed, broadcasts) = accumulator_values(body, &ops, dot, view.result(body))?;
        let stores: Vec<Op> = ops.iter().copied().filter(|&o| Store::of(body, o).is_some_and(|s| transposed.contains(&s.value(body)))).collect();
        let &[store] = &stores[..] else {
            return Err(op_error(body, dot, format!("has its result stored {} times; tile-swap-operands needs one store of the output tile", stores.len())));
        };
        let output = Store::of(body, store).expect("a tile.store").tensor(body);
        let output_arg = func.args().iter().position(|&a| a == output).ok_or_else(|| {
            op_error(body, store, "stores into a tensor that is not a kernel argument; tile-swap-operands declares the output column-major".into())
        })?;
        let dims = func.arg_attrs[output_arg].get("tile.dims").and_then(Attribute::as_strings);
        if dims.as_ref().is_none_or(|d| d.len() != 2) {
            return Err(op_error(body, store, "stores into a tensor without two named dimensions ('tile.dims'); tile-swap-operands declares it column-major by them".into()));
        }
        let grid_queries = ops.iter().copied().filter(|&o| GridQuery::of(body, o).is_some_and(|q| q.dim(body) < 2)).collect();
        Ok(OperandSwap { dot, transposed: transposed.into_iter().collect(), store, output_arg, grid_queries, broadcasts })
    }
}

/// The values of the accumulator's type: the dot's result, the K loop's
/// carried value (block argument, initial value, result) and everything
/// element-wise computed from them up to the store, with what those ops
/// combine them with: splat constants and broadcast vectors, and what is
/// computed element-wise from those alone; and the broadcasts. Anything
/// else that reads them (a reduction, a second store, an op mixing in a
/// tile loaded whole, like a residual) is an error at that op.
fn accumulator_values(body: &Body, ops: &[Op], dot: Op, result: Value) -> Result<(HashSet<Value>, Vec<Op>), Diagnostic> {
    let mut values = HashSet::from([result]);
    let mut work = vec![result];
    let mut elementwise = Vec::new();
    let add = |v: Value, values: &mut HashSet<Value>, work: &mut Vec<Value>| {
        if values.insert(v) {
            work.push(v);
        }
    };
    while let Some(v) = work.pop() {
        // Where a loop-carried value comes from: the initial value.
        if body.defining_op(v).is_some_and(|def| body.opcode(def) == Opcode::TileConstant) {
            continue;
        }
        for &user in ops.iter().filter(|&&o| body.ops[o].operands.contains(&v)) {
            match body.opcode(user) {
                Opcode::TileDot | Opcode::TileDotScaled if user == dot => {}
                Opcode::TileYield => {
                    let parent = body.parent_op(user).expect("a yield has a parent");
                    if body.opcode(parent) != Opcode::TileFor {
                        return Err(op_error(body, user, "yields the accumulator out of an op other than the K loop; tile-swap-operands transposes a tile.for's".into()));
                    }
                    let i = Yield::of(body, user).expect("a tile.yield").values(body).iter().position(|&x| x == v).expect("an operand");
                    let k_loop = &body.ops[parent];
                    // tile.for's operands are its bounds and step, then the initial values.
                    let init = k_loop.operands[k_loop.operands.len() - k_loop.results.len() + i];
                    let carried = body.blocks[body.entry_block(k_loop.regions[0])].args[1 + i];
                    for x in [k_loop.results[i], init, carried] {
                        add(x, &mut values, &mut work);
                    }
                }
                Opcode::TileStore => {}
                _ if body.ops[user].def.traits.elementwise => {
                    if !elementwise.contains(&user) {
                        elementwise.push(user);
                    }
                    for &r in &body.ops[user].results {
                        add(r, &mut values, &mut work);
                    }
                }
                _ => {
                    return Err(op_error(body, user, "reads the accumulator other than element-wise; tile-swap-operands transposes element-wise epilogues only".into()));
                }
            }
        }
    }
    // What the element-wise ops mix into the accumulator's values.
    let mut broadcasts = Vec::new();
    for op in elementwise {
        for &operand in &body.ops[op].operands {
            if body.value_type(operand).as_tile().is_none() || values.contains(&operand) {
                continue;
            }
            let mut chain = Vec::new();
            if !broadcast_chain(body, operand, &mut chain, &mut broadcasts) {
                return Err(op_error(
                    body,
                    op,
                    "combines the accumulator with a tile loaded whole (a residual); tile-swap-operands transposes only the accumulator, constants and broadcast vectors".into(),
                ));
            }
            values.extend(chain);
        }
    }
    Ok((values, broadcasts))
}

/// Whether tile `v` is a splat constant, a broadcast vector or computed
/// element-wise from those alone, adding the values it is made of to
/// `chain` and the broadcasts to `broadcasts`.
fn broadcast_chain(body: &Body, v: Value, chain: &mut Vec<Value>, broadcasts: &mut Vec<Op>) -> bool {
    let Some(def) = body.defining_op(v) else { return false };
    let made = match body.opcode(def) {
        Opcode::TileConstant => true,
        Opcode::TileLoadBroadcast => {
            if !broadcasts.contains(&def) {
                broadcasts.push(def);
            }
            true
        }
        _ if body.ops[def].def.traits.elementwise => {
            body.ops[def].operands.iter().all(|&x| body.value_type(x).as_tile().is_none() || broadcast_chain(body, x, chain, broadcasts))
        }
        _ => false,
    };
    if made {
        chain.push(v);
    }
    made
}
