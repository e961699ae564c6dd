//! `.gpulint.toml`: each checked file uses the nearest one in its directory or a parent (as
//! ruff does; settings are not merged), else the working directory's, else the user config;
//! parsed with spans, then validated into [`Config`]. Unknown keys and bad values are errors
//! that point at file:line:col. Paths a config writes are relative to its own directory:
//! `[[ignore]] paths` and `ignore-paths` match there, and files it names (`fleet`) must lie
//! inside its repository (see [`confinement_root`]).
//!
//! ```toml
//! fail-on = "warning"            # error | warning | info | none
//! fleet = "fleet.toml"           # or [[target]] tables
//! ignore-paths = ["third_party/**"]
//! select = ["GL0", "GL1"]        # codes or prefixes; default: every rule
//! extend-select = ["GL201"]
//! ignore = ["GL118"]             # codes or prefixes, beside [[ignore]] tables
//!
//! [[target]]
//! name = "prod-h100"
//! gpu = ["H100"]
//! driver = "535.104.05"
//!
//! [rules]
//! GL114 = "off"                  # off | on | error | warning | info
//! GL109 = "error"
//!
//! [[ignore]]
//! rule = "GL112"
//! paths = ["deploy/gpu-operator/**"]
//! reason = "the operator mounts the driver on purpose"
//! ```

use crate::finding::{FailOn, Severity};
use crate::selection::{resolve_rule, resolve_selector, RuleName, RuleSelection};
use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toml::Spanned;

pub const FILE_NAME: &str = ".gpulint.toml";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawConfig {
    fail_on: Option<Spanned<String>>,
    fleet: Option<Spanned<String>>,
    #[serde(default)]
    target: Vec<RawTarget>,
    #[serde(default)]
    rules: BTreeMap<String, Spanned<String>>,
    select: Option<Vec<Spanned<String>>>,
    #[serde(default)]
    extend_select: Vec<Spanned<String>>,
    /// Rule codes/prefixes (strings) and `[[ignore]]` tables, in one array.
    #[serde(default)]
    ignore: Vec<Spanned<toml::Value>>,
    #[serde(default)]
    ignore_paths: Vec<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTarget {
    name: Option<String>,
    #[serde(default)]
    gpu: Vec<String>,
    driver: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIgnore {
    rule: String,
    #[serde(default)]
    paths: Vec<String>,
    reason: Option<String>,
}

/// A target named in the config; GPU names are resolved by the target module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetSpec {
    pub name: Option<String>,
    pub gpus: Vec<String>,
    pub driver: Option<String>,
}

/// A `[[ignore]]` entry.
#[derive(Debug, Clone)]
pub struct Ignore {
    pub rule: String,
    pub paths: Vec<String>,
    globs: Option<GlobSet>,
    pub reason: String,
    /// Where it is written, for "unused ignore" findings.
    pub line: u32,
    pub col: u32,
}

impl Ignore {
    pub fn matches(&self, rule: &str, file: Option<&str>) -> bool {
        if !self.rule.eq_ignore_ascii_case(rule) && self.rule != "*" {
            return false;
        }
        match (&self.globs, file) {
            (None, _) => true,
            (Some(g), Some(f)) => g.is_match(f),
            (Some(_), None) => false,
        }
    }

    /// Whether the entry has `paths` and `file` (relative to the config's directory) lies
    /// under them.
    pub fn paths_match(&self, file: &str) -> bool {
        self.globs.as_ref().is_some_and(|g| g.is_match(file))
    }
}

/// Rule state from `[rules]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleSetting {
    Off,
    On,
    Severity(Severity),
}

/// The validated configuration.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// Where it was read from; None = defaults.
    pub path: Option<PathBuf>,
    /// The directory `[[ignore]] paths` and `ignore-paths` are written against: the config
    /// file's own (absolute). None (defaults, the user config): the working directory.
    pub base: Option<PathBuf>,
    pub fail_on: Option<FailOn>,
    /// The fleet file `fleet` names, relative paths joined to the config's directory; after
    /// [`Config::load`], resolved and checked to lie inside the repository.
    pub fleet: Option<PathBuf>,
    /// Where `fleet` is written (line, column), for errors about the file it names.
    fleet_at: (u32, u32),
    pub targets: Vec<TargetSpec>,
    pub rules: BTreeMap<String, RuleSetting>,
    /// `select` / `extend-select` / `ignore` codes and prefixes.
    pub selection: RuleSelection,
    pub ignores: Vec<Ignore>,
    ignore_paths: Option<GlobSet>,
}

