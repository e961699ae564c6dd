//! Which configuration each checked file uses, as ruff does: the nearest `.gpulint.toml` in
//! the file's directory or a parent (settings are not merged between levels), else the
//! working directory's (upward), else the user config, else the defaults; `--config FILE`
//! is the one configuration for every input. The command line's `--select`,
//! `--extend-select` and `--ignore` apply over each.
//!
//! Inputs are grouped by the configuration they use ([`LintInputs::split`]); each group is
//! checked with its own settings and targets.

use crate::cli::{ComposeArgs, DockerfileArgs, K8sArgs, LintArgs, RunArgs};
use crate::config::Config;
use crate::selection::RuleSelection;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The configurations a run uses, loaded once each.
pub struct ConfigSet {
    cli: RuleSelection,
    cwd: PathBuf,
    /// `--config FILE`: the configuration of every input.
    explicit: Option<usize>,
    /// The working directory's (upward), the user's or the defaults, loaded when first needed
    /// (a broken one that no input uses does not fail the run).
    fallback: Option<usize>,
    configs: Vec<Config>,
    /// Config file → index, so each is loaded once.
    by_file: BTreeMap<PathBuf, usize>,
    /// Directory → the index its files use.
    by_dir: BTreeMap<PathBuf, usize>,
}

impl ConfigSet {
    pub fn new(
        explicit: Option<&Path>,
        cli: RuleSelection,
        cwd: &Path,
    ) -> anyhow::Result<ConfigSet> {
        let mut set = ConfigSet {
            cli,
            cwd: cwd.to_path_buf(),
            explicit: None,
            fallback: None,
            configs: Vec::new(),
            by_file: BTreeMap::new(),
            by_dir: BTreeMap::new(),
        };
        if let Some(p) = explicit {
            let c = Config::load(p)?;
            set.explicit = Some(set.push(c));
        }
        Ok(set)
    }

    fn push(&mut self, mut c: Config) -> usize {
        c.selection.overlay(&self.cli);
        self.configs.push(c);
        self.configs.len() - 1
    }

    pub fn get(&self, i: usize) -> &Config {
        &self.configs[i]
    }

    /// The configuration of inputs that have none of their own (stdin, a command line).
    pub fn fallback(&mut self) -> anyhow::Result<usize> {
        if let Some(i) = self.explicit.or(self.fallback) {
            return Ok(i);
        }
        let c = Config::discover(&self.cwd)?;
        let i = match c.path.as_deref().and_then(|p| self.by_file.get(p)) {
            Some(&i) => i,
            None => {
                let key = c.path.clone();
                let i = self.push(c);
                if let Some(k) = key {
                    self.by_file.insert(k, i);
                }
                i
            }
        };
        self.fallback = Some(i);
        Ok(i)
    }

    /// The configuration `input` (a file, a directory, or `-`) is checked with.
    pub fn for_input(&mut self, input: &Path) -> anyhow::Result<usize> {
        if let Some(i) = self.explicit {
            return Ok(i);
        }
        if input.as_os_str() == "-" {
            return self.fallback();
        }
        let dir = if input.is_dir() {
            input
        } else {
            input.parent().unwrap_or(Path::new(""))
        };
        let dir = crate::config::normalize(dir, &self.cwd);
        if let Some(&i) = self.by_dir.get(&dir) {
            return Ok(i);
        }
        let i = match Config::find_project(&dir) {
            None => self.fallback()?,
            Some(file) => match self.by_file.get(&file) {
                Some(&i) => i,
                None => {
                    let c = Config::load(&file)?;
                    let i = self.push(c);
                    self.by_file.insert(file, i);
                    i
                }
            },
        };
        self.by_dir.insert(dir, i);
        Ok(i)
    }

    /// How a configuration is named in messages: its path relative to the working directory
    /// where it lies below it, `defaults` for none.
    pub fn name(&self, i: usize) -> String {
        match &self.configs[i].path {
            None => "defaults".into(),
            Some(p) => {
                let p = p.strip_prefix(&self.cwd).unwrap_or(p);
                p.to_string_lossy().replace('\\', "/")
            }
        }
    }
}

/// Inputs in groups by configuration, in the order each configuration is first used.
fn group(paths: &[PathBuf], configs: &mut ConfigSet) -> anyhow::Result<Vec<(usize, Vec<PathBuf>)>> {
    let mut groups: Vec<(usize, Vec<PathBuf>)> = Vec::new();
    for p in paths {
        let i = configs.for_input(p)?;
        match groups.iter_mut().find(|(g, _)| *g == i) {
            Some((_, v)) => v.push(p.clone()),
            None => groups.push((i, vec![p.clone()])),
        }
    }
    Ok(groups)
}

/// A command's arguments split by the configuration each input uses.
pub trait LintInputs: Sized {
    /// (configuration index, these arguments for only the inputs that use it).
    fn split(&self, configs: &mut ConfigSet) -> anyhow::Result<Vec<(usize, Self)>>;
    /// The paths as given (the baseline judges its entries under them only).
    fn inputs(&self) -> Vec<PathBuf>;
}

