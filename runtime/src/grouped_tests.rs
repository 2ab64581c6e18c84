//! Unit tests of the grouped-GEMM problem description (no GPU).

use crate::check::Rng;
use crate::gemm::SaLayout;
use crate::grouped::*;

#[test]
fn uneven_split_has_the_required_groups() {
    for seed in 0..50 {
        let mut rng = Rng::new(seed);
        for (total, g) in [(4096, 8), (32768, 32), (4096, 3)] {
            let rows = uneven_split(total, g, &mut rng);
            assert_eq!(rows.len(), g);
            assert_eq!(rows.iter().sum::<u64>(), total, "seed {seed}");
            assert!(rows.contains(&0), "an empty expert");
            assert!(rows.contains(&1), "a single-row expert");
            let max = *rows.iter().max().unwrap();
            assert!(max >= total / 4 && max as f64 >= 2.0 * total as f64 / g as f64, "one much larger: {rows:?}");
        }
    }
}

#[test]
fn contiguous_layout_pads_segments_to_block_m() {
    let p = GroupedProblem { form: GroupedForm::Contiguous { block_m: 128 }, n: 256, k: 512, rows: vec![0, 1, 300, 128] };
    assert_eq!(p.row_offsets(), [0, 0, 128, 512]);
    assert_eq!(p.buffer_rows(), 640);
    assert_eq!(p.expert_of_block().unwrap(), [1, 2, 2, 2, 3]);
    assert_eq!(p.total_rows(), 429);
    assert_eq!(p.flops(), 2.0 * 429.0 * 256.0 * 512.0);
}

#[test]
fn masked_layout_is_fixed_per_expert() {
    let p = GroupedProblem { form: GroupedForm::Masked { m_max: 256 }, n: 64, k: 128, rows: vec![64, 256, 100] };
    assert_eq!(p.row_offsets(), [0, 256, 512]);
    assert_eq!(p.buffer_rows(), 768);
    assert_eq!(p.expert_of_block(), None);
    let over = GroupedProblem { rows: vec![257], ..p };
    assert_eq!(over.validate().unwrap_err(), "masked/256:64x128:257: a count 257 exceeds M_max 256");
}

#[test]
fn grouped_problem_text_round_trips() {
    for s in ["contiguous:4096x7168:0,1,3000,95", "contiguous/64:128x256:5", "masked/256:7168x2048:64,256,100"] {
        let p = GroupedProblem::parse(s).unwrap();
        assert_eq!(p.to_string(), s);
    }
    let p = GroupedProblem::parse("masked/256:7168x2048:64,256,100").unwrap();
    assert_eq!((p.form, p.n, p.k, p.rows.clone()), (GroupedForm::Masked { m_max: 256 }, 7168, 2048, vec![64, 256, 100]));
    for bad in ["", "contiguous:4096x7168", "dense:1x2:3", "masked:1x2:3", "contiguous:0x2:3", "contiguous:1x2:", "masked/4:8x8:5"] {
        assert!(GroupedProblem::parse(bad).is_err(), "`{bad}` must be rejected");
    }
}

#[test]
fn default_problems_cover_the_benchmark() {
    let v = default_grouped_problems(1);
    assert_eq!(v.len(), 2 * 2 * 2 + 2 * 2);
    assert!(v.iter().all(|p| p.validate().is_ok()));
    let contig: Vec<_> = v.iter().filter(|p| matches!(p.form, GroupedForm::Contiguous { .. })).collect();
    assert_eq!(contig.iter().map(|p| p.total_rows()).min(), Some(4096));
    assert_eq!(contig.iter().map(|p| p.total_rows()).max(), Some(32768));
    for p in v.iter().filter(|p| matches!(p.form, GroupedForm::Masked { .. })) {
        assert!(p.rows.iter().all(|&r| (64..=256).contains(&r)));
    }
    assert!(v.iter().any(|p| p.groups() == 32 && (p.n, p.k) == (7168, 2048)));
    assert_ne!(default_grouped_problems(2), v, "fresh group sizes per seed");
}

