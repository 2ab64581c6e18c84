//! A GEMM handle: load an artifact, bind A, B, C (and an FP8 kernel's
//! scales, the vectors and matrices its epilogue reads and the group
//! stores it writes) and M, N, K, launch, time.
//!
//! [`GemmSpec`] says what an artifact computes, from its manifest alone;
//! [`GemmSpec::bind`] checks a call's buffers and sizes against it with
//! errors that name the operand. Both are pure, so they are unit-tested
//! without a GPU. [`Gemm`] holds the loaded kernel; which kernel serves a
//! call is decided in one place, [`Gemm::kernel_for`], from the call's
//! [`GemmSize`], so a kernel family with a per-M dispatch table can take
//! that place.
//!
//! ```no_run
//! use half::bf16;
//! use tilec_runtime::{Gemm, GemmSize, Gpu};
//!
//! # fn main() -> tilec_runtime::Result<()> {
//! let gpu = Gpu::new(0)?;
//! let gemm = Gemm::load(&gpu, "artifacts/gemm_bf16")?;
//! let (m, n, k) = (128, 4096, 7168);
//! let a = gpu.stream.clone_htod(&vec![bf16::ONE; m * k]).unwrap();
//! let b = gpu.stream.clone_htod(&vec![bf16::ONE; n * k]).unwrap();
//! let c = gpu.stream.alloc_zeros::<bf16>(m * n).unwrap();
//! let mut call = gemm.bind(&gpu, GemmSize::new(m as u64, n as u64, k as u64), &a, &b, &c)?;
//! call.launch(&gpu.stream)?;
//! let times_ms = call.time(&gpu, 10, 100)?;
//! # Ok(())
//! # }
//! ```

use crate::cuda::{Element, Gpu, Kernel, Prepared};
use crate::acc_parts::AccParts;
use crate::error::{DriverCtx, Result, RuntimeError};
use crate::padding::{self, Padding, Repack};
use crate::plan::{Problem, TensorBinding};
use crate::timing::Timer;
use cudarc::driver::{CudaSlice, CudaStream};
use std::path::Path;
use std::sync::Arc;
use tilec_artifact::{Along, Artifact, DType, Dim, Epilogue, EpilogueValue, Manifest, Role, TensorDecl};

/// M, N, K of one GEMM call: `C[M,N] = A[M,K] * B^T`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GemmSize {
    /// Rows of A and C.
    pub m: u64,
    /// Rows of B (columns with a K x N B), columns of C.
    pub n: u64,
    /// The reduction length.
    pub k: u64,
}

impl GemmSize {
    /// The size of an `M x N x K` call.
    pub fn new(m: u64, n: u64, k: u64) -> Self {
        GemmSize { m, n, k }
    }
    /// The problem sizes the launch planner binds M, N and K from.
    pub fn problem(self) -> Problem {
        Problem::gemm(self.m, self.n, self.k)
    }
}

/// Elements of K (and rows of B) one block scale covers.
pub const SCALE_BLOCK: usize = tilec_report::schema::FP8_SCALE_BLOCK as usize;

/// How B is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BLayout {
    /// `B[N,K]` row-major: `C = A * B^T` (the "TN" GEMM).
    Nk,
    /// `B[K,N]` row-major: `C = A * B`.
    Kn,
}

/// The device buffers of one GEMM call, as addresses and sizes. The
/// operands' and scales' names are set by [`GemmSpec::bind`]; an f8e4m3
/// operand may be given as raw bytes (`u8`). The epilogue's vectors and
/// matrices are bound by their names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GemmBuffers {
    /// A, `M x K`.
    pub a: TensorBinding,
    /// B, `N x K` (or `K x N`, by the kernel's [`BLayout`]).
    pub b: TensorBinding,
    /// C, `M x N` (`M x N/parts` for an epilogue of interleaved parts,
    /// [`GemmSpec::gated`]), written; named as the kernel's output
    /// ([`OutputSpec::name`]) by [`GemmSpec::bind`], an f8e4m3 one given as
    /// f8e4m3 or raw bytes.
    pub c: TensorBinding,
    /// A's and B's scales, for an FP8 kernel that takes them: one f32 each
    /// ([`Scales::PerTensor`]), or `SA` (laid out as the kernel's
    /// [`SaLayout`] says) and `SB[NB,KB]` ([`Scales::Block`]).
    pub scales: Option<(TensorBinding, TensorBinding)>,
    /// The vectors the kernel's epilogue reads ([`GemmSpec::vectors`]), each
    /// named as its manifest tensor (`Bias`), in any order.
    pub vectors: Vec<TensorBinding>,
    /// The matrices the kernel's epilogue reads ([`GemmSpec::matrices`]: a
    /// residual `R[M,N]`), each named as its manifest tensor, in any order.
    pub matrices: Vec<TensorBinding>,
    /// The group stores the kernel's epilogue writes
    /// ([`OutputSpec::group_stores`]: a quantisation's scales), each named
    /// as its manifest tensor, in any order.
    pub group_stores: Vec<TensorBinding>,
}

impl GemmBuffers {
    /// A, B and C, without scales, vectors or matrices.
    pub fn new(a: TensorBinding, b: TensorBinding, c: TensorBinding) -> Self {
        GemmBuffers { a, b, c, scales: None, vectors: Vec::new(), matrices: Vec::new(), group_stores: Vec::new() }
    }
    /// The same buffers with A's and B's scales.
    pub fn with_scales(self, sa: TensorBinding, sb: TensorBinding) -> Self {
        GemmBuffers { scales: Some((sa, sb)), ..self }
    }
    /// The same buffers with the vectors an epilogue reads (each named as its tensor).
    pub fn with_vectors(self, vectors: impl IntoIterator<Item = TensorBinding>) -> Self {
        let mut s = self;
        s.vectors.extend(vectors);
        s
    }
    /// The same buffers with the matrices an epilogue reads (each named as its tensor).
    pub fn with_matrices(self, matrices: impl IntoIterator<Item = TensorBinding>) -> Self {
        let mut s = self;
        s.matrices.extend(matrices);
        s
    }
    /// The same buffers with the group stores an epilogue writes (each named as its tensor).
    pub fn with_group_stores(self, stores: impl IntoIterator<Item = TensorBinding>) -> Self {
        let mut s = self;
        s.group_stores.extend(stores);
        s
    }
}

