//! The op definition model and the reader of `.ods` files.
//!
//! A file names its dialect, then lists ops:
//!
//! ```text
//! dialect tile
//!
//! op tile.dot Dot {
//!   summary: C += A * B, with optional transpositions
//!   traits: pure
//!   operands: lhs: tile, rhs: tile, acc: tile
//!   results: result: tile
//!   attrs: transpose_a: unit, transpose_b: unit
//!   types-match: acc, result
//!   format: $lhs `,` $rhs `,` $acc attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
//!   verify: dot::verify_dot
//! }
//! ```
//!
//! Every key but `summary` is optional; `//` starts a comment line.
//!
//! A `class Name { ... }` block holds keys that several ops share; `op
//! tile.addi Addi : IntBinary { ... }` starts from the class's keys and
//! may override them. The class also gets a view, `IntBinary::of`, that
//! accepts any of its ops (as MLIR's op interfaces do).

use crate::format::{parse_format, Element};

/// How many values a declared operand or result stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arity {
    /// Exactly one (`acc: tile`).
    One,
    /// Zero or one (`a_stage: index?`).
    Optional,
    /// Any number, a variadic group (`coords: index...`).
    Variadic,
}

/// What a value must be. `Index` and `I1` also fix the value's type, so a
/// format needs no `type(...)` for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Any value.
    Any,
    /// An `index` scalar.
    Index,
    /// An `i1` scalar.
    I1,
    /// A tile.
    Tile,
    /// A global tensor reference.
    Ref,
    /// A shared-memory buffer.
    Smem,
    /// An mbarrier group.
    MBarrier,
}

impl Kind {
    fn parse(s: &str) -> Result<Kind, String> {
        Ok(match s {
            "any" => Kind::Any,
            "index" => Kind::Index,
            "i1" => Kind::I1,
            "tile" => Kind::Tile,
            "ref" => Kind::Ref,
            "smem" => Kind::Smem,
            "mbarrier" => Kind::MBarrier,
            _ => return Err(format!("unknown value kind '{s}' (any, index, i1, tile, ref, smem, mbarrier)")),
        })
    }
}

/// A declared operand or result.
#[derive(Clone, Debug, PartialEq)]
pub struct ValueDef {
    /// Its name: the typed view's accessor.
    pub name: String,
    /// What it must be.
    pub kind: Kind,
    /// How many values it stands for.
    pub arity: Arity,
}

/// The type of a declared attribute.
#[derive(Clone, Debug, PartialEq)]
pub enum AttrType {
    /// Present or absent (`{transpose_b}`).
    Unit,
    /// A 64-bit integer.
    I64,
    /// A string.
    Str,
    /// A word from the list, stored as its position (`block_id x` is `dim = 0`).
    Enum(Vec<String>),
    /// A word from the list, stored as a string (`cmpi slt`).
    Keyword(Vec<String>),
}

/// A declared attribute.
#[derive(Clone, Debug, PartialEq)]
pub struct AttrDef {
    /// Its name in the attribute dictionary and the accessor's name.
    pub name: String,
    /// Its type.
    pub ty: AttrType,
    /// May be absent (the accessor gives an `Option`).
    pub optional: bool,
    /// Its value when absent, for integer attributes.
    pub default: Option<i64>,
}

impl AttrDef {
    /// Must be present on every op (neither optional, defaulted nor a flag).
    pub fn required(&self) -> bool {
        !self.optional && self.default.is_none() && self.ty != AttrType::Unit
    }
}

/// An op's traits (`traits: pure, elected`), copied into the generated `OpTraits`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Traits {
    /// No side effects: may be moved, hoisted or erased when unused.
    pub pure: bool,
    /// Ends a block.
    pub terminator: bool,
    /// Materialises its `value` attribute.
    pub constant: bool,
    /// Issued by one thread of those executing it.
    pub elected: bool,
    /// Orders or waits on other threads or asynchronous units.
    pub synchronising: bool,
    /// Reads memory.
    pub reads: bool,
    /// Writes memory.
    pub writes: bool,
    /// Each result element is a function of the operands' elements at the
    /// same position: its tile operands and results share one layout.
    pub elementwise: bool,
    /// A result element reads operand elements of other columns.
    pub crosses_columns: bool,
    /// Executed by every thread of its warp or warpgroup together (`.aligned`).
    pub aligned: bool,
    /// Every thread executing it reaches it and waits there.
    pub converges: bool,
}