#[test]
fn grouped_table_reports_ratio_to_the_loop_and_failures() {
    use crate::grouped_bench::*;
    use tilec_report::schema::Stats;
    let run = |name: &str, ms: Option<f64>, err: Option<f64>, error: Option<&str>| GroupedRun {
        name: name.into(),
        rel_err: err,
        pass: error.is_none(),
        round_ms: ms.into_iter().collect(),
        stats: ms.and_then(|m| Stats::from_samples(&[m])),
        tflops: ms.map(|m| 1e12 / (m * 1e-3) / 1e12),
        error: error.map(str::to_string),
    };
    let r = GroupedResult {
        problem: "masked/256:64x128:64".into(),
        label: "masked G=1 64x128 rows=64".into(),
        groups: 1,
        n: 64,
        k: 128,
        total_rows: 64,
        flops: 1e12,
        seed: 1,
        runs: vec![
            run("cublas-loop", Some(2.0), Some(1e-3), None),
            run("cublas-grouped", Some(1.0), Some(2e-3), None),
            run("cublaslt-fp8-block-loop", None, Some(0.5), Some("check failed; not timed")),
        ],
        error: None,
    };
    let t = tilec_report::table::format_grouped_rows(std::slice::from_ref(&r));
    let line = |name: &str| t.lines().find(|l| l.contains(name)).unwrap().split_whitespace().collect::<Vec<_>>();
    assert_eq!(line("cublas-grouped")[5..9], ["1.000", "1000.0", "2.000", "2.00e-3"]);
    assert!(t.contains("ERROR check failed; not timed"));
    assert!(r.failed());
    let ok = GroupedResult { runs: r.runs[..2].to_vec(), ..r };
    assert!(!ok.failed());
}

fn grouped_manifest(tensors: &str) -> tilec_artifact::Manifest {
    tilec_artifact::Manifest::from_json_str(&format!(
        r#"{{ "format_version": 1, "kernel_name": "g", "entry": "g", "target": "sm_90a", "block": [384, 1, 1],
  "grid": {{ "rule": "sms", "ctas_per_sm": 1 }}, "tensors": [ {tensors} ], "params": [] }}"#
    ))
    .unwrap()
}

const CONTIGUOUS_FP8: &str = r#"
    { "name": "A", "dtype": "f8e4m3", "shape": ["SM", "K"], "role": "input" },
    { "name": "SA", "dtype": "f32", "shape": ["SM", "KB"], "role": "input" },
    { "name": "B", "dtype": "f8e4m3", "shape": ["G", "N", "K"], "role": "input" },
    { "name": "SB", "dtype": "f32", "shape": ["G", "NB", "KB"], "role": "input" },
    { "name": "expert", "dtype": "i32", "shape": ["MB"], "role": "input" },
    { "name": "C", "dtype": "bf16", "shape": ["SM", "N"], "role": "output" }"#;

const MASKED_BF16: &str = r#"
    { "name": "A", "dtype": "bf16", "shape": ["G", "MM", "K"], "role": "input" },
    { "name": "counts", "dtype": "i32", "shape": ["G"], "role": "input" },
    { "name": "B", "dtype": "bf16", "shape": ["G", "N", "K"], "role": "input" },
    { "name": "C", "dtype": "bf16", "shape": ["G", "MM", "N"], "role": "output" }"#;

