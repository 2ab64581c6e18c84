//! `tile-opt`: runs tile/nv passes on a tile program, as `mlir-opt` runs
//! MLIR passes.

mod opt;
mod split_input;
#[path = "../common/source.rs"]
mod source;
mod verify_diagnostics;

fn main() -> std::process::ExitCode {
    opt::main()
}
