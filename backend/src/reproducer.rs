//! A reproducer of the upstream MLIR pipeline: the generated MLIR with the
//! exact pipeline the back end runs, replayable with upstream `mlir-opt`
//! either as `mlir-opt --run-reproducer FILE` (MLIR's own reproducer format,
//! the pipeline in an `external_resources` block) or with the pipeline spelled
//! out on the command line, as the file's header says.

use super::{upstream_pipeline, BackendOptions};

/// The upstream `mlir-opt` the reproducer is written for (LLVM/MLIR 22).
pub const MLIR_OPT: &str = "/usr/lib/llvm-22/bin/mlir-opt";

/// The `mlir-opt` command line that runs `opts`'s pipeline on `file`.
pub fn mlir_opt_command(opts: &BackendOptions, file: &str) -> String {
    format!("{MLIR_OPT} --pass-pipeline='builtin.module({})' {file}", upstream_pipeline(opts))
}

/// The reproducer text for the generated `mlir`.
pub fn reproducer(mlir: &str, opts: &BackendOptions) -> String {
    let pipeline = format!("builtin.module({})", upstream_pipeline(opts));
    format!(
        "// tilec reproducer: the generated MLIR and the upstream pipeline tilec runs on it.\n\
         // Replay with either of:\n\
         //   {MLIR_OPT} --run-reproducer THIS_FILE\n\
         //   {}\n\
         {}\n\
         {{-# external_resources: {{ mlir_reproducer: {{ pipeline: \"{pipeline}\", disable_threading: true, verify_each: true }} }} #-}}\n",
        mlir_opt_command(opts, "THIS_FILE"),
        mlir.trim_end(),
    )
}
