//! Structured control flow: the K loop with iteration arguments, its yield,
//! and the function's return.

use super::{For, If, Yield};
use crate::diagnostic::Diagnostic;
use crate::ir::{Body, Op, Type, Value, ValueData, ValueDef};
use crate::registry::{Opcode, ParsedOp};
use crate::syntax::{Parser, Printer};

impl For {
    /// Adds an iteration argument starting at `init` and taking `next` (a
    /// value visible at the end of the body) into the next iteration;
    /// returns the body's argument and the loop's new result.
    pub fn add_iter_arg(self, body: &mut Body, init: Value, next: Value, name: Option<String>) -> (Value, Value) {
        let ty = body.value_type(init).clone();
        let op = self.op();
        body.ops[op].operands.push(init);
        let index = body.ops[op].results.len();
        let result = body.values.push(ValueData { ty: ty.clone(), def: ValueDef::Result(op, index), name_hint: None });
        body.ops[op].results.push(result);
        let block = body.entry_block(self.region(body));
        let arg_index = body.blocks[block].args.len();
        let arg = body.values.push(ValueData { ty, def: ValueDef::BlockArg(block, arg_index), name_hint: name });
        body.blocks[block].args.push(arg);
        let terminator = body.terminator(block).expect("a verified loop ends with tile.yield");
        body.ops[terminator].operands.push(next);
        (arg, result)
    }
}

// `%r = tile.for %k = %lb to %ub step %s iter_args(%acc = %init) -> (T) { ... } {attrs}`:
// custom syntax because the region's arguments (the induction variable and
// one per iteration argument) are declared inline, next to the operands.
pub(super) fn parse_for(p: &mut Parser<'_>) -> Result<ParsedOp, Diagnostic> {
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

pub(super) fn print_for(p: &mut Printer<'_>, op: Op) {
    let Some(for_op) = For::of(p.body, op) else {
        p.write(" <<malformed>>");
        return;
    };
    let (attrs, region, results) = (p.body.ops[op].attrs.clone(), for_op.region(p.body), for_op.results(p.body).to_vec());
    let inits = for_op.inits(p.body).to_vec();
    let args = p.body.blocks[p.body.entry_block(region)].args.clone();
    p.write(" ");
    p.value(args[0]);
    p.write(" = ");
    p.value(for_op.lower_bound(p.body));
    p.write(" to ");
    p.value(for_op.upper_bound(p.body));
    p.write(" step ");
    p.value(for_op.step(p.body));
    if !results.is_empty() {
        p.write(" iter_args(");
        for (i, (&arg, &init)) in args[1..].iter().zip(&inits).enumerate() {
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

impl For {
    /// Removes iteration argument `i`: its initial value, result, region
    /// argument and yielded value. Their uses must be replaced first.
    pub fn remove_iter_arg(self, body: &mut Body, i: usize) {
        let first_init = body.ops[self.op()].operands.len() - self.inits(body).len();
        body.ops[self.op()].operands.remove(first_init + i);
        body.ops[self.op()].results.remove(i);
        let block = body.entry_block(self.region(body));
        if let Some(term) = body.terminator(block) {
            body.ops[term].operands.remove(i);
        }
        body.blocks[block].args.remove(1 + i);
    }
}

/// One iteration argument per result, each with one type for its initial
/// value, region argument, yielded value and result.
pub(super) fn verify_for(body: &Body, op: Op) -> Result<(), String> {
    let data = &body.ops[op];
    let for_op = For::of(body, op).ok_or("malformed 'tile.for'")?;
    let inits = for_op.inits(body);
    if inits.len() != data.results.len() {
        return Err(format!("has {} initial value(s) but {} result(s)", inits.len(), data.results.len()));
    }
    let region = for_op.region(body);
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
    let Some(term) = body.terminator(block).filter(|&t| body.opcode(t) == Opcode::TileYield) else {
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

/// `tile.if`'s region takes no arguments and yields nothing.
pub(super) fn verify_if(body: &Body, op: Op) -> Result<(), String> {
    let region = If::of(body, op).ok_or("malformed 'tile.if'")?.region(body);
    let [block] = body.regions[region].blocks[..] else { return Err("region must have exactly one block".into()) };
    if !body.blocks[block].args.is_empty() {
        return Err("region takes no arguments".into());
    }
    match body.terminator(block) {
        Some(t) if Yield::of(body, t).is_some_and(|y| y.values(body).is_empty()) => Ok(()),
        _ => Err("region must end with a 'tile.yield' of no values".into()),
    }
}

pub(super) fn verify_yield(body: &Body, op: Op) -> Result<(), String> {
    let parent = body.parent_op(op);
    if !matches!(parent.map(|o| body.opcode(o)), Some(Opcode::TileFor | Opcode::TileIf | Opcode::NvWarpSpecialize)) {
        return Err("must be nested in 'tile.for', 'tile.if' or 'nv.warp_specialize'".into());
    }
    Ok(())
}

pub(super) fn verify_return(body: &Body, op: Op) -> Result<(), String> {
    if body.parent_op(op).is_some() {
        return Err("must be in the function body, not nested in another op".into());
    }
    Ok(())
}

