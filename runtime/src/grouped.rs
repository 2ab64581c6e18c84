//! Grouped GEMMs for mixture-of-experts layers: the problem description,
//! its memory layouts, and the manifest signature a grouped kernel is
//! expected to have. Pure, so unit-tested without a GPU; the baselines that
//! time these problems are [`crate::grouped_bench`]'s.
//!
//! Expert `g` computes `C_g[M_g, N] = A_g[M_g, K] * B[g]^T` with `B[G, N, K]`
//! (K-major, as FP8 wgmma needs). Two forms, with the manifest signature a
//! grouped kernel is expected to have ([`GroupedSpec::from_manifest`] reads
//! it; symbols in brackets):
//! - contiguous: the tokens of all experts concatenated along M, each
//!   expert's segment padded to a multiple of the block M (`block_m`), so a
//!   block of rows belongs to one expert. Tensors `A[SM, K]`, `B[G, N, K]`,
//!   i32 `expert[MB]` (the expert of each block of `block_m` rows,
//!   `MB = SM / block_m`; -1 marks a block of padding only) and bf16
//!   `C[SM, N]`, `SM` the padded total.
//! - masked: a fixed buffer of `MM` (= M_max) rows per expert with the
//!   number of valid rows of each as data: `A[G, MM, K]`, i32 `counts[G]`,
//!   `B[G, N, K]`, bf16 `C[G, MM, N]`. Rows past a count hold unspecified
//!   values afterwards (a kernel may compute an expert's last block of rows
//!   whole). Used under CUDA graphs during decoding, where the counts change
//!   between replays and the shapes do not.
//!
//! A and B are bf16, or f8e4m3 with f32 block scales: `SA` one per row and
//! 128 of K over A's rows (`SA[SM, KB]`, or `SA[G, MM, KB]`; M-major as
//! `SA[KB, SM]` or `SA[G, KB, MM]`, see [`SaLayout`]) and
//! `SB[G, NB, KB]` one per 128x128 block of each expert's B.

use crate::check::{Rng, SCALE_BLOCK};
use crate::error::{Result, RuntimeError};
use crate::gemm::SaLayout;
use crate::plan::Problem;
use std::fmt;
use tilec_artifact::{DType, Dim, Manifest, Role, TensorDecl};

/// Block M the contiguous form pads each expert's segment to.
pub const DEFAULT_BLOCK_M: u64 = 128;

/// Which grouped layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupedForm {
    /// Segments concatenated along M, each padded to `block_m` rows.
    Contiguous {
        /// Rows each segment is padded to (the kernel's block M).
        block_m: u64,
    },
    /// `[G, m_max, K]` with a count of valid rows per expert.
    Masked {
        /// Rows reserved for every expert (M_max).
        m_max: u64,
    },
}

/// One grouped problem: `rows[g]` valid rows for expert `g`, all experts
/// sharing N and K.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupedProblem {
    /// Contiguous or masked, with its block M or M_max.
    pub form: GroupedForm,
    /// Columns of every expert's output.
    pub n: u64,
    /// The reduction dimension.
    pub k: u64,
    /// Valid rows of each expert, in expert order.
    pub rows: Vec<u64>,
}

impl GroupedProblem {
    /// Experts (G).
    pub fn groups(&self) -> usize {
        self.rows.len()
    }
    /// Valid rows over all experts.
    pub fn total_rows(&self) -> u64 {
        self.rows.iter().sum()
    }
    /// Useful FLOPs: `2 * sum(M_g) * N * K` (padding not counted).
    pub fn flops(&self) -> f64 {
        2.0 * self.total_rows() as f64 * self.n as f64 * self.k as f64
    }
    /// Rows the layout reserves for an expert with `rows` valid rows.
    pub fn segment_rows(&self, rows: u64) -> u64 {
        match self.form {
            GroupedForm::Contiguous { block_m } => rows.div_ceil(block_m) * block_m,
            GroupedForm::Masked { m_max } => m_max,
        }
    }
    /// First row of each expert's segment in A and C.
    pub fn row_offsets(&self) -> Vec<u64> {
        let mut off = 0;
        self.rows
            .iter()
            .map(|&r| {
                let o = off;
                off += self.segment_rows(r);
                o
            })
            .collect()
    }
    /// Rows of the A and C buffers: the padded total (contiguous) or `G * m_max` (masked).
    pub fn buffer_rows(&self) -> u64 {
        self.rows.iter().map(|&r| self.segment_rows(r)).sum()
    }
    /// The contiguous form's expert index per block of `block_m` rows.
    pub fn expert_of_block(&self) -> Option<Vec<i32>> {
        let GroupedForm::Contiguous { block_m } = self.form else { return None };
        Some(self.rows.iter().enumerate().flat_map(|(g, &r)| std::iter::repeat_n(g as i32, r.div_ceil(block_m) as usize)).collect())
    }
    /// The routing table a kernel on this layout reads, as the host uploads
    /// it: the contiguous form's expert of each row block (a lone 0 when
    /// there are no rows, since a tensor binds at least one element), or the
    /// masked form's count of each expert; checked by [`check_routing`].
    pub fn routing(&self) -> Result<Vec<i32>> {
        let table = match self.form {
            GroupedForm::Contiguous { .. } => self.expert_of_block().filter(|e| !e.is_empty()).unwrap_or(vec![0]),
            GroupedForm::Masked { .. } => self.rows.iter().map(|&r| i32::try_from(r).unwrap_or(i32::MAX)).collect(),
        };
        check_routing(self, &table)?;
        Ok(table)
    }

