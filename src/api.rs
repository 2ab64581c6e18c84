//! The front door: [`compile`] takes tile IR text to the nv IR, the MLIR, the
//! PTX and the manifest in one call, and [`crate::compile_family`] does so for the
//! kernels several problem shapes pick. `tilec compile` runs the same steps
//! (parse, tile/nv passes, lowering, PTX) from here, stage by stage.

use tilec_backend::{self as backend, BackendOptions};
use crate::pass_runner::{render_pass_error, run_pipeline};
use crate::config_select::{self, ConfigRequest, Shape};
use std::fmt;
use tilec_artifact::Manifest;
use tilec_cli::PassFlags;
use tilec_dialects::ir::{Attribute, Attributes};
use tilec_dialects::syntax::attribute_to_string;
use tilec_dialects::{parse_module, print_module, verify_module, Module, PrintOptions};
use tilec_lower::LoweredKernel;
use tilec_passes::DEFAULT_PIPELINE;
use tilec_target::Target;

/// What to compile for.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Options {
    /// The problem shape `(M, N, K)` config selection picks a kernel for
    /// (none: 4096^3 with direct stores, a kernel that serves any N).
    pub shape: Option<Shape>,
    /// Parameters pinned by name: `BLOCK_M`, `BLOCK_N`, `BLOCK_K` or `STAGES`.
    pub params: Vec<(String, i64)>,
    /// The tile/nv pass pipeline, as `tilec compile --pass-pipeline` takes it
    /// (none: config selection, then the passes the chosen config asks for).
    pub pipeline: Option<String>,
    /// The GPU to compile for (default [`Target::DEFAULT`]), as `tilec
    /// compile --target` names it: config selection chooses for it, and the
    /// manifest names it, so that the runtime refuses the kernel on another.
    pub target: &'static Target,
    /// Configurations measured fastest ([`tilec_artifact::Tuning`], written
    /// by `tilec-bench --tuning`), taken for the shapes they were measured
    /// at instead of the cost model's pick; `tilec compile --tuning`.
    pub tuning: Option<std::sync::Arc<tilec_artifact::Tuning>>,
}

impl Options {
    /// A parameter pinned twice is an error naming it.
    pub(crate) fn check_params(&self, name: &str) -> Result<(), Error> {
        config_select::repeated_param(&self.params).map_or(Ok(()), |message| Err(Error(format!("{name}: error: {message}"))))
    }

    /// What config selection is asked for, as the command line would ask.
    pub(crate) fn request(&self) -> ConfigRequest {
        ConfigRequest { shape: self.shape, params: self.params.clone(), candidate: None, cluster: None, ranking: None, target: self.target, tuning: self.tuning.clone() }
    }
}

/// One compiled kernel, every stage of it.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// The tile/nv IR after the passes.
    pub nv: String,
    /// The MLIR (gpu/nvgpu/nvvm/llvm dialects) the nv IR lowers to.
    pub mlir: String,
    /// The PTX of the kernel.
    pub ptx: String,
    /// What the runtime needs to launch it: entry, arguments, grid, shared memory.
    pub manifest: Manifest,
    /// The `tile.config` config selection chose, as attribute text (none when
    /// the pipeline ran no config selection).
    pub config: Option<String>,
}

impl Compiled {
    /// Writes the artifact the runtime loads: `dir/kernel.ptx` and `dir/manifest.json`.
    pub fn write(&self, dir: &str) -> Result<(), Error> {
        tilec_artifact::Artifact::write(dir, &self.manifest, &self.ptx).map_err(|e| Error(format!("tilec: {e}")))
    }
}

/// Why a compile failed: the diagnostics, located in the source and shown
/// with their line, as `tilec compile` prints them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error(pub String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl From<String> for Error {
    fn from(message: String) -> Self {
        Error(message)
    }
}

impl From<Error> for String {
    fn from(e: Error) -> Self {
        e.0
    }
}

