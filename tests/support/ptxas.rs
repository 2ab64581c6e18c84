//! The ptxas a test that assembles PTX uses: where `scripts/find-ptxas.sh`
//! finds it (`TILEC_PTXAS`, PATH, or the `.venv-tools/` that
//! `scripts/setup.sh` installs it in). Without one the test is skipped and
//! counted (`tilec_cli::report_skip`), unless `.venv-tools/` exists: then
//! setup has put ptxas in place and not finding it is a failure, not a skip.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The ptxas found, `Ok(None)` where none is installed (the caller skips),
/// or why one that should be there is not found.
pub fn find(root: &Path) -> Result<Option<PathBuf>, String> {
    let script = root.join("scripts/find-ptxas.sh");
    let out = Command::new("bash").arg(&script).output().map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    if out.status.success() && path.is_file() {
        return Ok(Some(path));
    }
    let venv = root.join(".venv-tools");
    if venv.exists() {
        return Err(format!(
            "scripts/setup.sh put ptxas in {} but scripts/find-ptxas.sh finds no ptxas ('{}'): run scripts/setup.sh again, or set TILEC_PTXAS",
            venv.display(),
            path.display()
        ));
    }
    Ok(None)
}
