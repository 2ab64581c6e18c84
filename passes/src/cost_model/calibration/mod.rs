//! The cost model's constants fitted on each target, one generated file a
//! target (`tilec calibrate --fit --target NAME --write
//! passes/src/cost_model/calibration/NAME.rs`; docs/cost-model.md).

use super::Calibration;

mod h200;

pub use h200::H200;

/// The constants fitted on the target named `name`, if any.
pub fn fitted(name: &str) -> Option<Calibration> {
    match name {
        "h200" => Some(H200),
        _ => None,
    }
}
