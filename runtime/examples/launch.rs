//! Loads a compiled GEMM artifact with [`tilec_runtime::Gemm`], launches it
//! on random BF16 inputs and checks C against cuBLAS; prints SKIPPED where
//! there is no GPU (after checking that the artifact loads and is a GEMM).
//! The default shape, 64x4096x4096, is the one `k0` of the example family
//! was picked for.
//!
//! ```sh
//! cargo run --example tilec -- family /tmp/family      # compile (links MLIR)
//! cargo run -p tilec-runtime --example launch -- /tmp/family/k0 [MxNxK]
//! ```

use half::bf16;
use std::process::ExitCode;
use tilec_runtime::artifact::Artifact;
use tilec_runtime::check::{random_bf16, rel_frobenius_bf16, seed_from_time, Rng};
use tilec_runtime::{cuda_available, Cublas, Gemm, GemmSize, GemmSpec, Gpu};

/// The relative Frobenius error `tilec-gpu-test` accepts by default.
const THRESHOLD: f64 = 1e-2;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (dir, shape) = match &args[..] {
        [dir] => (dir.as_str(), "64x4096x4096"),
        [dir, shape] => (dir.as_str(), shape.as_str()),
        _ => {
            eprintln!("usage: launch ARTIFACT_DIR [MxNxK]");
            return ExitCode::from(2);
        }
    };
    match run(dir, shape) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("launch: {e}");
            ExitCode::FAILURE
        }
    }
}

fn parse_shape(text: &str) -> Result<GemmSize, String> {
    let dims: Vec<u64> = text.split('x').map(|d| d.parse().map_err(|_| format!("expected MxNxK, found '{text}'"))).collect::<Result<_, _>>()?;
    match dims[..] {
        [m, n, k] if m > 0 && n > 0 && k > 0 => Ok(GemmSize::new(m, n, k)),
        _ => Err(format!("expected MxNxK with three positive integers, found '{text}'")),
    }
}

fn run(dir: &str, shape: &str) -> Result<(), String> {
    let size = parse_shape(shape)?;
    let artifact = Artifact::load(dir).map_err(|e| e.to_string())?;
    let spec = GemmSpec::from_manifest(&artifact.manifest).map_err(|e| e.to_string())?;
    println!("{dir}: entry {}, A and B in {:?}", artifact.manifest.entry, spec.input);
    if !cuda_available() {
        tilec_cli::report_skip("tilec-runtime example launch", "no CUDA driver on this machine");
        return Ok(());
    }
    let gpu = Gpu::new(0).map_err(|e| e.to_string())?;
    let gemm = Gemm::from_artifact(&gpu, &artifact).map_err(|e| e.to_string())?;
    let (m, n, k) = (size.m as usize, size.n as usize, size.k as usize);
    let seed = seed_from_time();
    let mut rng = Rng::new(seed);
    let upload = |v: &[bf16]| gpu.stream.clone_htod(v).map_err(|e| e.to_string());
    let a = upload(&random_bf16(m * k, &mut rng))?;
    let b = upload(&random_bf16(n * k, &mut rng))?;
    let c = upload(&vec![bf16::NAN; m * n])?;
    let mut c_ref = upload(&vec![bf16::NAN; m * n])?;

    let mut call = gemm.bind(&gpu, size, &a, &b, &c).map_err(|e| e.to_string())?;
    call.launch_checked().map_err(|e| e.to_string())?;
    Cublas::new(gpu.stream.clone()).and_then(|blas| blas.gemm_bf16_tn(size.m, size.n, size.k, &a, &b, &mut c_ref)).map_err(|e| e.to_string())?;
    let download = |v| gpu.stream.clone_dtoh(v).map_err(|e| e.to_string());
    let err = rel_frobenius_bf16(&download(&c)?, &download(&c_ref)?, 1.0);
    let verdict = if err <= THRESHOLD { "PASS" } else { "FAIL" };
    println!("{shape}: relative Frobenius error against cuBLAS {err:.3e} (threshold {THRESHOLD:.0e}, seed {seed:#x}): {verdict}");
    if err <= THRESHOLD {
        Ok(())
    } else {
        Err(format!("{shape}: the kernel's C differs from cuBLAS's"))
    }
}
