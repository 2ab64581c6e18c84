//! The GEMM handle with epilogue vectors, and `crate::epilogue`'s pure parts.

use crate::check::Rng;
use crate::epilogue::*;
use crate::*;
use tilec_artifact::*;

/// `examples/gemm_bias_gelu.tile`'s epilogue, as `tilec compile` writes it.
const BIAS_GELU: &str = r#"[{"op": "acc"}, {"op": "vector", "tensor": "Bias", "along": "cols"}, {"op": "binary", "f": "add", "lhs": 0, "rhs": 1}, {"op": "splat", "value": 0.5}, {"op": "binary", "f": "mul", "lhs": 2, "rhs": 3}, {"op": "binary", "f": "mul", "lhs": 2, "rhs": 2}, {"op": "binary", "f": "mul", "lhs": 5, "rhs": 2}, {"op": "splat", "value": 0.044715}, {"op": "binary", "f": "mul", "lhs": 6, "rhs": 7}, {"op": "binary", "f": "add", "lhs": 2, "rhs": 8}, {"op": "splat", "value": 0.7978845608028654}, {"op": "binary", "f": "mul", "lhs": 9, "rhs": 10}, {"op": "unary", "f": "tanh", "x": 11}, {"op": "splat", "value": 1.0}, {"op": "binary", "f": "add", "lhs": 12, "rhs": 13}, {"op": "binary", "f": "mul", "lhs": 4, "rhs": 14}, {"op": "convert", "to": "bf16", "x": 15}]"#;

