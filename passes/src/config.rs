//! The `tile.config` attribute that `tile-select-config` writes on a
//! function, read by the passes after it for the options their pipeline does
//! not give. (Whether a function still has block-size parameters to bind is
//! its phase: `phase::has_unbound_parameters`.)

use crate::cluster::Along;
use crate::config_rules::{Config, Epilogue, Scales, Schedule};
use crate::config_rules::{PieceOrder, SplitReduce};
use crate::options::OptionKind;
use crate::pass::PassInfo;
use tilec_dialects::ir::Attribute;
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

/// The configuration the function's `tile.config` decides, as config
/// selection's [`Config`] (its `Display` is what `--explain` prints); `None`
/// where `tile.config` names no schedule. Any entry that cannot be read is
/// an error located at the function, as in [`config_word`].
pub fn decided_config(func: &Function) -> Result<Option<Config>, Diagnostic> {
    let Some(word) = config_word(func, "schedule", Schedule::WORDS)? else { return Ok(None) };
    let missing = |key: &str| Diagnostic::error(func.loc.clone(), format!("tile.config decides a schedule but has no '{key}'"));
    let int = |key: &str| config_int(func, key)?.ok_or_else(|| missing(key));
    let (block_m, block_n, block_k, stages) = (int("block_m")?, int("block_n")?, int("block_k")?, int("stages")?);
    let consumers = config_int(func, "consumers")?.unwrap_or(0);
    let schedule = Schedule::from_word(word, consumers).expect("a word of Schedule::WORDS");
    let num_warps = match schedule {
        Schedule::Pipeline => func.attrs.get_int("num_warps").unwrap_or(4),
        Schedule::WarpSpecialized { consumers } => 4 * (1 + consumers),
        Schedule::PingPong => 12,
    };
    let epilogue = match config_word(func, "epilogue", &["global", "tma"])? {
        Some("tma") => Epilogue::Tma { columns: config_int(func, "epilogue_cols")?.unwrap_or(block_n) },
        _ => Epilogue::Global,
    };
    let scales = match config_word(func, "scales", &["none", "staged", "prefetched"])? {
        Some("staged") => Scales::Staged,
        Some("prefetched") => Scales::Prefetched,
        _ => Scales::None,
    };
    Ok(Some(Config {
        block_m,
        block_n,
        block_k,
        stages,
        num_warps,
        schedule,
        epilogue,
        scales,
        cluster: config_word(func, "cluster", Along::WORDS)?.map_or(Along::None, Along::parse),
        splits: config_int(func, "splits")?.unwrap_or(1),
        split_reduce: config_word(func, "split_reduce", SplitReduce::WORDS)?.map_or(SplitReduce::Cluster, SplitReduce::parse),
        raster_group: config_int(func, "raster_group")?.unwrap_or(0),
        stream_k: config_word(func, "stream_k", PieceOrder::WORDS)?.map(PieceOrder::parse),
        deferred_epilogue: config_bool(func, "epilogue_deferred")?.unwrap_or(false),
    }))
}

