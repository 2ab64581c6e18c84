//! `tilec compile FILE --shapes LIST -o DIR`: a kernel family. Config
//! selection runs once per shape; shapes that get the same kernel share it;
//! the distinct kernels compile in parallel, each into `DIR/<name>/`, and
//! `DIR/family.json` holds the dispatch table the runtime reads
//! (`tilec_runtime::select_kernel`).

use crate::api::{finish, parse_and_verify, run_passes, run_passes_after_config, Compiled, Error, Options};
use crate::config_select::{ConfigRequest, Shape};
use std::collections::BTreeMap;
use tilec_artifact::{DispatchEntry, FamilyKernel, FamilyManifest, FAMILY_FORMAT_VERSION};
use tilec_dialects::ir::{Attribute, Attributes};
use tilec_dialects::syntax::attribute_to_string;
use tilec_dialects::Module;
use tilec_cli::PassFlags;
use tilec_target::Target;

/// Compiles the kernels config selection picks for `shapes`, each distinct
/// kernel once, with the dispatch table that maps a problem to one of them.
/// `options.shape` and `options.pipeline` must be unset: each shape selects
/// its own config, and the passes after it follow from the config.
pub fn compile_family(source: &str, name: &str, shapes: &[Shape], options: &Options) -> Result<Family, Error> {
    if options.shape.is_some() || options.pipeline.is_some() {
        return Err(Error(format!("{name}: error: a kernel family takes its shapes and pipeline from config selection: set neither `shape` nor `pipeline`")));
    }
    options.check_params(name)?;
    build(source, name, shapes, &options.request())
}

/// The `tile.config` entries that do not change the code: the problem and the
/// figures config selection ranked by (the same kernel serves other shapes).
const FIGURES: [&str; 7] = ["m", "n", "k", "sms", "waves", "last_wave", "smem_bytes"];

/// What tells kernels apart: the function's `tile.config` without the
/// [`FIGURES`], as the IR spells it. Every other entry counts, so an entry
/// added to the config can never make two different kernels share one.
fn kernel_key(module: &Module) -> String {
    let Some(Attribute::Dict(config)) = module.functions.first().and_then(|f| f.attrs.get("tile.config")) else {
        return String::new();
    };
    let mut code = Attributes::new();
    for (key, value) in config.iter().filter(|(key, _)| !FIGURES.contains(key)) {
        code.set(key, value.clone());
    }
    attribute_to_string(&Attribute::Dict(code))
}

/// The dispatch rows for `picks` (shape, kernel name): per (N, K), the shapes
/// in M order split the M axis; each kernel serves M up to its shape's, the
/// largest everything above; neighbours with one kernel share a row.
pub fn dispatch_table(picks: &[(Shape, String)]) -> Vec<DispatchEntry> {
    let mut by_nk: BTreeMap<(i64, i64), Vec<(i64, &str)>> = BTreeMap::new();
    for ((m, n, k), kernel) in picks {
        by_nk.entry((*n, *k)).or_default().push((*m, kernel.as_str()));
    }
    let mut rows: Vec<DispatchEntry> = Vec::new();
    for ((n, k), mut ms) in by_nk {
        ms.sort();
        ms.dedup_by_key(|(m, _)| *m);
        let mut m_min = 1u64;
        for (i, (m, kernel)) in ms.iter().enumerate() {
            let m_max = if i + 1 == ms.len() { u64::MAX } else { *m as u64 };
            match rows.last_mut() {
                Some(last) if last.n == n as u64 && last.k == k as u64 && last.kernel == *kernel => last.m_max = m_max,
                _ => rows.push(DispatchEntry { n: n as u64, k: k as u64, m_min, m_max, kernel: kernel.to_string() }),
            }
            m_min = m_max.saturating_add(1);
        }
    }
    rows
}

/// A compiled kernel family: the distinct kernels, named as in the manifest
/// (`k0`, `k1`, ...), and the manifest with the dispatch table.
#[derive(Clone, Debug)]
pub struct Family {
    /// Each kernel's name and stages, in the manifest's order.
    pub kernels: Vec<(String, Compiled)>,
    /// `family.json`: the kernels' configs and the dispatch table.
    pub manifest: FamilyManifest,
}

impl Family {
    /// Writes each kernel into `dir/<name>/` and the manifest into `dir/family.json`.
    pub fn write(&self, dir: &str) -> Result<(), Error> {
        for (name, kernel) in &self.kernels {
            kernel.write(&format!("{dir}/{name}"))?;
        }
        self.manifest.write(dir).map_err(|e| Error(format!("tilec: {e}")))
    }
}

/// Compiles the family of `text` (named `input`) for `shapes` into `dir`
/// (`tilec compile --shapes`).
pub fn compile_family_into(text: &str, input: &str, shapes: &[Shape], request: &ConfigRequest, dir: &str) -> Result<(), String> {
    Ok(build(text, input, shapes, request)?.write(dir)?)
}

