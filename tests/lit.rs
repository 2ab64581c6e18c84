//! Runs every FileCheck test under tests/lit/ as one cargo test per file.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tilec_filecheck::{run_lit, LitConfig};

const LLVM_BIN: &str = "/usr/lib/llvm-22/bin";

/// `ptxas` from `TILEC_PTXAS` or PATH: tests that assemble PTX need it.
fn find_ptxas() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TILEC_PTXAS") {
        return Some(PathBuf::from(p));
    }
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join("ptxas")).find(|p| p.is_file())
}

fn main() -> ExitCode {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = match LitConfig::new(root.join("tests/lit")) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("lit: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut config = config
        .substitution("%tile-opt", env!("CARGO_BIN_EXE_tile-opt"))
        .substitution("%tilec", env!("CARGO_BIN_EXE_tilec"))
        .substitution("%mlir-opt", Path::new(LLVM_BIN).join("mlir-opt"))
        .substitution("%expect-error", root.join("tests/expect-error.sh"))
        .substitution("%expect-usage-error", format!("{} --usage", root.join("tests/expect-error.sh").display()));
    if let Some(ptxas) = find_ptxas() {
        config = config.substitution("%ptxas", ptxas).feature("ptxas");
    }
    config.temp_root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("lit");
    run_lit(config)
}
