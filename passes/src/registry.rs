//! Every pass tilec has, in one list, and the passes a user registers at
//! run time after it.

use crate::analysis::barriers;
use crate::pass::PassInfo;
use crate::transforms::{assign_layouts, canonicalize, cluster_split, defer_epilogue, fit_tma_boxes, licm, lower_to_nv, pair_promotions, persistent, pipeline, prefetch_l2, programmatic_launch, rasterize, select_config, split_k, stream_k, swap_operands, warp_specialize};
use std::sync::{Mutex, PoisonError};

/// The passes tilec defines.
pub static PASSES: &[PassInfo] = &[
    canonicalize::INFO,
    licm::INFO,
    assign_layouts::INFO,
    split_k::INFO,
    persistent::INFO,
    stream_k::INFO,
    rasterize::INFO,
    warp_specialize::INFO,
    pipeline::INFO,
    cluster_split::INFO,
    lower_to_nv::INFO,
    defer_epilogue::INFO,
    fit_tma_boxes::INFO,
    prefetch_l2::INFO,
    pair_promotions::INFO,
    programmatic_launch::INFO,
    barriers::INFO,
    select_config::INFO,
    swap_operands::INFO,
];

/// The passes registered at run time by [`register_pass`], in order.
static USER_PASSES: Mutex<Vec<&'static PassInfo>> = Mutex::new(Vec::new());

fn user_passes() -> Vec<&'static PassInfo> {
    // A panic while the lock was held cannot leave the list half-written: a push is the only write.
    USER_PASSES.lock().unwrap_or_else(PoisonError::into_inner).clone()
}

/// Adds a pass defined outside tilec to the registry of this process, so that
/// pipeline strings can name it. A name already taken, by a built-in pass or
/// an earlier registration, is an error and changes nothing.
pub fn register_pass(info: PassInfo) -> Result<(), String> {
    let mut user = USER_PASSES.lock().unwrap_or_else(PoisonError::into_inner);
    if PASSES.iter().chain(user.iter().copied()).any(|p| p.name == info.name) {
        return Err(format!("cannot register pass '{}': a pass with that name is already registered", info.name));
    }
    // Registered passes live as long as the process, as the built-ins do.
    user.push(Box::leak(Box::new(info)));
    Ok(())
}

/// The pass a pipeline names: a built-in first, then those registered at run time.
pub fn lookup(name: &str) -> Option<&'static PassInfo> {
    PASSES.iter().find(|p| p.name == name).or_else(|| user_passes().into_iter().find(|p| p.name == name))
}

/// Every pass a pipeline can name: the built-ins, then those registered at run time.
pub fn all_passes() -> Vec<&'static PassInfo> {
    PASSES.iter().chain(user_passes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pass::Pass;
    use crate::phase::PhaseRule;

    #[test]
    fn docs_state_each_pass_phases() {
        let doc = include_str!("../../docs/ir.md");
        for pass in PASSES {
            let row = format!("| `{}` | {} | {} |", pass.name, pass.phases.describe_needs(), pass.phases.describe_leaves());
            assert!(doc.contains(&row), "docs/ir.md's pass order must have the row\n{row}");
        }
    }

    struct Nothing;

    impl Pass for Nothing {
        fn name(&self) -> &'static str {
            "test-registered-nothing"
        }
        fn run(&mut self, _: &mut tilec_dialects::Function) -> Result<(), tilec_dialects::Diagnostic> {
            Ok(())
        }
    }

    fn nothing_info(name: &'static str) -> PassInfo {
        PassInfo { name, summary: "does nothing", options: &[], phases: PhaseRule::ANY, create: |_| Box::new(Nothing) }
    }

    #[test]
    fn a_registered_pass_is_found_by_name_and_a_taken_name_is_refused() {
        assert!(lookup("test-registered-nothing").is_none());
        register_pass(nothing_info("test-registered-nothing")).unwrap();
        assert_eq!(lookup("test-registered-nothing").map(|p| p.summary), Some("does nothing"));
        assert!(all_passes().iter().any(|p| p.name == "test-registered-nothing"));
        assert!(crate::parse_pipeline("tile-canonicalize,test-registered-nothing").is_ok());

        let again = register_pass(nothing_info("test-registered-nothing")).unwrap_err();
        assert!(again.contains("'test-registered-nothing'") && again.contains("already registered"), "{again}");
        let builtin = register_pass(nothing_info("tile-canonicalize")).unwrap_err();
        assert!(builtin.contains("'tile-canonicalize'"), "{builtin}");
        assert_eq!(lookup("tile-canonicalize").map(|p| p.summary), Some(canonicalize::INFO.summary));
        assert_eq!(all_passes().iter().filter(|p| p.name == "test-registered-nothing").count(), 1);
    }

    #[test]
    fn pass_names_are_unique() {
        for (i, pass) in PASSES.iter().enumerate() {
            assert!(PASSES[i + 1..].iter().all(|other| other.name != pass.name), "'{}' is registered twice", pass.name);
        }
    }
}
