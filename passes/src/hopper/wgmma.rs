//! wgmma emission, for every pass that turns a `tile.dot` on staged tiles
//! into Hopper's asynchronous warpgroup MMA: how the dot reads A, the
//! fence / wgmma / commit / wait sequence, how many groups a loop may leave
//! in flight, and the drain after the loop.

use tilec_dialects::ir::{Attribute, Attributes, Body, Builder, ElemType, InsertPoint, Op, Region, Type, Value};

/// How a dot reads A: `staged` is the loaded tile (what the buffers are
/// keyed by), and `to_registers` the `tile.convert_layout` of it to a
/// dot-operand layout when the dot takes A in registers.
pub struct DotA {
    pub staged: Value,
    pub to_registers: Option<Op>,
}

pub fn dot_a(body: &Body, dot: Op) -> DotA {
    let a = body.ops[dot].operands[0];
    match body.defining_op(a) {
        Some(c) if body.ops[c].def.name == "tile.convert_layout" => DotA { staged: body.ops[c].operands[0], to_registers: Some(c) },
        _ => DotA { staged: a, to_registers: None },
    }
}

/// The wgmma groups a loop may leave in flight past `dot`, at most `wanted`.
/// With A in registers none may: the next iteration's ldmatrix rewrites
/// registers an in-flight wgmma still reads (undefined in PTX; on the GPU a
/// 1.4e-2 error in a warp-specialised kernel, and ptxas C7514 in a
/// pipelined one).
pub fn groups_in_flight(body: &Body, dot: Op, wanted: i64) -> i64 {
    if dot_a(body, dot).to_registers.is_some() {
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
pub fn emit_wgmma(b: &mut Builder<'_>, dot: Op, a: [Value; 2], bb: [Value; 2], pending: i64) -> Value {
    let acc = b.body.ops[dot].operands[2];
    let acc_ty = b.body.value_type(acc).clone();
    let attrs = b.body.ops[dot].attrs.clone();
    let mut wgmma_operands = match dot_a(b.body, dot).to_registers {
        Some(convert) => {
            let converted = b.body.result(convert, 0);
            let ty = b.body.value_type(converted).clone();
            let regs = b.value("nv.load_fragment", a.to_vec(), ty, Attributes::new());
            let hint = b.body.values[converted].name_hint.clone().unwrap_or_else(|| "a".into());
            vec![b.name(regs, &format!("{hint}_regs"))]
        }
        None => a.to_vec(),
    };
    b.op("nv.wgmma_fence", vec![], &[], Attributes::new());
    wgmma_operands.extend(bb);
    wgmma_operands.push(acc);
    let d = b.value("nv.wgmma", wgmma_operands, acc_ty.clone(), attrs);
    b.op("nv.wgmma_commit", vec![], &[], Attributes::new());
    let mut wait_attrs = Attributes::new();
    wait_attrs.set("pending", Attribute::Int(pending, ElemType::I64));
    b.value("nv.wgmma_wait", vec![d], acc_ty, wait_attrs)
}

/// Replaces `dot`'s result by `done` (under the dot's name) and removes the
/// dot, and the conversion of A to registers it read.
pub fn replace_dot(body: &mut Body, region: Region, dot: Op, done: Value) {
    let result = body.result(dot, 0);
    let to_registers = dot_a(body, dot).to_registers;
    body.values[done].name_hint = body.values[result].name_hint.clone();
    body.replace_all_uses(region, result, done);
    body.remove_op(dot);
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
    let types: Vec<Type> = results.iter().map(|&r| body.value_type(r).clone()).collect();
    let mut b = Builder::new(body, InsertPoint::Before(after), body.ops[for_op].loc.clone());
    let mut attrs = Attributes::new();
    attrs.set("pending", Attribute::Int(0, ElemType::I64));
    let drain = b.op("nv.wgmma_wait", results.clone(), &types, attrs);
    for (i, &r) in results.iter().enumerate() {
        let drained = body.result(drain, i);
        body.values[drained].name_hint = body.values[r].name_hint.take();
        body.replace_all_uses(region, r, drained);
        body.ops[drain].operands[i] = r;
    }
    after
}

/// The op after `op` in its block.
fn next_op(body: &Body, op: Op) -> Op {
    let block = body.ops[op].parent.expect("attached");
    let ops = &body.blocks[block].ops;
    ops[ops.iter().position(|&o| o == op).expect("in its block") + 1]
}