/// A config error with its location.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}:{col}: {message}")]
pub struct ConfigError {
    pub file: String,
    pub line: u32,
    pub col: u32,
    pub message: String,
}

fn line_col(text: &str, off: usize) -> (u32, u32) {
    let off = off.min(text.len());
    let before = &text[..off];
    let line = before.matches('\n').count() as u32 + 1;
    let col = (off - before.rfind('\n').map(|i| i + 1).unwrap_or(0)) as u32 + 1;
    (line, col)
}

/// The rules (code, name) `known_rule` accepts among gpulint's, for selectors and
/// suggestions.
fn known_rules(known_rule: &dyn Fn(&str) -> bool) -> Vec<RuleName> {
    crate::rules::names()
        .into_iter()
        .filter(|(code, _)| known_rule(code))
        .collect()
}

/// Lexically normalised absolute form of `p` (`.` and `..` folded, links not resolved), so
/// paths given as `../repo/x` and `/abs/repo/x` compare equal.
pub fn normalize(p: &Path, cwd: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in cwd.join(p).components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The tree a config's file references must stay in: the git work tree holding `config_dir`
/// (the nearest directory with a `.git` entry), else `config_dir` itself. Both resolved.
pub fn confinement_root(config_dir: &Path) -> std::io::Result<PathBuf> {
    let dir = config_dir.canonicalize()?;
    let mut cur = Some(dir.as_path());
    while let Some(d) = cur {
        if std::fs::symlink_metadata(d.join(".git")).is_ok() {
            return Ok(d.to_path_buf());
        }
        cur = d.parent();
    }
    Ok(dir)
}

impl Config {
    pub fn rule_enabled(&self, code: &str) -> bool {
        !matches!(self.rules.get(code), Some(RuleSetting::Off)) && self.selection.enabled(code)
    }
    pub fn severity_override(&self, code: &str) -> Option<Severity> {
        match self.rules.get(code) {
            Some(RuleSetting::Severity(s)) => Some(*s),
            _ => None,
        }
    }
    /// `path` (as the command shows it: relative to `cwd`, or absolute) relative to the
    /// directory this config's patterns are written against; None when it lies outside it.
    pub fn relative(&self, path: &Path, cwd: &Path) -> Option<String> {
        let base = self.base.as_deref().unwrap_or(cwd);
        let rel = normalize(path, cwd)
            .strip_prefix(normalize(base, cwd))
            .ok()?
            .to_string_lossy()
            .replace('\\', "/");
        Some(rel)
    }

    /// Whether `ignore-paths` excludes `path` (relative to `cwd`, or absolute).
    pub fn path_ignored(&self, path: &Path, cwd: &Path) -> bool {
        match (&self.ignore_paths, self.relative(path, cwd)) {
            (Some(g), Some(rel)) => g.is_match(rel),
            _ => false,
        }
    }

    /// Parse and validate a config text. `known_rule` says whether a code exists.
    pub fn parse(
        file: &str,
        text: &str,
        known_rule: &dyn Fn(&str) -> bool,
    ) -> Result<Config, ConfigError> {
        let err = |span: std::ops::Range<usize>, message: String| {
            let (line, col) = line_col(text, span.start);
            ConfigError {
                file: file.to_string(),
                line,
                col,
                message,
            }
        };
        let raw: RawConfig = toml::from_str(text).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            err(span, e.message().to_string())
        })?;
        let mut c = Config {
            path: Some(PathBuf::from(file)),
            ..Default::default()
        };
        if let Some(f) = &raw.fleet {
            c.fleet_at = line_col(text, f.span().start);
        }
        if let Some(f) = raw.fail_on {
            c.fail_on = Some(f.get_ref().parse().map_err(|e: String| err(f.span(), e))?);
        }
        c.fleet = raw.fleet.map(|f| {
            let p = PathBuf::from(f.get_ref());
            match Path::new(file).parent() {
                Some(d) if p.is_relative() => d.join(p),
                _ => p,
            }
        });
        for t in raw.target {
            if let Some(d) = &t.driver {
                d.get_ref()
                    .parse::<crate::version::DriverVersion>()
                    .map_err(|e| err(d.span(), e))?;
            }
            c.targets.push(TargetSpec {
                name: t.name,
                gpus: t.gpu,
                driver: t.driver.map(|d| d.into_inner()),
            });
        }
        let codes = known_rules(known_rule);
        let check_list = |list: &[Spanned<String>]| -> Result<Vec<String>, ConfigError> {
            list.iter()
                .map(|e| resolve_selector(e.get_ref(), &codes).map_err(|m| err(e.span(), m)))
                .collect()
        };
        if let Some(sel) = &raw.select {
            c.selection.select = Some(check_list(sel)?);
        }
        c.selection.extend_select = check_list(&raw.extend_select)?;
        for (code, v) in raw.rules {
            let code_u = resolve_rule(&code, &codes).map_err(|m| err(v.span(), m))?;
            let s = match v.get_ref().to_ascii_lowercase().as_str() {
                "off" | "false" | "disable" | "disabled" => RuleSetting::Off,
                "on" | "true" | "enable" | "enabled" => RuleSetting::On,
                other => RuleSetting::Severity(other.parse().map_err(|_| {
                    err(
                        v.span(),
                        format!("invalid rule setting {other:?} (expected off, on, error, warning or info)"),
                    )
                })?),
            };
            if s != RuleSetting::Off {
                // Naming a rule on or at a severity selects it even when `select` leaves it out.
                c.selection.extend_select.push(code_u.clone());
            }
            c.rules.insert(code_u, s);
        }
        for ig in raw.ignore {
            let span = ig.span();
            let ig: RawIgnore = match ig.into_inner() {
                toml::Value::String(code) => {
                    let code = resolve_selector(&code, &codes).map_err(|m| err(span.clone(), m))?;
                    c.selection.ignore.push(code);
                    continue;
                }
                other => other
                    .try_into()
                    .map_err(|e: toml::de::Error| err(span.clone(), e.message().to_string()))?,
            };
            let rule = if ig.rule.trim() == "*" {
                "*".to_string()
            } else {
                resolve_rule(&ig.rule, &codes).map_err(|m| err(span.clone(), m))?
            };
            let reason = match ig.reason {
                Some(r) if !r.trim().is_empty() => r,
                _ => return Err(err(span, "an [[ignore]] entry needs a `reason`".into())),
            };
            let globs = if ig.paths.is_empty() {
                None
            } else {
                let mut b = GlobSetBuilder::new();
                for p in &ig.paths {
                    b.add(
                        Glob::new(p)
                            .map_err(|e| err(span.clone(), format!("invalid glob {p:?}: {e}")))?,
                    );
                }
                Some(b.build().map_err(|e| err(span.clone(), e.to_string()))?)
            };
            let (line, col) = line_col(text, span.start);
            c.ignores.push(Ignore {
                rule,
                paths: ig.paths,
                globs,
                reason,
                line,
                col,
            });
        }
        if !raw.ignore_paths.is_empty() {
            let mut b = GlobSetBuilder::new();
            for p in &raw.ignore_paths {
                b.add(
                    Glob::new(p.get_ref())
                        .map_err(|e| err(p.span(), format!("invalid glob: {e}")))?,
                );
            }
            c.ignore_paths = Some(b.build().map_err(|e| err(0..0, e.to_string()))?);
        }
        Ok(c)
    }

    /// Find the config for `start`: `.gpulint.toml` there or in a parent directory, else the
    /// user's (`$XDG_CONFIG_HOME/gpulint/config.toml`, `~/.config/gpulint/config.toml`).
    pub fn find(start: &Path) -> Option<PathBuf> {
        Self::find_project(start).or_else(Self::find_user)
    }

    /// The user config, when anything is at its name (what is there is checked on load).
    pub fn find_user() -> Option<PathBuf> {
        let user = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
        let p = user.join("gpulint").join("config.toml");
        exists(&p).then_some(p)
    }

    /// `.gpulint.toml` in `start` or a parent directory (no user config). Anything at that
    /// name counts, so that a directory, FIFO or dangling link there is refused on load
    /// instead of being passed over for a config further up (or the defaults).
    pub fn find_project(start: &Path) -> Option<PathBuf> {
        let start = std::path::absolute(start).unwrap_or_else(|_| start.to_path_buf());
        let mut cur = Some(start.as_path());
        while let Some(d) = cur {
            let p = d.join(FILE_NAME);
            if exists(&p) {
                return Some(p);
            }
            cur = d.parent();
        }
        None
    }

    /// Find and load; no file = defaults.
    pub fn discover(start: &Path) -> anyhow::Result<Config> {
        match Self::find_project(start) {
            Some(p) => Self::load(&p),
            None => match Self::find_user() {
                // The user config's patterns are written against the working directory.
                Some(p) => Self::load(&p).map(|c| Config { base: None, ..c }),
                None => Ok(Config::default()),
            },
        }
    }

    /// Read, parse and validate a config file; the file itself must be a regular file of
    /// bounded size, and a file it names must lie inside its repository.
    pub fn load(p: &Path) -> anyhow::Result<Config> {
        let text = crate::io_util::read_regular_string(p, crate::io_util::MAX_CONFIG_FILE)
            .map_err(|e| anyhow::anyhow!("cannot read configuration {}: {e}", p.display()))?;
        let known = |c: &str| crate::rules::find(c).is_some();
        let mut c = Self::parse(&p.to_string_lossy(), &text, &known)?;
        let dir = std::path::absolute(p)
            .ok()
            .and_then(|a| a.parent().map(Path::to_path_buf))
            .unwrap_or_default();
        if let Some(f) = c.fleet.take() {
            c.fleet = Some(c.confined(&dir, &f, "fleet file", c.fleet_at)?);
        }
        c.base = Some(dir);
        Ok(c)
    }

    /// `target` (already joined to the config's directory `dir`) resolved, when it lies
    /// inside the config's repository; else an error at the key written at (line, col). Every
    /// file a config names goes through here: a config from an untrusted repository must not
    /// make gpulint read `/proc/self/environ` or `../../token`.
    fn confined(
        &self,
        dir: &Path,
        target: &Path,
        what: &str,
        (line, col): (u32, u32),
    ) -> Result<PathBuf, ConfigError> {
        let at = |message: String| ConfigError {
            file: self
                .path
                .as_deref()
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default(),
            line,
            col,
            message,
        };
        let root = confinement_root(dir)
            .map_err(|e| at(format!("cannot resolve {}: {e}", dir.display())))?;
        let resolved = target
            .canonicalize()
            .map_err(|e| at(format!("cannot read {what} {}: {e}", target.display())))?;
        if !resolved.starts_with(&root) {
            return Err(at(format!(
                "{what} {} is outside the repository {} (a configuration may only name files inside it)",
                target.display(),
                root.display()
            )));
        }
        Ok(resolved)
    }
}

