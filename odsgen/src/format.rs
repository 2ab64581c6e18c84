//! Assembly formats, in the syntax of MLIR's ODS `assemblyFormat`:
//! ``$lhs `,` $rhs attr-dict `:` type($result)``, with optional groups
//! ``(`[` $stage^ `]`)?`` printed and parsed only when their anchor (`^`) is
//! present.

use crate::def::{Arity, AttrType, Kind, OpDef};

/// One element of an assembly format.
#[derive(Clone, Debug, PartialEq)]
pub enum Element {
    /// `` `,` `` or `` `to` ``: punctuation, or a keyword when it is a word.
    Literal(String),
    /// `$name`: an operand, an attribute or a region.
    Var(String),
    /// `type($name)`: the type of an operand or result.
    Type(String),
    /// `attr-dict`: the attributes the format does not print elsewhere.
    AttrDict,
    /// `( ... )?`: the elements and the index of the anchor.
    Optional(Vec<Element>, usize),
}

fn tokens(s: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '`' {
            chars.next();
            let lit: String = chars.by_ref().take_while(|&c| c != '`').collect();
            out.push(format!("`{lit}`"));
        } else if c == '(' || c == ')' || c == '^' || c == '?' {
            chars.next();
            out.push(c.to_string());
        } else {
            let mut w = String::new();
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() || "()`^?".contains(c) {
                    break;
                }
                w.push(c);
                chars.next();
            }
            out.push(w);
        }
    }
    Ok(out)
}

/// Parses an assembly format string into its elements, or says what is wrong.
pub fn parse_format(s: &str) -> Result<Vec<Element>, String> {
    let toks = tokens(s)?;
    let mut pos = 0;
    let elems = elements(&toks, &mut pos, false)?;
    if pos != toks.len() {
        return Err(format!("format: unexpected '{}'", toks[pos]));
    }
    Ok(elems)
}

fn elements(toks: &[String], pos: &mut usize, nested: bool) -> Result<Vec<Element>, String> {
    let mut out = Vec::new();
    let mut anchor = None;
    while *pos < toks.len() {
        let t = toks[*pos].as_str();
        *pos += 1;
        let elem = if let Some(lit) = t.strip_prefix('`') {
            Element::Literal(lit.trim_end_matches('`').to_string())
        } else if let Some(v) = t.strip_prefix('$') {
            Element::Var(v.to_string())
        } else if t == "attr-dict" {
            Element::AttrDict
        } else if t == "type" {
            let (Some("("), Some(v), Some(")")) =
                (toks.get(*pos).map(String::as_str), toks.get(*pos + 1).and_then(|v| v.strip_prefix('$')), toks.get(*pos + 2).map(String::as_str))
            else {
                return Err("format: expected 'type($name)'".into());
            };
            *pos += 3;
            Element::Type(v.to_string())
        } else if t == "(" {
            let (inner, a) = group(toks, pos)?;
            Element::Optional(inner, a)
        } else if t == ")" && nested {
            *pos -= 1;
            break;
        } else if t == "^" && nested {
            anchor = Some(out.len().checked_sub(1).ok_or("format: '^' must follow an element")?);
            continue;
        } else {
            return Err(format!("format: unexpected '{t}'"));
        };
        out.push(elem);
    }
    if nested {
        out.push(Element::Literal(format!("^{}", anchor.ok_or("format: an optional group needs an anchor '^'")?)));
    }
    Ok(out)
}

/// `( ... )?` after its `(`: the elements and the anchor's index.
fn group(toks: &[String], pos: &mut usize) -> Result<(Vec<Element>, usize), String> {
    let mut inner = elements(toks, pos, true)?;
    let Some(Element::Literal(a)) = inner.pop() else { unreachable!("elements() ends a group with its anchor") };
    let anchor = a[1..].parse().expect("anchor index");
    if toks.get(*pos).map(String::as_str) != Some(")") || toks.get(*pos + 1).map(String::as_str) != Some("?") {
        return Err("format: an optional group ends with ')?'".into());
    }
    *pos += 2;
    Ok((inner, anchor))
}

