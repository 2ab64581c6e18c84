//! tilec-artifact: the compiled-kernel artifact shared by the compiler (writer)
//! and the runtime (reader).
//!
//! An artifact is a directory holding `kernel.ptx` and `manifest.json`. The
//! manifest says how to launch the PTX entry: block and cluster dimensions,
//! the grid rule, dynamic shared memory, the GEMM's logical tensors, and the
//! kernel parameters in order. See `docs/artifact.md` for the format.

mod family;
mod manifest;
mod validate;

pub use family::*;
pub use manifest::*;
pub use validate::{is_identifier, literal_fits, Invalid, ValidationError};

use std::path::{Path, PathBuf};

pub const PTX_FILE: &str = "kernel.ptx";
pub const MANIFEST_FILE: &str = "manifest.json";

/// Errors reading or writing an artifact; each names the file concerned.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: malformed manifest JSON: {source}")]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{path}: invalid manifest: {source}")]
    Invalid {
        path: PathBuf,
        #[source]
        source: Invalid,
    },
    #[error("{path}: invalid kernel family: {message}")]
    Family { path: PathBuf, message: String },
    #[error("{path}: PTX has no `.entry {entry}` (the manifest's `entry`)")]
    EntryNotInPtx { path: PathBuf, entry: String },
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
    pub dir: PathBuf,
    pub manifest: Manifest,
    pub ptx: String,
}

/// True if `ptx` declares `.entry <entry>` (followed by `(` or whitespace).
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
