//! Every pass tilec has, in one list.

use crate::analysis::barriers;
use crate::options::OptionSpec;
use crate::transforms::{assign_layouts, canonicalize, lower_to_nv, pipeline};
use crate::{Pass, PassOptions};

pub struct PassInfo {
    pub name: &'static str,
    pub summary: &'static str,
    pub options: &'static [OptionSpec],
    pub create: fn(&PassOptions) -> Box<dyn Pass>,
}

pub static PASSES: &[PassInfo] = &[canonicalize::INFO, assign_layouts::INFO, pipeline::INFO, lower_to_nv::INFO, barriers::INFO];

pub fn lookup(name: &str) -> Option<&'static PassInfo> {
    PASSES.iter().find(|p| p.name == name)
}
