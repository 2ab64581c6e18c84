//! Runs every FileCheck test under tests/lit/ as one cargo test per file.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tilec_filecheck::{run_lit, LitConfig};

const LLVM_BIN: &str = "/usr/lib/llvm-22/bin";

/// `ptxas`, where `scripts/find-ptxas.sh` finds it (`TILEC_PTXAS`, PATH, or
/// the `.venv-tools/` that `scripts/setup.sh` installs it in): tests that
/// assemble PTX need it.
fn find_ptxas(root: &Path) -> Option<PathBuf> {
    let out = std::process::Command::new("bash").arg(root.join("scripts/find-ptxas.sh")).output().ok()?;
    let path = String::from_utf8(out.stdout).ok()?;
    let path = PathBuf::from(path.trim());
    (out.status.success() && path.is_file()).then_some(path)
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
    match find_ptxas(root) {
        Some(ptxas) => {
            eprintln!("lit: ptxas: {}", ptxas.display());
            config = config.substitution("%ptxas", ptxas).feature("ptxas");
        }
        None => eprintln!("lit: no ptxas (scripts/find-ptxas.sh found none; scripts/setup.sh installs it): the tests that REQUIRE it are skipped"),
    }
    config.temp_root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("lit");
    run_lit(config)
}
