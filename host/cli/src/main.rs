//! The `tiny-harness` binary; see `tiny_harness_cli::main`.

fn main() -> std::process::ExitCode {
    tiny_harness_cli::main()
}
