//! `tilec compile FILE --shapes LIST -o DIR`: a kernel family. Config
//! selection runs once per shape; shapes that get the same kernel share it;
//! the distinct kernels compile in parallel, each into `DIR/<name>/`, and
//! `DIR/family.json` holds the dispatch table the runtime reads
//! (`tilec_runtime::select_kernel`).

use crate::api::{finish, parse_and_verify, run_passes, run_passes_after_config, Compiled, Error};
use crate::config_select::{ConfigRequest, Shape};
use std::collections::BTreeMap;
use tilec_artifact::{DispatchEntry, FamilyKernel, FamilyManifest, FAMILY_FORMAT_VERSION};
use tilec_dialects::ir::Attribute;
use tilec_dialects::Module;
use tilec_passes::config_rules::Schedule;
use tilec_cli::PassFlags;

/// The `tile.config` entries that make one kernel differ from another (the
/// shape and the wave figures do not change the code).
const KERNEL_KEYS: [&str; 14] = ["block_m", "block_n", "block_k", "stages", "schedule", "consumers", "epilogue", "epilogue_cols", "epilogue_deferred", "scales", "cluster", "splits", "raster_group", "stream_k"];

/// What tells kernels apart: the config's code-changing entries, as text.
fn kernel_key(module: &Module) -> String {
    let Some(f) = module.functions.first() else {
        return String::new();
    };
    let Some(Attribute::Dict(d)) = f.attrs.get("tile.config") else {
        return String::new();
    };
    let value = |key: &str| match d.get(key) {
        Some(Attribute::Int(v, _)) => v.to_string(),
        Some(Attribute::String(s)) => s.clone(),
        Some(Attribute::Bool(b)) => b.to_string(),
        _ => "-".into(),
    };
    let [bm, bn, bk, stages, schedule, consumers, epilogue, chunk, deferred, scales, cluster, splits, group, stream_k] = KERNEL_KEYS.map(value);
    let schedule = match Schedule::from_word(&schedule, consumers.parse().unwrap_or(0)) {
        Some(Schedule::WarpSpecialized { consumers }) => format!("ws{consumers}"),
        _ => schedule,
    };
    // Entries only some configs have, as ` name=value` where present.
    let tag = |name: &str, value: &str| if value == "-" { String::new() } else { format!(" {name}={value}") };
    let cluster = if cluster == "none" { String::new() } else { tag("cluster", &cluster) };
    let (chunk, scales, splits, order) = (tag("epilogue_cols", &chunk), tag("scales", &scales), tag("splits", &splits), tag("grouped", &group));
    let stream_k = tag("stream_k", &stream_k);
    let deferred = if deferred == "true" { " epilogue_deferred" } else { "" };
    format!("{bm}x{bn}x{bk} stages={stages} {schedule} epilogue={epilogue}{chunk}{deferred}{scales}{cluster}{splits}{order}{stream_k}")
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

/// Compiles the family of `text` (named `input`) for `shapes` into `dir`.
pub fn compile_family(text: &str, input: &str, shapes: &[Shape], request: &ConfigRequest, dir: &str) -> Result<(), String> {
    Ok(build(text, input, shapes, request)?.write(dir)?)
}

/// The family of `text` (named `input`) for `shapes`, compiled.
pub(crate) fn build(text: &str, input: &str, shapes: &[Shape], request: &ConfigRequest) -> Result<Family, Error> {
    // Config selection per shape (cheap), then one module per distinct kernel.
    let mut kernels: Vec<(String, Module)> = Vec::new();
    let mut picks: Vec<(Shape, String)> = Vec::new();
    for &shape in shapes {
        let mut module = parse_and_verify(text, input)?;
        run_passes(&mut module, &request.select_pass(Some(shape)), &PassFlags::default(), input, text)?;
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
        let jobs: Vec<_> = kernels.iter_mut().map(|(_, module)| scope.spawn(move || compile_kernel(module, input, text))).collect();
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

/// The passes after config selection, lowering and PTX.
fn compile_kernel(module: &mut Module, input: &str, text: &str) -> Result<Compiled, Error> {
    run_passes_after_config(module, &PassFlags::default(), input, text)?;
    finish(module, text, input)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `tile.config` entries that follow from [`KERNEL_KEYS`] (the schedule
    /// makes a kernel persistent and orders its tiles; block N and the
    /// scales give the wgmma's N).
    const FOLLOWING: [&str; 3] = ["persistent", "tile_order", "mma_n"];
    /// The problem and the figures config selection ranked by: the same
    /// kernel serves other shapes.
    const FIGURES: [&str; 7] = ["m", "n", "k", "sms", "waves", "last_wave", "smem_bytes"];

    /// Every entry config selection writes either tells kernels apart or is
    /// accounted for, so a new entry cannot make two picks share a kernel
    /// unnoticed (as the cluster once did).
    #[test]
    fn every_config_entry_tells_kernels_apart_or_follows() {
        let examples = ["examples/gemm_bf16.tile", "examples/gemm_fp8_blockscaled.tile"];
        // Picks with a chunked epilogue and clusters, split K, grouped order
        // (a plain pipeline, for its direct stores of rows TMA cannot store),
        // stream-K, staged scales and column halves.
        let shapes: [Shape; 5] = [(4096, 24576, 1536), (64, 2112, 7168), (8192, 8196, 8192), (8192, 8192, 8192), (4096, 7168, 16384)];
        let request = ConfigRequest::default();
        for path in examples {
            let text = std::fs::read_to_string(path).expect("example");
            for shape in shapes {
                let mut module = parse_and_verify(&text, path).expect("parses");
                run_passes(&mut module, &request.select_pass(Some(shape)), &PassFlags::default(), path, &text).expect("selects");
                let Some(Attribute::Dict(d)) = module.functions[0].attrs.get("tile.config") else { panic!("no tile.config") };
                for (key, _) in d.iter() {
                    let known = KERNEL_KEYS.contains(&key) || FOLLOWING.contains(&key) || FIGURES.contains(&key);
                    assert!(known, "{path} at {shape:?}: tile.config's '{key}' is in no list");
                }
                // The stream-K pick is another kernel than the same tile without it.
                let shares_by_k = d.get("stream_k").is_some();
                assert_eq!(kernel_key(&module).ends_with(" stream_k=in-order"), shares_by_k, "{path} at {shape:?}: {}", kernel_key(&module));
            }
        }
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
