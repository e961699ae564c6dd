//! Reading a GPU host (driver, CUDA version, GPUs) into a [`HostProfile`] — the JSON
//! `gpulint image --host` reads — and the facts the GL2xx checks (`crate::rules::host`) judge.
//!
//! In: a [`HostReader`] (the live machine, or a captured tree with `--root DIR`). Out: a
//! [`HostProfile`] and the parsed files and command outputs the checks ask for. Nothing here changes the host: files are read and a fixed list of read-only
//! commands ([`HostCommand`]) is run, each optional.
//!
//! Facts the host cannot tell (GPU model → compute capability when nvidia-smi lacks
//! `compute_cap`, driver → CUDA version when nvidia-smi is missing) come from a
//! [`Facts`](crate::matrix::Facts) (the matrices); torch's architectures come from
//! an [`ArchScanner`] wired to the fatbin reader.

pub mod command;
pub mod env;
pub mod evidence;
pub mod parse;
pub mod pci;
pub mod profile;
pub mod python;
pub mod query;
pub mod reader;
pub mod shell_env;
pub mod toolkits;

pub use profile::{detect_host_with, load_target_json, HostGpu, HostProfile, KernelModule};
pub use python::{ArchScanner, BinaryArchs, ElfArchScanner};
pub use reader::{CapturedReader, CommandOutput, HostCommand, HostReader, LiveReader};

/// Detect the host profile with no matrix knowledge (compute capability then comes only
/// from nvidia-smi's `compute_cap`). Prefer [`detect_host_with`] with the matrix.
pub fn detect_host(reader: &dyn HostReader) -> anyhow::Result<HostProfile> {
    detect_host_with(reader, crate::matrix::Facts::unknown())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::host::{render_checks_text, run_checks_with, CheckOptions};

    /// The live reader never fails on a machine without GPUs (or with them): everything
    /// missing is a note or "could not check". Run with `--nocapture` on a GPU host to see the
    /// live profile and checks.
    #[test]
    fn live_host_smoke() {
        let r = LiveReader::new();
        let m = crate::matrix::Facts::embedded().unwrap();
        let p = detect_host_with(&r, &m).unwrap();
        let opts = CheckOptions {
            facts: &m,
            pythons: Vec::new(),
            scanner: Some(&ElfArchScanner),
        };
        let results = run_checks_with(&r, &p, &opts);
        assert_eq!(
            results
                .iter()
                .map(|x| x.finding.rule)
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
