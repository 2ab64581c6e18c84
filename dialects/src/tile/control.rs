//! Structured control flow: the K loop with iteration arguments, its yield,
//! and the function's return.

use super::arith::expect_counts;
use crate::diagnostic::Diagnostic;
use crate::ir::{Body, Op, Type};
use crate::registry::{OpDef, OpTraits, ParsedOp};
use crate::syntax::{Parser, Printer};

/// `%r = tile.for %k = %lb to %ub step %s iter_args(%acc = %init) -> (T) { ... } {attrs}`
///
/// Operands are `lb, ub, step, inits...`; the body's arguments are the
/// induction variable and one value per iteration argument.
pub const FOR: OpDef =
    OpDef { name: "tile.for", traits: OpTraits::NONE, parse: parse_for, print: print_for, verify: verify_for, fold: None };

fn parse_for(p: &mut Parser<'_>) -> Result<ParsedOp, Diagnostic> {
    let iv = p.parse_operand()?;
    p.expect("=")?;
    let lb = p.parse_operand()?;
    p.expect_keyword("to")?;
    let ub = p.parse_operand()?;
    p.expect_keyword("step")?;
    let step = p.parse_operand()?;
    let mut operands = vec![p.resolve(&lb, &Type::INDEX)?, p.resolve(&ub, &Type::INDEX)?, p.resolve(&step, &Type::INDEX)?];
    let mut region_args = vec![(iv, Type::INDEX)];
    let mut result_types = Vec::new();
    if p.consume_keyword("iter_args")? {
        let pairs = p.parse_delimited("(", ")", |p| {
            let arg = p.parse_operand()?;
            p.expect("=")?;
            Ok((arg, p.parse_operand()?))
        })?;
        p.expect("->")?;
        result_types = p.parse_delimited("(", ")", Parser::parse_type)?;
        if pairs.len() != result_types.len() {
            return p.error(format!(
                "'tile.for' has {} iteration argument(s) but {} result type(s)",
                pairs.len(),
                result_types.len()
            ));
        }
        for ((arg, init), ty) in pairs.into_iter().zip(&result_types) {
            operands.push(p.resolve(&init, ty)?);
            region_args.push((arg, ty.clone()));
        }
    }
    let region = p.parse_region(&region_args)?;
    let attrs = p.parse_optional_attr_dict()?;
    Ok(ParsedOp { operands, result_types, attrs, regions: vec![region] })
}

fn print_for(p: &mut Printer<'_>, op: Op) {
    let data = &p.body.ops[op];
    let (operands, attrs, region, results) = (data.operands.clone(), data.attrs.clone(), data.regions[0], data.results.clone());
    let args = p.body.blocks[p.body.entry_block(region)].args.clone();
    p.write(" ");
    p.value(args[0]);
    p.write(" = ");
    p.value(operands[0]);
    p.write(" to ");
    p.value(operands[1]);
    p.write(" step ");
    p.value(operands[2]);
    if !results.is_empty() {
        p.write(" iter_args(");
        for (i, (&arg, &init)) in args[1..].iter().zip(&operands[3..]).enumerate() {
            if i > 0 {
                p.write(", ");
            }
            p.value(arg);
            p.write(" = ");
            p.value(init);
        }
        p.write(") -> (");
        for (i, &r) in results.iter().enumerate() {
            if i > 0 {
                p.write(", ");
            }
            p.value_type(r);
        }
        p.write(")");
    }
    p.write(" ");
    p.region(region);
    p.attr_dict(&attrs, &[]);
}

fn verify_for(body: &Body, op: Op) -> Result<(), String> {
    let data = &body.ops[op];
    if data.operands.len() < 3 {
        return Err("expects lower bound, upper bound and step operands".into());
    }
    for (i, what) in ["lower bound", "upper bound", "step"].iter().enumerate() {
        if !body.value_type(data.operands[i]).is_index() {
            return Err(format!("{what} must be 'index'"));
        }
    }
    let inits = &data.operands[3..];
    if inits.len() != data.results.len() {
        return Err(format!("has {} initial value(s) but {} result(s)", inits.len(), data.results.len()));
    }
    let [region] = data.regions[..] else {
        return Err("expects one region".into());
    };
    let [block] = body.regions[region].blocks[..] else {
        return Err("region must have exactly one block".into());
    };
    let args = &body.blocks[block].args;
    if args.len() != 1 + inits.len() {
        return Err(format!("region takes {} argument(s), expected the induction variable and {}", args.len(), inits.len()));
    }
    if !body.value_type(args[0]).is_index() {
        return Err("induction variable must be 'index'".into());
    }
    for (i, (&init, &result)) in inits.iter().zip(&data.results).enumerate() {
        let ty = body.value_type(result);
        if body.value_type(init) != ty || body.value_type(args[i + 1]) != ty {
            return Err(format!("iteration argument #{i} has different types for its initial value, region argument and result"));
        }
    }
    let Some(term) = body.terminator(block).filter(|&t| body.ops[t].def.name == YIELD.name) else {
        return Err("region must end with 'tile.yield'".into());
    };
    let yielded = &body.ops[term].operands;
    if yielded.len() != data.results.len() {
        return Err(format!("region yields {} value(s) but the loop has {} result(s)", yielded.len(), data.results.len()));
    }
    for (i, (&y, &r)) in yielded.iter().zip(&data.results).enumerate() {
        if body.value_type(y) != body.value_type(r) {
            return Err(format!("yielded value #{i} does not have the type of result #{i}"));
        }
    }
    Ok(())
}

