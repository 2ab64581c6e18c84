//! Unit tests of the pure parts of `tilec-bench` (no GPU).

use crate::bench::*;
use crate::check::*;
use crate::timing::{round_order, rounds_within, MIN_ROUNDS};

#[test]
fn default_shapes_are_the_design_list() {
    let s = default_shapes();
    assert_eq!(s.len(), 2 + 3 * 6);
    assert_eq!(s[0], Shape::new(4096, 4096, 4096));
    assert_eq!(s[1], Shape::new(8192, 8192, 8192));
    assert!(s.contains(&Shape::new(64, 2112, 7168)));
    assert!(s.contains(&Shape::new(128, 32768, 512)));
    assert!(s.contains(&Shape::new(4096, 7168, 2048)));
    assert_eq!(s[2..].iter().filter(|x| x.m == 64).count(), 6);
}

#[test]
fn parse_shapes_forms_and_errors() {
    assert_eq!(parse_shapes("128x256x64").unwrap(), vec![Shape::new(128, 256, 64)]);
    assert_eq!(
        parse_shapes(" 1X2X3 , 4x5x6,1x2x3").unwrap(),
        vec![Shape::new(1, 2, 3), Shape::new(4, 5, 6)],
        "trims, accepts X, drops duplicates"
    );
    assert_eq!(parse_shapes("default").unwrap(), default_shapes());
    assert_eq!(parse_shapes("square").unwrap().len(), 2);
    assert_eq!(parse_shapes("llm").unwrap().len(), 18);
    let mixed = parse_shapes("64x64x64,square").unwrap();
    assert_eq!(mixed.len(), 3);
    assert_eq!(mixed[0], Shape::new(64, 64, 64));
    for bad in ["", "1x2", "1x2x3x4", "ax2x3", "0x8x8", "-1x2x3", "1x2x"] {
        assert!(parse_shapes(bad).is_err(), "`{bad}` must be rejected");
    }
}

#[test]
fn parse_dtype_list() {
    assert_eq!(parse_dtypes("bf16,fp8").unwrap(), vec![BenchDtype::Bf16, BenchDtype::Fp8]);
    assert_eq!(parse_dtypes("e4m3,bf16,bf16").unwrap(), vec![BenchDtype::Fp8, BenchDtype::Bf16]);
    assert!(parse_dtypes("fp16").is_err());
    assert!(parse_dtypes("").is_err());
}

#[test]
fn l2_rotation_count() {
    let l2 = 50 << 20;
    // Tiny working set: many sets, capped.
    assert_eq!(rotation_sets(1 << 20, l2, 4.0, 64, u64::MAX), 64);
    assert_eq!(rotation_sets(1 << 20, l2, 4.0, 1000, u64::MAX), 200);
    // 64x2112x7168 bf16, ~31.5 MB per set: ceil(200 MiB / 31.5 MB) = 7.
    let set = Shape::new(64, 2112, 7168).min_bytes(BenchDtype::Bf16);
    assert_eq!(rotation_sets(set, l2, 4.0, 64, u64::MAX), 7);
    assert!(rotation_sets(set, l2, 4.0, 64, u64::MAX) as u64 * set >= 4 * l2);
    // 8192^3 bf16, 384 MiB per set: one set is already 7.7x the L2.
    assert_eq!(rotation_sets(3 * 8192 * 8192 * 2, l2, 4.0, 64, u64::MAX), 1);
    // Exactly the target: no extra set.
    assert_eq!(rotation_sets(l2, l2, 4.0, 64, u64::MAX), 4);
    // Memory budget caps it, but never below one.
    assert_eq!(rotation_sets(1 << 20, l2, 4.0, 64, 10 << 20), 10);
    assert_eq!(rotation_sets(1 << 30, l2, 4.0, 64, 1), 1);
    assert_eq!(rotation_sets(0, l2, 4.0, 64, u64::MAX), 1);
}

