//! Analyses the transforms consult.

pub mod dependence;
