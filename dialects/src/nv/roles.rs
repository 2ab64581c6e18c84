//! Warp specialisation: warpgroups with different roles and register
//! budgets, handing pipeline stages over through mbarriers.

use super::memory::{check_index, parse_indexed, print_indexed, resolve_indices};
use crate::diagnostic::Diagnostic;
use crate::ir::{Body, Op, Type};
use crate::registry::{OpDef, OpTraits, ParsedOp};
use crate::syntax::{Parser, Printer, UnresolvedOperand};
use crate::tile::arith::expect_counts;

/// Registers per thread `setmaxnreg` can set: multiples of 8 from 24 to 256.
pub fn valid_register_budget(regs: i64) -> bool {
    (24..=256).contains(&regs) && regs % 8 == 0
}

/// ```text
/// nv.warp_specialize {consumers = 2, producer_regs = 40, consumer_regs = 232} producer {
///   ...
///   tile.yield
/// } consumer(%c) {
///   ...
///   tile.yield
/// }
/// ```
///
/// The CTA runs `1 + consumers` warpgroups. Warpgroup 0 lowers its register
/// budget to `producer_regs` and runs the producer region; warpgroup `c + 1`
/// raises its budget to `consumer_regs` and runs the consumer region with
/// `%c` = c. Elected ops inside the producer are issued by its first thread.
pub const WARP_SPECIALIZE: OpDef = OpDef {
    name: "nv.warp_specialize",
    traits: OpTraits::NONE,
    parse: parse_warp_specialize,
    print: print_warp_specialize,
    verify: verify_warp_specialize,
    fold: None,
};

fn parse_warp_specialize(p: &mut Parser<'_>) -> Result<ParsedOp, Diagnostic> {
    let attrs = p.parse_optional_attr_dict()?;
    p.expect_keyword("producer")?;
    let producer = p.parse_region(&[])?;
    p.expect_keyword("consumer")?;
    p.expect("(")?;
    let c: UnresolvedOperand = p.parse_operand()?;
    p.expect(")")?;
    let consumer = p.parse_region(&[(c, Type::INDEX)])?;
    Ok(ParsedOp { operands: vec![], result_types: vec![], attrs, regions: vec![producer, consumer] })
}

fn print_warp_specialize(p: &mut Printer<'_>, op: Op) {
    let data = &p.body.ops[op];
    let (attrs, regions) = (data.attrs.clone(), data.regions.clone());
    p.attr_dict(&attrs, &[]);
    p.write(" producer ");
    p.region(regions[0]);
    let c = p.body.blocks[p.body.entry_block(regions[1])].args[0];
    p.write(" consumer(");
    p.value(c);
    p.write(") ");
    p.region(regions[1]);
}

fn verify_warp_specialize(body: &Body, op: Op) -> Result<(), String> {
    expect_counts(body, op, 0, 0)?;
    let data = &body.ops[op];
    match data.attrs.get_int("consumers") {
        Some(1 | 2) => {}
        _ => return Err("'consumers' must be 1 or 2".into()),
    }
    for name in ["producer_regs", "consumer_regs"] {
        match data.attrs.get_int(name) {
            Some(r) if valid_register_budget(r) => {}
            _ => return Err(format!("'{name}' must be a multiple of 8 from 24 to 256")),
        }
    }
    let [producer, consumer] = data.regions[..] else { return Err("expects a producer and a consumer region".into()) };
    for (region, args, what) in [(producer, 0, "producer"), (consumer, 1, "consumer")] {
        let [block] = body.regions[region].blocks[..] else { return Err(format!("the {what} region must have one block")) };
        if body.blocks[block].args.len() != args {
            return Err(format!("the {what} region takes {args} argument(s)"));
        }
        match body.terminator(block) {
            Some(t) if body.ops[t].def.name == "tile.yield" && body.ops[t].operands.is_empty() => {}
            _ => return Err(format!("the {what} region must end with a 'tile.yield' of no values")),
        }
    }
    Ok(())
}

