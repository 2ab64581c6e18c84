//! One function's IR: an arena of ops, blocks, regions and SSA values.
//!
//! Structured control flow keeps every region to one block in practice, but
//! the data structure is MLIR's general one so later dialects can use more.

use super::attributes::{Attribute, Attributes};
use super::entity::{entity, Arena};
use super::types::Type;
use crate::diagnostic::Location;
use crate::registry::{OpDef, Opcode};

entity!(
    /// An operation.
    Op
);
entity!(
    /// A basic block: arguments and an ordered list of ops.
    Block
);
entity!(
    /// A region: an ordered list of blocks owned by an op or a function.
    Region
);
entity!(
    /// An SSA value: an op result or a block argument.
    Value
);

/// An operation: its definition, operands, results, attributes and regions.
#[derive(Clone, Debug)]
pub struct OpData {
    /// The op's definition (name, traits, parser, printer, verifier).
    pub def: &'static OpDef,
    /// The values it reads, in order.
    pub operands: Vec<Value>,
    /// The values it defines, in order.
    pub results: Vec<Value>,
    /// Its attributes.
    pub attrs: Attributes,
    /// Regions it owns (a loop's body, a role's code).
    pub regions: Vec<Region>,
    /// Where it came from in the source.
    pub loc: Location,
    /// The block the op sits in; `None` once detached.
    pub parent: Option<Block>,
}

impl OpData {
    /// The op's opcode.
    pub fn opcode(&self) -> Opcode {
        self.def.opcode
    }
}

/// A block: arguments and an ordered list of ops.
#[derive(Clone, Debug, Default)]
pub struct BlockData {
    /// The values the block's owner binds on entry (a loop's induction variable and iteration arguments).
    pub args: Vec<Value>,
    /// The ops, in order; the last is the terminator.
    pub ops: Vec<Op>,
    /// The region holding the block.
    pub parent: Option<Region>,
}

/// A region: the blocks an op owns.
#[derive(Clone, Debug, Default)]
pub struct RegionData {
    /// Its blocks; every region here has one.
    pub blocks: Vec<Block>,
    /// The op owning the region; `None` for a function's body.
    pub parent: Option<Op>,
}

/// Where a value is defined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueDef {
    /// Result `i` of an op.
    Result(Op, usize),
    /// Argument `i` of a block.
    BlockArg(Block, usize),
}

/// A value: its type and definition.
#[derive(Clone, Debug)]
pub struct ValueData {
    /// The value's type.
    pub ty: Type,
    /// Its definition.
    pub def: ValueDef,
    /// The name the value had in the source text, kept so that printing
    /// returns what the user wrote.
    pub name_hint: Option<String>,
}

/// A function body's IR: arenas of ops, blocks, regions and values, referred to by index (`Op`, `Block`, `Region`, `Value`).
#[derive(Clone, Debug, Default)]
pub struct Body {
    /// Every op ever created; removed ops stay but are detached.
    pub ops: Arena<Op, OpData>,
    /// Every block.
    pub blocks: Arena<Block, BlockData>,
    /// Every region.
    pub regions: Arena<Region, RegionData>,
    /// Every value.
    pub values: Arena<Value, ValueData>,
}

impl Body {
    /// A new empty region owned by `parent` (no op for the function's own).
    pub fn new_region(&mut self, parent: Option<Op>) -> Region {
        self.regions.push(RegionData { blocks: Vec::new(), parent })
    }

    /// Appends a new empty block with arguments of `arg_types` to `region`.
    pub fn append_block(&mut self, region: Region, arg_types: &[Type]) -> Block {
        let block = self.blocks.push(BlockData { args: Vec::new(), ops: Vec::new(), parent: Some(region) });
        for (i, ty) in arg_types.iter().enumerate() {
            let v = self.values.push(ValueData { ty: ty.clone(), def: ValueDef::BlockArg(block, i), name_hint: None });
            self.blocks[block].args.push(v);
        }
        self.regions[region].blocks.push(block);
        block
    }

    /// Creates a detached op with fresh results of `result_types`.
    pub fn create_op(
        &mut self,
        def: &'static OpDef,
        operands: Vec<Value>,
        result_types: &[Type],
        attrs: Attributes,
        loc: Location,
    ) -> Op {
        let op = self.ops.push(OpData {
            def,
            operands,
            results: Vec::new(),
            attrs,
            regions: Vec::new(),
            loc,
            parent: None,
        });
        for (i, ty) in result_types.iter().enumerate() {
            let v = self.values.push(ValueData { ty: ty.clone(), def: ValueDef::Result(op, i), name_hint: None });
            self.ops[op].results.push(v);
        }
        op
    }

    /// Gives `op` a new region with one block of `arg_types` and returns both.
    pub fn add_region(&mut self, op: Op, arg_types: &[Type]) -> (Region, Block) {
        let region = self.new_region(Some(op));
        self.ops[op].regions.push(region);
        let block = self.append_block(region, arg_types);
        (region, block)
    }

    /// Appends the detached `op` to `block`.
    pub fn append_op(&mut self, block: Block, op: Op) {
        self.ops[op].parent = Some(block);
        self.blocks[block].ops.push(op);
    }

    /// Inserts `op` into `anchor`'s block just before `anchor`.
    pub fn insert_op_before(&mut self, anchor: Op, op: Op) {
        let block = self.ops[anchor].parent.expect("anchor op is attached");
        let pos = self.position_in_block(anchor);
        self.ops[op].parent = Some(block);
        self.blocks[block].ops.insert(pos, op);
    }

    /// Detaches `op` from its block; its arena slot stays but is unreachable.
    pub fn remove_op(&mut self, op: Op) {
        if let Some(block) = self.ops[op].parent.take() {
            self.blocks[block].ops.retain(|&o| o != op);
        }
    }

