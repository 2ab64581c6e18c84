//! The transforms, one per file.

pub mod canonicalize;
