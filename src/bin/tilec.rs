fn main() -> std::process::ExitCode {
    tilec::driver::main()
}
