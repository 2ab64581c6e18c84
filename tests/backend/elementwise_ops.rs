//! Adding an element-wise op takes its ODS entry, its lowering arm and its
//! tests, nothing else: every op ODS marks `elementwise` that takes f32
//! tiles is applied here to the accumulator between the K loop and the
//! conversion, and the program compiles to PTX with the kernels config
//! selection picks for it at two shapes (a persistent warp-specialised
//! kernel with a deferred epilogue, and a plain pipeline with split K),
//! with no list of ops in the passes or the lowering to extend.

use tilec::dialects::registry::dialects;
use tilec::dialects::parse_module;
use tilec::{compile, Options};

const F32_TILE: &str = "tensor<BLOCK_MxBLOCK_Nxf32>";

/// Element-wise ops that change the element type: not applied to the f32
/// accumulator here. `tile.truncf` ends every program of this test;
/// `tile.extf` and `tile.index_cast` have their own lit tests
/// (`tests/lit/lower-to-mlir/`, `tests/lit/errors/`).
const CASTS: [&str; 3] = ["tile.truncf", "tile.extf", "tile.index_cast"];

fn gemm() -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/gemm_bf16.tile");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// The GEMM with `line` (defining `%applied` from `%acc`) before the
/// conversion, which converts `%applied` instead.
fn with_op(line: &str) -> String {
    let conversion = "  %c_tile = tile.truncf %acc :";
    let program = gemm();
    assert!(program.contains(conversion), "examples/gemm_bf16.tile converts %acc");
    program.replace(conversion, &format!("  {line}\n  %c_tile = tile.truncf %applied :"))
}

/// The op applied as a unary or a binary op on f32 tiles, where its
/// syntax takes that form.
fn applied(name: &str) -> Option<String> {
    [format!("%applied = {name} %acc : {F32_TILE}"), format!("%applied = {name} %acc, %acc : {F32_TILE}")]
        .into_iter()
        .map(|line| with_op(&line))
        .find(|program| parse_module(program, "elementwise.tile").is_ok())
}

#[test]
fn every_elementwise_op_compiles_in_an_epilogue_without_more_code() {
    let ops: Vec<&str> = dialects().into_iter().flatten().filter(|d| d.traits.elementwise).map(|d| d.name).collect();
    let mut tested = 0;
    for name in ops {
        let Some(program) = applied(name) else {
            assert!(CASTS.contains(&name), "{name} is element-wise but neither a unary nor a binary op on f32 tiles: give this test its form");
            continue;
        };
        for shape in [(4096, 4096, 4096), (128, 2112, 7168)] {
            let options = Options { shape: Some(shape), ..Options::default() };
            let kernel = compile(&program, "elementwise.tile", &options).unwrap_or_else(|e| panic!("{name} at {shape:?}: {e}"));
            assert!(kernel.ptx.contains("wgmma.mma_async"), "{name} at {shape:?}: a GEMM's PTX");
        }
        tested += 1;
    }
    assert!(tested >= 12, "the float element-wise ops (six unary, six binary) are all applied; {tested} were");
}