    /// Where `op` stands among its block's ops.
    pub fn position_in_block(&self, op: Op) -> usize {
        let block = self.ops[op].parent.expect("op is attached");
        self.blocks[block].ops.iter().position(|&o| o == op).expect("op is in its parent block")
    }

    /// The opcode of `op`.
    pub fn opcode(&self, op: Op) -> Opcode {
        self.ops[op].def.opcode
    }

    /// Whether `op` has no effects and no regions: it can be moved, copied
    /// or dropped on its own, its result depending only on its operands.
    pub fn is_pure_leaf(&self, op: Op) -> bool {
        self.ops[op].def.traits.pure && self.ops[op].regions.is_empty()
    }

    /// The type of `v`.
    pub fn value_type(&self, v: Value) -> &Type {
        &self.values[v].ty
    }

    /// The op defining `v`, or `None` for a block argument.
    pub fn defining_op(&self, v: Value) -> Option<Op> {
        match self.values[v].def {
            ValueDef::Result(op, _) => Some(op),
            ValueDef::BlockArg(..) => None,
        }
    }

    /// The integer `v` holds when a constant op (`tile.constant`) defines it.
    pub fn constant_int(&self, v: Value) -> Option<i64> {
        let def = self.defining_op(v)?;
        match self.ops[def].attrs.get("value") {
            Some(Attribute::Int(c, _)) if self.ops[def].def.traits.constant => Some(*c),
            _ => None,
        }
    }

    /// The region holding `op` and the op owning that region, or `None` at
    /// function level.
    pub fn enclosing(&self, op: Op) -> Option<(Region, Op)> {
        let region = self.blocks[self.ops[op].parent?].parent?;
        Some((region, self.regions[region].parent?))
    }

    /// The op whose region holds `op`, or `None` at function level.
    pub fn parent_op(&self, op: Op) -> Option<Op> {
        self.enclosing(op).map(|(_, parent)| parent)
    }

    /// The ops around `op`, innermost first.
    pub fn ancestors(&self, op: Op) -> impl Iterator<Item = Op> + '_ {
        std::iter::successors(self.parent_op(op), |&a| self.parent_op(a))
    }

    /// Whether `v` is defined inside the regions of `op` (a result of a
    /// nested op, or an argument of a nested block), so it may differ between
    /// the iterations of a loop `op`.
    pub fn defined_within(&self, v: Value, op: Op) -> bool {
        let mut block = match self.values[v].def {
            ValueDef::Result(def, _) => self.ops[def].parent,
            ValueDef::BlockArg(block, _) => Some(block),
        };
        while let Some(b) = block {
            let Some(parent) = self.blocks[b].parent.and_then(|r| self.regions[r].parent) else { return false };
            if parent == op {
                return true;
            }
            block = self.ops[parent].parent;
        }
        false
    }

    /// Whether `v` is computed, through the operands of the ops defining it,
    /// from a result of an op for which `source` holds.
    pub fn computed_from(&self, v: Value, source: impl Fn(Op) -> bool) -> bool {
        let mut seen = std::collections::HashSet::new();
        let mut pending = vec![v];
        while let Some(v) = pending.pop() {
            let Some(def) = self.defining_op(v).filter(|&def| seen.insert(def)) else { continue };
            if source(def) {
                return true;
            }
            pending.extend(self.ops[def].operands.iter().copied());
        }
        false
    }

    /// Result `i` of `op`.
    pub fn result(&self, op: Op, i: usize) -> Value {
        self.ops[op].results[i]
    }

    /// The first block of `region` (every region of the tile and nv dialects
    /// has exactly one).
    pub fn entry_block(&self, region: Region) -> Block {
        self.regions[region].blocks[0]
    }

    /// The last op of `block`, which the verifier requires to be a terminator.
    pub fn terminator(&self, block: Block) -> Option<Op> {
        self.blocks[block].ops.last().copied()
    }

    /// Every op nested in `region`, in pre-order (an op before the ops of its
    /// regions).
    pub fn walk_region(&self, region: Region) -> Vec<Op> {
        let mut out = Vec::new();
        self.walk_region_into(region, &mut out);
        out
    }

    fn walk_region_into(&self, region: Region, out: &mut Vec<Op>) {
        for &block in &self.regions[region].blocks {
            for &op in &self.blocks[block].ops {
                out.push(op);
                for &r in &self.ops[op].regions {
                    self.walk_region_into(r, out);
                }
            }
        }
    }

    /// Replaces every use of `old` by `new` among the ops reachable from
    /// `region`.
    pub fn replace_all_uses(&mut self, region: Region, old: Value, new: Value) {
        for op in self.walk_region(region) {
            for operand in &mut self.ops[op].operands {
                if *operand == old {
                    *operand = new;
                }
            }
        }
    }

    /// Replaces every use of `old` by `new` among the ops reachable from
    /// `region` but `user`, the op that makes `new` from `old` and keeps
    /// reading it.
    pub fn replace_uses_except(&mut self, region: Region, old: Value, new: Value, user: Op) {
        for op in self.walk_region(region) {
            if op == user {
                continue;
            }
            for operand in &mut self.ops[op].operands {
                if *operand == old {
                    *operand = new;
                }
            }
        }
    }

    /// Counts the uses of every value by ops reachable from `region`.
    pub fn use_counts(&self, region: Region) -> Vec<usize> {
        let mut counts = vec![0; self.values.len()];
        for op in self.walk_region(region) {
            for operand in &self.ops[op].operands {
                counts[operand.0 as usize] += 1;
            }
        }
        counts
    }
}
