//! The upstream MLIR pass pipeline (DESIGN section 4): gpu/nvgpu/nvvm/arith/scf/func -> LLVM
//! dialect inside a `gpu.module` carrying an `#nvvm.target`.
//!
//! The pipeline is run one pass at a time (a nested `gpu.module(a, b)` group becomes
//! `gpu.module(a)`, `gpu.module(b)`; with one gpu.module the semantics are identical), so a
//! failure names the exact pass and, on request, carries the IR as it stood after that pass.
//! The verifier runs after the last pass, or after each with `BackendOptions::verify_each`.

use super::{context::BackendContext, error::BackendError, BackendOptions};
use melior::{
    ir::{operation::OperationPrintingFlags, Module},
    pass::{PassIrPrintingOptions, PassManager},
    utility::parse_pass_pipeline,
};

/// `canonicalize` without its region simplification (block merging, dead block arguments):
/// after the conversions the kernel is one function of a few long blocks, which the walk
/// leaves as they were (the PTX of the kernel corpus is the same with and without it), and on
/// a 650 KB module it is a third of the pass's time.
const CANONICALIZE: &str = "canonicalize{region-simplify=disabled}";

/// The explicit form of `gpu-lower-to-nvvm-pipeline` verified with MLIR 22.1.8 (DESIGN 4), with
/// the target options filled in from `opts`, less `convert-vector-to-scf`, `lower-affine` and
/// `llvm-optimize-for-nvvm-target`, and with the debug info kept as line directives.
///
/// The passes left out walk the whole module for nothing: the lowering emits no vector or
/// affine op, and one would stop the pipeline at a conversion that cannot legalise it rather
/// than pass through; `llvm-optimize-for-nvvm-target` rewrites only f16 divisions (into an
/// approximate reciprocal and a correction), which the epilogues, computing in f32, do not
/// emit, and which NVPTX would otherwise divide in f32, as accurately if more slowly. The
/// `canonicalize`s run without region simplification (`CANONICALIZE`). `expand-strided-metadata` finds no memref op to expand either (memrefs
/// are only the types of nvgpu's TMA and mbarrier operands), but its rewrite also folds the
/// constants `convert-nvgpu-to-nvvm` leaves; the LLVM kernel pipeline (`llvm_pipeline.rs`)
/// was chosen on the IR it gives.
pub fn default_pipeline(opts: &BackendOptions) -> String {
    let target = format!(
        "nvvm-attach-target{{chip={} features={} O={}}}",
        opts.chip, opts.features, opts.opt_level
    );
    [
        "convert-nvgpu-to-nvvm",
        "gpu-kernel-outlining",
        "convert-scf-to-cf",
        "convert-nvvm-to-llvm",
        "convert-func-to-llvm",
        "expand-strided-metadata",
        &target,
        "convert-arith-to-llvm",
        "convert-index-to-llvm",
        CANONICALIZE,
        "cse",
        // Upstream strips the debug info here. tilec keeps the tile program's locations as
        // debug directives only: NVPTX then writes `.file`/`.loc` (what `nvcc -lineinfo`
        // gives) without `.target ..., debug`, which would make ptxas build a debug kernel
        // (more registers, serialised wgmma).
        &format!("gpu.module(convert-gpu-to-nvvm{{use-bare-ptr-memref-call-conv=1}},{CANONICALIZE},cse,reconcile-unrealized-casts)"),
        "ensure-debug-info-scope-on-llvm-func{emission-kind=DebugDirectivesOnly}",
        "gpu-to-llvm{use-bare-pointers-for-kernels=1}",
        "reconcile-unrealized-casts",
    ]
    .join(",")
}

/// Splits a textual pipeline into single-pass steps, each a pipeline string anchored on
/// `builtin.module`: `a,b{x=1},gpu.module(c,d)` -> `a`, `b{x=1}`, `gpu.module(c)`, `gpu.module(d)`.
pub fn split_pipeline(pipeline: &str) -> Vec<String> {
    let mut steps = Vec::new();
    for element in split_top_level(pipeline) {
        match element.find('(') {
            // `anchor(p1,p2)`: an op-anchored nested pipeline ('{' would start options first).
            Some(open) if !element[..open].contains('{') && element.ends_with(')') => {
                let anchor = element[..open].trim();
                let inner = &element[open + 1..element.len() - 1];
                for nested in split_pipeline(inner) {
                    steps.push(format!("{anchor}({nested})"));
                }
            }
            _ => steps.push(element.trim().to_string()),
        }
    }
    steps.retain(|s| !s.is_empty());
    steps
}

/// Splits on commas that are outside `{}` and `()`.
fn split_top_level(s: &str) -> Vec<&str> {
    let (mut depth, mut start, mut out) = (0i32, 0usize, Vec::new());
    for (i, c) in s.char_indices() {
        match c {
            '{' | '(' => depth += 1,
            '}' | ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(s[start..].trim());
    out
}

/// The pass a single-pass step runs: `gpu.module(convert-gpu-to-nvvm{x=1})` -> `convert-gpu-to-nvvm`.
fn step_pass_name(step: &str) -> &str {
    let mut pass = step;
    while let Some(open) = pass.find('(').filter(|&open| !pass[..open].contains('{')) {
        pass = pass[open + 1..].strip_suffix(')').unwrap_or(&pass[open + 1..]);
    }
    pass.split('{').next().unwrap_or(pass).trim()
}

/// Runs `pipeline` on `module`, pass by pass, printing the IR after the passes `opts` names
/// (MLIR's IR printing, to stderr). The module is verified after the last pass, and after every
/// one with `opts.verify_each`: the passes are MLIR's own, their input was verified when it
/// was parsed, and verifying a kernel's module after each of them is a tenth of a compile.
/// A module the last check refuses names that pass; `verify_each` finds the one that broke it.
pub fn run_pipeline(
    ctx: &BackendContext,
    module: &mut Module,
    pipeline: &str,
    opts: &BackendOptions,
) -> Result<(), BackendError> {
    let steps = split_pipeline(pipeline);
    let last = steps.len().saturating_sub(1);
    for (i, step) in steps.into_iter().enumerate() {
        let pm = PassManager::new(ctx.mlir());
        pm.enable_verifier(opts.verify_each || i == last);
        parse_pass_pipeline(pm.as_operation_pass_manager(), &format!("builtin.module({step})"))
            .map_err(|e| BackendError::PipelineSyntax { pipeline: step.clone(), message: e.to_string() })?;
        if opts.print_ir_after_all || opts.print_ir_after.iter().any(|p| p == step_pass_name(&step)) {
            pm.enable_ir_printing(&PassIrPrintingOptions {
                before_all: false,
                after_all: true,
                module_scope: false,
                on_change: false,
                on_failure: false,
                flags: OperationPrintingFlags::new(),
                tree_printing_path: Default::default(),
            });
        }
        ctx.take_diagnostics();
        if pm.run(module).is_err() {
            let diagnostics = ctx.take_diagnostics();
            let ir_after_failure =
                opts.print_ir_after_failure.then(|| module.as_operation().to_string());
            return Err(BackendError::Pass { pass: step, diagnostics, ir_after_failure });
        }
    }
    Ok(())
}


#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_names_its_pass() {
        assert_eq!(step_pass_name("gpu.module(convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=1})"), "convert-gpu-to-nvvm");
        assert_eq!(step_pass_name("nvvm-attach-target{chip=sm_90a features=+ptx80 O=3}"), "nvvm-attach-target");
        assert_eq!(step_pass_name("cse"), "cse");
    }
}
