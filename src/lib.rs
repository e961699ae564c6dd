//! gpulint: static checks for GPU container images.
//!
//! Data flows one way: `source` (where an image comes from) → `walk` (one pass over each
//! layer) → `detect` (what each file is) → `inventory` (the squashed result) → `rules`
//! (checked against `target` using `matrix` facts) → `report`. `spec` parses Dockerfiles and
//! run configurations into facts the rules also read.

pub mod arch;
pub mod baseline;
pub mod cache;
pub mod cli;
pub mod commands;
pub mod config;
pub mod detect;
pub mod exit;
pub mod finding;
pub mod fix;
pub mod format;
pub mod gpu_target;
pub mod host;
pub mod inventory;
mod io_util;
pub mod loader;
pub mod matrix;
mod parallel;
pub mod progress;
pub mod report;
pub mod rule_meta;
pub mod rules;
pub mod runconfig;
pub mod scan;
pub mod selection;
pub mod source;
pub mod suppress;
pub mod version;
pub mod vocab;
pub mod walk;

/// Parse arguments, run the command, and return the process exit code.
pub fn run(args: Vec<std::ffi::OsString>) -> i32 {
    use clap::Parser;
    let cli = match cli::Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() {
                exit::USAGE_OR_INPUT
            } else {
                exit::OK
            };
            let _ = e.print();
            return code;
        }
    };
    match commands::dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!(
                "gpulint: error: {}",
                report::escape::block(&format!("{e:#}"))
            );
            exit::USAGE_OR_INPUT
        }
    }
}
