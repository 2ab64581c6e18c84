//! Every pass tilec has, in one list.

use crate::options::OptionSpec;
use crate::transforms::canonicalize;
use crate::{Pass, PassOptions};

pub struct PassInfo {
    pub name: &'static str,
    pub summary: &'static str,
    pub options: &'static [OptionSpec],
    pub create: fn(&PassOptions) -> Box<dyn Pass>,
}

pub static PASSES: &[PassInfo] = &[canonicalize::INFO];

pub fn lookup(name: &str) -> Option<&'static PassInfo> {
    PASSES.iter().find(|p| p.name == name)
}
