//! Unit tests of the pure parts of `tilec-bench` (no GPU).

use crate::bench::*;
use crate::check::*;
use crate::plot::*;

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
fn flop_and_byte_counts() {
    let s = Shape::new(4096, 4096, 4096);
    assert_eq!(s.flops(), 2.0 * 4096f64.powi(3));
    // bf16: A, B read once (2 B each), C written once (2 B).
    assert_eq!(s.min_bytes(BenchDtype::Bf16), 3 * 4096 * 4096 * 2);
    // fp8: A and B one byte, C bf16.
    assert_eq!(s.min_bytes(BenchDtype::Fp8), 2 * 4096 * 4096 + 4096 * 4096 * 2);
    let d = Shape::new(64, 2112, 7168);
    assert_eq!(d.min_bytes(BenchDtype::Bf16), (64 * 7168 + 2112 * 7168) * 2 + 64 * 2112 * 2);
    assert!(d.is_small_m() && !s.is_small_m());
    // 1 ms for 2*4096^3 flops is 137.4 TFLOP/s; 1 GB in 1 ms is 1000 GB/s.
    assert!((tflops(s.flops(), 1.0) - 137.438953472).abs() < 1e-9);
    assert!((gbps(1_000_000_000, 1.0) - 1000.0).abs() < 1e-9);
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
fn stats_and_percentiles() {
    let v: Vec<f64> = (1..=11).map(|x| x as f64).collect();
    assert_eq!(percentile(&v, 0.5), 6.0);
    assert_eq!(percentile(&v, 0.0), 1.0);
    assert_eq!(percentile(&v, 1.0), 11.0);
    assert!((percentile(&v, 0.1) - 2.0).abs() < 1e-12);
    assert!((percentile(&[1.0, 2.0], 0.5) - 1.5).abs() < 1e-12);
    assert!(percentile(&[], 0.5).is_nan());
    // Unsorted input with an outlier.
    let s = Stats::from_samples(&[5.0, 1.0, 3.0, 2.0, 4.0, 100.0]).unwrap();
    assert_eq!(s.reps, 6);
    assert_eq!(s.min_ms, 1.0);
    assert_eq!(s.max_ms, 100.0);
    assert!((s.median_ms - 3.5).abs() < 1e-12);
    assert!((s.mean_ms - 115.0 / 6.0).abs() < 1e-12);
    assert!(s.p10_ms <= s.p25_ms && s.p25_ms <= s.median_ms && s.median_ms <= s.p75_ms && s.p75_ms <= s.p90_ms);
    assert!(Stats::from_samples(&[]).is_none());
    assert!(Stats::from_samples(&[1.0, f64::NAN]).is_none());
    let one = Stats::from_samples(&[2.0]).unwrap();
    assert_eq!((one.median_ms, one.p10_ms, one.p90_ms, one.spread()), (2.0, 2.0, 2.0, 0.0));
}

fn sample_report() -> Report {
    let stats = Stats::from_samples(&[1.0, 1.1, 0.9]).unwrap();
    let mut r = ShapeResult::new(Shape::new(64, 2112, 7168), BenchDtype::Bf16);
    r.rotate_sets = 7;
    r.seed = 42;
    let mut ours = RunResult::new("artifacts/gemm_128x128", RunKind::Ours);
    ours.check = Some(Check { reference: "cublas".into(), rel_err: Some(1.5e-4), threshold: 1e-2, pass: true });
    ours.stats = Some(stats.clone());
    ours.tflops = Some(300.0);
    ours.gbps = Some(2500.0);
    let mut blas = RunResult::new("cublas", RunKind::Baseline);
    blas.tflops = Some(400.0);
    blas.gbps = Some(3300.0);
    blas.stats = Some(stats.clone());
    let mut lt = RunResult::new("cublaslt", RunKind::Baseline);
    lt.tflops = Some(500.0);
    lt.check = Some(Check { reference: "cublas".into(), rel_err: None, threshold: 1e-2, pass: false });
    r.runs = vec![ours, blas, lt];
    r.summarize();
    let mut f = ShapeResult::new(Shape::new(4096, 4096, 4096), BenchDtype::Fp8);
    let mut fl = RunResult::new("cublaslt-fp8", RunKind::Baseline);
    fl.tflops = Some(1200.0);
    f.runs = vec![fl];
    f.summarize();
    Report {
        schema: SCHEMA.into(),
        created_unix: 1,
        command_line: vec!["tilec-bench".into(), "--baseline-only".into()],
        device: DeviceInfo { name: "NVIDIA H100".into(), sm: "sm_90".into(), l2_bytes: 50 << 20, ..Default::default() },
        config: BenchConfig {
            warmup: 10,
            reps: 100,
            dtypes: vec![BenchDtype::Bf16, BenchDtype::Fp8],
            threshold: 1e-2,
            l2_factor: 4.0,
            max_sets: 64,
            max_run_ms: 3000.0,
            baseline_only: false,
            jit_cache_disabled: true,
            spin_kernel: true,
            fp8_scale_a: 0.5,
            fp8_scale_b: 0.25,
            seed: 42,
        },
        artifacts: vec![ArtifactInfo {
            dir: "artifacts/gemm_128x128".into(),
            entry: "gemm".into(),
            kernel_name: "gemm".into(),
            dtype: Some(BenchDtype::Bf16),
            block: [384, 1, 1],
            cluster: [2, 1, 1],
            dynamic_smem_bytes: 200000,
            module_load_ms: Some(110.0),
            first_launch_ms: None,
            num_regs: Some(168),
            static_smem_bytes: Some(0),
            error: None,
        }],
        results: vec![r, f],
    }
}

#[test]
fn summary_picks_usable_best() {
    let rep = sample_report();
    let r = &rep.results[0];
    // cuBLASLt is faster but failed its check, so cuBLAS is the best baseline.
    assert_eq!(r.best_ours.as_deref(), Some("artifacts/gemm_128x128"));
    assert_eq!(r.best_baseline.as_deref(), Some("cublas"));
    assert!((r.ratio.unwrap() - 0.75).abs() < 1e-12);
    assert!(r.any_check_failed());
    let f = &rep.results[1];
    assert_eq!(f.best_ours, None);
    assert_eq!(f.best_baseline.as_deref(), Some("cublaslt-fp8"));
    assert_eq!(f.ratio, None);
}

#[test]
fn json_round_trip() {
    let rep = sample_report();
    let text = rep.to_json();
    let back = Report::from_json(&text).unwrap();
    assert_eq!(back, rep);
    // Field names other tools read.
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["schema"], "tilec-bench/1");
    assert_eq!(v["results"][0]["dtype"], "bf16");
    assert_eq!(v["results"][1]["dtype"], "fp8");
    assert_eq!(v["results"][0]["runs"][0]["kind"], "ours");
    assert!(v["results"][0]["runs"][0]["stats"]["median_ms"].is_number());
    assert!(v["results"][0]["runs"][2]["check"]["rel_err"].is_null(), "NaN error is written as null");
    assert!(v["artifacts"][0]["module_load_ms"].is_number());
    let wrong = text.replace("tilec-bench/1", "tilec-bench/0");
    assert!(Report::from_json(&wrong).is_err());
}

