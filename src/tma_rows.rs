//! `--shape` against the kernel's TMA descriptors. TMA addresses a tensor
//! only when each of its rows starts a multiple of 16 bytes after the one
//! before, which `cuTensorMapEncodeTiled` checks when the runtime encodes
//! the descriptor at launch. Config selection already stores C directly
//! where its rows are unaligned. A GEMM's `A[M,K]` and `B[N,K]` with K
//! unaligned run on copies padded to an aligned K, made by the runtime
//! before each launch (`tilec_runtime::padding`): a warning says so, and
//! what it costs. For any other tensor still copied by TMA at the given
//! shape (a B stored `K x N` with N unaligned, a grouped GEMM's operands,
//! a C whose TMA store a pipeline pinned) this is the compile-time error,
//! located at the function that takes it, instead of a kernel the runtime
//! refuses.

use crate::config_select::Shape;
use tilec_artifact::{Dim, Manifest, Param, Role, TensorDecl};
use tilec_dialects::{Diagnostic, Location, Module};
use tilec_target::TMA_STRIDE_ALIGN_BYTES;

/// Checks each tensor `manifest` copies with a (non-flat) TMA descriptor:
/// where its contiguous dimension is M, N or K, a row of it at `shape`
/// must be a multiple of 16 bytes, or be one the runtime pads (the
/// warnings returned). A dimension bound by another name (a grouped GEMM's
/// rows, a scale tensor's blocks) is not fixed by `--shape`, and the
/// runtime checks it at launch.
pub fn check(module: &Module, manifest: &Manifest, shape: Shape) -> Result<Vec<Diagnostic>, Diagnostic> {
    let (m, n, k) = shape;
    // At the function, whose signature declares the tensors: the copies the
    // passes made have no one source line between them.
    let func = module.functions.first().map_or(String::new(), |f| f.name.clone());
    let loc = module.functions.first().map_or_else(Location::unknown, |f| f.loc.clone());
    let mut warnings = Vec::new();
    for param in &manifest.params {
        let Param::Tma(tma) = param else { continue };
        let Some(tensor) = manifest.tensors.iter().find(|t| t.name == tma.tensor) else { continue };
        if tma.flat || tensor.shape.len() < 2 {
            continue;
        }
        let Some(Dim::Sym(name)) = tensor.shape.last() else { continue };
        let elements = match name.as_str() {
            "M" => m,
            "N" => n,
            "K" => k,
            _ => continue,
        } as u64;
        let elem = tensor.dtype.size_bytes() as u64;
        let row_bytes = elements * elem;
        if row_bytes % TMA_STRIDE_ALIGN_BYTES == 0 {
            continue;
        }
        // Element sizes are powers of two up to 8 bytes.
        let multiple = TMA_STRIDE_ALIGN_BYTES / elem;
        if padded_by_runtime(tensor) {
            let padded = (k as u64).div_ceil(multiple) * multiple;
            let rows = if tensor.shape[0] == Dim::Sym("M".into()) { m } else { n } as u64;
            warnings.push(Diagnostic::warning(
                loc.clone(),
                format!(
                    "for the shape {m}x{n}x{k}, a row of %{} in @{func} is K = {k} {} elements ({row_bytes} bytes), not a multiple of {TMA_STRIDE_ALIGN_BYTES} bytes as TMA needs: each launch first copies it into rows of K = {padded} (zeros after K), {} bytes read and written; pad K to a multiple of {multiple} to avoid the copy",
                    tensor.name,
                    tensor.dtype,
                    rows * row_bytes
                ),
            ));
            continue;
        }
        let direct = if tensor.role == Role::Output { ", or store it directly (epilogue = global, as config selection does for such a shape)" } else { "" };
        return Err(Diagnostic::error(
            loc,
            format!(
                "for the shape {m}x{n}x{k}, a row of %{} in @{func} is {name} = {elements} {} elements ({row_bytes} bytes), but its TMA copies need rows of a multiple of {TMA_STRIDE_ALIGN_BYTES} bytes: pad {name} to a multiple of {multiple}{direct}",
                tensor.name, tensor.dtype
            ),
        ));
    }
    Ok(warnings)
}

/// Whether the runtime pads the rows of `tensor` where K leaves them
/// unaligned: a GEMM's `A[M,K]` or `B[N,K]` (`tilec_runtime::padding`).
fn padded_by_runtime(tensor: &TensorDecl) -> bool {
    let dims: Vec<&str> = tensor.shape.iter().map(|d| match d { Dim::Sym(s) => s.as_str(), _ => "" }).collect();
    tensor.role == Role::Input && matches!(dims.as_slice(), ["M", "K"] | ["N", "K"])
}
