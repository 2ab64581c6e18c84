use crate::blas::col_major_gemm_reference;
use crate::check::*;
use crate::*;
use cudarc::driver::sys;
use half::bf16;
use tilec_artifact::*;

fn gemm_manifest() -> Manifest {
    Manifest::from_json_str(
        r#"{
  "format_version": 1, "kernel_name": "g", "entry": "g", "target": "sm_90a",
  "block": [384, 1, 1], "cluster": [2, 1, 1],
  "grid": { "rule": "tiles", "block_m": 128, "block_n": 256 },
  "dynamic_smem_bytes": 200000,
  "tensors": [
    { "name": "A", "dtype": "bf16", "shape": ["M", "K"], "role": "input" },
    { "name": "B", "dtype": "bf16", "shape": ["N", "K"], "role": "input" },
    { "name": "C", "dtype": "bf16", "shape": ["M", "N"], "role": "output" }
  ],
  "params": [
    { "kind": "tma", "tensor": "A", "dtype": "bf16", "box_dims": [128, 64], "swizzle": "128B" },
    { "kind": "tma", "tensor": "B", "dtype": "bf16", "box_dims": [256, 64], "swizzle": "128B", "oob_fill": "nan" },
    { "kind": "ptr", "tensor": "C" },
    { "kind": "scalar", "ty": "i32", "symbol": "M" },
    { "kind": "scalar", "ty": "i64", "symbol": "K" },
    { "kind": "scalar", "ty": "f32", "literal": 0.5 }
  ]
}"#,
    )
    .unwrap()
}

fn bindings(m: u64, n: u64, k: u64) -> Vec<TensorBinding> {
    vec![
        TensorBinding { name: "A".into(), dtype: DType::Bf16, addr: 0x1000_0000, bytes: m * k * 2 },
        TensorBinding { name: "B".into(), dtype: DType::Bf16, addr: 0x2000_0000, bytes: n * k * 2 },
        TensorBinding { name: "C".into(), dtype: DType::Bf16, addr: 0x3000_0000, bytes: m * n * 2 },
    ]
}

