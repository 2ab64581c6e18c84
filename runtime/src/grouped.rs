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
//!
//! The manifest's `epilogue` may do more than round the accumulator to bf16
//! ([`GroupedEpilogue`]): a program over each output element reading the
//! accumulator, or interleaved parts of the product (SwiGLU's gate and up,
//! each expert's B holding them in alternate runs of `block` rows: an
//! [`EpilogueValue::AccPart`]). Reading parts, C has `N / parts` columns
//! under a symbol of its own (`C[SM, H]` or `C[G, MM, H]`, bound to
//! `N / parts` at a call), N being the product's columns, a multiple of
//! `parts * block`. An epilogue reading vectors or matrices (a bias, a
//! residual) is refused: which expert's values an element reads is not
//! part of the signature, and nothing here fills or binds them; so is one
//! that reduces or stores per group of columns, or rounds to FP8 (C is
//! bf16).
//!
//! A kernel is checked ([`check_output`]) on the first and last valid row
//! of every expert against the FP64 product of the expert's rows and
//! weights, taken through the epilogue as the single GEMM's reference
//! takes it ([`EpilogueReference::rows`]); padding rows, and rows of the
//! masked form past a count, are not compared.

use crate::check::{cpu_gemm_tn_rows, rel_frobenius, Rng, SCALE_BLOCK};
use crate::acc_parts::AccParts;
use crate::epilogue::EpilogueReference;
use crate::error::{Result, RuntimeError};
use crate::gemm::SaLayout;
use crate::plan::Problem;
use half::bf16;
use std::fmt;
use tilec_artifact::{DType, Dim, Epilogue, EpilogueValue, Manifest, Role, TensorDecl};

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
    /// The experts that have rows: (expert, first row in the layout, rows).
    pub fn live(&self) -> Vec<(usize, u64, u64)> {
        self.row_offsets().into_iter().zip(&self.rows).enumerate().filter(|(_, (_, &r))| r > 0).map(|(g, (o, &r))| (g, o, r)).collect()
    }
    /// The rows a check compares, by expert: the first and last valid row
    /// (in the layout) of every expert that has rows.
    pub fn checked_rows(&self) -> Vec<(usize, Vec<u64>)> {
        self.live().into_iter().map(|(g, off, r)| (g, if r == 1 { vec![off] } else { vec![off, off + r - 1] })).collect()
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

/// What a grouped kernel's epilogue computes beyond rounding the
/// accumulator to bf16 (see the module docs): the manifest's program over
/// each output element, and the interleaved parts of the product it reads.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupedEpilogue {
    /// The manifest's program: it reads no vectors or matrices and
    /// computes nothing per group of columns.
    pub epilogue: Epilogue,
    /// The interleaved parts it reads ([`EpilogueValue::AccPart`]), with
    /// the symbol of C's columns (bound to `N / parts`); `None` where it
    /// reads the accumulator only, C then having N columns.
    pub gated: Option<AccParts>,
}

/// The symbols the grouped signatures bind to sizes of their own: C's
/// columns under an epilogue of interleaved parts take another.
const LAYOUT_SYMBOLS: [&str; 8] = ["SM", "MM", "MB", "G", "N", "K", "KB", "NB"];

impl GroupedEpilogue {
    /// C's columns for `n` product columns: `n / parts` where the epilogue
    /// reads interleaved parts (an error unless `n` interleaves whole runs
    /// of every part), else `n`.
    pub fn out_cols(&self, n: u64) -> Result<u64> {
        match &self.gated {
            Some(g) => g.check_n(n).map(|()| g.out_cols(n)),
            None => Ok(n),
        }
    }

