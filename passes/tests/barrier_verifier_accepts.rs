//! No false positives: the barrier verifier accepts every kernel the
//! repository's pipelines produce (each artifact of scripts/gpu-variants.txt,
//! after every pass of its pipeline), and still rejects a broken one, so the
//! run below cannot pass by not verifying. Nor by not tracing: a warning
//! (a kernel the trace check could not follow) fails it too.

use std::path::{Path, PathBuf};
use tilec_dialects::{parse_module, Diagnostic, Severity};
use tilec_passes::analysis::barriers::verify_barriers;
use tilec_passes::{Instrumentation, PassManager};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `(name, file, pipeline)` for each artifact of scripts/gpu-variants.txt
/// (`NAME FILE PIPELINE|- [--param NAME=VALUE]...`); pinned parameters
/// become a `tile-select-config` in front, as `tilec compile` puts it there;
/// an nv-level spec (`-`) has no pipeline.
fn variants() -> Vec<(String, String, Option<String>)> {
    let list = std::fs::read_to_string(root().join("scripts/gpu-variants.txt")).expect("read the variants list");
    list.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let fields: Vec<&str> = l.split_whitespace().collect();
            let pins: Vec<String> = fields
                .windows(2)
                .filter(|w| w[0] == "--param")
                .map(|w| {
                    let (name, value) = w[1].split_once('=').expect("--param NAME=VALUE");
                    format!("{}={value}", name.to_ascii_lowercase().replace('_', "-"))
                })
                .collect();
            let pipeline = fields.get(2).filter(|p| **p != "-").map(|p| match pins.is_empty() {
                true => p.to_string(),
                false => format!("tile-select-config{{{}}},{p}", pins.join(" ")),
            });
            (fields[0].to_string(), fields[1].to_string(), pipeline)
        })
        .collect()
}

fn compile(file: &str, pipeline: Option<&str>) -> Result<(), String> {
    let src = std::fs::read_to_string(root().join(file)).map_err(|e| format!("read {file}: {e}"))?;
    let mut module = parse_module(&src, file).map_err(|d| d.to_string())?;
    if let Some(pipeline) = pipeline {
        // Verification after each pass runs the barrier verifier too.
        let instrumentation = Instrumentation { verify_each: true, ..Instrumentation::default() };
        let mut pm = PassManager::from_pipeline(pipeline, instrumentation).map_err(|e| e.to_string())?;
        pm.run(&mut module, &mut std::io::sink()).map_err(|e| e.to_string())?;
        unwarned(pm.take_diagnostics())?;
    }
    for func in &module.functions {
        unwarned(verify_barriers(func).map_err(|d| d.to_string())?)?;
    }
    Ok(())
}

fn unwarned(diagnostics: Vec<Diagnostic>) -> Result<(), String> {
    match diagnostics.iter().find(|d| d.severity != Severity::Remark) {
        Some(w) => Err(w.to_string()),
        None => Ok(()),
    }
}

#[test]
fn every_gpu_variant_is_accepted() {
    let variants = variants();
    assert!(variants.len() >= 40, "the variants list shrank to {}", variants.len());
    let failures: Vec<String> = variants
        .iter()
        .filter_map(|(name, file, pipeline)| compile(file, pipeline.as_deref()).err().map(|e| format!("{name}: {e}")))
        .collect();
    assert!(failures.is_empty(), "rejected:\n{}", failures.join("\n"));
}

#[test]
fn a_broken_variant_is_rejected() {
    let file = "tests/lit/barrier-verifier/missing_cta_barrier.tile";
    let err = compile(file, None).expect_err("the barrier verifier must reject a kernel with no CTA barrier before its refill");
    assert!(err.contains("overwrites '%a_tile_smem'"), "{err}");
}