/// One op's declaration.
#[derive(Clone, Debug, PartialEq)]
pub struct OpDef {
    /// `tile.dot`
    pub name: String,
    /// `Dot`: the typed view's name.
    pub view: String,
    /// A one-line summary: the typed view's and the opcode's doc comment.
    pub summary: String,
    /// Its traits.
    pub traits: Traits,
    /// Its operands, in order.
    pub operands: Vec<ValueDef>,
    /// Its results, in order.
    pub results: Vec<ValueDef>,
    /// Its regions' names, in order.
    pub regions: Vec<String>,
    /// Its attributes.
    pub attrs: Vec<AttrDef>,
    /// Groups of operands and results that share one type.
    pub types_match: Vec<Vec<String>>,
    /// Its assembly format; `None` with custom syntax.
    pub format: Option<Vec<Element>>,
    /// Hand-written syntax (`control::parse_for`, `control::print_for`).
    pub custom_parse: Option<String>,
    /// Hand-written printer, named by path.
    pub custom_print: Option<String>,
    /// Hand-written semantic checks, run after the generated ones.
    pub verify: Option<String>,
    /// Hand-written folder, named by path.
    pub fold: Option<String>,
    /// The class the op's keys started from, if any.
    pub class: Option<String>,
}

impl OpDef {
    /// `TILE_DOT`-style constant name, from the op name.
    pub fn const_name(&self) -> String {
        self.name.split_once('.').map_or(self.name.as_str(), |(_, n)| n).to_uppercase()
    }

    /// The operand named `name`.
    pub fn operand(&self, name: &str) -> Option<&ValueDef> {
        self.operands.iter().find(|o| o.name == name)
    }

    /// The result named `name`.
    pub fn result(&self, name: &str) -> Option<&ValueDef> {
        self.results.iter().find(|o| o.name == name)
    }

    /// The attribute named `name`.
    pub fn attr(&self, name: &str) -> Option<&AttrDef> {
        self.attrs.iter().find(|a| a.name == name)
    }

    /// The other members of `name`'s `types-match` group.
    pub fn matched_with(&self, name: &str) -> Vec<&str> {
        self.types_match
            .iter()
            .filter(|g| g.iter().any(|n| n == name))
            .flat_map(|g| g.iter().map(String::as_str).filter(|n| *n != name))
            .collect()
    }
}

/// A dialect's declarations, from one `ops.ods`.
#[derive(Clone, Debug, PartialEq)]
pub struct Dialect {
    /// The dialect's name (`tile`).
    pub name: String,
    /// Its ops, in file order.
    pub ops: Vec<OpDef>,
    /// Class names, in file order; each class's view takes its members.
    pub classes: Vec<String>,
}

impl Dialect {
    /// The ops declared as members of `class`.
    pub fn members(&self, class: &str) -> Vec<&OpDef> {
        self.ops.iter().filter(|o| o.class.as_deref() == Some(class)).collect()
    }
}

/// Splits `a: x, b: y` at top-level commas (none nest in this syntax).
fn list(s: &str) -> Vec<&str> {
    s.split(',').map(str::trim).filter(|x| !x.is_empty()).collect()
}

fn value_defs(s: &str) -> Result<Vec<ValueDef>, String> {
    list(s)
        .into_iter()
        .map(|item| {
            let (name, kind) = item.split_once(':').ok_or_else(|| format!("expected 'name: kind', found '{item}'"))?;
            let kind = kind.trim();
            let (kind, arity) = if let Some(k) = kind.strip_suffix("...") {
                (k, Arity::Variadic)
            } else if let Some(k) = kind.strip_suffix('?') {
                (k, Arity::Optional)
            } else {
                (kind, Arity::One)
            };
            Ok(ValueDef { name: name.trim().to_string(), kind: Kind::parse(kind)?, arity })
        })
        .collect()
}

