//! The tuning file: for each problem a GPU ran, the configuration that
//! measured fastest among config selection's top candidates, written by
//! `tilec-bench --tuning` on the GPU machine and read by `tilec compile
//! --tuning`, which takes it where the file has the shape and the cost
//! model's pick elsewhere. JSON, schema [`TUNING_SCHEMA`], keyed by target,
//! dtype and shape (docs/artifact.md).

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use tilec_target::Target;

/// The schema a tuning file names.
pub const TUNING_SCHEMA: &str = "tilec-tuning/1";

/// One tuning file: the GPU it was measured on and its problems.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tuning {
    /// [`TUNING_SCHEMA`].
    pub schema: String,
    /// The target (`h100`, `h200`) every entry was measured on.
    pub target: String,
    /// The measured problems, each (dtype, shape) once.
    pub entries: Vec<TunedShape>,
}

/// The fastest configuration measured for one problem.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TunedShape {
    /// The operand type as the benchmark names it (`bf16`, `fp8`).
    pub dtype: String,
    /// Rows of A and C.
    pub m: u64,
    /// Columns of C.
    pub n: u64,
    /// The reduction length.
    pub k: u64,
    /// The configuration as `tilec compile --explain` prints it (without
    /// its `sms=` column), e.g. `128x128x64 stages=6 warps=4 pipeline
    /// epilogue=tma splits=8 split_reduce=workspace`.
    pub config: String,
    /// Its median time, ms.
    pub median_ms: f64,
    /// The fastest vendor baseline's median in the same run, ms, if one ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor_ms: Option<f64>,
    /// How many configurations were timed against each other.
    pub candidates: usize,
}

/// What is wrong with a tuning file.
#[derive(Debug, thiserror::Error)]
pub enum TuningError {
    /// Reading or writing `path` failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Not JSON of a tuning file's shape.
    #[error("{path}: malformed tuning file: {source}")]
    Json {
        /// The file.
        path: PathBuf,
        /// The parser's error, with line and column.
        #[source]
        source: serde_json::Error,
    },
    /// Well-formed JSON that breaks a rule of the format.
    #[error("{path}: invalid tuning file: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Which rule, at which entry.
        message: String,
    },
    /// An entry for another target than the file's.
    #[error("{path}: the file was measured on `{file}`, not `{wanted}`")]
    OtherTarget {
        /// The file.
        path: PathBuf,
        /// The file's target.
        file: String,
        /// The target asked for.
        wanted: String,
    },
}

impl Tuning {
    /// An empty file for `target`.
    pub fn new(target: &Target) -> Tuning {
        Tuning { schema: TUNING_SCHEMA.into(), target: target.name.into(), entries: Vec::new() }
    }

    /// Every rule of the format: the schema, a known target, positive
    /// sizes and times, a configuration, each (dtype, shape) once.
    pub fn validate(&self) -> Result<(), String> {
        if self.schema != TUNING_SCHEMA {
            return Err(format!("schema `{}`, expected `{TUNING_SCHEMA}`", self.schema));
        }
        Target::from_name(&self.target).map_err(|e| format!("target: {e}"))?;
        for (i, e) in self.entries.iter().enumerate() {
            let at = format!("entries[{i}] ({} {}x{}x{})", e.dtype, e.m, e.n, e.k);
            if e.m == 0 || e.n == 0 || e.k == 0 {
                return Err(format!("{at}: every dimension must be positive"));
            }
            if e.config.trim().is_empty() {
                return Err(format!("{at}: no config"));
            }
            if !(e.median_ms.is_finite() && e.median_ms > 0.0) || e.vendor_ms.is_some_and(|v| !(v.is_finite() && v > 0.0)) {
                return Err(format!("{at}: times must be positive"));
            }
            if e.candidates == 0 {
                return Err(format!("{at}: at least one candidate was timed"));
            }
            if self.entries[..i].iter().any(|o| (o.dtype.as_str(), o.m, o.n, o.k) == (e.dtype.as_str(), e.m, e.n, e.k)) {
                return Err(format!("{at}: a second entry for the problem"));
            }
        }
        Ok(())
    }

