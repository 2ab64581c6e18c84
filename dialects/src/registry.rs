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
    /// Reads memory (global or shared).
    pub reads_memory: bool,
    /// Writes memory (global or shared).
    pub writes_memory: bool,
    /// Each result element is a function of the operands' elements at the
    /// same position: layout assignment gives its tile operands and results
    /// one layout, and the lowering applies it value by value.
    pub elementwise: bool,
    /// A result element reads operand elements of other columns (a row's
    /// group reduction, a column shuffle): an accumulator column past the
    /// tensor's edge reaches stored ones, so the loads must give it zeros
    /// there (`tile-fit-tma-boxes` keeps B's boxes whole).
    pub crosses_columns: bool,
    /// Lowered to a `.sync.aligned` instruction: every thread of its warp
    /// (or warpgroup) must execute it at the same point, together. One
    /// thread's branch must not reach it before the threads reconverge
    /// (`nv-verify-barriers`, `convergence.rs`).
    pub aligned: bool,
    /// A barrier or wait every thread executing it reaches and waits at: the
    /// back end keeps the code on either side of it apart, so it
    /// reconverges the threads after one thread's branch.
    pub converges: bool,
}

/// What folding an op gave: a constant to materialise, or an existing value
/// that the op's single result equals.
#[derive(Clone, Debug, PartialEq)]
pub enum Folded {
    /// A constant to materialise in the op's place.
    Constant(Attribute),
    /// An existing value the op's result equals.
    Value(Value),
}

/// What an op's custom-syntax parser hands back; the generic parser builds
/// the op from it.
pub struct ParsedOp {
    /// The operands, resolved.
    pub operands: Vec<Value>,
    /// The result types.
    pub result_types: Vec<Type>,
    /// The attributes.
    pub attrs: Attributes,
    /// The regions, parsed.
    pub regions: Vec<Region>,
}

/// Parses an op after its name (and the results' `=`).
pub type ParseFn = fn(&mut Parser<'_>) -> Result<ParsedOp, Diagnostic>;
/// Prints an op after its name.
pub type PrintFn = fn(&mut Printer<'_>, Op);
/// Checks one op's invariants; the message is wrapped as `'name' op MESSAGE`
/// at the op's location.
pub type VerifyFn = fn(&Body, Op) -> Result<(), String>;
/// Folds an op given the constant value of each operand, where known.
pub type FoldFn = fn(&Body, Op, &[Option<Attribute>]) -> Option<Folded>;

/// Everything known about one op kind: generated from `ops.ods`.
pub struct OpDef {
    /// The op's name (`tile.dot`).
    pub name: &'static str,
    /// Its opcode.
    pub opcode: Opcode,
    /// One line saying what the op does.
    pub summary: &'static str,
    /// Its traits.
    pub traits: OpTraits,
    /// Its parser.
    pub parse: ParseFn,
    /// Its printer.
    pub print: PrintFn,
    /// Its verifier: the definition's checks, then its `verify:` hook.
    pub verify: VerifyFn,
    /// Its folder, if it folds.
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

/// The definition of the op named `name` in any dialect.
pub fn lookup(name: &str) -> Option<&'static OpDef> {
    dialects().into_iter().flatten().find(|d| d.name == name)
}