/// A rank-1 input the kernel's epilogue reads: one element per row of C
/// (`M`) or per column (`N`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VectorSpec {
    /// The manifest tensor (`Bias`).
    pub name: String,
    /// Its element type: bf16, f16 or f32.
    pub dtype: DType,
    /// Which index of C it takes: rows (length M) or columns (length N).
    pub along: Along,
}

impl VectorSpec {
    /// Its length for a call of `size`: M along rows, N along columns.
    pub fn len(&self, size: GemmSize) -> u64 {
        match self.along {
            Along::Rows => size.m,
            Along::Cols => size.n,
        }
    }
    /// The symbol of its length, `M` or `N`.
    pub fn len_symbol(&self) -> &'static str {
        match self.along {
            Along::Rows => "M",
            Along::Cols => "N",
        }
    }
}

/// A rank-2 input of C's shape the kernel's epilogue reads element (i, j)
/// of (a residual): `[M,N]`, row-major.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatrixSpec {
    /// The manifest tensor (`R`).
    pub name: String,
    /// Its element type: bf16, f16 or f32.
    pub dtype: DType,
}

impl MatrixSpec {
    /// Its element count for a call of `size`: `M * N`.
    pub fn len(&self, size: GemmSize) -> u64 {
        size.m * size.n
    }
}

/// What a GEMM kernel writes: C, the output its epilogue's last value is
/// stored to, and the epilogue's group stores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputSpec {
    /// C's manifest name: `C`, or another (`Q`, the codes of an epilogue
    /// quantising to FP8).
    pub name: String,
    /// C's element type: bf16, or f8e4m3 where the epilogue's last value
    /// rounds to it.
    pub dtype: DType,
    /// The epilogue's group stores ([`tilec_artifact::GroupStore`]), in its order.
    pub group_stores: Vec<GroupStoreSpec>,
}

impl OutputSpec {
    /// A bf16 `C` and no group stores: what a GEMM whose epilogue does not
    /// quantise writes.
    pub fn bf16_c() -> OutputSpec {
        OutputSpec { name: "C".into(), dtype: DType::Bf16, group_stores: Vec::new() }
    }

    /// True if it is what an output quantisation writes: C other than
    /// bf16 (FP8 codes) or group stores, which the checks compare as
    /// [`crate::quantize`] says.
    pub fn quantized(&self) -> bool {
        self.dtype != DType::Bf16 || !self.group_stores.is_empty()
    }
}

/// An f32 output of one value per row of C and group of `group` of its
/// columns (an FP8 quantisation's per-token scales): logically `M x G`,
/// `G = ceil(cols / group)` for C's `cols` columns, laid out as the next
/// block-scaled GEMM's `SA` would be (C's columns being its K): `[M, G]`
/// ([`SaLayout::KMajor`]) or `[G, M]` ([`SaLayout::MMajor`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupStoreSpec {
    /// The manifest tensor (`SQ`).
    pub name: String,
    /// C's columns in a group.
    pub group: u64,
    /// The symbol of its group dimension (`NB`), which a call binds to `G`.
    pub groups: String,
    /// How its rows and groups are laid out.
    pub layout: SaLayout,
}

impl GroupStoreSpec {
    /// `G`, its groups per row, for C's `cols` columns.
    pub fn groups_of(&self, cols: u64) -> u64 {
        cols.div_ceil(self.group)
    }
    /// Its element count for C of `out` (`M x cols`): `M * G`.
    pub fn len(&self, out: GemmSize) -> u64 {
        out.m * self.groups_of(out.n)
    }
    /// Rows `rows` of its `values` for C of `out` (laid out as
    /// [`GroupStoreSpec::layout`] says), a row's groups adjacent.
    pub fn rows(&self, values: &[f32], rows: &[usize], out: GemmSize) -> Vec<f32> {
        let (m, groups) = (out.m as usize, self.groups_of(out.n) as usize);
        let at = |i: usize, q: usize| match self.layout {
            SaLayout::KMajor => values.get(i * groups + q),
            SaLayout::MMajor => values.get(q * m + i),
        };
        rows.iter().flat_map(|&i| (0..groups).map(move |q| at(i, q).copied().unwrap_or(f32::NAN))).collect()
    }
}

/// The scales an FP8 GEMM takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scales {
    /// None (BF16, or FP8 without scales).
    None,
    /// f32 `scale_a[1]` and `scale_b[1]`: `C = sa * sb * (A B^T)`.
    PerTensor,
    /// f32 `SA` (one per row of A and 128 of K, laid out as [`SaLayout`]
    /// says) and `SB[NB,KB]` (one per 128x128 block of B), `KB = ceil(K/128)`, `NB = ceil(N/128)`:
    /// `C = (A*SA)(B*SB)^T` (see [`crate::check::BlockScales`]).
    Block,
}

/// How a block-scaled kernel stores A's scales (one per row of A and 128
/// elements of K), as its manifest declares them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SaLayout {
    /// `SA[M,KB]` row-major: a row's scales adjacent (K-major).
    #[default]
    KMajor,
    /// `SA[KB,M]` row-major: a K block's scales of consecutive rows
    /// adjacent (M-major), as cuBLASLt and DeepGEMM take them.
    MMajor,
}

impl SaLayout {
    /// SA's two dims, outermost first, from A's rows and the K blocks
    /// (their names, `M` or a grouped GEMM's `SM` or `MM` and `KB`, or
    /// their sizes).
    pub fn order<T>(self, rows: T, k_blocks: T) -> [T; 2] {
        match self {
            SaLayout::KMajor => [rows, k_blocks],
            SaLayout::MMajor => [k_blocks, rows],
        }
    }

