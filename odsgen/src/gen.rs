//! Writes the Rust of a dialect from its definitions: the op table, a typed
//! view and builder per op, and, from the assembly format, the parser,
//! printer and structural verifier.

use crate::def::{Arity, AttrDef, AttrType, Dialect, Kind, OpDef, ValueDef};
use crate::format::Element;
use std::fmt::Write;

/// `tile.dot` -> `TileDot`.
pub fn variant(name: &str) -> String {
    name.split(['.', '_'])
        .map(|w| {
            let mut c = w.chars();
            c.next().map(|f| f.to_uppercase().chain(c).collect::<String>()).unwrap_or_default()
        })
        .collect()
}

/// The `Opcode` enum over every dialect, in table order; `dialects` pairs
/// each dialect with the module that holds its `OPS` table.
pub fn opcodes(dialects: &[(&Dialect, &str)]) -> String {
    let mut s = String::new();
    s.push_str("/// Every op of every dialect; `match`es on it are checked for exhaustiveness.\n");
    s.push_str("#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]\npub enum Opcode {\n");
    for (d, _) in dialects {
        for op in &d.ops {
            writeln!(s, "    /// `{}`: {}", op.name, op.summary).unwrap();
            writeln!(s, "    {},", variant(&op.name)).unwrap();
        }
    }
    s.push_str("}\n\nimpl Opcode {\n    /// Every opcode, in table order.\n    pub const ALL: &'static [Opcode] = &[\n");
    for (d, _) in dialects {
        for op in &d.ops {
            writeln!(s, "        Opcode::{},", variant(&op.name)).unwrap();
        }
    }
    s.push_str("    ];\n\n    /// The op's definition.\n    pub fn def(self) -> &'static OpDef {\n        match self {\n");
    for (d, module) in dialects {
        for (i, op) in d.ops.iter().enumerate() {
            writeln!(s, "            Opcode::{} => &{module}::OPS[{i}],", variant(&op.name)).unwrap();
        }
    }
    s.push_str("        }\n    }\n\n    /// The op's name as written in the IR (`tile.dot`).\n    pub fn name(self) -> &'static str {\n        self.def().name\n    }\n}\n");
    s
}

/// The code included in the dialect's module.
pub fn dialect(d: &Dialect) -> String {
    let mut s = String::new();
    s.push_str("#[allow(unused_imports)]\nuse crate::ir::{Attribute, Attributes, Block, Body, ElemType, Op, Region, Type, Value};\n");
    s.push_str("#[allow(unused_imports)]\nuse crate::ir::Builder;\n");
    s.push_str("#[allow(unused_imports)]\nuse crate::diagnostic::Diagnostic;\n");
    s.push_str("#[allow(unused_imports)]\nuse crate::registry::{OpDef, OpTraits, Opcode, ParsedOp};\n");
    s.push_str("#[allow(unused_imports)]\nuse crate::syntax::{Parser, Printer};\n\n");
    s.push_str("/// The dialect's ops, in `Opcode` order.\npub static OPS: &[OpDef] = &[\n");
    for op in &d.ops {
        let sfx = op.const_name().to_lowercase();
        let t = &op.traits;
        let parse = op.custom_parse.clone().unwrap_or_else(|| format!("parse_{sfx}"));
        let print = op.custom_print.clone().unwrap_or_else(|| format!("print_{sfx}"));
        let fold = op.fold.as_ref().map_or("None".to_string(), |f| format!("Some({f})"));
        writeln!(
            s,
            "    OpDef {{ name: {:?}, opcode: Opcode::{}, summary: {:?}, traits: OpTraits {{ terminator: {}, pure: {}, constant: {}, elected: {}, synchronising: {}, reads_memory: {}, writes_memory: {}, elementwise: {}, crosses_columns: {}, aligned: {}, converges: {} }}, parse: {parse}, print: {print}, verify: verify_{sfx}, fold: {fold} }},",
            op.name, variant(&op.name), op.summary, t.terminator, t.pure, t.constant, t.elected, t.synchronising, t.reads, t.writes, t.elementwise, t.crosses_columns, t.aligned, t.converges
        )
        .unwrap();
    }
    s.push_str("];\n\n");
    for class in &d.classes {
        let members = d.members(class);
        let Some(first) = members.first() else { continue };
        let opcodes: Vec<String> = members.iter().map(|m| variant(&m.name)).collect();
        let names: Vec<String> = members.iter().map(|m| format!("`{}`", m.name)).collect();
        let class_op = OpDef { view: class.clone(), summary: format!("any of {}", names.join(", ")), ..(*first).clone() };
        view(&mut s, &class_op, &opcodes, false);
    }
    for op in &d.ops {
        view(&mut s, op, &[variant(&op.name)], true);
        verify(&mut s, op);
        if let Some(format) = &op.format {
            parse(&mut s, op, format);
            print(&mut s, op, format);
        }
    }
    s
}

/// Rust that checks the count of `values` (an expression of a slice's length).
fn count_check(values: &[ValueDef], len: &str) -> String {
    let fixed = values.iter().filter(|v| v.arity == Arity::One).count();
    match values.iter().find(|v| v.arity != Arity::One).map(|v| v.arity) {
        None => format!("{len} == {fixed}"),
        Some(Arity::Optional) => format!("({fixed}..={}).contains(&{len})", fixed + 1),
        Some(_) if fixed == 0 => "true".to_string(),
        Some(_) => format!("{len} >= {fixed}"),
    }
}

