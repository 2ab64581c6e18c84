#![warn(missing_docs)]
//! tilec's IR: the core data structures (arenas of ops, blocks, regions and
//! values), the `tile` and `nv` dialects, their verifiers, and the MLIR-syntax
//! parser and printer.
//!
//! The IR is plain data in the Cranelift style: every function owns one
//! [`ir::Body`] arena, and ops, blocks, regions and values are small copyable
//! handles into it. Dialects contribute op definitions ([`registry::OpDef`]):
//! a name, traits, a custom syntax and a verifier.

pub mod diagnostic;
pub mod ir;
pub mod nv;
pub mod registry;
pub mod syntax;
pub mod tile;
pub mod verifier;

pub use diagnostic::{Diagnostic, Diagnostics, Location, Severity};
pub use ir::{
    Attribute, Block, Body, ElemType, Function, Layout, Module, Op, RefType, Region, TileType,
    Type, Value,
};
pub use syntax::{parse_module, print_module, PrintOptions};
pub use verifier::verify_module;