    /// The layout of a tensor declared `lead ++ order(rows, "KB")`, if either.
    pub fn of(t: &TensorDecl, lead: &[&str], rows: &str) -> Option<SaLayout> {
        [SaLayout::KMajor, SaLayout::MMajor].into_iter().find(|l| sym_shape(t, &[lead, &l.order(rows, "KB")[..]].concat()))
    }

    /// Of scales held both ways, the ones in this layout.
    pub fn choose<'a, T: ?Sized>(self, k_major: &'a T, m_major: &'a T) -> &'a T {
        match self {
            SaLayout::KMajor => k_major,
            SaLayout::MMajor => m_major,
        }
    }

    /// `sa`, the scales of `rows` rows of A row-major (`rows x kb`), in
    /// this layout.
    pub fn arrange(self, sa: &[f32], rows: usize, kb: usize) -> Vec<f32> {
        match self {
            SaLayout::KMajor => sa[..rows * kb].to_vec(),
            SaLayout::MMajor => (0..rows * kb).map(|x| sa[(x % rows) * kb + x / rows]).collect(),
        }
    }
}

/// What a GEMM artifact computes: `A[M,K]` and `B` inputs of one element
/// type (bf16 or f8e4m3), a `C[M,N]` output (bf16, or f8e4m3 from an
/// epilogue rounding to it, under the manifest's name; [`OutputSpec`]), for
/// FP8 optional per-tensor or block scales (see [`Scales`]), and the
/// epilogue the manifest describes with the vectors and matrices it reads
/// and the group stores it writes. An epilogue reading interleaved parts of
/// the product ([`GemmSpec::gated`], SwiGLU's gate and up in one GEMM)
/// stores `C[M,H]`, `H = N / parts`.
#[derive(Debug, Clone, PartialEq)]
pub struct GemmSpec {
    /// Element type of A and B.
    pub input: DType,
    /// How B is stored.
    pub b_layout: BLayout,
    /// The scales an FP8 kernel takes, if any.
    pub scales: Scales,
    /// How block scales of A are stored (K-major where the kernel takes none).
    pub sa_layout: SaLayout,
    /// What the kernel computes from the accumulator, as its manifest says;
    /// `None` in a manifest from before epilogues were recorded (a plain GEMM:
    /// such a manifest is refused if it has tensors besides the operands and scales).
    pub epilogue: Option<Epilogue>,
    /// The rank-1 inputs the epilogue reads, in order of first use.
    pub vectors: Vec<VectorSpec>,
    /// The rank-2 inputs of C's shape the epilogue reads, in order of first use.
    pub matrices: Vec<MatrixSpec>,
    /// The interleaved parts of the product the epilogue reads, if any: C
    /// is then `[M,H]` with `H = N / parts` (vectors along columns are H
    /// long, matrices `[M,H]`); `None` for every other epilogue.
    pub gated: Option<AccParts>,
    /// What the kernel writes: C and the epilogue's group stores.
    pub output: OutputSpec,
}

fn sym_shape(t: &TensorDecl, dims: &[&str]) -> bool {
    t.shape.len() == dims.len() && t.shape.iter().zip(dims).all(|(d, s)| matches!(d, Dim::Sym(x) if x == s))
}

/// True if the manifest's epilogue stores groups to `t`.
fn group_stored(m: &Manifest, t: &TensorDecl) -> bool {
    m.epilogue.as_ref().is_some_and(|e| e.group_stores.iter().any(|s| s.tensor == t.name))
}

fn not_gemm(why: String) -> RuntimeError {
    RuntimeError::NotGemm(why)
}

impl GemmSpec {
    /// Reads the spec from a manifest; says why when it is not a GEMM this
    /// handle can call.
    pub fn from_manifest(m: &Manifest) -> Result<GemmSpec> {
        let get = |name: &str, role: Role| m.tensor(name).filter(|t| t.role == role);
        let outputs: Vec<&TensorDecl> = m.tensors.iter().filter(|t| t.role == Role::Output && !group_stored(m, t)).collect();
        let (Some(a), Some(b), Some(&c)) = (get("A", Role::Input), get("B", Role::Input), outputs.first()) else {
            return Err(not_gemm("want inputs A and B and an output C".into()));
        };
        if outputs.len() > 1 {
            let names: Vec<&str> = outputs.iter().map(|t| t.name.as_str()).collect();
            return Err(not_gemm(format!("outputs {names:?} besides the epilogue's group stores: want one, C")));
        }
        let gated = Self::gated_of(m, c)?;
        let cols = gated.as_ref().map_or("N", |g| g.cols.as_str());
        if !sym_shape(a, &["M", "K"]) || !sym_shape(c, &["M", cols]) {
            return Err(not_gemm(format!("want A[M,K] and {}[M,{cols}]", c.name)));
        }
        let b_layout = if sym_shape(b, &["N", "K"]) {
            BLayout::Nk
        } else if sym_shape(b, &["K", "N"]) {
            BLayout::Kn
        } else {
            return Err(not_gemm("want B[N,K] or B[K,N]".into()));
        };
        Self::check_output_dtype(m, c)?;
        if a.dtype != b.dtype || !matches!(a.dtype, DType::Bf16 | DType::F8e4m3) {
            return Err(not_gemm(format!("A is {}, B is {}: want both bf16 or both f8e4m3", a.dtype, b.dtype)));
        }
        let operands = ["A", "B", c.name.as_str()];
        let vectors = Self::vectors_of(m, &operands)?;
        let matrices = Self::matrices_of(m, &operands, cols)?;
        let (scales, sa_layout) = Self::scales_of(m, &operands, a.dtype, &vectors, &matrices)?;
        if scales == Scales::Block && b_layout != BLayout::Nk {
            return Err(not_gemm("a block-scaled GEMM takes B[N,K] (K-major, as FP8 wgmma needs)".into()));
        }
        let group_stores = Self::group_stores_of(m, cols, scales)?;
        let output = OutputSpec { name: c.name.clone(), dtype: c.dtype, group_stores };
        Ok(GemmSpec { input: a.dtype, b_layout, scales, sa_layout, epilogue: m.epilogue.clone(), vectors, matrices, gated, output })
    }

