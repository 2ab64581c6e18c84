//! Functions (kernels) and the module holding them.

use super::attributes::Attributes;
use super::body::{Block, Body, Region, Value};
use super::types::Type;
use crate::diagnostic::Location;

/// A kernel: a name, typed arguments, attributes and a body region. Each
/// function owns its own arena.
#[derive(Clone, Debug)]
pub struct Function {
    /// The kernel's name (`@gemm_bf16`), the PTX entry.
    pub name: String,
    /// Function attributes (`num_warps`, `tile.config`, `grid`).
    pub attrs: Attributes,
    /// One attribute dictionary per argument (`%a: T {tile.dims = ["M", "K"]}`).
    pub arg_attrs: Vec<Attributes>,
    /// The `tile.func` op's location.
    pub loc: Location,
    /// The function's IR.
    pub body: Body,
    /// The function's region: one block whose arguments are the tensors.
    pub region: Region,
}

impl Function {
    /// A function with an empty entry block taking `arg_types`.
    pub fn new(name: impl Into<String>, arg_types: &[Type], loc: Location) -> Self {
        let mut body = Body::default();
        let region = body.new_region(None);
        body.append_block(region, arg_types);
        let arg_attrs = vec![Attributes::new(); arg_types.len()];
        Function { name: name.into(), attrs: Attributes::new(), arg_attrs, loc, body, region }
    }

    /// The function's single block.
    pub fn entry_block(&self) -> Block {
        self.body.entry_block(self.region)
    }

    /// The function's arguments: the kernel's tensors, in order.
    pub fn args(&self) -> &[Value] {
        &self.body.blocks[self.entry_block()].args
    }

    /// Whether argument `i` is a tensor stored with its last two dimensions
    /// swapped: `tile.contiguous` names its second-last dimension (the
    /// verifier holds it to one of the last two names), so a column of it
    /// is one run of memory.
    pub fn is_column_major(&self, i: usize) -> bool {
        let contiguous = self.arg_attrs.get(i).and_then(|a| a.get("tile.contiguous")).and_then(|a| a.as_str());
        let dims = self.arg_attrs.get(i).and_then(|a| a.get("tile.dims")).and_then(|a| a.as_strings());
        contiguous.zip(dims).is_some_and(|(c, d)| d.len() >= 2 && d[d.len() - 2] == c)
    }
}

/// A parsed `.tile` file: its functions in order.
#[derive(Clone, Debug, Default)]
pub struct Module {
    /// The functions, one kernel each.
    pub functions: Vec<Function>,
}
