//! tilec as a library, one subcommand per use:
//!
//! - `build-ir`: builds the BF16 GEMM of `examples/gemm_bf16.tile` in code
//!   with the dialects' typed builders, verifies it and prints it;
//! - `custom-pass`: defines a pass, registers it, names it in a pipeline
//!   string and compiles through the front door with it;
//! - `family DIR`: compiles the kernels config selection picks for a few
//!   shapes and writes the family (`DIR/family.json`, `DIR/k0/`, ...), ready
//!   for the runtime (`cargo run -p tilec-runtime --example launch -- DIR/k0`).
//!
//! One binary for the three: every binary that links MLIR is hundreds of MB.
//!
//! ```sh
//! cargo run --example tilec -- build-ir
//! ```

use std::process::ExitCode;
use std::sync::Arc;
use tilec::dialects::ir::{Attribute, Attributes, Builder, ElemType, InsertPoint, Param, RefType, TileType};
use tilec::dialects::{tile, Diagnostic, Function, Location, Module, Type};
use tilec::passes::{Pass, PassInfo, PhaseRule};
use tilec::{compile, compile_family, Options};

const GEMM: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/gemm_bf16.tile");

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["build-ir"] => build_ir(),
        ["custom-pass"] => custom_pass(),
        ["family", dir] => family(dir),
        _ => Err("usage: tilec-example build-ir | custom-pass | family DIR".into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

/// `C = A * B^T` in BF16 with FP32 accumulation, one `BLOCK_M x BLOCK_N` tile
/// of C per program instance: the program of `examples/gemm_bf16.tile`.
fn build_gemm() -> Module {
    let bf16_ref = Type::Ref(RefType { shape: vec![None, None], elem: ElemType::BF16 });
    let tile = |rows: Param, cols: Param, elem| Type::Tile(TileType::new(vec![rows.extent(), cols.extent()], elem));
    let (acc_ty, a_ty, b_ty) = (
        tile(Param::BlockM, Param::BlockN, ElemType::F32),
        tile(Param::BlockM, Param::BlockK, ElemType::BF16),
        tile(Param::BlockN, Param::BlockK, ElemType::BF16),
    );
    let loc = Location::new(Arc::from("gemm built in code"), 1, 1);
    let mut f = Function::new("gemm_bf16", &[bf16_ref.clone(), bf16_ref.clone(), bf16_ref], loc.clone());
    // `tile.dims` names each tensor dimension, so M, N and K are bound at launch.
    for (attrs, dims) in f.arg_attrs.iter_mut().zip([["M", "K"], ["N", "K"], ["M", "N"]]) {
        attrs.set("tile.dims", Attribute::Array(dims.map(|d| Attribute::String(d.into())).to_vec()));
    }
    let [a, b, c] = f.args()[..] else { unreachable!("three arguments were declared") };
    let entry = f.entry_block();
    let mut at = Builder::new(&mut f.body, InsertPoint::End(entry), loc.clone());
    let pid_m = tile::BlockId::build(&mut at, 0, Attributes::new()).result(at.body);
    let pid_n = tile::BlockId::build(&mut at, 1, Attributes::new()).result(at.body);
    let c0 = at.index(0);
    let c1 = at.index(1);
    let block_k = tile::Param::build(&mut at, "BLOCK_K", Attributes::new()).result(at.body);
    let k = tile::Dim::build(&mut at, a, 1, Attributes::new()).result(at.body);
    let k_tiles = tile::Ceildivsi::build(&mut at, k, block_k, Attributes::new()).result(at.body);
    let mut zero_value = Attributes::new();
    zero_value.set("value", Attribute::Float(0.0, ElemType::F32));
    let zero = tile::Constant::build(&mut at, acc_ty.clone(), zero_value).result(at.body);
    let for_op = tile::For::build(&mut at, c0, k_tiles, c1, &[zero], &[acc_ty.clone()], Attributes::new());
    let (_, body) = at.body.add_region(for_op.op(), &[Type::INDEX, acc_ty.clone()]);
    let acc = at.body.result(for_op.op(), 0);

    // The loop body: load a K-slice of A and B, multiply-accumulate.
    let [kt, acc_in] = at.body.blocks[body].args[..] else { unreachable!("the region takes two arguments") };
    let mut inner = Builder::new(at.body, InsertPoint::End(body), loc.clone());
    let a_tile = tile::Load::build(&mut inner, a, &[pid_m, kt], a_ty, Attributes::new()).result(inner.body);
    let b_tile = tile::Load::build(&mut inner, b, &[pid_n, kt], b_ty, Attributes::new()).result(inner.body);
    let mut transpose_b = Attributes::new();
    transpose_b.set("transpose_b", Attribute::Unit);
    let acc_out = tile::Dot::build(&mut inner, a_tile, b_tile, acc_in, transpose_b).result(inner.body);
    tile::Yield::build(&mut inner, &[acc_out], Attributes::new());

    let mut at = Builder::new(&mut f.body, InsertPoint::End(entry), loc);
    let c_ty = tile(Param::BlockM, Param::BlockN, ElemType::BF16);
    let c_tile = tile::Truncf::build(&mut at, acc, c_ty, Attributes::new()).result(at.body);
    tile::Store::build(&mut at, c_tile, c, &[pid_m, pid_n], Attributes::new());
    tile::Return::build(&mut at, Attributes::new());
    let names = [(a, "A"), (b, "B"), (c, "C"), (pid_m, "pid_m"), (pid_n, "pid_n"), (c0, "c0"), (c1, "c1"), (block_k, "block_k")];
    let more = [(k, "k"), (k_tiles, "k_tiles"), (zero, "zero"), (kt, "kt"), (acc_in, "acc_in"), (a_tile, "a_tile"), (b_tile, "b_tile")];
    let rest = [(acc_out, "acc_out"), (acc, "acc"), (c_tile, "c_tile")];
    for (value, name) in names.into_iter().chain(more).chain(rest) {
        at.name(value, name);
    }
    Module { functions: vec![f] }
}

fn build_ir() -> Result<(), String> {
    let module = build_gemm();
    tilec::dialects::verify_module(&module).map_err(|d| d.to_string())?;
    let text = tilec::dialects::print_module(&module, tilec::dialects::PrintOptions::default());
    print!("{text}");
    let source = std::fs::read_to_string(GEMM).map_err(|e| format!("{GEMM}: {e}"))?;
    let parsed = tilec::dialects::parse_module(&source, GEMM).map_err(|d| d.to_string())?;
    if tilec::dialects::print_module(&parsed, tilec::dialects::PrintOptions::default()) != text {
        return Err(format!("the GEMM built in code differs from {GEMM}"));
    }
    println!("// the same IR as examples/gemm_bf16.tile");
    // What was built is a program tilec compiles: the printed text goes through the front door.
    let options = Options { shape: Some((4096, 4096, 4096)), ..Options::default() };
    let kernel = compile(&text, "gemm built in code", &options).map_err(|e| e.to_string())?;
    println!("// compiles: entry {}, {} lines of PTX", kernel.manifest.entry, kernel.ptx.lines().count());
    Ok(())
}

/// A pass of the user's: counts the `tile.dot`s of each function and records
/// the count as the function attribute `example.dots`.
struct CountDots;

impl Pass for CountDots {
    fn name(&self) -> &'static str {
        "example-count-dots"
    }

    fn run(&mut self, func: &mut Function) -> Result<(), Diagnostic> {
        let body = &func.body;
        let dots = body.walk_region(func.region).into_iter().filter(|&op| tile::Dot::of(body, op).is_some()).count();
        func.attrs.set("example.dots", Attribute::Int(dots as i64, ElemType::I64));
        Ok(())
    }
}