#[test]
fn grouped_spec_reads_both_signatures() {
    use tilec_artifact::DType;
    let c = GroupedSpec::from_manifest(&grouped_manifest(CONTIGUOUS_FP8)).unwrap();
    assert_eq!(c, GroupedSpec { kind: GroupedKind::Contiguous, input: DType::F8e4m3, sa_layout: SaLayout::KMajor, epilogue: None });
    let m_major = GroupedSpec::from_manifest(&grouped_manifest(&CONTIGUOUS_FP8.replace(r#"["SM", "KB"]"#, r#"["KB", "SM"]"#))).unwrap();
    assert_eq!(m_major.sa_layout, SaLayout::MMajor);
    let m = GroupedSpec::from_manifest(&grouped_manifest(MASKED_BF16)).unwrap();
    assert_eq!(m, GroupedSpec { kind: GroupedKind::Masked, input: DType::Bf16, sa_layout: SaLayout::KMajor, epilogue: None });
    let err = |t: &str| GroupedSpec::from_manifest(&grouped_manifest(t)).unwrap_err().to_string();
    assert_eq!(
        err(&MASKED_BF16.replace(r#"["G", "MM", "N"]"#, r#"["MM", "N"]"#)),
        "not a GEMM artifact: not a grouped GEMM: want C bf16 [G, MM, N] (Output)"
    );
    assert!(err(&CONTIGUOUS_FP8.replace(r#""name": "SB""#, r#""name": "SX""#)).contains("want SB f32 [G, NB, KB]"));
    assert!(err(&MASKED_BF16.replace(r#""counts""#, r#""rows""#)).contains("want an i32 `expert[MB]`"));
    let extra = format!(r#"{MASKED_BF16}, {{ "name": "D", "dtype": "f32", "shape": ["G"], "role": "input" }}"#);
    assert!(err(&extra).contains("unexpected tensor D"));
}

#[test]
fn grouped_spec_binds_the_layout_symbols() {
    let c = GroupedSpec::from_manifest(&grouped_manifest(CONTIGUOUS_FP8)).unwrap();
    let p = GroupedProblem::parse("contiguous:200x300:0,1,300").unwrap();
    let sym = c.problem(&p).unwrap();
    let get = |s: &str| sym.get(s).unwrap();
    assert_eq!((get("G"), get("N"), get("K"), get("SM"), get("MB"), get("KB"), get("NB")), (3, 200, 300, 512, 4, 3, 2));
    let masked = GroupedProblem::parse("masked/256:200x300:64,100").unwrap();
    assert!(c.problem(&masked).unwrap_err().to_string().contains("the kernel is Contiguous"));
    let m = GroupedSpec::from_manifest(&grouped_manifest(MASKED_BF16)).unwrap();
    let sym = m.problem(&masked).unwrap();
    assert_eq!(sym.get("MM").unwrap(), 256);
    assert!(sym.get("KB").is_err(), "bf16 binds no scale symbols");
}

#[test]
fn the_tiles_grid_covers_the_grouped_output() {
    // One CTA per 128 x 256 tile of C: rows of the padded layout (SM) for the
    // contiguous form, and one grid plane per expert for the masked form.
    let tiles = |m: tilec_artifact::Manifest| {
        let json = serde_json::to_string(&m).unwrap().replace(r#"{"rule":"sms","ctas_per_sm":1}"#, r#"{"rule":"tiles","block_m":128,"block_n":256}"#);
        tilec_artifact::Manifest::from_json_str(&json).unwrap()
    };
    let contiguous = tiles(grouped_manifest(CONTIGUOUS_FP8));
    let p = GroupedProblem::parse("contiguous:1000x300:0,1,300").unwrap();
    let sym = GroupedSpec::from_manifest(&contiguous).unwrap().problem(&p).unwrap();
    // SM = 0 + 128 + 384 = 512 rows: 4 row tiles; N = 1000: 4 column tiles.
    assert_eq!(crate::plan::compute_grid(&contiguous, &sym, 132).unwrap(), [4, 4, 1]);
    let masked = tiles(grouped_manifest(MASKED_BF16));
    let p = GroupedProblem::parse("masked/256:200x300:64,100,7").unwrap();
    let sym = GroupedSpec::from_manifest(&masked).unwrap().problem(&p).unwrap();
    assert_eq!(crate::plan::compute_grid(&masked, &sym, 132).unwrap(), [2, 1, 3]);
}

#[test]
fn a_routing_table_out_of_range_is_refused_before_launch() {
    let contiguous = GroupedProblem { form: GroupedForm::Contiguous { block_m: 128 }, n: 256, k: 512, rows: vec![0, 1, 300] };
    assert_eq!(contiguous.routing().unwrap(), [1, 2, 2, 2]);
    assert!(check_routing(&contiguous, &[1, 2, -1, 0]).is_ok(), "-1 marks a block of padding");
    let err = |p: &GroupedProblem, table: &[i32]| check_routing(p, table).unwrap_err().to_string();
    assert!(err(&contiguous, &[1, 2, 3, 2]).contains("row block 2 names expert 3, want 0 to 2 (G = 3) or -1 for padding"));
    assert!(err(&contiguous, &[1, 2, -2, 2]).contains("row block 2 names expert -2"));
    assert!(err(&contiguous, &[1, 2, 2]).contains("the expert table has 3 entries, want one per block of 128 rows (4)"));
    let empty = GroupedProblem { rows: vec![0, 0], ..contiguous.clone() };
    assert_eq!(empty.routing().unwrap(), [0], "a problem without rows binds one element");

    let masked = GroupedProblem { form: GroupedForm::Masked { m_max: 256 }, n: 64, k: 128, rows: vec![64, 256, 0] };
    assert_eq!(masked.routing().unwrap(), [64, 256, 0]);
    assert!(err(&masked, &[64, 257, 0]).contains("expert 1 has a count of 257 rows, want 0 to M_max = 256"));
    assert!(err(&masked, &[64, -1, 0]).contains("expert 1 has a count of -1 rows"));
    assert!(err(&masked, &[64, 256]).contains("the counts table has 2 entries, want one per expert (3)"));
    // A problem built past its own validation still gets no table.
    let over = GroupedProblem { rows: vec![64, 300, u64::MAX], ..masked };
    assert!(over.routing().unwrap_err().to_string().contains("expert 1 has a count of 300 rows"));
}

/// The manifest `tilec compile examples/grouped_contiguous_swiglu.tile
/// --shape 8192x28672x4096` writes: a contiguous grouped GEMM whose
/// epilogue is SwiGLU over each expert's gate and up, interleaved in runs
/// of 128 rows of its B, storing `C[SM, H]`.
const SWIGLU_MANIFEST: &str = r#"{
  "format_version": 1,
  "kernel_name": "grouped_contiguous_swiglu",
  "entry": "grouped_contiguous_swiglu",
  "target": "sm_90a",
  "gpu": "h200",
  "config": "128x256x64 stages=4 warps=12 ws2 persistent epilogue=tma epilogue_cols=64 epilogue_deferred",
  "epilogue": { "values": [
    {"op": "acc_part", "block": 128, "part": 0, "parts": 2},
    {"op": "unary", "f": "neg", "x": 0},
    {"op": "unary", "f": "exp", "x": 1},
    {"op": "splat", "value": 1.0},
    {"op": "binary", "f": "add", "lhs": 2, "rhs": 3},
    {"op": "binary", "f": "div", "lhs": 0, "rhs": 4},
    {"op": "acc_part", "block": 128, "part": 1, "parts": 2},
    {"op": "binary", "f": "mul", "lhs": 5, "rhs": 6},
    {"op": "convert", "to": "bf16", "x": 7}
  ] },
  "block": [384, 1, 1],
  "cluster": [1, 1, 1],
  "grid": {"rule": "sms", "ctas_per_sm": 1},
  "dynamic_smem_bytes": 213056,
  "tensors": [
    {"name": "A", "dtype": "bf16", "shape": ["SM", "K"], "role": "input"},
    {"name": "B", "dtype": "bf16", "shape": ["G", "N", "K"], "role": "input"},
    {"name": "expert", "dtype": "i32", "shape": ["MB"], "role": "input"},
    {"name": "C", "dtype": "bf16", "shape": ["SM", "H"], "role": "output"}
  ],
  "params": [
    {"kind": "tma", "tensor": "A", "dtype": "bf16", "box_dims": [128, 64], "swizzle": "128B", "l2_promotion": "128B", "oob_fill": "zero", "interleave": "none"},
    {"kind": "tma", "tensor": "B", "dtype": "bf16", "box_dims": [1, 256, 64], "swizzle": "128B", "l2_promotion": "128B", "oob_fill": "zero", "interleave": "none"},
    {"kind": "tma", "tensor": "C", "dtype": "bf16", "box_dims": [64, 64], "swizzle": "128B", "l2_promotion": "128B", "oob_fill": "zero", "interleave": "none"},
    {"kind": "ptr", "tensor": "expert"},
    {"kind": "scalar", "ty": "i32", "symbol": "SM"},
    {"kind": "scalar", "ty": "i32", "symbol": "K"},
    {"kind": "scalar", "ty": "i32", "symbol": "G"},
    {"kind": "scalar", "ty": "i32", "symbol": "N"},
    {"kind": "scalar", "ty": "i32", "symbol": "MB"},
    {"kind": "scalar", "ty": "i32", "symbol": "H"}
  ]
}"#;

fn swiglu_manifest(json: &str) -> tilec_artifact::Manifest {
    let m = tilec_artifact::Manifest::from_json_str(json).unwrap();
    m.validate().unwrap();
    m
}

#[test]
fn a_grouped_swiglu_manifest_binds_c_to_half_the_product() {
    use crate::acc_parts::AccParts;
    let m = swiglu_manifest(SWIGLU_MANIFEST);
    let spec = GroupedSpec::from_manifest(&m).unwrap();
    assert_eq!((spec.kind, spec.input), (GroupedKind::Contiguous, tilec_artifact::DType::Bf16));
    let epilogue = spec.epilogue.as_ref().expect("SwiGLU is more than a rounding");
    assert_eq!(epilogue.gated, Some(AccParts { block: 128, parts: 2, cols: "H".into() }));
    assert_eq!(Some(&epilogue.epilogue), m.epilogue.as_ref());

    // N = 512 product columns: two runs of gate and up, C 256 wide.
    let p = GroupedProblem::parse("contiguous:512x256:300,0,129").unwrap();
    assert_eq!(spec.out_cols(&p).unwrap(), 256);
    let sym = spec.problem(&p).unwrap();
    let get = |s: &str| sym.get(s).unwrap();
    assert_eq!((get("G"), get("N"), get("H"), get("K"), get("SM"), get("MB")), (3, 512, 256, 256, 640, 5));
    // Every symbol and tensor of the kernel binds: C is SM x H.
    let bind = |name: &str, dtype, bytes| crate::plan::TensorBinding { name: name.into(), dtype, addr: 1 << 20, bytes };
    use tilec_artifact::DType::{Bf16, I32};
    let tensors = [bind("A", Bf16, 640 * 256 * 2), bind("B", Bf16, 3 * 512 * 256 * 2), bind("expert", I32, 5 * 4), bind("C", Bf16, 640 * 256 * 2)];
    crate::plan::plan_launch(&m, &sym, &tensors, 132).unwrap();

    // N must interleave whole runs of both parts.
    let odd = GroupedProblem::parse("contiguous:384x256:300,0,129").unwrap();
    let err = spec.problem(&odd).unwrap_err().to_string();
    assert!(err.contains("N=384 product columns do not interleave 2 parts in whole runs of 128 columns: N must be a multiple of 256"), "{err}");
    assert_eq!(spec.out_cols(&odd).unwrap_err().to_string(), err);

    // The masked form of the same epilogue: C[G, MM, H].
    let masked = SWIGLU_MANIFEST
        .replace(r#""shape": ["SM", "K"]"#, r#""shape": ["G", "MM", "K"]"#)
        .replace(r#"{"name": "expert", "dtype": "i32", "shape": ["MB"], "role": "input"}"#, r#"{"name": "counts", "dtype": "i32", "shape": ["G"], "role": "input"}"#)
        .replace(r#""shape": ["SM", "H"]"#, r#""shape": ["G", "MM", "H"]"#);
    let masked = GroupedSpec::from_manifest(&tilec_artifact::Manifest::from_json_str(&masked).unwrap()).unwrap();
    assert_eq!(masked.kind, GroupedKind::Masked);
    let p = GroupedProblem::parse("masked/256:768x128:5,0,256").unwrap();
    let sym = masked.problem(&p).unwrap();
    assert_eq!((sym.get("MM").unwrap(), sym.get("H").unwrap()), (256, 384));
}

#[test]
fn a_grouped_epilogue_that_does_not_fit_is_refused() {
    let err = |json: &str| GroupedSpec::from_manifest(&tilec_artifact::Manifest::from_json_str(json).unwrap()).unwrap_err().to_string();
    // C as wide as the product.
    assert_eq!(
        err(&SWIGLU_MANIFEST.replace(r#""shape": ["SM", "H"]"#, r#""shape": ["SM", "N"]"#)),
        "not a GEMM artifact: not a grouped GEMM: the epilogue reads 2 interleaved parts of the product's N columns (runs of 128), \
         so C has N/2 columns: want C's last dimension a symbol of its own, such as H (got C[SM, N])"
    );
    assert!(err(&SWIGLU_MANIFEST.replace(r#""shape": ["SM", "H"]"#, r#""shape": ["SM", "K"]"#)).contains("(got C[SM, K])"));
    // C's rows are the layout's.
    assert!(err(&SWIGLU_MANIFEST.replace(r#""shape": ["SM", "H"]"#, r#""shape": ["MB", "H"]"#)).contains("want C bf16 [SM, H] (Output)"));
    // A plain epilogue stores C[SM, N].
    let plain = r#""epilogue": { "values": [{"op": "acc"}, {"op": "convert", "to": "bf16", "x": 0}] },"#;
    let start = SWIGLU_MANIFEST.find(r#""epilogue""#).unwrap();
    let end = SWIGLU_MANIFEST.find(r#""block": [384"#).unwrap();
    let plain = format!("{}{plain}\n  {}", &SWIGLU_MANIFEST[..start], &SWIGLU_MANIFEST[end..]);
    assert!(err(&plain).contains("want C bf16 [SM, N] (Output)"));
    let plain_spec = GroupedSpec::from_manifest(&tilec_artifact::Manifest::from_json_str(&plain.replace(r#"["SM", "H"]"#, r#"["SM", "N"]"#)).unwrap());
    assert_eq!(plain_spec.unwrap().epilogue, None, "a rounding only is a plain grouped GEMM");
    // Vectors are not part of the grouped signatures.
    let bias = SWIGLU_MANIFEST
        .replace(r#"{"op": "splat", "value": 1.0}"#, r#"{"op": "vector", "tensor": "Bias", "along": "cols"}"#)
        .replace(r#"{"name": "expert""#, r#"{"name": "Bias", "dtype": "bf16", "shape": ["H"], "role": "input"}, {"name": "expert""#);
    assert!(err(&bias).contains("the epilogue reads vector Bias: a grouped kernel's epilogue may read the accumulator and interleaved parts of it"));
    // Parts must be two or more.
    let one_part = SWIGLU_MANIFEST.replace(r#""part": 1, "parts": 2"#, r#""part": 0, "parts": 1"#).replace(r#""part": 0, "parts": 2"#, r#""part": 0, "parts": 1"#);
    assert!(err(&one_part).contains("the epilogue reads 1 interleaved parts in runs of 128 columns: want two or more"));
}

#[test]
fn the_grouped_reference_takes_each_product_through_the_epilogue() {
    use half::bf16;
    use tilec_artifact::{round_to, DType, Epilogue};
    // SwiGLU with runs of one column: C's column j is silu(product[2j]) * product[2j + 1].
    let values = &SWIGLU_MANIFEST[SWIGLU_MANIFEST.find(r#"{ "values""#).unwrap()..SWIGLU_MANIFEST.find(r#"] },"#).unwrap() + 3];
    let program: Epilogue = serde_json::from_str(&values.replace(r#""block": 128"#, r#""block": 1"#)).unwrap();
    let epilogue = GroupedEpilogue { epilogue: program, gated: Some(crate::acc_parts::AccParts { block: 1, parts: 2, cols: "H".into() }) };
    // Experts of 1, 0 and 2 rows in segments of 2: rows 0 and 2, 3 are valid, row 1 padding. K = 1, N = 4.
    let p = GroupedProblem { form: GroupedForm::Contiguous { block_m: 2 }, n: 4, k: 1, rows: vec![1, 0, 2] };
    assert_eq!(p.checked_rows(), [(0, vec![0]), (2, vec![2, 3])]);
    let a = [1.0f32, f32::NAN, 2.0, -1.0];
    let b = [[0.0f32, 3.0, 2.0, -1.0], [f32::NAN; 4], [1.0, 0.5, -1.0, 4.0]];
    let a_row = |row: u64| vec![a[row as usize]];
    let b_expert = |g: usize| b[g].to_vec();
    // The products of rows 0, 2 and 3: [0, 3, 2, -1], [2, 1, -2, 8], [-1, -0.5, 1, -4].
    let product = reference_rows(&p, None, a_row, b_expert).unwrap();
    assert_eq!(product, [0.0, 3.0, 2.0, -1.0, 2.0, 1.0, -2.0, 8.0, -1.0, -0.5, 1.0, -4.0]);
    let silu = |x: f64| x / (1.0 + (-x).exp());
    let want: Vec<f64> = [(0.0, 3.0), (2.0, -1.0), (2.0, 1.0), (-2.0, 8.0), (-1.0, -0.5), (1.0, -4.0)]
        .iter()
        .map(|&(gate, up)| round_to(DType::Bf16, silu(gate) * up))
        .collect();
    let got = reference_rows(&p, Some(&epilogue), a_row, b_expert).unwrap();
    assert_eq!(got, want);
    // silu(2) = 2 / (1 + e^-2) = 1.76159..., whose nearest bf16 is 1 + 97/128.
    assert_eq!(got[2], 1.7578125);

    // C is 4 rows x 2 columns; the padding row is not compared.
    let mut out: Vec<bf16> = [0.0, 0.0, f64::NAN, f64::NAN, 0.0, 0.0, 0.0, 0.0].iter().map(|&x| bf16::from_f64(x)).collect();
    for (row, vals) in [0usize, 2, 3].iter().zip(want.chunks(2)) {
        out[row * 2] = bf16::from_f64(vals[0]);
        out[row * 2 + 1] = bf16::from_f64(vals[1]);
    }
    assert_eq!(check_output(&p, Some(&epilogue), &out, a_row, b_expert).unwrap(), 0.0);
    // A value left poisoned fails.
    out[7] = bf16::NAN;
    assert!(check_output(&p, Some(&epilogue), &out, a_row, b_expert).unwrap().is_nan());
    // A C smaller than the layout's rows of C's columns is refused.
    let err = check_output(&p, Some(&epilogue), &out[..6], a_row, b_expert).unwrap_err().to_string();
    assert!(err.contains("C holds 6 elements, want 4 rows of 2"), "{err}");
    let odd = GroupedProblem { n: 5, ..p };
    assert!(reference_rows(&odd, Some(&epilogue), a_row, |_| vec![0.0; 5]).unwrap_err().to_string().contains("N must be a multiple of 2"));
}
