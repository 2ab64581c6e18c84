//! Links tilec's binaries as position-dependent executables. They carry LLVM and MLIR
//! statically, some 300,000 relocations that a position-independent executable makes the
//! dynamic loader apply at every start, before `main`; a compile is a process per kernel.
fn main() {
    println!("cargo:rustc-link-arg-bins=-no-pie");
}