/// The expression giving value `i` of `list` (`operands` or `results`) of `d`.
fn access(values: &[ValueDef], i: usize, list: &str) -> (String, String) {
    let total = values.len();
    let group = values.iter().position(|v| v.arity != Arity::One);
    let v = &values[i];
    let vs = format!("body.ops[self.0].{list}");
    match (v.arity, group) {
        (Arity::One, Some(g)) if i > g => ("Value".into(), format!("{{ let vs = &{vs}; vs[vs.len() - {}] }}", total - i)),
        (Arity::One, _) => ("Value".into(), format!("{vs}[{i}]")),
        (Arity::Optional, _) => {
            let fixed = total - 1;
            ("Option<Value>".into(), format!("{{ let vs = &{vs}; (vs.len() > {fixed}).then(|| vs[{i}]) }}"))
        }
        (Arity::Variadic, _) => ("&'b [Value]".into(), format!("{{ let vs = &{vs}; &vs[{i}..vs.len() - {}] }}", total - 1 - i)),
    }
}

fn attr_present(a: &AttrDef, attrs: &str) -> String {
    match &a.ty {
        AttrType::Unit => "true".into(),
        AttrType::I64 => format!("{attrs}.get_int({:?}).is_some()", a.name),
        AttrType::Enum(w) => format!("{attrs}.get_int({:?}).is_some_and(|v| (0..{}).contains(&v))", a.name, w.len()),
        AttrType::Str => format!("{attrs}.get({:?}).and_then(Attribute::as_str).is_some()", a.name),
        AttrType::Keyword(w) => {
            format!("{attrs}.get({:?}).and_then(Attribute::as_str).is_some_and(|v| {:?}.contains(&v))", a.name, w)
        }
    }
}

/// The typed view of `op`, accepting the ops of `opcodes` (one, or a
/// class's members); a single op's view also gets its builder.
fn view(s: &mut String, op: &OpDef, opcodes: &[String], single: bool) {
    let v = &op.view;
    let title = if single { format!("`{}`: {}", op.name, op.summary) } else { format!("{}: {}", op.view, op.summary) };
    writeln!(s, "/// {title}\n#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]\npub struct {v}(Op);\n").unwrap();
    // Generated code keeps one shape for every op rather than the tersest
    // Rust for each.
    writeln!(s, "#[allow(clippy::needless_lifetimes, clippy::len_zero, clippy::identity_op, clippy::nonminimal_bool)]\nimpl {v} {{").unwrap();
    if single {
        writeln!(s, "    /// The opcode this view accepts.\n    pub const OPCODE: Opcode = Opcode::{};\n", opcodes[0]).unwrap();
    }
    let alternatives: Vec<String> = opcodes.iter().map(|o| format!("Opcode::{o}")).collect();
    let mut of_checks = vec![format!("matches!(d.def.opcode, {})", alternatives.join(" | "))];
    of_checks.push(count_check(&op.operands, "d.operands.len()"));
    of_checks.push(count_check(&op.results, "d.results.len()"));
    of_checks.push(format!("d.regions.len() == {}", op.regions.len()));
    for a in op.attrs.iter().filter(|a| a.required()) {
        of_checks.push(attr_present(a, "d.attrs"));
    }
    writeln!(
        s,
        "    /// The view of `op` if it is a well-formed {} (its counts and required attributes as defined).\n    pub fn of(body: &Body, op: Op) -> Option<Self> {{\n        let d = &body.ops[op];\n        ({}).then_some(Self(op))\n    }}\n",
        if single { format!("`{}`", op.name) } else { format!("op of class {v}") },
        of_checks.join("\n            && ")
    )
    .unwrap();
    s.push_str("    /// The op this is a view of.\n    pub fn op(self) -> Op {\n        self.0\n    }\n\n");
    for (list, what, values) in [("operands", "operand", &op.operands), ("results", "result", &op.results)] {
        for (i, val) in values.iter().enumerate() {
            let (ty, expr) = access(values, i, list);
            let doc = value_doc(what, val);
            writeln!(s, "    /// {doc}\n    pub fn {}<'b>(self, body: &'b Body) -> {ty} {{\n        {expr}\n    }}\n", val.name).unwrap();
        }
    }
    let group = op.operands.iter().position(|o| o.arity != Arity::One);
    for (i, o) in op.operands.iter().enumerate().filter(|(_, o)| o.arity == Arity::One) {
        let index = match group {
            Some(g) if i > g => format!("vs.len() - {}", op.operands.len() - i),
            _ => i.to_string(),
        };
        writeln!(
            s,
            "    /// Makes the op use `v` as its `{}`.\n    pub fn set_{}(self, body: &mut Body, v: Value) {{\n        let vs = &mut body.ops[self.0].operands;\n        let i = {index};\n        vs[i] = v;\n    }}\n",
            o.name, o.name
        )
        .unwrap();
    }
    for (i, r) in op.regions.iter().enumerate() {
        writeln!(s, "    /// The `{r}` region.\n    pub fn {r}(self, body: &Body) -> Region {{\n        body.ops[self.0].regions[{i}]\n    }}\n").unwrap();
    }
    for a in &op.attrs {
        let get = "body.ops[self.0].attrs";
        let n = &a.name;
        let (ty, expr) = match (&a.ty, a.required(), a.default) {
            (AttrType::Unit, _, _) => ("bool".to_string(), format!("{get}.has({n:?})")),
            (AttrType::I64 | AttrType::Enum(_), true, _) => ("i64".into(), format!("{get}.get_int({n:?}).expect(\"checked by of()\")")),
            (AttrType::I64 | AttrType::Enum(_), false, Some(d)) => ("i64".into(), format!("{get}.get_int({n:?}).unwrap_or({d})")),
            (AttrType::I64 | AttrType::Enum(_), false, None) => ("Option<i64>".into(), format!("{get}.get_int({n:?})")),
            (AttrType::Str | AttrType::Keyword(_), true, _) => {
                ("&'b str".into(), format!("{get}.get({n:?}).and_then(Attribute::as_str).expect(\"checked by of()\")"))
            }
            (AttrType::Str | AttrType::Keyword(_), false, _) => ("Option<&'b str>".into(), format!("{get}.get({n:?}).and_then(Attribute::as_str)")),
        };
        writeln!(s, "    /// {}\n    pub fn {n}<'b>(self, body: &'b Body) -> {ty} {{\n        {expr}\n    }}\n", attr_doc(a)).unwrap();
    }
    if single {
        builder(s, op);
    } else {
        s.push_str("    /// Which member of the class the op is.\n    pub fn opcode(self, body: &Body) -> Opcode {\n        body.ops[self.0].def.opcode\n    }\n\n");
    }
    s.push_str("}\n\n");
}

