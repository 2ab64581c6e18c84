#![warn(missing_docs)]
//! The MLIR -> PTX back end: parse MLIR text, run the upstream pass pipeline (DESIGN 4), attach
//! the kernel ABI, translate the `gpu.module` to LLVM IR, optimise it and emit PTX for sm_90a.
//!
//! ```text
//!  MLIR text ──parse──▶ module ──pipeline.rs──▶ LLVM-dialect gpu.module ──kernel_abi.rs──▶
//!  ──ptx.rs: mlirTranslateModuleToLLVMIR──▶ LLVM IR ──llvm_pipeline.rs──▶ NVPTX ──▶ PTX text
//! ```
//! Each stage's text is available through [`emit`] for `--emit=mlir|llvm|ptx`; [`emit_in`]
//! runs the same stages in a caller's context and records the wall time of each in [`Timings`]
//! (`tilec bench-compile`).

mod context;
mod error;
mod kernel_abi;
mod llvm_pipeline;
mod pipeline;
mod reproducer;
mod ptx;
mod struct_fields;
mod verify_ptx;
mod wgmma_drain;

pub use context::BackendContext;
pub use error::{BackendError, Diagnostics};
pub use kernel_abi::{TMA_PARAMS_ATTR, TMA_PARAM_ATTRS};
pub use llvm_pipeline::llvm_pipeline;
pub use pipeline::{default_pipeline, split_pipeline};
pub use reproducer::{mlir_opt_command, reproducer, MLIR_OPT};
pub use ptx::NVPTX_TRIPLE;
pub use verify_ptx::{check_report, find_ptxas, verify_ptx, PtxasReport};

use melior::ir::{
    block::BlockLike,
    operation::{Operation, OperationLike},
    Module,
};
use std::time::{Duration, Instant};

/// Options of the back end. `Default` is the verified Hopper configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendOptions {
    /// GPU architecture: NVPTX cpu and `#nvvm.target` chip. Default the default target's
    /// ([`tilec_target::Target::sm`], `sm_90a`: wgmma needs `a`).
    pub chip: String,
    /// NVPTX features / `#nvvm.target` features. Default `+ptx80`.
    pub features: String,
    /// Optimisation level for `nvvm-attach-target`, the LLVM pipeline ([`llvm_pipeline`]) and
    /// codegen. Default 3.
    pub opt_level: u32,
    /// Name the input is reported under in diagnostics (`name:line:col: error: ...`).
    pub source_name: String,
    /// Attach the whole module, as it stood after a failing pass, to [`BackendError::Pass`].
    pub print_ir_after_failure: bool,
    /// Replaces [`default_pipeline`] when set (textual pass pipeline, without the
    /// `builtin.module(...)` wrapper).
    pub pipeline: Option<String>,
    /// Replaces [`llvm_pipeline`] when set (LLVM's textual pass pipeline, as `opt -passes`).
    pub llvm_pipeline: Option<String>,
    /// Verify the module after every upstream pass, not only after the last.
    pub verify_each: bool,
    /// Print the IR to stderr after every upstream pass (MLIR's IR printing).
    pub print_ir_after_all: bool,
    /// Print the IR to stderr after the upstream passes of these names (`convert-nvgpu-to-nvvm`).
    pub print_ir_after: Vec<String>,
}

impl Default for BackendOptions {
    fn default() -> Self {
        Self {
            chip: tilec_target::Target::DEFAULT.sm.into(),
            features: "+ptx80".into(),
            opt_level: 3,
            source_name: "<mlir>".into(),
            print_ir_after_failure: false,
            pipeline: None,
            llvm_pipeline: None,
            verify_each: false,
            print_ir_after_all: false,
            print_ir_after: Vec::new(),
        }
    }
}

/// A stage whose text [`emit`] returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// MLIR after the pass pipeline and the kernel-ABI fix-up (the input of translation).
    Mlir,
    /// LLVM IR straight out of `mlirTranslateModuleToLLVMIR` (triple and data layout set).
    LlvmIr,
    /// LLVM IR after the LLVM pipeline (the input of NVPTX codegen).
    LlvmIrOptimized,
    /// PTX assembly.
    Ptx,
}

/// Compiled PTX of one `gpu.module`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ptx {
    /// PTX text (`.version`, `.target`, `.entry` ...).
    pub text: String,
    /// Names of the `.entry` functions (kernels), in order.
    pub entries: Vec<String>,
}

/// Wall time of each back-end stage of one compilation, as [`emit_in`] records it. Stages not
/// reached (an earlier `Stage`, or an error) stay zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timings {
    /// Parsing the MLIR text into the context.
    pub parse: Duration,
    /// The upstream pass pipeline and the kernel-ABI fix-up.
    pub pipeline: Duration,
    /// `mlirTranslateModuleToLLVMIR` and the NVPTX target machine.
    pub translate: Duration,
    /// LLVM IR verification and the LLVM pipeline.
    pub optimize: Duration,
    /// NVPTX code generation (the PTX text).
    pub codegen: Duration,
}

/// Compiles MLIR text (a `builtin.module` holding exactly one `gpu.module`) to PTX.
pub fn mlir_to_ptx(mlir_text: &str, opts: &BackendOptions) -> Result<Ptx, BackendError> {
    mlir_to_ptx_in(&BackendContext::new(), mlir_text, opts, &mut Timings::default())
}

/// [`mlir_to_ptx`] in `ctx`, recording each stage's time in `timings`.
pub fn mlir_to_ptx_in(
    ctx: &BackendContext,
    mlir_text: &str,
    opts: &BackendOptions,
    timings: &mut Timings,
) -> Result<Ptx, BackendError> {
    let text = emit_in(ctx, mlir_text, opts, Stage::Ptx, timings)?;
    Ok(Ptx { entries: ptx_entries(&text), text })
}

