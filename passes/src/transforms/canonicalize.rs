//! `tile-canonicalize`: folds constants and identities, hoists constants to
//! the top of the function and merges equal ones, drops loop iteration
//! arguments that are passed through unchanged and a block-scaled dot's
//! offset of 0 into its scale blocks (with the scales it no longer reads),
//! then removes ops whose results nothing uses and that have no effect,
//! until nothing changes.
//!
//! Each round is linear in the number of ops (times the nesting depth for
//! dead-code removal): replacements are collected and applied in one walk,
//! and ops are detached from their blocks in one pass per block, so a long
//! chain of foldable or dead ops costs no more than a short one per op.

use crate::options::{OptionKind, OptionSpec};
use crate::phase::PhaseRule;
use crate::pass::PassInfo;
use crate::pass::{Pass, Statistic};
use std::collections::HashMap;
use tilec_dialects::ir::{Attributes, Block, Body, EntityRef, Op, Region, Type, Value, ValueDef};
use tilec_dialects::registry::{Folded, Opcode};
use tilec_dialects::tile::arith::constant_int;
use tilec_dialects::tile::dot::blocks_covering;
use tilec_dialects::tile::{DotScaled, For, Load, Yield};
use tilec_dialects::{Diagnostic, Function};

/// `tile-canonicalize`'s registration: name, options, phases and constructor.
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
    create: |options| Box::new(Canonicalize { max_iterations: options.int("max-iterations") as usize, erased: 0 }),
};

/// The `tile-canonicalize` pass with its options resolved.
pub struct Canonicalize {
    max_iterations: usize,
    /// Ops gone over every function run (folded, merged or dead).
    erased: u64,
}

impl Pass for Canonicalize {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn run(&mut self, func: &mut Function) -> Result<(), Diagnostic> {
        let before = func.body.walk_region(func.region).len();
        for _ in 0..self.max_iterations {
            let folded = fold_all(&mut func.body, func.region);
            let merged = hoist_and_merge_constants(&mut func.body, func.region);
            let dropped = drop_passthrough_iter_args(&mut func.body, func.region);
            let narrowed = narrow_scales_of_aligned_tiles(&mut func.body, func.region);
            let removed = remove_dead_ops(&mut func.body, func.region);
            if !folded && !merged && !dropped && !narrowed && !removed {
                break;
            }
        }
        self.erased += before.saturating_sub(func.body.walk_region(func.region).len()) as u64;
        Ok(())
    }

