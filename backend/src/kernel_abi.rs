//! Kernel ABI fix-up, run on the LLVM-dialect `gpu.module` after `convert-gpu-to-nvvm`.
//!
//! A kernel lists which of its parameters are TMA descriptors with the function attribute
//! `tilec.tma_params = array<i32: ...>` (parameter indices). It is a discardable attribute on
//! the `gpu.func`, which `convert-gpu-to-nvvm` copies to the `llvm.func`; argument attributes
//! outside the `llvm.` namespace are dropped by that conversion, so they cannot carry it.
//!
//! Each listed parameter (which must be a generic `!llvm.ptr`) becomes a CUDA
//! `const __grid_constant__ CUtensorMap` parameter:
//!   `{llvm.byval = !llvm.array<128 x i8>, llvm.align = 64 : i64, nvvm.grid_constant}`
//! which NVPTX prints as `.param .align 64 .b8 name[128]` and, because it is a grid constant,
//! takes its generic address with `cvta.param` instead of copying it to local memory. The
//! driver passes the descriptor by value in the parameter space: no device copy, no
//! descriptor fence. (Spelling as in upstream mlir/test/Target/LLVMIR/nvvmir.mlir.)

use super::{context::BackendContext, error::BackendError};
use melior::{
    ir::{
        attribute::{ArrayAttribute, DenseI32ArrayAttribute},
        block::BlockLike,
        operation::{OperationLike, OperationMutLike, OperationRefMut, WalkOrder, WalkResult},
        Attribute, Module, RegionLike, ValueLike,
    },
};
use mlir_sys::MlirOperation;

/// Name of the function attribute listing TMA-descriptor parameter indices.
pub const TMA_PARAMS_ATTR: &str = "tilec.tma_params";

/// Argument attributes given to every TMA-descriptor parameter.
pub const TMA_PARAM_ATTRS: &str =
    "llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant";

/// Applies the TMA-descriptor ABI to every `llvm.func` carrying [`TMA_PARAMS_ATTR`] and removes
/// that attribute. Returns the names of the kernels it changed.
pub fn apply_kernel_abi(ctx: &BackendContext, module: &mut Module) -> Result<Vec<String>, BackendError> {
    let mut funcs: Vec<MlirOperation> = Vec::new();
    module.as_operation().walk(WalkOrder::PreOrder, |op| {
        if op.name().as_string_ref().as_str() == Ok("llvm.func") && op.has_attribute(TMA_PARAMS_ATTR) {
            funcs.push(op.to_raw());
        }
        WalkResult::Advance
    });

    let mut changed = Vec::new();
    for raw in funcs {
        // SAFETY: `raw` was found in `module`, which is alive and not otherwise borrowed, and
        // nothing between the walk and here erased operations.
        let mut func = unsafe { OperationRefMut::from_raw(raw) };
        let name = func
            .attribute("sym_name")
            .ok()
            .and_then(|a| melior::ir::attribute::StringAttribute::try_from(a).ok())
            .map(|s| s.value().to_string())
            .unwrap_or_else(|| "<unnamed>".into());
        let err = |msg: String| BackendError::KernelAbi(format!("@{name}: {msg}"));

        if !func.has_attribute("nvvm.kernel") {
            return Err(err(format!("{TMA_PARAMS_ATTR} is only allowed on kernels (nvvm.kernel)")));
        }
        let indices = DenseI32ArrayAttribute::try_from(func.attribute(TMA_PARAMS_ATTR).unwrap())
            .map_err(|_| err(format!("{TMA_PARAMS_ATTR} must be an array<i32: ...>")))?;
        let entry = func
            .region(0)
            .ok()
            .and_then(|r| r.first_block())
            .ok_or_else(|| err("kernel has no body".into()))?;
        let num_args = entry.argument_count();

        // Existing per-argument dictionaries (printed without the braces), or empty ones.
        let mut dicts: Vec<String> = vec![String::new(); num_args];
        if let Ok(existing) = func.attribute("arg_attrs") {
            let existing = ArrayAttribute::try_from(existing)
                .map_err(|_| err("arg_attrs is not an array".into()))?;
            for (i, slot) in dicts.iter_mut().enumerate().take(existing.len()) {
                let text = existing.element(i).map(|a| a.to_string()).unwrap_or_default();
                *slot = text.trim().trim_start_matches('{').trim_end_matches('}').trim().to_string();
            }
        }
        for k in 0..indices.len() {
            let i = indices.element(k).map_err(|e| err(e.to_string()))?;
            let i = usize::try_from(i)
                .ok()
                .filter(|&i| i < num_args)
                .ok_or_else(|| err(format!("TMA parameter index {i} out of range (kernel has {num_args} parameters)")))?;
            let ty = entry.argument(i).map_err(|e| err(e.to_string()))?.r#type();
            if ty.to_string() != "!llvm.ptr" {
                return Err(err(format!("TMA parameter {i} must be a generic !llvm.ptr, found {ty}")));
            }
            if dicts[i].contains("llvm.byval") {
                return Err(err(format!("parameter {i} is already byval")));
            }
            dicts[i] = if dicts[i].is_empty() {
                TMA_PARAM_ATTRS.to_string()
            } else {
                format!("{}, {TMA_PARAM_ATTRS}", dicts[i])
            };
        }
        let text = format!("[{}]", dicts.iter().map(|d| format!("{{{d}}}")).collect::<Vec<_>>().join(", "));
        let attr = Attribute::parse(ctx.mlir(), &text)
            .ok_or_else(|| err(format!("cannot build arg_attrs `{text}`: {}", ctx.take_diagnostics())))?;
        func.set_attribute("arg_attrs", attr);
        func.remove_attribute(TMA_PARAMS_ATTR).map_err(|e| err(e.to_string()))?;
        changed.push(name);
    }

    ctx.take_diagnostics();
    if !module.as_operation().verify() {
        return Err(BackendError::KernelAbi(format!(
            "module does not verify after attaching the TMA parameter ABI:\n{}",
            ctx.take_diagnostics()
        )));
    }
    Ok(changed)
}
