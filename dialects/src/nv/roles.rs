//! Warp specialisation: warpgroups with different roles and register
//! budgets, handing pipeline stages over through mbarriers.

use super::{SmemRows, WarpSpecialize};
use crate::diagnostic::Diagnostic;
use crate::ir::{Body, Op, Type};
use crate::registry::ParsedOp;
use crate::syntax::{Parser, Printer, UnresolvedOperand};
use crate::tile::Yield;

/// Registers per thread `setmaxnreg` can set: multiples of 8 from 24 to 256.
pub fn valid_register_budget(regs: i64) -> bool {
    (24..=256).contains(&regs) && regs % 8 == 0
}

/// Registers of the SM's register file one CTA may use.
pub const REGISTER_FILE: i64 = 64 * 1024;

/// The registers each thread of a CTA of `threads` starts with: the
/// register file shared out, in whole allocation units of 8 (168 for 384
/// threads). `setmaxnreg` then moves registers between warpgroups of the
/// CTA, never beyond what it started with.
pub fn launch_registers(threads: i64) -> i64 {
    REGISTER_FILE / threads / 8 * 8
}

/// The most registers each of `consumers` consumer warpgroups can take
/// beside a producer warpgroup of `producer_regs`: what the CTA starts with
/// less the producer's, shared out in allocation units of 8, at most
/// `setmaxnreg`'s 256.
pub fn most_consumer_registers(producer_regs: i64, consumers: i64) -> i64 {
    let threads = 128 * (1 + consumers);
    let left = threads * launch_registers(threads) - 128 * producer_regs;
    (left / (128 * consumers) / 8 * 8).min(256)
}

/// The register budgets of a warp-specialised CTA that ptxas and the SM
/// accept: each a `setmaxnreg` value; the consumers' no smaller than the
/// producer's (setmaxnreg raises the consumers and lowers the producer from
/// one launch budget, and ptxas rejects the reverse with C7406); and all
/// warpgroups (128 threads each) within what the CTA starts with. Budgets
/// past that pass ptxas, but the consumers' `setmaxnreg.inc` then waits
/// forever for registers no warpgroup gave back (32 + 2 x 240 hangs:
/// 128 x 512 needs more than 384 x 168).
pub fn check_register_budgets(producer_regs: i64, consumer_regs: i64, consumers: i64) -> Result<(), String> {
    for (name, regs) in [("producer", producer_regs), ("consumer", consumer_regs)] {
        if !valid_register_budget(regs) {
            return Err(format!("the {name} budget of {regs} registers is not a multiple of 8 from 24 to 256"));
        }
    }
    if consumer_regs < producer_regs {
        return Err(format!("the consumer budget ({consumer_regs} registers) is below the producer's ({producer_regs}): ptxas rejects it"));
    }
    let threads = 128 * (1 + consumers);
    let total = 128 * (producer_regs + consumers * consumer_regs);
    let available = threads * launch_registers(threads);
    if total > available {
        return Err(format!(
            "the budgets need {total} registers (128 x ({producer_regs} + {consumers} x {consumer_regs})), more than the {available} the CTA's {threads} threads start with ({} each)",
            launch_registers(threads)
        ));
    }
    Ok(())
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
/// Custom syntax: the consumer region's argument is declared inline.
pub(super) fn parse_warp_specialize(p: &mut Parser<'_>) -> Result<ParsedOp, Diagnostic> {
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

pub(super) fn print_warp_specialize(p: &mut Printer<'_>, op: Op) {
    let Some(ws) = WarpSpecialize::of(p.body, op) else {
        p.write(" <<malformed>>");
        return;
    };
    let (attrs, producer, consumer) = (p.body.ops[op].attrs.clone(), ws.producer(p.body), ws.consumer(p.body));
    p.attr_dict(&attrs, &[]);
    p.write(" producer ");
    p.region(producer);
    let Some(&c) = p.body.blocks[p.body.entry_block(consumer)].args.first() else {
        p.write(" consumer <<malformed>>");
        return;
    };
    p.write(" consumer(");
    p.value(c);
    p.write(") ");
    p.region(consumer);
}

pub(super) fn verify_warp_specialize(body: &Body, op: Op) -> Result<(), String> {
    let ws = WarpSpecialize::of(body, op).ok_or("malformed 'nv.warp_specialize'")?;
    if !matches!(ws.consumers(body), 1 | 2) {
        return Err("'consumers' must be 1 or 2".into());
    }
    check_register_budgets(ws.producer_regs(body), ws.consumer_regs(body), ws.consumers(body))?;
    if ws.columns(body) && (ws.alternate(body) || ws.consumers(body) != 2) {
        return Err("'columns' takes two consumers that share each tile, not ones that take turns ('alternate')".into());
    }
    let (producer, consumer) = (ws.producer(body), ws.consumer(body));
    for (region, args, what) in [(producer, 0, "producer"), (consumer, 1, "consumer")] {
        let [block] = body.regions[region].blocks[..] else { return Err(format!("the {what} region must have one block")) };
        if body.blocks[block].args.len() != args {
            return Err(format!("the {what} region takes {args} argument(s)"));
        }
        match body.terminator(block) {
            Some(t) if Yield::of(body, t).is_some_and(|y| y.values(body).is_empty()) => {}
            _ => return Err(format!("the {what} region must end with a 'tile.yield' of no values")),
        }
    }
    Ok(())
}

/// `%half = nv.smem_rows %a_smem, %row : !nv.smem<4x128x64xbf16, #l> -> !nv.smem<4x64x64xbf16, #l>`:
/// the rows `[%row, %row + R)` of every stage of a buffer, as a buffer of R
/// rows. `%row` must be a multiple of 8 so swizzle patterns stay aligned.
pub(super) fn verify_smem_rows(body: &Body, op: Op) -> Result<(), String> {
    let rows = SmemRows::of(body, op).ok_or("malformed 'nv.smem_rows'")?;
    let (Some(from), Some(to)) = (body.value_type(rows.buffer(body)).as_smem(), body.value_type(rows.result(body)).as_smem()) else {
        return Err("takes and gives '!nv.smem' buffers".into());
    };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consumers_take_what_the_producer_leaves() {
        // 384 threads start with 168 registers each: 2 x 232 beside 40 (or
        // 32, 236 rounded down to 232); 256 threads start with 256.
        assert_eq!(most_consumer_registers(40, 2), 232);
        assert_eq!(most_consumer_registers(32, 2), 232);
        assert_eq!(most_consumer_registers(40, 1), 256);
        for (producer, consumers) in [(40, 2), (32, 2), (24, 2), (40, 1)] {
            assert_eq!(check_register_budgets(producer, most_consumer_registers(producer, consumers), consumers), Ok(()));
        }
        assert!(check_register_budgets(40, most_consumer_registers(40, 2) + 8, 2).is_err());
    }
}
