//! What every spec command shares: its targets, config and facts, where paths are shown from,
//! and the inputs that could not be read (each a GL000 error, exit 2).

use super::scan_images;
use crate::config::Config;
use crate::gpu_target::Target;
use anyhow::Context as _;
use std::path::{Path, PathBuf};

/// What every spec command needs besides its own arguments.
pub struct CommandContext {
    /// Targets from `--gpu/--driver/--host/--fleet` or the config; empty = target-independent.
    pub targets: Vec<Target>,
    pub config: Config,
    /// Compatibility facts over the command's matrix.
    pub facts: crate::matrix::Facts,
    /// Relative input paths are relative to this directory.
    pub cwd: PathBuf,
    /// Paths in findings are shown relative to this directory (the repository root).
    pub root: PathBuf,
    /// `--scan-images`: run the image checks on images run configurations name.
    pub scan_images: Option<scan_images::ImageScan>,
    /// Inputs that could not be read; the others are still linted and the command exits 2.
    pub input_errors: std::cell::RefCell<Vec<InputError>>,
    /// `-q`: no notes on stderr, only findings (and errors).
    pub quiet: bool,
    /// Inputs checked so far (files read and linted, a command line), for the summary.
    pub checked: std::cell::Cell<usize>,
    /// `--fleet-from-nodes`: the pools with their nodes, so that Kubernetes workloads are
    /// judged against the pools they can be scheduled onto.
    pub fleet: Option<std::sync::Arc<crate::gpu_target::nodes::Fleet>>,
    /// With `--fix` / `--diff`: the text of each linted file by the name findings give it,
    /// so that edits are made only to linted files, at offsets of the text they were made on.
    pub linted: std::cell::RefCell<Option<std::collections::BTreeMap<String, String>>>,
}

/// An input that could not be used: the file it is about (as reports show it), and why.
/// Each becomes a GL000 error in the report, in every format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    pub file: Option<String>,
    pub message: String,
}

impl CommandContext {
    /// The text of an input file, or None with the error recorded (the run goes on with the
    /// other inputs and exits 2 at the end).
    pub(crate) fn read_or_record(&self, p: &Path) -> Option<String> {
        match read(p) {
            Ok(t) => Some(t),
            Err(e) => {
                let file = if p == Path::new("-") {
                    "<stdin>".to_string()
                } else {
                    self.display(p)
                };
                self.input_error(file, format!("{e:#}"));
                None
            }
        }
    }

    /// Record an input that could not be used (the command goes on, then exits 2).
    pub(crate) fn input_error(&self, file: String, message: String) {
        self.input_errors.borrow_mut().push(InputError {
            file: Some(file),
            message,
        });
    }

    /// With `--fix` / `--diff`, keep the linted texts the fixes may edit.
    pub(crate) fn remember_linted(&self, texts: &[crate::suppress::FileText]) {
        if let Some(linted) = self.linted.borrow_mut().as_mut() {
            // Standard input cannot be rewritten.
            for t in texts.iter().filter(|t| t.display != "<stdin>") {
                let own = t.original.as_ref().unwrap_or(&t.text);
                linted.insert(t.display.clone(), own.clone());
            }
        }
    }

    /// A context over `matrix` (the command's, with `--matrices` overrides), the given
    /// targets and config.
    pub fn new(
        targets: Vec<Target>,
        config: Config,
        matrix: crate::matrix::Matrix,
    ) -> anyhow::Result<CommandContext> {
        Ok(CommandContext {
            targets,
            config,
            facts: crate::matrix::Facts::new(matrix),
            cwd: std::env::current_dir().unwrap_or_default(),
            root: crate::report::paths::root().to_path_buf(),
            scan_images: None,
            input_errors: Default::default(),
            quiet: false,
            checked: Default::default(),
            fleet: None,
            linted: Default::default(),
        })
    }
    /// The compatibility matrix behind the facts.
    pub fn matrix(&self) -> &crate::matrix::Matrix {
        self.facts.matrix()
    }
    /// A path as reports show it: relative to the repository root, the same in every format
    /// ([`crate::report::paths`]).
    pub(crate) fn display(&self, p: &Path) -> String {
        crate::report::paths::relative_to(p, &self.root, &self.cwd)
    }
}

/// An input's text: a file (regular, bounded) or `-` for stdin (bounded as a file is).
pub(crate) fn read(p: &Path) -> anyhow::Result<String> {
    if p == Path::new("-") {
        // Bounded like a file: one byte past the bound says the input is larger.
        let max = crate::io_util::MAX_CONFIG_FILE;
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(
            &mut std::io::Read::take(std::io::stdin().lock(), max + 1),
            &mut bytes,
        )
        .context("reading stdin")?;
        if bytes.len() as u64 > max {
            anyhow::bail!("stdin is more than the {max} bytes accepted");
        }
        return Ok(String::from_utf8_lossy(&bytes).into_owned());
    }
    let bytes = crate::io_util::read_regular(p, crate::io_util::MAX_CONFIG_FILE)
        .with_context(|| format!("cannot read {}", p.display()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}