/// The family of `text` (named `input`) for `shapes`, compiled.
pub(crate) fn build(text: &str, input: &str, shapes: &[Shape], request: &ConfigRequest) -> Result<Family, Error> {
    // Config selection per shape (cheap), then one module per distinct kernel.
    let mut kernels: Vec<(String, Module)> = Vec::new();
    let mut picks: Vec<(Shape, String)> = Vec::new();
    for &shape in shapes {
        let mut module = parse_and_verify(text, input)?;
        let select = request.tuned(&module, Some(shape))?.select_pass(Some(shape));
        run_passes(&mut module, &select, &PassFlags::default(), input, text)?;
        let key = kernel_key(&module);
        let index = match kernels.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                kernels.push((key, module));
                kernels.len() - 1
            }
        };
        picks.push((shape, format!("k{index}")));
    }
    let compiled = std::thread::scope(|scope| {
        let jobs: Vec<_> = kernels
            .iter_mut()
            .enumerate()
            .map(|(i, (_, module))| {
                let served: Vec<Shape> = picks.iter().filter(|(_, k)| *k == format!("k{i}")).map(|(shape, _)| *shape).collect();
                scope.spawn(move || compile_kernel(module, input, text, request.target, &served))
            })
            .collect();
        jobs.into_iter().map(|j| j.join().expect("a kernel's compile thread panicked")).collect::<Result<Vec<Compiled>, Error>>()
    })?;
    let manifest = FamilyManifest {
        format_version: FAMILY_FORMAT_VERSION,
        kernels: kernels.iter().enumerate().map(|(i, (key, _))| FamilyKernel { name: format!("k{i}"), config: key.clone() }).collect(),
        dispatch: dispatch_table(&picks),
    };
    let kernels = compiled.into_iter().enumerate().map(|(i, c)| (format!("k{i}"), c)).collect();
    Ok(Family { kernels, manifest })
}

/// The passes after config selection, lowering and PTX for `target`, to
/// serve the shapes that picked the kernel.
fn compile_kernel(module: &mut Module, input: &str, text: &str, target: &Target, shapes: &[Shape]) -> Result<Compiled, Error> {
    run_passes_after_config(module, &PassFlags::default(), input, text)?;
    finish(module, text, input, target, shapes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilec_dialects::ir::ElemType;

    /// The figures config selection ranked by do not tell kernels apart;
    /// every other entry does, a stream-K pick's among them.
    #[test]
    fn the_key_is_the_config_without_the_figures() {
        let text = std::fs::read_to_string("examples/gemm_bf16.tile").expect("example");
        // The policies' picks: a deferred epilogue at 4096^3, stream-K at 8192^3.
        let request = ConfigRequest { ranking: Some("rules".into()), ..ConfigRequest::default() };
        let picked = |shape: Shape| {
            let mut module = parse_and_verify(&text, "gemm_bf16.tile").expect("parses");
            run_passes(&mut module, &request.select_pass(Some(shape)), &PassFlags::default(), "gemm_bf16.tile", &text).expect("selects");
            module
        };
        let with_entry = |module: &Module, key: &str, value: Attribute| {
            let mut module = module.clone();
            let Some(Attribute::Dict(mut config)) = module.functions[0].attrs.get("tile.config").cloned() else { panic!("no tile.config") };
            config.set(key, value);
            module.functions[0].attrs.set("tile.config", Attribute::Dict(config));
            module
        };
        let pick = picked((4096, 4096, 4096));
        let key = kernel_key(&pick);
        for figure in FIGURES {
            assert_eq!(kernel_key(&with_entry(&pick, figure, Attribute::Int(7, ElemType::I64))), key, "'{figure}' changed the key");
        }
        assert_ne!(kernel_key(&with_entry(&pick, "stages", Attribute::Int(7, ElemType::I64))), key, "stages did not change the key");
        assert_ne!(kernel_key(&with_entry(&pick, "epilogue_deferred", Attribute::Bool(false))), key, "an entry's value did not change the key");
        let (plain, stream_k) = (kernel_key(&picked((8192, 8196, 8192))), kernel_key(&picked((8192, 8192, 8192))));
        assert!(stream_k.contains("stream_k = \"in-order\""), "{stream_k}");
        assert!(!plain.contains("stream_k"), "{plain}");
    }

    #[test]
    fn the_m_axis_is_split_at_the_shapes() {
        let picks = vec![
            ((4096, 7168, 2048), "k1".to_string()),
            ((64, 7168, 2048), "k0".to_string()),
            ((128, 7168, 2048), "k0".to_string()),
            ((128, 4096, 7168), "k2".to_string()),
        ];
        let rows = dispatch_table(&picks);
        let row = |n, k, m_min, m_max, kernel: &str| DispatchEntry { n, k, m_min, m_max, kernel: kernel.into() };
        assert_eq!(
            rows,
            vec![
                row(4096, 7168, 1, u64::MAX, "k2"),
                // 64 and 128 share k0: one row up to 128; 4096's kernel above it.
                row(7168, 2048, 1, 128, "k0"),
                row(7168, 2048, 129, u64::MAX, "k1"),
            ]
        );
    }
}