    /// Checks the description: at least one expert, N and K positive,
    /// masked counts within `m_max`.
    pub fn validate(&self) -> std::result::Result<(), String> {
        if self.rows.is_empty() || self.n == 0 || self.k == 0 {
            return Err(format!("{self}: want at least one group and N, K > 0"));
        }
        match self.form {
            GroupedForm::Contiguous { block_m: 0 } => return Err(format!("{self}: block M is 0")),
            GroupedForm::Masked { m_max } => {
                if let Some(r) = self.rows.iter().find(|&&r| r > m_max) {
                    return Err(format!("{self}: a count {r} exceeds M_max {m_max}"));
                }
            }
            GroupedForm::Contiguous { .. } => {}
        }
        Ok(())
    }

    /// Parses `contiguous:NxK:r0,r1,...` or `masked/MMAX:NxK:r0,r1,...`
    /// (the rows of each expert), the form [`Display`](fmt::Display) prints.
    pub fn parse(s: &str) -> std::result::Result<GroupedProblem, String> {
        let parts: Vec<&str> = s.trim().split(':').collect();
        let [form, nk, rows] = parts[..] else {
            return Err(format!("bad grouped problem `{s}`: want FORM:NxK:r0,r1,..."));
        };
        let num = |x: &str| x.trim().parse::<u64>().map_err(|e| format!("bad grouped problem `{s}`: `{x}`: {e}"));
        let form = match form.split_once('/') {
            None if form == "contiguous" => GroupedForm::Contiguous { block_m: DEFAULT_BLOCK_M },
            Some(("contiguous", bm)) => GroupedForm::Contiguous { block_m: num(bm)? },
            Some(("masked", mm)) => GroupedForm::Masked { m_max: num(mm)? },
            _ => return Err(format!("bad grouped problem `{s}`: form is contiguous[/BLOCK_M] or masked/M_MAX")),
        };
        let (n, k) = nk.split_once(['x', 'X']).ok_or_else(|| format!("bad grouped problem `{s}`: want NxK"))?;
        let rows = rows.split(',').map(num).collect::<std::result::Result<Vec<_>, _>>()?;
        let p = GroupedProblem { form, n: num(n)?, k: num(k)?, rows };
        p.validate()?;
        Ok(p)
    }
}

/// Checks a routing table for a launch on `p`'s layout while the host
/// holds it: the contiguous form's one expert id per block of `block_m`
/// rows, each below G (or -1, a block of padding only), the masked form's
/// one count per expert, each from 0 to M_max. A kernel reads an expert's
/// B and rows by TMA, which fills a box outside the tensor with zeros, so
/// an id at or past G or a count past M_max would give a silent zero block
/// instead of an error.
pub fn check_routing(p: &GroupedProblem, table: &[i32]) -> Result<()> {
    let groups = p.groups() as i64;
    let bad = |why: String| Err(RuntimeError::GemmArgs(format!("{p}: {why}")));
    match p.form {
        GroupedForm::Contiguous { block_m } => {
            let blocks = (p.buffer_rows() / block_m.max(1)).max(1) as usize;
            if table.len() != blocks {
                return bad(format!("the expert table has {} entries, want one per block of {block_m} rows ({blocks})", table.len()));
            }
            if let Some((block, &id)) = table.iter().enumerate().find(|(_, &id)| id < -1 || i64::from(id) >= groups) {
                return bad(format!("row block {block} names expert {id}, want 0 to {} (G = {groups}) or -1 for padding", groups - 1));
            }
        }
        GroupedForm::Masked { m_max } => {
            if table.len() as i64 != groups {
                return bad(format!("the counts table has {} entries, want one per expert ({groups})", table.len()));
            }
            if let Some((expert, &count)) = table.iter().enumerate().find(|(_, &c)| c < 0 || c as u64 > m_max) {
                return bad(format!("expert {expert} has a count of {count} rows, want 0 to M_max = {m_max}"));
            }
        }
    }
    Ok(())
}

