//! `gpu.module` (LLVM dialect) -> LLVM IR -> optimised LLVM IR -> PTX, in process: MLIR's
//! `mlirTranslateModuleToLLVMIR` hands the module to inkwell, which sets the NVPTX triple and
//! the target machine's data layout, runs the LLVM pipeline (`llvm_pipeline.rs`), and emits PTX
//! for `chip`/`features`.

use super::{context::BackendContext, error::BackendError, llvm_pipeline::llvm_pipeline, struct_fields::take_structs_apart, BackendOptions};
use inkwell::{
    context::Context as LlvmContext,
    module::Module as LlvmModule,
    passes::PassBuilderOptions,
    targets::{CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetMachine, TargetTriple},
    OptimizationLevel,
};
use mlir_sys::MlirOperation;
use std::sync::Once;

/// The LLVM target triple of PTX for 64-bit CUDA.
pub const NVPTX_TRIPLE: &str = "nvptx64-nvidia-cuda";

/// Translates one `gpu.module` (already in the LLVM dialect) into an LLVM module owned by
/// `llvm`. The kernels keep their names; `nvvm.kernel` becomes the `ptx_kernel` calling
/// convention, grid-constant/byval attributes become LLVM parameter attributes.
pub fn translate_gpu_module<'l>(
    ctx: &BackendContext,
    gpu_module: MlirOperation,
    llvm: &'l LlvmContext,
) -> Result<LlvmModule<'l>, BackendError> {
    ctx.take_diagnostics();
    // SAFETY: `gpu_module` is a live operation of `ctx`; the LLVM context pointer comes from a
    // live inkwell context (mlir-sys and llvm-sys declare the same opaque C type separately).
    let raw = unsafe { mlir_sys::mlirTranslateModuleToLLVMIR(gpu_module, llvm.raw() as *mut _) };
    if raw.is_null() {
        return Err(BackendError::Translate { diagnostics: ctx.take_diagnostics() });
    }
    // SAFETY: `raw` is a fresh module created in `llvm`'s context; ownership passes to inkwell.
    Ok(unsafe { LlvmModule::new(raw as *mut _) })
}

fn init_nvptx() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| Target::initialize_nvptx(&InitializationConfig::default()));
}

/// The NVPTX target machine for `opts.chip` / `opts.features`.
pub fn target_machine(opts: &BackendOptions) -> Result<TargetMachine, BackendError> {
    init_nvptx();
    let triple = TargetTriple::create(NVPTX_TRIPLE);
    let target = Target::from_triple(&triple)
        .map_err(|e| BackendError::Llvm { step: "target lookup", message: e.to_string() })?;
    let level = match opts.opt_level {
        0 => OptimizationLevel::None,
        1 => OptimizationLevel::Less,
        2 => OptimizationLevel::Default,
        _ => OptimizationLevel::Aggressive,
    };
    target
        .create_target_machine(&triple, &opts.chip, &opts.features, level, RelocMode::Default, CodeModel::Default)
        .ok_or_else(|| BackendError::Llvm {
            step: "target machine creation",
            message: format!("no NVPTX target machine for cpu `{}` features `{}`", opts.chip, opts.features),
        })
}

/// Sets triple and data layout, verifies, runs the LLVM pipeline (`opts.llvm_pipeline`, or
/// [`llvm_pipeline`] for `opts.opt_level`), and takes struct values apart for
/// instruction selection (`struct_fields.rs`).
pub fn optimize(module: &LlvmModule, tm: &TargetMachine, opts: &BackendOptions) -> Result<(), BackendError> {
    module.set_triple(&tm.get_triple());
    module.set_data_layout(&tm.get_target_data().get_data_layout());
    module
        .verify()
        .map_err(|e| BackendError::Llvm { step: "IR verification", message: e.to_string() })?;
    let passes = opts.llvm_pipeline.clone().unwrap_or_else(|| llvm_pipeline(opts.opt_level));
    module.run_passes(&passes, tm, PassBuilderOptions::create()).map_err(|e| match &opts.llvm_pipeline {
        // LLVM checks a pipeline's text only when it runs it: a given one that fails here is
        // the user's to mend, like an upstream pipeline MLIR cannot parse.
        Some(given) => BackendError::PipelineSyntax { pipeline: given.clone(), message: e.to_string() },
        None => BackendError::Llvm { step: "optimisation", message: e.to_string() },
    })?;
    take_structs_apart(module);
    Ok(())
}

/// Emits PTX assembly text.
pub fn emit_ptx(module: &LlvmModule, tm: &TargetMachine) -> Result<String, BackendError> {
    let buffer = tm
        .write_to_memory_buffer(module, FileType::Assembly)
        .map_err(|e| BackendError::Llvm { step: "PTX emission", message: e.to_string() })?;
    let ptx = String::from_utf8(buffer.as_slice().to_vec())
        .map_err(|e| BackendError::Llvm { step: "PTX emission", message: e.to_string() })?;
    Ok(super::wgmma_drain::hoist_drain_waits(&ptx))
}
