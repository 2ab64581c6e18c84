#![warn(missing_docs)]
//! tilec-artifact: the compiled-kernel artifact shared by the compiler (writer)
//! and the runtime (reader).
//!
//! An artifact is a directory holding `kernel.ptx` and `manifest.json`. The
//! manifest says how to launch the PTX entry: block and cluster dimensions,
//! the grid rule, dynamic shared memory, the GEMM's logical tensors, and the
//! kernel parameters in order. See `docs/artifact.md` for the format.

mod epilogue;
mod family;
mod manifest;
mod tuning;
mod validate;

pub use epilogue::*;
pub use family::*;
pub use manifest::*;
pub use tuning::*;
pub use validate::{is_identifier, literal_fits, Invalid, ValidationError};

use std::path::{Path, PathBuf};

/// File name of the kernel's PTX inside an artifact directory.
pub const PTX_FILE: &str = "kernel.ptx";
/// File name of the launch manifest (JSON, see [`Manifest`]) inside an
/// artifact directory.
pub const MANIFEST_FILE: &str = "manifest.json";

/// Errors reading or writing an artifact; each names the file concerned.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    /// Reading, writing or creating `path` failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory the I/O error is about.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The manifest at `path` is not JSON of the manifest's shape (syntax
    /// error, missing or unknown field, wrong type).
    #[error("{path}: malformed manifest JSON: {source}")]
    Json {
        /// The manifest file.
        path: PathBuf,
        /// The parser's error, with line and column.
        #[source]
        source: serde_json::Error,
    },
    /// The manifest at `path` parsed but failed [`Manifest::validate`].
    #[error("{path}: invalid manifest: {source}")]
    Invalid {
        /// The manifest file (or the one about to be written).
        path: PathBuf,
        /// What is wrong and at which field.
        #[source]
        source: Invalid,
    },
    /// `family.json` at `path` failed [`FamilyManifest::validate`]; `message`
    /// names the offending field or dispatch row.
    #[error("{path}: invalid kernel family: {message}")]
    Family {
        /// The family file.
        path: PathBuf,
        /// What is wrong, naming the field or dispatch row.
        message: String,
    },
    /// The PTX at `path` declares no `.entry` named `entry`, the symbol the
    /// manifest says to launch.
    #[error("{path}: PTX has no `.entry {entry}` (the manifest's `entry`)")]
    EntryNotInPtx {
        /// The PTX file.
        path: PathBuf,
        /// The manifest's `entry`.
        entry: String,
    },
}

impl ArtifactError {
    /// The validation failure, if that is what this is.
    pub fn invalid(&self) -> Option<&Invalid> {
        match self {
            ArtifactError::Invalid { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// A loaded, validated artifact.
#[derive(Debug, Clone)]
pub struct Artifact {
    /// The artifact directory it was loaded from.
    pub dir: PathBuf,
    /// The parsed manifest, already validated.
    pub manifest: Manifest,
    /// The text of `kernel.ptx`; it declares `manifest.entry`.
    pub ptx: String,
}

/// True if `ptx` declares `.entry <entry>` (followed by `(` or whitespace).
///
/// ```
/// use tilec_artifact::ptx_has_entry;
/// let ptx = ".visible .entry gemm(\n.param .u64 a\n)\n{\nret;\n}";
/// assert!(ptx_has_entry(ptx, "gemm"));
/// assert!(!ptx_has_entry(ptx, "gem"));
/// ```
pub fn ptx_has_entry(ptx: &str, entry: &str) -> bool {
    let pat = ".entry";
    let mut rest = ptx;
    while let Some(i) = rest.find(pat) {
        let after = rest[i + pat.len()..].trim_start();
        if let Some(tail) = after.strip_prefix(entry) {
            if tail.starts_with('(') || tail.starts_with(char::is_whitespace) {
                return true;
            }
        }
        rest = &rest[i + pat.len()..];
    }
    false
}

/// Parses and validates manifest text; `path` is only used in errors.
pub fn parse_manifest(text: &str, path: &Path) -> Result<Manifest, ArtifactError> {
    let m: Manifest =
        serde_json::from_str(text).map_err(|source| ArtifactError::Json { path: path.to_path_buf(), source })?;
    m.validate().map_err(|source| ArtifactError::Invalid { path: path.to_path_buf(), source })?;
    Ok(m)
}

impl Artifact {
    /// Reads `dir/manifest.json` and `dir/kernel.ptx`, validates the manifest
    /// and checks that the PTX declares the manifest's entry.
    pub fn load(dir: impl AsRef<Path>) -> Result<Self, ArtifactError> {
        let dir = dir.as_ref().to_path_buf();
        let mpath = dir.join(MANIFEST_FILE);
        let text = std::fs::read_to_string(&mpath).map_err(|source| ArtifactError::Io { path: mpath.clone(), source })?;
        let manifest = parse_manifest(&text, &mpath)?;
        let ppath = dir.join(PTX_FILE);
        let ptx = std::fs::read_to_string(&ppath).map_err(|source| ArtifactError::Io { path: ppath.clone(), source })?;
        if !ptx_has_entry(&ptx, &manifest.entry) {
            return Err(ArtifactError::EntryNotInPtx { path: ppath, entry: manifest.entry.clone() });
        }
        Ok(Artifact { dir, manifest, ptx })
    }

    /// Validates, then writes `dir/kernel.ptx` and `dir/manifest.json`
    /// (creating `dir` if needed).
    pub fn write(dir: impl AsRef<Path>, manifest: &Manifest, ptx: &str) -> Result<(), ArtifactError> {
        let dir = dir.as_ref();
        let mpath = dir.join(MANIFEST_FILE);
        manifest.validate().map_err(|source| ArtifactError::Invalid { path: mpath.clone(), source })?;
        let ppath = dir.join(PTX_FILE);
        if !ptx_has_entry(ptx, &manifest.entry) {
            return Err(ArtifactError::EntryNotInPtx { path: ppath, entry: manifest.entry.clone() });
        }
        std::fs::create_dir_all(dir).map_err(|source| ArtifactError::Io { path: dir.to_path_buf(), source })?;
        std::fs::write(&ppath, ptx).map_err(|source| ArtifactError::Io { path: ppath.clone(), source })?;
        let mut text = manifest.to_json_string();
        text.push('\n');
        std::fs::write(&mpath, text).map_err(|source| ArtifactError::Io { path: mpath.clone(), source })?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
