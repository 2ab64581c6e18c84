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

pub use crate::rng::Rng;


/// `n` values from `gen`, filled on all cores in chunks with seeds of their
/// own derived from `seed`.
pub fn par_fill<T: Send + Default + Clone>(n: usize, seed: u64, gen: impl Fn(&mut Rng) -> T + Sync) -> Vec<T> {
    let mut v = vec![T::default(); n];
    let threads = std::thread::available_parallelism().map(|p| p.get()).unwrap_or(1);
    let per = n.div_ceil(threads).max(1 << 16);
    std::thread::scope(|s| {
        for (ci, chunk) in v.chunks_mut(per).enumerate() {
            let gen = &gen;
            s.spawn(move || {
                let mut rng = Rng::new(seed ^ (ci as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
                chunk.iter_mut().for_each(|x| *x = gen(&mut rng));
            });
        }
    });
    v
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

/// Each element widened to f64, for error metrics.
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

/// fp8 e4m3 (OCP "E4M3FN": bias 7, no infinities, NaN = S.1111.111, max
/// 448) from f32, rounding to nearest even and saturating to +-448. NaN maps
/// to 0x7F.
pub fn f32_to_e4m3(x: f32) -> u8 {
    if x.is_nan() {
        return 0x7F;
    }
    let sign = if x.is_sign_negative() { 0x80u8 } else { 0 };
    let a = x.abs();
    if a >= 464.0 {
        // 464 is the midpoint between 448 and the first unrepresentable 480.
        return sign | 0x7E;
    }
    const MIN_NORMAL: f32 = 1.0 / 64.0; // 2^-6
    if a < MIN_NORMAL {
        // Subnormals: multiples of 2^-9; q == 8 lands on the smallest normal.
        let q = (a * 512.0).round_ties_even() as u8;
        return sign | q;
    }
    let e = ((a.to_bits() >> 23) & 0xFF) as i32 - 127; // -6..=8
    let m = a / f32::powi(2.0, e); // [1, 2), exact
    let mut q = ((m - 1.0) * 8.0).round_ties_even() as i32;
    let mut e = e;
    if q == 8 {
        q = 0;
        e += 1;
    }
    let bits = (((e + 7) as u8) << 3) | q as u8;
    sign | bits.min(0x7E)
}

/// f32 value of an fp8 e4m3 bit pattern (NaN for S.1111.111).
pub fn e4m3_to_f32(b: u8) -> f32 {
    let sign = if b & 0x80 != 0 { -1.0 } else { 1.0 };
    let e = ((b >> 3) & 0xF) as i32;
    let m = (b & 7) as f32;
    if e == 0xF && b & 7 == 7 {
        return f32::NAN;
    }
    let v = if e == 0 { m / 512.0 } else { (1.0 + m / 8.0) * f32::powi(2.0, e - 7) };
    sign * v
}

/// `n` fp8 e4m3 values, uniform in [-1, 1) before rounding.
pub fn random_e4m3(n: usize, rng: &mut Rng) -> Vec<u8> {
    (0..n).map(|_| f32_to_e4m3(rng.uniform())).collect()
}

/// `||out - scale * ref||_F / ||scale * ref||_F` on bf16 data without
/// widening copies; NaN if any element of `out` is not finite.
pub fn rel_frobenius_bf16(out: &[bf16], reference: &[bf16], ref_scale: f64) -> f64 {
    assert_eq!(out.len(), reference.len(), "rel_frobenius_bf16: length mismatch");
    let mut num = 0.0;
    let mut den = 0.0;
    for (o, r) in out.iter().zip(reference) {
        let o = o.to_f64();
        if !o.is_finite() {
            return f64::NAN;
        }
        let r = r.to_f64() * ref_scale;
        num += (o - r) * (o - r);
        den += r * r;
    }
    if den == 0.0 {
        return if num == 0.0 { 0.0 } else { f64::INFINITY };
    }
    (num / den).sqrt()
}

/// Evenly spread row indices, as many as keep `rows * n * k` within
/// `budget` multiply-adds (at least one, at most `m`).
pub fn sample_rows(m: usize, n: usize, k: usize, budget: u64) -> Vec<usize> {
    let per_row = (n as u64 * k as u64).max(1);
    let count = ((budget / per_row) as usize).clamp(1, m.max(1));
    (0..count).map(|i| i * m / count).collect()
}

/// FP64 reference rows `rows` of `C = A * B^T` (A row-major `m x k` given as
/// f32 values, B `n x k`), on all cores. Output is `rows.len() x n`.
pub fn cpu_gemm_tn_rows(a: &[f32], b: &[f32], n: usize, k: usize, rows: &[usize]) -> Vec<f64> {
    let mut c = vec![0.0f64; rows.len() * n];
    let threads = std::thread::available_parallelism().map(|p| p.get()).unwrap_or(1).min(n.max(1));
    let cols_per = n.div_ceil(threads.max(1)).max(1);
    let mut parts: Vec<Vec<f64>> = Vec::new();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..n.div_ceil(cols_per))
            .map(|t| {
                s.spawn(move || {
                    let (j0, j1) = (t * cols_per, ((t + 1) * cols_per).min(n));
                    let mut out = Vec::with_capacity(rows.len() * (j1 - j0));
                    for &i in rows {
                        let arow = &a[i * k..(i + 1) * k];
                        for j in j0..j1 {
                            let brow = &b[j * k..(j + 1) * k];
                            out.push(arow.iter().zip(brow).map(|(&x, &y)| x as f64 * y as f64).sum());
                        }
                    }
                    out
                })
            })
            .collect();
        parts = handles.into_iter().map(|h| h.join().expect("cpu reference thread")).collect();
    });
    for (t, part) in parts.iter().enumerate() {
        let (j0, j1) = (t * cols_per, ((t + 1) * cols_per).min(n));
        let w = j1 - j0;
        for (r, chunk) in part.chunks(w).enumerate() {
            c[r * n + j0..r * n + j1].copy_from_slice(chunk);
        }
    }
    c
}

