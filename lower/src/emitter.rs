//! A small MLIR text writer: indentation, unique SSA names, constants and
//! the MLIR spelling of types.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Write;
use tilec_dialects::ElemType;

/// Writes one function's MLIR text, line by line.
#[derive(Default)]
pub(crate) struct Emitter {
    out: String,
    indent: usize,
    used: HashSet<String>,
    /// The next suffix to try for each hint, so that the n-th name of one
    /// hint does not test the n - 1 before it.
    next_suffix: HashMap<String, usize>,
    /// `(element, count)` of every fragment struct type used, for the
    /// module's type aliases.
    pub struct_types: BTreeSet<(&'static str, usize)>,
    /// The tile program location of the op being lowered, as MLIR writes it
    /// (`loc("gemm.tile":12:5)`): every complete op line gets it, so the
    /// back end's debug info and the PTX's `.loc` lead back to the source.
    pub loc: Option<String>,
}

impl Emitter {
    pub fn new(indent: usize) -> Self {
        Emitter { indent, ..Default::default() }
    }

    /// A fresh SSA name (`%hint`, `%hint_1`, ...), unique in the function.
    pub fn fresh(&mut self, hint: &str) -> String {
        let mut base: String =
            hint.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
        if base.is_empty() || base.starts_with(|c: char| c.is_ascii_digit()) {
            base.insert(0, 'v');
        }
        let next = self.next_suffix.entry(base.clone()).or_insert(0);
        loop {
            let name = match *next {
                0 => format!("%{base}"),
                k => format!("%{base}_{k}"),
            };
            *next += 1;
            if self.used.insert(name.clone()) {
                return name;
            }
        }
    }

    /// Writes one complete op (with the current location) or comment.
    pub fn line(&mut self, text: impl AsRef<str>) {
        let text = text.as_ref();
        match &self.loc {
            Some(loc) if !text.trim_start().starts_with("//") => {
                let located = format!("{text} {loc}");
                self.raw_line(&located);
            }
            _ => self.raw_line(text),
        }
    }

