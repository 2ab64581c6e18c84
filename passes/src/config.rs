//! The `tile.config` attribute that `tile-select-config` writes on a
//! function, read by the passes after it for the options their pipeline does
//! not give, and whether a function still has block-size parameters to bind.

use crate::options::OptionKind;
use crate::registry::PassInfo;
use tilec_dialects::ir::Attribute;
use tilec_dialects::registry::Opcode;
use tilec_dialects::{Diagnostic, Function};

/// An integer of the function's `tile.config` (`stages`, `consumers`);
/// `None` without the entry. Any other value is an error located at the
/// function, as in [`config_word`].
pub fn config_int(func: &Function, key: &str) -> Result<Option<i64>, Diagnostic> {
    let Some(Attribute::Dict(d)) = func.attrs.get("tile.config") else { return Ok(None) };
    match d.get(key) {
        None => Ok(None),
        Some(_) => d.get_int(key).map(Some).ok_or_else(|| Diagnostic::error(func.loc.clone(), format!("tile.config's '{key}' must be an integer"))),
    }
}

/// A flag of the function's `tile.config` (`epilogue_deferred`); `None`
/// without the entry. Any other value is an error located at the function.
pub fn config_bool(func: &Function, key: &str) -> Result<Option<bool>, Diagnostic> {
    let Some(Attribute::Dict(d)) = func.attrs.get("tile.config") else { return Ok(None) };
    match d.get(key) {
        None => Ok(None),
        Some(Attribute::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(Diagnostic::error(func.loc.clone(), format!("tile.config's '{key}' must be true or false"))),
    }
}

/// An integer of the function's `tile.config` that `pass` also takes as
/// its integer option `option` (mostly of the same name), within that
/// option's range; `None` without the entry. Any other value is an error
/// located at the function, as in [`config_int`].
pub fn config_option(func: &Function, pass: &PassInfo, option: &str, key: &str) -> Result<Option<i64>, Diagnostic> {
    let Some(OptionKind::Int { min, max }) = pass.options.iter().find(|o| o.name == option).map(|o| o.kind) else {
        unreachable!("'{option}' is an integer option of {}", pass.name)
    };
    match config_int(func, key)? {
        Some(v) if !(min..=max).contains(&v) => Err(Diagnostic::error(func.loc.clone(), format!("tile.config's '{key}' must be from {min} to {max}, found {v}"))),
        v => Ok(v),
    }
}

/// A word of the function's `tile.config` (`schedule`, `epilogue`), one of
/// `allowed`; `None` without the entry. Any other value is an error located
/// at the function: a hand-written config must not quietly mean something
/// else.
pub fn config_word<'a>(func: &'a Function, key: &str, allowed: &[&str]) -> Result<Option<&'a str>, Diagnostic> {
    let Some(Attribute::Dict(d)) = func.attrs.get("tile.config") else { return Ok(None) };
    let Some(value) = d.get(key) else { return Ok(None) };
    match value.as_str() {
        Some(word) if allowed.contains(&word) => Ok(Some(word)),
        _ => Err(Diagnostic::error(
            func.loc.clone(),
            format!("tile.config's '{key}' must be one of \"{}\"", allowed.join("\", \"")),
        )),
    }
}

/// Whether a block size is still a parameter: in a value's type, or as a
/// `tile.param` op.
pub fn has_unbound_parameters(func: &Function) -> bool {
    let body = &func.body;
    body.values.keys().any(|v| body.values[v].ty.is_parametric())
        || body.walk_region(func.region).into_iter().any(|op| body.opcode(op) == Opcode::TileParam)
}