/// The doc line of a generated operand or result accessor (`what`): its
/// name, the kind of value it must be, and what an absent or variadic
/// value reads as.
fn value_doc(what: &str, v: &ValueDef) -> String {
    let kind = match v.kind {
        Kind::Any => "of any type",
        Kind::Index => "an `index`",
        Kind::I1 => "an `i1`",
        Kind::Tile => "a tile",
        Kind::Ref => "a global tensor reference",
        Kind::Smem => "an `!nv.smem` buffer",
        Kind::MBarrier => "an `!nv.mbarrier`",
    };
    match v.arity {
        Arity::One => format!("The `{}` {what}, {kind}.", v.name),
        Arity::Optional => format!("The `{}` {what}, {kind}; `None` when absent.", v.name),
        Arity::Variadic => format!("The `{}` {what}s (a variadic group), each {kind}.", v.name),
    }
}

/// The doc line of a generated attribute accessor: its name, its type (the
/// words of an enum or keyword) and what an absent one reads as.
fn attr_doc(a: &AttrDef) -> String {
    let n = &a.name;
    let what = match &a.ty {
        AttrType::Unit => return format!("Whether the unit attribute `{n}` is set."),
        AttrType::I64 => format!("The `{n}` attribute, an integer"),
        AttrType::Str => format!("The `{n}` attribute, a string"),
        AttrType::Enum(w) => format!("The `{n}` attribute: the position of its word in `{}`", w.join("|")),
        AttrType::Keyword(w) => format!("The `{n}` attribute, one of `{}`", w.join("|")),
    };
    match (a.required(), a.default) {
        (true, _) => format!("{what}."),
        (false, Some(d)) => format!("{what}; {d} when absent."),
        (false, None) => format!("{what}; `None` when absent."),
    }
}

/// Whether the builder can take `r`'s type from an operand.
fn inferred_from<'a>(op: &'a OpDef, r: &ValueDef) -> Option<&'a ValueDef> {
    op.matched_with(&r.name).into_iter().find_map(|m| op.operand(m).filter(|o| o.arity == r.arity || o.arity == Arity::One))
}

fn fixed_type(kind: Kind) -> Option<&'static str> {
    match kind {
        Kind::Index => Some("Type::INDEX"),
        Kind::I1 => Some("Type::Scalar(ElemType::I1)"),
        _ => None,
    }
}

