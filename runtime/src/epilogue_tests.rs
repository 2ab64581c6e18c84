//! The GEMM handle with epilogue vectors, and `crate::epilogue`'s pure parts.

use crate::acc_parts::AccParts;
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

/// Fails, showing `src`, unless it contains every one of `lines`.
fn assert_has_lines(src: &str, lines: &[&str]) {
    for line in lines {
        assert!(src.contains(line), "missing `{line}` in\n{src}");
    }
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
    assert!(got.stores.is_empty());
    for (x, (&a, g)) in acc.iter().zip(&got.values).enumerate() {
        let want = round_to(DType::Bf16, gelu_tanh(a + vectors[0].values[x % 3]));
        assert_eq!(*g, want, "element {x}");
    }
    // Row vectors take the row's index.
    let scale = epilogue(r#"[{"op": "acc"}, {"op": "vector", "tensor": "S", "along": "rows"}, {"op": "binary", "f": "mul", "lhs": 0, "rhs": 1}]"#);
    let s = [HostVector::from_values(&VectorSpec { name: "S".into(), dtype: DType::F32, along: Along::Rows }, &[1.0, 2.0, 3.0])];
    assert_eq!(EpilogueReference::new(&scale, &s, &[]).unwrap().rows(&[1.0, 1.0, 1.0, 1.0], &[0, 2], 2).values, [1.0, 1.0, 3.0, 3.0]);
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
    let src = cuda_source(&e, &[bias(DType::Bf16, Along::Cols)], &[], &OutputSpec::bf16_c()).unwrap();
    assert!(src.contains(r#"extern "C" __global__ void tilec_epilogue(unsigned short* __restrict__ c, const unsigned short* __restrict__ v0, long long m, long long n)"#), "{src}");
    assert_has_lines(&src, &[
        "const float x0 = tilec_bf16_to_f32(in.v[e]);",
        "const float x1 = tilec_bf16_to_f32(v0[j]);",
        "const float x2 = x0 + x1;",
        "const float x7 = __int_as_float(0x3d372713) /* 0.044715 */;",
        "const float x12 = tanhf(x11);",
        "const float x16 = tilec_round_bf16(x15);",
        "out.v[e] = tilec_f32_to_bf16(x16);",
    ]);
    // Row vectors read element i; f32 vectors are float pointers; every function has its spelling.
    let all = epilogue(
        r#"[{"op": "acc"}, {"op": "vector", "tensor": "S", "along": "rows"}, {"op": "binary", "f": "max", "lhs": 0, "rhs": 1},
            {"op": "unary", "f": "erf", "x": 2}, {"op": "unary", "f": "rsqrt", "x": 3}, {"op": "unary", "f": "abs", "x": 4},
            {"op": "unary", "f": "neg", "x": 5}, {"op": "unary", "f": "exp", "x": 6}, {"op": "binary", "f": "min", "lhs": 7, "rhs": 0},
            {"op": "binary", "f": "div", "lhs": 8, "rhs": 1}, {"op": "binary", "f": "sub", "lhs": 9, "rhs": 1}, {"op": "convert", "to": "f16", "x": 10},
            {"op": "convert", "to": "f8e4m3", "x": 11}]"#,
    );
    let src = cuda_source(&all, &[VectorSpec { name: "S".into(), dtype: DType::F32, along: Along::Rows }], &[], &OutputSpec::bf16_c()).unwrap();
    assert_has_lines(&src, &[
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
    ]);
    assert!(cuda_source(&e, &[], &[], &OutputSpec::bf16_c()).unwrap_err().contains("vector Bias"));
    assert!(cuda_source(&Epilogue { values: vec![], group_stores: Vec::new() }, &[], &[], &OutputSpec::bf16_c()).is_err());
}

#[test]
fn reference_rows_take_the_product_through_the_epilogue() {
    // A = [[1, 2], [3, 4], [5, 6]], B = [[1, 0], [0, 1]]: C = A; + bias [0.5, -0.5].
    let e = epilogue(r#"[{"op": "acc"}, {"op": "vector", "tensor": "Bias", "along": "cols"}, {"op": "binary", "f": "add", "lhs": 0, "rhs": 1}]"#);
    let v = [HostVector::from_values(&bias(DType::Bf16, Along::Cols), &[0.5, -0.5])];
    let got = reference_rows(&e, &v, &[], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[1.0, 0.0, 0.0, 1.0], 2, 2, &[0, 2]).unwrap();
    assert_eq!(got.values, [1.5, 1.5, 5.5, 5.5]);
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
    let got = reference.rows(&acc, &[0, 2], 2).values;
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
    assert_eq!(rows.values, [1.5 + 4.0, 2.0 + 0.5, 2.5 + 2.0, 3.0 - 1.5]);
    // A bias and a residual together: each read by its own index.
    let both = epilogue(
        r#"[{"op": "acc"}, {"op": "vector", "tensor": "Bias", "along": "cols"}, {"op": "binary", "f": "add", "lhs": 0, "rhs": 1},
            {"op": "matrix", "tensor": "R"}, {"op": "binary", "f": "add", "lhs": 2, "rhs": 3}]"#,
    );
    let b = [HostVector::from_values(&bias(DType::Bf16, Along::Cols), &[10.0, 20.0])];
    assert_eq!(EpilogueReference::new(&both, &b, &r).unwrap().rows(&[0.0; 4], &[1, 2], 2).values, [12.0, 20.25, 11.0, 19.25]);
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
    let src = cuda_source(&e, &[], &[residual(DType::Bf16)], &OutputSpec::bf16_c()).unwrap();
    assert_has_lines(&src, &[
        r#"extern "C" __global__ void tilec_epilogue(unsigned short* __restrict__ c, const unsigned short* __restrict__ r0, long long m, long long n)"#,
        "tilec_u16x8 r0g;",
        "r0g = *reinterpret_cast<const tilec_u16x8*>(r0 + base);",
        "for (int e = 0; e < 8; ++e) r0g.v[e] = base + e < total ? r0[base + e] : (unsigned short)0;",
        "const float x3 = tilec_bf16_to_f32(r0g.v[e]);",
        "const float x5 = x3 * x4;",
        "const float x7 = tilec_round_bf16(x6);",
    ]);
    // Vectors come first, then matrices; an f32 matrix is read 32 bytes a group, an f16 one converted.
    let both = epilogue(
        r#"[{"op": "acc"}, {"op": "vector", "tensor": "Bias", "along": "cols"}, {"op": "binary", "f": "add", "lhs": 0, "rhs": 1},
            {"op": "matrix", "tensor": "R"}, {"op": "binary", "f": "add", "lhs": 2, "rhs": 3},
            {"op": "matrix", "tensor": "H"}, {"op": "binary", "f": "add", "lhs": 4, "rhs": 5}, {"op": "convert", "to": "bf16", "x": 6}]"#,
    );
    let h = MatrixSpec { name: "H".into(), dtype: DType::F16 };
    let src = cuda_source(&both, &[bias(DType::Bf16, Along::Cols)], &[residual(DType::F32), h], &OutputSpec::bf16_c()).unwrap();
    assert_has_lines(&src, &[
        "const unsigned short* __restrict__ v0, const float* __restrict__ r0, const unsigned short* __restrict__ r1, long long m, long long n)",
        "tilec_f32x8 r0g;",
        "r0g = *reinterpret_cast<const tilec_f32x8*>(r0 + base);",
        "r0g.v[e] = base + e < total ? r0[base + e] : (float)0;",
        "const float x3 = r0g.v[e];",
        "const float x5 = tilec_f16_to_f32(r1g.v[e]);",
    ]);
    assert!(cuda_source(&e, &[], &[], &OutputSpec::bf16_c()).unwrap_err().contains("matrix R"));
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
    assert_eq!(r.rows(&product, &[0, 1], 8).values, [10.0, 40.0, 90.0, 160.0, -0.5, -0.5, 35.0, 48.0]);
    assert_eq!(r.row(&product[..8], 0).values[3], 160.0);
    // Without the product's row the parts are unknown.
    assert!(r.at(1.0, 0, 0).is_nan());
    // The accumulator itself is the product's column j.
    let acc = epilogue(r#"[{"op": "acc_part", "block": 2, "part": 1, "parts": 2}, {"op": "acc"}, {"op": "binary", "f": "sub", "lhs": 0, "rhs": 1}]"#);
    assert_eq!(EpilogueReference::new(&acc, &[], &[]).unwrap().rows(&product[..8], &[0], 8).values, [10.0 - 1.0, 20.0 - 2.0, 30.0 - 10.0, 40.0 - 20.0]);
    // SwiGLU, through the FP64 product: A = [[1, 0]], B's rows [b, 0], so the product's row is B's first column.
    let e = epilogue(SWIGLU);
    let col: Vec<f32> = (0..512).map(|c| (c as f32 - 256.0) / 64.0).collect();
    let b: Vec<f32> = col.iter().flat_map(|&x| [x, 0.0]).collect();
    let got = reference_rows(&e, &[], &[], &[1.0, 0.0], &b, 512, 2, &[0]).unwrap().values;
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
fn generated_cuda_reads_the_parts_from_their_products() {
    let src = cuda_source(&epilogue(SWIGLU), &[], &[], &OutputSpec::bf16_c()).unwrap();
    assert_has_lines(&src, &[
        r#"extern "C" __global__ void tilec_epilogue(unsigned short* __restrict__ c, const unsigned short* __restrict__ p0, const unsigned short* __restrict__ p1, long long m, long long n)"#,
        "tilec_u16x8 q0g;",
        "q0g = *reinterpret_cast<const tilec_u16x8*>(p0 + base);",
        "q1g = *reinterpret_cast<const tilec_u16x8*>(p1 + base);",
        "for (int e = 0; e < 8; ++e) q1g.v[e] = base + e < total ? p1[base + e] : (unsigned short)0;",
        "const float x0 = tilec_bf16_to_f32(q0g.v[e]);",
        "const float x1 = tilec_bf16_to_f32(q1g.v[e]);",
        "const float x3 = expf(x2);",
        "const float x6 = x0 / x5;",
        "const float x7 = x6 * x1;",
        "out.v[e] = tilec_f32_to_bf16(x8);",
        "*reinterpret_cast<tilec_u16x8*>(c + base) = out;",
    ]);
    assert!(!src.contains("in.v[e]") && !src.contains("tilec_acc"), "a gated kernel reads no C, and here no accumulator:\n{src}");
    // The accumulator is the interleaved product's column j, read element by element from the part holding it; every
    // part's product is a parameter, read or not.
    let odd = epilogue(r#"[{"op": "acc_part", "block": 4, "part": 1, "parts": 3}, {"op": "acc"}, {"op": "binary", "f": "mul", "lhs": 0, "rhs": 1}]"#);
    let src = cuda_source(&odd, &[], &[], &OutputSpec::bf16_c()).unwrap();
    assert_has_lines(&src, &[
        "const unsigned short* __restrict__ p0, const unsigned short* __restrict__ p1, const unsigned short* __restrict__ p2, long long m, long long n)",
        "const long long q = j % 12LL / 4LL;",
        "const unsigned short* __restrict__ p = q == 0 ? p0 : q == 1 ? p1 : p2;",
        "return p[i * n + 4LL * (j / 12LL) + j % 4LL];",
        "qag.v[e] = base + e < total ? tilec_acc(p0, p1, p2, xi, base + e - xi * n, n) : (unsigned short)0;",
        "q1g = *reinterpret_cast<const tilec_u16x8*>(p1 + base);",
        "const float x1 = tilec_bf16_to_f32(qag.v[e]);",
    ]);
    assert!(!src.contains("q0g") && !src.contains("q2g"), "{src}");
    // Vectors and matrices follow the products' pointers.
    let e = SWIGLU.replace(
        r#"{"op": "convert", "to": "bf16", "x": 7}"#,
        r#"{"op": "matrix", "tensor": "R"}, {"op": "binary", "f": "add", "lhs": 7, "rhs": 8}, {"op": "convert", "to": "bf16", "x": 9}"#,
    );
    let src = cuda_source(&epilogue(&e), &[], &[residual(DType::Bf16)], &OutputSpec::bf16_c()).unwrap();
    assert!(src.contains("const unsigned short* __restrict__ p1, const unsigned short* __restrict__ r0, long long m, long long n)"), "{src}");
    assert!(src.contains("const float x8 = tilec_bf16_to_f32(r0g.v[e]);"), "{src}");
}

#[test]
fn b_is_taken_apart_into_each_parts_weights() {
    // Runs of 2 rows, 2 parts: B's rows [g0 g1 u0 u1 g2 g3 u2 u3], K = 3.
    let parts = AccParts { block: 2, parts: 2, cols: "H".into() };
    let b: Vec<u32> = (0..8 * 3).collect();
    let row = |r: u32| [3 * r, 3 * r + 1, 3 * r + 2];
    let gate: Vec<u32> = [0, 1, 4, 5].into_iter().flat_map(row).collect();
    let up: Vec<u32> = [2, 3, 6, 7].into_iter().flat_map(row).collect();
    assert_eq!((parts.part_rows(&b, 3, 1, 0).unwrap(), parts.part_rows(&b, 3, 1, 1).unwrap()), (gate, up));
    // Row j of a part's weights is the product's column that part's output column j reads.
    let swiglu = AccParts { block: 128, parts: 2, cols: "H".into() };
    let b: Vec<u64> = (0..1024).collect();
    for part in 0..2 {
        let w = swiglu.part_rows(&b, 1, 1, part).unwrap();
        assert!(w.iter().enumerate().all(|(j, &c)| c == swiglu.column(j as u64, part)), "part {part}");
    }
    // Scales of 128 rows a row (SB of a block-scaled GEMM): runs of 256 are two scale rows each.
    let wide = AccParts { block: 256, parts: 2, cols: "H".into() };
    let sb: Vec<u32> = (0..8 * 2).collect(); // NB = 8 (N = 1024), KB = 2
    assert_eq!(wide.part_rows(&sb, 2, 128, 1).unwrap(), [4, 5, 6, 7, 12, 13, 14, 15]);
    // Runs that split a scale row, rows that are not whole runs, a part past the last: errors.
    let err = |p: &AccParts, rows: &[u32], width: usize, per_row: u64, part: u64| p.part_rows(rows, width, per_row, part).unwrap_err().to_string();
    assert_eq!(err(&parts, &sb, 2, 128, 0), "GEMM arguments: runs of 2 columns are not whole rows of 128 columns: their rows cannot be taken apart");
    assert!(err(&parts, &(0..6 * 3).collect::<Vec<u32>>(), 3, 1, 0).starts_with("GEMM arguments: N=6 product columns do not interleave 2 parts"));
    assert_eq!(err(&parts, &(0..7).collect::<Vec<u32>>(), 3, 1, 0), "GEMM arguments: 7 elements are not rows of 3");
    assert_eq!(err(&parts, &b.iter().map(|&x| x as u32).collect::<Vec<_>>(), 1, 1, 2), "GEMM arguments: part 2 of 2");
}

// ------------------------------------------------------------ output quantisation (FP8 codes, group stores)

/// `examples/gemm_fp8_quantize.tile`'s epilogue: x = bf16(acc); amax = the
/// group's max |x| clamped to 1e-4; the code e4m3(x * 448 / amax); the
/// scale amax / 448 stored to SQ.
const QUANTIZE: &str = r#"[{"op": "acc"}, {"op": "convert", "to": "bf16", "x": 0}, {"op": "unary", "f": "abs", "x": 1},
    {"op": "group_reduce", "f": "max", "x": 2, "group": 128}, {"op": "splat", "value": 1e-4},
    {"op": "binary", "f": "max", "lhs": 3, "rhs": 4}, {"op": "splat", "value": 448.0},
    {"op": "binary", "f": "div", "lhs": 6, "rhs": 5}, {"op": "binary", "f": "mul", "lhs": 1, "rhs": 7},
    {"op": "binary", "f": "div", "lhs": 5, "rhs": 6}, {"op": "convert", "to": "f8e4m3", "x": 8}]"#;

/// A block-scaled FP8 GEMM (SA M-major) writing `Q[M,N]` of `q_dtype` and
/// `SQ` of `sq` (dtype, shape) through `epilogue`, its group stores `stores` (JSON).
fn quantizing_manifest(q_dtype: &str, sq: (&str, &str), epilogue: &str, stores: &str) -> Manifest {
    let (sq_dtype, sq_shape) = sq;
    let m = Manifest::from_json_str(&format!(
        r#"{{ "format_version": 1, "kernel_name": "q", "entry": "q", "target": "sm_90a",
  "epilogue": {{ "values": {epilogue}, "group_stores": {stores} }},
  "block": [384, 1, 1], "grid": {{ "rule": "tiles", "block_m": 128, "block_n": 128 }},
  "tensors": [
    {{ "name": "A", "dtype": "f8e4m3", "shape": ["M", "K"], "role": "input" }},
    {{ "name": "SA", "dtype": "f32", "shape": ["KB", "M"], "role": "input" }},
    {{ "name": "B", "dtype": "f8e4m3", "shape": ["N", "K"], "role": "input" }},
    {{ "name": "SB", "dtype": "f32", "shape": ["NB", "KB"], "role": "input" }},
    {{ "name": "Q", "dtype": "{q_dtype}", "shape": ["M", "N"], "role": "output" }},
    {{ "name": "SQ", "dtype": "{sq_dtype}", "shape": {sq_shape}, "role": "output" }} ],
  "params": [ {{ "kind": "ptr", "tensor": "A" }}, {{ "kind": "ptr", "tensor": "SA" }}, {{ "kind": "ptr", "tensor": "B" }},
    {{ "kind": "ptr", "tensor": "SB" }}, {{ "kind": "ptr", "tensor": "Q" }}, {{ "kind": "ptr", "tensor": "SQ" }},
    {{ "kind": "scalar", "ty": "i32", "symbol": "M" }}, {{ "kind": "scalar", "ty": "i32", "symbol": "N" }},
    {{ "kind": "scalar", "ty": "i32", "symbol": "K" }} ] }}"#
    ))
    .unwrap();
    m.validate().unwrap();
    m
}

const SQ_STORE: &str = r#"[{"tensor": "SQ", "x": 9, "group": 128}]"#;

fn quantize_manifest() -> Manifest {
    quantizing_manifest("f8e4m3", ("f32", r#"["NB", "M"]"#), QUANTIZE, SQ_STORE)
}

fn sq_spec(layout: SaLayout) -> GroupStoreSpec {
    GroupStoreSpec { name: "SQ".into(), group: 128, groups: "NB".into(), layout }
}

fn fp8_q() -> OutputSpec {
    OutputSpec { name: "Q".into(), dtype: DType::F8e4m3, group_stores: vec![sq_spec(SaLayout::MMajor)] }
}

#[test]
fn a_quantising_gemm_writes_codes_and_group_stores() {
    let m = quantize_manifest();
    let spec = GemmSpec::from_manifest(&m).unwrap();
    assert_eq!(spec.output, fp8_q());
    assert_eq!((spec.scales, spec.sa_layout, spec.input), (Scales::Block, SaLayout::MMajor, DType::F8e4m3));
    assert!(spec.has_epilogue() && spec.vectors.is_empty() && spec.matrices.is_empty() && spec.gated.is_none());
    // NB is ceil(N/128) for SB and SQ alike.
    let size = GemmSize::new(65, 300, 200);
    let problem = spec.problem(size);
    assert_eq!((problem.get("NB").unwrap(), problem.get("KB").unwrap()), (3, 2));
    // Q as f8e4m3 or raw bytes, SQ by its name; the bindings are what the launch plan wants.
    let ops = |q: TensorBinding| {
        GemmBuffers::new(buf("", DType::U8, 0x1000, 65 * 200), buf("", DType::U8, 0x2000, 300 * 200), q)
            .with_scales(buf("", DType::F32, 0x3000, 2 * 65 * 4), buf("", DType::F32, 0x4000, 3 * 2 * 4))
    };
    let q = buf("C", DType::U8, 0x5000, 65 * 300);
    let sq = buf("SQ", DType::F32, 0x6000, 3 * 65 * 4);
    let bound = spec.bind(size, ops(q.clone()).with_group_stores([sq.clone()])).unwrap();
    let names: Vec<(&str, DType)> = bound.iter().map(|t| (t.name.as_str(), t.dtype)).collect();
    assert_eq!(names, [("A", DType::F8e4m3), ("B", DType::F8e4m3), ("Q", DType::F8e4m3), ("SA", DType::F32), ("SB", DType::F32), ("SQ", DType::F32)]);
    let plan = plan_launch(&m, &problem, &bound, 132).unwrap();
    assert_eq!(plan.grid, [1, 3, 1]);
    assert_eq!(plan.params[5], ParamValue::Ptr(0x6000));
    let err = |b: GemmBuffers| spec.bind(size, b).unwrap_err().to_string();
    assert_eq!(err(ops(q.clone())), "GEMM arguments: the kernel's epilogue writes SQ (f32 M x ceil(N/128)); SQ not given");
    assert_eq!(
        err(ops(q.clone()).with_group_stores([buf("SQ", DType::F32, 0x6000, 3 * 65 * 4 - 1)])),
        "GEMM arguments: SQ is 65x3 f32 (M x ceil(N/128)) for M=65 N=300 K=200: 780 bytes, the buffer has 779"
    );
    assert_eq!(
        err(ops(q.clone()).with_group_stores([buf("SQ", DType::Bf16, 0x6000, 1 << 20)])),
        "GEMM arguments: SQ holds bf16, the kernel writes f32"
    );
    assert_eq!(err(ops(q.clone()).with_group_stores([sq.clone(), sq.clone()])), "GEMM arguments: group store SQ given twice");
    assert_eq!(
        err(ops(q.clone()).with_group_stores([sq.clone(), buf("S2", DType::F32, 0x7000, 1 << 20)])),
        "GEMM arguments: group store `S2` given, the kernel's epilogue writes SQ (f32 M x ceil(N/128))"
    );
    assert_eq!(err(ops(buf("C", DType::Bf16, 0x5000, 1 << 20)).with_group_stores([sq.clone()])), "GEMM arguments: Q holds bf16, the kernel takes f8e4m3");
    assert_eq!(
        err(ops(buf("C", DType::U8, 0x5000, 65 * 300 - 1)).with_group_stores([sq])),
        "GEMM arguments: Q is 65x300 f8e4m3 for M=65 N=300 K=200: 19500 bytes, the buffer has 19499"
    );
    // Row-major scales are [M, G]: the same bytes, another layout.
    let k_major = quantizing_manifest("f8e4m3", ("f32", r#"["M", "NB"]"#), QUANTIZE, SQ_STORE);
    assert_eq!(GemmSpec::from_manifest(&k_major).unwrap().output.group_stores, [sq_spec(SaLayout::KMajor)]);
    // Tensor-parallel GEMMs gather a bf16 C alone.
    assert!(tp::unsupported(&spec).unwrap().contains(r#"writes f8e4m3 Q and group stores ["SQ"]"#));
}

#[test]
fn a_quantising_gemms_outputs_are_checked_when_loaded() {
    let err = |m: Manifest| GemmSpec::from_manifest(&m).unwrap_err().to_string();
    let nb_m = ("f32", r#"["NB", "M"]"#);
    // The codes' type is the last rounding's.
    assert_eq!(
        err(quantizing_manifest("bf16", nb_m, QUANTIZE, SQ_STORE)),
        "not a GEMM artifact: Q is bf16, but the epilogue's last value rounds to f8e4m3: its output is f8e4m3"
    );
    let to_bf16 = QUANTIZE.replace(r#"{"op": "convert", "to": "f8e4m3", "x": 8}"#, r#"{"op": "convert", "to": "bf16", "x": 8}"#);
    assert_eq!(
        err(quantizing_manifest("f8e4m3", nb_m, &to_bf16, SQ_STORE)),
        "not a GEMM artifact: Q is f8e4m3, but the manifest's epilogue ends otherwise: an f8e4m3 output takes an epilogue whose last value rounds to f8e4m3"
    );
    assert_eq!(
        err(quantizing_manifest("f16", nb_m, &to_bf16, SQ_STORE)),
        "not a GEMM artifact: Q is f16, want bf16 (or f8e4m3 from an epilogue rounding to it)"
    );
    // Scales are f32, with a group symbol the call can bind.
    assert_eq!(err(quantizing_manifest("f8e4m3", ("bf16", r#"["NB", "M"]"#), QUANTIZE, SQ_STORE)), "not a GEMM artifact: group store SQ is bf16: want f32");
    assert_eq!(
        err(quantizing_manifest("f8e4m3", ("f32", r#"["KB", "M"]"#), QUANTIZE, SQ_STORE)),
        "not a GEMM artifact: group store SQ's group dimension KB is bound to another size: it needs a symbol of its own for ceil(N/128)"
    );
    let by_64 = QUANTIZE.replace(r#""group": 128"#, r#""group": 64"#);
    assert_eq!(
        err(quantizing_manifest("f8e4m3", nb_m, &by_64, r#"[{"tensor": "SQ", "x": 9, "group": 64}]"#)),
        "not a GEMM artifact: group store SQ's group dimension NB is ceil(N/128), as the block scales bind it, not ceil(N/64)"
    );
    // A symbol of its own binds to ceil(N/64).
    let own = quantizing_manifest("f8e4m3", ("f32", r#"["G", "M"]"#), &by_64, r#"[{"tensor": "SQ", "x": 9, "group": 64}]"#);
    let spec = GemmSpec::from_manifest(&own).unwrap();
    assert_eq!(spec.problem(GemmSize::new(8, 300, 128)).get("G").unwrap(), 5);
    // Without the group store, SQ is one output too many.
    assert_eq!(
        err(quantizing_manifest("f8e4m3", nb_m, QUANTIZE, "[]")),
        r#"not a GEMM artifact: outputs ["Q", "SQ"] besides the epilogue's group stores: want one, C"#
    );
}

#[test]
fn group_store_rows_read_either_layout() {
    // M = 3 rows, N = 300 columns: 3 groups a row, values 10 * row + group.
    let out = GemmSize::new(3, 300, 64);
    let m_major: Vec<f32> = (0..9).map(|x| (10 * (x % 3) + x / 3) as f32).collect();
    let k_major: Vec<f32> = (0..9).map(|x| (10 * (x / 3) + x % 3) as f32).collect();
    for (layout, values) in [(SaLayout::MMajor, m_major), (SaLayout::KMajor, k_major)] {
        let spec = sq_spec(layout);
        assert_eq!((spec.groups_of(300), spec.len(out)), (3, 9));
        assert_eq!(spec.rows(&values, &[2, 0], out), [20.0, 21.0, 22.0, 0.0, 1.0, 2.0], "{layout:?}");
        // A buffer too short reads NaN.
        assert!(spec.rows(&values[..8], &[2], out)[2].is_nan());
    }
}

#[test]
fn the_reference_quantises_each_row_by_its_groups() {
    let e = epilogue(QUANTIZE);
    let e = Epilogue { group_stores: vec![GroupStore { tensor: "SQ".into(), x: 9, group: 128 }], ..e };
    let r = EpilogueReference::new(&e, &[], &[]).unwrap();
    // Two rows of 300 columns: row 0's groups have absmax 127/8, 255/8 and 43/8 (the last 44 columns); row 1 is all 2.
    let acc: Vec<f64> = (0..600).map(|x| if x < 300 { (x % 128) as f64 / 8.0 * if x % 2 == 0 { 1.0 } else { -1.0 } } else { 2.0 }).collect();
    let got = r.rows(&acc, &[5, 6], 300);
    assert_eq!((got.values.len(), got.stores.len(), got.stores[0].len()), (600, 1, 6));
    let amax = [127.0 / 8.0, 127.0 / 8.0, 43.0 / 8.0, 2.0, 2.0, 2.0];
    for (g, &a) in amax.iter().enumerate() {
        assert_eq!(got.stores[0][g], a / 448.0, "group {g}");
    }
    for (x, &v) in got.values.iter().enumerate() {
        let a = amax[(x / 300) * 3 + (x % 300) / 128];
        assert_eq!(v, round_to(DType::F8e4m3, acc[x] * (448.0 / a)), "element {x}");
    }
    // The largest magnitude of a group is 448 exactly; row 1's every code.
    assert_eq!(got.values[127], -448.0);
    assert!(got.values[300..].iter().all(|&v| v == 448.0));
    // Element by element, a reduction is unknown.
    assert!(r.at(1.0, 0, 0).is_nan());
}

#[test]
fn classify_calls_group_reductions_and_fp8_outputs_a_quantisation() {
    let kind = classify(Some(&epilogue(QUANTIZE)), &[], &[]);
    assert_eq!((kind.clone(), kind.name()), (EpilogueKind::Quantize, "quantize"));
    // An FP8 C without scales, or a group reduction into a bf16 C, is one too.
    let fp8 = epilogue(r#"[{"op": "acc"}, {"op": "convert", "to": "f8e4m3", "x": 0}]"#);
    assert_eq!(classify(Some(&fp8), &[], &[]), EpilogueKind::Quantize);
    let normalised = epilogue(
        r#"[{"op": "acc"}, {"op": "group_reduce", "f": "add", "x": 0, "group": 64}, {"op": "binary", "f": "div", "lhs": 0, "rhs": 1},
            {"op": "convert", "to": "bf16", "x": 2}]"#,
    );
    assert_eq!(classify(Some(&normalised), &[], &[]), EpilogueKind::Quantize);
    // The plain BF16 GEMM is still plain.
    assert_eq!(classify(Some(&Epilogue::plain(DType::Bf16)), &[], &[]), EpilogueKind::Plain);
}

#[test]
fn the_kernel_shape_follows_the_groups_and_the_output() {
    let bf16 = OutputSpec::bf16_c();
    assert_eq!(kernel_shape(&epilogue(BIAS_GELU), &bf16), Ok(KernelShape::InPlace));
    assert_eq!(kernel_shape(&epilogue(SWIGLU), &bf16), Ok(KernelShape::Gated { block: 128, parts: 2 }));
    let q = epilogue(QUANTIZE);
    let q = Epilogue { group_stores: vec![GroupStore { tensor: "SQ".into(), x: 9, group: 128 }], ..q };
    assert_eq!(kernel_shape(&q, &fp8_q()), Ok(KernelShape::Rows { group: 128 }));
    // An FP8 C without groups: 256 columns a warp.
    let fp8 = epilogue(r#"[{"op": "acc"}, {"op": "convert", "to": "f8e4m3", "x": 0}]"#);
    assert_eq!(kernel_shape(&fp8, &OutputSpec { dtype: DType::F8e4m3, ..bf16.clone() }), Ok(KernelShape::Rows { group: 256 }));
    let err = |e: &Epilogue, o: &OutputSpec| kernel_shape(e, o).unwrap_err();
    let by = |group: u64| Epilogue { group_stores: vec![GroupStore { tensor: "SQ".into(), x: 9, group }], ..q.clone() };
    assert_eq!(err(&by(64), &fp8_q()), "the epilogue's groups are of 128 and 64 columns: the generated kernel takes one group size");
    let all = |group: u64| {
        let e = epilogue(&QUANTIZE.replace(r#""group": 128"#, &format!(r#""group": {group}"#)));
        Epilogue { group_stores: vec![GroupStore { tensor: "SQ".into(), x: 9, group }], ..e }
    };
    for g in [8, 16, 32, 64, 256] {
        assert_eq!(kernel_shape(&all(g), &fp8_q()), Ok(KernelShape::Rows { group: g }));
    }
    for g in [96, 512, 4, 24] {
        assert_eq!(
            err(&all(g), &fp8_q()),
            format!("groups of {g} columns: the generated kernel takes groups of 8, 16, 32, 64, 128 or 256 (1 to 32 lanes of a warp, 8 columns each)")
        );
    }
    let f16 = OutputSpec { dtype: DType::F16, ..fp8_q() };
    assert_eq!(err(&q, &f16), "the generated kernel writes a bf16 or f8e4m3 C, not f16");
    let gated_fp8 = epilogue(&SWIGLU.replace(r#""to": "bf16""#, r#""to": "f8e4m3""#));
    assert!(err(&gated_fp8, &OutputSpec { dtype: DType::F8e4m3, ..bf16 }).starts_with("the epilogue reads interleaved parts of the product and also"));
    // The generator needs each group store's layout.
    let other = Epilogue { group_stores: vec![GroupStore { tensor: "S2".into(), x: 9, group: 128 }], ..q };
    assert_eq!(cuda_source(&other, &[], &[], &fp8_q()).unwrap_err(), "the epilogue stores to S2, which is not among the kernel's group stores");
}

/// True if every `(`, `[` and `{` of `src` closes in order (outside comments and string and char literals).
fn balanced(src: &str) -> bool {
    let mut open = Vec::new();
    let mut quote: Option<char> = None;
    let code: String = src
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .map(|l| match (l.find("/*"), l.find("*/")) {
            (Some(a), Some(b)) if a < b => format!("{}{}", &l[..a], &l[b + 2..]),
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    for ch in code.chars() {
        match (quote, ch) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(ch),
            (None, '(' | '[' | '{') => open.push(ch),
            (None, ')') if open.pop() != Some('(') => return false,
            (None, ']') if open.pop() != Some('[') => return false,
            (None, '}') if open.pop() != Some('{') => return false,
            _ => {}
        }
    }
    open.is_empty() && quote.is_none()
}

/// The byte offset of `needle` in `src`, which must hold it.
fn at(src: &str, needle: &str) -> usize {
    src.find(needle).unwrap_or_else(|| panic!("missing `{needle}` in\n{src}"))
}

#[test]
fn generated_cuda_quantises_by_units_of_a_row_and_group() {
    let q = Epilogue { group_stores: vec![GroupStore { tensor: "SQ".into(), x: 9, group: 128 }], ..epilogue(QUANTIZE) };
    let src = cuda_source(&q, &[], &[], &fp8_q()).unwrap();
    assert!(balanced(&src), "{src}");
    // A lane's 8 columns: a 16-byte load of bf16 kept as loaded, an 8-byte store of codes.
    at(&src, "struct alignas(16) tilec_u32x4 { unsigned int v[4]; };");
    at(&src, "struct alignas(8) tilec_lane_out { unsigned char v[8]; };");
    at(&src, r#"extern "C" __global__ void tilec_epilogue(unsigned char* __restrict__ c, const unsigned short* __restrict__ p, float* __restrict__ s0, long long m64, long long n64)"#);
    at(&src, "w = *reinterpret_cast<const tilec_u32x4*>(p + (long long)i * n + j0);");
    at(&src, "*reinterpret_cast<tilec_lane_out*>(row) = out;");
    // 16 lanes a unit of 128 columns, two units a warp, each lane two units at once.
    at(&src, "const int part = lane % 16;");
    at(&src, "const long long step = warps * 2 * 2;");
    at(&src, "const int j0 = q * 128 + part * 8;");
    at(&src, "const int valid = i < m ? min(8, n - j0) : 0;");
    // The next units load before these units' reductions; the program in order: the values before the
    // reduction on the lane's columns, the reduction over the lane's columns in the product and across
    // the unit's 16 lanes, the scale once, then the codes.
    let prefetch = at(&src, "next[k] = tilec_load(p, ni, nq * 128 + part * 8, m, n);");
    let x2 = at(&src, "x2[e] = fabsf(x1[e]);");
    let masked = at(&src, "t3[e] = e < valid ? x2[e] : __int_as_float(0xff800000) /* -inf */;");
    let tree = at(&src, "for (int e = 0; e < 8; e += 2 * s) t3[e] = tilec_max(t3[e], t3[e + s]);");
    let warp_max = at(&src, "for (int o = 8; o > 0; o >>= 1) r3 = tilec_max(r3, __shfl_xor_sync(0xffffffffu, r3, o));");
    let x5 = at(&src, "const float x5 = tilec_max(r3, x4);");
    let x8 = at(&src, "x8[e] = x1[e] * x7;");
    let code = at(&src, "const unsigned short pair = tilec_f32x2_to_e4m3x2(x8[e], x8[e + 1]);");
    assert!(prefetch < x2 && x2 < masked && masked < tree && tree < warp_max && warp_max < x5 && x5 < x8 && x8 < code, "{src}");
    for line in [
        "x0[e] = tilec_column(in[k], e);",
        // The product is bf16 already: its rounding to bf16 is itself.
        "x1[e] = x0[e];",
        "const float x7 = x6 / x5;",
        "const float x9 = x5 / x6;",
        // The unit's first lane stores the group's scale, M-major: SQ[NB, M].
        "if (part == 0 && valid > 0) {\n        s0[(long long)q * m + i] = x9;\n      }",
    ] {
        at(&src, line);
    }
    // The scale is one value a unit; the last rounding is the store's own.
    assert!(!src.contains("float x5[") && !src.contains("float x7[") && !src.contains("x10"), "{src}");
    // Row-major scales are [M, G].
    let k_major = OutputSpec { group_stores: vec![sq_spec(SaLayout::KMajor)], ..fp8_q() };
    at(&cuda_source(&q, &[], &[], &k_major).unwrap(), "s0[(long long)i * groups + q] = x9;");
}

#[test]
fn generated_cuda_by_rows_reads_vectors_and_matrices_and_writes_bf16() {
    // x = acc + bias[j]; each 64-column group's sum; x / sum * s[i] + r[i][j] in bf16, the sum stored row-major.
    let e = Epilogue {
        values: epilogue(
            r#"[{"op": "acc"}, {"op": "vector", "tensor": "Bias", "along": "cols"}, {"op": "binary", "f": "add", "lhs": 0, "rhs": 1},
                {"op": "group_reduce", "f": "add", "x": 2, "group": 64}, {"op": "binary", "f": "div", "lhs": 2, "rhs": 3},
                {"op": "vector", "tensor": "S", "along": "rows"}, {"op": "binary", "f": "mul", "lhs": 4, "rhs": 5},
                {"op": "matrix", "tensor": "R"}, {"op": "binary", "f": "add", "lhs": 6, "rhs": 7},
                {"op": "group_reduce", "f": "min", "x": 8, "group": 64}, {"op": "convert", "to": "bf16", "x": 8}]"#,
        )
        .values,
        group_stores: vec![GroupStore { tensor: "T".into(), x: 3, group: 64 }],
    };
    let vectors = [bias(DType::F32, Along::Cols), VectorSpec { name: "S".into(), dtype: DType::Bf16, along: Along::Rows }];
    let t = GroupStoreSpec { name: "T".into(), group: 64, groups: "G".into(), layout: SaLayout::KMajor };
    let out = OutputSpec { name: "C".into(), dtype: DType::Bf16, group_stores: vec![t] };
    let src = cuda_source(&e, &vectors, &[residual(DType::Bf16)], &out).unwrap();
    assert!(balanced(&src), "{src}");
    at(
        &src,
        r#"tilec_epilogue(unsigned short* __restrict__ c, const unsigned short* __restrict__ p, float* __restrict__ s0, const float* __restrict__ v0, const unsigned short* __restrict__ v1, const unsigned short* __restrict__ r0, long long m64, long long n64)"#,
    );
    for line in [
        // 8 lanes a unit of 64 columns, four units a warp.
        "const int part = lane % 8;",
        "const long long step = warps * 4 * 2;",
        "struct alignas(16) tilec_lane_out { unsigned short v[8]; };",
        "const int j = j0 + e;",
        "x1[e] = (e < valid ? v0[j] : 0.0f);",
        "t3[e] = e < valid ? x2[e] : 0.0f;",
        "t3[e] = tilec_add(t3[e], t3[e + s]);",
        "for (int o = 4; o > 0; o >>= 1) r3 = tilec_add(r3, __shfl_xor_sync(0xffffffffu, r3, o));",
        "x4[e] = x2[e] / r3;",
        // A row's vector element is one value a unit.
        "const float x5 = (i < m ? tilec_bf16_to_f32(v1[i]) : 0.0f);",
        "x6[e] = x4[e] * x5;",
        "x7[e] = (e < valid ? tilec_bf16_to_f32(r0[(long long)i * n + j]) : 0.0f);",
        "t9[e] = e < valid ? x8[e] : __int_as_float(0x7f800000) /* inf */;",
        "t9[e] = tilec_min(t9[e], t9[e + s]);",
        "out.v[e] = tilec_f32_to_bf16(x8[e]);",
        "s0[(long long)i * groups + q] = r3;",
    ] {
        at(&src, line);
    }
    // An FP8 C without groups: a warp's 32 lanes a unit of 256 columns, no reduction, no group store.
    let fp8 = epilogue(r#"[{"op": "acc"}, {"op": "splat", "value": 2.0}, {"op": "binary", "f": "mul", "lhs": 0, "rhs": 1}, {"op": "convert", "to": "f8e4m3", "x": 2}]"#);
    let src = cuda_source(&fp8, &[], &[], &OutputSpec { dtype: DType::F8e4m3, ..OutputSpec::bf16_c() }).unwrap();
    assert!(balanced(&src) && !src.contains("__shfl_xor_sync") && !src.contains("part == 0"), "{src}");
    at(&src, "const int part = lane % 32;");
    at(&src, "const unsigned short pair = tilec_f32x2_to_e4m3x2(x2[e], x2[e + 1]);");
}

#[test]
fn the_reference_in_f32_is_the_kernels_arithmetic() {
    let e = Epilogue { group_stores: vec![GroupStore { tensor: "SQ".into(), x: 9, group: 128 }], ..epilogue(QUANTIZE) };
    let r = EpilogueReference::new(&e, &[], &[]).unwrap();
    // Row 0: a group of 128 with absmax 13 holding 9.75 (9.75 * 448 / 13 = 336, halfway between 320 and 352), then a
    // group of 2; row 1 zero. In f64 the tie goes to the even code, 320; the kernel's f32 448 / 13 rounds up, and so the code.
    let mut acc = vec![0.0f32; 2 * 130];
    acc[..130].iter_mut().enumerate().for_each(|(j, a)| *a = [13.0, 9.75, -1.5][j % 3]);
    let got = r.rows_f32(&acc, &[0, 1], 130).unwrap();
    let wide = r.rows(&acc.iter().map(|&x| x as f64).collect::<Vec<_>>(), &[0, 1], 130);
    assert_eq!((got.values[1], wide.values[1]), (352.0, 320.0));
    assert_eq!(got.stores[0], [13.0f32 / 448.0, 13.0 / 448.0, 1e-4 / 448.0, 1e-4 / 448.0].map(|x| x as f64));
    assert!(got.values[130..].iter().all(|&v| v == 0.0));
    // An epilogue without exact f32 values (SwiGLU's exp) has no such reference.
    let gated = epilogue(SWIGLU);
    let e = EpilogueReference::new(&gated, &[], &[]).unwrap().rows_f32(&[0.0; 256], &[0], 256).unwrap_err();
    assert_eq!(
        e.to_string(),
        "the epilogue has no exact f32 reference: value 3 takes exp: its f32 value is the device's approximation, which the host does not reproduce"
    );
}

#[test]
fn exact_inputs_keep_every_partial_sum_exact_in_f32() {
    use crate::check::ExactInputs;
    let pick = |k: usize, scaled: bool| ExactInputs::for_k(k, scaled).map(|x| (x.entry, x.scale_exp));
    // The widest ranges the bound K * entry^2 * 2^(4 scale_exp) <= 2^24 allows.
    assert_eq!(pick(64, true), Ok((4, 2)));
    assert_eq!(pick(4096, true), Ok((4, 2)));
    assert_eq!(pick(4097, true), Ok((4, 1)));
    assert_eq!(pick(1 << 16, true), Ok((4, 1)));
    assert_eq!(pick((1 << 16) + 1, true), Ok((2, 1)));
    assert_eq!(pick(1 << 20, true), Ok((1, 1)));
    assert_eq!(pick((1 << 20) + 1, true), Ok((2, 0)));
    assert_eq!(pick(4096, false), Ok((4, 0)));
    assert_eq!(pick(1 << 24, false), Ok((1, 0)));
    assert_eq!(pick((1 << 24) + 1, true), Err("K=16777217: no inputs make the product exact in f32 (K at most 2^24)".into()));
    // At the bound the sum's magnitude reaches 2^24 units u = 2^-4: K - 1 of the largest terms (4 * 4 * 2^2 * 2^2) and
    // the smallest, u, in any order.
    let widest = ExactInputs { entry: 4, scale_exp: 2 };
    let sum = |k: usize| {
        let mut terms = vec![256.0f32; k - 1];
        terms.push(1.0 / 16.0);
        let forward = terms.iter().fold(0.0f32, |s, &t| s + t);
        let backward = terms.iter().rev().fold(0.0f32, |s, &t| s + t);
        let exact = (k - 1) as f64 * 256.0 + 1.0 / 16.0;
        (forward as f64 == exact, backward as f64 == exact)
    };
    assert!(widest.is_exact(4096) && sum(4096) == (true, true));
    assert!(!widest.is_exact(4097) && sum(4097) == (false, false));
    // Random draws at the bound: K blocks summed raw and then scaled, and term by term, both exact.
    let mut rng = Rng::new(0xE8AC7);
    let k = 4096;
    let (a, b) = (widest.elements(k, &mut rng), widest.elements(k, &mut rng));
    let (sa, sb) = (widest.scales(k / 128, &mut rng), widest.scales(k / 128, &mut rng));
    let term = |p: usize| a[p] as f64 * b[p] as f64 * sa[p / 128] as f64 * sb[p / 128] as f64;
    let exact: f64 = (0..k).map(term).sum();
    let by_terms = (0..k).fold(0.0f32, |s, p| s + term(p) as f32);
    let by_blocks = (0..k / 128).fold(0.0f32, |s, q| {
        let raw = (128 * q..128 * (q + 1)).fold(0.0f32, |r, p| r + a[p] * b[p]);
        s + raw * sa[q] * sb[q]
    });
    assert_eq!((by_terms as f64, by_blocks as f64), (exact, exact));
    // Elements are the integers -4..=4, zero and both ends among them; scales 2^-2..2^2, each exact in e4m3 and bf16.
    let many = widest.elements(10_000, &mut rng);
    for v in [-4.0, 0.0, 4.0] {
        assert!(many.contains(&v), "{v} never drawn");
    }
    assert!(many.iter().all(|&v| v.fract() == 0.0 && v.abs() <= 4.0 && crate::check::e4m3_to_f32(crate::check::f32_to_e4m3(v)) == v));
    let scales = widest.scales(1000, &mut rng);
    assert!(scales.iter().all(|&s| [0.25, 0.5, 1.0, 2.0, 4.0].contains(&s)) && scales.contains(&0.25) && scales.contains(&4.0));
    assert!(ExactInputs { entry: 4, scale_exp: 0 }.scales(10, &mut rng).iter().all(|&s| s == 1.0));
}

/// An f8e4m3 `Q` with `SQ` holding one scale a row and group of 2 columns, row-major.
fn q_by_pairs() -> OutputSpec {
    let sq = GroupStoreSpec { name: "SQ".into(), group: 2, groups: "G".into(), layout: SaLayout::KMajor };
    OutputSpec { name: "Q".into(), dtype: DType::F8e4m3, group_stores: vec![sq] }
}

#[test]
fn quantised_outputs_are_checked_exactly_or_by_their_decoded_values() {
    use crate::check::f32_to_e4m3;
    use crate::quantize::{OutputCheck, StoreCheck, STORE_TOLERANCE};
    // Two rows of 4 codes, a scale for each pair of columns.
    let reference = EpilogueRows { values: vec![448.0, -0.5, 1.0, 0.0, 2.0, -2.0, 0.0, 96.0], stores: vec![vec![0.25, 2.0, 0.5, 3.0]] };
    let codes = |v: &[f64]| v.iter().map(|&x| f32_to_e4m3(x as f32)).collect::<Vec<u8>>();
    let c = codes(&reference.values);
    let sq = vec![vec![0.25f32, 2.0, 0.5, 3.0]];
    let check = |c: &[u8], sq: &[Vec<f32>]| OutputCheck::new(&q_by_pairs(), 4, c, sq, &reference).unwrap();
    let same = check(&c, &sq);
    assert!(same.pass_exact() && same.pass(1e-2) && same.err == 0.0);
    assert_eq!(same.summary(), "codes 100.00% equal; SQ 100.00% equal, worst 0.00e0");
    // -0 is 0: the sign of an exactly zero sum is the order of summation's.
    let mut negative_zero = c.clone();
    negative_zero[3] = 0x80;
    assert!(check(&negative_zero, &sq).pass_exact());
    // A small code one step off fails the exact policy; its decoded value is within the threshold.
    let mut step = c.clone();
    step[2] -= 1;
    let stepped = check(&step, &sq);
    assert!(!stepped.pass_exact() && stepped.pass(1e-2) && stepped.c.equal == 7);
    assert!(stepped.err > 0.0 && stepped.err < 1e-2, "{}", stepped.err);
    // A scale one f32 unit off likewise; one 2^-6 below (of the larger, the reference's) passes random inputs' policy,
    // beyond fails it.
    let scaled = |r: f64| vec![vec![0.25f32, 2.0, (0.5 * (1.0 - r)) as f32, 3.0]];
    let ulp = check(&c, &[vec![0.25f32, 2.0, f32::from_bits(0.5f32.to_bits() + 1), 3.0]]);
    assert!(!ulp.pass_exact() && ulp.pass(1e-2));
    assert!(check(&c, &scaled(STORE_TOLERANCE * 0.99)).pass(1e-2) && !check(&c, &scaled(STORE_TOLERANCE * 1.01)).pass(1e-2));
    // Codes are compared by their decoded values: a group's codes halved with its scale doubled is the same output.
    let mut halved = c.clone();
    halved[4..6].copy_from_slice(&codes(&[1.0, -1.0]));
    let rescaled = check(&halved, &[vec![0.25f32, 2.0, 1.0, 3.0]]);
    assert_eq!((rescaled.err, rescaled.c.equal), (0.0, 6));
    assert!(!rescaled.pass(1e-2), "the scale itself is off by 2x");
    // A code scaled wrongly moves the decoded values by far more than the threshold.
    let mut wrong = c.clone();
    wrong[7] = f32_to_e4m3(48.0);
    assert!(check(&wrong, &sq).err > 0.1 && !check(&wrong, &sq).pass(1e-2));
    // Codes are held to e4m3's half step, however tight the threshold for other outputs.
    assert_eq!((same.threshold(1e-2), same.threshold(0.1)), (crate::quantize::CODE_TOLERANCE, 0.1));
    // Poison: a NaN code or scale fails both.
    let mut poisoned = c.clone();
    poisoned[2] = 0xFF;
    let p = check(&poisoned, &sq);
    assert!(!p.pass_exact() && !p.pass(1e-2) && p.err.is_nan());
    assert_eq!(p.summary(), "codes 87.50% equal, 1 NaN; SQ 100.00% equal, worst 0.00e0");
    let nan_scale = check(&c, &[vec![0.25f32, f32::NAN, 0.5, 3.0]]);
    assert!(!nan_scale.pass_exact() && !nan_scale.pass(1e-2) && nan_scale.stores[0].worst.is_nan());
    // A store's worst distance is relative to the larger value; NaN anywhere stays NaN.
    let s = StoreCheck::compare("SQ", &[1.0, 3.0, f32::NAN, 2.0], &[1.0, 2.0, 1.0, 1.0]).unwrap();
    assert!(s.worst.is_nan() && s.equal == 1 && !s.within_tolerance() && !s.all_equal());
    assert_eq!(StoreCheck::compare("SQ", &[3.0], &[2.0]).unwrap().worst, 1.0 / 3.0);
    assert_eq!(StoreCheck::compare("SQ", &[3.0], &[]).unwrap_err(), "1 values of SQ to compare with the reference's 0");
    // A bf16 C is compared by its values, C named as such.
    let bf16_c = OutputSpec { dtype: DType::Bf16, ..q_by_pairs() };
    let bytes: Vec<u8> = reference.values.iter().flat_map(|&x| half::bf16::from_f64(x).to_le_bytes()).collect();
    let bf = OutputCheck::new(&bf16_c, 4, &bytes, &sq, &reference).unwrap();
    assert!(!bf.codes && bf.pass_exact() && bf.pass(1e-2));
    assert!(bf.summary().starts_with("C 100.00% equal;"));
    // Sizes must agree, C must be a type the check reads, and its scales one store.
    let err = |output: &OutputSpec, cols: usize, c: &[u8], sq: &[Vec<f32>]| OutputCheck::new(output, cols, c, sq, &reference).unwrap_err();
    assert_eq!(err(&q_by_pairs(), 4, &c[..7], &sq), "7 values of C and 1 group stores to compare with the reference's 8 and 1");
    assert_eq!(err(&q_by_pairs(), 3, &c, &sq), "8 values of C are not rows of 3 columns");
    assert_eq!(err(&q_by_pairs(), 4, &c, &[vec![1.0]]), "1 values of SQ to compare with the reference's 4");
    assert_eq!(err(&fp8_q(), 4, &c, &sq), "the reference has 4 values of SQ for 2 rows of 2 groups");
    assert_eq!(err(&OutputSpec { dtype: DType::F16, ..q_by_pairs() }, 4, &c, &sq), "C is f16: the check reads bf16 and f8e4m3");
    let mut two = q_by_pairs();
    two.group_stores.push(GroupStoreSpec { name: "T".into(), ..two.group_stores[0].clone() });
    let twice = EpilogueRows { stores: vec![reference.stores[0].clone(); 2], ..reference.clone() };
    assert_eq!(
        OutputCheck::new(&two, 4, &c, &[sq[0].clone(), sq[0].clone()], &twice).unwrap_err(),
        "C is f8e4m3 with 2 group stores: the check decodes its codes with one, their scales"
    );
}

/// A random bf16 product `m x n`, row `i`'s values uniform in
/// `[-2^e, 2^e)` with `e` from -10 to 9 by row, and row 0 all zeros (its
/// scales clamped): as bf16 bits and widened.
fn random_product(m: usize, n: usize, rng: &mut Rng) -> (Vec<half::bf16>, Vec<f64>) {
    let bits: Vec<half::bf16> = (0..m * n)
        .map(|x| if x < n { 0.0 } else { rng.uniform() * 2f32.powi((x / n % 20) as i32 - 10) })
        .map(half::bf16::from_f32)
        .collect();
    let widened = bits.iter().map(|x| x.to_f64()).collect();
    (bits, widened)
}

/// The rows kernel, compiled with NVRTC and run where libcuda is found
/// (elsewhere a counted skip), against the reference on the same bf16
/// product: the quantisation on odd shapes (N not a multiple of the group,
/// of 4, of 8; one row; a row of zeros) every code and scale equal to the
/// epilogue evaluated in f32, and a bf16 C reading vectors and a residual
/// with a row-major group store (a sum: within a tolerance of the f64
/// reference).
#[test]
fn the_rows_kernel_matches_the_reference_on_the_gpu() {
    use crate::quantize::OutputCheck;
    if !cuda_available() {
        tilec_cli::report_skip("tilec-runtime rows kernel", &format!("libcuda not found ({})", ensure_cuda().unwrap_err()));
        return;
    }
    let gpu = Gpu::new(0).expect("CUDA present but device init failed");
    let s = &gpu.stream;
    let q = Epilogue { group_stores: vec![GroupStore { tensor: "SQ".into(), x: 9, group: 128 }], ..epilogue(QUANTIZE) };
    let kernel = ElementwiseKernel::new(&gpu, &q, &[], &[], &fp8_q()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(kernel.shape(), KernelShape::Rows { group: 128 });
    let mut rng = Rng::new(0x5EED);
    for (m, n) in [(129, 257), (64, 128), (1, 1000), (300, 7168), (2, 1)] {
        let (bits, product) = random_product(m, n, &mut rng);
        let p = s.clone_htod(&bits).unwrap();
        let mut c = unsafe { s.alloc::<u8>(m * n) }.unwrap();
        let groups = n.div_ceil(128);
        let mut sq = unsafe { s.alloc::<f32>(m * groups) }.unwrap();
        gpu.poison8(&mut c, 0xFF).unwrap();
        gpu.poison8(&mut sq, 0xFF).unwrap();
        kernel.launch_rows(&gpu, gpu.addr(&c), gpu.addr(&p), &[gpu.addr(&sq)], &[], m as u64, n as u64).unwrap();
        gpu.sync("rows kernel").unwrap();
        let rows: Vec<usize> = (0..m).collect();
        let product: Vec<f32> = product.iter().map(|&x| x as f32).collect();
        let want = EpilogueReference::new(&q, &[], &[]).unwrap().rows_f32(&product, &rows, n).unwrap();
        let out = GemmSize::new(m as u64, n as u64, 1);
        let scales = sq_spec(SaLayout::MMajor).rows(&s.clone_dtoh(&sq).unwrap(), &rows, out);
        let checked = OutputCheck::new(&fp8_q(), n, &s.clone_dtoh(&c).unwrap(), &[scales], &want).unwrap();
        assert!(checked.pass_exact(), "{m}x{n}: {}", checked.summary());
    }
    // bf16 C = (acc + bias[j]) / (its 64-column group's sum) * s[i] + r[i][j], the sums stored row-major.
    let e = Epilogue {
        values: epilogue(
            r#"[{"op": "acc"}, {"op": "vector", "tensor": "Bias", "along": "cols"}, {"op": "binary", "f": "add", "lhs": 0, "rhs": 1},
                {"op": "group_reduce", "f": "add", "x": 2, "group": 64}, {"op": "binary", "f": "div", "lhs": 2, "rhs": 3},
                {"op": "vector", "tensor": "S", "along": "rows"}, {"op": "binary", "f": "mul", "lhs": 4, "rhs": 5},
                {"op": "matrix", "tensor": "R"}, {"op": "binary", "f": "add", "lhs": 6, "rhs": 7}, {"op": "convert", "to": "bf16", "x": 8}]"#,
        )
        .values,
        group_stores: vec![GroupStore { tensor: "T".into(), x: 3, group: 64 }],
    };
    let specs = [bias(DType::F32, Along::Cols), VectorSpec { name: "S".into(), dtype: DType::Bf16, along: Along::Rows }];
    let t = GroupStoreSpec { name: "T".into(), group: 64, groups: "G".into(), layout: SaLayout::KMajor };
    let output = OutputSpec { name: "C".into(), dtype: DType::Bf16, group_stores: vec![t.clone()] };
    let kernel = ElementwiseKernel::new(&gpu, &e, &specs, &[residual(DType::Bf16)], &output).unwrap_or_else(|e| panic!("{e}"));
    let (m, n) = (33, 199);
    let size = GemmSize::new(m as u64, n as u64, 1);
    // Positive products and biases keep each group's sum away from zero.
    let bits: Vec<half::bf16> = (0..m * n).map(|_| half::bf16::from_f32(1.5 + rng.uniform())).collect();
    let product: Vec<f64> = bits.iter().map(|x| x.to_f64()).collect();
    let positive: Vec<f64> = (0..n).map(|_| rng.uniform().abs() as f64).collect();
    let vectors = [HostVector::from_values(&specs[0], &positive), HostVector::random(&specs[1], m, &mut rng)];
    let matrices = random_matrices(&[residual(DType::Bf16)], size, &mut rng);
    let (_vs, vb) = upload_vectors(&gpu, &vectors).unwrap();
    let (_ms, mb) = upload_matrices(&gpu, &matrices).unwrap();
    let operands: Vec<u64> = vb.iter().chain(&mb).map(|b| b.addr).collect();
    let p = s.clone_htod(&bits).unwrap();
    let mut c = unsafe { s.alloc::<u8>(m * n * 2) }.unwrap();
    let mut sums = unsafe { s.alloc::<f32>(m * n.div_ceil(64)) }.unwrap();
    gpu.poison8(&mut c, 0xFF).unwrap();
    gpu.poison8(&mut sums, 0xFF).unwrap();
    kernel.launch_rows(&gpu, gpu.addr(&c), gpu.addr(&p), &[gpu.addr(&sums)], &operands, m as u64, n as u64).unwrap();
    gpu.sync("rows kernel").unwrap();
    let rows: Vec<usize> = (0..m).collect();
    let want = EpilogueReference::new(&e, &vectors, &matrices).unwrap().rows(&product, &rows, n);
    let sums = t.rows(&s.clone_dtoh(&sums).unwrap(), &rows, size);
    let checked = OutputCheck::new(&output, n, &s.clone_dtoh(&c).unwrap(), &[sums], &want).unwrap();
    assert!(checked.err < 1e-2 && checked.stores[0].worst < 1e-5, "{checked:?}");
    // The launches take their own shapes only.
    assert!(kernel.launch(&gpu, 0, &operands, 1, 1).unwrap_err().to_string().contains("launch_rows"));
    // The element-wise kernel in place, clamping with the prelude's max and min: min(max(acc, 0.25), bias[j]).
    let clamp = epilogue(
        r#"[{"op": "acc"}, {"op": "splat", "value": 0.25}, {"op": "binary", "f": "max", "lhs": 0, "rhs": 1},
            {"op": "vector", "tensor": "Bias", "along": "cols"}, {"op": "binary", "f": "min", "lhs": 2, "rhs": 3},
            {"op": "convert", "to": "bf16", "x": 4}]"#,
    );
    let cols = [bias(DType::Bf16, Along::Cols)];
    let kernel = ElementwiseKernel::new(&gpu, &clamp, &cols, &[], &OutputSpec::bf16_c()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(kernel.shape(), KernelShape::InPlace);
    let (m, n) = (17, 203);
    let (bits, product) = random_product(m, n, &mut rng);
    let biases = [HostVector::random(&cols[0], n, &mut rng)];
    let (_bs, bb) = upload_vectors(&gpu, &biases).unwrap();
    let c = s.clone_htod(&bits).unwrap();
    kernel.launch(&gpu, gpu.addr(&c), &[bb[0].addr], m as u64, n as u64).unwrap();
    gpu.sync("element-wise kernel").unwrap();
    let rows: Vec<usize> = (0..m).collect();
    let want = EpilogueReference::new(&clamp, &biases, &[]).unwrap().rows(&product, &rows, n);
    let got: Vec<f64> = s.clone_dtoh(&c).unwrap().iter().map(|x| x.to_f64()).collect();
    assert_eq!(got, want.values, "min and max of values exact in bf16 are exact");
}

/// The gated kernel, compiled with NVRTC and run where libcuda is found
/// (elsewhere a counted skip), reading each part's product from a buffer
/// of its own, as the baseline's GEMM of each part writes it, against the
/// reference on the interleaved product: SwiGLU plus the accumulator (the
/// interleaved product's column j, read from the part holding it).
#[test]
fn the_gated_kernel_reads_the_parts_products_on_the_gpu() {
    if !cuda_available() {
        tilec_cli::report_skip("tilec-runtime gated kernel", &format!("libcuda not found ({})", ensure_cuda().unwrap_err()));
        return;
    }
    let gpu = Gpu::new(0).expect("CUDA present but device init failed");
    let s = &gpu.stream;
    let e = epilogue(&SWIGLU.replace(
        r#"{"op": "convert", "to": "bf16", "x": 7}"#,
        r#"{"op": "acc"}, {"op": "binary", "f": "add", "lhs": 7, "rhs": 8}, {"op": "convert", "to": "bf16", "x": 9}"#,
    ));
    let kernel = ElementwiseKernel::new(&gpu, &e, &[], &[], &OutputSpec::bf16_c()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(kernel.shape(), KernelShape::Gated { block: 128, parts: 2 });
    let parts = AccParts { block: 128, parts: 2, cols: "H".into() };
    let mut rng = Rng::new(0x6A7E);
    for (m, n) in [(3, 256), (65, 1024), (1, 512)] {
        let (bits, product) = random_product(m, n, &mut rng);
        // Part q's product: each row's columns of that part, as the GEMM of the part's weights writes it.
        let products: Vec<_> = (0..2)
            .map(|q| s.clone_htod(&bits.chunks(n).flat_map(|row| parts.part_rows(row, 1, 1, q).unwrap()).collect::<Vec<_>>()).unwrap())
            .collect();
        let h = n / 2;
        let mut c = unsafe { s.alloc::<half::bf16>(m * h) }.unwrap();
        gpu.poison16(&mut c, crate::check::POISON_BF16).unwrap();
        let addrs: Vec<u64> = products.iter().map(|p| gpu.addr(p)).collect();
        kernel.launch_gated(&gpu, gpu.addr(&c), &addrs, &[], m as u64, h as u64).unwrap();
        gpu.sync("gated kernel").unwrap();
        let rows: Vec<usize> = (0..m).collect();
        let want = EpilogueReference::new(&e, &[], &[]).unwrap().rows(&product, &rows, n);
        let got: Vec<f64> = s.clone_dtoh(&c).unwrap().iter().map(|x| x.to_f64()).collect();
        let err = crate::check::rel_frobenius(&got, &want.values);
        assert!(err < 1e-2, "{m}x{n}: {err}");
    }
    let one = kernel.launch_gated(&gpu, 0, &[0], &[], 1, 128).unwrap_err().to_string();
    assert!(one.contains("the epilogue kernel reads 2 parts' products, 1 given"), "{one}");
}
