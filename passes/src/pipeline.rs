//! Pipeline strings: `tile-canonicalize,tile-pipeline{stages=3 wait_depth=1}`.

use crate::pass::PassInfo;
use crate::registry::lookup;
use crate::options::PassOptions;
use crate::pass::Pass;

/// The tile/nv pipeline `tilec compile` runs when none is given, from tile
/// IR to nv IR. Each function starts at the phase it is in: nv-level input
/// skips the tile passes and is lowered as it stands (up to
/// canonicalisation). docs/ir.md states this order.
pub const DEFAULT_PIPELINE: &str = "tile-canonicalize,tile-assign-layouts,tile-pipeline{stages=4},tile-lower-to-nv,tile-fit-tma-boxes,tile-programmatic-launch,tile-canonicalize";

/// One pass of a parsed pipeline, before it is created.
pub struct PipelineEntry {
    /// The pass's registration.
    pub info: &'static PassInfo,
    /// Its options, resolved against their declarations.
    pub options: PassOptions,
}

/// Parses and checks a pipeline string, bare or in the `builtin.module(...)`
/// anchor that `--dump-pass-pipeline` prints (as mlir-opt takes back what it
/// prints); errors name the offending pass or option.
pub fn parse_pipeline(text: &str) -> Result<Vec<PipelineEntry>, String> {
    let mut entries = Vec::new();
    for item in split_top_level(without_module_anchor(text)?)? {
        let item = item.trim();
        if item.is_empty() {
            return Err(format!("empty pass name in pipeline '{text}'"));
        }
        let (name, raw_options) = match item.find('{') {
            Some(open) => {
                let Some(body) = item[open + 1..].strip_suffix('}') else {
                    return Err(format!("pass options of '{}' must end with '}}'", &item[..open]));
                };
                (&item[..open], parse_option_list(&item[..open], body)?)
            }
            None => (item, Vec::new()),
        };
        let info = lookup(name).ok_or_else(|| {
            let known: Vec<&str> = crate::registry::all_passes().iter().map(|p| p.name).collect();
            format!("unknown pass '{name}' (known passes: {})", known.join(", "))
        })?;
        let options = PassOptions::resolve(name, info.options, &raw_options)?;
        entries.push(PipelineEntry { info, options });
    }
    Ok(entries)
}

/// Creates the passes of a parsed pipeline.
pub fn create_passes(entries: &[PipelineEntry]) -> Vec<Box<dyn Pass>> {
    entries.iter().map(|e| (e.info.create)(&e.options)).collect()
}

/// The passes inside `builtin.module(...)`, or `text` when it has no anchor:
/// every tile and nv pass runs on the module, so that is the one anchor.
fn without_module_anchor(text: &str) -> Result<&str, String> {
    match text.trim().strip_prefix("builtin.module(") {
        Some(inner) => inner.strip_suffix(')').ok_or_else(|| format!("'builtin.module(' is not closed by the pipeline's last character in '{text}'")),
        None => Ok(text),
    }
}

/// Splits on commas that are not inside `{...}`.
fn split_top_level(text: &str) -> Result<Vec<&str>, String> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth < 0 {
                    return Err(format!("unbalanced '}}' in pipeline '{text}'"));
                }
            }
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(format!("unbalanced '{{' in pipeline '{text}'"));
    }
    if !text.trim().is_empty() {
        parts.push(&text[start..]);
    }
    Ok(parts)
}

/// `stages=3 wait_depth=1` (spaces or commas between pairs).
fn parse_option_list(pass: &str, body: &str) -> Result<Vec<(String, String)>, String> {
    body.split(|c: char| c.is_whitespace() || c == ',')
        .filter(|s| !s.is_empty())
        .map(|pair| match pair.split_once('=') {
            Some((k, v)) if !k.is_empty() && !v.is_empty() => Ok((k.to_string(), v.to_string())),
            _ => Err(format!("option '{pair}' of pass '{pass}' must be written key=value")),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Phase;

    #[test]
    fn splits_on_top_level_commas_only() {
        assert_eq!(split_top_level("a,b{x=1,y=2},c").unwrap(), vec!["a", "b{x=1,y=2}", "c"]);
        assert!(split_top_level("a{x=1").unwrap_err().contains("unbalanced '{'"));
        assert!(split_top_level("a}").unwrap_err().contains("unbalanced '}'"));
        assert!(split_top_level("").unwrap().is_empty());
    }

    #[test]
    fn options_are_typed_and_defaulted() {
        let entries = parse_pipeline("tile-canonicalize{max-iterations=3},tile-canonicalize").unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].options.int("max-iterations"), 3);
        assert_eq!(entries[1].options.int("max-iterations"), 10);
        // Passes fall back on tile.config only for options left out.
        assert!(entries[0].options.given("max-iterations"));
        assert!(!entries[1].options.given("max-iterations"));
    }

    #[test]
    fn the_default_pipeline_takes_tile_ir_to_nv_ir_in_phase_order() {
        let mut phase = Phase::Tile;
        for entry in parse_pipeline(DEFAULT_PIPELINE).unwrap() {
            assert!(entry.info.phases.accepts(phase), "'{}' cannot run on {phase}", entry.info.name);
            phase = entry.info.phases.after(phase);
        }
        assert_eq!(phase, Phase::Nv);
    }

    #[test]
    fn docs_state_the_default_pipeline() {
        let doc = include_str!("../../docs/ir.md");
        assert!(doc.contains(&format!("\n`{DEFAULT_PIPELINE}`\n")), "docs/ir.md's pass order must state DEFAULT_PIPELINE");
    }

    #[test]
    fn bad_pipelines_name_the_problem() {
        let err = |p: &str| parse_pipeline(p).err().expect("pipeline must be rejected");
        assert!(err("tile-nope").contains("unknown pass 'tile-nope'"));
        assert!(err("tile-canonicalize,").contains("empty pass name"));
        assert!(err("tile-canonicalize{max-iterations=x}").contains("expects an integer from 1 to 1000, found 'x'"));
        assert!(err("tile-canonicalize{max-iterations=2 max-iterations=3}").contains("given twice"));
        assert!(err("tile-canonicalize{max-iterations=2").contains("unbalanced"));
        assert!(err("builtin.module(tile-canonicalize").contains("'builtin.module(' is not closed"));
        assert!(err("gpu.module(tile-canonicalize)").contains("unknown pass 'gpu.module(tile-canonicalize)'"));
    }

    #[test]
    fn the_module_anchor_the_dump_prints_is_taken_back() {
        let anchored = parse_pipeline(" builtin.module(tile-canonicalize{max-iterations=3},tile-licm) ").unwrap();
        let names: Vec<&str> = anchored.iter().map(|e| e.info.name).collect();
        assert_eq!(names, ["tile-canonicalize", "tile-licm"]);
        assert_eq!(anchored[0].options.int("max-iterations"), 3);
        assert!(parse_pipeline("builtin.module()").unwrap().is_empty());
    }
}