    /// C is bf16, or f8e4m3 where the epilogue's last value rounds to
    /// f8e4m3 (the value the reference computes is then exactly a code);
    /// an epilogue whose last value rounds to an FP8 type stores to C of
    /// that type.
    fn check_output_dtype(m: &Manifest, c: &TensorDecl) -> Result<()> {
        let last = m.epilogue.as_ref().and_then(|e| e.values.last());
        let rounds_to = match last {
            Some(EpilogueValue::Convert { to, .. }) => Some(*to),
            _ => None,
        };
        match (c.dtype, rounds_to) {
            (DType::Bf16, Some(to @ (DType::F8e4m3 | DType::F8e5m2))) => Err(not_gemm(format!(
                "{} is bf16, but the epilogue's last value rounds to {to}: its output is {to}",
                c.name
            ))),
            (DType::Bf16, _) | (DType::F8e4m3, Some(DType::F8e4m3)) => Ok(()),
            (DType::F8e4m3, _) => Err(not_gemm(format!(
                "{} is f8e4m3, but the manifest's epilogue {}: an f8e4m3 output takes an epilogue whose last value rounds to f8e4m3",
                c.name,
                if last.is_some() { "ends otherwise" } else { "is missing" }
            ))),
            (other, _) => Err(not_gemm(format!("{} is {other}, want bf16 (or f8e4m3 from an epilogue rounding to it)", c.name))),
        }
    }

    /// The group stores the manifest's epilogue writes (validated: outputs
    /// `[G,M]` or `[M,G]`, `G` a symbol of its own), each f32, with a
    /// symbol the call can bind to `ceil(cols / group)` (`cols`: C's
    /// columns): not M, N, K, KB or C's columns, `NB` only where block
    /// scales do not bind it otherwise (a group of 128 over C's N), and
    /// one group for a symbol two stores share.
    fn group_stores_of(m: &Manifest, cols: &str, scales: Scales) -> Result<Vec<GroupStoreSpec>> {
        let Some(epilogue) = &m.epilogue else { return Ok(Vec::new()) };
        let mut out: Vec<GroupStoreSpec> = Vec::new();
        for store in &epilogue.group_stores {
            let name = &store.tensor;
            let t = m.tensor(name).ok_or_else(|| not_gemm(format!("the epilogue stores to `{name}`, which the manifest does not declare")))?;
            if t.dtype != DType::F32 {
                return Err(not_gemm(format!("group store {name} is {}: want f32", t.dtype)));
            }
            let (layout, groups) = match &t.shape[..] {
                [Dim::Sym(g), Dim::Sym(rows)] if rows == "M" => (SaLayout::MMajor, g.clone()),
                [Dim::Sym(rows), Dim::Sym(g)] if rows == "M" => (SaLayout::KMajor, g.clone()),
                _ => return Err(not_gemm(format!("group store {name} must be [G,M] or [M,G], G a symbol (got {:?})", t.shape))),
            };
            let group = store.group;
            if ["M", "N", "K", "KB", cols].contains(&groups.as_str()) {
                return Err(not_gemm(format!(
                    "group store {name}'s group dimension {groups} is bound to another size: it needs a symbol of its own for ceil({cols}/{group})"
                )));
            }
            let block = SCALE_BLOCK as u64;
            if groups == "NB" && scales == Scales::Block && (group != block || cols != "N") {
                return Err(not_gemm(format!(
                    "group store {name}'s group dimension NB is ceil(N/{block}), as the block scales bind it, not ceil({cols}/{group})"
                )));
            }
            if let Some(other) = out.iter().find(|o| o.groups == groups && o.group != group) {
                return Err(not_gemm(format!(
                    "group stores {} and {name} share the group dimension {groups} with groups of {} and {group} columns",
                    other.name, other.group
                )));
            }
            out.push(GroupStoreSpec { name: name.clone(), group, groups, layout });
        }
        Ok(out)
    }

    /// The interleaved parts the manifest's epilogue reads, with C's column
    /// symbol: C must be `[M,H]`, `H` a symbol of its own (not M, N, K or a
    /// scale's), which a call binds to `N / parts`.
    fn gated_of(m: &Manifest, c: &TensorDecl) -> Result<Option<AccParts>> {
        let Some(epilogue) = &m.epilogue else { return Ok(None) };
        let Some((block, parts)) = AccParts::of(epilogue).map_err(not_gemm)? else { return Ok(None) };
        match &c.shape[..] {
            [Dim::Sym(rows), Dim::Sym(cols)] if rows == "M" && !["M", "N", "K", "KB", "NB"].contains(&cols.as_str()) => {
                Ok(Some(AccParts { block, parts, cols: cols.clone() }))
            }
            _ => {
                let shape: Vec<String> = c.shape.iter().map(|d| d.to_string()).collect();
                Err(not_gemm(format!(
                    "the epilogue reads {parts} interleaved parts of the product's N columns (runs of {block}), so C has N/{parts}: \
                     want C[M,H], H a symbol of its own (got C[{}])",
                    shape.join(",")
                )))
            }
        }
    }

    /// The symbol of C's columns: `N`, or a gated epilogue's `H`.
    pub fn cols_symbol(&self) -> &str {
        self.gated.as_ref().map_or("N", |g| g.cols.as_str())
    }

    /// The size of C (and of the epilogue's vectors and matrices) for a
    /// call of `size`: `size` with N replaced by C's columns, `N / parts`
    /// for a gated epilogue; `size` otherwise.
    pub fn out_size(&self, size: GemmSize) -> GemmSize {
        match &self.gated {
            Some(g) => GemmSize { n: g.out_cols(size.n), ..size },
            None => size,
        }
    }