impl LintInputs for DockerfileArgs {
    fn inputs(&self) -> Vec<PathBuf> {
        self.paths.clone()
    }

    fn split(&self, configs: &mut ConfigSet) -> anyhow::Result<Vec<(usize, Self)>> {
        if self.paths.is_empty() {
            // ./Dockerfile.
            return Ok(vec![(
                configs.for_input(Path::new("Dockerfile"))?,
                self.clone(),
            )]);
        }
        Ok(group(&self.paths, configs)?
            .into_iter()
            .map(|(i, paths)| {
                (
                    i,
                    DockerfileArgs {
                        paths,
                        ..self.clone()
                    },
                )
            })
            .collect())
    }
}

impl LintInputs for ComposeArgs {
    fn inputs(&self) -> Vec<PathBuf> {
        self.files.iter().chain(&self.paths).cloned().collect()
    }

    /// Compose files merge into one project: the first file's configuration for all.
    fn split(&self, configs: &mut ConfigSet) -> anyhow::Result<Vec<(usize, Self)>> {
        let i = match self.files.iter().chain(&self.paths).next() {
            Some(first) => configs.for_input(first)?,
            None => configs.fallback()?,
        };
        Ok(vec![(i, self.clone())])
    }
}

impl LintInputs for K8sArgs {
    fn inputs(&self) -> Vec<PathBuf> {
        self.files.clone()
    }

    fn split(&self, configs: &mut ConfigSet) -> anyhow::Result<Vec<(usize, Self)>> {
        Ok(group(&self.files, configs)?
            .into_iter()
            .map(|(i, files)| (i, K8sArgs { files }))
            .collect())
    }
}

impl LintInputs for RunArgs {
    fn inputs(&self) -> Vec<PathBuf> {
        self.files.clone()
    }

    /// Scripts by their configuration; a command line given after `--` uses the working
    /// directory's.
    fn split(&self, configs: &mut ConfigSet) -> anyhow::Result<Vec<(usize, Self)>> {
        let mut out: Vec<(usize, Self)> = group(&self.files, configs)?
            .into_iter()
            .map(|(i, files)| {
                (
                    i,
                    RunArgs {
                        files,
                        argv: Vec::new(),
                    },
                )
            })
            .collect();
        if !self.argv.is_empty() || out.is_empty() {
            let i = configs.fallback()?;
            match out.iter_mut().find(|(g, _)| *g == i) {
                Some((_, a)) => a.argv = self.argv.clone(),
                None => out.push((
                    i,
                    RunArgs {
                        files: Vec::new(),
                        argv: self.argv.clone(),
                    },
                )),
            }
        }
        Ok(out)
    }
}

impl LintInputs for LintArgs {
    fn inputs(&self) -> Vec<PathBuf> {
        self.paths.clone()
    }

    /// Directories are walked here, so that each file found is checked with its nearest
    /// configuration and excluded by that configuration's `ignore-paths`; named files and
    /// missing paths go to their own (or the working directory's) configuration.
    fn split(&self, configs: &mut ConfigSet) -> anyhow::Result<Vec<(usize, Self)>> {
        let cwd = configs.cwd.clone();
        let roots = if self.paths.is_empty() && self.found.is_empty() {
            vec![cwd.clone()]
        } else {
            self.paths.clone()
        };
        let mut out: Vec<(usize, Self)> = Vec::new();
        let mut add = |i: usize, named: Option<PathBuf>, found: Option<(PathBuf, PathBuf)>| {
            let pos = match out.iter().position(|(g, _)| *g == i) {
                Some(pos) => pos,
                None => {
                    out.push((i, LintArgs::default()));
                    out.len() - 1
                }
            };
            out[pos].1.paths.extend(named);
            out[pos].1.found.extend(found);
        };
        // (configuration, a directory walked that gave it files).
        let mut walked: Vec<(usize, &PathBuf)> = Vec::new();
        for root in &roots {
            if root.is_dir() {
                for f in super::lint::discover(root, &Config::default(), &cwd) {
                    let i = configs.for_input(&f)?;
                    if !configs.get(i).path_ignored(&f, &cwd) {
                        add(i, None, Some((root.clone(), f)));
                        if !walked.contains(&(i, root)) {
                            walked.push((i, root));
                        }
                    }
                }
            } else if root.exists() {
                add(configs.for_input(root)?, Some(root.clone()), None);
            } else {
                // Missing: reported as an input error by the run of its group.
                add(configs.fallback()?, Some(root.clone()), None);
            }
        }
        for (tree, f) in &self.found {
            let i = configs.for_input(f)?;
            add(i, None, Some((tree.clone(), f.clone())));
        }
        for (i, root) in walked {
            if let Some((_, args)) = out.iter_mut().find(|(g, _)| *g == i) {
                args.walked.push(root.clone());
            }
        }
        // Empty when the trees named hold no file: nothing to run, and the summary says so.
        Ok(out)
    }
}
