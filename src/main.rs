//! The `forager` binary: parse the command line, run the command, map errors to exit codes.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
