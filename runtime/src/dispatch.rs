//! Kernel families: which kernel of a family serves one GEMM call. Pure (no
//! CUDA), so the choice is unit-tested without a GPU.

use std::path::{Path, PathBuf};
use tilec_artifact::{FamilyKernel, FamilyManifest};

/// The kernel of `family` whose dispatch row covers (m, n, k), or why none
/// does: the family was built for other N and K.
pub fn select_kernel(family: &FamilyManifest, m: u64, n: u64, k: u64) -> Result<&FamilyKernel, String> {
    let row = family.dispatch.iter().find(|r| r.n == n && r.k == k && (r.m_min..=r.m_max).contains(&m)).ok_or_else(|| {
        let built: Vec<String> = family.dispatch.iter().map(|r| format!("N={} K={}", r.n, r.k)).collect();
        format!("no kernel of the family serves {m}x{n}x{k} (it was built for {})", built.join(", "))
    })?;
    Ok(family.kernels.iter().find(|k| k.name == row.kernel).expect("a validated family names only its kernels"))
}

/// The artifact directory of `kernel` inside the family directory `dir`.
pub fn kernel_dir(dir: &Path, kernel: &FamilyKernel) -> PathBuf {
    dir.join(&kernel.name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilec_artifact::{DispatchEntry, FAMILY_FORMAT_VERSION};

    /// Two kernels for N = 4096, K = 7168: the small-M one up to M = 128.
    fn family() -> FamilyManifest {
        let row = |m_min, m_max, kernel: &str| DispatchEntry { n: 4096, k: 7168, m_min, m_max, kernel: kernel.into() };
        FamilyManifest {
            format_version: FAMILY_FORMAT_VERSION,
            kernels: vec![
                FamilyKernel { name: "k0".into(), config: "64x32x64".into() },
                FamilyKernel { name: "k1".into(), config: "128x256x64".into() },
            ],
            dispatch: vec![row(1, 128, "k0"), row(129, u64::MAX, "k1")],
        }
    }

    #[test]
    fn m_picks_the_row() {
        let f = family();
        assert_eq!(select_kernel(&f, 1, 4096, 7168).unwrap().name, "k0");
        assert_eq!(select_kernel(&f, 128, 4096, 7168).unwrap().name, "k0");
        assert_eq!(select_kernel(&f, 129, 4096, 7168).unwrap().name, "k1");
        assert_eq!(select_kernel(&f, 1 << 20, 4096, 7168).unwrap().name, "k1");
        assert_eq!(kernel_dir(Path::new("fam"), select_kernel(&f, 1, 4096, 7168).unwrap()), Path::new("fam/k0"));
    }

    #[test]
    fn other_n_or_k_is_an_error() {
        let err = select_kernel(&family(), 64, 2112, 7168).unwrap_err();
        assert!(err.starts_with("no kernel of the family serves 64x2112x7168 (it was built for N=4096 K=7168"), "{err}");
        assert!(select_kernel(&family(), 64, 4096, 512).is_err());
        assert!(select_kernel(&family(), 0, 4096, 7168).is_err());
    }
}