    /// Writes `text` as it is: a region's opening or closing line, which
    /// takes no location of its own.
    fn raw_line(&mut self, text: &str) {
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    /// Starts `scf.index_switch` on the i32 `value`, its results typed
    /// `types`; returns the names they will have. Its cases follow (`case
    /// N {` ... [`Emitter::yield_values`] `}`), then
    /// [`Emitter::trap_default`]. The head takes no location of its own:
    /// MLIR reads one there as the end of the op, before its regions.
    pub fn index_switch(&mut self, hint: &str, value: &str, types: &[String]) -> Vec<String> {
        let index = self.assign("switch_index", format!("arith.index_cast {value} : i32 to index"));
        let name = self.fresh(hint);
        if types.is_empty() {
            self.raw_line(&format!("scf.index_switch {index}"));
        } else {
            self.raw_line(&format!("{name}:{} = scf.index_switch {index} -> {}", types.len(), types.join(", ")));
        }
        (0..types.len()).map(|k| format!("{name}#{k}")).collect()
    }

    /// `scf.yield` of `names`, typed `types`.
    pub fn yield_values(&mut self, names: &[String], types: &[String]) {
        if names.is_empty() {
            self.line("scf.yield");
        } else {
            self.line(format!("scf.yield {} : {}", names.join(", "), types.join(", ")));
        }
    }

    /// The default of a switch whose cases are every value its operand may
    /// take: it traps (yielding `names`, typed `types`, never reached).
    pub fn trap_default(&mut self, names: &[String], types: &[String]) {
        self.open("default {");
        self.line("llvm.intr.trap");
        self.yield_values(names, types);
        self.close("}");
    }

    /// How deep in emitted regions the next line is: a value named at one
    /// depth is visible at that depth and deeper until its region closes.
    pub fn depth(&self) -> usize {
        self.indent
    }

    /// Writes `text` and indents what follows (`scf.if %c {`).
    pub fn open(&mut self, text: impl AsRef<str>) {
        self.raw_line(text.as_ref());
        self.indent += 1;
    }

    /// Dedents and writes `text` (`}`).
    pub fn close(&mut self, text: impl AsRef<str>) {
        self.indent -= 1;
        self.raw_line(text.as_ref());
    }

    /// Writes `text` one level out and keeps the indentation (`} else {`).
    pub fn middle(&mut self, text: impl AsRef<str>) {
        self.indent -= 1;
        self.raw_line(text.as_ref());
        self.indent += 1;
    }

    /// `%r = <rhs>`, returning `%r`.
    pub fn assign(&mut self, hint: &str, rhs: impl AsRef<str>) -> String {
        let name = self.fresh(hint);
        self.line(format!("{name} = {}", rhs.as_ref()));
        name
    }

    pub fn const_int(&mut self, value: i64, ty: &str) -> String {
        let hint = if value < 0 { format!("cm{}_{ty}", -value) } else { format!("c{value}_{ty}") };
        self.assign(&hint, format!("arith.constant {value} : {ty}"))
    }

    pub fn i32(&mut self, value: i64) -> String {
        self.const_int(value, "i32")
    }

    pub fn i64(&mut self, value: i64) -> String {
        self.const_int(value, "i64")
    }

    /// `a + value` (no op when `value` is 0).
    pub fn add_const(&mut self, hint: &str, a: &str, value: i64, ty: &str) -> String {
        if value == 0 {
            return a.to_string();
        }
        let c = self.const_int(value, ty);
        self.assign(hint, format!("arith.addi {a}, {c} : {ty}"))
    }

    pub fn binop(&mut self, hint: &str, op: &str, a: &str, b: &str, ty: &str) -> String {
        self.assign(hint, format!("{op} {a}, {b} : {ty}"))
    }

    /// The `!llvm.struct<(T, T, ...)>` holding `count` values of `elem`,
    /// spelled through its module-level alias `!tilec_<elem>x<count>`.
    pub fn struct_type(&mut self, elem: ElemType, count: usize) -> String {
        let e = mlir_type(elem);
        self.struct_types.insert((e, count));
        struct_alias(e, count)
    }

    pub fn finish(self) -> String {
        self.out
    }
}

pub(crate) fn struct_alias(elem: &str, count: usize) -> String {
    format!("!tilec_{elem}x{count}")
}

/// The alias definitions for `types`, placed before the module.
pub(crate) fn struct_aliases(types: &BTreeSet<(&'static str, usize)>) -> String {
    let mut out = String::new();
    for &(elem, count) in types {
        let fields = vec![elem; count].join(", ");
        let _ = writeln!(out, "{} = !llvm.struct<({fields})>", struct_alias(elem, count));
    }
    out
}

/// The MLIR type a scalar of `elem` lowers to. `index` is 32-bit: every
/// index in a GEMM kernel (block ids, tile coordinates, dimensions passed as
/// i32 parameters) fits, and 64-bit arithmetic costs twice the registers.
/// Global addresses are formed in 64 bits where they are used.
pub(crate) fn mlir_type(elem: ElemType) -> &'static str {
    match elem {
        ElemType::Index | ElemType::I32 => "i32",
        other => other.mnemonic(),
    }
}

/// The MLIR type a register holds an `elem` value as: its own, but `i8`
/// for the 8-bit floats, which LLVM has no type for (their codes, as
/// [`super::math::to_f8_pair`] makes them).
pub(crate) fn register_type(elem: ElemType) -> &'static str {
    if elem.is_float() && elem.bits() == 8 {
        "i8"
    } else {
        mlir_type(elem)
    }
}

/// An MLIR float literal of type `elem` for `value` (always with a `.`, as
/// MLIR requires; NaN and infinities as bit patterns of the type's width).
pub(crate) fn float_literal(value: f64, elem: ElemType) -> String {
    if value.is_finite() {
        return format!("{value:.17e}");
    }
    let (nan, inf, ninf) = match elem {
        ElemType::F16 => ("0x7E00", "0x7C00", "0xFC00"),
        ElemType::BF16 => ("0x7FC0", "0x7F80", "0xFF80"),
        _ => ("0x7FC00000", "0x7F800000", "0xFF800000"),
    };
    if value.is_nan() {
        nan.into()
    } else if value > 0.0 {
        inf.into()
    } else {
        ninf.into()
    }
}

#[cfg(test)]
mod tests {
    use super::Emitter;

    #[test]
    fn fresh_names_are_the_smallest_unused_suffix_of_their_hint() {
        let mut em = Emitter::new(0);
        assert_eq!(em.fresh("x"), "%x");
        assert_eq!(em.fresh("x_2"), "%x_2");
        assert_eq!(em.fresh("x"), "%x_1");
        // %x_2 is taken by the hint `x_2`.
        assert_eq!(em.fresh("x"), "%x_3");
        assert_eq!(em.fresh("1st"), "%v1st");
        assert_eq!(em.fresh("a.b"), "%a_b");
        let names: std::collections::HashSet<String> = (0..10_000).map(|_| em.fresh("y")).collect();
        assert_eq!(names.len(), 10_000);
        assert!(names.contains("%y_9999"));
    }
}
