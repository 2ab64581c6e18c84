//! The forms the IR goes through on its way from tile IR to nv IR, as
//! rustc's `MirPhase`: each pass declares the phases it accepts and the
//! phase it leaves, and the pass manager checks a whole pipeline against
//! them before it runs anything.

use std::fmt;
use std::ops::RangeInclusive;
use tilec_dialects::ir::{Body, Op};
use tilec_dialects::registry::Opcode;
use tilec_dialects::Function;

/// The IR's form, in the order the passes move it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// Tile IR whose block sizes are still parameters (`tensor<BLOCK_Mx..>`,
    /// `tile.param`): only passes that do not read tile sizes run on it.
    Parametric,
    /// Tile IR as written (or bound by `tile-select-config`): tiles have no
    /// layouts yet.
    Tile,
    /// Tile IR whose tiles have layouts (`tile-assign-layouts`).
    TileLayouts,
    /// Tile IR whose K loops have a schedule, pipelined or warp-specialised:
    /// their barrier phases are counted from the kernel's start.
    TileScheduled,
    /// nv IR: nothing tile-level is left to lower.
    Nv,
}

impl Phase {
    /// Every phase, in order.
    pub const ALL: [Phase; 5] = [Phase::Parametric, Phase::Tile, Phase::TileLayouts, Phase::TileScheduled, Phase::Nv];

    /// The phase `func` is in, read from the IR: a parameter left in a type
    /// or as `tile.param` is parametric tile IR; nv ops and no tile load,
    /// dot or store left is nv IR; nv ops beside tile ones are a scheduled
    /// loop; a tile with a layout is tile IR with layouts.
    pub fn of(func: &Function) -> Phase {
        let body = &func.body;
        let ops = body.walk_region(func.region);
        if has_unbound_parameters(func) {
            return Phase::Parametric;
        }
        let has_nv = ops.iter().any(|&op| tilec_dialects::nv::OPS.iter().any(|def| def.opcode == body.opcode(op)));
        let has_unlowered = ops.iter().any(|&op| is_lowered_by_lower_to_nv(body, op));
        match (has_nv, has_unlowered) {
            (true, false) => Phase::Nv,
            (true, true) => Phase::TileScheduled,
            (false, _) if ops.iter().any(|&op| has_layout(body, op)) => Phase::TileLayouts,
            (false, _) => Phase::Tile,
        }
    }

    /// How a phase is written in diagnostics and docs.
    pub fn describe(self) -> &'static str {
        match self {
            Phase::Parametric => "tile IR with unbound block-size parameters",
            Phase::Tile => "tile IR",
            Phase::TileLayouts => "tile IR with layouts",
            Phase::TileScheduled => "tile IR with a scheduled (pipelined or warp-specialised) K loop",
            Phase::Nv => "nv IR",
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

/// The ops `tile-lower-to-nv` turns into nv ops: while one is left the IR
/// is not nv IR yet.
fn is_lowered_by_lower_to_nv(body: &Body, op: Op) -> bool {
    matches!(body.opcode(op), Opcode::TileLoad | Opcode::TileDot | Opcode::TileDotScaled | Opcode::TileStore)
}

fn has_layout(body: &Body, op: Op) -> bool {
    body.ops[op].results.iter().any(|&r| body.value_type(r).as_tile().is_some_and(|t| t.layout.is_some()))
}

/// What a pass needs of the IR and what it leaves.
#[derive(Clone, Debug)]
pub struct PhaseRule {
    /// The phases the pass may run in.
    pub needs: RangeInclusive<Phase>,
    /// The phase after it (or the phase it found, if that is later); `None`
    /// leaves the phase as it was.
    pub leaves: Option<Phase>,
    /// Why the pass needs those phases, for the error that rejects a
    /// pipeline; empty for passes that run anywhere.
    pub reason: &'static str,
}

impl PhaseRule {
    /// A pass that runs on any form and keeps it (clean-ups, checks).
    pub const ANY: PhaseRule = PhaseRule { needs: Phase::Parametric..=Phase::Nv, leaves: None, reason: "" };

    /// Whether the rule lets a pass run on IR in `phase`.
    pub fn accepts(&self, phase: Phase) -> bool {
        self.needs.contains(&phase)
    }

    /// The phase after the pass ran in `phase`: the IR never moves back, so
    /// a pass that leaves an earlier phase than it found keeps the later one
    /// (`tile-select-config` binds parametric IR and leaves the rest alone).
    pub fn after(&self, phase: Phase) -> Phase {
        self.leaves.map_or(phase, |leaves| leaves.max(phase))
    }

    /// The accepted phases in words: "tile IR with layouts", or "tile IR
    /// or tile IR with layouts", or "any phase".
    pub fn describe_needs(&self) -> String {
        if Phase::ALL.iter().all(|p| self.accepts(*p)) {
            return "any phase".to_string();
        }
        let names: Vec<&str> = Phase::ALL.iter().filter(|p| self.accepts(**p)).map(|p| p.describe()).collect();
        names.join(" or ")
    }

    /// The phase left, in words ("the same" when the pass keeps it).
    pub fn describe_leaves(&self) -> &'static str {
        self.leaves.map_or("the same", Phase::describe)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilec_dialects::parse_module;

    fn phase_of(text: &str) -> Phase {
        let module = parse_module(text, "phase.tile").expect("test input parses");
        Phase::of(&module.functions[0])
    }

    #[test]
    fn reads_the_phase_from_the_ir() {
        let tile = "tile.func @f(%a: !tile.ref<?x?xbf16>, %c: !tile.ref<?x?xf32>) {\n  %c0 = tile.constant 0 : index\n  %x = tile.load %a[%c0, %c0] : !tile.ref<?x?xbf16> -> tensor<64x64xbf16>\n  tile.return\n}\n";
        assert_eq!(phase_of(tile), Phase::Tile);
        let laid = tile.replace("tensor<64x64xbf16>\n", "tensor<64x64xbf16, #tile.nvmma_shared<swizzle = 128>>\n");
        assert_eq!(phase_of(&laid), Phase::TileLayouts);
    }

    #[test]
    fn rules_describe_what_they_accept() {
        let rule = PhaseRule { needs: Phase::Tile..=Phase::TileLayouts, leaves: None, reason: "" };
        assert_eq!(rule.describe_needs(), "tile IR or tile IR with layouts");
        assert!(!rule.accepts(Phase::Nv));
        assert_eq!(rule.after(Phase::TileLayouts), Phase::TileLayouts);
        assert!(PhaseRule::ANY.accepts(Phase::Nv));
    }
}

/// Whether a block size is still a parameter: in a value's type, or as a
/// `tile.param` op.
pub fn has_unbound_parameters(func: &Function) -> bool {
    let body = &func.body;
    body.values.keys().any(|v| body.values[v].ty.is_parametric())
        || body.walk_region(func.region).into_iter().any(|op| body.opcode(op) == Opcode::TileParam)
}