fn words(s: &str, prefix: &str) -> Option<Vec<String>> {
    let inner = s.strip_prefix(prefix)?.strip_suffix(')')?;
    Some(inner.split('|').map(|w| w.trim().to_string()).collect())
}

fn attr_defs(s: &str) -> Result<Vec<AttrDef>, String> {
    list(s)
        .into_iter()
        .map(|item| {
            let (name, ty) = item.split_once(':').ok_or_else(|| format!("expected 'name: type', found '{item}'"))?;
            let (ty, default) = match ty.split_once('=') {
                Some((t, d)) => (t.trim(), Some(d.trim().parse::<i64>().map_err(|_| format!("bad default '{}'", d.trim()))?)),
                None => (ty.trim(), None),
            };
            let (ty, optional) = match ty.strip_suffix('?') {
                Some(t) => (t, true),
                None => (ty, false),
            };
            let ty = match ty {
                "unit" => AttrType::Unit,
                "i64" => AttrType::I64,
                "str" => AttrType::Str,
                _ => {
                    if let Some(w) = words(ty, "enum(") {
                        AttrType::Enum(w)
                    } else if let Some(w) = words(ty, "keyword(") {
                        AttrType::Keyword(w)
                    } else {
                        return Err(format!("unknown attribute type '{ty}' (unit, i64, str, enum(a|b), keyword(a|b))"));
                    }
                }
            };
            Ok(AttrDef { name: name.trim().to_string(), ty, optional, default })
        })
        .collect()
}

fn traits(s: &str) -> Result<Traits, String> {
    let mut t = Traits::default();
    for w in list(s) {
        match w {
            "pure" => t.pure = true,
            "terminator" => t.terminator = true,
            "constant" => t.constant = true,
            "elected" => t.elected = true,
            "synchronising" => t.synchronising = true,
            "reads" => t.reads = true,
            "writes" => t.writes = true,
            "elementwise" => t.elementwise = true,
            "crosses_columns" => t.crosses_columns = true,
            "aligned" => t.aligned = true,
            "converges" => t.converges = true,
            _ => return Err(format!("unknown trait '{w}'")),
        }
    }
    Ok(t)
}