    fn statistics(&self) -> Vec<Statistic> {
        vec![Statistic { name: "num-erased", description: "Number of ops folded away or erased", value: self.erased }]
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

/// Values replaced by others, applied to operands lazily: an op's operands
/// are rewritten when the walk reaches it (every use follows its definition
/// in pre-order), and once more over all ops at the end.
#[derive(Default)]
struct Replacements(HashMap<Value, Value>);

impl Replacements {
    fn resolve(&self, mut v: Value) -> Value {
        while let Some(&next) = self.0.get(&v) {
            v = next;
        }
        v
    }

    fn rewrite_operands(&self, body: &mut Body, op: Op) {
        if self.0.is_empty() {
            return;
        }
        for i in 0..body.ops[op].operands.len() {
            let v = self.resolve(body.ops[op].operands[i]);
            body.ops[op].operands[i] = v;
        }
    }

    fn apply(&self, body: &mut Body, region: Region) {
        if !self.0.is_empty() {
            for op in body.walk_region(region) {
                self.rewrite_operands(body, op);
            }
        }
    }
}

/// Rebuilds the op lists of the blocks holding the ops in `replaced`: an op
/// mapped to `Some(new)` is replaced by `new` in place, one mapped to
/// `None` is detached. One pass per block, however many ops change.
fn splice(body: &mut Body, replaced: &HashMap<Op, Option<Op>>) {
    let mut blocks: Vec<Block> = replaced.keys().filter_map(|&op| body.ops[op].parent).collect();
    blocks.sort_unstable_by_key(|b| b.index());
    blocks.dedup();
    for block in blocks {
        let old = std::mem::take(&mut body.blocks[block].ops);
        let mut ops = Vec::with_capacity(old.len());
        for op in old {
            match replaced.get(&op) {
                None => ops.push(op),
                Some(new) => {
                    body.ops[op].parent = None;
                    if let Some(new) = *new {
                        body.ops[new].parent = Some(block);
                        ops.push(new);
                    }
                }
            }
        }
        body.blocks[block].ops = ops;
    }
}

fn fold_all(body: &mut Body, region: Region) -> bool {
    let mut replacements = Replacements::default();
    let mut replaced: HashMap<Op, Option<Op>> = HashMap::new();
    for op in body.walk_region(region) {
        replacements.rewrite_operands(body, op);
        let Some(fold) = body.ops[op].def.fold else { continue };
        let consts: Vec<_> = body.ops[op].operands.iter().map(|&v| constant_of(body, v)).collect();
        let Some(folded) = fold(body, op, &consts) else { continue };
        let result = body.result(op, 0);
        let replacement = match folded {
            Folded::Value(v) => {
                replaced.insert(op, None);
                replacements.resolve(v)
            }
            Folded::Constant(value) => {
                let ty = body.value_type(result).clone();
                let mut attrs = Attributes::new();
                attrs.set("value", value);
                let loc = body.ops[op].loc.clone();
                let constant = body.create_op(Opcode::TileConstant.def(), vec![], &[ty], attrs, loc);
                replaced.insert(op, Some(constant));
                body.result(constant, 0)
            }
        };
        if replacement != result {
            replacements.0.insert(result, replacement);
        }
    }
    replacements.apply(body, region);
    splice(body, &replaced);
    !replaced.is_empty()
}

/// Moves every constant to the start of the function, in first-use order,
/// and replaces duplicates (same type and value) by the first. Constants
/// have no operands, so any position before their uses is valid.
fn hoist_and_merge_constants(body: &mut Body, region: Region) -> bool {
    let entry = body.entry_block(region);
    let constants: Vec<Op> = body.walk_region(region).into_iter().filter(|&o| body.ops[o].def.traits.constant).collect();
    // Candidates for a twin share the type and the printed attributes;
    // equality decides.
    let mut by_key: HashMap<(tilec_dialects::Type, String), Vec<Op>> = HashMap::new();
    let mut kept: Vec<Op> = Vec::new();
    let mut replacements = Replacements::default();
    let mut detached: HashMap<Op, Option<Op>> = HashMap::new();
    for op in constants {
        let result = body.result(op, 0);
        let key = (body.value_type(result).clone(), format!("{:?}", body.ops[op].attrs));
        let candidates = by_key.entry(key).or_default();
        match candidates.iter().copied().find(|&k| body.ops[k].attrs == body.ops[op].attrs) {
            Some(k) => {
                let kept_value = body.result(k, 0);
                if body.values[kept_value].name_hint.is_none() {
                    body.values[kept_value].name_hint = body.values[result].name_hint.clone();
                }
                replacements.0.insert(result, kept_value);
                detached.insert(op, None);
            }
            None => {
                candidates.push(op);
                kept.push(op);
            }
        }
    }
    let in_place = body.blocks[entry].ops.len() >= kept.len() && body.blocks[entry].ops[..kept.len()] == kept[..];
    if in_place && detached.is_empty() {
        return false;
    }
    replacements.apply(body, region);
    detached.extend(kept.iter().map(|&op| (op, None)));
    splice(body, &detached);
    for &op in &kept {
        body.ops[op].parent = Some(entry);
    }
    let rest = std::mem::take(&mut body.blocks[entry].ops);
    body.blocks[entry].ops = kept.into_iter().chain(rest).collect();
    true
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

/// A block-scaled dot whose offset into the first scale block folded to 0
/// (its tiles start a block: block N a multiple of 128) reads only the
/// blocks its rows cover: the offset goes, and the tile-level load of the
/// scales it alone reads narrows to ceil(N / 128) rows (one copy and one
/// read a K step instead of three).
fn narrow_scales_of_aligned_tiles(body: &mut Body, region: Region) -> bool {
    let mut changed = false;
    let uses = body.use_counts(region);
    for op in body.walk_region(region) {
        let Some(dot) = DotScaled::of(body, op) else { continue };
        let Some(offset) = dot.block_offset(body) else { continue };
        if constant_int(body, offset) != Some(0) {
            continue;
        }
        let scales = dot.block_scales(body);
        let loaded = body.defining_op(scales).is_some_and(|def| Load::of(body, def).is_some());
        let (Some(rows), Some(mut tile)) = (dot.block_scaled_rows(body), body.value_type(scales).as_tile().cloned()) else { continue };
        if !loaded || tile.layout.is_some() || uses[scales.index()] != 1 {
            continue;
        }
        tile.shape[0] = blocks_covering(rows);
        body.values[scales].ty = Type::Tile(tile);
        body.ops[op].operands.retain(|&v| v != offset);
        changed = true;
    }
    changed
}

/// Removes ops whose results are unused and whose removal changes nothing
/// else: pure ops, and ops with regions holding only pure ops and
/// terminators. A worklist: removing an op releases its operands' definers
/// and may make the op around it removable.
fn remove_dead_ops(body: &mut Body, region: Region) -> bool {
    let ops = body.walk_region(region);
    let mut uses = body.use_counts(region);
    let effectful = |body: &Body, op: Op| !body.ops[op].def.traits.pure && !body.ops[op].def.traits.terminator;
    // Ops nested (at any depth) in each op that are neither pure nor
    // terminators; pre-order reversed visits an op's contents before it.
    let mut impure = vec![0usize; body.ops.len()];
    for &op in ops.iter().rev() {
        if let Some(parent) = body.parent_op(op) {
            impure[parent.index()] += impure[op.index()] + usize::from(effectful(body, op));
        }
    }
    let is_dead = |body: &Body, impure: &[usize], uses: &[usize], op: Op| {
        let data = &body.ops[op];
        let removable = !data.def.traits.terminator && (data.def.traits.pure || (!data.regions.is_empty() && impure[op.index()] == 0));
        removable && data.results.iter().all(|r| uses[r.index()] == 0)
    };
    let mut worklist: Vec<Op> = ops.iter().copied().filter(|&op| is_dead(body, &impure, &uses, op)).collect();
    let mut removed: HashMap<Op, Option<Op>> = HashMap::new();
    while let Some(op) = worklist.pop() {
        if removed.contains_key(&op) || ancestors_in(body, op, &removed) || !is_dead(body, &impure, &uses, op) {
            continue;
        }
        // The op and what is nested in it, but not ops removed before (their
        // uses are already released).
        let mut going = vec![op];
        let mut stack = body.ops[op].regions.clone();
        while let Some(r) = stack.pop() {
            for &block in &body.regions[r].blocks {
                for &x in body.blocks[block].ops.iter().filter(|x| !removed.contains_key(x)) {
                    going.push(x);
                    stack.extend(body.ops[x].regions.iter().copied());
                }
            }
        }
        removed.insert(op, None);
        for &x in &going {
            for &v in &body.ops[x].operands {
                uses[v.index()] -= 1;
                if uses[v.index()] == 0 {
                    worklist.extend(body.defining_op(v));
                }
            }
        }
        let released = impure[op.index()] + usize::from(effectful(body, op));
        for a in body.ancestors(op) {
            impure[a.index()] -= released;
        }
        worklist.extend(body.parent_op(op));
    }
    // Ops nested in a removed op go with it.
    let outermost: HashMap<Op, Option<Op>> = removed.iter().filter(|&(&op, _)| !ancestors_in(body, op, &removed)).map(|(&op, &r)| (op, r)).collect();
    splice(body, &outermost);
    !outermost.is_empty()
}

/// Whether an op around `op` is in `set`.
fn ancestors_in(body: &Body, op: Op, set: &HashMap<Op, Option<Op>>) -> bool {
    body.ancestors(op).any(|a| set.contains_key(&a))
}
