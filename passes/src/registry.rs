//! Every pass tilec has, in one list.

use crate::analysis::barriers;
use crate::options::OptionSpec;
use crate::phase::PhaseRule;
use crate::transforms::{assign_layouts, canonicalize, licm, lower_to_nv, persistent, pipeline, select_config, warp_specialize};
use crate::{Pass, PassOptions};

/// A pass's declaration: its name in pipelines, a one-line summary, its
/// typed options, the phases it runs in and leaves, and how to create it.
pub struct PassInfo {
    pub name: &'static str,
    pub summary: &'static str,
    pub options: &'static [OptionSpec],
    pub phases: PhaseRule,
    pub create: fn(&PassOptions) -> Box<dyn Pass>,
}

pub static PASSES: &[PassInfo] = &[
    canonicalize::INFO,
    licm::INFO,
    assign_layouts::INFO,
    persistent::INFO,
    warp_specialize::INFO,
    pipeline::INFO,
    lower_to_nv::INFO,
    barriers::INFO,
    select_config::INFO,
];

pub fn lookup(name: &str) -> Option<&'static PassInfo> {
    PASSES.iter().find(|p| p.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docs_state_each_pass_phases() {
        let doc = include_str!("../../docs/ir.md");
        for pass in PASSES {
            let row = format!("| `{}` | {} | {} |", pass.name, pass.phases.describe_needs(), pass.phases.describe_leaves());
            assert!(doc.contains(&row), "docs/ir.md's pass order must have the row\n{row}");
        }
    }

    #[test]
    fn pass_names_are_unique() {
        for (i, pass) in PASSES.iter().enumerate() {
            assert!(PASSES[i + 1..].iter().all(|other| other.name != pass.name), "'{}' is registered twice", pass.name);
        }
    }
}
