//! Records the commit the runtime is built from, for `tilec-bench`'s report:
//! `TILEC_BUILD_COMMIT` is the value of that variable in the build's
//! environment (a build outside a git checkout sets it by hand), else
//! `git rev-parse HEAD`, else empty.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    println!("cargo:rerun-if-env-changed=TILEC_BUILD_COMMIT");
    let commit = std::env::var("TILEC_BUILD_COMMIT").ok().or_else(|| {
        let head = git(&["rev-parse", "HEAD"])?;
        // Rebuild when HEAD moves: a checkout rewrites HEAD, a commit the index.
        for path in ["HEAD", "index"] {
            if let Some(p) = git(&["rev-parse", "--git-path", path]) {
                println!("cargo:rerun-if-changed={p}");
            }
        }
        Some(head)
    });
    println!("cargo:rustc-env=TILEC_BUILD_COMMIT={}", commit.unwrap_or_default());
}
