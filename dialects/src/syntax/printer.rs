//! Prints IR in its custom form (each op's own syntax) or in MLIR's generic
//! form, which upstream `mlir-opt --allow-unregistered-dialect` reads.

use super::parser::FUNC_OP;
use crate::ir::{Attribute, Attributes, Body, ElemType, Function, Layout, Module, Op, Region, Type, Value};
use std::collections::{HashMap, HashSet};
use std::fmt::Write;

/// How the IR is printed.
#[derive(Clone, Copy, Debug, Default)]
pub struct PrintOptions {
    /// MLIR's generic form (`"tile.dot"(...) : (...) -> ...`), which upstream `mlir-opt` reads.
    pub generic: bool,
}

/// The module as text.
pub fn print_module(module: &Module, options: PrintOptions) -> String {
    let mut out = String::new();
    for (i, func) in module.functions.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&print_function(func, options));
    }
    out
}

/// One function as text.
pub fn print_function(func: &Function, options: PrintOptions) -> String {
    let mut p = Printer { body: &func.body, out: String::new(), names: assign_names(func), indent: 0, options };
    p.print_function(func);
    p.out
}

/// Names every value: the source name where no visible value holds it,
/// otherwise the next number (results) or `argN` (block arguments), as MLIR
/// numbers them. Names are scoped like the parser's: a region's names are
/// free again after it, so sibling regions may reuse them.
fn assign_names(func: &Function) -> HashMap<Value, String> {
    let mut namer = Namer { body: &func.body, taken: HashSet::new(), names: HashMap::new(), next_result: 0, next_arg: 0 };
    namer.region(func.region);
    namer.names
}

struct Namer<'a> {
    body: &'a Body,
    taken: HashSet<String>,
    names: HashMap<Value, String>,
    next_result: usize,
    next_arg: usize,
}

impl Namer<'_> {
    fn region(&mut self, region: Region) {
        let mut scope = Vec::new();
        for &block in &self.body.regions[region].blocks {
            for &arg in &self.body.blocks[block].args {
                scope.push(self.name(arg, true));
            }
            for &op in &self.body.blocks[block].ops {
                // Inner regions first: the op's results are not visible in them.
                for &r in &self.body.ops[op].regions {
                    self.region(r);
                }
                for &result in &self.body.ops[op].results {
                    scope.push(self.name(result, false));
                }
            }
        }
        for name in scope {
            self.taken.remove(&name);
        }
    }

    fn name(&mut self, v: Value, is_arg: bool) -> String {
        let hint = self.body.values[v].name_hint.as_deref();
        let name = match hint {
            Some(h) if !h.bytes().all(|c| c.is_ascii_digit()) && !self.taken.contains(h) => h.to_string(),
            _ => loop {
                let candidate = if is_arg {
                    self.next_arg += 1;
                    format!("arg{}", self.next_arg - 1)
                } else {
                    self.next_result += 1;
                    (self.next_result - 1).to_string()
                };
                if !self.taken.contains(&candidate) {
                    break candidate;
                }
            },
        };
        self.taken.insert(name.clone());
        self.names.insert(v, name.clone());
        name
    }
}

/// Writes IR text; dialect print functions call its `value`, `ty`, `attrs`
/// and `region` methods.
pub struct Printer<'a> {
    /// The IR being printed.
    pub body: &'a Body,
    out: String,
    names: HashMap<Value, String>,
    indent: usize,
    options: PrintOptions,
}

impl<'a> Printer<'a> {
    /// Writes `s` as it is.
    pub fn write(&mut self, s: &str) {
        self.out.push_str(s);
    }

    /// Writes a value's SSA name.
    pub fn value(&mut self, v: Value) {
        let name = self.names.get(&v).map(String::as_str).unwrap_or("<<UNKNOWN>>");
        write!(self.out, "%{name}").expect("writing to a String");
    }

    /// Writes values separated by commas.
    pub fn values(&mut self, vs: &[Value]) {
        for (i, &v) in vs.iter().enumerate() {
            if i > 0 {
                self.write(", ");
            }
            self.value(v);
        }
    }

    /// Writes a type.
    pub fn ty(&mut self, ty: &Type) {
        self.out.push_str(&type_to_string(ty));
    }

    /// Writes types separated by commas.
    pub fn types(&mut self, tys: &[&Type]) {
        for (i, t) in tys.iter().enumerate() {
            if i > 0 {
                self.write(", ");
            }
            self.ty(t);
        }
    }

    /// Writes a value's type.
    pub fn value_type(&mut self, v: Value) {
        let ty = self.body.value_type(v).clone();
        self.ty(&ty);
    }