pub use crate::gemm::SCALE_BLOCK;

/// The scale layout of a block-scaled FP8 GEMM `C[M,N] = (A*SA)(B*SB)^T`:
/// `SA[M, KB]` row-major holds one f32 per row of A and 128 elements of K,
/// `SB[NB, KB]` row-major one per 128 rows of B (128 columns of C) and 128
/// elements of K, with `KB = ceil(K/128)` and `NB = ceil(N/128)`. A last
/// partial block has a scale of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockScales {
    /// Rows of A and C.
    pub m: usize,
    /// Rows of B, columns of C.
    pub n: usize,
    /// The reduction length.
    pub k: usize,
}

impl BlockScales {
    /// The scale layout of an `M x N x K` problem.
    pub fn new(m: usize, n: usize, k: usize) -> Self {
        BlockScales { m, n, k }
    }
    /// `KB = ceil(K/128)`: scale blocks along K.
    pub fn kb(&self) -> usize {
        self.k.div_ceil(SCALE_BLOCK)
    }
    /// `NB = ceil(N/128)`: scale blocks along N.
    pub fn nb(&self) -> usize {
        self.n.div_ceil(SCALE_BLOCK)
    }
    /// Elements of SA (`M x KB`).
    pub fn sa_len(&self) -> usize {
        self.m * self.kb()
    }
    /// Elements of SB (`NB x KB`).
    pub fn sb_len(&self) -> usize {
        self.nb() * self.kb()
    }
    /// Index in SA of the scale of `A[i, p]`.
    pub fn sa_index(&self, i: usize, p: usize) -> usize {
        i * self.kb() + p / SCALE_BLOCK
    }
    /// Index in SB of the scale of `B[j, p]` (row j of B is column j of C).
    pub fn sb_index(&self, j: usize, p: usize) -> usize {
        (j / SCALE_BLOCK) * self.kb() + p / SCALE_BLOCK
    }
    /// The dequantised `A` (`M x K` f32): `e4m3(A[i,p]) * SA[sa_index(i,p)]`.
    pub fn dequant_a(&self, a: &[u8], sa: &[f32]) -> Vec<f32> {
        assert!(a.len() >= self.m * self.k && sa.len() >= self.sa_len(), "dequant_a: buffers too small");
        let k = self.k;
        (0..self.m * k).map(|x| e4m3_to_f32(a[x]) * sa[self.sa_index(x / k, x % k)]).collect()
    }
    /// The dequantised `B` (`N x K` f32): `e4m3(B[j,p]) * SB[sb_index(j,p)]`.
    pub fn dequant_b(&self, b: &[u8], sb: &[f32]) -> Vec<f32> {
        assert!(b.len() >= self.n * self.k && sb.len() >= self.sb_len(), "dequant_b: buffers too small");
        let k = self.k;
        (0..self.n * k).map(|x| e4m3_to_f32(b[x]) * sb[self.sb_index(x / k, x % k)]).collect()
    }
    /// SA transposed to M-major (`SA_t[kb * M + i] = SA[i * KB + kb]`), the
    /// layout cuBLASLt's 1x128 scale mode reads (see [`crate::lt`]).
    pub fn sa_m_major(&self, sa: &[f32]) -> Vec<f32> {
        crate::gemm::SaLayout::MMajor.arrange(sa, self.m, self.kb())
    }
    /// `KB` rounded up to 4: the row stride, in scales, of B's scales as
    /// cuBLASLt's 128x128 scale mode reads them (rows of 16 bytes; see
    /// [`crate::lt`]).
    pub fn kb_lt(&self) -> usize {
        self.kb().next_multiple_of(4)
    }
    /// SB's rows of `KB` scales (any number of them: one problem's `NB`, or
    /// a grouped GEMM's experts' one after another) laid out with a row
    /// stride of [`BlockScales::kb_lt`], the padding zero.
    pub fn sb_lt(&self, sb: &[f32]) -> Vec<f32> {
        let (kb, kb_lt) = (self.kb(), self.kb_lt());
        sb.chunks(kb).flat_map(|row| row.iter().copied().chain(std::iter::repeat_n(0.0, kb_lt - row.len()))).collect()
    }
    /// FP64 reference of the block-scaled product, all `M x N` elements.
    pub fn cpu_reference(&self, a: &[u8], sa: &[f32], b: &[u8], sb: &[f32]) -> Vec<f64> {
        let rows: Vec<usize> = (0..self.m).collect();
        cpu_gemm_tn_rows(&self.dequant_a(a, sa), &self.dequant_b(b, sb), self.n, self.k, &rows)
    }
}

