//! The IR verifier, kept apart from the transforms: structure (terminators,
//! region shapes), SSA dominance, and each op's own invariants. It reports
//! every error it finds, not only the first, as MLIR's verifier does.

use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::ir::{Body, Function, Module, Region, Value};
use crate::registry::Opcode;
use std::collections::HashSet;

/// Verifies every function; the error lists all problems, in order.
pub fn verify_module(module: &Module) -> Result<(), Diagnostics> {
    let mut names = HashSet::new();
    let mut errors = Vec::new();
    for func in &module.functions {
        if !names.insert(func.name.as_str()) {
            errors.push(Diagnostic::error(func.loc.clone(), format!("redefinition of function '@{}'", func.name)));
        }
        errors.extend(function_errors(func));
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(Diagnostics(errors))
    }
}

/// The first of [`function_errors`], for callers that stop at one error.
pub fn verify_function(func: &Function) -> Result<(), Diagnostic> {
    function_errors(func).into_iter().next().map_or(Ok(()), Err)
}

/// The most warps a CTA can have (1024 threads).
pub const MAX_WARPS: i64 = 32;

/// Every error in `func`, in program order.
pub fn function_errors(func: &Function) -> Vec<Diagnostic> {
    let body = &func.body;
    let mut errors = Vec::new();
    if body.terminator(func.entry_block()).is_none_or(|t| body.opcode(t) != Opcode::TileReturn) {
        errors.push(Diagnostic::error(func.loc.clone(), format!("function '@{}' must end with 'tile.return'", func.name)));
    }
    if let Err(e) = verify_arg_attrs(func) {
        errors.push(e);
    }
    match func.attrs.get("num_warps").map(|a| a.as_int()) {
        None | Some(Some(1..=MAX_WARPS)) => {}
        Some(_) => errors.push(Diagnostic::error(
            func.loc.clone(),
            format!("function '@{}': num_warps must be a whole number from 1 to {MAX_WARPS} (a CTA has at most 1024 threads)", func.name),
        )),
    }
    let mut visible: HashSet<Value> = func.args().iter().copied().collect();
    verify_region(body, func.region, &mut visible, &mut errors);
    verify_dot_dims(func, &mut errors);
    errors
}

/// The `tile.dims` name of dimension `dim` of the tensor a dot operand was
/// loaded from (through layout conversions), if it was loaded from a named
/// argument.
fn loaded_dim_name(func: &Function, mut v: Value, dim: usize) -> Option<&str> {
    let body = &func.body;
    loop {
        let op = body.defining_op(v)?;
        if let Some(convert) = crate::tile::ConvertLayout::of(body, op) {
            v = convert.input(body);
            continue;
        }
        let load = crate::tile::Load::of(body, op)?;
        let tensor = load.tensor(body);
        let arg = func.args().iter().position(|&a| a == tensor)?;
        // A tile of lower rank is a box of the tensor's trailing dimensions.
        let leading = load.indices(body).len().checked_sub(body.value_type(v).as_tile()?.shape.len())?;
        return func.arg_attrs.get(arg)?.get("tile.dims")?.as_strings()?.get(dim + leading).copied();
    }
}

/// The dot whose result `v` is, through casts, layout conversions and the
/// iteration arguments of loops (the accumulator a K loop carries).
fn dot_of(func: &Function, v: Value) -> Option<crate::ir::Op> {
    let body = &func.body;
    let op = body.defining_op(v)?;
    if crate::tile::Dot::of(body, op).is_some() || crate::tile::DotScaled::of(body, op).is_some() {
        return Some(op);
    }
    if let Some(cast) = crate::tile::Cast::of(body, op) {
        return dot_of(func, cast.input(body));
    }
    if let Some(convert) = crate::tile::ConvertLayout::of(body, op) {
        return dot_of(func, convert.input(body));
    }
    let crate::ir::ValueDef::Result(loop_op, i) = body.values[v].def else { return None };
    let region = *body.ops[loop_op].regions.first()?;
    let yielded = crate::tile::Yield::of(body, body.terminator(body.entry_block(region))?)?.values(body);
    dot_of(func, *yielded.get(i)?)
}

/// The M and N of a dot must be the dimensions of the tensor its result is
/// stored to: the name `tile.dims` gives A's M dimension is the name it gives
/// C's rows, and B's N dimension C's columns (`lhs_m`/`rhs_n` are each
/// operand's value and the index of that dimension).
fn check_store_dims(func: &Function, dot: crate::ir::Op, lhs_m: (Value, usize), rhs_n: (Value, usize), errors: &mut Vec<Diagnostic>) {
    let body = &func.body;
    for op in body.walk_region(func.region) {
        let Some(store) = crate::tile::Store::of(body, op) else { continue };
        if dot_of(func, store.value(body)) != Some(dot) {
            continue;
        }
        let Some(arg) = func.args().iter().position(|&a| a == store.tensor(body)) else { continue };
        let Some(c_dims) = func.arg_attrs.get(arg).and_then(|a| a.get("tile.dims")).and_then(|d| d.as_strings()) else { continue };
        // A rank-2 tile stored into a higher-rank tensor is a box of its
        // trailing two dimensions.
        let leading = c_dims.len().saturating_sub(2);
        for ((operand, dim), c_dim, which) in [(lhs_m, leading, "A's M"), (rhs_n, leading + 1, "B's N")] {
            let (Some(name), Some(&c_name)) = (loaded_dim_name(func, operand, dim), c_dims.get(c_dim)) else { continue };
            if name != c_name {
                errors.push(Diagnostic::error(
                    body.ops[op].loc.clone(),
                    format!(
                        "'{}' op stores the product whose {which} dimension is '{name}' (in its tile.dims) as dimension {c_dim} \
                         of a tensor whose tile.dims name it '{c_name}'",
                        body.ops[op].def.name
                    ),
                ));
            }
        }
    }
}