#[test]
fn e4m3_conversion() {
    assert_eq!(f32_to_e4m3(0.0), 0x00);
    assert_eq!(f32_to_e4m3(-0.0), 0x80);
    assert_eq!(f32_to_e4m3(1.0), 0x38);
    assert_eq!(f32_to_e4m3(-2.0), 0xC0);
    assert_eq!(f32_to_e4m3(448.0), 0x7E);
    assert_eq!(f32_to_e4m3(1e6), 0x7E, "saturates");
    assert_eq!(f32_to_e4m3(f32::NAN), 0x7F);
    assert_eq!(f32_to_e4m3(1.0 / 512.0), 0x01, "smallest subnormal");
    assert_eq!(f32_to_e4m3(1.0 / 64.0), 0x08, "smallest normal");
    // 1 + 1/16 is halfway between 1 and 1.125: ties to even (1.0).
    assert_eq!(f32_to_e4m3(1.0625), 0x38);
    assert_eq!(f32_to_e4m3(1.1875), 0x3A, "halfway 1.125/1.25 goes to even 1.25");
    // Every finite code round-trips, and decoding is monotone on positives.
    let mut prev = -1.0f32;
    for b in 0u8..0x7F {
        let v = e4m3_to_f32(b);
        assert_eq!(f32_to_e4m3(v), b, "code {b:#x} = {v}");
        assert_eq!(f32_to_e4m3(-v), b | 0x80);
        assert!(v > prev);
        prev = v;
    }
    assert_eq!(e4m3_to_f32(0x7E), 448.0);
    assert!(e4m3_to_f32(0x7F).is_nan() && e4m3_to_f32(0xFF).is_nan());
    // Rounding picks the nearest code.
    let mut rng = Rng::new(7);
    for _ in 0..10000 {
        let x = rng.uniform() * 3.0;
        let q = e4m3_to_f32(f32_to_e4m3(x));
        let b = f32_to_e4m3(x);
        for nb in [b.wrapping_sub(1), b.wrapping_add(1)] {
            let nv = e4m3_to_f32(nb);
            if nv.is_finite() && (nb & 0x80) == (b & 0x80) {
                assert!((x - q).abs() <= (x - nv).abs() + 1e-7, "{x}: {q} vs neighbour {nv}");
            }
        }
    }
    let r = random_e4m3(1000, &mut Rng::new(1));
    assert!(r.iter().any(|&b| b != 0 && b != 0x80));
    assert!(r.iter().all(|&b| e4m3_to_f32(b).abs() <= 1.0));
}

#[test]
fn bf16_frobenius_and_row_reference() {
    use half::bf16;
    let r: Vec<bf16> = [1.0f32, 2.0, -3.0].iter().map(|&x| bf16::from_f32(x)).collect();
    let o: Vec<bf16> = [0.5f32, 1.0, -1.5].iter().map(|&x| bf16::from_f32(x)).collect();
    assert_eq!(rel_frobenius_bf16(&o, &r, 0.5), 0.0);
    assert!((rel_frobenius_bf16(&o, &r, 1.0) - 0.5).abs() < 1e-12);
    let mut bad = o.clone();
    bad[1] = bf16::from_bits(POISON_BF16);
    assert!(rel_frobenius_bf16(&bad, &r, 0.5).is_nan());
    assert_eq!(sample_rows(100, 10, 10, 1000), (0..10).map(|i| i * 10).collect::<Vec<_>>());
    assert_eq!(sample_rows(4, 1000, 1000, 1), vec![0]);
    assert_eq!(sample_rows(4, 1, 1, u64::MAX), vec![0, 1, 2, 3]);
    // Rows of the reference agree with the full FP64 reference.
    let (m, n, k) = (9, 13, 17);
    let mut rng = Rng::new(3);
    let a = random_bf16(m * k, &mut rng);
    let b = random_bf16(n * k, &mut rng);
    let full = cpu_gemm_tn(&a, &b, m, n, k);
    let af: Vec<f32> = a.iter().map(|x| x.to_f32()).collect();
    let bfv: Vec<f32> = b.iter().map(|x| x.to_f32()).collect();
    let rows = [0, 4, 8];
    let part = cpu_gemm_tn_rows(&af, &bfv, n, k, &rows);
    for (ri, &i) in rows.iter().enumerate() {
        assert_eq!(&part[ri * n..(ri + 1) * n], &full[i * n..(i + 1) * n]);
    }
}

