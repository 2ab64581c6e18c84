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