/// `nv.mbarrier_arrive %empty[%s] : !nv.mbarrier<4>`: every executing thread
/// arrives once on the barrier of stage `%s`.
pub const MBARRIER_ARRIVE: OpDef = OpDef {
    name: "nv.mbarrier_arrive",
    traits: OpTraits::NONE,
    parse: parse_arrive,
    print: print_arrive,
    verify: verify_arrive,
    fold: None,
};

fn parse_arrive(p: &mut Parser<'_>) -> Result<ParsedOp, Diagnostic> {
    let (bar, idx) = parse_indexed(p)?;
    let attrs = p.parse_optional_attr_dict()?;
    p.expect(":")?;
    let ty = p.parse_type()?;
    let mut operands = vec![p.resolve(&bar, &ty)?];
    operands.extend(resolve_indices(p, &idx)?);
    Ok(ParsedOp { operands, result_types: vec![], attrs, regions: vec![] })
}

fn print_arrive(p: &mut Printer<'_>, op: Op) {
    let data = &p.body.ops[op];
    let (ops, attrs) = (data.operands.clone(), data.attrs.clone());
    p.write(" ");
    print_indexed(p, ops[0], &ops[1..]);
    p.attr_dict(&attrs, &[]);
    p.write(" : ");
    p.value_type(ops[0]);
}

fn verify_arrive(body: &Body, op: Op) -> Result<(), String> {
    expect_counts(body, op, 2, 0)?;
    let ops = &body.ops[op].operands;
    if !matches!(body.value_type(ops[0]), Type::MBarrier(_)) {
        return Err("barrier operand must be '!nv.mbarrier'".into());
    }
    check_index(body, ops[1], "the stage")
}

/// `%half = nv.smem_rows %a_smem, %row : !nv.smem<4x128x64xbf16, #l> -> !nv.smem<4x64x64xbf16, #l>`:
/// the rows `[%row, %row + R)` of every stage of a buffer, as a buffer of R
/// rows. `%row` must be a multiple of 8 so swizzle patterns stay aligned.
pub const SMEM_ROWS: OpDef = OpDef {
    name: "nv.smem_rows",
    traits: OpTraits::PURE,
    parse: parse_smem_rows,
    print: print_smem_rows,
    verify: verify_smem_rows,
    fold: None,
};

fn parse_smem_rows(p: &mut Parser<'_>) -> Result<ParsedOp, Diagnostic> {
    let buf = p.parse_operand()?;
    p.expect(",")?;
    let row = p.parse_operand()?;
    let attrs = p.parse_optional_attr_dict()?;
    p.expect(":")?;
    let from = p.parse_type()?;
    p.expect("->")?;
    let to = p.parse_type()?;
    let operands = vec![p.resolve(&buf, &from)?, p.resolve(&row, &Type::INDEX)?];
    Ok(ParsedOp { operands, result_types: vec![to], attrs, regions: vec![] })
}

fn print_smem_rows(p: &mut Printer<'_>, op: Op) {
    let data = &p.body.ops[op];
    let (ops, attrs, result) = (data.operands.clone(), data.attrs.clone(), data.results[0]);
    p.write(" ");
    p.values(&ops);
    p.attr_dict(&attrs, &[]);
    p.write(" : ");
    p.value_type(ops[0]);
    p.write(" -> ");
    p.value_type(result);
}

fn verify_smem_rows(body: &Body, op: Op) -> Result<(), String> {
    expect_counts(body, op, 2, 1)?;
    let data = &body.ops[op];
    let (Some(from), Some(to)) = (body.value_type(data.operands[0]).as_smem(), body.value_type(data.results[0]).as_smem()) else {
        return Err("takes and gives '!nv.smem' buffers".into());
    };
    check_index(body, data.operands[1], "the first row")?;
    let same_rest = from.stages == to.stages
        && from.tile.elem == to.tile.elem
        && from.tile.layout == to.tile.layout
        && from.tile.shape.len() == 2
        && to.tile.shape.len() == 2
        && from.tile.shape[1] == to.tile.shape[1];
    if !same_rest || to.tile.shape[0] > from.tile.shape[0] || to.tile.shape[0] % 8 != 0 {
        return Err("the result must be a multiple of 8 of the buffer's rows, with its stages, columns, element type and layout".into());
    }
    Ok(())
}