/// Smallest and largest exponent of the random block scales: scales span
/// 2^-10..2^10, so a scale applied to the wrong block is off by up to 2^20.
pub const SCALE_EXP_RANGE: (i32, i32) = (-10, 10);

/// `n` block scales `2^e`, `e` uniform over [`SCALE_EXP_RANGE`]: log-uniform
/// over 2^-10..2^10. Powers of two keep the dequantised operands exact in
/// bf16 (an e4m3 value times 2^e needs 4 significant bits and an exponent
/// within bf16's range), so a BF16 GEMM with FP32 accumulation on them is
/// an exact-input reference.
pub fn random_pow2_scales(n: usize, rng: &mut Rng) -> Vec<f32> {
    pow2_scales(n, SCALE_EXP_RANGE, rng)
}

/// `n` values `2^e`, `e` uniform over `lo..=hi`.
fn pow2_scales(n: usize, (lo, hi): (i32, i32), rng: &mut Rng) -> Vec<f32> {
    let span = (hi - lo + 1) as u64;
    (0..n).map(|_| f32::powi(2.0, lo + (rng.next_u64() % span) as i32)).collect()
}

/// GEMM inputs whose product is exact in f32 whatever the order of
/// summation, so that a kernel's f32 accumulator is the exact product and
/// an epilogue evaluated in f32 from it
/// ([`tilec_artifact::Epilogue::in_f32`]) gives the kernel's outputs bit
/// for bit: elements the integers `-entry..=entry` (zero among them; exact
/// in e4m3 and bf16) and, for a block-scaled FP8 GEMM, block scales `2^e`
/// with `e` uniform over `-scale_exp..=scale_exp`.
///
/// Every term `a * b * 2^(ea + eb)`, every sum of terms (in any order,
/// whether a K block's raw sum is scaled before it is added or each term
/// is) and every partial sum is then an integer multiple of the smallest
/// scale product `u = 2^(-2 scale_exp)`, at most `K * entry^2 *
/// 2^(2 scale_exp)` in magnitude: at most `2^24 u` where
/// [`ExactInputs::is_exact`] holds, and f32 holds every multiple of `u`
/// that small exactly. A K block's raw sum of integer products is at most
/// `128 * entry^2 = 2^11` for entries up to 4, so an FP8 tensor core,
/// which keeps fewer bits than f32 (about 14) while it adds, adds it
/// exactly too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExactInputs {
    /// The largest magnitude of an element.
    pub entry: u32,
    /// The block scales' exponents span `-scale_exp..=scale_exp` (0: every scale 1).
    pub scale_exp: i32,
}

