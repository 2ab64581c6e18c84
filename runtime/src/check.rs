//! Correctness helpers: random inputs, poison patterns, the error metric and
//! an FP64 CPU reference GEMM.

use half::bf16;

/// The bf16 bit pattern written over outputs before a launch (a NaN), so
/// that an unwritten element can never pass.
pub const POISON_BF16: u16 = 0xFFFF;

/// A seed from the clock: every run draws fresh inputs. Print it to replay.
pub fn seed_from_time() -> u64 {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    t.as_nanos() as u64 ^ ((std::process::id() as u64) << 32)
}

/// SplitMix64: small, fast, good enough for test data.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [-1, 1).
    pub fn uniform(&mut self) -> f32 {
        ((self.next_u64() >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
}

/// `n` bf16 values uniform in [-1, 1) (never all zeros).
pub fn random_bf16(n: usize, rng: &mut Rng) -> Vec<bf16> {
    (0..n).map(|_| bf16::from_f32(rng.uniform())).collect()
}

/// `||out - ref||_F / ||ref||_F`. Any non-finite element of `out` (NaN
/// poison left over, overflow) gives NaN, which fails every threshold check.
pub fn rel_frobenius(out: &[f64], reference: &[f64]) -> f64 {
    assert_eq!(out.len(), reference.len(), "rel_frobenius: length mismatch");
    let mut num = 0.0;
    let mut den = 0.0;
    for (&o, &r) in out.iter().zip(reference) {
        if !o.is_finite() {
            return f64::NAN;
        }
        num += (o - r) * (o - r);
        den += r * r;
    }
    if den == 0.0 {
        return if num == 0.0 { 0.0 } else { f64::INFINITY };
    }
    (num / den).sqrt()
}

/// True iff `err` is a number and at most `threshold` (NaN never passes).
pub fn passes(err: f64, threshold: f64) -> bool {
    err.is_finite() && err <= threshold
}

pub fn bf16_to_f64(v: &[bf16]) -> Vec<f64> {
    v.iter().map(|x| x.to_f64()).collect()
}

/// FP64 reference of row-major `C[M,N] = A[M,K] * B[N,K]^T`, on all cores.
pub fn cpu_gemm_tn(a: &[bf16], b: &[bf16], m: usize, n: usize, k: usize) -> Vec<f64> {
    assert!(a.len() >= m * k && b.len() >= n * k);
    let af = bf16_to_f64(&a[..m * k]);
    let bf = bf16_to_f64(&b[..n * k]);
    let mut c = vec![0.0f64; m * n];
    let threads = std::thread::available_parallelism().map(|p| p.get()).unwrap_or(1).min(m.max(1));
    let rows_per = m.div_ceil(threads.max(1)).max(1);
    std::thread::scope(|s| {
        for (ci, chunk) in c.chunks_mut(rows_per * n).enumerate() {
            let (af, bf) = (&af, &bf);
            s.spawn(move || {
                for (r, row) in chunk.chunks_mut(n).enumerate() {
                    let i = ci * rows_per + r;
                    let arow = &af[i * k..(i + 1) * k];
                    for (j, out) in row.iter_mut().enumerate() {
                        let brow = &bf[j * k..(j + 1) * k];
                        *out = arow.iter().zip(brow).map(|(x, y)| x * y).sum();
                    }
                }
            });
        }
    });
    c
}