    /// ` {a = 1, b}` for the attributes not in `elided`, or nothing.
    pub fn attr_dict(&mut self, attrs: &Attributes, elided: &[&str]) {
        if attrs.iter().any(|(n, _)| !elided.contains(&n)) {
            self.write(" ");
            self.write(&dict_to_string(attrs, elided));
        }
    }

    /// ` {` then the region's ops, one per line, then `}`. The entry block's
    /// arguments are printed by the op's own syntax, not here.
    pub fn region(&mut self, region: Region) {
        self.write("{\n");
        self.indent += 1;
        self.region_ops(region);
        self.indent -= 1;
        self.write_indent();
        self.write("}");
    }

    fn region_ops(&mut self, region: Region) {
        for &block in &self.body.regions[region].blocks {
            for &op in &self.body.blocks[block].ops {
                self.write_indent();
                self.op(op);
                self.write("\n");
            }
        }
    }

    fn write_indent(&mut self) {
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
    }

    fn op(&mut self, op: Op) {
        let results = self.body.ops[op].results.clone();
        if !results.is_empty() {
            self.values(&results);
            self.write(" = ");
        }
        let def = self.body.ops[op].def;
        if self.options.generic {
            self.generic_op(op);
        } else {
            self.write(def.name);
            (def.print)(self, op);
        }
    }

    fn generic_op(&mut self, op: Op) {
        let data = &self.body.ops[op];
        let (operands, results, regions) = (data.operands.clone(), data.results.clone(), data.regions.clone());
        write!(self.out, "\"{}\"(", data.def.name).expect("writing to a String");
        self.values(&operands);
        self.write(")");
        if !regions.is_empty() {
            self.write(" (");
            for (i, &region) in regions.iter().enumerate() {
                if i > 0 {
                    self.write(", ");
                }
                self.generic_region(region);
            }
            self.write(")");
        }
        let attrs = self.body.ops[op].attrs.clone();
        self.attr_dict(&attrs, &[]);
        self.write(" : (");
        let operand_types: Vec<Type> = operands.iter().map(|&v| self.body.value_type(v).clone()).collect();
        self.types(&operand_types.iter().collect::<Vec<_>>());
        self.write(") -> ");
        let result_types: Vec<Type> = results.iter().map(|&v| self.body.value_type(v).clone()).collect();
        if result_types.len() == 1 {
            self.ty(&result_types[0]);
        } else {
            self.write("(");
            self.types(&result_types.iter().collect::<Vec<_>>());
            self.write(")");
        }
    }

    /// `{\n^bb0(%a: T):\n ops }`: the generic form names block arguments in
    /// a label.
    fn generic_region(&mut self, region: Region) {
        self.write("{\n");
        let block = self.body.entry_block(region);
        let args = self.body.blocks[block].args.clone();
        self.write_indent();
        self.write("^bb0");
        if !args.is_empty() {
            self.write("(");
            self.typed_values(&args);
            self.write(")");
        }
        self.write(":\n");
        self.indent += 1;
        self.region_ops(region);
        self.indent -= 1;
        self.write_indent();
        self.write("}");
    }

    /// `%a: T, %b: U`
    pub fn typed_values(&mut self, vs: &[Value]) {
        for (i, &v) in vs.iter().enumerate() {
            if i > 0 {
                self.write(", ");
            }
            self.value(v);
            self.write(": ");
            self.value_type(v);
        }
    }

    fn print_function(&mut self, func: &Function) {
        let args = func.args().to_vec();
        let has_arg_attrs = func.arg_attrs.iter().any(|a| !a.is_empty());
        if self.options.generic {
            write!(self.out, "\"{FUNC_OP}\"() (").expect("writing to a String");
            self.generic_region(func.region);
            self.write(")");
            let mut attrs = Attributes::new();
            attrs.set("sym_name", Attribute::String(func.name.clone()));
            if has_arg_attrs {
                attrs.set("arg_attrs", Attribute::Array(func.arg_attrs.iter().cloned().map(Attribute::Dict).collect()));
            }
            for (name, attr) in func.attrs.iter() {
                attrs.set(name, attr.clone());
            }
            self.attr_dict(&attrs, &[]);
            self.write(" : () -> ()\n");
            return;
        }
        write!(self.out, "{FUNC_OP} @{}(", func.name).expect("writing to a String");
        for (i, &arg) in args.iter().enumerate() {
            if i > 0 {
                self.write(", ");
            }
            self.typed_values(&[arg]);
            if let Some(attrs) = func.arg_attrs.get(i) {
                self.attr_dict(attrs, &[]);
            }
        }
        self.write(")");
        if !func.attrs.is_empty() {
            self.write(" attributes");
            self.attr_dict(&func.attrs, &[]);
        }
        self.write(" ");
        self.region(func.region);
        self.write("\n");
    }
}