/// Every operand appears once, every operand's and result's type can be
/// known when parsing, attributes in the format exist, and optional groups
/// are anchored on an optional or variadic operand, or its type.
pub fn check_format(op: &OpDef, format: &[Element]) -> Result<(), String> {
    let mut vars = Vec::new();
    let mut types = Vec::new();
    collect(format, &mut vars, &mut types);
    for o in &op.operands {
        if vars.iter().filter(|v| **v == o.name).count() != 1 {
            return Err(format!("format must name operand '${}' once", o.name));
        }
    }
    for r in &op.regions {
        if !vars.contains(&r.as_str()) {
            return Err(format!("format must name region '${r}'"));
        }
    }
    for v in &vars {
        if op.operand(v).is_none() && op.attr(v).is_none() && !op.regions.iter().any(|r| r == v) {
            return Err(format!("format names '${v}', which the op does not have"));
        }
        if let Some(a) = op.attr(v) {
            if a.ty == AttrType::Unit {
                return Err(format!("unit attribute '${v}' belongs in attr-dict"));
            }
        }
    }
    for t in &types {
        if op.operand(t).is_none() && op.result(t).is_none() {
            return Err(format!("format has type(${t}) of no operand or result"));
        }
    }
    let known = |name: &str, kind: Kind| {
        matches!(kind, Kind::Index | Kind::I1) || types.contains(&name) || op.matched_with(name).iter().any(|m| types.contains(m))
    };
    for v in op.operands.iter().chain(&op.results) {
        if !known(&v.name, v.kind) {
            return Err(format!("the format gives no type for '{}' (add type(${}) or a types-match)", v.name, v.name));
        }
    }
    check_groups(op, format)
}

pub(crate) fn collect<'a>(format: &'a [Element], vars: &mut Vec<&'a str>, types: &mut Vec<&'a str>) {
    for e in format {
        match e {
            Element::Var(v) => vars.push(v),
            Element::Type(t) => types.push(t),
            Element::Optional(inner, _) => collect(inner, vars, types),
            _ => {}
        }
    }
}

fn check_groups(op: &OpDef, format: &[Element]) -> Result<(), String> {
    for e in format {
        if let Element::Optional(inner, anchor) = e {
            let name = match &inner[*anchor] {
                Element::Var(v) | Element::Type(v) => v,
                _ => return Err("an optional group's anchor must be $operand or type($operand)".into()),
            };
            if !op.operand(name).is_some_and(|o| o.arity != Arity::One) {
                return Err(format!("optional group anchored on '{name}', which is not an optional or variadic operand"));
            }
            // A single value inside a group could be missing from the input.
            for e in inner {
                if let Element::Var(v) | Element::Type(v) = e {
                    if op.operand(v).or(op.result(v)).is_some_and(|o| o.arity == Arity::One) {
                        return Err(format!("'{v}' is a single value inside an optional group; make it optional or move it out"));
                    }
                    if op.attr(v).is_some_and(|a| a.required()) {
                        return Err(format!("required attribute '{v}' is inside an optional group"));
                    }
                }
            }
            match &inner[0] {
                Element::Literal(_) => {}
                Element::Var(v) if op.operand(v).is_some_and(|o| o.arity == Arity::Variadic) && inner.len() == 1 => {}
                _ => return Err("an optional group starts with a literal, or is a lone variadic operand".into()),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_literals_vars_types_and_groups() {
        let f = parse_format("$a (`[` $s^ `]`)? `,` $b attr-dict `:` type($a) `->` type($r)").unwrap();
        assert_eq!(
            f,
            vec![
                Element::Var("a".into()),
                Element::Optional(vec![Element::Literal("[".into()), Element::Var("s".into()), Element::Literal("]".into())], 1),
                Element::Literal(",".into()),
                Element::Var("b".into()),
                Element::AttrDict,
                Element::Literal(":".into()),
                Element::Type("a".into()),
                Element::Literal("->".into()),
                Element::Type("r".into()),
            ]
        );
    }

    #[test]
    fn rejects_a_group_without_anchor() {
        assert!(parse_format("(`[` $s `]`)?").unwrap_err().contains("anchor"));
    }

    #[test]
    fn rejects_a_single_value_inside_an_optional_group() {
        let err = crate::def::parse_dialect(
            "dialect t\nop t.w W {\n  summary: s\n  operands: a: index, s: index?\n  format: (`[` $s^ $a `]`)? attr-dict\n}\n",
        )
        .unwrap_err();
        assert!(err.contains("'a' is a single value inside an optional group"), "{err}");
    }

    #[test]
    fn rejects_unknown_directive() {
        assert!(parse_format("$a functional-type").unwrap_err().contains("unexpected 'functional-type'"));
    }
}