#[test]
fn table_formatting() {
    let rep = sample_report();
    let t = format_table(&rep.results);
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines.len(), 3, "{t}");
    assert!(lines[0].starts_with("shape (MxNxK)"));
    assert!(lines[0].contains("ours_TF") && lines[0].contains("cublas_TF") && lines[0].contains("ratio"));
    let row = lines[1];
    assert!(row.starts_with("64x2112x7168"), "{row}");
    assert!(row.contains(" bf16 "));
    assert!(row.contains("300.0") && row.contains("400.0"));
    assert!(row.contains("0.750"));
    assert!(row.contains("2500") && row.contains("3300"), "GB/s shown for small M: {row}");
    assert!(row.contains("FAIL"));
    assert!(row.trim_end().ends_with("gemm_128x128"));
    // cuBLASLt failed, so its column is empty.
    let fields: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(fields[5], "-");
    let frow = lines[2];
    assert!(frow.starts_with("4096x4096x4096") && frow.contains(" fp8 ") && frow.contains("1200.0"), "{frow}");
    assert!(!frow.contains("FAIL"));
    // All rows have the header's column positions for the numeric columns.
    assert_eq!(lines[0].find("ours_TF").map(|p| p + 7), row.find("300.0").map(|p| p + 5));
}

#[test]
fn short_names() {
    assert_eq!(short_name("a/b/gemm_x/"), "gemm_x");
    assert_eq!(short_name("gemm"), "gemm");
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

/// Splits a PNG into (type, data) chunks, checking each CRC.
fn png_chunks(png: &[u8]) -> Vec<(String, Vec<u8>)> {
    assert_eq!(&png[..8], &PNG_SIGNATURE);
    let mut i = 8;
    let mut out = Vec::new();
    while i < png.len() {
        let len = u32::from_be_bytes(png[i..i + 4].try_into().unwrap()) as usize;
        let kind = String::from_utf8(png[i + 4..i + 8].to_vec()).unwrap();
        let data = png[i + 8..i + 8 + len].to_vec();
        let crc = u32::from_be_bytes(png[i + 8 + len..i + 12 + len].try_into().unwrap());
        let mut c = 0xFFFF_FFFFu32;
        for &b in &png[i + 4..i + 8 + len] {
            c ^= b as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
            }
        }
        assert_eq!(crc, !c, "CRC of {kind}");
        out.push((kind, data));
        i += 12 + len;
    }
    out
}

