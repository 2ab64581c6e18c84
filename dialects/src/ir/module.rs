//! Functions (kernels) and the module holding them.

use super::attributes::Attributes;
use super::body::{Block, Body, Region, Value};
use super::types::Type;
use crate::diagnostic::Location;

/// A kernel: a name, typed arguments, attributes and a body region. Each
/// function owns its own arena.
#[derive(Clone, Debug)]
pub struct Function {
    pub name: String,
    pub attrs: Attributes,
    /// One attribute dictionary per argument (`%a: T {tile.dims = ["M", "K"]}`).
    pub arg_attrs: Vec<Attributes>,
    pub loc: Location,
    pub body: Body,
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

    pub fn entry_block(&self) -> Block {
        self.body.entry_block(self.region)
    }

    pub fn args(&self) -> &[Value] {
        &self.body.blocks[self.entry_block()].args
    }
}

#[derive(Clone, Debug, Default)]
pub struct Module {
    pub functions: Vec<Function>,
}
