//! `tilec`: compiles tile programs to PTX artifacts (`compile`), times the
//! compile (`bench-compile`) and fits the cost model (`calibrate`).

mod bench_compile;
mod calibrate;
mod driver;
#[path = "../common/source.rs"]
mod source;

fn main() -> std::process::ExitCode {
    driver::main()
}
