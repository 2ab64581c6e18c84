//! The front door, `tilec::compile` and `tilec::compile_family`: the same
//! steps as `tilec compile`, every stage returned.

use tilec::target::Target;
use tilec::{compile, compile_family, Options};

fn gemm() -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/gemm_bf16.tile");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

#[test]
fn compile_returns_every_stage_of_the_pinned_config() {
    let options = Options { shape: Some((4096, 4096, 4096)), params: vec![("BLOCK_N".into(), 128)], ..Options::default() };
    let kernel = compile(&gemm(), "gemm_bf16.tile", &options).unwrap_or_else(|e| panic!("{e}"));
    let config = kernel.config.expect("config selection ran");
    assert!(config.contains("block_n = 128"), "the pinned BLOCK_N must be in the chosen config: {config}");
    assert!(kernel.nv.contains("nv."), "the IR after the passes is nv IR:\n{}", kernel.nv);
    assert!(kernel.mlir.contains("gpu.module"), "{}", kernel.mlir);
    assert!(kernel.ptx.contains(&format!(".entry {}", kernel.manifest.entry)), "the PTX defines the manifest's entry");
    assert!(kernel.ptx.contains("wgmma.mma_async"), "a Hopper GEMM issues wgmma");
}

#[test]
fn the_manifest_names_the_target_compiled_for() {
    let compiled_for = |options: &Options| compile(&gemm(), "gemm_bf16.tile", options).unwrap_or_else(|e| panic!("{e}")).manifest;
    let h100 = compiled_for(&Options { target: &Target::H100, ..Options::default() });
    assert_eq!((h100.gpu.as_deref(), h100.target.as_str()), (Some("h100"), "sm_90a"));
    assert_eq!(compiled_for(&Options::default()).gpu.as_deref(), Some(Target::DEFAULT.name));
}

#[test]
fn compile_reports_bad_input_where_it_is() {
    let err = compile("tile.func @k() {\n  tile.nope\n}\n", "bad.tile", &Options::default()).unwrap_err();
    assert!(err.to_string().starts_with("bad.tile:2:"), "a located error: {err}");
}

#[test]
fn compile_refuses_a_pipeline_naming_an_unknown_pass() {
    let options = Options { pipeline: Some("no-such-pass".into()), ..Options::default() };
    let err = compile(&gemm(), "gemm_bf16.tile", &options).unwrap_err();
    assert!(err.to_string().contains("unknown pass 'no-such-pass'"), "{err}");
}

#[test]
fn a_family_shares_a_kernel_between_shapes_that_pick_it() {
    let shapes = [(4096, 4096, 4096), (4096, 4096, 4096), (64, 4096, 4096)];
    let family = compile_family(&gemm(), "gemm_bf16.tile", &shapes, &Options::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(family.kernels.len(), family.manifest.kernels.len());
    assert!(family.kernels.len() <= 2, "two distinct shapes give at most two kernels");
    for row in &family.manifest.dispatch {
        assert!(family.kernels.iter().any(|(name, _)| *name == row.kernel), "dispatch names a compiled kernel: {}", row.kernel);
    }
    let dir = std::env::temp_dir().join(format!("tilec-api-family-{}", std::process::id()));
    family.write(dir.to_str().unwrap()).unwrap();
    assert!(dir.join("family.json").is_file() && dir.join("k0/kernel.ptx").is_file());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_family_takes_no_shape_or_pipeline_of_its_own() {
    let options = Options { shape: Some((64, 64, 64)), ..Options::default() };
    assert!(compile_family(&gemm(), "gemm_bf16.tile", &[(64, 64, 64)], &options).is_err());
}
