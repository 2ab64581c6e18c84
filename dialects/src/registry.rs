//! Op definitions: what each dialect contributes to the IR core. Each
//! dialect declares its ops in `ops.ods`; `build.rs` generates the tables,
//! the [`Opcode`] enum and the typed views from it (docs/adding-an-op.md).

use crate::diagnostic::Diagnostic;
use crate::ir::{Attribute, Attributes, Body, Op, Region, Type, Value};
use crate::syntax::{Parser, Printer};

/// Properties that passes and the verifier rely on.
#[derive(Clone, Copy, Debug, Default)]
pub struct OpTraits {
    /// Ends a block; only allowed as a block's last op.
    pub terminator: bool,
    /// No side effects: removable when its results are unused.
    pub pure: bool,
    /// Materialises its `value` attribute; folding reads operands' constants
    /// through ops with this trait.
    pub constant: bool,
    /// Issued by one thread of those executing it; the lowering elects it.
    pub elected: bool,
    /// Orders or waits on other threads or asynchronous units (barriers,
    /// fences, wgmma commit and wait): never moved across another op.
    pub synchronising: bool,
    pub reads_memory: bool,
    pub writes_memory: bool,
}

/// What folding an op gave: a constant to materialise, or an existing value
/// that the op's single result equals.
#[derive(Clone, Debug, PartialEq)]
pub enum Folded {
    Constant(Attribute),
    Value(Value),
}

/// What an op's custom-syntax parser hands back; the generic parser builds
/// the op from it.
pub struct ParsedOp {
    pub operands: Vec<Value>,
    pub result_types: Vec<Type>,
    pub attrs: Attributes,
    pub regions: Vec<Region>,
}

pub type ParseFn = fn(&mut Parser<'_>) -> Result<ParsedOp, Diagnostic>;
pub type PrintFn = fn(&mut Printer<'_>, Op);
/// Checks one op's invariants; the message is wrapped as `'name' op MESSAGE`
/// at the op's location.
pub type VerifyFn = fn(&Body, Op) -> Result<(), String>;
/// Folds an op given the constant value of each operand, where known.
pub type FoldFn = fn(&Body, Op, &[Option<Attribute>]) -> Option<Folded>;

pub struct OpDef {
    pub name: &'static str,
    pub opcode: Opcode,
    /// One line saying what the op does.
    pub summary: &'static str,
    pub traits: OpTraits,
    pub parse: ParseFn,
    pub print: PrintFn,
    pub verify: VerifyFn,
    pub fold: Option<FoldFn>,
}

impl std::fmt::Debug for OpDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl PartialEq for OpDef {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

include!(concat!(env!("OUT_DIR"), "/opcode.rs"));

/// The dialects every tool loads, in lookup order.
pub fn dialects() -> [&'static [OpDef]; 2] {
    [crate::tile::OPS, crate::nv::OPS]
}

pub fn lookup(name: &str) -> Option<&'static OpDef> {
    dialects().into_iter().flatten().find(|d| d.name == name)
}
