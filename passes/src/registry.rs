//! Every pass tilec has, in one list.

use crate::analysis::barriers;
use crate::options::OptionSpec;
use crate::transforms::{assign_layouts, canonicalize, licm, lower_to_nv, persistent, pipeline, select_config, warp_specialize};
use crate::{Pass, PassOptions};

pub struct PassInfo {
    pub name: &'static str,
    pub summary: &'static str,
    pub options: &'static [OptionSpec],
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