fn builder(s: &mut String, op: &OpDef) {
    let mut params = vec!["builder: &mut Builder<'_>".to_string()];
    let mut body = vec!["let mut operands: Vec<Value> = Vec::new();".to_string()];
    for o in &op.operands {
        let (ty, push) = match o.arity {
            Arity::One => ("Value", format!("operands.push({});", o.name)),
            Arity::Optional => ("Option<Value>", format!("operands.extend({});", o.name)),
            Arity::Variadic => ("&[Value]", format!("operands.extend_from_slice({});", o.name)),
        };
        params.push(format!("{}: {ty}", o.name));
        body.push(push);
    }
    body.push("let mut result_types: Vec<Type> = Vec::new();".into());
    for r in &op.results {
        if let Some(t) = fixed_type(r.kind) {
            body.push(format!("result_types.push({t});"));
        } else if let Some(o) = inferred_from(op, r) {
            match (o.arity, r.arity) {
                (Arity::One, Arity::One) => body.push(format!("result_types.push(builder.body.value_type({}).clone());", o.name)),
                (Arity::Variadic, Arity::Variadic) => {
                    body.push(format!("result_types.extend({}.iter().map(|&v| builder.body.value_type(v).clone()));", o.name))
                }
                _ => body.push(format!("result_types.extend({}.map(|v| builder.body.value_type(v).clone()));", o.name)),
            }
        } else {
            match r.arity {
                Arity::One => {
                    params.push(format!("{}_ty: Type", r.name));
                    body.push(format!("result_types.push({}_ty);", r.name));
                }
                Arity::Optional => {
                    params.push(format!("{}_ty: Option<Type>", r.name));
                    body.push(format!("result_types.extend({}_ty);", r.name));
                }
                Arity::Variadic => {
                    params.push(format!("{}_ty: &[Type]", r.name));
                    body.push(format!("result_types.extend_from_slice({}_ty);", r.name));
                }
            }
        }
    }
    body.push("let mut all = Attributes::new();".into());
    for a in op.attrs.iter().filter(|a| a.required()) {
        let (ty, val) = match a.ty {
            AttrType::I64 | AttrType::Enum(_) => ("i64", format!("Attribute::Int({}, ElemType::I64)", a.name)),
            _ => ("&str", format!("Attribute::String({}.to_string())", a.name)),
        };
        params.push(format!("{}: {ty}", a.name));
        body.push(format!("all.set({:?}, {val});", a.name));
    }
    params.push("attrs: Attributes".into());
    body.push("for (n, v) in attrs.iter() {\n            all.set(n, v.clone());\n        }".into());
    body.push("Self(builder.create(Self::OPCODE, operands, &result_types, all))".into());
    writeln!(
        s,
        "    /// Builds a `{}` at the builder's insertion point; `attrs` are added to those the arguments give.\n    #[allow(unused_mut, clippy::too_many_arguments, clippy::vec_init_then_push)]\n    pub fn build({}) -> Self {{\n        {}\n    }}\n",
        op.name,
        params.join(", "),
        body.join("\n        ")
    )
    .unwrap();
}

fn kind_check(kind: Kind, ty: &str) -> Option<(String, &'static str)> {
    Some(match kind {
        Kind::Any => return None,
        Kind::Index => (format!("{ty}.is_index()"), "'index'"),
        Kind::I1 => (format!("*{ty} == Type::Scalar(ElemType::I1)"), "'i1'"),
        Kind::Tile => (format!("{ty}.as_tile().is_some()"), "a tile"),
        Kind::Ref => (format!("{ty}.as_ref_type().is_some()"), "a global tensor reference"),
        Kind::Smem => (format!("{ty}.as_smem().is_some()"), "a '!nv.smem' buffer"),
        Kind::MBarrier => (format!("matches!({ty}, Type::MBarrier(_))"), "an '!nv.mbarrier'"),
    })
}

/// Counts, value kinds, required attributes, then the hand-written checks.
fn verify(s: &mut String, op: &OpDef) {
    let sfx = op.const_name().to_lowercase();
    let mut b = String::new();
    let fixed = |vs: &[ValueDef]| vs.iter().filter(|v| v.arity == Arity::One).count();
    for (list, what, values) in [("operands", "operand", &op.operands), ("results", "result", &op.results)] {
        let n = fixed(values);
        let expect = match values.iter().find(|v| v.arity != Arity::One).map(|v| v.arity) {
            None => format!("{n}"),
            Some(Arity::Optional) => format!("{n} or {}", n + 1),
            Some(_) => format!("at least {n}"),
        };
        writeln!(
            b,
            "    if !({}) {{\n        return Err(format!(\"expects {expect} {what}(s), found {{}}\", d.{list}.len()));\n    }}",
            count_check(values, &format!("d.{list}.len()"))
        )
        .unwrap();
    }
    let r = op.regions.len();
    writeln!(b, "    if d.regions.len() != {r} {{\n        return Err(format!(\"expects {r} region(s), found {{}}\", d.regions.len()));\n    }}").unwrap();
    for a in op.attrs.iter().filter(|a| a.required()) {
        let what = match &a.ty {
            AttrType::I64 => "an integer".to_string(),
            AttrType::Str => "a string".to_string(),
            AttrType::Enum(w) | AttrType::Keyword(w) => format!("one of {}", w.join(", ")),
            AttrType::Unit => unreachable!("unit attributes are never required"),
        };
        writeln!(b, "    if !({}) {{\n        return Err(\"requires a '{}' attribute, {what}\".into());\n    }}", attr_present(a, "d.attrs"), a.name).unwrap();
    }
    // A unit attribute is set by its name alone: `{multicast = 3}` is a
    // mistake, not a way of setting it.
    for a in op.attrs.iter().filter(|a| a.ty == AttrType::Unit) {
        writeln!(
            b,
            "    if d.attrs.get({:?}).is_some_and(|v| !matches!(v, Attribute::Unit)) {{\n        return Err(\"'{}' is a unit attribute: write it without a value\".into());\n    }}",
            a.name, a.name
        )
        .unwrap();
    }
    let v = &op.view;
    let mut kinds = String::new();
    for (values, what) in [(&op.operands, "operand"), (&op.results, "result")] {
        for val in values.iter() {
            let Some((check, desc)) = kind_check(val.kind, "body.value_type(v)") else { continue };
            let msg = format!("{what} '{}' must be {desc}", val.name);
            let line = match val.arity {
                Arity::One => format!("    {{ let v = view.{}(body); if !({check}) {{ return Err({msg:?}.into()); }} }}\n", val.name),
                Arity::Optional => format!("    if let Some(v) = view.{}(body) {{ if !({check}) {{ return Err({msg:?}.into()); }} }}\n", val.name),
                Arity::Variadic => format!("    for &v in view.{}(body) {{ if !({check}) {{ return Err({msg:?}.into()); }} }}\n", val.name),
            };
            kinds.push_str(&line);
        }
    }
    for group in &op.types_match {
        kinds.push_str(&types_match_check(op, group));
    }
    if !kinds.is_empty() {
        writeln!(b, "    let view = {v}::of(body, op).expect(\"counts and attributes checked\");\n{kinds}").unwrap();
    }
    let tail = op.verify.as_ref().map_or("Ok(())".to_string(), |f| format!("{f}(body, op)"));
    writeln!(s, "#[allow(clippy::len_zero, clippy::nonminimal_bool, clippy::identity_op)]\nfn verify_{sfx}(body: &Body, op: Op) -> Result<(), String> {{\n    let d = &body.ops[op];\n{b}    {tail}\n}}\n").unwrap();
}