/// Parses problems in [`GroupedProblem::parse`]'s form separated by `;`;
/// an empty list is an error.
pub fn parse_problem_list(s: &str) -> std::result::Result<Vec<GroupedProblem>, String> {
    let problems = s.split(';').map(str::trim).filter(|x| !x.is_empty()).map(GroupedProblem::parse).collect::<std::result::Result<Vec<_>, _>>()?;
    if problems.is_empty() {
        return Err("no grouped problem given".into());
    }
    Ok(problems)
}

impl fmt::Display for GroupedProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.form {
            GroupedForm::Contiguous { block_m } if block_m == DEFAULT_BLOCK_M => write!(f, "contiguous")?,
            GroupedForm::Contiguous { block_m } => write!(f, "contiguous/{block_m}")?,
            GroupedForm::Masked { m_max } => write!(f, "masked/{m_max}")?,
        }
        let rows: Vec<String> = self.rows.iter().map(u64::to_string).collect();
        write!(f, ":{}x{}:{}", self.n, self.k, rows.join(","))
    }
}

/// A short label: form, G, N x K, total rows.
pub fn label(p: &GroupedProblem) -> String {
    let form = match p.form {
        GroupedForm::Contiguous { .. } => "contig",
        GroupedForm::Masked { .. } => "masked",
    };
    format!("{form} G={} {}x{} rows={}", p.groups(), p.n, p.k, p.total_rows())
}

/// `total` tokens over `g` experts, unevenly, as routing gives them: one
/// expert empty, one with a single row, one with a quarter of the tokens,
/// and the rest split at random (some of those may be empty too). Needs
/// `g >= 3`; the sum is exactly `total`.
pub fn uneven_split(total: u64, g: usize, rng: &mut Rng) -> Vec<u64> {
    assert!(g >= 3 && total >= g as u64, "uneven_split: want g >= 3 and total >= g");
    let big = total / 4;
    let rest = total - big - 1;
    // Random weights, a few of them zero, for the other g - 3 experts.
    let weights: Vec<u64> = (0..g - 3).map(|_| if rng.next_u64().is_multiple_of(8) { 0 } else { 1 + rng.next_u64() % 100 }).collect();
    let wsum: u64 = weights.iter().sum();
    let mut rows = vec![0, 1, big];
    let mut left = rest;
    for (i, &w) in weights.iter().enumerate() {
        let share = if i + 1 == weights.len() { left } else { (rest * w).checked_div(wsum).unwrap_or(0) };
        rows.push(share.min(left));
        left -= share.min(left);
    }
    // Whatever is left (g == 3, or all weights zero) goes to the big expert.
    rows[2] += left;
    // Shuffle so the special experts are not always first.
    for i in (1..rows.len()).rev() {
        rows.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
    }
    rows
}

/// `g` masked counts uniform in `lo..=hi`.
pub fn masked_counts(g: usize, lo: u64, hi: u64, rng: &mut Rng) -> Vec<u64> {
    (0..g).map(|_| lo + rng.next_u64() % (hi - lo + 1)).collect()
}

/// Expert counts of the benchmark.
pub const GROUPS: [usize; 2] = [8, 32];
/// (N, K) of the benchmark's experts (DeepSeek-V3-like).
pub const GROUPED_NK: [(u64, u64); 2] = [(4096, 7168), (7168, 2048)];
/// Total tokens of the contiguous form.
pub const CONTIGUOUS_TOKENS: [u64; 2] = [4096, 32768];
/// M_max and the range of valid rows of the masked form.
pub const MASKED_M_MAX: u64 = 256;
/// The range of valid rows per expert drawn for the masked form.
pub const MASKED_ROWS: (u64, u64) = (64, 256);

/// The benchmark's grouped problems, drawn from `seed`: contiguous with
/// G x (N, K) x total tokens, then masked with G x (N, K).
pub fn default_grouped_problems(seed: u64) -> Vec<GroupedProblem> {
    let mut rng = Rng::new(seed);
    let mut v = Vec::new();
    for &g in &GROUPS {
        for &(n, k) in &GROUPED_NK {
            for &total in &CONTIGUOUS_TOKENS {
                let rows = uneven_split(total, g, &mut rng);
                v.push(GroupedProblem { form: GroupedForm::Contiguous { block_m: DEFAULT_BLOCK_M }, n, k, rows });
            }
        }
    }
    for &g in &GROUPS {
        for &(n, k) in &GROUPED_NK {
            let rows = masked_counts(g, MASKED_ROWS.0, MASKED_ROWS.1, &mut rng);
            v.push(GroupedProblem { form: GroupedForm::Masked { m_max: MASKED_M_MAX }, n, k, rows });
        }
    }
    v
}