    /// Reads and validates the file at `path`.
    pub fn load(path: impl AsRef<Path>) -> Result<Tuning, TuningError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| TuningError::Io { path: path.into(), source })?;
        let tuning: Tuning = serde_json::from_str(&text).map_err(|source| TuningError::Json { path: path.into(), source })?;
        tuning.validate().map_err(|message| TuningError::Invalid { path: path.into(), message })?;
        Ok(tuning)
    }

    /// The file at `path` for `target`, or an empty one where there is none.
    pub fn load_or_new(path: impl AsRef<Path>, target: &Target) -> Result<Tuning, TuningError> {
        let path = path.as_ref();
        if !path.exists() {
            return Ok(Tuning::new(target));
        }
        let tuning = Tuning::load(path)?;
        if tuning.target != target.name {
            return Err(TuningError::OtherTarget { path: path.into(), file: tuning.target, wanted: target.name.into() });
        }
        Ok(tuning)
    }

    /// Validates and writes the file, entries sorted by dtype and shape.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), TuningError> {
        let path = path.as_ref();
        self.validate().map_err(|message| TuningError::Invalid { path: path.into(), message })?;
        let mut sorted = self.clone();
        sorted.entries.sort_by(|a, b| (a.dtype.as_str(), a.m, a.n, a.k).cmp(&(b.dtype.as_str(), b.m, b.n, b.k)));
        let text = serde_json::to_string_pretty(&sorted).expect("a tuning file serialises");
        std::fs::write(path, text + "\n").map_err(|source| TuningError::Io { path: path.into(), source })
    }

    /// The entry for `dtype` at `m x n x k`, if measured.
    pub fn lookup(&self, dtype: &str, m: u64, n: u64, k: u64) -> Option<&TunedShape> {
        self.entries.iter().find(|e| (e.dtype.as_str(), e.m, e.n, e.k) == (dtype, m, n, k))
    }

    /// Adds `entry`, replacing the one for the same problem: the latest
    /// measurement wins.
    pub fn upsert(&mut self, entry: TunedShape) {
        self.entries.retain(|e| (e.dtype.as_str(), e.m, e.n, e.k) != (entry.dtype.as_str(), entry.m, entry.n, entry.k));
        self.entries.push(entry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(m: u64, config: &str) -> TunedShape {
        TunedShape { dtype: "bf16".into(), m, n: 512, k: 65536, config: config.into(), median_ms: 0.06, vendor_ms: Some(0.05), candidates: 8 }
    }

    #[test]
    fn upsert_replaces_and_lookup_finds() {
        let mut t = Tuning::new(&Target::H200);
        t.upsert(entry(512, "a"));
        t.upsert(entry(256, "b"));
        t.upsert(entry(512, "c"));
        assert_eq!(t.entries.len(), 2);
        assert_eq!(t.lookup("bf16", 512, 512, 65536).map(|e| e.config.as_str()), Some("c"));
        assert!(t.lookup("fp8", 512, 512, 65536).is_none());
        assert_eq!(t.validate(), Ok(()));
    }

    #[test]
    fn validation_names_the_entry() {
        let mut t = Tuning::new(&Target::H200);
        t.entries = vec![entry(512, "a"), entry(512, "b")];
        assert!(t.validate().unwrap_err().contains("entries[1] (bf16 512x512x65536): a second entry"));
        t.entries = vec![TunedShape { median_ms: f64::NAN, ..entry(1, "a") }];
        assert!(t.validate().unwrap_err().contains("times must be positive"));
        t.entries = vec![TunedShape { m: 0, ..entry(1, "a") }];
        assert!(t.validate().unwrap_err().contains("positive"));
        t.entries.clear();
        t.target = "a100".into();
        assert!(t.validate().unwrap_err().starts_with("target:"));
        t.target = "h200".into();
        t.schema = "tilec-tuning/0".into();
        assert!(t.validate().unwrap_err().contains("schema"));
    }

    #[test]
    fn a_file_round_trips_and_knows_its_target() {
        let dir = std::env::temp_dir().join(format!("tilec-tuning-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tuning.json");
        let mut t = Tuning::load_or_new(&path, &Target::H200).unwrap();
        t.upsert(entry(512, "128x128x64 stages=6 warps=4 pipeline epilogue=tma"));
        t.save(&path).unwrap();
        assert_eq!(Tuning::load(&path).unwrap(), t);
        assert!(matches!(Tuning::load_or_new(&path, &Target::H100), Err(TuningError::OtherTarget { .. })));
        std::fs::write(&path, "{\"schema\": 1}").unwrap();
        assert!(matches!(Tuning::load(&path), Err(TuningError::Json { .. })));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
