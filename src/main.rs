//! The `gpulint` binary: everything lives in the library (`gpulint::run` parses the command
//! line, runs the command and returns the exit code).

fn main() {
    std::process::exit(gpulint::run(std::env::args_os().collect()));
}