/// Compiles the tile program `source` (named `name` in diagnostics) to PTX.
///
/// ```no_run
/// let source = std::fs::read_to_string("examples/gemm_bf16.tile").unwrap();
/// let options = tilec::Options { shape: Some((4096, 4096, 4096)), ..Default::default() };
/// let kernel = tilec::compile(&source, "gemm_bf16.tile", &options).unwrap();
/// println!("{}: {}", kernel.manifest.entry, kernel.config.unwrap_or_default());
/// ```
pub fn compile(source: &str, name: &str, options: &Options) -> Result<Compiled, Error> {
    options.check_params(name)?;
    let mut module = parse_and_verify(source, name)?;
    run_tile_passes(&mut module, options.pipeline.as_deref(), &options.request(), &PassFlags::default(), name, source)?;
    finish(&module, source, name, options.target, options.shape.as_slice())
}

/// The nv IR of `module` (after its passes), lowered to MLIR and PTX for
/// `target`, to serve `shapes`.
pub(crate) fn finish(module: &Module, source: &str, name: &str, target: &Target, shapes: &[Shape]) -> Result<Compiled, Error> {
    let kernel = lower(module, source, name, target, shapes)?;
    let ptx = backend::mlir_to_ptx(&kernel.mlir, &backend_options(name, target)).map_err(|e| backend_error(name, &e))?;
    Ok(Compiled {
        nv: print_module(module, PrintOptions::default()),
        config: chosen_config(module),
        mlir: kernel.mlir,
        ptx: ptx.text,
        manifest: kernel.manifest,
    })
}

/// The `tile.config` of the module's kernel, as attribute text.
fn chosen_config(module: &Module) -> Option<String> {
    module.functions.first()?.attrs.get("tile.config").map(attribute_to_string)
}

/// Parses and verifies tile/nv text; `name` locates the diagnostics, shown with their source line.
pub fn parse_and_verify(text: &str, name: &str) -> Result<Module, String> {
    let m = parse_module(text, name).map_err(|d| d.render(name, text))?;
    if m.functions.is_empty() {
        let start = tilec_dialects::Location::new(std::sync::Arc::from(name), 1, 1);
        return Err(tilec_dialects::Diagnostic::error(start, "the file defines no kernel: expected a 'tile.func'").render(name, text));
    }
    verify_module(&m).map_err(|d| d.render(name, text))?;
    Ok(m)
}

/// Runs the textual tile/nv `pipeline` on `module` (parsed from `text`, named
/// `name`) with the instrumentation `flags` ask for; its output, and the
/// passes' warnings (and remarks, with `flags.remarks`) with their source
/// lines, go to stderr.
pub(crate) fn run_passes(module: &mut Module, pipeline: &str, flags: &PassFlags, name: &str, text: &str) -> Result<(), String> {
    let mut diagnostics = Vec::new();
    let ran = run_pipeline(module, pipeline, flags, PrintOptions::default(), pipeline == DEFAULT_PIPELINE, &mut std::io::stderr(), &mut diagnostics);
    for diagnostic in &diagnostics {
        eprintln!("{}", diagnostic.render(name, text));
    }
    ran.map_err(|e| render_pass_error(&e, name, text))
}

/// The tile/nv passes: the user's pipeline (behind `tile-select-config` when
/// the program has parameters or the flags ask for a config), or config
/// selection followed by the passes the chosen config names; a file whose
/// `tile.config` already decides everything skips the selection unless the
/// flags ask for one.
pub fn run_tile_passes(
    module: &mut Module,
    pipeline: Option<&str>,
    request: &ConfigRequest,
    flags: &PassFlags,
    name: &str,
    text: &str,
) -> Result<(), String> {
    let select = request.tuned(module, None)?.select_pass(None);
    match pipeline {
        Some(p) if p.contains("tile-select-config") || !(request.is_given() || config_select::is_parametric(module)) => {
            dump_pipeline(flags, p)?;
            run_passes(module, p, flags, name, text)
        }
        Some(p) => {
            let full = format!("{select},{p}");
            dump_pipeline(flags, &full)?;
            run_passes(module, &full, flags, name, text)?;
            keep_only_block_sizes(module);
            Ok(())
        }
        None if config_select::compiles_as_written(module, request) => {
            for func in &module.functions {
                tilec_passes::transforms::select_config::check_decided(func).map_err(|d| d.render(name, text))?;
            }
            if flags.dump_pass_pipeline {
                eprint!("{}", crate::pass_runner::describe_config_pipeline(None, &pipeline_after_config(module, name, text)?)?);
            }
            run_passes_after_config(module, flags, name, text)
        }
        None => {
            run_passes(module, &select, flags, name, text)?;
            if flags.dump_pass_pipeline {
                eprint!("{}", crate::pass_runner::describe_config_pipeline(Some(&select), &pipeline_after_config(module, name, text)?)?);
            }
            run_passes_after_config(module, flags, name, text)
        }
    }
}

