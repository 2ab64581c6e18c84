//! Any text through the whole compiler (`tilec::compile`: parse, verify,
//! config selection and the passes, the lowering to MLIR, the upstream
//! pipeline and PTX): no panic, every error located in the input, and no
//! back-end rejection of the MLIR tilec generated (a tilec bug). The
//! structure-aware generator of `tests/robustness/` covers the same pipeline
//! in CI with programs that look valid; this target lets libFuzzer explore
//! from the examples as a seed corpus:
//! `cargo +nightly fuzz run pipeline fuzz/corpus/pipeline ../examples`.
#![no_main]

use libfuzzer_sys::fuzz_target;

const FILE: &str = "fuzz.tile";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Err(error) = tilec::compile(text, FILE, &tilec::Options::default()) else { return };
    let message = error.to_string();
    assert!(!message.contains("a tilec bug"), "the back end rejected generated MLIR:\n{message}");
    assert!(message.starts_with(&format!("{FILE}:")), "an error without a location in the input:\n{message}");
});
