//! A peephole on the emitted PTX: every `wgmma.wait_group.sync.aligned 0`
//! moves up to the start of its straight-line run of ordinary instructions.
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
/// label, branch, directive, comment, inline-asm brace or wgmma op.
fn is_movable(line: &str) -> bool {
    let t = line.trim();
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

pub fn hoist_drain_waits(ptx: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for line in ptx.lines() {
        if is_drain(line) {
            let mut at = out.len();
            while at > 0 && is_movable(out[at - 1]) {
                at -= 1;
            }
            out.insert(at, line);
        } else {
            out.push(line);
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
    fn waits_leaving_groups_in_flight_stay() {
        let ptx = "\tadd.s32 \t%r1, %r2, 1;\n\twgmma.wait_group.sync.aligned \t1;\n";
        assert_eq!(hoist_drain_waits(ptx), ptx);
    }
}
