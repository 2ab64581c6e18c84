use super::*;

const EXAMPLE: &str = r#"{
  "format_version": 1,
  "kernel_name": "gemm_bf16_tn_128x128x64",
  "entry": "gemm_kernel",
  "target": "sm_90a",
  "block": [384, 1, 1],
  "cluster": [2, 1, 1],
  "grid": { "rule": "tiles", "block_m": 128, "block_n": 128, "group_m": 8 },
  "dynamic_smem_bytes": 196608,
  "tensors": [
    { "name": "A", "dtype": "bf16", "shape": ["M", "K"], "role": "input" },
    { "name": "B", "dtype": "bf16", "shape": ["N", "K"], "role": "input" },
    { "name": "C", "dtype": "bf16", "shape": ["M", "N"], "role": "output" }
  ],
  "params": [
    { "kind": "tma", "tensor": "A", "dtype": "bf16", "box_dims": [128, 64], "swizzle": "128B",
      "l2_promotion": "256B", "oob_fill": "zero", "interleave": "none" },
    { "kind": "tma", "tensor": "B", "dtype": "bf16", "box_dims": [128, 64], "swizzle": "128B" },
    { "kind": "ptr", "tensor": "C" },
    { "kind": "scalar", "ty": "i32", "symbol": "M" },
    { "kind": "scalar", "ty": "i32", "symbol": "N" },
    { "kind": "scalar", "ty": "i32", "symbol": "K" },
    { "kind": "scalar", "ty": "i32", "literal": 8 }
  ]
}"#;

fn example() -> Manifest {
    let m = Manifest::from_json_str(EXAMPLE).unwrap();
    m.validate().unwrap();
    m
}

fn err_of(m: &Manifest) -> Invalid {
    m.validate().expect_err("manifest should be invalid")
}

#[test]
fn parses_example_with_defaults() {
    let m = example();
    assert_eq!(m.cluster_size(), 2);
    assert_eq!(m.grid, GridRule::Tiles { block_m: 128, block_n: 128, group_m: Some(8), splits: None });
    match &m.params[1] {
        Param::Tma(t) => {
            assert_eq!(t.l2_promotion, L2Promotion::B128);
            assert_eq!(t.oob_fill, OobFill::Zero);
            assert_eq!(t.interleave, Interleave::None);
            assert_eq!(t.swizzle, Swizzle::B128);
        }
        p => panic!("{p:?}"),
    }
    assert_eq!(m.params[3], Param::Scalar { ty: ScalarType::I32, source: ScalarSource::Symbol("M".into()) });
    assert_eq!(m.params[6], Param::Scalar { ty: ScalarType::I32, source: ScalarSource::Literal(8.0) });
    assert_eq!(m.symbols(), vec!["K", "M", "N"]);
    // 128 + 128 + 8 + 4*4
    assert_eq!(m.param_bytes(), 280);
}

#[test]
fn json_round_trip() {
    let m = example();
    let text = m.to_json_string();
    let back = Manifest::from_json_str(&text).unwrap();
    assert_eq!(m, back);
}