/// `<2x128x64xbf16, #layout>`: the body of a tile or buffer type.
fn shaped_body(shape: impl Iterator<Item = i64>, elem: ElemType, layout: Option<&Layout>) -> String {
    let mut s = String::from("<");
    for d in shape {
        match crate::ir::Param::from_extent(d) {
            Some(param) => write!(s, "{}x", param.name()),
            None => write!(s, "{d}x"),
        }
        .expect("writing to a String");
    }
    s.push_str(elem.mnemonic());
    if let Some(layout) = layout {
        s.push_str(", ");
        s.push_str(&layout_to_string(layout));
    }
    s.push('>');
    s
}

/// A type as the IR spells it.
pub fn type_to_string(ty: &Type) -> String {
    match ty {
        Type::Scalar(e) => e.mnemonic().to_string(),
        Type::Tile(t) => format!("tensor{}", shaped_body(t.shape.iter().copied(), t.elem, t.layout.as_ref())),
        Type::Smem(s) => format!(
            "!nv.smem{}",
            shaped_body(std::iter::once(s.stages).chain(s.tile.shape.iter().copied()), s.tile.elem, s.tile.layout.as_ref())
        ),
        Type::MBarrier(n) => format!("!nv.mbarrier<{n}>"),
        Type::Ref(r) => {
            let mut s = String::from("!tile.ref<");
            for d in &r.shape {
                match d {
                    Some(d) => write!(s, "{d}x").expect("writing to a String"),
                    None => s.push_str("?x"),
                }
            }
            s.push_str(r.elem.mnemonic());
            s.push('>');
            s
        }
    }
}

fn ints_to_string(v: &[u32]) -> String {
    let items: Vec<String> = v.iter().map(u32::to_string).collect();
    format!("[{}]", items.join(", "))
}

/// A layout as the IR spells it.
pub fn layout_to_string(layout: &Layout) -> String {
    let params = match layout {
        Layout::NvmmaShared { swizzle_bytes, transposed, padding_elems } => {
            let mut s = format!("swizzle = {swizzle_bytes}");
            if *transposed {
                s.push_str(", transposed = true");
            }
            if *padding_elems != 0 {
                write!(s, ", padding = {padding_elems}").expect("writing to a String");
            }
            s
        }
        Layout::Mma { version, warps_per_cta, instr_shape } => format!(
            "version = {version}, warps_per_cta = {}, instr_shape = {}",
            ints_to_string(warps_per_cta),
            ints_to_string(instr_shape)
        ),
        Layout::DotOperand { op_idx, k_width, parent } => {
            format!("op_idx = {op_idx}, k_width = {k_width}, parent = {}", layout_to_string(parent))
        }
        Layout::Blocked { size_per_thread, threads_per_warp, warps_per_cta, order } => format!(
            "size_per_thread = {}, threads_per_warp = {}, warps_per_cta = {}, order = {}",
            ints_to_string(size_per_thread),
            ints_to_string(threads_per_warp),
            ints_to_string(warps_per_cta),
            ints_to_string(order)
        ),
        Layout::Slice { dim, parent } => format!("dim = {dim}, parent = {}", layout_to_string(parent)),
    };
    format!("#tile.{}<{params}>", layout.mnemonic())
}

/// A float as MLIR reads it back exactly: always with a `.` or exponent.
pub fn float_to_string(v: f64) -> String {
    let s = format!("{v:?}");
    if s.contains(['.', 'e', 'E']) || s.contains("inf") || s.contains("NaN") {
        s
    } else {
        format!("{s}.0")
    }
}

/// An attribute as the IR spells it.
pub fn attribute_to_string(attr: &Attribute) -> String {
    match attr {
        Attribute::Unit => "unit".to_string(),
        Attribute::Bool(b) => b.to_string(),
        Attribute::Int(v, ElemType::I64) => v.to_string(),
        Attribute::Int(v, ty) => format!("{v} : {}", ty.mnemonic()),
        Attribute::Float(v, ty) => format!("{} : {}", float_to_string(*v), ty.mnemonic()),
        Attribute::String(s) => format!("{s:?}"),
        Attribute::Array(items) => {
            let items: Vec<String> = items.iter().map(attribute_to_string).collect();
            format!("[{}]", items.join(", "))
        }
        Attribute::Type(t) => type_to_string(t),
        Attribute::Dict(d) => dict_to_string(d, &[]),
    }
}

/// `{a = 1, b}`: a dictionary without the names in `elided`.
fn dict_to_string(attrs: &Attributes, elided: &[&str]) -> String {
    let items: Vec<String> = attrs
        .iter()
        .filter(|(n, _)| !elided.contains(n))
        .map(|(name, attr)| match attr {
            Attribute::Unit => name.to_string(),
            _ => format!("{name} = {}", attribute_to_string(attr)),
        })
        .collect();
    format!("{{{}}}", items.join(", "))
}
