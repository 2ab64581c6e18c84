//! Programmatic dependent launch: a kernel launched with it may start while
//! the previous kernel on its stream is still running, so it must not touch
//! memory before `nv.grid_dependency_wait`.

use crate::ir::{Body, Op};

/// `nv.grid_dependency_wait` sits in the function's top-level block, where
/// every thread runs it, and no op before it reads or writes memory or holds
/// ops that do: what runs before the wait may overlap the previous kernel.
pub(super) fn verify_grid_dependency_wait(body: &Body, op: Op) -> Result<(), String> {
    if body.parent_op(op).is_some() {
        return Err("must sit in the function's top-level block, where every thread runs it before touching memory".into());
    }
    let Some(block) = body.ops[op].parent else { return Err("is not in a block".into()) };
    let before = body.blocks[block].ops.iter().take_while(|&&o| o != op);
    for &earlier in before {
        let mut nested = vec![earlier];
        for &region in &body.ops[earlier].regions {
            nested.extend(body.walk_region(region));
        }
        if let Some(&touching) = nested.iter().find(|&&o| body.ops[o].def.traits.reads_memory || body.ops[o].def.traits.writes_memory) {
            return Err(format!("must come before the kernel's first memory access, but '{}' precedes it", body.ops[touching].def.name));
        }
    }
    Ok(())
}
