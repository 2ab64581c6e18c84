//! The transforms, one per file.

pub mod assign_layouts;
pub mod canonicalize;
pub mod lower_to_nv;
pub mod pipeline;
pub mod tma_staging;