/// Leaves in each function's `tile.config` only the block sizes: where
/// config selection ran in front of a given pipeline only to bind them,
/// the schedule it also chose is not what that pipeline built, and the
/// manifest and `Compiled::config` must not say it is.
fn keep_only_block_sizes(module: &mut Module) {
    const SIZES: [&str; 3] = ["block_m", "block_n", "block_k"];
    for func in &mut module.functions {
        let Some(Attribute::Dict(config)) = func.attrs.get("tile.config") else { continue };
        let mut sizes = Attributes::new();
        for (key, value) in config.iter().filter(|(key, _)| SIZES.contains(key)) {
            sizes.set(key, value.clone());
        }
        func.attrs.set("tile.config", Attribute::Dict(sizes));
    }
}

/// `--dump-pass-pipeline`: the pipeline that runs, config selection
/// included where it is put in front.
fn dump_pipeline(flags: &PassFlags, pipeline: &str) -> Result<(), String> {
    if flags.dump_pass_pipeline {
        eprint!("{}", crate::pass_runner::describe_pipeline(pipeline)?);
    }
    Ok(())
}

/// The passes the `tile.config` config selection wrote asks for; an entry
/// it cannot read is shown at its function in `text` (named `name`).
fn pipeline_after_config(module: &Module, name: &str, text: &str) -> Result<String, String> {
    config_select::pipeline_after_config(module, DEFAULT_PIPELINE).map_err(|d| d.render(name, text))
}

/// Runs the passes the `tile.config` config selection wrote asks for.
pub(crate) fn run_passes_after_config(module: &mut Module, flags: &PassFlags, name: &str, text: &str) -> Result<(), String> {
    let rest = pipeline_after_config(module, name, text)?;
    run_passes(module, &rest, flags, name, text)
}

/// The nv IR of `module` lowered to MLIR, with its manifest for `target`;
/// each of `shapes` (those the kernel is compiled for) must be one its TMA
/// descriptors can address (src/tma_rows.rs); the manifest names the
/// configuration config selection decided.
pub fn lower(module: &Module, text: &str, name: &str, target: &Target, shapes: &[Shape]) -> Result<LoweredKernel, String> {
    let mut kernel = tilec_lower::lower_module(module, target).map_err(|d| d.render(name, text))?;
    for &shape in shapes {
        for warning in crate::tma_rows::check(module, &kernel.manifest, shape).map_err(|d| d.render(name, text))? {
            eprintln!("{}", warning.render(name, text));
        }
    }
    if let Some(func) = module.functions.first() {
        kernel.manifest.config = tilec_passes::config::decided_config(func).map_err(|d| d.render(name, text))?.map(|c| c.to_string());
    }
    // The epilogue as the source says it, not as the passes left it.
    let source = tilec_dialects::parse_module(text, name).map_err(|d| d.render(name, text))?;
    kernel.manifest.epilogue = source.functions.first().and_then(tilec_lower::epilogue::describe);
    Ok(kernel)
}

/// The back end's options for a kernel from the source `name`, compiled for `target`.
pub fn backend_options(name: &str, target: &Target) -> BackendOptions {
    BackendOptions { source_name: format!("{name} (generated MLIR)"), chip: target.sm.into(), ..BackendOptions::default() }
}

/// A back-end failure: the generated MLIR was rejected, which is tilec's fault, not the input's.
pub fn backend_error(name: &str, e: &backend::BackendError) -> String {
    match e {
        // A pipeline given on the command line that does not parse is the user's error.
        backend::BackendError::PipelineSyntax { .. } => format!("{name}: error: {e}"),
        _ => format!("{name}: error: the back end rejected the generated MLIR (a tilec bug):\n{e}"),
    }
}