/// The K of a dot must be one dimension of the problem: the name `tile.dims`
/// gives A's reduction dimension must be the name it gives B's. A tensor
/// declared K x N but loaded N x K (with `transpose_b`) would otherwise
/// compile to a kernel that reads B the wrong way round.
fn verify_dot_dims(func: &Function, errors: &mut Vec<Diagnostic>) {
    let body = &func.body;
    for op in body.walk_region(func.region) {
        let (lhs, rhs) = match (crate::tile::Dot::of(body, op), crate::tile::DotScaled::of(body, op)) {
            (Some(d), _) => (d.lhs(body), d.rhs(body)),
            (_, Some(d)) => (d.lhs(body), d.rhs(body)),
            _ => continue,
        };
        let attrs = &body.ops[op].attrs;
        let a_k = usize::from(!attrs.has("transpose_a"));
        let b_k = usize::from(attrs.has("transpose_b"));
        check_store_dims(func, op, (lhs, 1 - a_k), (rhs, 1 - b_k), errors);
        let (Some(a_name), Some(b_name)) = (loaded_dim_name(func, lhs, a_k), loaded_dim_name(func, rhs, b_k)) else { continue };
        if a_name != b_name {
            let name = body.ops[op].def.name;
            errors.push(Diagnostic::error(
                body.ops[op].loc.clone(),
                format!(
                    "'{name}' op reduces A's dimension {a_k} ('{a_name}' in its tile.dims) with B's dimension {b_k} ('{b_name}'): \
                     the two must name the same K (is B declared the other way round, or transpose_b wrong?)"
                ),
            ));
        }
    }
}

/// `tile.dims` names each dimension of a tensor argument (`["M", "K"]`);
/// the names become the run-time sizes the launcher binds. A tensor is
/// row-major unless `tile.contiguous` names its second-last dimension
/// (`{tile.dims = ["M", "KB"], tile.contiguous = "M"}`: stored KB x M).
fn verify_arg_attrs(func: &Function) -> Result<(), Diagnostic> {
    if func.arg_attrs.len() != func.args().len() {
        return Err(Diagnostic::error(func.loc.clone(), "function has a different number of argument attribute sets and arguments"));
    }
    for (i, (attrs, &arg)) in func.arg_attrs.iter().zip(func.args()).enumerate() {
        let err = |m: String| Diagnostic::error(func.loc.clone(), format!("argument #{i} of '@{}': {m}", func.name));
        let contiguous = attrs.get("tile.contiguous");
        let Some(dims) = attrs.get("tile.dims") else {
            if contiguous.is_some() {
                return Err(err("'tile.contiguous' names one of the dimensions 'tile.dims' names, and there is no 'tile.dims'".into()));
            }
            continue;
        };
        let Some(rank) = func.body.value_type(arg).as_ref_type().map(|r| r.shape.len()) else {
            return Err(err("'tile.dims' is only for tensor arguments".into()));
        };
        let names = match dims.as_strings() {
            Some(names) if names.len() == rank && names.iter().all(|n| !n.is_empty()) => names,
            _ => return Err(err(format!("'tile.dims' must name each of the {rank} dimensions, like [\"M\", \"K\"]"))),
        };
        if let Some(contiguous) = contiguous {
            let inner = &names[rank.saturating_sub(2)..];
            match contiguous.as_str() {
                Some(name) if rank >= 2 && inner[0] == inner[1] && inner[0] == name => {
                    return Err(err(format!("'tile.contiguous' names \"{name}\", which both of the last two dimensions are called")));
                }
                Some(name) if rank >= 2 && inner.contains(&name) => {}
                _ => {
                    return Err(err(format!(
                        "'tile.contiguous' must name one of the last two dimensions of a tensor of rank 2 or more ({})",
                        inner.iter().map(|n| format!("\"{n}\"")).collect::<Vec<_>>().join(" or ")
                    )))
                }
            }
        }
    }
    Ok(())
}

/// Verifies the ops of `region` in order, adding what is wrong to `errors`;
/// `visible` holds the values that dominate the current point, and is
/// restored on exit so that values defined inside a region do not leak out
/// of it.
fn verify_region(body: &Body, region: Region, visible: &mut HashSet<Value>, errors: &mut Vec<Diagnostic>) {
    let mut defined_here = Vec::new();
    for &block in &body.regions[region].blocks {
        for &arg in &body.blocks[block].args {
            visible.insert(arg);
            defined_here.push(arg);
        }
        let ops = &body.blocks[block].ops;
        for (i, &op) in ops.iter().enumerate() {
            let data = &body.ops[op];
            let err = |msg: String| Diagnostic::error(data.loc.clone(), format!("'{}' op {msg}", data.def.name));
            for (n, operand) in data.operands.iter().enumerate() {
                if !visible.contains(operand) {
                    errors.push(err(format!("operand #{n} does not dominate this use")));
                }
            }
            if data.def.traits.terminator && i + 1 != ops.len() {
                errors.push(err("must be the last operation of its block".into()));
            }
            if let Err(message) = (data.def.verify)(body, op) {
                errors.push(err(message));
            }
            for &r in &data.regions {
                verify_region(body, r, visible, errors);
            }
            for &result in &data.results {
                visible.insert(result);
                defined_here.push(result);
            }
        }
    }
    for v in defined_here {
        visible.remove(&v);
    }
}