/// A GEMM manifest with `extra` tensors (each a ptr parameter) and an epilogue, if given.
fn manifest(input: &str, extra: &[(&str, &str, &str)], epilogue: Option<&str>) -> Manifest {
    let tensors: String = extra
        .iter()
        .map(|(name, dtype, shape)| format!(r#", {{ "name": "{name}", "dtype": "{dtype}", "shape": {shape}, "role": "input" }}"#))
        .collect();
    let params: String = extra.iter().map(|(name, _, _)| format!(r#", {{ "kind": "ptr", "tensor": "{name}" }}"#)).collect();
    let epilogue = epilogue.map(|e| format!(r#""epilogue": {{ "values": {e} }},"#)).unwrap_or_default();
    let m = Manifest::from_json_str(&format!(
        r#"{{ "format_version": 1, "kernel_name": "g", "entry": "g", "target": "sm_90a", {epilogue}
  "block": [128, 1, 1], "grid": {{ "rule": "tiles", "block_m": 128, "block_n": 128 }},
  "tensors": [
    {{ "name": "A", "dtype": "{input}", "shape": ["M", "K"], "role": "input" }},
    {{ "name": "B", "dtype": "{input}", "shape": ["N", "K"], "role": "input" }},
    {{ "name": "C", "dtype": "bf16", "shape": ["M", "N"], "role": "output" }}{tensors} ],
  "params": [ {{ "kind": "ptr", "tensor": "A" }}, {{ "kind": "ptr", "tensor": "B" }}, {{ "kind": "ptr", "tensor": "C" }}{params} ] }}"#
    ))
    .unwrap();
    m.validate().unwrap();
    m
}

fn bias_gelu_manifest() -> Manifest {
    manifest("bf16", &[("Bias", "bf16", r#"["N"]"#)], Some(BIAS_GELU))
}

fn epilogue(json: &str) -> Epilogue {
    serde_json::from_str(&format!(r#"{{ "values": {json} }}"#)).unwrap()
}

fn bias(dtype: DType, along: Along) -> VectorSpec {
    VectorSpec { name: "Bias".into(), dtype, along }
}

#[test]
fn a_gemm_with_a_bias_vector_is_a_gemm() {
    let spec = GemmSpec::from_manifest(&bias_gelu_manifest()).unwrap();
    assert_eq!(spec.vectors, [bias(DType::Bf16, Along::Cols)]);
    assert!(spec.has_epilogue());
    assert_eq!(spec.scales, Scales::None);
    // Plain: no field, or [acc, convert].
    let plain = GemmSpec::from_manifest(&manifest("bf16", &[], None)).unwrap();
    assert!(!plain.has_epilogue() && plain.vectors.is_empty() && plain.epilogue.is_none());
    let convert = GemmSpec::from_manifest(&manifest("bf16", &[], Some(r#"[{"op": "acc"}, {"op": "convert", "to": "bf16", "x": 0}]"#))).unwrap();
    assert!(!convert.has_epilogue());
    // Block scales and a row vector together.
    let scaled = manifest(
        "f8e4m3",
        &[("SA", "f32", r#"["M", "KB"]"#), ("SB", "f32", r#"["NB", "KB"]"#), ("Scale", "f32", r#"["M"]"#)],
        Some(r#"[{"op": "acc"}, {"op": "vector", "tensor": "Scale", "along": "rows"}, {"op": "binary", "f": "mul", "lhs": 0, "rhs": 1}, {"op": "convert", "to": "bf16", "x": 2}]"#),
    );
    let spec = GemmSpec::from_manifest(&scaled).unwrap();
    assert_eq!((spec.scales, spec.vectors.len(), spec.vectors[0].along), (Scales::Block, 1, Along::Rows));
}

#[test]
fn extra_tensors_without_an_epilogue_are_refused() {
    let err = |m: Manifest| GemmSpec::from_manifest(&m).unwrap_err().to_string();
    let old = manifest("bf16", &[("Bias", "bf16", r#"["N"]"#)], None);
    let e = err(old);
    assert!(e.starts_with(r#"not a GEMM artifact: unexpected extra tensors ["Bias"] and the manifest has no `epilogue`"#), "{e}");
    assert!(e.contains("recompile it"), "{e}");
    // An epilogue that reads some vector but not this tensor.
    let unread = manifest("bf16", &[("Bias", "bf16", r#"["N"]"#), ("Other", "bf16", r#"["N"]"#)], Some(BIAS_GELU));
    assert!(err(unread).contains(r#"unexpected extra tensors ["Other"], which the epilogue does not read"#));
    // A vector type the runtime does not fill.
    let int_bias = manifest("bf16", &[("Bias", "i32", r#"["N"]"#)], Some(BIAS_GELU));
    assert_eq!(err(int_bias), "not a GEMM artifact: epilogue vector Bias is i32: want bf16, f16 or f32");
    // Existing kernels keep working: per-tensor and block scales, B[K,N].
    let per_tensor = manifest("f8e4m3", &[("scale_a", "f32", "[1]"), ("scale_b", "f32", "[1]")], None);
    assert_eq!(GemmSpec::from_manifest(&per_tensor).unwrap().scales, Scales::PerTensor);
}

fn buf(name: &str, dtype: DType, addr: u64, bytes: u64) -> TensorBinding {
    TensorBinding { name: name.into(), dtype, addr, bytes }
}

#[test]
fn vectors_bind_by_name_with_checks() {
    let m = bias_gelu_manifest();
    let spec = GemmSpec::from_manifest(&m).unwrap();
    let size = GemmSize::new(64, 200, 512);
    let ops = || {
        GemmBuffers::new(
            buf("", DType::Bf16, 0x1000, 64 * 512 * 2),
            buf("", DType::Bf16, 0x2000, 200 * 512 * 2),
            buf("", DType::Bf16, 0x3000, 64 * 200 * 2),
        )
    };
    let bias_ok = buf("Bias", DType::Bf16, 0x4000, 400);
    let bound = spec.bind(size, ops().with_vectors([bias_ok.clone()])).unwrap();
    let names: Vec<(&str, u64)> = bound.iter().map(|t| (t.name.as_str(), t.addr)).collect();
    assert_eq!(names, [("A", 0x1000), ("B", 0x2000), ("C", 0x3000), ("Bias", 0x4000)]);
    // The launch plan takes the bindings: Bias is N long.
    plan_launch(&m, &spec.problem(size), &bound, 132).unwrap();
    let err = |b: GemmBuffers| spec.bind(size, b).unwrap_err().to_string();
    assert_eq!(err(ops()), "GEMM arguments: the kernel's epilogue reads Bias (bf16[N]); Bias not given");
    assert_eq!(
        err(ops().with_vectors([buf("Bias", DType::Bf16, 0x4000, 398)])),
        "GEMM arguments: Bias is 200 bf16 (N) for M=64 N=200 K=512: 400 bytes, the buffer has 398"
    );
    assert_eq!(err(ops().with_vectors([buf("Bias", DType::F32, 0x4000, 800)])), "GEMM arguments: Bias holds f32, the kernel takes bf16");
    assert_eq!(
        err(ops().with_vectors([bias_ok.clone(), buf("Gate", DType::Bf16, 0x5000, 400)])),
        "GEMM arguments: vector `Gate` given, the kernel's epilogue reads Bias (bf16[N])"
    );
    assert_eq!(err(ops().with_vectors([bias_ok.clone(), bias_ok.clone()])), "GEMM arguments: vector Bias given twice");
    // A plain kernel takes no vectors.
    let plain = GemmSpec::from_manifest(&manifest("bf16", &[], None)).unwrap();
    assert_eq!(
        plain.bind(size, ops().with_vectors([bias_ok])).unwrap_err().to_string(),
        "GEMM arguments: vector `Bias` given, the kernel's epilogue reads none"
    );
    // A row vector is M long.
    let rows = GemmSpec { vectors: vec![bias(DType::F32, Along::Rows)], ..spec.clone() };
    assert!(rows.bind(size, ops().with_vectors([buf("Bias", DType::F32, 0x4000, 64 * 4)])).is_ok());
    assert!(rows.bind(size, ops().with_vectors([buf("Bias", DType::F32, 0x4000, 63 * 4)])).unwrap_err().to_string().contains("Bias is 64 f32 (M)"));
}

#[test]
fn tensor_parallel_refuses_epilogue_vectors() {
    let spec = GemmSpec::from_manifest(&bias_gelu_manifest()).unwrap();
    assert!(tp::unsupported(&spec).unwrap().contains(r#"epilogue reads vectors ["Bias"]"#));
}

#[test]
fn host_vectors_are_rounded_and_encoded() {
    let v = HostVector::from_values(&bias(DType::Bf16, Along::Cols), &[1.0, 1.0 + 1.0 / 256.0, -0.1]);
    assert_eq!(v.values[..2], [1.0, 1.0]);
    assert_eq!(v.values[2], half::bf16::from_f64(-0.1).to_f64());
    assert_eq!(&v.bytes[..4], &[0x80, 0x3F, 0x80, 0x3F]);
    let f = HostVector::from_values(&bias(DType::F32, Along::Rows), &[0.1]);
    assert_eq!((f.values[0], f.bytes.clone()), (0.1f32 as f64, 0.1f32.to_le_bytes().to_vec()));
    let h = HostVector::from_values(&bias(DType::F16, Along::Rows), &[0.1]);
    assert_eq!(h.bytes, half::f16::from_f64(0.1).to_le_bytes());
    let r = HostVector::random(&bias(DType::Bf16, Along::Cols), 1000, &mut Rng::new(3));
    assert!(r.values.iter().all(|x| x.abs() <= 1.0) && r.bytes.len() == 2000);
    assert_eq!(r.binding(0x10), buf("Bias", DType::Bf16, 0x10, 2000));
    let sizes: Vec<usize> = random_vectors(&[bias(DType::Bf16, Along::Cols), VectorSpec { name: "S".into(), ..bias(DType::F32, Along::Rows) }], GemmSize::new(3, 5, 7), &mut Rng::new(1))
        .iter()
        .map(|v| v.values.len())
        .collect();
    assert_eq!(sizes, [5, 3]);
}

#[test]
fn the_reference_applies_the_epilogue_per_element() {
    let e = epilogue(BIAS_GELU);
    let vectors = [HostVector::from_values(&bias(DType::Bf16, Along::Cols), &[0.5, -1.0, 2.0])];
    let r = EpilogueReference::new(&e, &vectors, &[]).unwrap();
    let acc = [0.25, 0.5, 0.75, -3.0, 0.0, 1.0];
    let got = r.rows(&acc, &[4, 9], 3);
    for (x, (&a, g)) in acc.iter().zip(&got).enumerate() {
        let want = round_to(DType::Bf16, gelu_tanh(a + vectors[0].values[x % 3]));
        assert_eq!(*g, want, "element {x}");
    }
    // Row vectors take the row's index.
    let scale = epilogue(r#"[{"op": "acc"}, {"op": "vector", "tensor": "S", "along": "rows"}, {"op": "binary", "f": "mul", "lhs": 0, "rhs": 1}]"#);
    let s = [HostVector::from_values(&VectorSpec { name: "S".into(), dtype: DType::F32, along: Along::Rows }, &[1.0, 2.0, 3.0])];
    assert_eq!(EpilogueReference::new(&scale, &s, &[]).unwrap().rows(&[1.0, 1.0, 1.0, 1.0], &[0, 2], 2), [1.0, 1.0, 3.0, 3.0]);
    assert!(EpilogueReference::new(&scale, &vectors, &[]).is_err(), "no values for S");
}

#[test]
fn classify_decides_by_value_not_by_ops() {
    let cols = [bias(DType::Bf16, Along::Cols)];
    let gelu = EpilogueKind::BiasGelu { tensor: "Bias".into() };
    assert_eq!(classify(Some(&epilogue(BIAS_GELU)), &cols, &[]), gelu);
    assert_eq!(classify(None, &[], &[]), EpilogueKind::Plain);
    assert_eq!(classify(Some(&Epilogue::plain(DType::Bf16)), &[], &[]), EpilogueKind::Plain);
    // acc * 1 is plain too; acc * 2 is not.
    let times = |v: f64| epilogue(&format!(r#"[{{"op": "acc"}}, {{"op": "splat", "value": {v:?}}}, {{"op": "binary", "f": "mul", "lhs": 0, "rhs": 1}}, {{"op": "convert", "to": "bf16", "x": 2}}]"#));
    assert_eq!(classify(Some(&times(1.0)), &[], &[]), EpilogueKind::Plain);
    assert_eq!(classify(Some(&times(2.0)), &[], &[]), EpilogueKind::Other);
    // Bias added the other way round, and bias alone.
    let bias_add = |lhs, rhs| epilogue(&format!(r#"[{{"op": "acc"}}, {{"op": "vector", "tensor": "Bias", "along": "cols"}}, {{"op": "binary", "f": "add", "lhs": {lhs}, "rhs": {rhs}}}, {{"op": "convert", "to": "bf16", "x": 2}}]"#));
    assert_eq!(classify(Some(&bias_add(1, 0)), &cols, &[]), EpilogueKind::Bias { tensor: "Bias".into() });
    // GELU written differently: x * sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3)) = x / (1 + exp(-2u)).
    let sigmoid_form = epilogue(
        r#"[{"op": "vector", "tensor": "Bias", "along": "cols"}, {"op": "acc"}, {"op": "binary", "f": "add", "lhs": 1, "rhs": 0},
            {"op": "binary", "f": "mul", "lhs": 2, "rhs": 2}, {"op": "splat", "value": 0.044715}, {"op": "binary", "f": "mul", "lhs": 3, "rhs": 4},
            {"op": "splat", "value": 1.0}, {"op": "binary", "f": "add", "lhs": 5, "rhs": 6}, {"op": "binary", "f": "mul", "lhs": 2, "rhs": 7},
            {"op": "splat", "value": -1.5957691216057308}, {"op": "binary", "f": "mul", "lhs": 8, "rhs": 9}, {"op": "unary", "f": "exp", "x": 10},
            {"op": "binary", "f": "add", "lhs": 11, "rhs": 6}, {"op": "binary", "f": "div", "lhs": 2, "rhs": 12}, {"op": "convert", "to": "bf16", "x": 13}]"#,
    );
    assert_eq!(classify(Some(&sigmoid_form), &cols, &[]), gelu);
    // erf-GELU is another function: x/2 (1 + erf(x / sqrt 2)).
    let erf_gelu = epilogue(
        r#"[{"op": "acc"}, {"op": "vector", "tensor": "Bias", "along": "cols"}, {"op": "binary", "f": "add", "lhs": 0, "rhs": 1},
            {"op": "splat", "value": 0.7071067811865476}, {"op": "binary", "f": "mul", "lhs": 2, "rhs": 3}, {"op": "unary", "f": "erf", "x": 4},
            {"op": "splat", "value": 1.0}, {"op": "binary", "f": "add", "lhs": 5, "rhs": 6}, {"op": "binary", "f": "mul", "lhs": 2, "rhs": 7},
            {"op": "splat", "value": 0.5}, {"op": "binary", "f": "mul", "lhs": 8, "rhs": 9}, {"op": "convert", "to": "bf16", "x": 10}]"#,
    );
    assert_eq!(classify(Some(&erf_gelu), &cols, &[]), EpilogueKind::Other);
    // Rounding the accumulator to bf16 before the bias is not what cuBLASLt does.
    let early = epilogue(r#"[{"op": "acc"}, {"op": "convert", "to": "bf16", "x": 0}, {"op": "vector", "tensor": "Bias", "along": "cols"}, {"op": "binary", "f": "add", "lhs": 1, "rhs": 2}, {"op": "convert", "to": "bf16", "x": 3}]"#);
    assert_eq!(classify(Some(&early), &cols, &[]), EpilogueKind::Other);
    // A row vector, an f32 bias, or no final rounding to bf16: no vendor bias.
    assert_eq!(classify(Some(&bias_add(0, 1)), &[bias(DType::F32, Along::Cols)], &[]), EpilogueKind::Other);
    let rows = epilogue(&BIAS_GELU.replace(r#""along": "cols""#, r#""along": "rows""#));
    assert_eq!(classify(Some(&rows), &[bias(DType::Bf16, Along::Rows)], &[]), EpilogueKind::Other);
    let unrounded = epilogue(r#"[{"op": "acc"}, {"op": "vector", "tensor": "Bias", "along": "cols"}, {"op": "binary", "f": "add", "lhs": 0, "rhs": 1}]"#);
    assert_eq!(classify(Some(&unrounded), &cols, &[]), EpilogueKind::Other);
    assert_eq!([EpilogueKind::Plain.name(), gelu.name(), EpilogueKind::Other.name()], ["plain", "bias_gelu", "other"]);
}

#[test]
fn generated_cuda_applies_the_program_in_f32() {
    let e = epilogue(BIAS_GELU);
    let src = cuda_source(&e, &[bias(DType::Bf16, Along::Cols)], &[]).unwrap();
    assert!(src.contains(r#"extern "C" __global__ void tilec_epilogue(unsigned short* __restrict__ c, const unsigned short* __restrict__ v0, long long m, long long n)"#), "{src}");
    for line in [
        "const float x0 = tilec_bf16_to_f32(in.v[e]);",
        "const float x1 = tilec_bf16_to_f32(v0[j]);",
        "const float x2 = x0 + x1;",
        "const float x7 = __int_as_float(0x3d372713) /* 0.044715 */;",
        "const float x12 = tanhf(x11);",
        "const float x16 = tilec_round_bf16(x15);",
        "out.v[e] = tilec_f32_to_bf16(x16);",
    ] {
        assert!(src.contains(line), "missing `{line}` in\n{src}");
    }
    // Row vectors read element i; f32 vectors are float pointers; every function has its spelling.
    let all = epilogue(
        r#"[{"op": "acc"}, {"op": "vector", "tensor": "S", "along": "rows"}, {"op": "binary", "f": "max", "lhs": 0, "rhs": 1},
            {"op": "unary", "f": "erf", "x": 2}, {"op": "unary", "f": "rsqrt", "x": 3}, {"op": "unary", "f": "abs", "x": 4},
            {"op": "unary", "f": "neg", "x": 5}, {"op": "unary", "f": "exp", "x": 6}, {"op": "binary", "f": "min", "lhs": 7, "rhs": 0},
            {"op": "binary", "f": "div", "lhs": 8, "rhs": 1}, {"op": "binary", "f": "sub", "lhs": 9, "rhs": 1}, {"op": "convert", "to": "f16", "x": 10},
            {"op": "convert", "to": "f8e4m3", "x": 11}]"#,
    );
    let src = cuda_source(&all, &[VectorSpec { name: "S".into(), dtype: DType::F32, along: Along::Rows }], &[]).unwrap();
    for line in [
        "const float* __restrict__ v0",
        "x1 = v0[i];",
        "x2 = tilec_max(x0, x1);",
        "x3 = erff(x2);",
        "x4 = rsqrtf(x3);",
        "x5 = fabsf(x4);",
        "x6 = -x5;",
        "x7 = expf(x6);",
        "x8 = tilec_min(x7, x0);",
        "x9 = x8 / x1;",
        "x10 = x9 - x1;",
        "x11 = tilec_round_f16(x10);",
        "x12 = tilec_round_e4m3(x11);",
    ] {
        assert!(src.contains(line), "missing `{line}` in\n{src}");
    }
    assert!(cuda_source(&e, &[], &[]).unwrap_err().contains("vector Bias"));
    assert!(cuda_source(&Epilogue { values: vec![] }, &[], &[]).is_err());
}

#[test]
fn reference_rows_take_the_product_through_the_epilogue() {
    // A = [[1, 2], [3, 4], [5, 6]], B = [[1, 0], [0, 1]]: C = A; + bias [0.5, -0.5].
    let e = epilogue(r#"[{"op": "acc"}, {"op": "vector", "tensor": "Bias", "along": "cols"}, {"op": "binary", "f": "add", "lhs": 0, "rhs": 1}]"#);
    let v = [HostVector::from_values(&bias(DType::Bf16, Along::Cols), &[0.5, -0.5])];
    let got = reference_rows(&e, &v, &[], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[1.0, 0.0, 0.0, 1.0], 2, 2, &[0, 2]).unwrap();
    assert_eq!(got, [1.5, 1.5, 5.5, 5.5]);
    let c: Vec<half::bf16> = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0].iter().map(|&x| half::bf16::from_f32(x)).collect();
    assert_eq!(take_rows(&c, &[0, 2], 2), [1.0, 2.0, 5.0, 6.0]);
}

// ------------------------------------------------------------ matrices (residuals)

/// `0.5 * acc + 2.0 * R[i][j]` rounded to bf16, as the compiler writes a residual epilogue.
const RESIDUAL: &str = r#"[{"op": "acc"}, {"op": "splat", "value": 0.5}, {"op": "binary", "f": "mul", "lhs": 0, "rhs": 1},
    {"op": "matrix", "tensor": "R"}, {"op": "splat", "value": 2.0}, {"op": "binary", "f": "mul", "lhs": 3, "rhs": 4},
    {"op": "binary", "f": "add", "lhs": 2, "rhs": 5}, {"op": "convert", "to": "bf16", "x": 6}]"#;

fn residual_manifest(dtype: &str) -> Manifest {
    manifest("bf16", &[("R", dtype, r#"["M", "N"]"#)], Some(RESIDUAL))
}

fn residual(dtype: DType) -> MatrixSpec {
    MatrixSpec { name: "R".into(), dtype }
}

#[test]
fn a_gemm_with_a_residual_matrix_is_a_gemm() {
    let spec = GemmSpec::from_manifest(&residual_manifest("bf16")).unwrap();
    assert_eq!(spec.matrices, [residual(DType::Bf16)]);
    assert!(spec.vectors.is_empty() && spec.has_epilogue());
    assert_eq!(spec.scales, Scales::None);
    assert_eq!(GemmSpec::from_manifest(&residual_manifest("f32")).unwrap().matrices, [residual(DType::F32)]);
    // A bias and a residual together; a block-scaled FP8 GEMM with a residual.
    let both = r#"[{"op": "acc"}, {"op": "vector", "tensor": "Bias", "along": "cols"}, {"op": "binary", "f": "add", "lhs": 0, "rhs": 1},
        {"op": "matrix", "tensor": "R"}, {"op": "binary", "f": "add", "lhs": 2, "rhs": 3}, {"op": "convert", "to": "bf16", "x": 4}]"#;
    let spec = GemmSpec::from_manifest(&manifest("bf16", &[("Bias", "bf16", r#"["N"]"#), ("R", "bf16", r#"["M", "N"]"#)], Some(both))).unwrap();
    assert_eq!((spec.vectors, spec.matrices), (vec![bias(DType::Bf16, Along::Cols)], vec![residual(DType::Bf16)]));
    let fp8 = manifest("f8e4m3", &[("SA", "f32", r#"["M", "KB"]"#), ("SB", "f32", r#"["NB", "KB"]"#), ("R", "bf16", r#"["M", "N"]"#)], Some(RESIDUAL));
    let spec = GemmSpec::from_manifest(&fp8).unwrap();
    assert_eq!((spec.scales, spec.matrices), (Scales::Block, vec![residual(DType::Bf16)]));
    // A matrix type the runtime does not fill; a matrix the epilogue does not read.
    let err = |m: Manifest| GemmSpec::from_manifest(&m).unwrap_err().to_string();
    assert_eq!(err(residual_manifest("i32")), "not a GEMM artifact: epilogue matrix R is i32: want bf16, f16 or f32");
    let unread = manifest("bf16", &[("R", "bf16", r#"["M", "N"]"#)], Some(r#"[{"op": "acc"}, {"op": "convert", "to": "bf16", "x": 0}]"#));
    assert!(err(unread).contains(r#"unexpected extra tensors ["R"], which the epilogue does not read"#));
    let old = manifest("bf16", &[("R", "bf16", r#"["M", "N"]"#)], None);
    assert!(err(old).contains("the manifest has no `epilogue`"));
    // Tensor-parallel GEMMs do not split residuals.
    let spec = GemmSpec::from_manifest(&residual_manifest("bf16")).unwrap();
    assert!(tp::unsupported(&spec).unwrap().contains(r#"epilogue reads matrices ["R"]"#));
}

#[test]
fn matrices_bind_by_name_with_checks() {
    let m = residual_manifest("bf16");
    let spec = GemmSpec::from_manifest(&m).unwrap();
    let size = GemmSize::new(64, 200, 512);
    let ops = || {
        GemmBuffers::new(
            buf("", DType::Bf16, 0x1000, 64 * 512 * 2),
            buf("", DType::Bf16, 0x2000, 200 * 512 * 2),
            buf("", DType::Bf16, 0x3000, 64 * 200 * 2),
        )
    };
    let r_ok = buf("R", DType::Bf16, 0x4000, 64 * 200 * 2);
    let bound = spec.bind(size, ops().with_matrices([r_ok.clone()])).unwrap();
    let names: Vec<(&str, u64)> = bound.iter().map(|t| (t.name.as_str(), t.addr)).collect();
    assert_eq!(names, [("A", 0x1000), ("B", 0x2000), ("C", 0x3000), ("R", 0x4000)]);
    // The launch plan takes the bindings: R is M x N.
    plan_launch(&m, &spec.problem(size), &bound, 132).unwrap();
    let err = |b: GemmBuffers| spec.bind(size, b).unwrap_err().to_string();
    assert_eq!(err(ops()), "GEMM arguments: the kernel's epilogue reads matrix R (bf16[M,N]); R not given");
    assert_eq!(
        err(ops().with_matrices([buf("R", DType::Bf16, 0x4000, 64 * 200 * 2 - 2)])),
        "GEMM arguments: R is 64x200 bf16 (M x N) for M=64 N=200 K=512: 25600 bytes, the buffer has 25598"
    );
    assert_eq!(err(ops().with_matrices([buf("R", DType::F32, 0x4000, 64 * 200 * 4)])), "GEMM arguments: R holds f32, the kernel takes bf16");
    assert_eq!(
        err(ops().with_matrices([r_ok.clone(), buf("S", DType::Bf16, 0x5000, 64 * 200 * 2)])),
        "GEMM arguments: matrix `S` given, the kernel's epilogue reads R (bf16[M,N])"
    );
    assert_eq!(err(ops().with_matrices([r_ok.clone(), r_ok.clone()])), "GEMM arguments: matrix R given twice");
    // Given as a vector, it is neither bound nor mistaken for the matrix.
    assert_eq!(err(ops().with_vectors([r_ok.clone()])), "GEMM arguments: vector `R` given, the kernel's epilogue reads none");
    // A plain kernel (and a bias one) takes no matrices.
    let plain = GemmSpec::from_manifest(&manifest("bf16", &[], None)).unwrap();
    assert_eq!(
        plain.bind(size, ops().with_matrices([r_ok.clone()])).unwrap_err().to_string(),
        "GEMM arguments: matrix `R` given, the kernel's epilogue reads none"
    );
    let gelu = GemmSpec::from_manifest(&bias_gelu_manifest()).unwrap();
    let bias_ok = buf("Bias", DType::Bf16, 0x6000, 400);
    assert!(gelu.bind(size, ops().with_vectors([bias_ok.clone()])).is_ok());
    assert!(gelu.bind(size, ops().with_vectors([bias_ok]).with_matrices([r_ok])).is_err());
}

#[test]
fn host_matrices_are_rounded_encoded_and_read_by_row_and_column() {
    let x = HostMatrix::from_values(&residual(DType::Bf16), 2, &[1.0, 1.0 + 1.0 / 256.0, -0.1, 3.0]);
    assert_eq!(x.values[..2], [1.0, 1.0]);
    assert_eq!(x.values[2] as f64, half::bf16::from_f64(-0.1).to_f64());
    assert_eq!(&x.bytes[..4], &[0x80, 0x3F, 0x80, 0x3F]);
    assert_eq!((x.at(1, 1), x.at(0, 0), x.at(2, 0), x.at(0, 2)), (3.0, 1.0, 0.0, 0.0), "row-major, zero outside");
    assert_eq!(x.binding(0x10), buf("R", DType::Bf16, 0x10, 8));
    let f = HostMatrix::from_values(&residual(DType::F32), 1, &[0.1]);
    assert_eq!((f.values[0], f.bytes.clone()), (0.1f32, 0.1f32.to_le_bytes().to_vec()));
    let h = HostMatrix::from_values(&residual(DType::F16), 1, &[0.1]);
    assert_eq!(h.bytes, half::f16::from_f64(0.1).to_le_bytes());
    let size = GemmSize::new(300, 70, 5);
    let r = HostMatrix::random(&residual(DType::Bf16), size, &mut Rng::new(3));
    assert_eq!((r.cols, r.values.len(), r.bytes.len()), (70, 300 * 70, 300 * 70 * 2));
    assert!(r.values.iter().all(|&v| v.abs() <= 1.0 && half::bf16::from_f32(v).to_f32() == v));
    assert!(r.values.iter().any(|&v| v != r.values[0]));
    // One draw of the caller's generator: the same seed, the same values.
    assert_eq!(random_matrices(&[residual(DType::Bf16)], size, &mut Rng::new(3)), [r]);
    assert!(random_matrices(&[], size, &mut Rng::new(3)).is_empty());
}

#[test]
fn the_reference_reads_a_matrix_at_the_element() {
    let e = epilogue(RESIDUAL);
    // R 3 x 2: [[0.5, -1], [2, 0.25], [1, -0.75]]; rows 0 and 2 of C.
    let r = [HostMatrix::from_values(&residual(DType::Bf16), 2, &[0.5, -1.0, 2.0, 0.25, 1.0, -0.75])];
    let reference = EpilogueReference::new(&e, &[], &r).unwrap();
    let acc = [3.0, 0.1, -2.0, 7.0];
    let got = reference.rows(&acc, &[0, 2], 2);
    let want: Vec<f64> =
        [(3.0, 0.5), (0.1, -1.0), (-2.0, 1.0), (7.0, -0.75)].iter().map(|&(a, x)| round_to(DType::Bf16, 0.5 * a + 2.0 * x)).collect();
    assert_eq!(got, want);
    assert_eq!(reference.at(1.0, 1, 0), 4.5);
    assert_eq!(
        EpilogueReference::new(&e, &[], &[]).err().unwrap().to_string(),
        "GEMM arguments: the epilogue reads matrix R; no values for it"
    );
    // The FP64 product through it: A = [[1, 2], [3, 4], [5, 6]], B = I, so acc = A.
    let rows = reference_rows(&e, &[], &r, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[1.0, 0.0, 0.0, 1.0], 2, 2, &[1, 2]).unwrap();
    assert_eq!(rows, [1.5 + 4.0, 2.0 + 0.5, 2.5 + 2.0, 3.0 - 1.5]);
    // A bias and a residual together: each read by its own index.
    let both = epilogue(
        r#"[{"op": "acc"}, {"op": "vector", "tensor": "Bias", "along": "cols"}, {"op": "binary", "f": "add", "lhs": 0, "rhs": 1},
            {"op": "matrix", "tensor": "R"}, {"op": "binary", "f": "add", "lhs": 2, "rhs": 3}]"#,
    );
    let b = [HostVector::from_values(&bias(DType::Bf16, Along::Cols), &[10.0, 20.0])];
    assert_eq!(EpilogueReference::new(&both, &b, &r).unwrap().rows(&[0.0; 4], &[1, 2], 2), [12.0, 20.25, 11.0, 19.25]);
}

#[test]
fn classify_finds_alpha_and_beta_of_a_residual() {
    let r = [residual(DType::Bf16)];
    let res = |alpha: f64, beta: f64| EpilogueKind::Residual { tensor: "R".into(), alpha, beta };
    assert_eq!(classify(Some(&epilogue(RESIDUAL)), &[], &r), res(0.5, 2.0));
    assert_eq!(res(0.5, 2.0).name(), "residual");
    // Any arrangement of the same affine function: (R * 4 + acc) * 0.5; acc + R; acc - R; R / 3 + acc * 1.5.
    let scaled_sum = epilogue(
        r#"[{"op": "matrix", "tensor": "R"}, {"op": "splat", "value": 4.0}, {"op": "binary", "f": "mul", "lhs": 0, "rhs": 1},
            {"op": "acc"}, {"op": "binary", "f": "add", "lhs": 2, "rhs": 3}, {"op": "splat", "value": 0.5},
            {"op": "binary", "f": "mul", "lhs": 4, "rhs": 5}, {"op": "convert", "to": "bf16", "x": 6}]"#,
    );
    assert_eq!(classify(Some(&scaled_sum), &[], &r), res(0.5, 2.0));
    let two = |f: &str| {
        epilogue(&format!(
            r#"[{{"op": "acc"}}, {{"op": "matrix", "tensor": "R"}}, {{"op": "binary", "f": "{f}", "lhs": 0, "rhs": 1}}, {{"op": "convert", "to": "bf16", "x": 2}}]"#
        ))
    };
    assert_eq!(classify(Some(&two("add")), &[], &r), res(1.0, 1.0));
    assert_eq!(classify(Some(&two("sub")), &[], &r), res(1.0, -1.0));
    let thirds = epilogue(
        r#"[{"op": "matrix", "tensor": "R"}, {"op": "splat", "value": 3.0}, {"op": "binary", "f": "div", "lhs": 0, "rhs": 1},
            {"op": "acc"}, {"op": "splat", "value": 1.5}, {"op": "binary", "f": "mul", "lhs": 3, "rhs": 4},
            {"op": "binary", "f": "add", "lhs": 2, "rhs": 5}, {"op": "convert", "to": "bf16", "x": 6}]"#,
    );
    let EpilogueKind::Residual { alpha, beta, .. } = classify(Some(&thirds), &[], &r) else { panic!("R/3 + 1.5 acc is a residual") };
    assert!((alpha - 1.5).abs() < 1e-15 && (beta - 1.0 / 3.0).abs() < 1e-15, "{alpha} {beta}");
    // Not affine in acc and R: a product, a maximum, GELU of the sum, an offset, an early rounding.
    assert_eq!(classify(Some(&two("mul")), &[], &r), EpilogueKind::Other);
    assert_eq!(classify(Some(&two("max")), &[], &r), EpilogueKind::Other);
    let gelu = epilogue(&BIAS_GELU.replace(r#"{"op": "vector", "tensor": "Bias", "along": "cols"}"#, r#"{"op": "matrix", "tensor": "R"}"#));
    assert_eq!(classify(Some(&gelu), &[], &r), EpilogueKind::Other);
    let offset = epilogue(
        r#"[{"op": "acc"}, {"op": "matrix", "tensor": "R"}, {"op": "binary", "f": "add", "lhs": 0, "rhs": 1},
            {"op": "splat", "value": 0.25}, {"op": "binary", "f": "add", "lhs": 2, "rhs": 3}, {"op": "convert", "to": "bf16", "x": 4}]"#,
    );
    assert_eq!(classify(Some(&offset), &[], &r), EpilogueKind::Other);
    let early = epilogue(
        r#"[{"op": "acc"}, {"op": "convert", "to": "bf16", "x": 0}, {"op": "matrix", "tensor": "R"},
            {"op": "binary", "f": "add", "lhs": 1, "rhs": 2}, {"op": "convert", "to": "bf16", "x": 3}]"#,
    );
    assert_eq!(classify(Some(&early), &[], &r), EpilogueKind::Other);
    // No final rounding to bf16, an f32 or f16 residual, a bias with it, two residuals: no vendor residual.
    let unrounded = epilogue(r#"[{"op": "acc"}, {"op": "matrix", "tensor": "R"}, {"op": "binary", "f": "add", "lhs": 0, "rhs": 1}]"#);
    assert_eq!(classify(Some(&unrounded), &[], &r), EpilogueKind::Other);
    assert_eq!(classify(Some(&two("add")), &[], &[residual(DType::F32)]), EpilogueKind::Other);
    assert_eq!(classify(Some(&two("add")), &[], &[residual(DType::F16)]), EpilogueKind::Other);
    let with_bias = epilogue(
        r#"[{"op": "acc"}, {"op": "vector", "tensor": "Bias", "along": "cols"}, {"op": "binary", "f": "add", "lhs": 0, "rhs": 1},
            {"op": "matrix", "tensor": "R"}, {"op": "binary", "f": "add", "lhs": 2, "rhs": 3}, {"op": "convert", "to": "bf16", "x": 4}]"#,
    );
    assert_eq!(classify(Some(&with_bias), &[bias(DType::Bf16, Along::Cols)], &r), EpilogueKind::Other);
    let second = MatrixSpec { name: "S".into(), dtype: DType::Bf16 };
    assert_eq!(classify(Some(&two("add")), &[], &[residual(DType::Bf16), second]), EpilogueKind::Other);
}

#[test]
fn generated_cuda_reads_matrices_as_c() {
    let e = epilogue(RESIDUAL);
    let src = cuda_source(&e, &[], &[residual(DType::Bf16)]).unwrap();
    for line in [
        r#"extern "C" __global__ void tilec_epilogue(unsigned short* __restrict__ c, const unsigned short* __restrict__ r0, long long m, long long n)"#,
        "tilec_u16x8 r0g;",
        "r0g = *reinterpret_cast<const tilec_u16x8*>(r0 + base);",
        "for (int e = 0; e < 8; ++e) r0g.v[e] = base + e < total ? r0[base + e] : (unsigned short)0;",
        "const float x3 = tilec_bf16_to_f32(r0g.v[e]);",
        "const float x5 = x3 * x4;",
        "const float x7 = tilec_round_bf16(x6);",
    ] {
        assert!(src.contains(line), "missing `{line}` in\n{src}");
    }
    // Vectors come first, then matrices; an f32 matrix is read 32 bytes a group, an f16 one converted.
    let both = epilogue(
        r#"[{"op": "acc"}, {"op": "vector", "tensor": "Bias", "along": "cols"}, {"op": "binary", "f": "add", "lhs": 0, "rhs": 1},
            {"op": "matrix", "tensor": "R"}, {"op": "binary", "f": "add", "lhs": 2, "rhs": 3},
            {"op": "matrix", "tensor": "H"}, {"op": "binary", "f": "add", "lhs": 4, "rhs": 5}, {"op": "convert", "to": "bf16", "x": 6}]"#,
    );
    let h = MatrixSpec { name: "H".into(), dtype: DType::F16 };
    let src = cuda_source(&both, &[bias(DType::Bf16, Along::Cols)], &[residual(DType::F32), h]).unwrap();
    for line in [
        "const unsigned short* __restrict__ v0, const float* __restrict__ r0, const unsigned short* __restrict__ r1, long long m, long long n)",
        "tilec_f32x8 r0g;",
        "r0g = *reinterpret_cast<const tilec_f32x8*>(r0 + base);",
        "r0g.v[e] = base + e < total ? r0[base + e] : (float)0;",
        "const float x3 = r0g.v[e];",
        "const float x5 = tilec_f16_to_f32(r1g.v[e]);",
    ] {
        assert!(src.contains(line), "missing `{line}` in\n{src}");
    }
    assert!(cuda_source(&e, &[], &[]).unwrap_err().contains("matrix R"));
}

#[test]
fn cublaslt_takes_a_residual_as_its_c() {
    use crate::lt::LtEpilogue;
    let r = LtEpilogue::Residual { r: 0x10, alpha: 0.5, beta: 2.0 };
    assert_eq!(r.scaling(0x20), (0.5, 2.0, 0x10));
    assert!(r.lt().is_none(), "no cuBLASLt epilogue attribute: alpha and beta");
    assert_eq!(LtEpilogue::None.scaling(0x20), (1.0, 0.0, 0x20));
    assert_eq!(LtEpilogue::Bias { bias: 0x30 }.scaling(0x20), (1.0, 0.0, 0x20));
}

// ------------------------------------------------------------ interleaved parts (SwiGLU)

/// `silu(gate) * up` rounded to bf16, gate and up interleaved in runs of 128 product columns.
const SWIGLU: &str = r#"[{"op": "acc_part", "block": 128, "part": 0, "parts": 2}, {"op": "acc_part", "block": 128, "part": 1, "parts": 2},
    {"op": "unary", "f": "neg", "x": 0}, {"op": "unary", "f": "exp", "x": 2}, {"op": "splat", "value": 1.0},
    {"op": "binary", "f": "add", "lhs": 3, "rhs": 4}, {"op": "binary", "f": "div", "lhs": 0, "rhs": 5},
    {"op": "binary", "f": "mul", "lhs": 6, "rhs": 1}, {"op": "convert", "to": "bf16", "x": 7}]"#;

/// A BF16 GEMM manifest `A[M,K] B[N,K] -> C[M,cols]` with `extra` input tensors and `epilogue`.
fn gated_manifest(cols: &str, extra: &[(&str, &str, &str)], epilogue: &str) -> Manifest {
    let tensors: String = extra
        .iter()
        .map(|(name, dtype, shape)| format!(r#", {{ "name": "{name}", "dtype": "{dtype}", "shape": {shape}, "role": "input" }}"#))
        .collect();
    let params: String = extra.iter().map(|(name, _, _)| format!(r#", {{ "kind": "ptr", "tensor": "{name}" }}"#)).collect();
    let m = Manifest::from_json_str(&format!(
        r#"{{ "format_version": 1, "kernel_name": "g", "entry": "g", "target": "sm_90a", "epilogue": {{ "values": {epilogue} }},
  "block": [128, 1, 1], "grid": {{ "rule": "tiles", "block_m": 128, "block_n": 128 }},
  "tensors": [
    {{ "name": "A", "dtype": "bf16", "shape": ["M", "K"], "role": "input" }},
    {{ "name": "B", "dtype": "bf16", "shape": ["N", "K"], "role": "input" }},
    {{ "name": "C", "dtype": "bf16", "shape": ["M", "{cols}"], "role": "output" }}{tensors} ],
  "params": [ {{ "kind": "ptr", "tensor": "A" }}, {{ "kind": "ptr", "tensor": "B" }}, {{ "kind": "ptr", "tensor": "C" }}{params} ] }}"#
    ))
    .unwrap();
    m.validate().unwrap();
    m
}

fn silu(x: f64) -> f64 {
    x / (1.0 + (-x).exp())
}

#[test]
fn a_gated_epilogue_stores_c_with_n_over_parts_columns() {
    let m = gated_manifest("H", &[], SWIGLU);
    let spec = GemmSpec::from_manifest(&m).unwrap();
    assert_eq!(spec.gated, Some(AccParts { block: 128, parts: 2, cols: "H".into() }));
    assert!(spec.has_epilogue() && spec.vectors.is_empty() && spec.matrices.is_empty());
    assert_eq!(spec.cols_symbol(), "H");
    // M x N x K = 64 x 512 x 256: C is 64 x 256.
    let size = GemmSize::new(64, 512, 256);
    assert_eq!(spec.out_size(size), GemmSize::new(64, 256, 256));
    assert_eq!(spec.problem(size).get("H").unwrap(), 256);
    assert_eq!(spec.problem(size).get("N").unwrap(), 512);
    let ops = |c_bytes: u64| {
        GemmBuffers::new(buf("", DType::Bf16, 0x1000, 64 * 256 * 2), buf("", DType::Bf16, 0x2000, 512 * 256 * 2), buf("", DType::Bf16, 0x3000, c_bytes))
    };
    let bound = spec.bind(size, ops(64 * 256 * 2)).unwrap();
    assert_eq!(bound.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["A", "B", "C"]);
    // The launch plan resolves C[M,H]: the grid covers its 64 x 256 (2 tiles of 128 columns), not the product's 512.
    let plan = plan_launch(&m, &spec.problem(size), &bound, 132).unwrap();
    assert_eq!(plan.grid, [1, 2, 1]);
    let err = |size: GemmSize, c_bytes: u64| spec.bind(size, ops(c_bytes)).unwrap_err().to_string();
    assert_eq!(err(size, 64 * 256 * 2 - 2), "GEMM arguments: C is 64x256 bf16 for M=64 N=512 K=256: 32768 bytes, the buffer has 32766");
    // N must interleave whole runs of both parts (256 columns).
    assert_eq!(
        err(GemmSize::new(64, 384, 256), 1 << 20),
        "GEMM arguments: N=384 product columns do not interleave 2 parts in whole runs of 128 columns: N must be a multiple of 256 (C then has N/2 columns)"
    );
    assert!(spec.bind(GemmSize::new(64, 256, 256), ops(64 * 128 * 2)).is_ok());
    // Tensor-parallel runs do not split the parts.
    assert!(tp::unsupported(&spec).unwrap().contains("2 interleaved parts of the product (C[M,H])"));
}

#[test]
fn a_gated_epilogue_needs_c_of_its_own_columns_and_one_interleave() {
    let err = |m: &Manifest| GemmSpec::from_manifest(m).unwrap_err().to_string();
    let e = err(&gated_manifest("N", &[], SWIGLU));
    assert!(e.contains("the epilogue reads 2 interleaved parts of the product's N columns (runs of 128), so C has N/2: want C[M,H], H a symbol of its own (got C[M,N])"), "{e}");
    assert!(err(&gated_manifest("K", &[], SWIGLU)).contains("got C[M,K]"));
    let mixed = SWIGLU.replacen(r#""block": 128, "part": 1"#, r#""block": 64, "part": 1"#, 1);
    let e = err(&gated_manifest("H", &[], &mixed));
    assert!(e.contains("value 1 reads 2 parts in runs of 64, an earlier one 2 in runs of 128"), "{e}");
    // Any other name of C's columns does.
    assert_eq!(GemmSpec::from_manifest(&gated_manifest("I", &[], SWIGLU)).unwrap().gated.unwrap().cols, "I");
    assert_eq!(AccParts::of(&epilogue(BIAS_GELU)), Ok(None));
    assert_eq!(AccParts::of(&epilogue(SWIGLU)), Ok(Some((128, 2))));
}

#[test]
fn a_gated_epilogues_vectors_and_matrices_have_cs_columns() {
    let e = SWIGLU.replace(
        r#"{"op": "convert", "to": "bf16", "x": 7}"#,
        r#"{"op": "vector", "tensor": "Bias", "along": "cols"}, {"op": "binary", "f": "add", "lhs": 7, "rhs": 8},
           {"op": "matrix", "tensor": "R"}, {"op": "binary", "f": "add", "lhs": 9, "rhs": 10}, {"op": "convert", "to": "bf16", "x": 11}"#,
    );
    let m = gated_manifest("H", &[("Bias", "bf16", r#"["H"]"#), ("R", "bf16", r#"["M", "H"]"#)], &e);
    let spec = GemmSpec::from_manifest(&m).unwrap();
    let size = GemmSize::new(4, 512, 64);
    let ops = || GemmBuffers::new(buf("", DType::Bf16, 0x1000, 4 * 64 * 2), buf("", DType::Bf16, 0x2000, 512 * 64 * 2), buf("", DType::Bf16, 0x3000, 4 * 256 * 2));
    let bias = |bytes| buf("Bias", DType::Bf16, 0x4000, bytes);
    let r = |bytes| buf("R", DType::Bf16, 0x5000, bytes);
    assert!(spec.bind(size, ops().with_vectors([bias(512)]).with_matrices([r(4 * 256 * 2)])).is_ok());
    let err = |b: GemmBuffers| spec.bind(size, b).unwrap_err().to_string();
    assert_eq!(err(ops().with_vectors([bias(510)]).with_matrices([r(2048)])), "GEMM arguments: Bias is 256 bf16 (H) for M=4 N=512 K=64: 512 bytes, the buffer has 510");
    assert_eq!(err(ops().with_vectors([bias(512)]).with_matrices([r(2046)])), "GEMM arguments: R is 4x256 bf16 (M x H) for M=4 N=512 K=64: 2048 bytes, the buffer has 2046");
    // (A residual of the product's shape, R[M,N], is refused by the manifest's validation: not C's shape.)
    // Random values for a call are C's size.
    let mut rng = Rng::new(5);
    assert_eq!(random_vectors(&spec.vectors, spec.out_size(size), &mut rng)[0].values.len(), 256);
    assert_eq!(random_matrices(&spec.matrices, spec.out_size(size), &mut rng)[0].cols, 256);
}

#[test]
fn the_reference_reads_each_part_at_its_product_column() {
    let parts = AccParts { block: 128, parts: 2, cols: "H".into() };
    // Output column j of part p: 256 * (j / 128) + 128 * p + j % 128.
    assert_eq!([parts.column(0, 0), parts.column(0, 1), parts.column(127, 1), parts.column(130, 0), parts.column(130, 1)], [0, 128, 255, 258, 386]);
    assert_eq!(parts.out_cols(1024), 512);
    // Runs of 2 columns, 2 parts: product columns [g0 g1 u0 u1 g2 g3 u2 u3]; gate * up.
    let e = epilogue(r#"[{"op": "acc_part", "block": 2, "part": 0, "parts": 2}, {"op": "acc_part", "block": 2, "part": 1, "parts": 2},
        {"op": "binary", "f": "mul", "lhs": 0, "rhs": 1}]"#);
    let r = EpilogueReference::new(&e, &[], &[]).unwrap();
    let product = [1.0, 2.0, 10.0, 20.0, 3.0, 4.0, 30.0, 40.0, -1.0, -2.0, 0.5, 0.25, 5.0, 6.0, 7.0, 8.0];
    assert_eq!(r.out_cols(8), 4);
    assert_eq!(r.rows(&product, &[0, 1], 8), [10.0, 40.0, 90.0, 160.0, -0.5, -0.5, 35.0, 48.0]);
    assert_eq!(r.at_row(&product[..8], 0, 3), 160.0);
    // Without the product's row the parts are unknown.
    assert!(r.at(1.0, 0, 0).is_nan());
    // The accumulator itself is the product's column j.
    let acc = epilogue(r#"[{"op": "acc_part", "block": 2, "part": 1, "parts": 2}, {"op": "acc"}, {"op": "binary", "f": "sub", "lhs": 0, "rhs": 1}]"#);
    assert_eq!(EpilogueReference::new(&acc, &[], &[]).unwrap().rows(&product[..8], &[0], 8), [10.0 - 1.0, 20.0 - 2.0, 30.0 - 10.0, 40.0 - 20.0]);
    // SwiGLU, through the FP64 product: A = [[1, 0]], B's rows [b, 0], so the product's row is B's first column.
    let e = epilogue(SWIGLU);
    let col: Vec<f32> = (0..512).map(|c| (c as f32 - 256.0) / 64.0).collect();
    let b: Vec<f32> = col.iter().flat_map(|&x| [x, 0.0]).collect();
    let got = reference_rows(&e, &[], &[], &[1.0, 0.0], &b, 512, 2, &[0]).unwrap();
    assert_eq!(got.len(), 256);
    for (j, g) in got.iter().enumerate() {
        let (gate, up) = (col[256 * (j / 128) + j % 128] as f64, col[256 * (j / 128) + 128 + j % 128] as f64);
        let want = round_to(DType::Bf16, silu(gate) * up);
        assert!((g - want).abs() <= 1e-12 * want.abs().max(1.0), "column {j}: {g} vs {want}");
    }
    // Column 130: gate is product column 258, up 386.
    assert_eq!(got[130], round_to(DType::Bf16, silu(col[258] as f64) * col[386] as f64));
}

#[test]
fn classify_calls_interleaved_parts_gated() {
    let kind = classify(Some(&epilogue(SWIGLU)), &[], &[]);
    assert_eq!(kind, EpilogueKind::Gated { block: 128, parts: 2 });
    assert_eq!(kind.name(), "gated");
}

#[test]
fn generated_cuda_reads_the_parts_from_the_product() {
    let src = cuda_source(&epilogue(SWIGLU), &[], &[]).unwrap();
    for line in [
        r#"extern "C" __global__ void tilec_epilogue(unsigned short* __restrict__ c, const unsigned short* __restrict__ p, long long m, long long n)"#,
        "__device__ __forceinline__ long long tilec_col(long long j, long long q) { return 256LL * (j / 128LL) + q * 128LL + j % 128LL; }",
        "const long long pn = 2LL * n;",
        "tilec_u16x8 out, q0g, q1g;",
        "if (whole && n % 8 == 0) {",
        "q0g = *reinterpret_cast<const tilec_u16x8*>(p + i * pn + tilec_col(j, 0));",
        "q1g = *reinterpret_cast<const tilec_u16x8*>(p + i * pn + tilec_col(j, 1));",
        "q1g.v[e] = inside ? p[xi * pn + tilec_col(xj, 1)] : (unsigned short)0;",
        "const float x0 = tilec_bf16_to_f32(q0g.v[e]);",
        "const float x1 = tilec_bf16_to_f32(q1g.v[e]);",
        "const float x3 = expf(x2);",
        "const float x6 = x0 / x5;",
        "const float x7 = x6 * x1;",
        "out.v[e] = tilec_f32_to_bf16(x8);",
        "*reinterpret_cast<tilec_u16x8*>(c + base) = out;",
    ] {
        assert!(src.contains(line), "missing `{line}` in\n{src}");
    }
    assert!(!src.contains("in.v[e]"), "a gated kernel reads no C:\n{src}");
    // Runs not a multiple of 8 are read element by element; the accumulator is the product's column j.
    let odd = epilogue(r#"[{"op": "acc_part", "block": 4, "part": 1, "parts": 3}, {"op": "acc"}, {"op": "binary", "f": "mul", "lhs": 0, "rhs": 1}]"#);
    let src = cuda_source(&odd, &[], &[]).unwrap();
    for line in [
        "return 12LL * (j / 4LL) + q * 4LL + j % 4LL;",
        "const long long pn = 3LL * n;",
        "tilec_u16x8 out, q1g, qag;",
        "if (false) {",
        "qag = *reinterpret_cast<const tilec_u16x8*>(p + i * pn + j);",
        "qag.v[e] = inside ? p[xi * pn + xj] : (unsigned short)0;",
        "const float x1 = tilec_bf16_to_f32(qag.v[e]);",
    ] {
        assert!(src.contains(line), "missing `{line}` in\n{src}");
    }
    // Vectors and matrices follow the product's pointer.
    let e = SWIGLU.replace(
        r#"{"op": "convert", "to": "bf16", "x": 7}"#,
        r#"{"op": "matrix", "tensor": "R"}, {"op": "binary", "f": "add", "lhs": 7, "rhs": 8}, {"op": "convert", "to": "bf16", "x": 9}"#,
    );
    let src = cuda_source(&epilogue(&e), &[], &[residual(DType::Bf16)]).unwrap();
    assert!(src.contains("const unsigned short* __restrict__ p, const unsigned short* __restrict__ r0, long long m, long long n)"), "{src}");
    assert!(src.contains("const float x8 = tilec_bf16_to_f32(r0g.v[e]);"), "{src}");
}
