//! Runs every FileCheck test under tests/lit/ as one cargo test per file.

#[path = "support/ptxas.rs"]
mod ptxas;

use std::path::Path;
use std::process::ExitCode;
use tilec_filecheck::{run_lit, LitConfig};

const LLVM_BIN: &str = "/usr/lib/llvm-22/bin";

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
    // Tests that assemble PTX REQUIRE ptxas; each one skipped is counted.
    match ptxas::find(root) {
        Ok(Some(ptxas)) => {
            eprintln!("lit: ptxas: {}", ptxas.display());
            config = config.substitution("%ptxas", ptxas).feature("ptxas");
        }
        Ok(None) => eprintln!("lit: no ptxas (scripts/find-ptxas.sh found none; scripts/setup.sh installs it): the tests that REQUIRE it are skipped"),
        Err(e) => {
            eprintln!("lit: {e}");
            return ExitCode::FAILURE;
        }
    }
    config = config.on_skip(|test, why| tilec_cli::report_skip(&format!("lit {test}"), why));
    config.temp_root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("lit");
    run_lit(config)
}