/// A minimal inflate for fixed-Huffman and stored blocks: enough to check
/// our encoder without a dependency.
fn inflate_fixed(z: &[u8]) -> Vec<u8> {
    assert_eq!(z[0] & 0x0F, 8, "deflate");
    assert_eq!(((z[0] as u16) << 8 | z[1] as u16) % 31, 0, "zlib header check");
    let data = &z[2..z.len() - 4];
    let mut pos = 0usize; // bit position
    let bit = |pos: &mut usize| -> u32 {
        let b = (data[*pos / 8] >> (*pos % 8)) & 1;
        *pos += 1;
        b as u32
    };
    let bits = |pos: &mut usize, n: u32| -> u32 { (0..n).fold(0, |acc, i| acc | bit(pos) << i) };
    let mut out: Vec<u8> = Vec::new();
    loop {
        let last = bits(&mut pos, 1);
        let ty = bits(&mut pos, 2);
        assert_eq!(ty, 1, "only fixed-Huffman blocks are written");
        loop {
            // Decode one literal/length symbol of the fixed code.
            let mut code = 0u32;
            let mut len = 0;
            let sym = loop {
                code = code << 1 | bit(&mut pos);
                len += 1;
                match len {
                    7 if code <= 0x17 => break code + 256,
                    8 if (0x30..=0xBF).contains(&code) => break code - 0x30,
                    8 if (0xC0..=0xC7).contains(&code) => break code - 0xC0 + 280,
                    9 if (0x190..=0x1FF).contains(&code) => break code - 0x190 + 144,
                    9 => panic!("bad code"),
                    _ => {}
                }
            };
            if sym < 256 {
                out.push(sym as u8);
            } else if sym == 256 {
                break;
            } else {
                const LB: [usize; 29] = [
                    3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163,
                    195, 227, 258,
                ];
                const LE: [u32; 29] = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0];
                const DB: [usize; 30] = [
                    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049,
                    3073, 4097, 6145, 8193, 12289, 16385, 24577,
                ];
                const DE: [u32; 30] =
                    [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13];
                let li = (sym - 257) as usize;
                let l = LB[li] + bits(&mut pos, LE[li]) as usize;
                let dcode = (0..5).fold(0u32, |acc, _| acc << 1 | bit(&mut pos)) as usize;
                let d = DB[dcode] + bits(&mut pos, DE[dcode]) as usize;
                assert!(d <= out.len(), "distance past the start");
                for _ in 0..l {
                    out.push(out[out.len() - d]);
                }
            }
        }
        if last == 1 {
            break;
        }
    }
    let adler = u32::from_be_bytes(z[z.len() - 4..].try_into().unwrap());
    let (mut a, mut b) = (1u32, 0u32);
    for &x in &out {
        a = (a + x as u32) % 65521;
        b = (b + a) % 65521;
    }
    assert_eq!(adler, (b << 16) | a, "adler32");
    out
}

#[test]
fn zlib_round_trip() {
    let mut rng = Rng::new(5);
    let mut data: Vec<u8> = (0..5000).map(|i| if i % 700 < 400 { 7 } else { (rng.next_u64() % 4) as u8 }).collect();
    data.extend(std::iter::repeat_n(200u8, 1000)); // literals >= 144 and long runs
    data.extend((0..=255u8).cycle().take(600));
    for stride in [0, 1, 17, 301, 40000] {
        assert_eq!(inflate_fixed(&zlib_compress(&data, stride)), data, "stride {stride}");
    }
    assert_eq!(inflate_fixed(&zlib_compress(&[], 10)), Vec::<u8>::new());
}

#[test]
fn png_writer_is_valid_and_compresses() {
    let (w, h) = (37u32, 11u32);
    let pixels: Vec<u8> = (0..w * h).map(|i| ((i % w) / 5 % 3) as u8).collect();
    let png = encode_png_indexed(w, h, &pixels, &PALETTE);
    let chunks = png_chunks(&png);
    let kinds: Vec<&str> = chunks.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(kinds, ["IHDR", "PLTE", "IDAT", "IEND"]);
    let ihdr = &chunks[0].1;
    assert_eq!(u32::from_be_bytes(ihdr[0..4].try_into().unwrap()), w);
    assert_eq!(u32::from_be_bytes(ihdr[4..8].try_into().unwrap()), h);
    assert_eq!(&ihdr[8..13], &[8, 3, 0, 0, 0]);
    assert_eq!(chunks[1].1.len(), PALETTE.len() * 3);
    let raw = inflate_fixed(&chunks[2].1);
    assert_eq!(raw.len(), (h * (w + 1)) as usize);
    for (y, row) in raw.chunks(w as usize + 1).enumerate() {
        assert_eq!(row[0], 0, "filter none");
        assert_eq!(&row[1..], &pixels[y * w as usize..(y + 1) * w as usize]);
    }
}