/// Reads a `.ods` file; errors name the line.
pub fn parse_dialect(src: &str) -> Result<Dialect, String> {
    let mut dialect = None;
    let mut ops = Vec::new();
    let mut classes: Vec<OpDef> = Vec::new();
    let mut current: Option<OpDef> = None;
    let mut in_class = false;
    for (n, raw) in src.lines().enumerate() {
        let line = raw.trim();
        let at = |m: String| format!("line {}: {m}", n + 1);
        if line.is_empty() || line.starts_with("//") {
            continue;
        }
        if let Some(name) = line.strip_prefix("dialect ") {
            dialect = Some(name.trim().to_string());
            continue;
        }
        if let Some(head) = line.strip_prefix("class ") {
            if current.is_some() {
                return Err(at("'class' inside another block".into()));
            }
            let name = head.trim_end_matches('{').trim();
            in_class = true;
            current = Some(empty_op(name, name));
            continue;
        }
        if let Some(head) = line.strip_prefix("op ") {
            if current.is_some() {
                return Err(at("'op' inside another op".into()));
            }
            let head = head.trim_end_matches('{');
            let (head, class) = match head.split_once(':') {
                Some((h, c)) => (h, Some(c.trim())),
                None => (head, None),
            };
            let mut parts = head.split_whitespace();
            let (Some(name), Some(view)) = (parts.next(), parts.next()) else {
                return Err(at("expected 'op dialect.name ViewName {'".into()));
            };
            let prefix = format!("{}.", dialect.as_deref().ok_or_else(|| at("'op' before 'dialect'".into()))?);
            if !name.starts_with(&prefix) {
                return Err(at(format!("op '{name}' is not in dialect '{}'", &prefix[..prefix.len() - 1])));
            }
            let mut op = match class {
                Some(c) => {
                    let base = classes.iter().find(|k| k.name == c).ok_or_else(|| at(format!("unknown class '{c}'")))?;
                    OpDef { class: Some(c.to_string()), ..base.clone() }
                }
                None => empty_op(name, view),
            };
            op.name = name.to_string();
            op.view = view.to_string();
            current = Some(op);
            continue;
        }
        let Some(op) = current.as_mut() else { return Err(at(format!("unexpected '{line}' outside an op"))) };
        if line == "}" {
            let op = current.take().expect("inside an op");
            if std::mem::take(&mut in_class) {
                classes.push(op);
                continue;
            }
            check(&op).map_err(|m| at(format!("op '{}': {m}", op.name)))?;
            ops.push(op);
            continue;
        }
        let (key, value) = line.split_once(':').ok_or_else(|| at(format!("expected 'key: value', found '{line}'")))?;
        let value = value.trim();
        match key.trim() {
            "summary" => op.summary = value.to_string(),
            "traits" => op.traits = traits(value).map_err(at)?,
            "operands" => op.operands = value_defs(value).map_err(at)?,
            "results" => op.results = value_defs(value).map_err(at)?,
            "regions" => op.regions = list(value).into_iter().map(String::from).collect(),
            "attrs" => op.attrs = attr_defs(value).map_err(at)?,
            "types-match" => op.types_match.push(list(value).into_iter().map(String::from).collect()),
            "format" => op.format = Some(parse_format(value).map_err(at)?),
            "parse" => op.custom_parse = Some(value.to_string()),
            "print" => op.custom_print = Some(value.to_string()),
            "verify" => op.verify = Some(value.to_string()),
            "fold" => op.fold = Some(value.to_string()),
            other => return Err(at(format!("unknown key '{other}'"))),
        }
    }
    if current.is_some() {
        return Err("unterminated op at end of file".into());
    }
    for class in &classes {
        let members: Vec<&OpDef> = ops.iter().filter(|o| o.class.as_deref() == Some(class.name.as_str())).collect();
        if let Some(odd) = members.iter().find(|o| (&o.operands, &o.results, &o.regions, &o.attrs) != (&class.operands, &class.results, &class.regions, &class.attrs)) {
            return Err(format!("op '{}' changes the operands, results, regions or attributes of its class '{}'", odd.name, class.name));
        }
    }
    Ok(Dialect { name: dialect.ok_or("no 'dialect' line")?, ops, classes: classes.into_iter().map(|c| c.name).collect() })
}

fn empty_op(name: &str, view: &str) -> OpDef {
    OpDef {
        name: name.to_string(),
        view: view.to_string(),
        summary: String::new(),
        traits: Traits::default(),
        operands: vec![],
        results: vec![],
        regions: vec![],
        attrs: vec![],
        types_match: vec![],
        format: None,
        custom_parse: None,
        custom_print: None,
        verify: None,
        fold: None,
        class: None,
    }
}

/// What the generator relies on: one variadic or optional group per operand
/// and result list (so that positions follow from the count), a syntax, and
/// a format that mentions only what the op has.
fn check(op: &OpDef) -> Result<(), String> {
    if op.summary.is_empty() {
        return Err("needs a summary".into());
    }
    for (what, values) in [("operand", &op.operands), ("result", &op.results)] {
        if values.iter().filter(|v| v.arity != Arity::One).count() > 1 {
            return Err(format!("at most one variadic or optional {what} group"));
        }
    }
    match (&op.format, &op.custom_parse, &op.custom_print) {
        (Some(_), None, None) | (None, Some(_), Some(_)) => {}
        _ => return Err("needs either a format or both custom parse and print hooks".into()),
    }
    for group in &op.types_match {
        for n in group {
            if op.operand(n).is_none() && op.result(n).is_none() {
                return Err(format!("types-match names '{n}', which is neither an operand nor a result"));
            }
        }
    }
    if let Some(format) = &op.format {
        crate::format::check_format(op, format)?;
    }
    Ok(())
}
