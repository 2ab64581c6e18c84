//! The LLVM pass pipeline for the kernels tilec generates: `default<O3>` less the passes
//! that do nothing for them.
//!
//! The kernels are one function each, with no calls, allocas, vector code, switches or library
//! calls, and MLIR's `canonicalize` and `cse` have already run on them. So O3's inliner
//! and its interprocedural clean-up, SROA, mem2reg, the vectorisers, the coroutine and OpenMP
//! passes, the loop idiom, distribution and deletion passes, and the late SCCP find little or
//! nothing to do, yet each walks the whole kernel, whose accumulator structs hold up to 128
//! values.
//!
//! The list was found by taking O3's passes out one at a time and keeping each removal that
//! left the PTX of a quick set of kernels byte for byte as O3 gives it
//! (`scripts/prune-llvm-pipeline.py`). Over every kernel of the GPU variant lists and the
//! examples' picks at the benchmark, validation, deep-K and decode shapes
//! (`scripts/ptx-corpus.sh`) the PTX of about a third differs from O3's, in register
//! numbering and instruction order, and those kernels were timed against O3's on the GPU
//! (docs/benchmarks/compile-time.md says where). An LLVM upgrade re-runs the script and the
//! timing.

/// `simplifycfg` as O3 runs it inside the CGSCC walk: switch ranges become compares.
const SIMPLIFYCFG_CGSCC: &str = "simplifycfg<switch-range-to-icmp>";

/// `simplifycfg` as O3 runs it last in the CGSCC walk: it also hoists and sinks the
/// instructions both sides of a branch share.
const SIMPLIFYCFG_LATE: &str = "simplifycfg<switch-range-to-icmp;switch-to-arithmetic;hoist-common-insts;sink-common-insts>";

/// `instcombine` as O3 runs it: one iteration, without the check that it reached a fixpoint
/// (which aborts the process where one iteration leaves work, as on the FP8 quantising
/// epilogue).
const INSTCOMBINE: &str = "instcombine<max-iterations=1;no-verify-fixpoint>";

/// The pipeline [`llvm_pipeline`] runs at `-O3`.
fn kernel_pipeline() -> String {
    let cgscc_function = [
        "speculative-execution<only-if-divergent-target>",
        "correlated-propagation",
        INSTCOMBINE,
        "reassociate",
        "loop-mssa(loop-rotate<header-duplication;no-prepare-for-lto>,licm<allowspeculation>)",
        SIMPLIFYCFG_CGSCC,
        INSTCOMBINE,
        "loop(indvars)",
        "gvn",
        INSTCOMBINE,
        "loop-mssa(licm<allowspeculation>)",
        SIMPLIFYCFG_LATE,
    ]
    .join(",");
    [
        "function(nvvm-intr-range)".to_string(),
        "function(simplifycfg)".to_string(),
        "ipsccp".to_string(),
        format!("function({INSTCOMBINE})"),
        format!(
            "cgscc(devirt<4>(inline,function-attrs<skip-non-recursive-function-attrs>,function<no-rerun>({cgscc_function})))"
        ),
        "function(loop-unroll<O3>,div-rem-pairs)".to_string(),
    ]
    .join(",")
}

/// The LLVM pipeline for optimisation level `opt_level`: the kernel pipeline at 3, LLVM's
/// `default<O{n}>` below.
pub fn llvm_pipeline(opt_level: u32) -> String {
    match opt_level {
        3.. => kernel_pipeline(),
        n => format!("default<O{n}>"),
    }
}
