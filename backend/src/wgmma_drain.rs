//! A peephole on the emitted PTX: every `wgmma.wait_group.sync.aligned 0`
//! moves up to the start of its straight-line run of ordinary instructions,
//! and where that run starts at a label the block before falls into, a copy
//! of the wait also goes to the start of that block's run (branches to the
//! label still find the original).
//!
//! Why: ptxas serialises every wgmma of a kernel (warning C7514, each HGMMA
//! followed by `WARPGROUP.DEPBAR.LE gsb0, 0x0`) when any non-wgmma
//! instruction sits between a loop's exit, with a wgmma group still in
//! flight, and the wait that drains it. LLVM's scheduler freely places
//! independent integer work (epilogue addresses, stage arithmetic) there.
//! Editing the PTX of one kernel showed that moving the wait first removes
//! the warning, and that waiting earlier is always correct: a wait orders
//! nothing but wgmma completion, so it may move above instructions that are
//! not wgmma ops, labels, branches or inline-asm blocks.

/// The drain wait as LLVM's NVPTX back end prints it, whitespace aside.
fn is_drain(line: &str) -> bool {
    let mut words = line.split_whitespace();
    words.next() == Some("wgmma.wait_group.sync.aligned") && words.next() == Some("0;") && words.next().is_none()
}

/// An instruction the drain may move above: a plain PTX statement, not a
/// label, branch, directive, comment, inline-asm brace or wgmma op; or a
/// `.loc` line-table directive, which only says where the next instruction
/// came from.
fn is_movable(line: &str) -> bool {
    let t = line.trim();
    if t.starts_with(".loc") {
        return true;
    }
    !t.is_empty()
        && t.ends_with(';')
        && t.starts_with(|c: char| c.is_ascii_alphabetic() || c == '@')
        && !t.contains("wgmma")
        && !t.contains("bra")
        && !t.contains("ret")
        && !t.contains("bar.")
        && !t.contains("mbarrier")
        && !t.contains("setmaxnreg")
}

/// A label line, `$L__BB0_12:`.
fn is_label(line: &str) -> bool {
    let t = line.trim();
    t.ends_with(':') && !t.contains(' ')
}

/// A line after which control never falls through to the next one.
fn ends_flow(line: &str) -> bool {
    let t = line.trim();
    t.starts_with("bra") || t.starts_with("ret") || t.starts_with("exit")
}

/// The index the run of movable lines ending before `at` starts at.
fn run_start(lines: &[&str], mut at: usize) -> usize {
    while at > 0 && is_movable(lines[at - 1]) {
        at -= 1;
    }
    at
}

pub fn hoist_drain_waits(ptx: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for line in ptx.lines() {
        if !is_drain(line) {
            out.push(line);
            continue;
        }
        let mut at = run_start(&out, out.len());
        out.insert(at, line);
        // The run starts at a label the block before falls into: that block
        // waits too, before its own run, and so on up a chain of such blocks.
        // Each copy lands strictly higher, so this ends.
        while at >= 2 && is_label(out[at - 1]) && !ends_flow(out[at - 2]) && !is_drain(out[at - 2]) {
            at = run_start(&out, at - 1);
            out.insert(at, line);
        }
    }
    let mut text = out.join("\n");
    if ptx.ends_with('\n') {
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_drain_moves_to_the_start_of_its_block() {
        let ptx = "$L__BB0_19:\n\tadd.s32 \t%r14, %r146, %r140;\n\tmul.lo.s32 \t%r2, %r3, 3;\n\twgmma.wait_group.sync.aligned \t0;\n\tcvt.rn.bf16.f32 \t%rs1, %r139;\n";
        let want = "$L__BB0_19:\n\twgmma.wait_group.sync.aligned \t0;\n\tadd.s32 \t%r14, %r146, %r140;\n\tmul.lo.s32 \t%r2, %r3, 3;\n\tcvt.rn.bf16.f32 \t%rs1, %r139;\n";
        assert_eq!(hoist_drain_waits(ptx), want);
    }

    #[test]
    fn the_drain_stays_below_wgmma_ops_branches_and_asm() {
        for fence in ["\twgmma.commit_group.sync.aligned;", "\t@%p1 bra \t$L__BB0_2;", "\t// end inline asm", "\tbar.sync \t0;"] {
            let ptx = format!("{fence}\n\tadd.s32 \t%r1, %r2, 1;\n\twgmma.wait_group.sync.aligned \t0;\n");
            let want = format!("{fence}\n\twgmma.wait_group.sync.aligned \t0;\n\tadd.s32 \t%r1, %r2, 1;\n");
            assert_eq!(hoist_drain_waits(&ptx), want, "after {fence:?}");
        }
    }

    #[test]
    fn a_block_falling_into_the_drain_waits_first_too() {
        let ptx = "\tbra.uni \t$L__BB0_11;\n$L__BB0_397:\n\tand.b32 \t%r266, %r131, 48;\n$L__BB0_12:\n\twgmma.wait_group.sync.aligned \t0;\n\tcvt.rn.bf16.f32 \t%rs1, %r201;\n";
        let want = "\tbra.uni \t$L__BB0_11;\n$L__BB0_397:\n\twgmma.wait_group.sync.aligned \t0;\n\tand.b32 \t%r266, %r131, 48;\n$L__BB0_12:\n\twgmma.wait_group.sync.aligned \t0;\n\tcvt.rn.bf16.f32 \t%rs1, %r201;\n";
        assert_eq!(hoist_drain_waits(ptx), want);
        // A block that branches away does not fall into the label.
        let branching = "\tbra.uni \t$L__BB0_11;\n$L__BB0_12:\n\twgmma.wait_group.sync.aligned \t0;\n";
        assert_eq!(hoist_drain_waits(branching), branching);
    }

    #[test]
    fn line_directives_do_not_stop_the_drain() {
        let ptx = "$L__BB0_19:\n\t.loc\t2 16 11\n\tadd.s32 \t%r14, %r146, %r140;\n\t.loc\t2 24 3\n\twgmma.wait_group.sync.aligned \t0;\n";
        let want = "$L__BB0_19:\n\twgmma.wait_group.sync.aligned \t0;\n\t.loc\t2 16 11\n\tadd.s32 \t%r14, %r146, %r140;\n\t.loc\t2 24 3\n";
        assert_eq!(hoist_drain_waits(ptx), want);
    }

    #[test]
    fn waits_leaving_groups_in_flight_stay() {
        let ptx = "\tadd.s32 \t%r1, %r2, 1;\n\twgmma.wait_group.sync.aligned \t1;\n";
        assert_eq!(hoist_drain_waits(ptx), ptx);
    }
}