#[test]
fn sms_grid_rule_and_default_cluster() {
    let text = EXAMPLE
        .replace(r#""grid": { "rule": "tiles", "block_m": 128, "block_n": 128, "group_m": 8 }"#, r#""grid": { "rule": "sms" }"#)
        .replace(r#""cluster": [2, 1, 1],"#, "");
    let m = Manifest::from_json_str(&text).unwrap();
    m.validate().unwrap();
    assert_eq!(m.grid, GridRule::Sms { ctas_per_sm: 1, wave_tile: None });
    assert_eq!(m.cluster, [1, 1, 1]);
    // The wave tile round-trips, and a zero in it is named.
    let with_tile = text.replace(r#"{ "rule": "sms" }"#, r#"{ "rule": "sms", "wave_tile": [128, 256] }"#);
    let m = Manifest::from_json_str(&with_tile).unwrap();
    m.validate().unwrap();
    assert_eq!(m.grid, GridRule::Sms { ctas_per_sm: 1, wave_tile: Some([128, 256]) });
    assert_eq!(Manifest::from_json_str(&m.to_json_string()).unwrap(), m);
    let zero = text.replace(r#"{ "rule": "sms" }"#, r#"{ "rule": "sms", "wave_tile": [0, 256] }"#);
    let err = Manifest::from_json_str(&zero).unwrap().validate().unwrap_err();
    assert_eq!(err.field, "grid.wave_tile[0]");
}

#[test]
fn dir_round_trip_and_entry_check() {
    let dir = std::env::temp_dir().join(format!("tilec-artifact-test-{}", std::process::id()));
    let m = example();
    let ptx = ".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry gemm_kernel(\n.param .u64 p)\n{ ret; }\n";
    Artifact::write(&dir, &m, ptx).unwrap();
    let a = Artifact::load(&dir).unwrap();
    assert_eq!(a.manifest, m);
    assert_eq!(a.ptx, ptx);

    // The entry must be in the PTX.
    std::fs::write(dir.join(PTX_FILE), ptx.replace("gemm_kernel(", "gemm_kernel2(")).unwrap();
    match Artifact::load(&dir) {
        Err(ArtifactError::EntryNotInPtx { entry, path }) => {
            assert_eq!(entry, "gemm_kernel");
            assert!(path.ends_with(PTX_FILE));
        }
        r => panic!("{r:?}"),
    }
    // Malformed JSON names the manifest file and the line.
    std::fs::write(dir.join(MANIFEST_FILE), "{ \"format_version\": 1,\n oops }").unwrap();
    let e = Artifact::load(&dir).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, ArtifactError::Json { .. }), "{msg}");
    assert!(msg.contains("manifest.json") && msg.contains("line 2"), "{msg}");
    // Missing directory: an I/O error naming the file.
    let e = Artifact::load(dir.join("nope")).unwrap_err();
    assert!(matches!(e, ArtifactError::Io { .. }));
    assert!(e.to_string().contains("nope/manifest.json"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn invalid_manifest_error_names_file_and_field() {
    let text = EXAMPLE.replace(r#""box_dims": [128, 64], "swizzle": "128B","#, r#""box_dims": [128, 300], "swizzle": "128B","#);
    let e = parse_manifest(&text, Path::new("x/manifest.json")).unwrap_err();
    let msg = e.to_string();
    assert_eq!(msg, "x/manifest.json: invalid manifest: params[0].box_dims[1]: box dim 300 is outside 1..=256");
    assert_eq!(e.invalid().unwrap().error, ValidationError::BoxDimOutOfRange { value: 300 });
}

#[test]
fn unknown_field_and_bad_enum_are_json_errors() {
    let text = EXAMPLE.replace(r#""target": "sm_90a","#, r#""target": "sm_90a", "extra": 1,"#);
    assert!(Manifest::from_json_str(&text).unwrap_err().to_string().contains("unknown field `extra`"));
    let text = EXAMPLE.replace(r#""swizzle": "128B","#, r#""swizzle": "16B","#);
    assert!(Manifest::from_json_str(&text).is_err());
    let text = EXAMPLE.replace(r#""interleave": "none""#, r#""interleave": "32B""#);
    assert!(Manifest::from_json_str(&text).is_err());
}

fn tma_mut(m: &mut Manifest, i: usize) -> &mut TmaParam {
    match &mut m.params[i] {
        Param::Tma(t) => t,
        _ => panic!(),
    }
}

#[test]
fn validation_errors() {
    let mut m = example();
    m.format_version = 2;
    assert_eq!(err_of(&m).error, ValidationError::UnsupportedVersion { found: 2, expected: 1 });

    let mut m = example();
    m.entry = "9bad".into();
    assert_eq!(err_of(&m).field, "entry");

    // A flat descriptor's box is one unswizzled run.
    let mut m = example();
    tma_mut(&mut m, 0).flat = true;
    let swizzle = tma_mut(&mut m, 0).swizzle;
    let rank = tma_mut(&mut m, 0).box_dims.len();
    assert_eq!(err_of(&m).error, ValidationError::FlatBoxNotOneRun { box_rank: rank, swizzle });
    tma_mut(&mut m, 0).box_dims = vec![64];
    tma_mut(&mut m, 0).swizzle = Swizzle::None;
    m.validate().unwrap();

    // A tail descriptor fits its rows.
    let mut m = example();
    tma_mut(&mut m, 0).tail = true;
    let e = err_of(&m);
    assert_eq!((e.field.as_str(), e.error), ("params[0].tail", ValidationError::TailWithoutFitRows));
    tma_mut(&mut m, 0).fit_rows = true;
    m.validate().unwrap();

    let mut m = example();
    m.block = [1024, 2, 1];
    assert_eq!(err_of(&m).error, ValidationError::TooManyThreads { threads: 2048 });

    let mut m = example();
    m.block[1] = 0;
    assert_eq!(err_of(&m).field, "block[1]");

    let mut m = example();
    m.cluster = [4, 4, 1];
    assert_eq!(err_of(&m).error, ValidationError::ClusterTooLarge { size: 16, max: 8 });

    let mut m = example();
    m.dynamic_smem_bytes = 232_449;
    assert_eq!(err_of(&m).field, "dynamic_smem_bytes");

    let mut m = example();
    m.grid = GridRule::Tiles { block_m: 0, block_n: 128, group_m: None, splits: None };
    assert_eq!(err_of(&m).field, "grid.block_m");

    let mut m = example();
    m.grid = GridRule::Tiles { block_m: 128, block_n: 128, group_m: None, splits: Some(1) };
    assert_eq!((err_of(&m).field.as_str(), err_of(&m).error), ("grid.splits", ValidationError::TooFewSplits(1)));

    let mut m = example();
    m.params.push(Param::Workspace { bytes_per_tile: 0 });
    assert_eq!(err_of(&m).error, ValidationError::BadWorkspace);
    m.params.pop();
    m.params.push(Param::Workspace { bytes_per_tile: 16 });
    m.validate().expect("one workspace of 16 bytes a tile");
    m.params.push(Param::Workspace { bytes_per_tile: 16 });
    assert_eq!(err_of(&m).error, ValidationError::BadWorkspace);

    let mut m = example();
    m.tensors[1].name = "A".into();
    assert_eq!(err_of(&m).error, ValidationError::DuplicateTensor("A".into()));

    let mut m = example();
    m.tensors[0].shape = vec![];
    assert_eq!(err_of(&m).error, ValidationError::BadRank(0));

    let mut m = example();
    m.tensors[0].shape[0] = Dim::Const(0);
    assert_eq!(err_of(&m).field, "tensors[0].shape[0]");

    let mut m = example();
    m.tensors[2].role = Role::Input;
    assert_eq!(err_of(&m).error, ValidationError::NoOutput);

    let mut m = example();
    tma_mut(&mut m, 1).tensor = "Q".into();
    let e = err_of(&m);
    assert_eq!((e.field.as_str(), e.error), ("params[1].tensor", ValidationError::UnknownTensor("Q".into())));

    let mut m = example();
    m.params[2] = Param::Ptr { tensor: "D".into() };
    assert_eq!(err_of(&m).error, ValidationError::UnknownTensor("D".into()));

    let mut m = example();
    tma_mut(&mut m, 0).dtype = DType::F16;
    assert_eq!(
        err_of(&m).error,
        ValidationError::DtypeMismatch { tensor: "A".into(), param: DType::F16, declared: DType::Bf16 }
    );

    let mut m = example();
    tma_mut(&mut m, 0).box_dims = vec![64];
    assert_eq!(
        err_of(&m).error,
        ValidationError::BoxRankMismatch { tensor: "A".into(), box_rank: 1, tensor_rank: 2 }
    );

    let mut m = example();
    tma_mut(&mut m, 0).box_dims[0] = 257;
    assert_eq!(err_of(&m).error, ValidationError::BoxDimOutOfRange { value: 257 });

    // 128 bf16 = 256 bytes > 128-byte swizzle span
    let mut m = example();
    tma_mut(&mut m, 0).box_dims[1] = 128;
    let e = err_of(&m);
    assert_eq!(e.field, "params[0].box_dims[1]");
    assert_eq!(e.error, ValidationError::InnerBoxExceedsSwizzle { bytes: 256, span: 128 });
    // ...but fine without swizzle
    tma_mut(&mut m, 0).swizzle = Swizzle::None;
    m.validate().unwrap();
    // 64B swizzle span with 64 bf16 = 128 bytes
    let mut m = example();
    tma_mut(&mut m, 0).swizzle = Swizzle::B64;
    assert_eq!(err_of(&m).error, ValidationError::InnerBoxExceedsSwizzle { bytes: 128, span: 64 });

    let mut m = example();
    tma_mut(&mut m, 0).box_dims[1] = 4; // 8 bytes
    assert_eq!(err_of(&m).error, ValidationError::InnerBoxNotMultipleOf16 { bytes: 8 });

    let mut m = example();
    m.params[3] = Param::Scalar { ty: ScalarType::I32, source: ScalarSource::Symbol("L".into()) };
    let e = err_of(&m);
    assert_eq!((e.field.as_str(), e.error), ("params[3].symbol", ValidationError::UnknownSymbol("L".into())));

    let mut m = example();
    m.params[6] = Param::Scalar { ty: ScalarType::I32, source: ScalarSource::Literal(3e9) };
    assert_eq!(err_of(&m).field, "params[6].literal");
    m.params[6] = Param::Scalar { ty: ScalarType::U32, source: ScalarSource::Literal(1.5) };
    assert_eq!(err_of(&m).field, "params[6].literal");

    let mut m = example();
    m.params.remove(2);
    assert_eq!(err_of(&m).error, ValidationError::UnusedTensor("C".into()));

    let mut m = example();
    m.tensors[0].dtype = DType::I32;
    tma_mut(&mut m, 0).dtype = DType::I32;
    tma_mut(&mut m, 0).box_dims[1] = 32; // 128 bytes
    tma_mut(&mut m, 0).oob_fill = OobFill::Nan;
    assert_eq!(err_of(&m).error, ValidationError::NanFillOnInteger { tensor: "A".into(), dtype: DType::I32 });

    let mut m = example();
    for _ in 0..300 {
        m.params.push(m.params[0].clone());
    }
    assert!(matches!(err_of(&m).error, ValidationError::ParamsTooLarge { .. }));
}

#[test]
fn entry_matching_is_exact() {
    let ptx = ".visible .entry foo_bar(\n";
    assert!(ptx_has_entry(ptx, "foo_bar"));
    assert!(!ptx_has_entry(ptx, "foo"));
    assert!(ptx_has_entry(".entry  k (", "k"));
}

#[test]
fn a_manifest_without_a_gpu_loads_and_stays_without() {
    let m = example();
    assert_eq!(m.gpu, None);
    assert!(!m.to_json_string().contains("\"gpu\""));
}

#[test]
fn the_gpu_is_a_known_target_that_runs_the_manifests_target() {
    let text = EXAMPLE.replace(r#""target": "sm_90a","#, r#""target": "sm_90a", "gpu": "h100","#);
    let m = Manifest::from_json_str(&text).unwrap();
    m.validate().unwrap();
    assert_eq!(m.gpu.as_deref(), Some("h100"));
    assert_eq!(Manifest::from_json_str(&m.to_json_string()).unwrap(), m);

    let mut unknown = m.clone();
    unknown.gpu = Some("h300".into());
    let err = err_of(&unknown);
    assert_eq!((err.field.as_str(), &err.error), ("gpu", &ValidationError::UnknownGpu("h300".into())));
    assert_eq!(err.to_string(), "gpu: unknown GPU `h300` (known targets: h100, h200)");

    let mut other = m;
    other.target = "sm_80".into();
    let err = err_of(&other);
    assert_eq!(err.field, "gpu");
    assert_eq!(err.to_string(), "gpu: GPU `h100` runs sm_90a code, not the manifest's target sm_80");
}

#[test]
fn the_sm90_limits_are_every_targets() {
    for t in tilec_target::Target::ALL {
        assert_eq!((t.smem_per_cta_bytes, t.max_cluster_size), (MAX_DYNAMIC_SMEM_SM90, MAX_PORTABLE_CLUSTER_SIZE), "{}", t.name);
    }
}

// ---------------------------------------------------------------- epilogues

/// A GEMM with a bias vector `Bias[N]` and a per-row scale `S[M]`.
fn with_vectors(epilogue: &str) -> Manifest {
    Manifest::from_json_str(&format!(
        r#"{{
  "format_version": 1, "kernel_name": "g", "entry": "g", "target": "sm_90a",
  "epilogue": {epilogue},
  "block": [128, 1, 1], "grid": {{ "rule": "tiles", "block_m": 128, "block_n": 128 }},
  "tensors": [
    {{ "name": "A", "dtype": "bf16", "shape": ["M", "K"], "role": "input" }},
    {{ "name": "B", "dtype": "bf16", "shape": ["N", "K"], "role": "input" }},
    {{ "name": "Bias", "dtype": "bf16", "shape": ["N"], "role": "input" }},
    {{ "name": "S", "dtype": "f32", "shape": ["M"], "role": "input" }},
    {{ "name": "W", "dtype": "f32", "shape": ["M", "N"], "role": "input" }},
    {{ "name": "C", "dtype": "bf16", "shape": ["M", "N"], "role": "output" }}
  ],
  "params": [
    {{ "kind": "ptr", "tensor": "A" }}, {{ "kind": "ptr", "tensor": "B" }}, {{ "kind": "ptr", "tensor": "Bias" }},
    {{ "kind": "ptr", "tensor": "S" }}, {{ "kind": "ptr", "tensor": "W" }}, {{ "kind": "ptr", "tensor": "C" }}
  ]
}}"#
    ))
    .unwrap()
}

/// An epilogue of `values` without group stores.
fn program(values: Vec<EpilogueValue>) -> Epilogue {
    Epilogue { values, group_stores: Vec::new() }
}

const BIAS_SCALE: &str = r#"{ "values": [
    { "op": "acc" }, { "op": "vector", "tensor": "Bias", "along": "cols" },
    { "op": "binary", "f": "add", "lhs": 0, "rhs": 1 },
    { "op": "vector", "tensor": "S", "along": "rows" },
    { "op": "binary", "f": "mul", "lhs": 2, "rhs": 3 },
    { "op": "convert", "to": "bf16", "x": 4 } ] }"#;

#[test]
fn epilogue_round_trips_and_validates() {
    let m = with_vectors(BIAS_SCALE);
    m.validate().unwrap();
    let e = m.epilogue.clone().unwrap();
    assert_eq!(e.vector_tensors(), [("Bias", Along::Cols), ("S", Along::Rows)]);
    assert!(e.matrix_tensors().is_empty());
    assert!(!e.is_plain() && Epilogue::plain(DType::Bf16).is_plain());
    let again = Manifest::from_json_str(&m.to_json_string()).unwrap();
    assert_eq!(again, m);
    // A manifest without the field (written before it existed) still loads.
    assert_eq!(example().epilogue, None);
}

#[test]
fn epilogue_matrices_are_listed_once_in_order() {
    // acc + 2 W + W, with W the residual: one matrix tensor, read twice.
    let m = with_vectors(
        r#"{ "values": [ { "op": "acc" }, { "op": "matrix", "tensor": "W" }, { "op": "splat", "value": 2.0 },
            { "op": "binary", "f": "mul", "lhs": 1, "rhs": 2 }, { "op": "binary", "f": "add", "lhs": 0, "rhs": 3 },
            { "op": "matrix", "tensor": "W" }, { "op": "binary", "f": "add", "lhs": 4, "rhs": 5 },
            { "op": "convert", "to": "bf16", "x": 6 } ] }"#,
    );
    m.validate().unwrap();
    let e = m.epilogue.unwrap();
    assert_eq!(e.matrix_tensors(), ["W"]);
    assert!(e.vector_tensors().is_empty());
    assert_eq!(e.eval(1.0, |v| if matches!(v, 1 | 5) { 0.5 } else { f64::NAN }), 2.5);
}

#[test]
fn epilogue_validation_is_located() {
    let check = |epilogue: &str| err_of(&with_vectors(epilogue)).to_string();
    assert_eq!(
        check(r#"{ "values": [] }"#),
        "epilogue.values: an epilogue has at least one value (a plain GEMM's is [acc, convert])"
    );
    assert_eq!(
        check(r#"{ "values": [ { "op": "acc" }, { "op": "binary", "f": "add", "lhs": 0, "rhs": 1 } ] }"#),
        "epilogue.values[1].rhs: operand 1 is not an earlier value (value 1 may read values 0..1)"
    );
    assert_eq!(
        check(r#"{ "values": [ { "op": "unary", "f": "exp", "x": 3 } ] }"#),
        "epilogue.values[0].x: operand 3 is not an earlier value (value 0 may read values 0..0)"
    );
    assert_eq!(
        check(r#"{ "values": [ { "op": "vector", "tensor": "Bias", "along": "rows" } ] }"#),
        "epilogue.values[0].along: epilogue vector `Bias` along rows must have the output's row dimension `M`, it has `N`"
    );
    assert_eq!(
        check(r#"{ "values": [ { "op": "vector", "tensor": "S", "along": "cols" } ] }"#),
        "epilogue.values[0].along: epilogue vector `S` along cols must have the output's column dimension `N`, it has `M`"
    );
    assert_eq!(
        check(r#"{ "values": [ { "op": "vector", "tensor": "W", "along": "cols" } ] }"#),
        "epilogue.values[0].tensor: epilogue vector `W` must be a rank-1 input tensor; it is of rank 2"
    );
    assert_eq!(
        check(r#"{ "values": [ { "op": "vector", "tensor": "C", "along": "cols" } ] }"#),
        "epilogue.values[0].tensor: epilogue vector `C` must be a rank-1 input tensor; it is an output"
    );
    assert_eq!(
        check(r#"{ "values": [ { "op": "vector", "tensor": "Nope", "along": "cols" } ] }"#),
        "epilogue.values[0].tensor: unknown tensor `Nope`"
    );
    assert_eq!(
        check(r#"{ "values": [ { "op": "acc" }, { "op": "convert", "to": "i32", "x": 0 } ] }"#),
        "epilogue.values[1].to: an epilogue converts to float types only, not i32"
    );
    // Unknown ops and functions are JSON errors.
    assert!(Manifest::from_json_str(&EXAMPLE.replacen('{', r#"{ "epilogue": { "values": [ { "op": "sin" } ] },"#, 1)).is_err());
}

#[test]
fn epilogue_eval_in_f64() {
    let e = with_vectors(BIAS_SCALE).epilogue.unwrap();
    // (acc + bias) * s, rounded to bf16; vector(i) is asked for value i.
    let vec = |i: usize| match i {
        1 => 0.25,
        3 => 3.0,
        _ => panic!("value {i} is no vector"),
    };
    assert_eq!(e.eval(1.0, vec), 3.75);
    assert_eq!(e.eval_value(4, 1.0 / 3.0, vec), (1.0 / 3.0 + 0.25) * 3.0);
    assert_eq!(e.eval(1.0 / 3.0, vec), round_to(DType::Bf16, (1.0 / 3.0 + 0.25) * 3.0));
    assert!(e.eval_value(99, 0.0, vec).is_nan());
    assert!(program(vec![]).eval(1.0, |_| 0.0).is_nan());
    let un = |f: UnaryFn| program(vec![EpilogueValue::Acc, EpilogueValue::Unary { f, x: 0 }]);
    assert_eq!(un(UnaryFn::Neg).eval(2.0, |_| 0.0), -2.0);
    assert_eq!(un(UnaryFn::Abs).eval(-2.0, |_| 0.0), 2.0);
    assert_eq!(un(UnaryFn::Exp).eval(0.0, |_| 0.0), 1.0);
    assert_eq!(un(UnaryFn::Rsqrt).eval(4.0, |_| 0.0), 0.5);
    assert_eq!(un(UnaryFn::Tanh).eval(0.5, |_| 0.0), 0.5f64.tanh());
    assert!((un(UnaryFn::Erf).eval(0.5, |_| 0.0) - 0.5204998778130465).abs() < 1e-15);
    let bin = |f: BinaryFn| program(vec![EpilogueValue::Acc, EpilogueValue::Splat { value: 2.0 }, EpilogueValue::Binary { f, lhs: 0, rhs: 1 }]);
    let at3 = |f| bin(f).eval(3.0, |_| 0.0);
    assert_eq!([at3(BinaryFn::Add), at3(BinaryFn::Sub), at3(BinaryFn::Mul), at3(BinaryFn::Div)], [5.0, 1.0, 6.0, 1.5]);
    assert_eq!([at3(BinaryFn::Max), at3(BinaryFn::Min)], [3.0, 2.0]);
    assert!(bin(BinaryFn::Max).eval(f64::NAN, |_| 0.0).is_nan());
}

#[test]
fn erf_matches_known_values() {
    // Python's math.erf / math.erfc (correctly rounded to within an ulp).
    let known = [
        (0.0, 0.0, 1.0),
        (1e-10, 1.1283791670955126e-10, 0.9999999998871621),
        (0.1, 0.1124629160182849, 0.8875370839817152),
        (0.5, 0.5204998778130465, 0.4795001221869535),
        (1.0, 0.8427007929497149, 0.15729920705028513),
        (2.0, 0.9953222650189527, 0.004677734981047265),
        (2.9, 0.9999589021219005, 4.109787809945886e-05),
        (3.0, 0.9999779095030014, 2.2090496998585438e-05),
        (3.5, 0.9999992569016276, 7.430983723414128e-07),
        (4.0, 0.9999999845827421, 1.541725790028002e-08),
        (5.0, 0.9999999999984626, 1.5374597944280351e-12),
        (5.9, 0.9999999999999999, 7.190409783550478e-17),
    ];
    for (x, e, c) in known {
        assert!((erf(x) - e).abs() <= 1e-13 * e.abs().max(1e-300) + 1e-300, "erf({x}) = {} want {e}", erf(x));
        assert!((erf(-x) + e).abs() <= 1e-13 * e.abs().max(1e-300) + 1e-300, "erf(-{x})");
        // erfc is relative-accurate where it is tiny (x >= 3), 1 - erf below.
        let tol = if x >= 3.0 { 1e-12 * c } else { 1e-15 };
        assert!((erfc(x) - c).abs() <= tol, "erfc({x}) = {} want {c}", erfc(x));
    }
    assert_eq!(erf(6.5), 1.0);
    assert_eq!(erf(-30.0), -1.0);
    assert_eq!(erf(f64::INFINITY), 1.0);
    assert!(erf(f64::NAN).is_nan());
    // Within 1e-15 relative of Python's math.erf on a grid of 0..7 (step 0.01).
    // Continuous across the switch from the series to the continued fraction.
    let (below, above) = (erf(3.0 - 1e-12), erf(3.0 + 1e-12));
    assert!((above - below).abs() < 1e-15);
}

#[test]
fn rounding_to_narrow_floats_is_nearest_even() {
    let bf = |x| round_to(DType::Bf16, x);
    assert_eq!(bf(1.0 + 1.0 / 256.0), 1.0); // tie, to even
    assert_eq!(bf(1.0 + 3.0 / 256.0), 1.0 + 4.0 / 256.0); // tie, to even (up)
    assert_eq!(bf(1.0 + 1.1 / 256.0), 1.0 + 2.0 / 256.0);
    assert_eq!(bf(-1.0 - 1.1 / 256.0), -1.0 - 2.0 / 256.0);
    // Agrees with half's bf16 on a spread of values (half rounds f32 to nearest even).
    let mut x = 1.0e-30f64;
    while x < 1.0e30 {
        for v in [x, -x * 1.37, x * 1.00390625, x * 1.01171875] {
            let via_f32 = v as f32;
            if via_f32 as f64 == v {
                assert_eq!(bf(v), half_bf16(via_f32), "{v}");
            }
        }
        x *= 3.7;
    }
    assert_eq!(bf(3.4e38), f64::INFINITY);
    assert_eq!(bf(f64::NEG_INFINITY), f64::NEG_INFINITY);
    assert!(bf(f64::NAN).is_nan());
    assert_eq!(bf(0.0), 0.0);
    // Subnormals of bf16 (2^-133 is the smallest).
    assert_eq!(bf(2f64.powi(-133)), 2f64.powi(-133));
    assert_eq!(bf(2f64.powi(-135)), 0.0);
    let h = |x| round_to(DType::F16, x);
    assert_eq!(h(65504.0), 65504.0);
    assert_eq!(h(65519.0), 65504.0);
    assert_eq!(h(65520.0), f64::INFINITY); // the tie above the largest rounds to even: overflow
    assert_eq!(h(2f64.powi(-24)), 2f64.powi(-24));
    assert_eq!(h(0.1), 0.0999755859375);
    assert_eq!(round_to(DType::F32, 0.1), 0.1f32 as f64);
    assert_eq!(round_to(DType::F64, 0.1), 0.1);
    assert_eq!(round_to(DType::F8e4m3, 464.0), 448.0);
    assert_eq!(round_to(DType::F8e4m3, -1e9), -448.0);
    assert_eq!(round_to(DType::F8e4m3, 0.3), 0.3125);
    assert_eq!(round_to(DType::F8e5m2, 1e6), 57344.0);
    assert_eq!(round_to(DType::F8e5m2, f64::INFINITY), 57344.0);
}

/// bf16 round-to-nearest-even of an f32, by its bits.
fn half_bf16(x: f32) -> f64 {
    let b = x.to_bits();
    let rounded = b.wrapping_add(0x7FFF + ((b >> 16) & 1)) & 0xFFFF_0000;
    f32::from_bits(rounded) as f64
}

#[test]
fn long_epilogues_evaluate_too() {
    // 100 additions of 1: past the evaluator's stack buffer.
    let mut values = vec![EpilogueValue::Acc, EpilogueValue::Splat { value: 1.0 }];
    for i in 0..100 {
        values.push(EpilogueValue::Binary { f: BinaryFn::Add, lhs: if i == 0 { 0 } else { i + 1 }, rhs: 1 });
    }
    assert_eq!(program(values).eval(0.5, |_| 0.0), 100.5);
}

// ------------------------------------------------- group reductions and stores

/// The quantising epilogue of `examples/gemm_fp8_quantize.tile`: x =
/// bf16(acc), amax = max over the group of |x| clamped to 1e-4, code =
/// e4m3(x * 448 / amax), scale amax / 448 stored to `SQ`.
const QUANTIZE: &str = r#"{ "values": [
    { "op": "acc" }, { "op": "convert", "to": "bf16", "x": 0 }, { "op": "unary", "f": "abs", "x": 1 },
    { "op": "group_reduce", "f": "max", "x": 2, "group": 128 }, { "op": "splat", "value": 1e-4 },
    { "op": "binary", "f": "max", "lhs": 3, "rhs": 4 }, { "op": "splat", "value": 448.0 },
    { "op": "binary", "f": "div", "lhs": 6, "rhs": 5 }, { "op": "binary", "f": "mul", "lhs": 1, "rhs": 7 },
    { "op": "binary", "f": "div", "lhs": 5, "rhs": 6 }, { "op": "convert", "to": "f8e4m3", "x": 8 } ],
  "group_stores": [ { "tensor": "SQ", "x": 9, "group": 128 } ] }"#;

/// A block-scaled FP8 GEMM whose output `Q[M,N]` is quantised, with `SQ`
/// declared `sq_shape`, an f32 output, and `R[M,N]`, a residual input.
fn quantizing(epilogue: &str, sq_shape: &str) -> Manifest {
    Manifest::from_json_str(&format!(
        r#"{{
  "format_version": 1, "kernel_name": "q", "entry": "q", "target": "sm_90a",
  "epilogue": {epilogue},
  "block": [384, 1, 1], "grid": {{ "rule": "tiles", "block_m": 128, "block_n": 128 }},
  "tensors": [
    {{ "name": "A", "dtype": "f8e4m3", "shape": ["M", "K"], "role": "input" }},
    {{ "name": "SA", "dtype": "f32", "shape": ["KB", "M"], "role": "input" }},
    {{ "name": "B", "dtype": "f8e4m3", "shape": ["N", "K"], "role": "input" }},
    {{ "name": "SB", "dtype": "f32", "shape": ["NB", "KB"], "role": "input" }},
    {{ "name": "Q", "dtype": "f8e4m3", "shape": ["M", "N"], "role": "output" }},
    {{ "name": "SQ", "dtype": "f32", "shape": {sq_shape}, "role": "output" }},
    {{ "name": "R", "dtype": "bf16", "shape": ["M", "N"], "role": "input" }}
  ],
  "params": [
    {{ "kind": "ptr", "tensor": "A" }}, {{ "kind": "ptr", "tensor": "SA" }}, {{ "kind": "ptr", "tensor": "B" }},
    {{ "kind": "ptr", "tensor": "SB" }}, {{ "kind": "ptr", "tensor": "Q" }}, {{ "kind": "ptr", "tensor": "SQ" }},
    {{ "kind": "ptr", "tensor": "R" }}
  ]
}}"#
    ))
    .unwrap()
}

#[test]
fn group_stores_round_trip_and_validate() {
    for sq in [r#"["NB", "M"]"#, r#"["M", "NB"]"#] {
        let m = quantizing(QUANTIZE, sq);
        m.validate().unwrap();
        let e = m.epilogue.clone().unwrap();
        assert_eq!(e.group_stores, [GroupStore { tensor: "SQ".into(), x: 9, group: 128 }]);
        assert_eq!(e.values[3], EpilogueValue::GroupReduce { f: ReduceFn::Max, x: 2, group: 128 });
        assert!(e.has_groups() && !e.is_plain());
        assert_eq!(Manifest::from_json_str(&m.to_json_string()).unwrap(), m);
    }
    // Most epilogues have no group stores, and their JSON no field.
    let plain = with_vectors(BIAS_SCALE);
    assert!(!plain.epilogue.as_ref().unwrap().has_groups());
    assert!(!plain.to_json_string().contains("group_stores"));
}

#[test]
fn group_store_validation_is_located() {
    let check = |epilogue: &str, sq: &str| err_of(&quantizing(epilogue, sq)).to_string();
    let nb_m = r#"["NB", "M"]"#;
    let store = |tensor: &str, x: usize, group: u64| {
        QUANTIZE.replace(r#"{ "tensor": "SQ", "x": 9, "group": 128 }"#, &format!(r#"{{ "tensor": "{tensor}", "x": {x}, "group": {group} }}"#))
    };
    assert_eq!(check(&store("Nope", 9, 128), nb_m), "epilogue.group_stores[0].tensor: unknown tensor `Nope`");
    assert_eq!(
        check(&store("SA", 9, 128), nb_m),
        "epilogue.group_stores[0].tensor: epilogue group store `SA` must be an output tensor; it is an input"
    );
    assert_eq!(
        check(&store("Q", 9, 128), nb_m),
        "epilogue.group_stores[0].tensor: epilogue group store `Q` is the output the epilogue's last value is stored to; a group store needs an output of its own"
    );
    let twice = QUANTIZE.replace(
        r#"{ "tensor": "SQ", "x": 9, "group": 128 }"#,
        r#"{ "tensor": "SQ", "x": 9, "group": 128 }, { "tensor": "SQ", "x": 5, "group": 128 }"#,
    );
    assert_eq!(
        check(&twice, nb_m),
        "epilogue.group_stores[1].tensor: epilogue group store `SQ` is stored to by an earlier group store too"
    );
    let shape = |sq: &str| check(QUANTIZE, sq);
    let want = "epilogue.group_stores[0].tensor: epilogue group store `SQ` must be [G, M] (M-major) or [M, G], G a symbol of its own for \
                ceil(N/128) (M and N: the output `Q`'s rows and columns); it is";
    assert_eq!(shape(r#"["M", "N"]"#), format!("{want} [M, N]"));
    assert_eq!(shape(r#"["NB", "K"]"#), format!("{want} [NB, K]"));
    assert_eq!(shape(r#"[2, "M"]"#), format!("{want} [2, M]"));
    assert_eq!(shape(r#"["NB", "M", "M"]"#), format!("{want} [NB, M, M]"));
    assert_eq!(shape(r#"["M"]"#), format!("{want} [M]"));
    assert_eq!(check(&store("SQ", 9, 0), nb_m), "epilogue.group_stores[0].group: an epilogue's column group has at least one column");
    assert_eq!(check(&store("SQ", 11, 128), nb_m), "epilogue.group_stores[0].x: value 11 is not one of the epilogue's 11 values");
    // The stored value must be the same at every column of a group.
    assert_eq!(
        check(&store("SQ", 8, 128), nb_m),
        "epilogue.group_stores[0].x: value 8 may differ between the columns of a group of 128: it reads value 0, the accumulator"
    );
    // A reduction over 128 columns is the same across groups of 64 within it, not across groups of 256.
    quantizing(&store("SQ", 9, 64), nb_m).validate().unwrap();
    assert_eq!(
        check(&store("SQ", 9, 256), nb_m),
        "epilogue.group_stores[0].x: value 9 may differ between the columns of a group of 256: it reads value 3, a reduction over groups that split this one"
    );
    // A residual read into the stored value varies by column; a row's own values do not.
    let residual = QUANTIZE
        .replace(r#"{ "op": "convert", "to": "f8e4m3", "x": 8 } ]"#, r#"{ "op": "convert", "to": "f8e4m3", "x": 8 }, { "op": "matrix", "tensor": "R" }, { "op": "binary", "f": "add", "lhs": 9, "rhs": 11 } ]"#)
        .replace(r#""x": 9, "group""#, r#""x": 12, "group""#);
    assert_eq!(
        check(&residual, nb_m),
        "epilogue.group_stores[0].x: value 12 may differ between the columns of a group of 128: it reads value 11, a matrix element"
    );
    // A group reduction's own group must hold a column.
    let zero = QUANTIZE.replace(r#""x": 2, "group": 128"#, r#""x": 2, "group": 0"#);
    assert_eq!(check(&zero, nb_m), "epilogue.values[3].group: an epilogue's column group has at least one column");
    let later = QUANTIZE.replace(r#""f": "max", "x": 2, "group""#, r#""f": "max", "x": 3, "group""#);
    assert_eq!(check(&later, nb_m), "epilogue.values[3].x: operand 3 is not an earlier value (value 3 may read values 0..3)");
}

#[test]
fn reductions_combine_in_order_with_nan() {
    assert_eq!(ReduceFn::Max.reduce([1.0, -3.0, 2.0]), 2.0);
    assert_eq!(ReduceFn::Min.reduce([1.0, -3.0, 2.0]), -3.0);
    assert_eq!(ReduceFn::Add.reduce([1.0, -3.0, 2.5]), 0.5);
    assert!(ReduceFn::Max.reduce([1.0, f64::NAN, 2.0]).is_nan());
    assert!(ReduceFn::Min.reduce([f64::NAN, 1.0]).is_nan());
    assert!(ReduceFn::Add.reduce([]).is_nan());
}

/// e4m3 of `x * 448 / amax` for a group's `amax`, as the quantising epilogue computes it.
fn quantize_ref(x: f64, amax: f64) -> (f64, f64) {
    let amax = amax.max(1e-4);
    (round_to(DType::F8e4m3, x * (448.0 / amax)), amax / 448.0)
}

#[test]
fn a_row_reduces_over_its_groups_of_columns_below_n() {
    let e = quantizing(QUANTIZE, r#"["NB", "M"]"#).epilogue.unwrap();
    // 300 columns: groups of 128, 128 and 44; the last group's columns past N take no part.
    let n = 300;
    let acc = |j: usize| ((j * 37 % 101) as f64 - 50.0) / 7.0 + 1.0 / 3.0;
    let row = e.eval_row(n, acc, |v, j| panic!("value {v} at {j} reads no operand"));
    assert_eq!((row.values.len(), row.groups.len(), row.groups[0].len()), (300, 1, 3));
    for g in 0..3 {
        let cols = 128 * g..(128 * (g + 1)).min(n);
        let amax = cols.clone().map(|j| round_to(DType::Bf16, acc(j)).abs()).fold(0.0, f64::max);
        for j in cols {
            let (code, scale) = quantize_ref(round_to(DType::Bf16, acc(j)), amax);
            assert_eq!(row.values[j], code, "column {j}");
            assert_eq!(row.groups[0][g], scale, "group {g}");
        }
    }
    // Each group's largest magnitude maps to 448.
    assert!(row.values.chunks(128).all(|g| g.iter().any(|c| c.abs() == 448.0)));
    // An all-zero group is clamped away from zero: codes 0, the scale 1e-4 / 448.
    let zeros = e.eval_row(5, |_| 0.0, |_, _| f64::NAN);
    assert_eq!((zeros.values, zeros.groups), (vec![0.0; 5], vec![vec![1e-4 / 448.0]]));
    // No columns, no groups.
    let empty = e.eval_row(0, acc, |_, _| f64::NAN);
    assert!(empty.values.is_empty() && empty.groups == [Vec::<f64>::new()]);
    // A NaN in a group spreads to the group, not beyond.
    let nan = e.eval_row(200, |j| if j == 3 { f64::NAN } else { 1.0 }, |_, _| f64::NAN);
    assert!(nan.values[..128].iter().all(|c| c.is_nan()) && nan.groups[0][0].is_nan());
    assert!(nan.values[128..].iter().all(|&c| c == 448.0) && nan.groups[0][1] == 1.0 / 448.0);
}

#[test]
fn a_row_of_an_element_wise_epilogue_is_its_elements() {
    let e = with_vectors(BIAS_SCALE).epilogue.unwrap();
    let bias = [0.5, -0.25, 2.0, 1.0 / 3.0];
    let scale = 3.0;
    let leaf = |v: usize, j: usize| if v == 1 { bias[j] } else { scale };
    let acc = |j: usize| j as f64 / 7.0 - 0.2;
    let row = e.eval_row(4, acc, leaf);
    for (j, &got) in row.values.iter().enumerate() {
        assert_eq!(got, e.eval(acc(j), |v| leaf(v, j)), "column {j}");
    }
    assert!(row.groups.is_empty());
    // Sums and minima over groups of 2, with a last group of one column.
    let sum = Epilogue {
        values: vec![
            EpilogueValue::Acc,
            EpilogueValue::GroupReduce { f: ReduceFn::Add, x: 0, group: 2 },
            EpilogueValue::GroupReduce { f: ReduceFn::Min, x: 0, group: 2 },
            EpilogueValue::Binary { f: BinaryFn::Sub, lhs: 1, rhs: 2 },
        ],
        group_stores: vec![GroupStore { tensor: "S".into(), x: 2, group: 4 }, GroupStore { tensor: "T".into(), x: 1, group: 1 }],
    };
    let row = sum.eval_row(5, |j| [1.0, 4.0, -2.0, 8.0, 5.0][j], |_, _| f64::NAN);
    assert_eq!(row.values, [4.0, 4.0, 8.0, 8.0, 0.0]);
    // A store's value is its group's first column's (value 2 differs across a group of 4: validation refuses it).
    assert_eq!(row.groups, [vec![1.0, 5.0], vec![5.0, 5.0, 6.0, 6.0, 5.0]]);
    // Element by element, a reduction is what the closure says.
    assert_eq!(sum.eval(1.0, |v| [0.0, 10.0, 3.0][v]), 7.0);
    // Unvalidated programs give NaN, not a panic.
    let bad = Epilogue {
        values: vec![EpilogueValue::Acc, EpilogueValue::GroupReduce { f: ReduceFn::Max, x: 1, group: 0 }],
        group_stores: vec![GroupStore { tensor: "S".into(), x: 7, group: 2 }, GroupStore { tensor: "T".into(), x: 0, group: 0 }],
    };
    let row = bad.eval_row(3, |_| 1.0, |_, _| 0.0);
    assert!(row.values.iter().all(|x| x.is_nan()));
    assert!(row.groups[0].len() == 2 && row.groups[0].iter().all(|x| x.is_nan()) && row.groups[1].is_empty());
    assert!(program(vec![]).eval_row(2, |_| 1.0, |_, _| 0.0).values.iter().all(|x| x.is_nan()));
}

#[test]
fn an_epilogue_evaluates_in_f32_as_a_kernel_does() {
    let e = quantizing(QUANTIZE, r#"["NB", "M"]"#).epilogue.unwrap();
    let in_f32 = e.in_f32().unwrap();
    // 9.75 * 448 / 13 is 336, halfway between the e4m3 values 320 and 352: f64 gives the even one, 320; a kernel's
    // f32 448 / 13 is above the quotient, 9.75 times it rounds to 336.00003, and the code is 352.
    let acc = [13.0f32, 9.75, -1.0, 0.0];
    let wide = e.eval_row(4, |j| acc[j] as f64, |_, _| f64::NAN);
    let row = in_f32.eval_row(4, |j| acc[j], |_, _| f32::NAN);
    assert_eq!((wide.values[1], row.values[1]), (320.0, 352.0));
    // The scale is the f32 quotient, widened.
    assert_eq!(row.groups, [vec![(13.0f32 / 448.0) as f64]]);
    assert_ne!(wide.groups[0][0], row.groups[0][0]);
    // Rows of 300 columns (a last group of 44), the kernel's f32 arithmetic spelled out.
    let mut state = 0x9E37_79B9u32;
    let mut next = || {
        state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (state >> 8) as f32 / (1 << 24) as f32 * 2.0 - 1.0
    };
    for scale in [1e-6f32, 1e-3, 1.0, 37.0, 3e4] {
        let acc: Vec<f32> = (0..300).map(|_| next() * scale).collect();
        let row = in_f32.eval_row(300, |j| acc[j], |_, _| f32::NAN);
        let x: Vec<f32> = acc.iter().map(|&a| round_to(DType::Bf16, a as f64) as f32).collect();
        for (g, cols) in x.chunks(128).enumerate() {
            let amax = cols.iter().fold(0.0f32, |m, v| m.max(v.abs())).max(1e-4);
            let inv = 448.0f32 / amax;
            for (c, &v) in cols.iter().enumerate() {
                assert_eq!(row.values[128 * g + c], round_to(DType::F8e4m3, (v * inv) as f64), "scale {scale}, column {}", 128 * g + c);
            }
            assert_eq!(row.groups[0][g], (amax / 448.0) as f64, "scale {scale}, group {g}");
        }
    }
    // An element-wise program: (acc + bias[j]) * s[i], rounded to bf16, each step in f32.
    let bias_scale = with_vectors(BIAS_SCALE).epilogue.unwrap();
    let leaf = |v: usize, _: usize| if v == 1 { 0.1f32 } else { 3.0 };
    let row = bias_scale.in_f32().unwrap().eval_row(1, |_| 1.0 / 3.0, leaf);
    assert_eq!(row.values, [round_to(DType::Bf16, ((1.0f32 / 3.0 + 0.1) * 3.0) as f64)]);
    // max and min are NaN if either operand is, as in f64.
    assert!(BinaryFn::Max.apply_f32(f32::NAN, 1.0).is_nan() && BinaryFn::Min.apply_f32(1.0, f32::NAN).is_nan());
    assert_eq!((BinaryFn::Max.apply_f32(-2.0, 1.5), BinaryFn::Min.apply_f32(-2.0, 1.5)), (1.5, -2.0));
}

#[test]
fn f32_evaluation_refuses_what_ieee_arithmetic_does_not_fix() {
    let refused = |values: Vec<EpilogueValue>| program(values).in_f32().map(|_| ()).unwrap_err();
    use EpilogueValue::{Acc, Binary, GroupReduce, Splat, Unary, Vector};
    assert_eq!(
        refused(vec![Acc, Unary { f: UnaryFn::Tanh, x: 0 }]),
        "value 1 takes tanh: its f32 value is the device's approximation, which the host does not reproduce"
    );
    assert_eq!(
        refused(vec![Acc, GroupReduce { f: ReduceFn::Add, x: 0, group: 128 }]),
        "value 1 sums over a group of columns: an f32 sum depends on the kernel's order of additions"
    );
    // A product added, directly or negated, may become one fused multiply-add.
    let bias = || Vector { tensor: "Bias".into(), along: Along::Cols };
    let mul = Binary { f: BinaryFn::Mul, lhs: 0, rhs: 1 };
    assert_eq!(
        refused(vec![Acc, Splat { value: 2.0 }, mul.clone(), bias(), Binary { f: BinaryFn::Add, lhs: 3, rhs: 2 }]),
        "value 4 adds value 2, a product: the kernel may fuse the two into one multiply-add, rounding once"
    );
    let negated = vec![Acc, Splat { value: 2.0 }, mul.clone(), Unary { f: UnaryFn::Neg, x: 2 }, bias(), Binary { f: BinaryFn::Sub, lhs: 4, rhs: 3 }];
    assert_eq!(refused(negated), "value 5 adds value 3, a product: the kernel may fuse the two into one multiply-add, rounding once");
    // A product of a sum, a maximum of products, a product rounded before the sum: each rounds as the program says.
    let ok = |values: Vec<EpilogueValue>| program(values).in_f32().is_ok();
    assert!(ok(vec![Acc, bias(), Binary { f: BinaryFn::Add, lhs: 0, rhs: 1 }, Binary { f: BinaryFn::Mul, lhs: 2, rhs: 1 }]));
    assert!(ok(vec![Acc, Splat { value: 2.0 }, mul.clone(), Binary { f: BinaryFn::Max, lhs: 2, rhs: 0 }]));
    let rounded = EpilogueValue::Convert { to: DType::Bf16, x: 2 };
    assert!(ok(vec![Acc, Splat { value: 2.0 }, mul, rounded, Binary { f: BinaryFn::Add, lhs: 3, rhs: 0 }]));
    assert!(ok(vec![Acc, GroupReduce { f: ReduceFn::Max, x: 0, group: 128 }, Unary { f: UnaryFn::Abs, x: 1 }]));
}