/// `tile.if %cond { ... tile.yield }`: runs its region when `%cond` (an `i1`)
/// is true. It has no results.
pub const IF: OpDef = OpDef { name: "tile.if", traits: OpTraits::NONE, parse: parse_if, print: print_if, verify: verify_if, fold: None };

fn parse_if(p: &mut Parser<'_>) -> Result<ParsedOp, Diagnostic> {
    let cond = p.parse_operand()?;
    let cond = p.resolve(&cond, &Type::Scalar(crate::ir::ElemType::I1))?;
    let region = p.parse_region(&[])?;
    let attrs = p.parse_optional_attr_dict()?;
    Ok(ParsedOp { operands: vec![cond], result_types: vec![], attrs, regions: vec![region] })
}

fn print_if(p: &mut Printer<'_>, op: Op) {
    let data = &p.body.ops[op];
    let (cond, attrs, region) = (data.operands[0], data.attrs.clone(), data.regions[0]);
    p.write(" ");
    p.value(cond);
    p.write(" ");
    p.region(region);
    p.attr_dict(&attrs, &[]);
}

fn verify_if(body: &Body, op: Op) -> Result<(), String> {
    expect_counts(body, op, 1, 0)?;
    let data = &body.ops[op];
    if *body.value_type(data.operands[0]) != Type::Scalar(crate::ir::ElemType::I1) {
        return Err("condition must be 'i1'".into());
    }
    let [region] = data.regions[..] else { return Err("expects one region".into()) };
    let [block] = body.regions[region].blocks[..] else { return Err("region must have exactly one block".into()) };
    if !body.blocks[block].args.is_empty() {
        return Err("region takes no arguments".into());
    }
    match body.terminator(block) {
        Some(t) if body.ops[t].def.name == YIELD.name && body.ops[t].operands.is_empty() => Ok(()),
        _ => Err("region must end with a 'tile.yield' of no values".into()),
    }
}

/// `tile.yield %a, %b : T, U` (or bare `tile.yield`)
pub const YIELD: OpDef = OpDef {
    name: "tile.yield",
    traits: OpTraits::TERMINATOR,
    parse: parse_yield,
    print: print_yield,
    verify: verify_yield,
    fold: None,
};

fn parse_yield(p: &mut Parser<'_>) -> Result<ParsedOp, Diagnostic> {
    let values = p.parse_operand_list()?;
    let attrs = p.parse_optional_attr_dict()?;
    let types = if values.is_empty() {
        Vec::new()
    } else {
        p.expect(":")?;
        p.parse_type_list()?
    };
    Ok(ParsedOp { operands: p.resolve_all(&values, &types)?, result_types: vec![], attrs, regions: vec![] })
}

fn print_yield(p: &mut Printer<'_>, op: Op) {
    let data = &p.body.ops[op];
    let (operands, attrs) = (data.operands.clone(), data.attrs.clone());
    if !operands.is_empty() {
        p.write(" ");
        p.values(&operands);
    }
    p.attr_dict(&attrs, &[]);
    if !operands.is_empty() {
        p.write(" : ");
        let types: Vec<Type> = operands.iter().map(|&v| p.body.value_type(v).clone()).collect();
        p.types(&types.iter().collect::<Vec<_>>());
    }
}

fn verify_yield(body: &Body, op: Op) -> Result<(), String> {
    let parent = parent_op(body, op);
    if !matches!(parent.map(|o| body.ops[o].def.name), Some("tile.for" | "tile.if" | "nv.warp_specialize")) {
        return Err("must be nested in 'tile.for', 'tile.if' or 'nv.warp_specialize'".into());
    }
    Ok(())
}

/// `tile.return`
pub const RETURN: OpDef = OpDef {
    name: "tile.return",
    traits: OpTraits::TERMINATOR,
    parse: parse_return,
    print: print_return,
    verify: verify_return,
    fold: None,
};

fn parse_return(p: &mut Parser<'_>) -> Result<ParsedOp, Diagnostic> {
    let attrs = p.parse_optional_attr_dict()?;
    Ok(ParsedOp { operands: vec![], result_types: vec![], attrs, regions: vec![] })
}

fn print_return(p: &mut Printer<'_>, op: Op) {
    let attrs = p.body.ops[op].attrs.clone();
    p.attr_dict(&attrs, &[]);
}

fn verify_return(body: &Body, op: Op) -> Result<(), String> {
    expect_counts(body, op, 0, 0)?;
    if parent_op(body, op).is_some() {
        return Err("must be in the function body, not nested in another op".into());
    }
    Ok(())
}

/// The op whose region holds `op`, or `None` at function level.
fn parent_op(body: &Body, op: Op) -> Option<Op> {
    let block = body.ops[op].parent?;
    let region = body.blocks[block].parent?;
    body.regions[region].parent
}
