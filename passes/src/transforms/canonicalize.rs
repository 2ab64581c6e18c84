//! `tile-canonicalize`: folds constants and identities, hoists constants to
//! the top of the function and merges equal ones, drops loop iteration
//! arguments that are passed through unchanged, then removes ops whose
//! results nothing uses and that have no effect, until nothing changes.

use crate::options::{OptionKind, OptionSpec};
use crate::phase::PhaseRule;
use crate::registry::PassInfo;
use crate::Pass;
use tilec_dialects::ir::{Attributes, Body, EntityRef, Op, Region, ValueDef};
use tilec_dialects::registry::{Folded, Opcode};
use tilec_dialects::tile::{For, Yield};
use tilec_dialects::{Diagnostic, Function};

pub const INFO: PassInfo = PassInfo {
    name: "tile-canonicalize",
    summary: "Fold constants and identities, remove dead code",
    options: &[OptionSpec {
        name: "max-iterations",
        kind: OptionKind::Int { min: 1, max: 1000 },
        default: "10",
        help: "rounds of folding and dead-code removal before giving up on a fixed point",
    }],
    phases: PhaseRule::ANY,
    create: |options| Box::new(Canonicalize { max_iterations: options.int("max-iterations") as usize }),
};

pub struct Canonicalize {
    max_iterations: usize,
}

impl Pass for Canonicalize {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn run(&mut self, func: &mut Function) -> Result<(), Diagnostic> {
        for _ in 0..self.max_iterations {
            let folded = fold_all(&mut func.body, func.region);
            let merged = hoist_and_merge_constants(&mut func.body, func.region);
            let dropped = drop_passthrough_iter_args(&mut func.body, func.region);
            let removed = remove_dead_ops(&mut func.body, func.region);
            if !folded && !merged && !dropped && !removed {
                break;
            }
        }
        Ok(())
    }
}

/// The constant an op's operand is known to hold, if its definer is a
/// constant op.
fn constant_of(body: &Body, v: tilec_dialects::Value) -> Option<tilec_dialects::Attribute> {
    let def = body.defining_op(v)?;
    let data = &body.ops[def];
    if data.def.traits.constant {
        data.attrs.get("value").cloned()
    } else {
        None
    }
}

fn fold_all(body: &mut Body, region: Region) -> bool {
    let mut changed = false;
    for op in body.walk_region(region) {
        let Some(fold) = body.ops[op].def.fold else { continue };
        let consts: Vec<_> = body.ops[op].operands.iter().map(|&v| constant_of(body, v)).collect();
        let Some(folded) = fold(body, op, &consts) else { continue };
        let result = body.result(op, 0);
        let replacement = match folded {
            Folded::Value(v) => v,
            Folded::Constant(value) => {
                let ty = body.value_type(result).clone();
                let mut attrs = Attributes::new();
                attrs.set("value", value);
                let loc = body.ops[op].loc.clone();
                let constant = body.create_op(Opcode::TileConstant.def(), vec![], &[ty], attrs, loc);
                body.insert_op_before(op, constant);
                body.result(constant, 0)
            }
        };
        body.replace_all_uses(region, result, replacement);
        body.remove_op(op);
        changed = true;
    }
    changed
}

/// Moves every constant to the start of the function, in first-use order,
/// and replaces duplicates (same type and value) by the first. Constants
/// have no operands, so any position before their uses is valid.
fn hoist_and_merge_constants(body: &mut Body, region: Region) -> bool {
    let entry = body.entry_block(region);
    let constants: Vec<Op> = body.walk_region(region).into_iter().filter(|&o| body.ops[o].def.traits.constant).collect();
    let mut kept: Vec<Op> = Vec::new();
    let mut changed = false;
    for op in constants {
        let result = body.result(op, 0);
        let twin = kept.iter().copied().find(|&k| {
            body.value_type(body.result(k, 0)) == body.value_type(result) && body.ops[k].attrs == body.ops[op].attrs
        });
        match twin {
            Some(k) => {
                let kept_value = body.result(k, 0);
                if body.values[kept_value].name_hint.is_none() {
                    body.values[kept_value].name_hint = body.values[result].name_hint.clone();
                }
                body.replace_all_uses(region, result, kept_value);
                body.remove_op(op);
                changed = true;
            }
            None => {
                let position = kept.len();
                if body.blocks[entry].ops.get(position) != Some(&op) {
                    body.remove_op(op);
                    body.ops[op].parent = Some(entry);
                    body.blocks[entry].ops.insert(position, op);
                    changed = true;
                }
                kept.push(op);
            }
        }
    }
    changed
}

/// Removes each iteration argument of a `tile.for` that its body yields
/// back unchanged: it equals its initial value on every iteration, so its
/// uses, and the loop's result, can read the initial value instead.
fn drop_passthrough_iter_args(body: &mut Body, region: Region) -> bool {
    let mut changed = false;
    for op in body.walk_region(region) {
        let Some(for_op) = For::of(body, op) else { continue };
        let block = body.entry_block(for_op.region(body));
        let Some(term) = body.terminator(block).and_then(|t| Yield::of(body, t)) else { continue };
        let mut i = 0;
        while i < for_op.results(body).len() {
            let arg = body.blocks[block].args[1 + i];
            if term.values(body).get(i) != Some(&arg) {
                i += 1;
                continue;
            }
            let init = for_op.inits(body)[i];
            let result = for_op.results(body)[i];
            body.replace_all_uses(region, arg, init);
            body.replace_all_uses(region, result, init);
            for_op.remove_iter_arg(body, i);
            renumber_definitions(body, op, block);
            changed = true;
        }
    }
    changed
}

/// Restores the positions recorded in values after results or block
/// arguments were removed.
fn renumber_definitions(body: &mut Body, op: Op, block: tilec_dialects::Block) {
    for (k, r) in body.ops[op].results.clone().into_iter().enumerate() {
        body.values[r].def = ValueDef::Result(op, k);
    }
    for (k, a) in body.blocks[block].args.clone().into_iter().enumerate() {
        body.values[a].def = ValueDef::BlockArg(block, k);
    }
}

/// Whether removing `op` (when its results are unused) changes nothing else:
/// it is pure, or every op nested in it is pure or a terminator.
fn is_removable(body: &Body, op: Op) -> bool {
    let data = &body.ops[op];
    if data.def.traits.terminator {
        return false;
    }
    if data.def.traits.pure {
        return true;
    }
    !data.regions.is_empty()
        && data.regions.iter().all(|&r| {
            body.walk_region(r).into_iter().all(|o| body.ops[o].def.traits.pure || body.ops[o].def.traits.terminator)
        })
}

fn remove_dead_ops(body: &mut Body, region: Region) -> bool {
    let mut changed = false;
    loop {
        let uses = body.use_counts(region);
        let dead: Vec<Op> = body
            .walk_region(region)
            .into_iter()
            .filter(|&op| is_removable(body, op) && body.ops[op].results.iter().all(|r| uses[r.index()] == 0))
            .collect();
        if dead.is_empty() {
            return changed;
        }
        for op in dead {
            body.remove_op(op);
        }
        changed = true;
    }
}