/// MLIR after the upstream pipeline and the kernel ABI (`--emit=mlir`).
pub fn lower_mlir(mlir_text: &str, opts: &BackendOptions) -> Result<String, BackendError> {
    emit(mlir_text, opts, Stage::Mlir)
}

/// Optimised LLVM IR (`--emit=llvm`).
pub fn mlir_to_llvm_ir(mlir_text: &str, opts: &BackendOptions) -> Result<String, BackendError> {
    emit(mlir_text, opts, Stage::LlvmIrOptimized)
}

/// Runs the back end up to `stage` in a fresh context and returns that stage's text.
pub fn emit(mlir_text: &str, opts: &BackendOptions, stage: Stage) -> Result<String, BackendError> {
    emit_in(&BackendContext::new(), mlir_text, opts, stage, &mut Timings::default())
}

/// Runs the back end up to `stage` in `ctx` and returns that stage's text; `timings` gets the
/// time of each stage run. The stage boundaries are the ones [`Timings`] documents.
pub fn emit_in(
    ctx: &BackendContext,
    mlir_text: &str,
    opts: &BackendOptions,
    stage: Stage,
    timings: &mut Timings,
) -> Result<String, BackendError> {
    let mut clock = Lap::start();
    let mut module = parse_module(ctx, mlir_text, &opts.source_name)?;
    timings.parse = clock.lap();
    pipeline::run_pipeline(ctx, &mut module, &upstream_pipeline(opts), opts)?;
    kernel_abi::apply_kernel_abi(ctx, &mut module)?;
    timings.pipeline = clock.lap();
    if stage == Stage::Mlir {
        return Ok(module.as_operation().to_string());
    }

    let gpu_module = single_gpu_module(&module)?;
    let llvm = inkwell::context::Context::create();
    let llvm_module = ptx::translate_gpu_module(ctx, gpu_module, &llvm)?;
    let tm = ptx::target_machine(opts)?;
    timings.translate = clock.lap();
    if stage == Stage::LlvmIr {
        llvm_module.set_triple(&tm.get_triple());
        llvm_module.set_data_layout(&tm.get_target_data().get_data_layout());
        return Ok(llvm_module.print_to_string().to_string());
    }
    ptx::optimize(&llvm_module, &tm, opts)?;
    timings.optimize = clock.lap();
    if stage == Stage::LlvmIrOptimized {
        return Ok(llvm_module.print_to_string().to_string());
    }
    let ptx = ptx::emit_ptx(&llvm_module, &tm)?;
    timings.codegen = clock.lap();
    Ok(ptx)
}

/// The upstream pipeline `opts` runs: its own, or [`default_pipeline`].
pub fn upstream_pipeline(opts: &BackendOptions) -> String {
    opts.pipeline.clone().unwrap_or_else(|| default_pipeline(opts))
}

/// Time since the previous lap (or the start).
struct Lap(Instant);

impl Lap {
    fn start() -> Self {
        Lap(Instant::now())
    }

    fn lap(&mut self) -> Duration {
        let now = Instant::now();
        let elapsed = now - self.0;
        self.0 = now;
        elapsed
    }
}

/// Parses `text` as a top-level `builtin.module`, reporting MLIR's diagnostics with locations
/// under `source_name`.
pub fn parse_module<'c>(ctx: &'c BackendContext, text: &str, source_name: &str) -> Result<Module<'c>, BackendError> {
    ctx.take_diagnostics();
    let parse_error = |diagnostics| BackendError::Parse { source_name: source_name.to_string(), diagnostics };
    // SAFETY: plain C API call on a live context; string refs point at live Rust strings for
    // the duration of the call (MLIR copies what it keeps).
    let raw = unsafe {
        mlir_sys::mlirOperationCreateParse(
            ctx.mlir().to_raw(),
            melior::StringRef::new(text).to_raw(),
            melior::StringRef::new(source_name).to_raw(),
        )
    };
    if raw.ptr.is_null() {
        return Err(parse_error(ctx.take_diagnostics()));
    }
    // SAFETY: a freshly parsed, owned top-level operation.
    let op = unsafe { Operation::from_raw(raw) };
    let module = Module::from_operation(op).ok_or_else(|| {
        parse_error(Diagnostics(vec![format!("{source_name}: error: the top-level operation must be a builtin.module")]))
    })?;
    Ok(module)
}

fn single_gpu_module(module: &Module) -> Result<mlir_sys::MlirOperation, BackendError> {
    let mut found = Vec::new();
    let mut op = module.body().first_operation();
    while let Some(o) = op {
        if o.name().as_string_ref().as_str() == Ok("gpu.module") {
            found.push(o.to_raw());
        }
        op = o.next_in_block();
    }
    match found.as_slice() {
        [one] => Ok(*one),
        [] => Err(BackendError::Input("no gpu.module in the module".into())),
        _ => Err(BackendError::Input(format!(
            "{} gpu.modules in the module; the back end compiles exactly one",
            found.len()
        ))),
    }
}

/// Names of the `.entry` functions of a PTX text.
pub fn ptx_entries(ptx: &str) -> Vec<String> {
    ptx.lines()
        .filter_map(|l| l.trim_start().strip_prefix(".visible .entry ").or_else(|| l.trim_start().strip_prefix(".entry ")))
        .map(|rest| rest.split(['(', ' ']).next().unwrap_or("").to_string())
        .collect()
}