    /// The vectors the manifest's epilogue reads (validated: rank-1 inputs
    /// of C's M or N), of an element type the runtime fills and checks.
    fn vectors_of(m: &Manifest, operands: &[&str]) -> Result<Vec<VectorSpec>> {
        let Some(epilogue) = &m.epilogue else { return Ok(Vec::new()) };
        let mut out = Vec::new();
        for (name, along) in epilogue.vector_tensors() {
            if operands.contains(&name) {
                return Err(not_gemm(format!("the epilogue reads operand {name} as a vector")));
            }
            let t = m.tensor(name).ok_or_else(|| not_gemm(format!("the epilogue reads `{name}`, which the manifest does not declare")))?;
            if !matches!(t.dtype, DType::Bf16 | DType::F16 | DType::F32) {
                return Err(not_gemm(format!("epilogue vector {name} is {}: want bf16, f16 or f32", t.dtype)));
            }
            out.push(VectorSpec { name: name.to_string(), dtype: t.dtype, along });
        }
        Ok(out)
    }

    /// The matrices the manifest's epilogue reads: inputs `[M,cols]` (C's
    /// shape) of an element type the runtime fills and checks.
    fn matrices_of(m: &Manifest, operands: &[&str], cols: &str) -> Result<Vec<MatrixSpec>> {
        let Some(epilogue) = &m.epilogue else { return Ok(Vec::new()) };
        let mut out = Vec::new();
        for name in epilogue.matrix_tensors() {
            if operands.contains(&name) {
                return Err(not_gemm(format!("the epilogue reads operand {name} as a matrix")));
            }
            let t = m.tensor(name).ok_or_else(|| not_gemm(format!("the epilogue reads `{name}`, which the manifest does not declare")))?;
            if t.role != Role::Input || !sym_shape(t, &["M", cols]) {
                return Err(not_gemm(format!("epilogue matrix {name} must be an input [M,{cols}], as C (got {:?} {:?})", t.role, t.shape)));
            }
            if !matches!(t.dtype, DType::Bf16 | DType::F16 | DType::F32) {
                return Err(not_gemm(format!("epilogue matrix {name} is {}: want bf16, f16 or f32", t.dtype)));
            }
            out.push(MatrixSpec { name: name.to_string(), dtype: t.dtype });
        }
        Ok(out)
    }

    /// True if the epilogue does more than round the accumulator to bf16:
    /// a manifest without one, or `[acc, convert bf16]` storing a bf16 C and
    /// nothing else, is a plain GEMM.
    pub fn has_epilogue(&self) -> bool {
        self.epilogue.as_ref().is_some_and(|e| !e.is_plain()) || self.output.dtype != DType::Bf16 || !self.output.group_stores.is_empty()
    }

    /// Which scales the tensors besides the `operands` (A, B, C), the
    /// epilogue's vectors and matrices and its group stores are, if any,
    /// and how A's block scales are stored.
    fn scales_of(m: &Manifest, operands: &[&str], input: DType, vectors: &[VectorSpec], matrices: &[MatrixSpec]) -> Result<(Scales, SaLayout)> {
        let read = |t: &TensorDecl| vectors.iter().any(|v| v.name == t.name) || matrices.iter().any(|x| x.name == t.name);
        let extra: Vec<&TensorDecl> =
            m.tensors.iter().filter(|t| !operands.contains(&t.name.as_str()) && !read(t) && !group_stored(m, t)).collect();
        if extra.is_empty() {
            return Ok((Scales::None, SaLayout::KMajor));
        }
        let names: Vec<&str> = extra.iter().map(|t| t.name.as_str()).collect();
        let f32_input = |t: &TensorDecl| t.dtype == DType::F32 && t.role == Role::Input;
        let per_tensor = names.len() == 2
            && ["scale_a", "scale_b"].iter().all(|n| names.contains(n))
            && extra.iter().all(|t| f32_input(t) && t.shape.iter().all(|d| matches!(d, Dim::Const(1))));
        let block = names.len() == 2 && ["SA", "SB"].iter().all(|n| names.contains(n));
        if !(per_tensor || block) {
            let why = if m.epilogue.is_none() {
                " and the manifest has no `epilogue` saying what the kernel does with them (written before epilogues \
                 were recorded, or a program tilec cannot describe: recompile it)"
            } else {
                ", which the epilogue does not read"
            };
            return Err(not_gemm(format!(
                "unexpected extra tensors {names:?}{why}: besides A, B, C and the epilogue's vectors and matrices an fp8 GEMM may take f32[1] scale_a and scale_b, or f32 SA[M,KB] (or SA[KB,M], M-major) and SB[NB,KB]"
            )));
        }
        if input != DType::F8e4m3 {
            return Err(not_gemm(format!("scales {names:?} on a {input} GEMM: only an f8e4m3 GEMM takes scales")));
        }
        if per_tensor {
            return Ok((Scales::PerTensor, SaLayout::KMajor));
        }
        let (sa, sb) = (m.tensor("SA").expect("checked above"), m.tensor("SB").expect("checked above"));
        let sa_layout = SaLayout::of(sa, &[], "M").filter(|_| f32_input(sa));
        for (t, dims, ok) in [(sa, "M,KB] or [KB,M", sa_layout.is_some()), (sb, "NB,KB", f32_input(sb) && sym_shape(sb, &["NB", "KB"]))] {
            if !ok {
                return Err(not_gemm(format!(
                    "block scale {} must be an f32 input of shape [{dims}] (got {} {:?}, {:?})",
                    t.name, t.dtype, t.shape, t.role
                )));
            }
        }
        Ok((Scales::Block, sa_layout.expect("checked above")))
    }

