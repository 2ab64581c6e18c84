//! `tile-canonicalize` stays near-linear in program size: a chain of 20,000
//! dead ops, 20,000 foldable ops and 255 nested dead `tile.if` are each
//! cleaned up in well under the time a quadratic pass needs (tens of
//! seconds for the first, before), with the right result.

use std::time::{Duration, Instant};
use tilec_dialects::{parse_module, print_module, PrintOptions};
use tilec_passes::{Instrumentation, PassManager};

const N: usize = 20_000;
/// Generous for an unoptimised build on a loaded machine; a quadratic pass
/// takes over 40 s on the first case.
const BOUND: Duration = Duration::from_secs(8);

fn canonicalize(src: &str) -> (String, Duration) {
    let mut module = parse_module(src, "t.tile").expect("parses");
    let instrumentation = Instrumentation { verify_each: false, ..Instrumentation::default() };
    let mut pm = PassManager::from_pipeline("tile-canonicalize", instrumentation).expect("pipeline");
    let start = Instant::now();
    pm.run(&mut module, &mut std::io::sink()).expect("canonicalizes");
    (print_module(&module, PrintOptions::default()), start.elapsed())
}

#[test]
fn long_dead_chain() {
    let mut src = String::from("tile.func @f(%n: index) {\n  %c1 = tile.constant 1 : index\n  %v0 = tile.addi %n, %c1 : index\n");
    for i in 0..N {
        src.push_str(&format!("  %v{} = tile.addi %v{i}, %c1 : index\n", i + 1));
    }
    src.push_str("  tile.return\n}\n");
    let (out, took) = canonicalize(&src);
    assert!(!out.contains("tile.addi"), "dead chain left: {}", &out[..out.len().min(300)]);
    assert!(took < BOUND, "took {took:?}");
}

#[test]
fn long_folding_chain() {
    let mut src = String::from("tile.func @f(%C: !tile.ref<?x?xf32>) {\n  %c1 = tile.constant 1 : index\n  %v0 = tile.addi %c1, %c1 : index\n");
    for i in 0..N {
        src.push_str(&format!("  %v{} = tile.addi %v{i}, %c1 : index\n", i + 1));
    }
    src.push_str(&format!(
        "  %t = tile.constant 0.0 : tensor<16x16xf32>\n  tile.store %t, %C[%v{N}, %c1] : tensor<16x16xf32> -> !tile.ref<?x?xf32>\n  tile.return\n}}\n"
    ));
    let (out, took) = canonicalize(&src);
    assert!(out.contains(&format!("tile.constant {} : index", N + 2)), "{out}");
    assert!(!out.contains("tile.addi"), "{out}");
    assert!(took < BOUND, "took {took:?}");
}

#[test]
fn deep_dead_ifs() {
    let depth = 127;
    let src = format!("tile.func @f(%c: i1) {{\n{}{}  tile.return\n}}\n", "tile.if %c {\n".repeat(depth), "tile.yield\n}\n".repeat(depth));
    let (out, took) = canonicalize(&src);
    assert!(!out.contains("tile.if"), "{out}");
    assert!(took < BOUND, "took {took:?}");
}
