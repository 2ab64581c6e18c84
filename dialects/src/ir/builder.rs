//! Creates ops at an insertion point, so passes read as the IR they build.

use super::attributes::{Attribute, Attributes};
use super::body::{Block, Body, Op, Value};
use super::types::{ElemType, Type};
use crate::diagnostic::Location;
use crate::registry::Opcode;
use std::collections::HashMap;

/// Where new ops go: before an op, or at the end of a block.
#[derive(Clone, Copy, Debug)]
pub enum InsertPoint {
    /// Just before this op.
    Before(Op),
    /// At the end of this block.
    End(Block),
}

/// Creates ops at an insertion point, each with the builder's location.
pub struct Builder<'a> {
    /// The IR being built.
    pub body: &'a mut Body,
    /// Where the next op goes.
    pub at: InsertPoint,
    /// The location given to every op built, usually the op being rewritten.
    pub loc: Location,
}

impl<'a> Builder<'a> {
    /// A builder inserting at `at` in `body`; new ops take `loc`.
    pub fn new(body: &'a mut Body, at: InsertPoint, loc: Location) -> Self {
        Builder { body, at, loc }
    }

    /// Builds an op of `opcode` here; the dialects' typed builders
    /// (`tile::Dot::build`, ...) call this with their operands in order.
    pub fn create(&mut self, opcode: Opcode, operands: Vec<Value>, result_types: &[Type], attrs: Attributes) -> Op {
        let op = self.body.create_op(opcode.def(), operands, result_types, attrs, self.loc.clone());
        self.insert(op);
        op
    }

    fn insert(&mut self, op: Op) {
        match self.at {
            InsertPoint::Before(anchor) => self.body.insert_op_before(anchor, op),
            InsertPoint::End(block) => self.body.append_op(block, op),
        }
    }

    /// An `index` constant `v` at the insertion point.
    pub fn index(&mut self, v: i64) -> Value {
        let mut attrs = Attributes::new();
        attrs.set("value", Attribute::Int(v, ElemType::Index));
        let op = self.create(Opcode::TileConstant, vec![], &[Type::INDEX], attrs);
        self.body.result(op, 0)
    }

    /// An `i1` constant `v` at the insertion point.
    pub fn bool(&mut self, v: bool) -> Value {
        let mut attrs = Attributes::new();
        attrs.set("value", Attribute::Int(i64::from(v), ElemType::I1));
        let op = self.create(Opcode::TileConstant, vec![], &[Type::Scalar(ElemType::I1)], attrs);
        self.body.result(op, 0)
    }

    /// Copies `op` here with its regions, its operands renamed through `map`
    /// (values not in it stay), and maps the old results and block
    /// arguments to the new ones. Names are kept as hints.
    pub fn clone_op(&mut self, op: Op, map: &mut HashMap<Value, Value>) -> Op {
        let data = self.body.ops[op].clone();
        let operands = data.operands.iter().map(|v| *map.get(v).unwrap_or(v)).collect();
        let types: Vec<Type> = data.results.iter().map(|&r| self.body.value_type(r).clone()).collect();
        let copy = self.body.create_op(data.def, operands, &types, data.attrs, data.loc);
        self.insert(copy);
        for (&old, &new) in data.results.iter().zip(&self.body.ops[copy].results.clone()) {
            self.body.values[new].name_hint = self.body.values[old].name_hint.clone();
            map.insert(old, new);
        }
        for &region in &data.regions {
            let block = self.body.entry_block(region);
            let arg_types: Vec<Type> = self.body.blocks[block].args.iter().map(|&a| self.body.value_type(a).clone()).collect();
            let (_, new_block) = self.body.add_region(copy, &arg_types);
            for (&old, &new) in self.body.blocks[block].args.clone().iter().zip(&self.body.blocks[new_block].args.clone()) {
                self.body.values[new].name_hint = self.body.values[old].name_hint.clone();
                map.insert(old, new);
            }
            let mut inner = Builder::new(self.body, InsertPoint::End(new_block), self.loc.clone());
            for nested in inner.body.blocks[block].ops.clone() {
                inner.clone_op(nested, map);
            }
        }
        copy
    }

    /// Names a value as the source text would, so printed IR stays readable.
    pub fn name(&mut self, v: Value, name: &str) -> Value {
        self.body.values[v].name_hint = Some(name.to_string());
        v
    }
}