#[test]
fn plan_computes_tma_args_inner_first() {
    let m = gemm_manifest();
    m.validate().unwrap();
    let plan = plan_launch(&m, &Problem::gemm(1000, 1000, 2000), &bindings(1000, 1000, 2000), 132).unwrap();
    // ceil(1000/128) = 8 (multiple of cluster x = 2), ceil(1000/256) = 4
    assert_eq!(plan.grid, [8, 4, 1]);
    assert_eq!(plan.cluster, [2, 1, 1]);
    assert_eq!(plan.dynamic_smem_bytes, 200000);
    let ParamValue::Tma(a) = &plan.params[0] else { panic!() };
    assert_eq!(a.rank, 2);
    assert_eq!(a.global_address, 0x1000_0000);
    assert_eq!(&a.global_dim[..2], &[2000, 1000]); // K inner, then M
    assert_eq!(a.global_strides[0], 4000); // row stride in bytes
    assert_eq!(&a.box_dim[..2], &[64, 128]);
    assert_eq!(&a.element_strides[..2], &[1, 1]);
    assert_eq!(a.data_type, sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
    assert_eq!(a.swizzle, sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B);
    assert_eq!(a.l2_promotion, sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_128B);
    assert_eq!(a.oob_fill, sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    let ParamValue::Tma(b) = &plan.params[1] else { panic!() };
    assert_eq!(&b.box_dim[..2], &[64, 256]);
    assert_eq!(b.oob_fill, sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA);
    assert_eq!(plan.params[2], ParamValue::Ptr(0x3000_0000));
    assert_eq!(plan.params[3], ParamValue::I32(1000));
    assert_eq!(plan.params[4], ParamValue::I64(2000));
    assert_eq!(plan.params[5], ParamValue::F32(0.5));
}

#[test]
fn tma_args_rank3_and_fp8() {
    let tma = TmaParam {
        tensor: "S".into(),
        dtype: DType::F8e4m3,
        box_dims: vec![2, 64, 128],
        swizzle: Swizzle::B128,
        l2_promotion: L2Promotion::B256,
        oob_fill: OobFill::Zero,
        interleave: Interleave::None,
        flat: false,
        fit_rows: false,
        tail: false,
    };
    let a = tma_encode_args(&tma, &[4, 512, 1024], 0x100).unwrap();
    assert_eq!(a.data_type, sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT8);
    assert_eq!(&a.global_dim[..3], &[1024, 512, 4]);
    assert_eq!(&a.global_strides[..2], &[1024, 512 * 1024]);
    assert_eq!(&a.box_dim[..3], &[128, 64, 2]);
    assert_eq!(a.l2_promotion, sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
}

/// A fitted BF16 descriptor of A with 128-byte swizzled boxes of `box_dims`,
/// the tail one with `tail`.
fn fitted_bf16_a(box_dims: Vec<u32>, tail: bool) -> TmaParam {
    TmaParam {
        tensor: "A".into(),
        dtype: DType::Bf16,
        box_dims,
        swizzle: Swizzle::B128,
        l2_promotion: L2Promotion::B128,
        oob_fill: OobFill::Zero,
        interleave: Interleave::None,
        flat: false,
        fit_rows: true,
        tail,
    }
}

#[test]
fn tma_args_fit_rows_stop_at_the_tensor_rounded_to_eight_rows() {
    // A decode GEMM's A (M of a few rows) in 64-row tiles: the box copies
    // the rows that exist, rounded up to the swizzle period, and a tensor
    // of a full box's rows or more keeps the full box.
    let mut tma = fitted_bf16_a(vec![64, 64], false);
    let rows = |tma: &TmaParam, shape: &[u64]| tma_encode_args(tma, shape, 0x100).unwrap().box_dim;
    assert_eq!(&rows(&tma, &[1, 4096])[..2], &[64, 8]);
    assert_eq!(&rows(&tma, &[8, 4096])[..2], &[64, 8]);
    assert_eq!(&rows(&tma, &[13, 4096])[..2], &[64, 16]);
    assert_eq!(&rows(&tma, &[63, 4096])[..2], &[64, 64]);
    assert_eq!(&rows(&tma, &[4097, 4096])[..2], &[64, 64]);
    tma.box_dims = vec![1, 64, 64];
    assert_eq!(&rows(&tma, &[4, 20, 4096])[..3], &[64, 24, 1]);
    tma.fit_rows = false;
    assert_eq!(&rows(&tma, &[4, 20, 4096])[..3], &[64, 64, 1]);
}

#[test]
fn tma_args_tail_boxes_stop_at_the_rows_past_the_last_whole_box() {
    // 152 rows in 128-row boxes: the second box holds 24 rows, and the
    // descriptor of such boxes copies those, not 104 rows of zeros; a
    // tensor of whole boxes keeps the full box, one smaller than a box the
    // rows it has.
    let tma = fitted_bf16_a(vec![128, 64], true);
    let rows = |shape: &[u64]| tma_encode_args(&tma, shape, 0x100).unwrap().box_dim;
    assert_eq!(&rows(&[152, 4096])[..2], &[64, 24]);
    assert_eq!(&rows(&[129, 4096])[..2], &[64, 8]);
    assert_eq!(&rows(&[250, 4096])[..2], &[64, 128]);
    assert_eq!(&rows(&[256, 4096])[..2], &[64, 128]);
    assert_eq!(&rows(&[384 + 13, 4096])[..2], &[64, 16]);
    assert_eq!(&rows(&[20, 4096])[..2], &[64, 24]);
    assert_eq!(&rows(&[1, 4096])[..2], &[64, 8]);
}

#[test]
fn tma_args_flat_cover_every_element_as_one_dimension() {
    // A K block's row scales stored M-major (SA as KB x M): one run each,
    // addressed by its memory-order index however odd M is.
    let tma = TmaParam {
        tensor: "SA".into(),
        dtype: DType::F32,
        box_dims: vec![160],
        swizzle: Swizzle::None,
        l2_promotion: L2Promotion::B128,
        oob_fill: OobFill::Zero,
        interleave: Interleave::None,
        flat: true,
        fit_rows: false,
        tail: false,
    };
    let a = tma_encode_args(&tma, &[3, 129], 0x100).unwrap();
    assert_eq!(a.rank, 1);
    assert_eq!(&a.global_dim[..2], &[387, 1]);
    assert_eq!(&a.box_dim[..2], &[160, 1]);
    let too_many = tma_encode_args(&tma, &[1 << 16, 1 << 15], 0x100).unwrap_err();
    assert!(matches!(too_many, RuntimeError::FlatTooLarge { elements, .. } if elements == 1 << 31), "{too_many}");
    assert!(matches!(tma_encode_args(&tma, &[3, 129], 0x104), Err(RuntimeError::Misaligned { align: 16, .. })));
}

/// A CTA launched to have its SM to itself asks for more than half the
/// SM's shared memory, never less than it needs nor more than it may.
#[test]
fn a_cta_alone_on_its_sm_claims_more_than_half_of_it() {
    let (sm, optin) = (233_472, 232_448);
    let alone = plan::smem_alone_on_sm(86_080, 0, sm, optin);
    assert!(2 * (alone + 1024) > sm && alone + 1024 <= sm, "{alone}");
    assert_eq!(plan::smem_alone_on_sm(200_000, 0, sm, optin), 200_000);
    assert_eq!(plan::smem_alone_on_sm(1024, 8192, sm, optin), sm / 2 + 1 - 8192 - 1024);
    assert_eq!(plan::smem_alone_on_sm(1024, 0, sm, 48 * 1024), 48 * 1024);
    assert!(plan::one_cta_an_sm([16, 4, 2], 132) && !plan::one_cta_an_sm([133, 1, 1], 132));
}

#[test]
fn tiles_grid_grouping_and_sms_rule() {
    let mut m = gemm_manifest();
    let p = Problem::gemm(129, 257, 192);
    assert_eq!(compute_grid(&m, &p, 132).unwrap(), [2, 2, 1]);
    m.grid = GridRule::Tiles { block_m: 128, block_n: 256, group_m: Some(8), splits: None };
    assert_eq!(compute_grid(&m, &p, 132).unwrap(), [4, 1, 1]);
    m.cluster = [1, 1, 1];
    assert_eq!(compute_grid(&m, &Problem::gemm(129, 1, 1), 132).unwrap(), [2, 1, 1]);
    m.grid = GridRule::Sms { ctas_per_sm: 1, wave_tile: None };
    assert_eq!(compute_grid(&m, &p, 132).unwrap(), [132, 1, 1]);
    m.cluster = [2, 1, 1];
    assert_eq!(compute_grid(&m, &p, 133).unwrap(), [132, 1, 1]);
    m.cluster = [1, 2, 1];
    assert_eq!(compute_grid(&m, &p, 133).unwrap(), [66, 2, 1]);
    m.grid = GridRule::Tiles { block_m: 1, block_n: 1, group_m: None, splits: None };
    m.cluster = [1, 1, 1];
    assert!(matches!(compute_grid(&m, &Problem::gemm(1, 70000, 1), 132), Err(RuntimeError::GridTooLarge { .. })));
}

#[test]
fn split_tiles_grid_and_its_workspace() {
    let mut m = gemm_manifest();
    m.cluster = [1, 1, 1];
    m.grid = GridRule::Tiles { block_m: 128, block_n: 256, group_m: None, splits: Some(12) };
    m.params.push(Param::Workspace { bytes_per_tile: 16 + 12 * 128 * 256 * 4 });
    // 3 x 2 tiles, each split over 12 CTAs along z; a region per tile.
    let plan = plan_launch(&m, &Problem::gemm(300, 400, 8192), &bindings(300, 400, 8192), 132).unwrap();
    assert_eq!(plan.grid, [3, 2, 12]);
    assert_eq!(plan.params.last(), Some(&ParamValue::Workspace(6 * (16 + 12 * 128 * 256 * 4))));
    m.grid = GridRule::Tiles { block_m: 128, block_n: 256, group_m: Some(8), splits: Some(12) };
    assert_eq!(compute_grid(&m, &Problem::gemm(300, 400, 8192), 132).unwrap(), [6, 1, 12]);
}

#[test]
fn sms_grid_with_a_wave_tile_keeps_the_waves_on_the_fewest_ctas() {
    let mut m = gemm_manifest();
    m.cluster = [1, 1, 1];
    m.grid = GridRule::Sms { ctas_per_sm: 1, wave_tile: Some([128, 256]) };
    // 512 tiles take 4 turns on 132 CTAs, and on 128.
    assert_eq!(compute_grid(&m, &Problem::gemm(4096, 4096, 64), 132).unwrap(), [128, 1, 1]);
    // 528 tiles fill 4 turns of all 132; 544 need 5 turns, which 109 CTAs
    // take (108 would need 6).
    assert_eq!(compute_grid(&m, &Problem::gemm(4224, 4096, 64), 132).unwrap(), [132, 1, 1]);
    assert_eq!(compute_grid(&m, &Problem::gemm(4225, 4096, 64), 132).unwrap(), [109, 1, 1]);
    // Fewer tiles than SMs: one CTA a tile; partial tiles count.
    assert_eq!(compute_grid(&m, &Problem::gemm(129, 257, 64), 132).unwrap(), [4, 1, 1]);
    // Over the SMs a test asks for (Gemm::on_sms).
    assert_eq!(compute_grid(&m, &Problem::gemm(4096, 4096, 64), 7).unwrap(), [7, 1, 1]);
    // A cluster takes a wave tile a turn: 256 pairs of 128x256 tiles take 4
    // turns on 66 clusters, and on 64.
    m.cluster = [2, 1, 1];
    m.grid = GridRule::Sms { ctas_per_sm: 1, wave_tile: Some([256, 256]) };
    assert_eq!(compute_grid(&m, &Problem::gemm(4096, 4096, 64), 132).unwrap(), [128, 1, 1]);
    // A zero-sized tile is refused before any launch.
    m.grid = GridRule::Sms { ctas_per_sm: 1, wave_tile: Some([128, 0]) };
    assert!(m.validate().unwrap_err().to_string().contains("grid.wave_tile[1]"));
}

#[test]
fn launch_validation_errors() {
    let m = gemm_manifest();
    let p = Problem::gemm(128, 256, 64);
    let ok = bindings(128, 256, 64);
    let plan = |p: &Problem, b: &[TensorBinding]| plan_launch(&m, p, b, 132).unwrap_err();

    assert!(matches!(plan(&Problem::default().with("M", 1).with("N", 1), &ok), RuntimeError::MissingSymbol(s) if s == "K"));
    assert!(matches!(plan(&p.clone().with("L", 3), &ok), RuntimeError::UnusedSymbol { symbol, .. } if symbol == "L"));
    assert!(matches!(plan(&p, &ok[..2]), RuntimeError::MissingTensor(t) if t == "C"));
    let mut b = ok.clone();
    b.push(TensorBinding { name: "D".into(), ..ok[0].clone() });
    assert!(matches!(plan(&p, &b), RuntimeError::UnknownTensor(t) if t == "D"));
    let mut b = ok.clone();
    b.push(ok[0].clone());
    assert!(matches!(plan(&p, &b), RuntimeError::DuplicateBinding(t) if t == "A"));

    let e = plan(&Problem::gemm(128, 0, 64), &ok);
    assert!(matches!(&e, RuntimeError::ZeroSizedDim { tensor, dim: 0, symbol } if tensor == "B" && symbol == "N"), "{e}");

    let mut b = ok.clone();
    b[1].dtype = DType::F16;
    assert!(matches!(plan(&p, &b), RuntimeError::DtypeMismatch { expected: DType::Bf16, got: DType::F16, .. }));

    let mut b = ok.clone();
    b[0].bytes -= 2;
    assert!(matches!(plan(&p, &b), RuntimeError::BufferTooSmall { need: 16384, have: 16382, .. }));

    let mut b = ok.clone();
    b[0].addr += 8; // bf16-aligned but not 16-byte aligned: TMA refuses
    let e = plan(&p, &b);
    assert!(matches!(e, RuntimeError::Misaligned { align: 16, .. }), "{e}");
    let mut b = ok.clone();
    b[2].addr += 1; // pointer param: element alignment
    assert!(matches!(plan(&p, &b), RuntimeError::Misaligned { align: 2, .. }));

    // K = 100 bf16 = 200-byte rows: not a multiple of 16
    let e = plan(&Problem::gemm(128, 256, 100), &bindings(128, 256, 100));
    assert!(matches!(&e, RuntimeError::StrideNotMultipleOf16 { tensor, dim: 0, stride: 200 } if tensor == "A"), "{e}");
    assert!(e.to_string().contains("multiple of 16"));

    // M over i32 for the scalar; dims over 2^32 for TMA
    let big = (1u64 << 31) + 128;
    let e = plan(&Problem::gemm(big, 256, 64), &bindings(big, 256, 64));
    assert!(matches!(e, RuntimeError::ScalarOverflow { index: 3, .. }), "{e}");
    let huge = (1u64 << 32) + 8;
    let e = plan_launch(&m, &Problem::gemm(8, 8, huge), &bindings(8, 8, huge), 132).unwrap_err();
    assert!(matches!(e, RuntimeError::DimTooLarge { dim: 1, .. }), "{e}");
}

#[test]
fn cublas_mapping_is_tn_with_swapped_operands() {
    let c = tn_row_major_to_col_major(3, 5, 7).unwrap();
    assert_eq!(
        c,
        ColMajorCall { transa: true, transb: false, m: 5, n: 3, k: 7, lda: 7, ldb: 7, ldc: 5, swap_operands: true }
    );
    assert!(tn_row_major_to_col_major(1 << 31, 1, 1).is_err());
}

#[test]
fn cublas_mapping_matches_row_major_reference() {
    // Emulate cuBLAS's column-major semantics on the raw row-major buffers.
    let (m, n, k) = (5usize, 3usize, 4usize);
    let mut rng = Rng::new(7);
    let a = random_bf16(m * k, &mut rng);
    let b = random_bf16(n * k, &mut rng);
    let call = tn_row_major_to_col_major(m as u64, n as u64, k as u64).unwrap();
    let (first, second) = if call.swap_operands { (&b, &a) } else { (&a, &b) };
    let out = col_major_gemm_reference(&call, &bf16_to_f64(first), &bf16_to_f64(second));
    let reference = cpu_gemm_tn(&a, &b, m, n, k);
    assert_eq!(out.len(), reference.len());
    for (o, r) in out.iter().zip(&reference) {
        assert!((o - r).abs() < 1e-12, "{o} vs {r}");
    }
    // And a hand-checked element: C[1,2] = sum_k A[1,k] * B[2,k]
    let c12: f64 = (0..k).map(|p| a[k + p].to_f64() * b[2 * k + p].to_f64()).sum();
    assert!((reference[n + 2] - c12).abs() < 1e-12);
}

#[test]
fn error_metric() {
    assert_eq!(rel_frobenius(&[1.0, 2.0], &[1.0, 2.0]), 0.0);
    let e = rel_frobenius(&[3.0, 4.0 + 0.05], &[3.0, 4.0]);
    assert!((e - 0.01).abs() < 1e-12);
    assert!(passes(e, 1e-2 + 1e-12));
    let nan = rel_frobenius(&[f64::NAN, 1.0], &[1.0, 1.0]);
    assert!(nan.is_nan() && !passes(nan, 1e-2));
    assert!(!passes(rel_frobenius(&[f64::INFINITY], &[1.0]), 1e-2));
    assert_eq!(rel_frobenius(&[1.0], &[0.0]), f64::INFINITY);
    // The poison pattern is a NaN and fails.
    let poison = bf16::from_bits(POISON_BF16);
    assert!(poison.is_nan());
    assert!(!passes(rel_frobenius(&bf16_to_f64(&[poison]), &[1.0]), 1e-2));
}

#[test]
fn random_inputs_are_fresh_and_bounded() {
    let a = random_bf16(1000, &mut Rng::new(1));
    let b = random_bf16(1000, &mut Rng::new(2));
    assert_ne!(a, b);
    assert!(a.iter().all(|x| x.to_f32().abs() <= 1.0));
    assert!(a.iter().filter(|x| x.to_f32() == 0.0).count() < 10);
    assert_ne!(seed_from_time(), 0);
}

#[test]
fn cpu_reference_small() {
    let a: Vec<bf16> = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0].iter().map(|&x| bf16::from_f32(x)).collect(); // 2x3
    let b: Vec<bf16> = [1.0f32, 0.0, -1.0, 0.5, 0.5, 0.5].iter().map(|&x| bf16::from_f32(x)).collect(); // 2x3
    assert_eq!(cpu_gemm_tn(&a, &b, 2, 2, 3), vec![-2.0, 3.0, -2.0, 7.5]);
}

/// Opens the GPU where libcuda is found; elsewhere a counted skip.
#[test]
fn gpu_smoke() {
    if !cuda_available() {
        tilec_cli::report_skip("tilec-runtime gpu_smoke", &format!("libcuda not found ({})", ensure_cuda().unwrap_err()));
        return;
    }
    let gpu = Gpu::new(0).expect("CUDA present but device init failed");
    assert!(gpu.num_sms > 0, "a device with no SMs");
    eprintln!("device: {} sm_{}{} with {} SMs", gpu.name, gpu.cc.0, gpu.cc.1, gpu.num_sms);
}

#[test]
fn fixtures_load_and_validate() {
    for f in ["naive_gemm", "naive_gemm_residual", "naive_gemm_swiglu", "naive_gemm_fp8_quantize", "tma_copy"] {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(f);
        let a = Artifact::load(&dir).unwrap_or_else(|e| panic!("{e}"));
        a.manifest.validate().unwrap_or_else(|e| panic!("{f}: {e}"));
        assert_eq!(a.dir, dir);
    }
    // The residual fixture is a GEMM reading R[M,N]: tilec-bench's baseline for it is cuBLASLt with alpha 0.5, beta 2.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/naive_gemm_residual");
    let spec = GemmSpec::from_manifest(&Artifact::load(dir).unwrap().manifest).unwrap();
    assert_eq!(spec.matrices, [MatrixSpec { name: "R".into(), dtype: DType::Bf16 }]);
    let kind = crate::epilogue::classify(spec.epilogue.as_ref(), &spec.vectors, &spec.matrices);
    assert_eq!(kind, crate::epilogue::EpilogueKind::Residual { tensor: "R".into(), alpha: 0.5, beta: 2.0 });
    // The SwiGLU fixture interleaves gate and up in runs of 128 product columns: C[M,H], H = N/2; its grid covers C.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/naive_gemm_swiglu");
    let m = Artifact::load(dir).unwrap().manifest;
    let spec = GemmSpec::from_manifest(&m).unwrap();
    assert_eq!(spec.gated, Some(crate::acc_parts::AccParts { block: 128, parts: 2, cols: "H".into() }));
    let kind = crate::epilogue::classify(spec.epilogue.as_ref(), &spec.vectors, &spec.matrices);
    assert_eq!(kind, crate::epilogue::EpilogueKind::Gated { block: 128, parts: 2 });
    let size = GemmSize::new(100, 512, 64);
    let c = |bytes| TensorBinding { name: "C".into(), dtype: DType::Bf16, addr: 0x3000, bytes };
    let buffers = GemmBuffers::new(
        TensorBinding { name: "A".into(), dtype: DType::Bf16, addr: 0x1000, bytes: 100 * 64 * 2 },
        TensorBinding { name: "B".into(), dtype: DType::Bf16, addr: 0x2000, bytes: 512 * 64 * 2 },
        c(100 * 256 * 2),
    );
    let plan = plan_launch(&m, &spec.problem(size), &spec.bind(size, buffers).unwrap(), 132).unwrap();
    assert_eq!(plan.grid, [13, 8, 1]);
    assert_eq!(plan.params[4], ParamValue::I32(256), "H = N/2");
    // The quantising fixture: a block-scaled FP8 GEMM writing e4m3 codes Q and M-major scales SQ[NB,M]; its grid covers Q.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/naive_gemm_fp8_quantize");
    let m = Artifact::load(dir).unwrap().manifest;
    let spec = GemmSpec::from_manifest(&m).unwrap();
    let sq = GroupStoreSpec { name: "SQ".into(), group: 128, groups: "NB".into(), layout: SaLayout::MMajor };
    assert_eq!(spec.output, OutputSpec { name: "Q".into(), dtype: DType::F8e4m3, group_stores: vec![sq] });
    assert_eq!((spec.scales, spec.sa_layout), (Scales::Block, SaLayout::MMajor));
    let kind = crate::epilogue::classify(spec.epilogue.as_ref(), &spec.vectors, &spec.matrices);
    assert_eq!(kind, crate::epilogue::EpilogueKind::Quantize);
    // Its epilogue has exact f32 values, as its kernel.cu computes them: tilec-gpu-test checks it on exact inputs too.
    assert!(spec.output.quantized() && spec.epilogue.as_ref().unwrap().in_f32().is_ok());
    let size = GemmSize::new(129, 300, 256);
    let t = |name: &str, dtype, bytes| TensorBinding { name: name.into(), dtype, addr: 0x1000, bytes };
    let buffers = GemmBuffers::new(t("A", DType::U8, 129 * 256), t("B", DType::U8, 300 * 256), t("Q", DType::U8, 129 * 300))
        .with_scales(t("SA", DType::F32, 2 * 129 * 4), t("SB", DType::F32, 3 * 2 * 4))
        .with_group_stores([t("SQ", DType::F32, 3 * 129 * 4)]);
    let plan = plan_launch(&m, &spec.problem(size), &spec.bind(size, buffers).unwrap(), 132).unwrap();
    assert_eq!(plan.grid, [33, 3, 1]);
}

fn gemm_manifest_with(a: &str, b: &str, b_shape: &str, extra: &str) -> Manifest {
    Manifest::from_json_str(&format!(
        r#"{{
  "format_version": 1, "kernel_name": "g", "entry": "g", "target": "sm_90a",
  "block": [128, 1, 1], "grid": {{ "rule": "tiles", "block_m": 128, "block_n": 128 }},
  "tensors": [
    {{ "name": "A", "dtype": "{a}", "shape": ["M", "K"], "role": "input" }},
    {{ "name": "B", "dtype": "{b}", "shape": {b_shape}, "role": "input" }},
    {{ "name": "C", "dtype": "bf16", "shape": ["M", "N"], "role": "output" }}{extra}
  ],
  "params": [
    {{ "kind": "ptr", "tensor": "A" }}, {{ "kind": "ptr", "tensor": "B" }}, {{ "kind": "ptr", "tensor": "C" }}
  ]
}}"#
    ))
    .unwrap()
}

