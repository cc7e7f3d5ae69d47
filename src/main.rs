//! The `forager` binary: parse the command line, run the command, map errors to exit codes.

fn main() -> std::process::ExitCode {
    forager::cli::main()
}