    /// The symbols a call of `size` binds: M, N, K, for a gated epilogue
    /// C's columns `H = N / parts`, for each group store its groups per
    /// row `ceil(cols / group)` (`cols`: C's columns), and for block scales
    /// `KB = ceil(K/128)` and `NB = ceil(N/128)`.
    pub fn problem(&self, size: GemmSize) -> Problem {
        let mut p = size.problem();
        if let Some(g) = &self.gated {
            p = p.with(&g.cols, g.out_cols(size.n));
        }
        let cols = self.out_size(size).n;
        for s in &self.output.group_stores {
            p = p.with(&s.groups, s.groups_of(cols));
        }
        match self.scales {
            Scales::Block => {
                let block = SCALE_BLOCK as u64;
                p.with("KB", size.k.div_ceil(block)).with("NB", size.n.div_ceil(block))
            }
            Scales::None | Scales::PerTensor => p,
        }
    }

    /// The name, dims (outermost first) and element type of each operand for `size`.
    fn dims(&self, size: GemmSize) -> [(&str, [u64; 2], DType); 3] {
        let b = match self.b_layout {
            BLayout::Nk => [size.n, size.k],
            BLayout::Kn => [size.k, size.n],
        };
        let c = (self.output.name.as_str(), [size.m, self.out_size(size).n], self.output.dtype);
        [("A", [size.m, size.k], self.input), ("B", b, self.input), c]
    }

    /// The names and dims of the two scale tensors for `size`.
    fn scale_dims(&self, size: GemmSize) -> Option<[(&'static str, [u64; 2]); 2]> {
        let block = SCALE_BLOCK as u64;
        let (kb, nb) = (size.k.div_ceil(block), size.n.div_ceil(block));
        match self.scales {
            Scales::None => None,
            Scales::PerTensor => Some([("scale_a", [1, 1]), ("scale_b", [1, 1])]),
            Scales::Block => Some([("SA", self.sa_layout.order(size.m, kb)), ("SB", [nb, kb])]),
        }
    }

    /// The K a call of `size` runs at where TMA cannot address A's and B's
    /// rows at its own ([`crate::padding`]): `None` where they are aligned,
    /// or where padding K would not align them (B stored K x N with N
    /// unaligned: the launch is refused with the descriptor's error).
    pub fn padded_k(&self, size: GemmSize) -> Option<u64> {
        let elem = self.input.size_bytes() as u64;
        if padding::aligned(size.k, elem) || (self.b_layout == BLayout::Kn && !padding::aligned(size.n, elem)) {
            return None;
        }
        Some(padding::padded(size.k, elem))
    }

    /// Checks one call's buffers against the spec and `size`, and returns
    /// the bindings of every manifest tensor. The scales must be given
    /// exactly when the kernel takes them, each vector the epilogue reads
    /// once by its name (of its element type, at least M or N long), each
    /// matrix it reads once by its name (of its element type, at least `M
    /// * N` elements), and each group store it writes once by its name
    /// (f32, at least `M * ceil(N / group)` elements). With a gated
    /// epilogue N must interleave whole runs of its parts, and C, the
    /// vectors along columns, the matrices and the group stores have `N /
    /// parts` columns.
    pub fn bind(&self, size: GemmSize, buffers: GemmBuffers) -> Result<Vec<TensorBinding>> {
        let GemmBuffers { a, b, c, scales, vectors, matrices, group_stores } = buffers;
        if size.m == 0 || size.n == 0 || size.k == 0 {
            return Err(RuntimeError::GemmArgs(format!("{}x{}x{} has a zero dimension", size.m, size.n, size.k)));
        }
        if let Some(g) = &self.gated {
            g.check_n(size.n)?;
        }
        let operands = self.dims(size).into_iter().zip([a, b, c]).map(|((name, dims, want), t)| (name, dims, want, t));
        let scale_operands = match (scales, self.scale_dims(size)) {
            (Some((sa, sb)), Some([da, db])) => vec![(da.0, da.1, DType::F32, sa), (db.0, db.1, DType::F32, sb)],
            (None, None) => Vec::new(),
            (Some(_), None) => return Err(RuntimeError::GemmArgs("scales given, the kernel takes none".into())),
            (None, Some([da, db])) => {
                return Err(RuntimeError::GemmArgs(format!("the kernel takes {} and {}; none given", da.0, db.0)))
            }
        };
        let mut out = Vec::with_capacity(5);
        for (name, dims, want, mut t) in operands.chain(scale_operands) {
            let raw_fp8 = want == DType::F8e4m3 && t.dtype == DType::U8;
            if t.dtype != want && !raw_fp8 {
                return Err(RuntimeError::GemmArgs(format!("{name} holds {}, the kernel takes {want}", t.dtype)));
            }
            let need = dims[0] * dims[1] * want.size_bytes() as u64;
            if t.bytes < need {
                return Err(RuntimeError::GemmArgs(format!(
                    "{name} is {}x{} {want} for M={} N={} K={}: {need} bytes, the buffer has {}",
                    dims[0], dims[1], size.m, size.n, size.k, t.bytes
                )));
            }
            t.name = name.into();
            t.dtype = want;
            out.push(t);
        }
        out.extend(self.bind_vectors(size, vectors)?);
        out.extend(self.bind_matrices(size, matrices)?);
        out.extend(self.bind_group_stores(size, group_stores)?);
        Ok(out)
    }

    /// The epilogue's group stores, checked: each given once, by name, f32
    /// and at least `M * ceil(cols / group)` elements; none the kernel does
    /// not write.
    fn bind_group_stores(&self, size: GemmSize, stores: Vec<TensorBinding>) -> Result<Vec<TensorBinding>> {
        let (cols, out_size) = (self.cols_symbol(), self.out_size(size));
        let wanted: Vec<Named> = self
            .output
            .group_stores
            .iter()
            .map(|s| Named {
                name: &s.name,
                dtype: DType::F32,
                elems: s.len(out_size),
                listed: format!("{} (f32 M x ceil({cols}/{}))", s.name, s.group),
                extent: format!("{}x{} f32 (M x ceil({cols}/{}))", out_size.m, s.groups_of(out_size.n), s.group),
            })
            .collect();
        bind_named("group store", "writes", "", &wanted, stores, size)
    }

    /// The epilogue's vectors, checked: each given once, by name, of its
    /// element type and at least its length; none the kernel does not read.
    fn bind_vectors(&self, size: GemmSize, vectors: Vec<TensorBinding>) -> Result<Vec<TensorBinding>> {
        let symbol = |v: &VectorSpec| if v.along == Along::Cols { self.cols_symbol() } else { v.len_symbol() };
        let wanted: Vec<Named> = self
            .vectors
            .iter()
            .map(|v| {
                let len = v.len(self.out_size(size));
                Named {
                    name: &v.name,
                    dtype: v.dtype,
                    elems: len,
                    listed: format!("{} ({}[{}])", v.name, v.dtype, symbol(v)),
                    extent: format!("{len} {} ({})", v.dtype, symbol(v)),
                }
            })
            .collect();
        bind_named("vector", "reads", "", &wanted, vectors, size)
    }

    /// The epilogue's matrices, checked: each given once, by name, of its
    /// element type and at least `M * N` elements; none the kernel does not read.
    fn bind_matrices(&self, size: GemmSize, matrices: Vec<TensorBinding>) -> Result<Vec<TensorBinding>> {
        let (cols, shape) = (self.cols_symbol(), self.out_size(size));
        let wanted: Vec<Named> = self
            .matrices
            .iter()
            .map(|x| Named {
                name: &x.name,
                dtype: x.dtype,
                elems: x.len(shape),
                listed: format!("{} ({}[M,{cols}])", x.name, x.dtype),
                extent: format!("{}x{} {} (M x {cols})", shape.m, shape.n, x.dtype),
            })
            .collect();
        bind_named("matrix", "reads", "matrix ", &wanted, matrices, size)
    }
}

/// A tensor a kernel's epilogue reads or writes, as a call must bind it.
struct Named<'a> {
    name: &'a str,
    dtype: DType,
    /// Elements it holds at the call's size.
    elems: u64,
    /// How the list of wanted tensors names it: `Bias (bf16[N])`.
    listed: String,
    /// Its extent at the call's size: `200 bf16 (N)`.
    extent: String,
}