    /// `m`'s epilogue where it does more than round the accumulator to
    /// bf16 (`None` for none, or a plain one); an error says what the
    /// grouped handle does not run.
    fn of(m: &Manifest) -> Result<Option<GroupedEpilogue>> {
        let Some(e) = &m.epilogue else { return Ok(None) };
        if e.values.is_empty() {
            return Err(not_grouped("the epilogue has no values".into()));
        }
        let reads = |what: String| {
            not_grouped(format!(
                "the epilogue reads {what}: a grouped kernel's epilogue may read the accumulator and interleaved parts of it, \
                 not vectors or matrices (which expert's values an element reads is not part of the grouped signatures)"
            ))
        };
        if let Some((name, _)) = e.vector_tensors().first() {
            return Err(reads(format!("vector {name}")));
        }
        if let Some(name) = e.matrix_tensors().first() {
            return Err(reads(format!("matrix {name}")));
        }
        if e.has_groups() {
            return Err(not_grouped(
                "the epilogue reduces or stores per group of columns (an output quantisation): a grouped kernel writes a bf16 C only".into(),
            ));
        }
        if let Some(EpilogueValue::Convert { to: to @ (DType::F8e4m3 | DType::F8e5m2), .. }) = e.values.last() {
            return Err(not_grouped(format!("the epilogue's last value rounds to {to}: a grouped kernel writes a bf16 C")));
        }
        if e.is_plain() {
            return Ok(None);
        }
        let gated = match AccParts::of(e).map_err(not_grouped)? {
            None => None,
            Some((block, parts)) => Some(AccParts { block, parts, cols: Self::cols_symbol(m, block, parts)? }),
        };
        Ok(Some(GroupedEpilogue { epilogue: e.clone(), gated }))
    }

    /// The symbol of C's columns where the epilogue reads `parts` parts of
    /// the product in runs of `block` columns: C's last dimension, a symbol
    /// the layout does not bind otherwise.
    fn cols_symbol(m: &Manifest, block: u64, parts: u64) -> Result<String> {
        if block == 0 || parts < 2 {
            return Err(not_grouped(format!(
                "the epilogue reads {parts} interleaved parts in runs of {block} columns: want two or more parts in runs of at least one"
            )));
        }
        let c = m.tensor("C");
        match c.and_then(|t| t.shape.last()) {
            Some(Dim::Sym(cols)) if !LAYOUT_SYMBOLS.contains(&cols.as_str()) => Ok(cols.clone()),
            _ => {
                let got = c.map_or("no tensor C".into(), |t| {
                    let dims: Vec<String> = t.shape.iter().map(|d| d.to_string()).collect();
                    format!("C[{}]", dims.join(", "))
                });
                Err(not_grouped(format!(
                    "the epilogue reads {parts} interleaved parts of the product's N columns (runs of {block}), so C has N/{parts} columns: \
                     want C's last dimension a symbol of its own, such as H (got {got})"
                )))
            }
        }
    }
}

/// What a grouped GEMM artifact computes, from its manifest alone.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupedSpec {
    /// The form.
    pub kind: GroupedKind,
    /// Element type of A and B (bf16 or f8e4m3; f8e4m3 takes block scales).
    pub input: DType,
    /// How an FP8 kernel stores A's scales: over the buffer's rows
    /// (contiguous form), or each expert's (masked form).
    pub sa_layout: SaLayout,
    /// What its epilogue computes beyond rounding the accumulator to bf16;
    /// `None` for a plain grouped GEMM (a manifest without an epilogue, or
    /// with one that only rounds).
    pub epilogue: Option<GroupedEpilogue>,
}

fn not_grouped(why: String) -> RuntimeError {
    RuntimeError::NotGemm(format!("not a grouped GEMM: {why}"))
}

fn has_shape(t: &TensorDecl, dims: &[&str]) -> bool {
    t.shape.len() == dims.len() && t.shape.iter().zip(dims).all(|(d, s)| matches!(d, Dim::Sym(x) if x == s))
}

