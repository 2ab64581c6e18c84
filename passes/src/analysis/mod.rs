//! Analyses the transforms consult, and the verifiers built on them.

pub mod barriers;
pub mod dependence;
pub mod operand_swap;