fn custom_pass() -> Result<(), String> {
    tilec::register_pass(PassInfo {
        name: "example-count-dots",
        summary: "Record the number of tile.dot ops as the function attribute example.dots",
        options: &[],
        phases: PhaseRule::ANY,
        create: |_| Box::new(CountDots),
    })?;
    let source = std::fs::read_to_string(GEMM).map_err(|e| format!("{GEMM}: {e}"))?;
    // Config selection goes in front of a given pipeline, since the program has
    // parameters; `tile-pipeline` takes its stages from the config it chose,
    // the plain pipeline for one wave of 128x256 tiles at 128x32768x512 (over
    // more waves it picks a warp-specialised kernel, which tile-persistent
    // and tile-warp-specialize run instead).
    let pipeline = "example-count-dots,tile-canonicalize,tile-assign-layouts,tile-pipeline,tile-lower-to-nv,tile-canonicalize".to_string();
    println!("pipeline: tile-select-config,{pipeline}");
    let options = Options { shape: Some((128, 32768, 512)), pipeline: Some(pipeline), ..Options::default() };
    let kernel = compile(&source, "gemm_bf16.tile", &options).map_err(|e| e.to_string())?;
    let header = kernel.nv.lines().find(|l| l.contains("example.dots")).ok_or("the registered pass did not run")?;
    println!("{header}");
    Ok(())
}

fn family(dir: &str) -> Result<(), String> {
    let source = std::fs::read_to_string(GEMM).map_err(|e| format!("{GEMM}: {e}"))?;
    let shapes = [(64, 4096, 4096), (128, 4096, 4096), (4096, 4096, 4096)];
    let family = compile_family(&source, "gemm_bf16.tile", &shapes, &Options::default()).map_err(|e| e.to_string())?;
    for (name, kernel) in &family.kernels {
        println!("{name}: {}", kernel.config.as_deref().unwrap_or("-"));
    }
    for row in &family.manifest.dispatch {
        println!("N={} K={} M in [{}, {}] -> {}", row.n, row.k, row.m_min, row.m_max, row.kernel);
    }
    family.write(dir).map_err(|e| e.to_string())?;
    println!("written to {dir}");
    Ok(())
}