/// The ranges [`ExactInputs::for_k`] tries, in order: the widest first,
/// so that codes and scales vary as much as the bound allows.
const EXACT_RANGES: [ExactInputs; 7] = [
    ExactInputs { entry: 4, scale_exp: 2 },
    ExactInputs { entry: 4, scale_exp: 1 },
    ExactInputs { entry: 2, scale_exp: 1 },
    ExactInputs { entry: 1, scale_exp: 1 },
    ExactInputs { entry: 4, scale_exp: 0 },
    ExactInputs { entry: 2, scale_exp: 0 },
    ExactInputs { entry: 1, scale_exp: 0 },
];

impl ExactInputs {
    /// The widest ranges whose product over `k` is exact in f32
    /// ([`ExactInputs::is_exact`]), with block scales other than 1 only
    /// where `scaled`; an error where even elements of -1..=1 and unit
    /// scales are not (K over 2^24).
    pub fn for_k(k: usize, scaled: bool) -> Result<ExactInputs, String> {
        EXACT_RANGES
            .into_iter()
            .find(|r| (scaled || r.scale_exp == 0) && r.is_exact(k))
            .ok_or_else(|| format!("K={k}: no inputs make the product exact in f32 (K at most 2^24)"))
    }

    /// Whether every partial sum of a product over `k` is exact in f32:
    /// `K * entry^2 * 2^(4 scale_exp) <= 2^24` (see the type's docs).
    pub fn is_exact(&self, k: usize) -> bool {
        let bound = ((k as u128) * (self.entry as u128).pow(2)) << (4 * self.scale_exp.max(0) as u32);
        bound <= 1 << 24
    }

    /// `n` elements, integers uniform over `-entry..=entry`, as f32.
    pub fn elements(&self, n: usize, rng: &mut Rng) -> Vec<f32> {
        let values = 2 * self.entry as u64 + 1;
        (0..n).map(|_| (rng.next_u64() % values) as f32 - self.entry as f32).collect()
    }

    /// `n` block scales `2^e`, `e` uniform over `-scale_exp..=scale_exp`.
    pub fn scales(&self, n: usize, rng: &mut Rng) -> Vec<f32> {
        pow2_scales(n, (-self.scale_exp, self.scale_exp), rng)
    }
}

/// f32 values converted to bf16, or `None` if one of them is not exact.
pub fn exact_bf16(v: &[f32]) -> Option<Vec<bf16>> {
    v.iter().map(|&x| Some(bf16::from_f32(x)).filter(|b| b.to_f32() == x)).collect()
}