/// The bindings of `wanted`, the `kind`s (`vector`, `matrix`, `group
/// store`) the kernel's epilogue `verb`s, from `given`: each given once, by
/// name, of its element type and at least its size; none the kernel does
/// not use. `article` precedes the list in the message for a missing one.
fn bind_named(kind: &str, verb: &str, article: &str, wanted: &[Named], given: Vec<TensorBinding>, size: GemmSize) -> Result<Vec<TensorBinding>> {
    let args = |s: String| RuntimeError::GemmArgs(s);
    let list = || wanted.iter().map(|w| w.listed.as_str()).collect::<Vec<_>>().join(", ");
    given_once(kind, verb, wanted.iter().map(|w| w.name), &given, list)?;
    let takes = if verb == "writes" { "writes" } else { "takes" };
    let mut out = Vec::with_capacity(wanted.len());
    for w in wanted {
        let Some(t) = given.iter().find(|t| t.name == w.name) else {
            return Err(args(format!("the kernel's epilogue {verb} {article}{}; {} not given", list(), w.name)));
        };
        if t.dtype != w.dtype {
            return Err(args(format!("{} holds {}, the kernel {takes} {}", w.name, t.dtype, w.dtype)));
        }
        let need = w.elems * w.dtype.size_bytes() as u64;
        if t.bytes < need {
            return Err(args(format!(
                "{} is {} for M={} N={} K={}: {need} bytes, the buffer has {}",
                w.name, w.extent, size.m, size.n, size.k, t.bytes
            )));
        }
        out.push(t.clone());
    }
    Ok(out)
}

/// Checks that each of `given` names one of the `kind`s (`vector`,
/// `matrix`, `group store`) the kernel's epilogue `verb`s (`reads`,
/// `writes`), `read`, once; `wanted` describes them for the message.
fn given_once<'a>(
    kind: &str,
    verb: &str,
    read: impl Iterator<Item = &'a str> + Clone,
    given: &[TensorBinding],
    wanted: impl Fn() -> String,
) -> Result<()> {
    for (i, t) in given.iter().enumerate() {
        if !read.clone().any(|name| name == t.name) {
            let reads = if read.clone().next().is_none() { "none".to_string() } else { wanted() };
            return Err(RuntimeError::GemmArgs(format!("{kind} `{}` given, the kernel's epilogue {verb} {reads}", t.name)));
        }
        if given[..i].iter().any(|o| o.name == t.name) {
            return Err(RuntimeError::GemmArgs(format!("{kind} {} given twice", t.name)));
        }
    }
    Ok(())
}

/// A GEMM ready to call on one GPU.
pub struct Gemm {
    spec: GemmSpec,
    kernel: Kernel,
    /// SMs a persistent kernel's grid covers, where not all the device's.
    grid_sms: Option<u32>,
}

impl Gemm {
    /// Loads the artifact in `dir` (`kernel.ptx`, `manifest.json`).
    pub fn load(gpu: &Gpu, dir: impl AsRef<Path>) -> Result<Gemm> {
        Gemm::from_artifact(gpu, &Artifact::load(dir)?)
    }

    /// Loads an artifact already read.
    pub fn from_artifact(gpu: &Gpu, artifact: &Artifact) -> Result<Gemm> {
        let spec = GemmSpec::from_manifest(&artifact.manifest)?;
        Ok(Gemm { spec, kernel: gpu.load(artifact)?, grid_sms: None })
    }

