//! `tilec compile --verify-ptx`: assembles the PTX with a real `ptxas` for
//! the target's chip and turns what would make the kernel unusable or slow into
//! errors: ptxas rejecting it, register spills, and wgmma serialised by
//! ptxas (warnings C7509-C7520: "wgmma ... serialized", "warpgroup.arrive /
//! wait injected"), which cost the pipelining the passes built.

use std::path::PathBuf;
use std::process::Command;

/// What ptxas said of a kernel it accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PtxasReport {
    /// `Used N registers`.
    pub registers: Option<u32>,
    /// The whole `-v` output, for `--emit` users and the error text.
    pub log: String,
}

/// The ptxas to use: `$TILEC_PTXAS`, else `ptxas` on PATH.
pub fn find_ptxas() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TILEC_PTXAS").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    std::env::var_os("PATH")?.to_str()?.split(':').map(|d| PathBuf::from(d).join("ptxas")).find(|p| p.is_file())
}

/// Assembles `ptx` for `chip` (`sm_90a`) and checks ptxas's report; the
/// error says what ptxas found, with its own words.
pub fn verify_ptx(ptx: &str, chip: &str) -> Result<PtxasReport, String> {
    let ptxas = find_ptxas().ok_or("--verify-ptx needs ptxas: set TILEC_PTXAS or put ptxas on PATH")?;
    let dir = std::env::temp_dir().join(format!("tilec-verify-ptx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let (input, output) = (dir.join("kernel.ptx"), dir.join("kernel.cubin"));
    std::fs::write(&input, ptx).map_err(|e| format!("cannot write {}: {e}", input.display()))?;
    let run = Command::new(&ptxas).args(["--gpu-name", chip, "-v"]).arg(&input).arg("-o").arg(&output).output();
    let _ = std::fs::remove_dir_all(&dir);
    let run = run.map_err(|e| format!("cannot run {}: {e}", ptxas.display()))?;
    let log = format!("{}{}", String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    if !run.status.success() {
        return Err(format!("ptxas rejected the PTX:\n{log}"));
    }
    check_report(&log)
}

/// The checks on ptxas's `-v` output of an accepted kernel.
pub fn check_report(log: &str) -> Result<PtxasReport, String> {
    let mut problems = Vec::new();
    for line in log.lines() {
        if let Some(spill) = spill_bytes(line).filter(|&(stores, loads)| stores + loads > 0) {
            problems.push(format!("the kernel spills registers ({} bytes stored, {} loaded): {}", spill.0, spill.1, line.trim()));
        }
        if serialises_wgmma(line) {
            problems.push(format!("ptxas serialises wgmma: {}", line.trim()));
        }
    }
    if !problems.is_empty() {
        return Err(problems.join("\n"));
    }
    let registers = log.lines().find_map(|l| l.split("Used ").nth(1)?.split(' ').next()?.parse().ok());
    Ok(PtxasReport { registers, log: log.to_string() })
}

/// `N bytes spill stores, M bytes spill loads` in a ptxas info line.
fn spill_bytes(line: &str) -> Option<(u64, u64)> {
    let number_before = |marker: &str| -> Option<u64> {
        let (before, _) = line.split_once(marker)?;
        before.rsplit(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
    };
    Some((number_before(" bytes spill stores")?, number_before(" bytes spill loads")?))
}

/// ptxas's advisories that it made wgmma synchronous (C7509 to C7520).
fn serialises_wgmma(line: &str) -> bool {
    (7509..=7520).any(|code| line.contains(&format!("C{code}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLEAN: &str = "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n\
        ptxas info    : Function properties for k\n    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
        ptxas info    : Used 154 registers, used 1 barriers, 384 bytes cmem[0]\n";

    #[test]
    fn a_clean_report_gives_the_registers() {
        // "gemm_bf16" on the properties line is a name, not a spill count.
        let named = CLEAN.replace("for k\n", "for gemm_bf16\n");
        assert_eq!(check_report(&named).unwrap().registers, Some(154));
    }

    #[test]
    fn spills_and_serialised_wgmma_are_errors() {
        let spill = CLEAN.replace("0 bytes spill stores, 0 bytes spill loads", "11520 bytes spill stores, 11520 bytes spill loads");
        let err = check_report(&spill).unwrap_err();
        assert!(err.contains("spills registers (11520 bytes stored, 11520 loaded)"), "{err}");
        let serial = format!("{CLEAN}ptxas /tmp/k.ptx, line 88; warning : (C7514) Potential Performance Loss: wgmma.mma_async instructions are serialized\n");
        let err = check_report(&serial).unwrap_err();
        assert!(err.contains("ptxas serialises wgmma") && err.contains("C7514"), "{err}");
    }
}
