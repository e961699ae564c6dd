//! `gpulint host`: detect the local GPU host (driver, CUDA version, GPUs) as a
//! [`HostProfile`] — the JSON `gpulint image --host` reads — and diagnose it with the GL2xx
//! checks (`--check`).
//!
//! In: a [`HostReader`] (the live machine, or a captured tree with `--root DIR`). Out: a
//! [`HostProfile`] and a list of [`CheckResult`]s, turned into [`Finding`]s for the shared
//! reporters. Nothing here changes the host: files are read and a fixed list of read-only
//! commands ([`HostCommand`]) is run, each optional.
//!
//! Facts the host cannot tell (GPU model → compute capability when nvidia-smi lacks
//! `compute_cap`, driver → CUDA version when nvidia-smi is missing) come from a
//! [`Knowledge`] the integrator implements over the matrices; torch's architectures come from
//! an [`ArchScanner`] wired to the fatbin reader.

pub mod env;
pub mod knowledge;
pub mod parse;
pub mod profile;
pub mod python;
pub mod reader;

// The GL2xx checks live with the other rules (`crate::rules::host`); re-exported here so
// `host::run_checks_with` and friends keep their paths.
pub use crate::rules::host::{
    check_findings, render_checks_text, run_checks_with, CheckOptions, CheckResult, CheckStatus,
};
pub use knowledge::{Knowledge, NoKnowledge};
pub use profile::{detect_host_with, load_target_json, HostGpu, HostProfile, KernelModule};
pub use python::{ArchScanner, BinaryArchs, ElfArchScanner};
pub use reader::{CapturedReader, CommandOutput, HostCommand, HostReader, LiveReader};

use std::path::PathBuf;

/// `gpulint host [--check] [--root DIR] [--python PATH]... [--format text|json|sarif]`
#[derive(Debug, Clone, Default, clap::Args)]
pub struct HostArgs {
    /// Run the GL2xx diagnosis checks instead of only printing the host profile.
    #[arg(long)]
    pub check: bool,
    /// Read a captured host tree instead of the live machine (layout: testdata/host/README.md).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Python interpreter(s) whose torch to check (default: python3/python on PATH).
    #[arg(long, value_name = "PATH")]
    pub python: Vec<String>,
    /// Output format: without --check text or json (the host profile); with --check any
    /// report format.
    #[arg(long, value_enum, default_value_t = crate::report::Format::Text)]
    pub format: crate::report::Format,
}

impl HostArgs {
    /// The reader these arguments select.
    pub fn reader(&self) -> anyhow::Result<Box<dyn HostReader>> {
        Ok(match &self.root {
            Some(dir) => Box::new(CapturedReader::new(dir)?),
            None => Box::new(LiveReader::new()),
        })
    }
}

/// Detect the host profile with no matrix knowledge (compute capability then comes only
/// from nvidia-smi's `compute_cap`). Prefer [`detect_host_with`] with the matrix.
pub fn detect_host(reader: &dyn HostReader) -> anyhow::Result<HostProfile> {
    detect_host_with(reader, &NoKnowledge)
}

/// Run every check with default options (no matrix, no fatbin reader, pythons on PATH).
pub fn run_checks(reader: &dyn HostReader, profile: &HostProfile) -> Vec<CheckResult> {
    run_checks_with(reader, profile, &CheckOptions::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The live reader never fails on a machine without GPUs (or with them): everything
    /// missing is a note or "could not check". Run with `--nocapture` on a GPU host to see the
    /// live profile and checks.
    #[test]
    fn live_host_smoke() {
        let r = LiveReader::new();
        let m = crate::matrix::Matrix::embedded().unwrap();
        let p = detect_host_with(&r, &m).unwrap();
        let opts = CheckOptions {
            knowledge: &m,
            pythons: Vec::new(),
            scanner: Some(&ElfArchScanner),
        };
        let results = run_checks_with(&r, &p, &opts);
        assert_eq!(
            results
                .iter()
                .map(|x| x.id)
                .collect::<std::collections::BTreeSet<_>>()
                .len(),
            crate::rules::host_checks().count()
        );
        if std::env::var_os("GPULINT_SHOW_LIVE").is_some() {
            println!("{}", p.to_json());
            println!("{}", render_checks_text(&results));
        }
    }
}