const SCALES: &str = r#",
    { "name": "scale_a", "dtype": "f32", "shape": [1], "role": "input" },
    { "name": "scale_b", "dtype": "f32", "shape": [1], "role": "input" }"#;

#[test]
fn gemm_spec_from_manifest() {
    let nk = GemmSpec::from_manifest(&gemm_manifest()).unwrap();
    assert_eq!(nk, GemmSpec { input: DType::Bf16, b_layout: BLayout::Nk, scales: Scales::None, sa_layout: SaLayout::KMajor, epilogue: None, vectors: Vec::new(), matrices: Vec::new(), gated: None, output: OutputSpec::bf16_c() });
    let kn = GemmSpec::from_manifest(&gemm_manifest_with("bf16", "bf16", r#"["K", "N"]"#, "")).unwrap();
    assert_eq!(kn.b_layout, BLayout::Kn);
    let fp8 = GemmSpec::from_manifest(&gemm_manifest_with("f8e4m3", "f8e4m3", r#"["N", "K"]"#, SCALES)).unwrap();
    assert_eq!(fp8, GemmSpec { input: DType::F8e4m3, b_layout: BLayout::Nk, scales: Scales::PerTensor, sa_layout: SaLayout::KMajor, epilogue: None, vectors: Vec::new(), matrices: Vec::new(), gated: None, output: OutputSpec::bf16_c() });
    let err = |m: Manifest| GemmSpec::from_manifest(&m).unwrap_err().to_string();
    assert_eq!(
        err(gemm_manifest_with("bf16", "f8e4m3", r#"["N", "K"]"#, "")),
        "not a GEMM artifact: A is bf16, B is f8e4m3: want both bf16 or both f8e4m3"
    );
    assert_eq!(err(gemm_manifest_with("bf16", "bf16", r#"["N", "M"]"#, "")), "not a GEMM artifact: want B[N,K] or B[K,N]");
    assert!(err(gemm_manifest_with("bf16", "bf16", r#"["N", "K"]"#, SCALES)).contains("only an f8e4m3 GEMM takes scales"));
    let copy = Manifest::from_json_str(
        r#"{ "format_version": 1, "kernel_name": "c", "entry": "c", "target": "sm_90a", "block": [128, 1, 1],
  "grid": { "rule": "tiles", "block_m": 128, "block_n": 128 },
  "tensors": [ { "name": "X", "dtype": "bf16", "shape": ["M", "N"], "role": "input" },
               { "name": "Y", "dtype": "bf16", "shape": ["M", "N"], "role": "output" } ],
  "params": [ { "kind": "ptr", "tensor": "X" }, { "kind": "ptr", "tensor": "Y" } ] }"#,
    )
    .unwrap();
    assert_eq!(err(copy), "not a GEMM artifact: want inputs A and B and an output C");
}

fn buf(dtype: DType, addr: u64, bytes: u64) -> TensorBinding {
    TensorBinding { name: String::new(), dtype, addr, bytes }
}

#[test]
fn gemm_bind_names_sizes_and_checks() {
    let spec = GemmSpec::from_manifest(&gemm_manifest()).unwrap();
    let size = GemmSize::new(64, 256, 512);
    let (a, b, c) = (buf(DType::Bf16, 0x1000, 64 * 512 * 2), buf(DType::Bf16, 0x2000, 256 * 512 * 2), buf(DType::Bf16, 0x3000, 64 * 256 * 2));
    let bufs = |a: &TensorBinding, b: &TensorBinding, c: &TensorBinding, scales| GemmBuffers {
        a: a.clone(),
        b: b.clone(),
        c: c.clone(),
        scales,
        vectors: Vec::new(),
        matrices: Vec::new(),
        group_stores: Vec::new(),
    };
    let bound = spec.bind(size, bufs(&a, &b, &c, None)).unwrap();
    let names: Vec<&str> = bound.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["A", "B", "C"]);
    assert_eq!(bound[1].addr, 0x2000);
    // The bindings are what the launch plan wants.
    let plan = plan_launch(&gemm_manifest(), &size.problem(), &bound, 132).unwrap();
    assert_eq!(plan.grid, [2, 1, 1]);
    let err = |r: Result<Vec<TensorBinding>>| r.unwrap_err().to_string();
    assert_eq!(
        err(spec.bind(size, bufs(&a, &buf(DType::Bf16, 0x2000, 100), &c, None))),
        "GEMM arguments: B is 256x512 bf16 for M=64 N=256 K=512: 262144 bytes, the buffer has 100"
    );
    assert_eq!(
        err(spec.bind(size, bufs(&buf(DType::F32, 0x1000, 1 << 20), &b, &c, None))),
        "GEMM arguments: A holds f32, the kernel takes bf16"
    );
    assert_eq!(
        err(spec.bind(GemmSize::new(0, 256, 512), bufs(&a, &b, &c, None))),
        "GEMM arguments: 0x256x512 has a zero dimension"
    );
    let s = (buf(DType::F32, 0x4000, 4), buf(DType::F32, 0x5000, 4));
    assert_eq!(
        err(spec.bind(size, bufs(&a, &b, &c, Some(s.clone())))),
        "GEMM arguments: scales given, the kernel takes none"
    );
    // B[K,N]: the K x N extent is checked.
    let kn = GemmSpec { b_layout: BLayout::Kn, ..spec.clone() };
    assert!(err(kn.bind(size, bufs(&a, &buf(DType::Bf16, 0x2000, 256 * 511 * 2), &c, None))).contains("B is 512x256"));
    // FP8: raw bytes stand for e4m3, and the scales are required.
    let fp8 = GemmSpec { input: DType::F8e4m3, b_layout: BLayout::Nk, scales: Scales::PerTensor, sa_layout: SaLayout::KMajor, epilogue: None, vectors: Vec::new(), matrices: Vec::new(), gated: None, output: OutputSpec::bf16_c() };
    let (a8, b8) = (buf(DType::U8, 0x1000, 64 * 512), buf(DType::U8, 0x2000, 256 * 512));
    let bound = fp8.bind(size, bufs(&a8, &b8, &c, Some(s.clone()))).unwrap();
    assert_eq!(bound.iter().map(|t| (t.name.as_str(), t.dtype)).collect::<Vec<_>>(), [
        ("A", DType::F8e4m3),
        ("B", DType::F8e4m3),
        ("C", DType::Bf16),
        ("scale_a", DType::F32),
        ("scale_b", DType::F32)
    ]);
    assert_eq!(
        err(fp8.bind(size, bufs(&a8, &b8, &c, None))),
        "GEMM arguments: the kernel takes scale_a and scale_b; none given"
    );
}

const BLOCK_SCALES: &str = r#",
    { "name": "SA", "dtype": "f32", "shape": ["M", "KB"], "role": "input" },
    { "name": "SB", "dtype": "f32", "shape": ["NB", "KB"], "role": "input" }"#;

#[test]
fn block_scaled_spec_from_manifest() {
    let fp8 = |b_shape: &str, extra: &str| gemm_manifest_with("f8e4m3", "f8e4m3", b_shape, extra);
    let spec = GemmSpec::from_manifest(&fp8(r#"["N", "K"]"#, BLOCK_SCALES)).unwrap();
    assert_eq!(spec, GemmSpec { input: DType::F8e4m3, b_layout: BLayout::Nk, scales: Scales::Block, sa_layout: SaLayout::KMajor, epilogue: None, vectors: Vec::new(), matrices: Vec::new(), gated: None, output: OutputSpec::bf16_c() });
    // SA declared [KB, M] is A's scales M-major.
    let m_major = BLOCK_SCALES.replace(r#"["M", "KB"]"#, r#"["KB", "M"]"#);
    assert_eq!(GemmSpec::from_manifest(&fp8(r#"["N", "K"]"#, &m_major)).unwrap().sa_layout, SaLayout::MMajor);
    let err = |m: Manifest| GemmSpec::from_manifest(&m).unwrap_err().to_string();
    assert!(err(fp8(r#"["K", "N"]"#, BLOCK_SCALES)).contains("block-scaled GEMM takes B[N,K]"));
    assert!(err(gemm_manifest_with("bf16", "bf16", r#"["N", "K"]"#, BLOCK_SCALES)).contains("only an f8e4m3 GEMM"));
    // SA over other dims is refused, naming the tensor and both layouts.
    let wrong = BLOCK_SCALES.replace(r#"["M", "KB"]"#, r#"["M", "NB"]"#);
    assert_eq!(
        err(fp8(r#"["N", "K"]"#, &wrong)),
        r#"not a GEMM artifact: block scale SA must be an f32 input of shape [M,KB] or [KB,M] (got f32 [Sym("M"), Sym("NB")], Input)"#
    );
    let bf16_sb = BLOCK_SCALES.replace(r#""name": "SB", "dtype": "f32""#, r#""name": "SB", "dtype": "bf16""#);
    assert!(err(fp8(r#"["N", "K"]"#, &bf16_sb)).contains("block scale SB must be an f32 input"));
    let one_scale = r#",
    { "name": "SA", "dtype": "f32", "shape": ["M", "KB"], "role": "input" }"#;
    assert!(err(fp8(r#"["N", "K"]"#, one_scale)).contains(r#"unexpected extra tensors ["SA"]"#));
}

#[test]
fn block_scaled_bind_and_plan() {
    let manifest = gemm_manifest_with("f8e4m3", "f8e4m3", r#"["N", "K"]"#, BLOCK_SCALES);
    let spec = GemmSpec::from_manifest(&manifest).unwrap();
    // N = 200 straddles two 128-row blocks of B; K = 300 ends in a partial block.
    let size = GemmSize::new(65, 200, 300);
    let (kb, nb) = (3u64, 2u64);
    let (a, b, c) = (buf(DType::U8, 0x1000, 65 * 300), buf(DType::U8, 0x2000, 200 * 300), buf(DType::Bf16, 0x3000, 65 * 200 * 2));
    let (sa, sb) = (buf(DType::F32, 0x4000, 65 * kb * 4), buf(DType::F32, 0x5000, nb * kb * 4));
    let bufs = |sa: &TensorBinding, sb: &TensorBinding| GemmBuffers {
        a: a.clone(),
        b: b.clone(),
        c: c.clone(),
        scales: Some((sa.clone(), sb.clone())),
        vectors: Vec::new(),
        matrices: Vec::new(),
        group_stores: Vec::new(),
    };
    let bound = spec.bind(size, bufs(&sa, &sb)).unwrap();
    let named: Vec<(&str, u64)> = bound.iter().map(|t| (t.name.as_str(), t.addr)).collect();
    assert_eq!(named, [("A", 0x1000), ("B", 0x2000), ("C", 0x3000), ("SA", 0x4000), ("SB", 0x5000)]);
    let problem = spec.problem(size);
    assert_eq!((problem.get("KB").unwrap(), problem.get("NB").unwrap()), (kb, nb));
    // The launch plan accepts the bindings and the KB/NB symbols.
    plan_launch(&manifest, &problem, &bound, 132).unwrap();
    let err = |r: Result<Vec<TensorBinding>>| r.unwrap_err().to_string();
    assert_eq!(
        err(spec.bind(size, bufs(&sa, &buf(DType::F32, 0x5000, 4 * 3)))),
        "GEMM arguments: SB is 2x3 f32 for M=65 N=200 K=300: 24 bytes, the buffer has 12"
    );
    assert_eq!(err(spec.bind(size, bufs(&buf(DType::Bf16, 0x4000, 1 << 20), &sb))), "GEMM arguments: SA holds bf16, the kernel takes f32");
    let none = GemmBuffers { scales: None, ..bufs(&sa, &sb) };
    assert_eq!(err(spec.bind(size, none)), "GEMM arguments: the kernel takes SA and SB; none given");
    // A BF16 problem binds no KB/NB (the plan would call them unused).
    let bf16 = GemmSpec::from_manifest(&gemm_manifest()).unwrap();
    assert!(bf16.problem(size).get("KB").is_err());
    // M-major SA is KB x M: the same bytes, named in that order.
    let m_major = GemmSpec { sa_layout: SaLayout::MMajor, ..spec.clone() };
    assert_eq!(
        err(m_major.bind(size, bufs(&buf(DType::F32, 0x4000, 4 * 64), &sb))),
        "GEMM arguments: SA is 3x65 f32 for M=65 N=200 K=300: 780 bytes, the buffer has 256"
    );
    let m_major_manifest = gemm_manifest_with("f8e4m3", "f8e4m3", r#"["N", "K"]"#, &BLOCK_SCALES.replace(r#"["M", "KB"]"#, r#"["KB", "M"]"#));
    plan_launch(&m_major_manifest, &problem, &m_major.bind(size, bufs(&sa, &sb)).unwrap(), 132).unwrap();
}

#[test]
fn tensor_parallel_gemms_refuse_m_major_and_per_tensor_scales() {
    let spec = |scales, sa_layout| GemmSpec { input: DType::F8e4m3, b_layout: BLayout::Nk, scales, sa_layout, epilogue: None, vectors: Vec::new(), matrices: Vec::new(), gated: None, output: OutputSpec::bf16_c() };
    assert_eq!(tp::unsupported(&spec(Scales::Block, SaLayout::KMajor)), None);
    assert!(tp::unsupported(&spec(Scales::Block, SaLayout::MMajor)).unwrap().contains("SA[M,KB]"));
    assert!(tp::unsupported(&spec(Scales::PerTensor, SaLayout::KMajor)).unwrap().contains("per-tensor"));
}

#[test]
fn block_scale_indexing_one_block() {
    let s = BlockScales::new(1, 1, 1);
    assert_eq!((s.kb(), s.nb(), s.sa_len(), s.sb_len()), (1, 1, 1, 1));
    let one = f32_to_e4m3(1.5);
    assert_eq!(s.dequant_a(&[one], &[0.25]), [0.375]);
    assert_eq!(s.dequant_b(&[one], &[8.0]), [12.0]);
    assert_eq!(s.cpu_reference(&[one], &[0.25], &[one], &[8.0]), [4.5]);
}

#[test]
fn block_scale_indexing_straddles_n_and_k() {
    let s = BlockScales::new(3, 200, 300);
    assert_eq!((s.kb(), s.nb(), s.sa_len(), s.sb_len()), (3, 2, 9, 6));
    assert_eq!(s.sb_index(127, 0), 0);
    assert_eq!(s.sb_index(128, 0), 3, "row 128 of B starts the second N block");
    assert_eq!(s.sb_index(199, 299), 5);
    assert_eq!(s.sb_index(0, 128), 1);
    assert_eq!(s.sa_index(2, 255), 7);
    // Every scale distinct: the dequantised ones read back which scale each element got.
    let one = f32_to_e4m3(1.0);
    let sb: Vec<f32> = (0..6).map(|i| f32::powi(2.0, i)).collect();
    let b = s.dequant_b(&vec![one; 200 * 300], &sb);
    for (j, p, want) in [(0, 0, 1.0), (127, 127, 1.0), (127, 128, 2.0), (128, 0, 8.0), (199, 256, 32.0), (150, 200, 16.0)] {
        assert_eq!(b[j * 300 + p], want, "B[{j},{p}]");
    }
    let sa: Vec<f32> = (0..9).map(|i| i as f32 + 1.0).collect();
    let a = s.dequant_a(&vec![one; 3 * 300], &sa);
    assert_eq!((a[0], a[299], a[300 + 128], a[2 * 300 + 299]), (1.0, 3.0, 5.0, 9.0));
    assert_eq!(s.sa_m_major(&sa), [1.0, 4.0, 7.0, 2.0, 5.0, 8.0, 3.0, 6.0, 9.0]);
    // cuBLASLt's 128x128 scales: each row of KB = 3 padded to 4 (16 bytes).
    assert_eq!(s.kb_lt(), 4);
    assert_eq!(s.sb_lt(&sb), [1.0, 2.0, 4.0, 0.0, 8.0, 16.0, 32.0, 0.0]);
    assert_eq!(BlockScales::new(1, 1, 512).sb_lt(&[1.0, 2.0, 3.0, 4.0]), [1.0, 2.0, 3.0, 4.0], "rows of four need no padding");
    assert_eq!(SaLayout::KMajor.arrange(&sa, 3, 3), sa);
    assert_eq!(SaLayout::MMajor.arrange(&sa[..6], 2, 3), [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    assert_eq!((SaLayout::KMajor.choose("rows", "blocks"), SaLayout::MMajor.choose("rows", "blocks")), ("rows", "blocks"));
}

#[test]
fn block_scaled_reference_matches_blockwise_sum_and_catches_mixups() {
    let (m, n, k) = (5, 130, 260);
    let s = BlockScales::new(m, n, k);
    let mut rng = Rng::new(7);
    let a = random_e4m3(m * k, &mut rng);
    let b = random_e4m3(n * k, &mut rng);
    let sa = random_pow2_scales(s.sa_len(), &mut rng);
    let sb = random_pow2_scales(s.sb_len(), &mut rng);
    let got = s.cpu_reference(&a, &sa, &b, &sb);
    // The same product summed block by block, scales applied to the partial sums.
    let (kb, nb) = (s.kb(), s.nb());
    assert_eq!(nb, 2);
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0.0f64;
            for blk in 0..kb {
                let partial: f64 = (blk * 128..((blk + 1) * 128).min(k))
                    .map(|p| e4m3_to_f32(a[i * k + p]) as f64 * e4m3_to_f32(b[j * k + p]) as f64)
                    .sum();
                acc += sa[i * kb + blk] as f64 * sb[(j / 128) * kb + blk] as f64 * partial;
            }
            assert!((got[i * n + j] - acc).abs() <= 1e-9 * acc.abs().max(1.0), "C[{i},{j}] {} vs {acc}", got[i * n + j]);
        }
    }
    // Reading SA column-major (the M-major layout) instead is caught.
    let wrong = s.cpu_reference(&a, &s.sa_m_major(&sa), &b, &sb);
    assert!(rel_frobenius(&wrong, &got) > 0.1);
    // So is using B's first N block's scales for the two columns past 128.
    let mut sb_flat = sb.clone();
    sb_flat.copy_within(0..kb, kb);
    let flat = s.cpu_reference(&a, &sa, &b, &sb_flat);
    let past_128 = |c: &[f64]| (0..m).flat_map(|i| c[i * n + 128..(i + 1) * n].to_vec()).collect::<Vec<_>>();
    assert_ne!(sb_flat, sb);
    assert!(rel_frobenius(&past_128(&flat), &past_128(&got)) > 0.1);
}

#[test]
fn pow2_scales_are_log_uniform_and_bf16_exact() {
    let mut rng = Rng::new(11);
    let v = random_pow2_scales(20_000, &mut rng);
    let exps: Vec<i32> = v.iter().map(|x| x.log2() as i32).collect();
    assert!(v.iter().zip(&exps).all(|(x, &e)| *x == f32::powi(2.0, e)));
    let (lo, hi) = SCALE_EXP_RANGE;
    assert_eq!((*exps.iter().min().unwrap(), *exps.iter().max().unwrap()), (lo, hi));
    let count = |e: i32| exps.iter().filter(|&&x| x == e).count();
    assert!((700..1200).contains(&count(0)), "about 1/21 of the draws each");
    // Every e4m3 value times any scale of the range is exact in bf16.
    let all: Vec<f32> = (0u8..=255).filter(|&x| x & 0x7F != 0x7F).map(e4m3_to_f32).collect();
    for e in lo..=hi {
        let scaled: Vec<f32> = all.iter().map(|x| x * f32::powi(2.0, e)).collect();
        assert!(exact_bf16(&scaled).is_some(), "2^{e}");
    }
    assert!(exact_bf16(&[1.0 + 1.0 / 1024.0]).is_none());
}

#[test]
fn cublaslt_scales_go_crosswise() {
    use crate::lt::LtInput;
    use cudarc::cublaslt::sys::cublasLtMatmulMatrixScale_t as Mode;
    // cuBLASLt's A is our B: its first scale is ours B's.
    assert_eq!(LtInput::Bf16.lt_scales(), None);
    let per_tensor = LtInput::Fp8E4m3 { scale_a: 0xA, scale_b: 0xB }.lt_scales().unwrap();
    assert_eq!(per_tensor.map(|s| s.0), [0xB, 0xA]);
    assert!(per_tensor.iter().all(|s| s.1 == Mode::CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F));
    let block = LtInput::Fp8BlockScaled { sa_m_major: 0xA, sb: 0xB }.lt_scales().unwrap();
    assert_eq!(block, [
        (0xB, Mode::CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F),
        (0xA, Mode::CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F)
    ]);
}

/// The devices as the driver reports them (docs/benchmarks' reports).
const H100: (&str, u64) = ("NVIDIA H100 80GB HBM3", 85_017_493_504);
const H200: (&str, u64) = ("NVIDIA H200", 150_109_880_320);

fn compiled_for(gpu: Option<&str>) -> Manifest {
    Manifest { gpu: gpu.map(String::from), ..gemm_manifest() }
}

#[test]
fn a_kernel_loads_on_the_gpu_it_was_compiled_for() {
    assert!(check_target(&compiled_for(Some("h100")), H100.0, H100.1).is_ok());
    assert!(check_target(&compiled_for(Some("h200")), H200.0, H200.1).is_ok());
}

#[test]
fn a_kernel_compiled_for_another_known_gpu_is_refused() {
    let err = check_target(&compiled_for(Some("h100")), H200.0, H200.1).unwrap_err();
    assert!(matches!(&err, RuntimeError::TargetMismatch { device_target: "h200", .. }), "{err:?}");
    assert_eq!(err.to_string(), "kernel `g`: artifact compiled for h100, device is NVIDIA H200 (h200): recompile with --target h200");
    let err = check_target(&compiled_for(Some("h200")), H100.0, H100.1).unwrap_err();
    assert!(err.to_string().ends_with("device is NVIDIA H100 80GB HBM3 (h100): recompile with --target h100"), "{err}");
}

#[test]
fn a_kernel_without_a_gpu_or_on_an_unknown_device_is_not_checked() {
    assert!(check_target(&compiled_for(None), H200.0, H200.1).is_ok(), "an older manifest loads anywhere");
    assert!(check_target(&compiled_for(Some("h100")), "NVIDIA H100 NVL", 99_857_989_632).is_ok(), "no target to recompile for");
    assert!(check_target(&compiled_for(Some("h200")), "NVIDIA GH200 480GB", 102_005_473_280).is_ok());
}

#[test]
fn a_gemm_handle_and_its_gpu_cross_host_threads() {
    // Shared between host threads (an Arc<Gemm> launching from each) and
    // moved into them: every part of the handle is Send and Sync.
    fn shared_across_threads<T: Send + Sync>() {}
    shared_across_threads::<crate::Gemm>();
    shared_across_threads::<crate::Gpu>();
}

#[test]
fn k_is_padded_where_tma_cannot_address_the_rows() {
    let nk = GemmSpec::from_manifest(&gemm_manifest()).unwrap();
    let kn = GemmSpec::from_manifest(&gemm_manifest_with("bf16", "bf16", r#"["K", "N"]"#, "")).unwrap();
    let fp8 = GemmSpec::from_manifest(&gemm_manifest_with("f8e4m3", "f8e4m3", r#"["N", "K"]"#, SCALES)).unwrap();
    // BF16 rows are 2 bytes an element: K to a multiple of 8; aligned K stays.
    assert_eq!(nk.padded_k(GemmSize::new(128, 128, 60)), Some(64));
    assert_eq!(nk.padded_k(GemmSize::new(128, 128, 1)), Some(8));
    assert_eq!(nk.padded_k(GemmSize::new(128, 128, 64)), None);
    // FP8 rows are 1 byte an element: K to a multiple of 16.
    assert_eq!(fp8.padded_k(GemmSize::new(256, 256, 200)), Some(208));
    assert_eq!(fp8.padded_k(GemmSize::new(256, 256, 208)), None);
    // B stored K x N: its rows are N; padding K does nothing for an unaligned N.
    assert_eq!(kn.padded_k(GemmSize::new(128, 128, 60)), Some(64));
    assert_eq!(kn.padded_k(GemmSize::new(128, 100, 60)), None);
}