#[test]
fn chart_renders_from_results() {
    let rep = sample_report();
    let chart = BarChart::from_results(&rep.results, "tilec-bench H100");
    assert_eq!(chart.groups.len(), 2);
    assert_eq!(chart.groups[0].0, "64x2112x7168 bf16");
    assert_eq!(chart.groups[0].1, vec![Some(300.0), Some(400.0), None], "failed cuBLASLt has no bar");
    assert!(chart.groups[0].2);
    assert_eq!(chart.groups[1].1, vec![None, None, Some(1200.0)]);
    let cv = chart.render();
    assert!(cv.pixels.contains(&color::OURS) && cv.pixels.contains(&color::CUBLAS));
    assert!(cv.pixels.contains(&color::CUBLASLT) && cv.pixels.contains(&color::FAIL));
    let png = chart.to_png();
    let chunks = png_chunks(&png);
    let raw = inflate_fixed(&chunks[2].1);
    assert_eq!(raw.len(), (cv.height * (cv.width + 1)) as usize);
    assert!(png.len() < raw.len() / 4, "compresses: {} of {}", png.len(), raw.len());
    // Full default run: 40 groups still render to a reasonable size.
    let mut many = rep.results[0].clone();
    many.dtype = BenchDtype::Fp8;
    let results: Vec<ShapeResult> = (0..40).map(|_| many.clone()).collect();
    let big = BarChart::from_results(&results, "t").render();
    assert!(big.width < 2000 && big.height < 1000, "{}x{}", big.width, big.height);
}

#[test]
fn nice_steps() {
    assert_eq!(nice_step(800.0, 8), 100.0);
    assert_eq!(nice_step(1500.0, 8), 200.0);
    assert_eq!(nice_step(9.0, 8), 2.0);
    assert_eq!(nice_step(0.0, 8), 1.0);
    assert_eq!(nice_step(f64::NAN, 8), 1.0);
}

#[test]
fn cli_parsing() {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let d = parse_args(&[]).unwrap();
    assert_eq!(d, BenchArgs::default());
    assert_eq!(d.shapes.len(), 20);
    let a = parse_args(&s(&[
        "--artifact", "a1", "--artifact=a2", "--shapes", "64x2112x7168,square", "--dtypes", "fp8", "--warmup", "3",
        "--reps", "50", "--json", "o.json", "--png", "o.png", "--baseline-only", "--seed", "0x10", "--no-spin",
        "--jit-cache", "--max-run-ms", "500", "--l2-factor", "2.5", "--max-sets", "8", "--threshold", "5e-3",
    ]))
    .unwrap();
    assert_eq!(a.artifacts, ["a1", "a2"]);
    assert_eq!(a.shapes.len(), 3);
    assert_eq!(a.dtypes, [BenchDtype::Fp8]);
    assert_eq!((a.warmup, a.reps, a.max_sets), (3, 50, 8));
    assert_eq!((a.json.as_deref(), a.png.as_deref()), (Some("o.json"), Some("o.png")));
    assert!(a.baseline_only && !a.spin && a.jit_cache);
    assert_eq!(a.seed, Some(16));
    assert_eq!(a.max_run_ms, 500.0);
    assert_eq!((a.l2_factor, a.threshold), (2.5, 5e-3));
    for bad in [&["--reps"][..], &["--reps", "0"], &["--reps", "x"], &["--bogus"], &["--shapes", "1x2"], &["--max-sets", "0"]] {
        assert!(parse_args(&s(bad)).is_err(), "{bad:?}");
    }
}

#[test]
fn vertical_text_reads_bottom_to_top() {
    let mut cv = Canvas::new(5, 8);
    cv.text_up(0, 8, "1L", 1, color::BLACK);
    let rows: Vec<String> = cv
        .pixels
        .chunks(5)
        .map(|r| r.iter().map(|&p| if p == color::BLACK { '#' } else { '.' }).collect())
        .collect();
    // Rotated counter-clockwise: "1" at the bottom with its top to the left
    // (x = glyph row), "L" above it; read by tilting the head left.
    let expect = [
        ".....",
        "....#", // L's foot (the glyph's bottom row, at the right)
        "....#",
        "#####", // L's stem (the glyph's left column, at the bottom)
        ".....", // the gap between characters
        "....#", // 1's base
        "#####", // 1's stem
        ".#..#", // 1's flag and base
    ];
    assert_eq!(rows, expect, "{rows:#?}");
}