/// Rust that checks that the members of a `types-match` group share one
/// type (one for one where they are variadic).
fn types_match_check(op: &OpDef, group: &[String]) -> String {
    let value = |n: &str| op.operand(n).or(op.result(n)).expect("checked: members are values");
    let names: Vec<String> = group.iter().map(|n| format!("'{n}'")).collect();
    let (last, rest) = names.split_last().expect("a group has members");
    let msg = if rest.is_empty() { format!("{last} must have one type") } else { format!("{} and {last} must have one type", rest.join(", ")) };
    let first = &group[0];
    let mut out = String::new();
    for other in &group[1..] {
        let line = match (value(first).arity, value(other).arity) {
            (Arity::Variadic, _) | (_, Arity::Variadic) => format!(
                "    {{ let (x, y) = (view.{first}(body), view.{other}(body)); if x.len() != y.len() || x.iter().zip(y).any(|(&x, &y)| body.value_type(x) != body.value_type(y)) {{ return Err({msg:?}.into()); }} }}\n"
            ),
            _ => format!(
                "    if body.value_type(view.{first}(body)) != body.value_type(view.{other}(body)) {{ return Err({msg:?}.into()); }}\n"
            ),
        };
        out.push_str(&line);
    }
    out
}

fn is_word(lit: &str) -> bool {
    lit.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Printing puts a space before each element except closing punctuation
/// and brackets, and nothing right after an opening bracket.
fn space_before(e: &Element, prev: Option<&Element>) -> bool {
    if matches!(prev, Some(Element::Literal(l)) if l == "[" || l == "(") {
        return false;
    }
    match e {
        Element::Literal(l) => !matches!(l.as_str(), "," | "]" | ")" | "[" | "("),
        Element::AttrDict => false,
        _ => true,
    }
}

fn parse(s: &mut String, op: &OpDef, format: &[Element]) {
    let sfx = op.const_name().to_lowercase();
    let mut b = String::new();
    b.push_str("    let mut attrs = Attributes::new();\n");
    for o in &op.operands {
        match o.arity {
            Arity::One => writeln!(b, "    let mut {} = None;", o.name).unwrap(),
            Arity::Optional => writeln!(b, "    let mut {} = None;", o.name).unwrap(),
            Arity::Variadic => writeln!(b, "    let mut {} = Vec::new();", o.name).unwrap(),
        }
    }
    let typed: Vec<&str> = {
        let mut v = Vec::new();
        let mut t = Vec::new();
        crate::format::collect(format, &mut v, &mut t);
        t
    };
    for name in &typed {
        let variadic = op.operand(name).or(op.result(name)).is_some_and(|v| v.arity == Arity::Variadic);
        if variadic {
            writeln!(b, "    let mut ty_{name}: Vec<Type> = Vec::new();").unwrap();
        } else {
            writeln!(b, "    let mut ty_{name}: Option<Type> = None;").unwrap();
        }
    }
    for a in op.attrs.iter().filter(|a| format_names(format, &a.name)) {
        writeln!(b, "    let mut attr_{} = None;", a.name).unwrap();
    }
    for r in &op.regions {
        writeln!(b, "    let mut region_{r} = None;").unwrap();
    }
    parse_elements(&mut b, op, format, "    ");
    // Resolve operands in order, each with its type.
    b.push_str("    let mut operands = Vec::new();\n");
    for o in &op.operands {
        let ty = type_source(op, o, &typed);
        match o.arity {
            Arity::One => writeln!(b, "    operands.push(p.resolve(&{}.expect(\"parsed\"), &{ty})?);", o.name).unwrap(),
            Arity::Optional => writeln!(b, "    if let Some(o) = &{} {{ operands.push(p.resolve(o, &{ty})?); }}", o.name).unwrap(),
            Arity::Variadic if typed.contains(&o.name.as_str()) => {
                writeln!(b, "    operands.extend(p.resolve_all(&{}, &ty_{})?);", o.name, o.name).unwrap()
            }
            Arity::Variadic => writeln!(b, "    for o in &{} {{ operands.push(p.resolve(o, &{ty})?); }}", o.name).unwrap(),
        }
    }
    b.push_str("    let mut result_types: Vec<Type> = Vec::new();\n");
    for r in &op.results {
        if typed.contains(&r.name.as_str()) {
            // Cloned: a later result may take the same type (types-match).
            writeln!(b, "    result_types.extend(ty_{}.clone());", r.name).unwrap();
        } else if let Some(t) = fixed_type(r.kind) {
            writeln!(b, "    result_types.push({t});").unwrap();
        } else {
            let m = op.matched_with(&r.name).into_iter().find(|m| typed.contains(m)).expect("checked: a type source");
            writeln!(b, "    result_types.extend(ty_{m}.clone());").unwrap();
        }
    }
    for a in op.attrs.iter().filter(|a| format_names(format, &a.name)) {
        writeln!(b, "    if let Some(v) = attr_{} {{ attrs.set({:?}, v); }}", a.name, a.name).unwrap();
    }
    let regions: Vec<String> = op.regions.iter().map(|r| format!("region_{r}.expect(\"parsed\")")).collect();
    writeln!(b, "    Ok(ParsedOp {{ operands, result_types, attrs, regions: vec![{}] }})", regions.join(", ")).unwrap();
    writeln!(s, "#[allow(unused_mut, unused_variables, unused_assignments, clippy::all)]\nfn parse_{sfx}(p: &mut Parser<'_>) -> Result<ParsedOp, Diagnostic> {{\n{b}}}\n").unwrap();
}

fn format_names(format: &[Element], name: &str) -> bool {
    format.iter().any(|e| match e {
        Element::Var(v) => v == name,
        Element::Optional(inner, _) => format_names(inner, name),
        _ => false,
    })
}

/// The Rust expression of operand `o`'s type while parsing.
fn type_source(op: &OpDef, o: &ValueDef, typed: &[&str]) -> String {
    if typed.contains(&o.name.as_str()) {
        return format!("ty_{}.clone().expect(\"parsed\")", o.name);
    }
    if let Some(t) = fixed_type(o.kind) {
        return t.to_string();
    }
    let m = op.matched_with(&o.name).into_iter().find(|m| typed.contains(m)).expect("checked: a type source");
    format!("ty_{m}.clone().expect(\"parsed\")")
}

fn parse_elements(b: &mut String, op: &OpDef, elems: &[Element], ind: &str) {
    for e in elems {
        match e {
            Element::Literal(l) if is_word(l) => writeln!(b, "{ind}p.expect_keyword({l:?})?;").unwrap(),
            Element::Literal(l) => writeln!(b, "{ind}p.expect({l:?})?;").unwrap(),
            Element::AttrDict => {
                writeln!(b, "{ind}for (n, v) in p.parse_optional_attr_dict()?.iter() {{ attrs.set(n, v.clone()); }}").unwrap()
            }
            Element::Type(t) => {
                if op.operand(t).or(op.result(t)).is_some_and(|v| v.arity == Arity::Variadic) {
                    writeln!(b, "{ind}ty_{t} = p.parse_type_list()?;").unwrap()
                } else {
                    writeln!(b, "{ind}ty_{t} = Some(p.parse_type()?);").unwrap()
                }
            }
            Element::Var(v) => {
                if let Some(o) = op.operand(v) {
                    match o.arity {
                        Arity::Variadic => writeln!(b, "{ind}{v} = p.parse_operand_list()?;").unwrap(),
                        _ => writeln!(b, "{ind}{v} = Some(p.parse_operand()?);").unwrap(),
                    }
                } else if let Some(a) = op.attr(v) {
                    parse_attr(b, a, ind);
                } else {
                    writeln!(b, "{ind}region_{v} = Some(p.parse_region(&[])?);").unwrap();
                }
            }
            Element::Optional(inner, _) => match &inner[0] {
                Element::Literal(l) => {
                    let test = if is_word(l) { format!("p.consume_keyword({l:?})?") } else { format!("p.consume_if({l:?})?") };
                    writeln!(b, "{ind}if {test} {{").unwrap();
                    parse_elements(b, op, &inner[1..], &format!("{ind}    "));
                    writeln!(b, "{ind}}}").unwrap();
                }
                _ => parse_elements(b, op, inner, ind),
            },
        }
    }
}

fn parse_attr(b: &mut String, a: &AttrDef, ind: &str) {
    let n = &a.name;
    match &a.ty {
        AttrType::I64 => writeln!(b, "{ind}attr_{n} = Some(Attribute::Int(p.parse_int()?, ElemType::I64));").unwrap(),
        AttrType::Str => writeln!(b, "{ind}attr_{n} = Some(Attribute::String(p.parse_keyword()?.0));").unwrap(),
        AttrType::Enum(w) | AttrType::Keyword(w) => {
            let value = if matches!(a.ty, AttrType::Enum(_)) { "Attribute::Int(i as i64, ElemType::I64)" } else { "Attribute::String(word)" };
            let quoted: Vec<String> = w.iter().map(|x| format!("'{x}'")).collect();
            writeln!(
                b,
                "{ind}{{\n{ind}    let loc = p.loc();\n{ind}    let (word, _) = p.parse_keyword()?;\n{ind}    let Some(i) = {w:?}.iter().position(|x| *x == word) else {{\n{ind}        return Err(Diagnostic::error(loc, format!(\"expected '{n}' to be one of {}, found '{{word}}'\")));\n{ind}    }};\n{ind}    attr_{n} = Some({value});\n{ind}}}",
                quoted.join(", ")
            )
            .unwrap();
        }
        AttrType::Unit => unreachable!("checked: unit attributes are in attr-dict"),
    }
}

fn print(s: &mut String, op: &OpDef, format: &[Element]) {
    let sfx = op.const_name().to_lowercase();
    let mut b = String::new();
    writeln!(
        b,
        "    let Some(view) = {}::of(p.body, op) else {{\n        p.write(\" <<malformed>>\");\n        return;\n    }};\n    let attrs = p.body.ops[op].attrs.clone();",
        op.view
    )
    .unwrap();
    let elided: Vec<String> = op.attrs.iter().filter(|a| format_names(format, &a.name)).map(|a| format!("{:?}", a.name)).collect();
    let mut prev = None;
    print_elements(&mut b, op, format, &elided, &mut prev, "    ");
    writeln!(s, "#[allow(unused_variables, clippy::all)]\nfn print_{sfx}(p: &mut Printer<'_>, op: Op) {{\n{b}}}\n").unwrap();
}

fn print_elements<'a>(b: &mut String, op: &OpDef, elems: &'a [Element], elided: &[String], prev: &mut Option<&'a Element>, ind: &str) {
    for e in elems {
        if let Element::Optional(inner, anchor) = e {
            let name = match &inner[*anchor] {
                Element::Var(v) | Element::Type(v) => v,
                _ => unreachable!("checked: anchors are values"),
            };
            let present = match op.operand(name).map(|o| o.arity) {
                Some(Arity::Optional) => format!("view.{name}(p.body).is_some()"),
                _ => format!("!view.{name}(p.body).is_empty()"),
            };
            writeln!(b, "{ind}if {present} {{").unwrap();
            print_elements(b, op, inner, elided, prev, &format!("{ind}    "));
            writeln!(b, "{ind}}}").unwrap();
            continue;
        }
        if space_before(e, *prev) {
            writeln!(b, "{ind}p.write(\" \");").unwrap();
        }
        *prev = Some(e);
        match e {
            Element::Literal(l) => writeln!(b, "{ind}p.write({l:?});").unwrap(),
            Element::AttrDict => writeln!(b, "{ind}p.attr_dict(&attrs, &[{}]);", elided.join(", ")).unwrap(),
            Element::Type(t) => {
                let arity = op.operand(t).or(op.result(t)).map(|v| v.arity).expect("checked");
                match arity {
                    Arity::One => writeln!(b, "{ind}p.value_type(view.{t}(p.body));").unwrap(),
                    Arity::Optional => writeln!(b, "{ind}if let Some(v) = view.{t}(p.body) {{ p.value_type(v); }}").unwrap(),
                    Arity::Variadic => writeln!(
                        b,
                        "{ind}{{ let tys: Vec<Type> = view.{t}(p.body).iter().map(|&v| p.body.value_type(v).clone()).collect(); p.types(&tys.iter().collect::<Vec<_>>()); }}"
                    )
                    .unwrap(),
                }
            }
            Element::Var(v) => {
                if let Some(o) = op.operand(v) {
                    match o.arity {
                        Arity::One => writeln!(b, "{ind}p.value(view.{v}(p.body));").unwrap(),
                        Arity::Optional => writeln!(b, "{ind}if let Some(v) = view.{v}(p.body) {{ p.value(v); }}").unwrap(),
                        Arity::Variadic => writeln!(b, "{ind}{{ let vs = view.{v}(p.body).to_vec(); p.values(&vs); }}").unwrap(),
                    }
                } else if let Some(a) = op.attr(v) {
                    let n = &a.name;
                    match &a.ty {
                        AttrType::I64 => writeln!(b, "{ind}p.write(&attrs.get_int({n:?}).map_or(\"<<missing>>\".to_string(), |v| v.to_string()));").unwrap(),
                        AttrType::Enum(w) => writeln!(
                            b,
                            "{ind}p.write(attrs.get_int({n:?}).and_then(|i| usize::try_from(i).ok()).and_then(|i| {w:?}.get(i).copied()).unwrap_or(\"<<missing>>\"));"
                        )
                        .unwrap(),
                        _ => writeln!(b, "{ind}p.write(attrs.get({n:?}).and_then(Attribute::as_str).unwrap_or(\"<<missing>>\"));").unwrap(),
                    }
                } else {
                    writeln!(b, "{ind}p.region(view.{v}(p.body));").unwrap();
                }
            }
            Element::Optional(..) => unreachable!("handled above"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::def::parse_dialect;

    const SRC: &str = "dialect t\nop t.add_one AddOne {\n  summary: adds\n  traits: pure\n  operands: lhs: any, rest: index...\n  results: result: any\n  types-match: lhs, result\n  format: $lhs `[` $rest `]` attr-dict `:` type($lhs)\n}\n";

    /// The op `docs/adding-an-op.md` adds, as its first `text` block gives
    /// it, generates the opcode, view, accessors and builder the page says.
    #[test]
    fn the_adding_an_op_example_generates_what_the_page_says() {
        let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/adding-an-op.md")).expect("the page");
        let block = page.split("```text\n").nth(1).and_then(|rest| rest.split("```").next()).expect("a text block");
        let d = parse_dialect(&format!("dialect nv\n{block}")).unwrap_or_else(|e| panic!("the page's op does not parse: {e}\n{block}"));
        let code = dialect(&d);
        assert!(opcodes(&[(&d, "crate::nv")]).contains("Opcode::NvTmaLoad => &crate::nv::OPS[0],"));
        assert!(code.contains("pub struct TmaLoad(Op);"), "{code}");
        for accessor in ["tensor", "coords", "buffer", "stage", "barrier", "barrier_stage"] {
            assert!(code.contains(&format!("pub fn {accessor}<'b>(self, body: &'b Body)")), "no accessor {accessor}");
        }
        assert!(code.contains("pub fn set_buffer(self, body: &mut Body, v: Value)"));
        assert!(
            code.contains("pub fn build(builder: &mut Builder<'_>, tensor: Value, coords: &[Value], buffer: Value, stage: Value, barrier: Value, barrier_stage: Value, attrs: Attributes) -> Self"),
            "the builder the page names"
        );
    }

    #[test]
    fn variant_names_join_words() {
        assert_eq!(variant("nv.tma_load"), "NvTmaLoad");
        assert_eq!(variant("tile.dot"), "TileDot");
    }

    #[test]
    fn accessors_count_from_the_end_after_a_variadic_group() {
        let d = parse_dialect("dialect t\nop t.x X {\n  summary: s\n  operands: a: any, bs: index..., c: any\n  format: $a `,` $bs `,` $c attr-dict `:` type($a) `,` type($c)\n}\n").unwrap();
        let ops = &d.ops[0].operands;
        assert_eq!(access(ops, 0, "operands").1, "body.ops[self.0].operands[0]");
        assert!(access(ops, 1, "operands").1.contains("&vs[1..vs.len() - 1]"));
        assert!(access(ops, 2, "operands").1.contains("vs[vs.len() - 1]"));
    }

    #[test]
    fn result_type_is_inferred_from_a_matched_operand() {
        let d = parse_dialect(SRC).unwrap();
        let code = dialect(&d);
        assert!(code.contains("pub fn build(builder: &mut Builder<'_>, lhs: Value, rest: &[Value], attrs: Attributes) -> Self"));
        assert!(code.contains("result_types.push(builder.body.value_type(lhs).clone());"));
    }

    #[test]
    fn printer_spaces_like_mlir() {
        let d = parse_dialect(SRC).unwrap();
        let code = dialect(&d);
        let print = &code[code.find("fn print_add_one").unwrap()..];
        let writes: Vec<&str> = print.lines().filter_map(|l| l.trim().strip_prefix("p.write(")).collect();
        assert_eq!(writes, ["\" <<malformed>>\");", "\" \");", "\"[\");", "\"]\");", "\" \");", "\":\");", "\" \");"]);
    }

    #[test]
    fn opcodes_map_to_their_tables() {
        let d = parse_dialect(SRC).unwrap();
        let code = opcodes(&[(&d, "crate::t")]);
        assert!(code.contains("Opcode::TAddOne => &crate::t::OPS[0],"));
    }

    #[test]
    fn attributes_read_with_their_type_and_default() {
        let src = "dialect t\nop t.a A {\n  summary: s\n  attrs: n: i64 = 4, p: keyword(lt|gt), flag: unit, k: i64?\n  format: $p attr-dict\n}\n";
        let code = dialect(&parse_dialect(src).unwrap());
        assert!(code.contains("pub fn n<'b>(self, body: &'b Body) -> i64 {\n        body.ops[self.0].attrs.get_int(\"n\").unwrap_or(4)"), "{code}");
        assert!(code.contains("pub fn p<'b>(self, body: &'b Body) -> &'b str"));
        assert!(code.contains("pub fn flag<'b>(self, body: &'b Body) -> bool"));
        assert!(code.contains("pub fn k<'b>(self, body: &'b Body) -> Option<i64>"));
        assert!(code.contains("pub fn build(builder: &mut Builder<'_>, p: &str, attrs: Attributes) -> Self"), "only required attributes are builder arguments");
    }

    #[test]
    fn class_members_inherit_keys_and_share_a_view() {
        let src = "dialect t\nclass Bin {\n  summary: s\n  operands: lhs: index, rhs: index\n  results: result: index\n  format: $lhs `,` $rhs attr-dict\n}\nop t.add Add : Bin {\n  summary: adds\n}\nop t.sub Sub : Bin {\n  summary: subtracts\n}\n";
        let d = parse_dialect(src).unwrap();
        assert_eq!(d.ops[1].operands, d.ops[0].operands);
        assert_eq!(d.ops[1].summary, "subtracts");
        let code = dialect(&d);
        assert!(code.contains("pub struct Bin(Op);"));
        assert!(code.contains("matches!(d.def.opcode, Opcode::TAdd | Opcode::TSub)"));
    }

    #[test]
    fn a_format_must_type_every_value() {
        let err = parse_dialect("dialect t\nop t.y Y {\n  summary: s\n  operands: a: any\n  format: $a attr-dict\n}\n").unwrap_err();
        assert!(err.contains("no type for 'a'"), "{err}");
    }

    #[test]
    fn two_variadic_groups_are_rejected() {
        let err = parse_dialect("dialect t\nop t.z Z {\n  summary: s\n  operands: a: index..., b: index...\n  format: $a `,` $b attr-dict\n}\n").unwrap_err();
        assert!(err.contains("at most one variadic"), "{err}");
    }
}
