//! A kernel family: one directory holding the distinct kernels config
//! selection chose for a list of problem shapes (each an ordinary artifact in
//! a subdirectory) and `family.json`, whose dispatch table maps a call's
//! (M, N, K) to one of them, so that one GEMM serves every M, as cuBLAS's
//! heuristics do. See `docs/artifact.md`.

use crate::{is_identifier, ArtifactError};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// File name of the dispatch table inside a family directory.
pub const FAMILY_FILE: &str = "family.json";
/// The family format this crate reads and writes.
pub const FAMILY_FORMAT_VERSION: u32 = 1;

/// The contents of `family.json`: the family's kernels and the table that
/// picks one of them for a call's (M, N, K). Unknown JSON fields are
/// rejected; [`FamilyManifest::load`] and [`FamilyManifest::write`] validate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FamilyManifest {
    /// Format of this file; must equal [`FAMILY_FORMAT_VERSION`].
    pub format_version: u32,
    /// The distinct kernels: at least one, names unique.
    pub kernels: Vec<FamilyKernel>,
    /// Rows of the dispatch table; for one (N, K) their M ranges do not
    /// overlap.
    pub dispatch: Vec<DispatchEntry>,
}

/// One distinct kernel: the artifact in the subdirectory `name`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FamilyKernel {
    /// Subdirectory of the family directory holding this kernel's artifact
    /// (`kernel.ptx` + `manifest.json`); an identifier, unique in the family.
    pub name: String,
    /// The configuration it was compiled with, for people (`--explain`'s
    /// spelling).
    pub config: String,
}

/// Calls with this N and K and `m_min <= M <= m_max` use `kernel`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DispatchEntry {
    /// The call's N (columns of C), at least 1.
    pub n: u64,
    /// The call's K (reduction length), at least 1.
    pub k: u64,
    /// Smallest M this row serves, at least 1.
    pub m_min: u64,
    /// Largest M this row serves, inclusive, at least `m_min`; `u64::MAX` on the
    /// row serving every M above the largest shape the family was built for.
    pub m_max: u64,
    /// Name of the [`FamilyKernel`] that serves these calls.
    pub kernel: String,
}

impl FamilyManifest {
    /// Checks the table: known kernels with identifier names, non-empty and
    /// non-overlapping M ranges per (N, K). The error names the row.
    pub fn validate(&self) -> Result<(), String> {
        if self.format_version != FAMILY_FORMAT_VERSION {
            return Err(format!("format_version {} (this reader knows {FAMILY_FORMAT_VERSION})", self.format_version));
        }
        if self.kernels.is_empty() {
            return Err("kernels: a family needs at least one kernel".into());
        }
        for (i, k) in self.kernels.iter().enumerate() {
            if !is_identifier(&k.name) {
                return Err(format!("kernels[{i}].name: '{}' is not an identifier", k.name));
            }
            if self.kernels[..i].iter().any(|o| o.name == k.name) {
                return Err(format!("kernels[{i}].name: '{}' is listed twice", k.name));
            }
        }
        for (i, row) in self.dispatch.iter().enumerate() {
            if !self.kernels.iter().any(|k| k.name == row.kernel) {
                return Err(format!("dispatch[{i}].kernel: no kernel '{}'", row.kernel));
            }
            if row.m_min < 1 || row.m_min > row.m_max || row.n < 1 || row.k < 1 {
                return Err(format!("dispatch[{i}]: empty range (m {}..={}, n {}, k {})", row.m_min, row.m_max, row.n, row.k));
            }
            let overlaps = |o: &DispatchEntry| o.n == row.n && o.k == row.k && o.m_min <= row.m_max && row.m_min <= o.m_max;
            if let Some(j) = self.dispatch[..i].iter().position(overlaps) {
                return Err(format!("dispatch[{i}]: M range {}..={} overlaps dispatch[{j}]", row.m_min, row.m_max));
            }
        }
        Ok(())
    }

    /// Reads and validates `DIR/family.json`.
    pub fn load(dir: impl AsRef<Path>) -> Result<FamilyManifest, ArtifactError> {
        let path = dir.as_ref().join(FAMILY_FILE);
        let text = std::fs::read_to_string(&path).map_err(|source| ArtifactError::Io { path: path.clone(), source })?;
        let family: FamilyManifest = serde_json::from_str(&text).map_err(|source| ArtifactError::Json { path: path.clone(), source })?;
        family.validate().map_err(|message| ArtifactError::Family { path, message })?;
        Ok(family)
    }

    /// Validates and writes `DIR/family.json` (the kernels' artifacts are
    /// written apart, into `DIR/<name>/`).
    pub fn write(&self, dir: impl AsRef<Path>) -> Result<(), ArtifactError> {
        let path = dir.as_ref().join(FAMILY_FILE);
        self.validate().map_err(|message| ArtifactError::Family { path: path.clone(), message })?;
        std::fs::create_dir_all(dir.as_ref()).map_err(|source| ArtifactError::Io { path: dir.as_ref().to_path_buf(), source })?;
        let text = serde_json::to_string_pretty(self).expect("a family manifest serialises");
        std::fs::write(&path, text + "\n").map_err(|source| ArtifactError::Io { path, source })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn family() -> FamilyManifest {
        FamilyManifest {
            format_version: FAMILY_FORMAT_VERSION,
            kernels: vec![
                FamilyKernel { name: "k0".into(), config: "64x32x64".into() },
                FamilyKernel { name: "k1".into(), config: "128x256x64".into() },
            ],
            dispatch: vec![
                DispatchEntry { n: 4096, k: 7168, m_min: 1, m_max: 128, kernel: "k0".into() },
                DispatchEntry { n: 4096, k: 7168, m_min: 129, m_max: u64::MAX, kernel: "k1".into() },
            ],
        }
    }

    #[test]
    fn a_well_formed_family_validates_and_round_trips() {
        let f = family();
        f.validate().unwrap();
        let dir = std::env::temp_dir().join(format!("tilec-family-{}", std::process::id()));
        f.write(&dir).unwrap();
        assert_eq!(FamilyManifest::load(&dir).unwrap(), f);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_tables_name_the_row() {
        let mut f = family();
        f.dispatch[1].m_min = 100;
        assert_eq!(f.validate().unwrap_err(), "dispatch[1]: M range 100..=18446744073709551615 overlaps dispatch[0]");
        let mut f = family();
        f.dispatch[0].kernel = "k9".into();
        assert_eq!(f.validate().unwrap_err(), "dispatch[0].kernel: no kernel 'k9'");
        let mut f = family();
        f.dispatch[0].m_min = 0;
        assert!(f.validate().unwrap_err().starts_with("dispatch[0]: empty range"));
        let mut f = family();
        f.kernels[1].name = "k0".into();
        assert_eq!(f.validate().unwrap_err(), "kernels[1].name: 'k0' is listed twice");
        let mut f = family();
        f.format_version = 7;
        assert!(f.validate().unwrap_err().starts_with("format_version 7"));
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let text = r#"{"format_version": 1, "kernels": [], "dispatch": [], "extra": 1}"#;
        assert!(serde_json::from_str::<FamilyManifest>(text).is_err());
    }
}