/// Which grouped form a kernel implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupedKind {
    /// Segments concatenated along M, `expert[MB]` naming each row block's expert.
    Contiguous,
    /// `[G, M_max, K]` buffers with `counts[G]` valid rows.
    Masked,
}

/// What a grouped GEMM artifact computes, from its manifest alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupedSpec {
    /// The form.
    pub kind: GroupedKind,
    /// Element type of A and B (bf16 or f8e4m3; f8e4m3 takes block scales).
    pub input: DType,
    /// How an FP8 kernel stores A's scales: over the buffer's rows
    /// (contiguous form), or each expert's (masked form).
    pub sa_layout: SaLayout,
}

fn not_grouped(why: String) -> RuntimeError {
    RuntimeError::NotGemm(format!("not a grouped GEMM: {why}"))
}

fn has_shape(t: &TensorDecl, dims: &[&str]) -> bool {
    t.shape.len() == dims.len() && t.shape.iter().zip(dims).all(|(d, s)| matches!(d, Dim::Sym(x) if x == s))
}

impl GroupedSpec {
    /// Reads the signature documented at the top of this module; says
    /// which tensor does not fit.
    pub fn from_manifest(m: &Manifest) -> Result<GroupedSpec> {
        let kind = if m.tensor("expert").is_some() {
            GroupedKind::Contiguous
        } else if m.tensor("counts").is_some() {
            GroupedKind::Masked
        } else {
            return Err(not_grouped("want an i32 `expert[MB]` (contiguous) or `counts[G]` (masked) tensor".into()));
        };
        let input = m.tensor("A").map(|t| t.dtype).ok_or_else(|| not_grouped("no tensor A".into()))?;
        if !matches!(input, DType::Bf16 | DType::F8e4m3) {
            return Err(not_grouped(format!("A is {input}, want bf16 or f8e4m3")));
        }
        let mut want: Vec<(&str, DType, Vec<&str>, Role)> = match kind {
            GroupedKind::Contiguous => vec![
                ("A", input, vec!["SM", "K"], Role::Input),
                ("B", input, vec!["G", "N", "K"], Role::Input),
                ("expert", DType::I32, vec!["MB"], Role::Input),
                ("C", DType::Bf16, vec!["SM", "N"], Role::Output),
            ],
            GroupedKind::Masked => vec![
                ("A", input, vec!["G", "MM", "K"], Role::Input),
                ("B", input, vec!["G", "N", "K"], Role::Input),
                ("counts", DType::I32, vec!["G"], Role::Input),
                ("C", DType::Bf16, vec!["G", "MM", "N"], Role::Output),
            ],
        };
        let mut sa_layout = SaLayout::KMajor;
        if input == DType::F8e4m3 {
            let (lead, rows) = match kind {
                GroupedKind::Contiguous => (&[][..], "SM"),
                GroupedKind::Masked => (&["G"][..], "MM"),
            };
            sa_layout = m.tensor("SA").and_then(|t| SaLayout::of(t, lead, rows)).unwrap_or_default();
            want.push(("SA", DType::F32, [lead, &sa_layout.order(rows, "KB")[..]].concat(), Role::Input));
            want.push(("SB", DType::F32, vec!["G", "NB", "KB"], Role::Input));
        }
        for (name, dtype, dims, role) in &want {
            let ok = m.tensor(name).is_some_and(|t| t.dtype == *dtype && t.role == *role && has_shape(t, dims));
            if !ok {
                return Err(not_grouped(format!("want {name} {dtype} [{}] ({role:?})", dims.join(", "))));
            }
        }
        if let Some(t) = m.tensors.iter().find(|t| !want.iter().any(|w| w.0 == t.name)) {
            return Err(not_grouped(format!("unexpected tensor {}", t.name)));
        }
        Ok(GroupedSpec { kind, input, sa_layout })
    }

    /// The symbols of a call on `p`'s layout.
    pub fn problem(&self, p: &GroupedProblem) -> Result<Problem> {
        let mut out = Problem::default().with("G", p.groups() as u64).with("N", p.n).with("K", p.k);
        match (self.kind, p.form) {
            (GroupedKind::Contiguous, GroupedForm::Contiguous { block_m }) => {
                let sm = p.buffer_rows();
                out = out.with("SM", sm).with("MB", sm / block_m);
            }
            (GroupedKind::Masked, GroupedForm::Masked { m_max }) => out = out.with("MM", m_max),
            _ => return Err(RuntimeError::GemmArgs(format!("{p}: the kernel is {:?}", self.kind))),
        }
        if self.input == DType::F8e4m3 {
            let block = SCALE_BLOCK as u64;
            out = out.with("KB", p.k.div_ceil(block)).with("NB", p.n.div_ceil(block));
        }
        Ok(out)
    }
}