/// Whether anything (a file, a directory, a link, dangling or not) is at `p`.
fn exists(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(c: &str) -> bool {
        c.starts_with("GL1")
    }

    #[test]
    fn parses_and_validates() {
        let t = "fail-on = \"warning\"\nignore-paths = [\"vendor/**\"]\n[[target]]\ngpu = [\"H100\"]\ndriver = \"535.104.05\"\n[rules]\nGL114 = \"off\"\ngl109 = \"error\"\n[[ignore]]\nrule = \"GL112\"\npaths = [\"deploy/**\"]\nreason = \"operator\"\n";
        let c = Config::parse(".gpulint.toml", t, &known).unwrap();
        assert_eq!(c.fail_on, Some(FailOn::At(Severity::Warning)));
        assert!(!c.rule_enabled("GL114"));
        assert_eq!(c.severity_override("GL109"), Some(Severity::Error));
        let cwd = Path::new("/w");
        assert!(c.path_ignored(Path::new("vendor/x/Dockerfile"), cwd));
        assert!(c.ignores[0].matches("GL112", Some("deploy/a.yaml")));
        assert!(!c.ignores[0].matches("GL112", Some("k8s/a.yaml")));
        assert_eq!(c.ignores[0].line, 9);
        assert_eq!(c.targets[0].gpus, vec!["H100"]);
    }

    #[test]
    fn unknown_keys_and_bad_values_are_located() {
        let e = Config::parse("c.toml", "fail-on = \"error\"\nfial-on = 1\n", &known).unwrap_err();
        assert_eq!((e.line, e.col), (2, 1), "{e}");
        let e = Config::parse("c.toml", "[rules]\nGL101 = \"loud\"\n", &known).unwrap_err();
        assert_eq!(e.line, 2);
        let e = Config::parse("c.toml", "[rules]\nGL999 = \"off\"\n", &known).unwrap_err();
        assert!(e.message.contains("unknown rule"));
        let e = Config::parse("c.toml", "[[ignore]]\nrule = \"GL101\"\n", &known).unwrap_err();
        assert!(e.message.contains("reason"));
        let e = Config::parse("c.toml", "[[target]]\ndriver = \"5x\"\n", &known).unwrap_err();
        assert_eq!(e.line, 2);
    }

    #[test]
    fn select_ignore_lists_and_suggestions() {
        let t = "fail-on = \"none\"\nselect = [\"GL1\"]\nextend-select = [\"GL001\"]\nignore = [\"GL11\", { rule = \"GL112\", reason = \"operator\" }]\n[rules]\nGL114 = \"warning\"\n";
        let c = Config::parse(".gpulint.toml", t, &|c: &str| c.starts_with("GL")).unwrap();
        assert_eq!(c.fail_on, Some(FailOn::Never));
        assert!(c.rule_enabled("GL101") && c.rule_enabled("GL001"));
        assert!(!c.rule_enabled("GL002"), "not selected");
        assert!(!c.rule_enabled("GL110"), "ignored by prefix");
        assert!(c.rule_enabled("GL114"), "named in [rules], so selected");
        assert_eq!(c.ignores.len(), 1);
        assert_eq!(c.ignores[0].rule, "GL112");

        let real = |c: &str| crate::rules::find(c).is_some();
        let e = Config::parse("c.toml", "[rules]\nGL1O1 = \"off\"\n", &real).unwrap_err();
        assert!(e.message.contains("did you mean GL101?"), "{e}");
        let e = Config::parse("c.toml", "select = [\"GL1O\"]\n", &known).unwrap_err();
        assert!(e.message.contains("unknown rule \"GL1O\""), "{e}");
        assert_eq!((e.line, e.col), (1, 11));
        let e = Config::parse("c.toml", "ignore = [\"GL10l\"]\n", &known).unwrap_err();
        assert!(e.message.contains("did you mean"), "{e}");
    }

    /// Paths are matched relative to the config's directory however they are written.
    #[test]
    fn paths_relative_to_the_config_directory() {
        let c = Config::parse("c.toml", "ignore-paths = [\"gen/**\"]\n", &known).unwrap();
        let c = Config {
            base: Some(PathBuf::from("/w/repo")),
            ..c
        };
        let cwd = Path::new("/w");
        assert_eq!(
            c.relative(Path::new("repo/gen/Dockerfile"), cwd).as_deref(),
            Some("gen/Dockerfile")
        );
        assert!(c.path_ignored(Path::new("repo/gen/Dockerfile"), cwd));
        assert!(c.path_ignored(Path::new("../gen/x"), Path::new("/w/repo/sub")));
        assert!(c.path_ignored(Path::new("/w/repo/./gen/x"), Path::new("/elsewhere")));
        assert!(
            !c.path_ignored(Path::new("gen/Dockerfile"), cwd),
            "/w/gen is outside"
        );
        assert_eq!(c.relative(Path::new("other/x"), cwd), None);
    }

    #[test]
    fn found_upward() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join(FILE_NAME), "").unwrap();
        let sub = d.path().join("a/b");
        std::fs::create_dir_all(&sub).unwrap();
        assert_eq!(Config::find(&sub).unwrap(), d.path().join(FILE_NAME));
    }
}