#[test]
fn progress_lines() {
    assert_eq!(progress(1, 4, 30.0), "[1/4] 0m30s elapsed, about 1m30s left");
    assert_eq!(progress(4, 4, 125.0), "[4/4] 2m05s elapsed, about 0m00s left");
    assert_eq!(progress(0, 4, 0.0), "[0/4] 0m00s elapsed, about ? left");
}

#[test]
fn rounds_fit_the_time_budget() {
    // Fast kernels: every round asked for.
    assert_eq!(rounds_within(100, 3, 0.3, 3000.0), 100);
    // Three kernels of 100 ms each: 3 s per kernel allows 30 rounds.
    assert_eq!(rounds_within(100, 3, 300.0, 3000.0), 30);
    // Slower still: never below the minimum, nor above what was asked.
    assert_eq!(rounds_within(100, 1, 10_000.0, 3000.0), MIN_ROUNDS);
    assert_eq!(rounds_within(2, 1, 10_000.0, 3000.0), 2);
}

#[test]
fn kernel_config_from_the_manifest() {
    let m = tilec_artifact::Manifest::from_json_str(
        r#"{
  "format_version": 1, "kernel_name": "g", "entry": "g", "target": "sm_90a",
  "block": [384, 1, 1], "cluster": [2, 1, 1],
  "grid": { "rule": "tiles", "block_m": 128, "block_n": 256, "group_m": 8 },
  "dynamic_smem_bytes": 200000,
  "tensors": [
    { "name": "A", "dtype": "bf16", "shape": ["M", "K"], "role": "input" },
    { "name": "B", "dtype": "bf16", "shape": ["N", "K"], "role": "input" },
    { "name": "C", "dtype": "bf16", "shape": ["M", "N"], "role": "output" }
  ],
  "params": [
    { "kind": "tma", "tensor": "A", "dtype": "bf16", "box_dims": [128, 64], "swizzle": "128B" },
    { "kind": "tma", "tensor": "B", "dtype": "bf16", "box_dims": [256, 64], "swizzle": "64B" },
    { "kind": "ptr", "tensor": "C" }
  ]
}"#,
    )
    .unwrap();
    let c = kernel_config(&m);
    assert_eq!(c.target, "sm_90a");
    assert_eq!(c.grid, serde_json::json!({"rule": "tiles", "block_m": 128, "block_n": 256, "group_m": 8}));
    assert_eq!(c.tma_boxes.len(), 2);
    assert_eq!((c.tma_boxes[1].tensor.as_str(), &c.tma_boxes[1].box_dims[..]), ("B", &[256, 64][..]));
    assert_eq!((c.tma_boxes[0].swizzle.as_str(), c.tma_boxes[1].swizzle.as_str()), ("128B", "64B"));
}

#[test]
fn every_kernel_takes_every_position_of_a_round_equally_often() {
    let kernels = 4;
    let mut at = vec![vec![0; kernels]; kernels];
    for round in 0..3 * kernels {
        let order: Vec<usize> = round_order(round, kernels).collect();
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..kernels).collect::<Vec<_>>(), "round {round} runs each kernel once: {order:?}");
        for (position, &k) in order.iter().enumerate() {
            at[k][position] += 1;
        }
    }
    assert!(at.iter().flatten().all(|&n| n == 3), "{at:?}");
}

#[test]
fn kernels_do_not_always_follow_the_same_kernel() {
    let kernels = 5;
    let mut before = vec![std::collections::BTreeSet::new(); kernels];
    for round in 0..8 * kernels {
        let order: Vec<usize> = round_order(round, kernels).collect();
        for pair in order.windows(2) {
            before[pair[1]].insert(pair[0]);
        }
    }
    assert!(before.iter().all(|b| b.len() >= 3), "each kernel's predecessors over 8 blocks of rounds: {before:?}");
}