    /// The same GEMM with a persistent kernel's grid over `sms` SMs instead
    /// of all the device's (at most all, at least one; `None`: all): how a
    /// test runs a kernel whose division of work depends on the grid
    /// (stream-K, the balanced grid of `wave_tile`) over other grids than
    /// the device's.
    pub fn on_sms(self, sms: Option<u32>) -> Gemm {
        Gemm { grid_sms: sms, ..self }
    }

    /// What the loaded kernel computes.
    pub fn spec(&self) -> &GemmSpec {
        &self.spec
    }

    /// Every kernel the handle may launch (the artifact's one, today).
    pub fn kernels(&self) -> &[Kernel] {
        std::slice::from_ref(&self.kernel)
    }

    /// The kernel that serves calls of `size`. One artifact has one kernel;
    /// this is where a kernel family's per-M dispatch table will choose.
    pub fn kernel_for(&self, _size: GemmSize) -> &Kernel {
        &self.kernel
    }

    /// Binds device buffers to a call of `size` (see [`GemmSpec::bind`]); a
    /// kernel whose epilogue reads vectors or matrices takes them through [`Gemm::bind_raw`].
    pub fn bind<T: Element>(
        &self,
        gpu: &Gpu,
        size: GemmSize,
        a: &CudaSlice<T>,
        b: &CudaSlice<T>,
        c: &CudaSlice<half::bf16>,
    ) -> Result<BoundGemm> {
        let buffers = GemmBuffers::new(gpu.bind("A", a), gpu.bind("B", b), gpu.bind("C", c));
        self.bind_raw(size, buffers)
    }

    /// Binds buffers given as addresses and sizes (FP8 operands as bytes,
    /// scales where the kernel takes them), a persistent kernel's grid over
    /// the SMs [`Gemm::on_sms`] gave or all the device's.
    pub fn bind_raw(&self, size: GemmSize, buffers: GemmBuffers) -> Result<BoundGemm> {
        let sms = self.grid_sms.unwrap_or(self.kernel_for(size).num_sms);
        self.bind_raw_on(size, buffers, sms)
    }

    /// [`Gemm::bind_raw`] with a persistent kernel's grid over `sms` SMs
    /// (see [`Kernel::prepare_on`]); a tiles grid does not depend on it.
    /// Where TMA cannot address A's and B's rows at `size`'s K, the call
    /// runs on copies of them padded to a K it can ([`crate::padding`]).
    pub fn bind_raw_on(&self, size: GemmSize, buffers: GemmBuffers, sms: u32) -> Result<BoundGemm> {
        let kernel = self.kernel_for(size);
        let Some(k) = self.spec.padded_k(size) else {
            let bindings = self.spec.bind(size, buffers)?;
            return Ok(BoundGemm { prepared: kernel.prepare_on(&self.spec.problem(size), &bindings, sms)?, repacks: Vec::new() });
        };
        // The caller's buffers, checked at their own K, then the padded ones.
        self.spec.bind(size, buffers.clone())?;
        let elem = self.spec.input.size_bytes() as u64;
        let a_shape = Padding { rows: size.m, row_bytes: size.k * elem, padded_rows: size.m, padded_row_bytes: k * elem };
        // B's rows are K long (N x K), or it has K of them (K x N).
        let b_shape = match self.spec.b_layout {
            BLayout::Nk => Padding { rows: size.n, row_bytes: size.k * elem, padded_rows: size.n, padded_row_bytes: k * elem },
            BLayout::Kn => Padding { rows: size.k, row_bytes: size.n * elem, padded_rows: k, padded_row_bytes: size.n * elem },
        };
        let (a, a_copy) = Repack::new(kernel.stream(), &buffers.a, a_shape)?;
        let (b, b_copy) = Repack::new(kernel.stream(), &buffers.b, b_shape)?;
        // Their zeros are in place before any stream copies into them.
        kernel.stream().synchronize().ctx("cuStreamSynchronize")?;
        let padded = GemmSize::new(size.m, size.n, k);
        let bindings = self.spec.bind(padded, GemmBuffers { a, b, ..buffers })?;
        Ok(BoundGemm { prepared: kernel.prepare_on(&self.spec.problem(padded), &bindings, sms)?, repacks: vec![a_copy, b_copy] })
    }
}

/// A GEMM call with its buffers bound and TMA descriptors encoded: launch
/// it as often as needed. Where its K needed padding it owns the padded
/// copies of A and B, as it uses the caller's C: launches of one bound
/// call on several streams at once race on both.
pub struct BoundGemm {
    prepared: Prepared,
    /// A's and B's copies into rows TMA can address, before each launch.
    repacks: Vec<Repack>,
}

impl BoundGemm {
    /// Issues the kernel on `stream` (asynchronous), after the copies of
    /// A and B a padded K needs.
    pub fn launch(&mut self, stream: &Arc<CudaStream>) -> Result<()> {
        for repack in &self.repacks {
            repack.issue(stream)?;
        }
        self.prepared.launch_on(stream)
    }

    /// Launches from now on use programmatic dependent launch or not (see
    /// [`Prepared::set_programmatic_launch`]).
    pub fn set_programmatic_launch(&mut self, on: bool) -> Result<()> {
        self.prepared.set_programmatic_launch(on)
    }

    /// Launches on the kernel's stream and waits: a fault surfaces here.
    pub fn launch_checked(&mut self) -> Result<()> {
        for repack in &self.repacks {
            repack.issue(self.prepared.stream())?;
        }
        self.prepared.launch_checked()
    }

    /// `warmup` untimed launches, then `reps` launches each timed with CUDA
    /// events on the GPU's stream; milliseconds per launch.
    pub fn time(&mut self, gpu: &Gpu, warmup: usize, reps: usize) -> Result<Vec<f64>> {
        let timer = Timer::new(gpu, false, f64::INFINITY);
        let stream = gpu.stream.clone();
        let mut rounds = timer.time_rounds(warmup, reps, &mut [&mut |_| self.launch(&stream)])?;
        Ok(rounds.remove(0))
    }
}
