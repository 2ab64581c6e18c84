fn main() -> std::process::ExitCode {
    tilec::opt::main()
}