impl GroupedSpec {
    /// Reads the signature documented at the top of this module; says
    /// which tensor, or what of the epilogue, does not fit.
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
        let epilogue = GroupedEpilogue::of(m)?;
        let cols = epilogue.as_ref().and_then(|e| e.gated.as_ref()).map_or("N", |g| g.cols.as_str());
        let mut want: Vec<(&str, DType, Vec<&str>, Role)> = match kind {
            GroupedKind::Contiguous => vec![
                ("A", input, vec!["SM", "K"], Role::Input),
                ("B", input, vec!["G", "N", "K"], Role::Input),
                ("expert", DType::I32, vec!["MB"], Role::Input),
                ("C", DType::Bf16, vec!["SM", cols], Role::Output),
            ],
            GroupedKind::Masked => vec![
                ("A", input, vec!["G", "MM", "K"], Role::Input),
                ("B", input, vec!["G", "N", "K"], Role::Input),
                ("counts", DType::I32, vec!["G"], Role::Input),
                ("C", DType::Bf16, vec!["G", "MM", cols], Role::Output),
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
        Ok(GroupedSpec { kind, input, sa_layout, epilogue })
    }

    /// C's columns on `p`: N, or `N / parts` for an epilogue of interleaved
    /// parts (an error unless N interleaves whole runs of every part).
    pub fn out_cols(&self, p: &GroupedProblem) -> Result<u64> {
        out_cols(p, self.epilogue.as_ref())
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
        if let Some(g) = self.epilogue.as_ref().and_then(|e| e.gated.as_ref()) {
            out = out.with(&g.cols, self.out_cols(p)?);
        }
        Ok(out)
    }
}

/// C's columns on `p` under `epilogue` ([`GroupedEpilogue::out_cols`]; N without one).
fn out_cols(p: &GroupedProblem, epilogue: Option<&GroupedEpilogue>) -> Result<u64> {
    epilogue.map_or(Ok(p.n), |e| e.out_cols(p.n))
}

/// The FP64 reference of C on the rows a check compares
/// ([`GroupedProblem::checked_rows`], in order), row-major over C's
/// columns: each expert's product `A_g * B[g]^T` from `a_row(row)` (the K
/// values of A's row `row` of the layout) and `b_expert(g)` (its N x K
/// weights), taken through `epilogue` where there is one as the single
/// GEMM's reference takes it ([`EpilogueReference::rows`]: a part read at
/// its column of the product, so C has `N / parts` columns), else the
/// product itself.
pub fn reference_rows(
    p: &GroupedProblem,
    epilogue: Option<&GroupedEpilogue>,
    a_row: impl Fn(u64) -> Vec<f32>,
    b_expert: impl Fn(usize) -> Vec<f32>,
) -> Result<Vec<f64>> {
    let (n, k) = (p.n as usize, p.k as usize);
    let cols = out_cols(p, epilogue)? as usize;
    let reference = epilogue.map(|e| EpilogueReference::new(&e.epilogue, &[], &[])).transpose()?;
    let checked = p.checked_rows();
    let mut want = Vec::with_capacity(checked.iter().map(|(_, rows)| rows.len()).sum::<usize>() * cols);
    for (g, rows) in checked {
        let a: Vec<f32> = rows.iter().flat_map(|&row| a_row(row)).collect();
        let idx: Vec<usize> = (0..rows.len()).collect();
        let product = cpu_gemm_tn_rows(&a, &b_expert(g), n, k, &idx);
        match &reference {
            Some(r) => want.extend(r.rows(&product, &idx, n).values),
            None => want.extend(product),
        }
    }
    Ok(want)
}

/// The relative (Frobenius) error of a kernel's `out`, bf16 C over the
/// layout's rows and C's columns, against [`reference_rows`] on the rows
/// a check compares; NaN where a value compared is not finite (left
/// poisoned), so that it fails [`crate::check::passes`], the single-GEMM
/// epilogue check's policy for a bf16 C.
pub fn check_output(
    p: &GroupedProblem,
    epilogue: Option<&GroupedEpilogue>,
    out: &[bf16],
    a_row: impl Fn(u64) -> Vec<f32>,
    b_expert: impl Fn(usize) -> Vec<f32>,
) -> Result<f64> {
    let want = reference_rows(p, epilogue, a_row, b_expert)?;
    let cols = out_cols(p, epilogue)? as usize;
    let rows = p.buffer_rows() as usize;
    if out.len() < rows * cols {
        return Err(RuntimeError::GemmArgs(format!("{p}: C holds {} elements, want {rows} rows of {cols}", out.len())));
    }
    let got: Vec<f64> =
        p.checked_rows().into_iter().flat_map(|(_, r)| r).flat_map(|row| out[row as usize * cols..(row as usize + 1) * cols].iter().map(|x| x.to_f64())).collect();
    Ok(rel_frobenius(&got, &want))
}
