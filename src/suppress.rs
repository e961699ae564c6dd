//! The pass after the rules: configuration (disabled rules, severity overrides), config
//! `[[ignore]]` entries, and inline pragmas in the checked files:
//!
//! - `# gpulint ignore=GL101[,GL102] [reason]` on its own line silences those rules on the next
//!   statement (a whole Dockerfile instruction, a shell command with its continuations, a YAML
//!   key with its block); at the end of a line, on that line.
//! - `# gpulint ignore-file=GL101[,…]` anywhere silences them in the whole file (`*` = all).
//!
//! Each suppression records whether it matched; one that matched nothing becomes a GL199
//! finding, so stale pragmas do not pile up (ruff's RUF100, cargo-deny's unmatched allow). A
//! config entry is judged only where it could have matched ([`ignore_could_apply`]).
//!
//! [`config_verdict`] is the one configuration policy: spec findings meet it in [`apply`]
//! (with pragmas), image and host findings and host check results in [`apply_config`].

use crate::config::{normalize, Config, Ignore};
use crate::finding::{Finding, Location, Severity};
use crate::rules::host::{CheckResult, CheckStatus};
use crate::rules::runconfig::gl199_unused_suppression::META as UNUSED;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
struct Pragma {
    /// The rules as codes (a name such as `driver-in-image` stands for its code); an entry
    /// that names no rule is kept as written, upper-cased.
    codes: Vec<String>,
    /// The list as written, for messages.
    written: String,
    file_level: bool,
    line: u32,
    col: u32,
    /// Lines covered (inclusive).
    from: u32,
    to: u32,
    used: bool,
}

/// Parse pragmas of one file. `ranges` are statement line ranges when known (Dockerfile
/// instructions); otherwise continuation lines and deeper-indented lines extend a statement.
fn pragmas(text: &str, ranges: Option<&[(u32, u32)]>) -> Vec<Pragma> {
    // Most files have no pragma: no line list for them (16 bytes a line).
    if !text.contains("gpulint") {
        return Vec::new();
    }
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    // The statement the last own-line pragma covers, `(first line, last line)` 0-based: the
    // pragmas before one statement share it, rather than each scanning to it again (a run
    // of pragma lines was quadratic).
    let mut last_span: Option<(usize, usize)> = None;
    for (i, l) in lines.iter().enumerate() {
        let Some(hash) = find_pragma(l) else { continue };
        let body = l[hash..]
            .trim_start_matches(['#', '/', '<', '!', '-', ' '])
            .trim_start();
        let Some(rest) = body.strip_prefix("gpulint") else {
            continue;
        };
        let rest = rest.trim_start();
        let (file_level, spec) = if let Some(s) = rest.strip_prefix("ignore-file=") {
            (true, s)
        } else if let Some(s) = rest.strip_prefix("ignore=") {
            (false, s)
        } else {
            continue;
        };
        let written = spec.split_whitespace().next().unwrap_or("");
        let codes: Vec<String> = written
            .split(',')
            .filter(|c| !c.is_empty())
            .map(|c| {
                crate::rules::find(c)
                    .or_else(|| {
                        crate::rules::all()
                            .into_iter()
                            .find(|m| m.name.eq_ignore_ascii_case(c))
                    })
                    .map(|m| m.code.to_string())
                    .unwrap_or_else(|| c.to_ascii_uppercase())
            })
            .collect();
        let line = i as u32 + 1;
        let own_line = l[..hash].trim().is_empty();
        let (from, to) = if file_level {
            (1, u32::MAX)
        } else if !own_line {
            (line, line)
        } else {
            // Next non-comment, non-blank line: the one found for an earlier pragma when
            // only blank and comment lines lie between (this one among them).
            let mut j = i + 1;
            match last_span {
                Some((first, _)) if first > i => j = first,
                _ => {
                    while j < lines.len()
                        && (lines[j].trim().is_empty() || lines[j].trim_start().starts_with('#'))
                    {
                        j += 1;
                    }
                }
            }
            let start = j as u32 + 1;
            let end = match ranges.and_then(|r| r.iter().find(|(s, e)| *s <= start && start <= *e))
            {
                _ if last_span.is_some_and(|(first, _)| first == j) => {
                    last_span.map_or(start, |(_, last)| last as u32 + 1)
                }
                Some((_, e)) => *e,
                None => {
                    let ind = |s: &str| s.len() - s.trim_start().len();
                    let base = lines.get(j).map(|s| ind(s)).unwrap_or(0);
                    let mut k = j;
                    while k + 1 < lines.len() {
                        let cur = lines[k].trim_end();
                        let next = lines[k + 1];
                        if cur.ends_with('\\')
                            || cur.ends_with('`')
                            || cur.ends_with('^')
                            || (!next.trim().is_empty() && ind(next) > base)
                            || next.trim_start().starts_with("- ")
                                && ind(next) == base
                                && lines[j].trim_end().ends_with(':')
                        {
                            k += 1;
                        } else {
                            break;
                        }
                    }
                    k as u32 + 1
                }
            };
            last_span = Some((j, end as usize - 1));
            (start, end)
        };
        out.push(Pragma {
            codes,
            written: written.to_string(),
            file_level,
            line,
            col: hash as u32 + 1,
            from,
            to,
            used: false,
        });
    }
    out
}

/// Byte index of a `#` (or `//`, `<!--`) that starts a gpulint pragma on this line.
fn find_pragma(l: &str) -> Option<usize> {
    let i = l.find("gpulint")?;
    let before = &l[..i];
    let h = before.rfind(['#', '/', '<'])?;
    let between = before[h..].trim_start_matches(['#', '/', '<', '!', '-']);
    between.trim().is_empty().then_some(h)
}

fn code_matches(p: &Pragma, rule: &str) -> bool {
    p.codes.iter().any(|c| c == rule || c == "*" || c == "ALL")
}

/// A checked file, as the pragma pass needs it.
#[derive(Debug, Clone)]
pub struct FileText {
    /// The path findings name (relative to the repository when linting one).
    pub display: String,
    pub text: String,
    /// Statement line ranges (first, last), for Dockerfiles: a pragma covers the whole next
    /// instruction. None for YAML and shell files, where the next line/block is used.
    pub statements: Option<Vec<(u32, u32)>>,
    /// The file's own text, when `text` is a view of it (Markdown with its prose blanked):
    /// what fixes edit and `--fix` rewrites.
    pub original: Option<String>,
}

/// Apply config and suppressions. `texts` = `(display path, text, statement ranges)` of the
/// files the findings may point into.
/// What the configuration does with one finding of `rule` at `file` (a repository path; None
/// for findings about an image or the host).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigVerdict {
    /// `[rules] GLxxx = "off"`.
    Disabled,
    /// Dropped by the `[[ignore]]` entry at this index.
    Ignored(usize),
    /// Kept, with this severity (the rule's own unless `[rules]` overrides it).
    Keep(Severity),
}

/// The configuration policy, in one place for every command: rule switches, severity
/// overrides, then `[[ignore]]` entries.
pub fn config_verdict(
    config: &Config,
    rule: &str,
    severity: Severity,
    file: Option<&str>,
) -> ConfigVerdict {
    // Every finding passes here once, at the severity its rule chose: it must be one that
    // `gpulint rules` shows for the rule.
    debug_assert!(
        crate::rules::parse_code(rule)
            .and_then(crate::rules::find_code)
            .is_none_or(|m| m.emits(severity)),
        "{rule} emitted a {severity} finding, which its RuleMeta does not declare"
    );
    if !config.rule_enabled(rule) {
        return ConfigVerdict::Disabled;
    }
    if let Some(i) = config.ignores.iter().position(|ig| ig.matches(rule, file)) {
        return ConfigVerdict::Ignored(i);
    }
    ConfigVerdict::Keep(config.severity_override(rule).unwrap_or(severity))
}

/// What the configuration post-pass judges: a finding, or a host check's result (which
/// reports one, [`CheckResult::finding`]).
pub trait Judged: Sized {
    fn finding_mut(&mut self) -> &mut Finding;
    /// Whether the configured severity replaces the finding's.
    fn takes_severity(&self) -> bool {
        true
    }
    /// Runs on what the configuration kept.
    fn after_config(_kept: &mut [Self]) {}
}

impl Judged for Finding {
    fn finding_mut(&mut self) -> &mut Finding {
        self
    }
}

impl Judged for CheckResult {
    fn finding_mut(&mut self) -> &mut Finding {
        &mut self.finding
    }
    /// A check that found no problem (ok, could not check, skipped) stays `info`.
    fn takes_severity(&self) -> bool {
        self.status == CheckStatus::Problem
    }
    /// A consequence whose cause is no longer reported stands on its own again.
    fn after_config(kept: &mut [Self]) {
        crate::rules::host::unfold_dropped_causes(kept);
    }
}

/// The post-pass for findings that point into no repository file (an image, the host) and
/// for host check results: configuration only, by the policy every command shares
/// ([`config_verdict`]): a disabled or ignored rule's are dropped, the rest take the
/// configured severity (pragmas do not exist there, and an `[[ignore]]` that matches nothing
/// here is not reported: it may be meant for the repository's files).
pub fn apply_config<T: Judged>(items: Vec<T>, config: &Config) -> Vec<T> {
    let mut kept: Vec<T> = items
        .into_iter()
        .filter_map(|mut item| {
            let takes_severity = item.takes_severity();
            let f = item.finding_mut();
            match config_verdict(config, &f.rule, f.severity, None) {
                ConfigVerdict::Keep(s) => {
                    if takes_severity {
                        f.severity = s;
                    }
                    Some(item)
                }
                ConfigVerdict::Disabled | ConfigVerdict::Ignored(_) => None,
            }
        })
        .collect();
    T::after_config(&mut kept);
    kept
}

/// Whether a config `[[ignore]]` entry that matched nothing is stale, not merely meant for
/// files this run did not check (pre-commit passes only the changed files): the run checked
/// the config's whole directory (`walked` holds it or a parent), or the entry has `paths` and
/// a checked file lies under them. An entry without `paths` is judged by whole runs only.
fn ignore_could_apply(
    ignore: &Ignore,
    config: &Config,
    texts: &[FileText],
    walked: &[PathBuf],
    cwd: &Path,
    locate: &dyn Fn(&str) -> PathBuf,
) -> bool {
    let base = normalize(config.base.as_deref().unwrap_or(cwd), cwd);
    walked
        .iter()
        .any(|root| base.starts_with(normalize(root, cwd)))
        || texts.iter().any(|t| {
            config
                .relative(&locate(&t.display), cwd)
                .is_some_and(|rel| ignore.paths_match(&rel))
        })
}

/// `texts`: the files checked; `walked`: the directories checked whole; `cwd`: the working
/// directory (the base of a config with no directory of its own); `locate`: the file a
/// finding's path (as reports show it) names, absolute, so that `[[ignore]] paths` match it
/// rebased on the config's directory wherever gpulint runs.
pub fn apply(
    findings: Vec<Finding>,
    texts: &[FileText],
    walked: &[PathBuf],
    config: &Config,
    cwd: &Path,
    locate: &dyn Fn(&str) -> PathBuf,
) -> Vec<Finding> {
    let mut per_file: Vec<(String, Vec<Pragma>)> = texts
        .iter()
        .map(|f| (f.display.clone(), pragmas(&f.text, f.statements.as_deref())))
        .collect();
    let mut used_ignores = vec![false; config.ignores.len()];
    let mut out = Vec::new();
    'next: for mut f in findings {
        let file = f.location.as_ref().and_then(|l| l.file.clone());
        let line = f.location.as_ref().and_then(|l| l.line);
        let in_config_tree = file
            .as_deref()
            .and_then(|p| config.relative(&locate(p), cwd));
        match config_verdict(config, &f.rule, f.severity, in_config_tree.as_deref()) {
            ConfigVerdict::Disabled => continue,
            ConfigVerdict::Ignored(i) => {
                if let Some(u) = used_ignores.get_mut(i) {
                    *u = true;
                }
                continue;
            }
            ConfigVerdict::Keep(s) => f.severity = s,
        }
        if let (Some(file), Some(line)) = (&file, line) {
            if let Some((_, ps)) = per_file.iter_mut().find(|(n, _)| n == file) {
                let mut hit = false;
                for p in ps.iter_mut() {
                    if code_matches(p, &f.rule)
                        && (p.file_level || (p.from <= line && line <= p.to))
                    {
                        p.used = true;
                        hit = true;
                    }
                }
                if hit {
                    continue 'next;
                }
            }
        }
        out.push(f);
    }
    // Repeats merge after suppression: a pragma silences its own service only.
    let mut out = crate::finding::merge_repeats(out);
    if config.rule_enabled(&UNUSED.code) {
        let rules = crate::rules::names();
        let known: Vec<&str> = rules.iter().map(|(code, _)| *code).collect();
        for (file, ps) in &per_file {
            for p in ps {
                let as_written = p.written.split(',').filter(|c| !c.is_empty());
                for (_, written) in p.codes.iter().zip(as_written).filter(|(c, _)| {
                    !matches!(c.as_str(), "*" | "ALL") && !known.contains(&c.as_str())
                }) {
                    out.push(
                        UNUSED
                            .finding(format!(
                                "`gpulint {}={}`: {}",
                                if p.file_level {
                                    "ignore-file"
                                } else {
                                    "ignore"
                                },
                                p.written,
                                crate::selection::unknown_code_message(written, &rules)
                            ))
                            .with_location(Location::in_file(file.clone(), p.line, p.col))
                            .with_help("fix the rule code; `gpulint rules` lists them"),
                    );
                }
            }
            let has_unknown = |p: &Pragma| {
                p.codes
                    .iter()
                    .any(|c| !matches!(c.as_str(), "*" | "ALL") && !known.contains(&c.as_str()))
            };
            for p in ps.iter().filter(|p| !p.used && !has_unknown(p)) {
                let what = if p.file_level {
                    "ignore-file"
                } else {
                    "ignore"
                };
                out.push(
                    UNUSED
                        .finding(format!(
                            "`gpulint {what}={}` suppresses nothing here",
                            p.written
                        ))
                        .with_location(Location::in_file(file.clone(), p.line, p.col))
                        .with_help("remove the pragma, or fix its rule code or placement (it covers the next statement)"),
                );
            }
        }
        if let Some(cfg) = &config.path {
            for (i, ig) in config.ignores.iter().enumerate() {
                if !used_ignores[i] && ignore_could_apply(ig, config, texts, walked, cwd, locate) {
                    out.push(
                        UNUSED
                            .finding(format!("[[ignore]] rule {} matched no finding", ig.rule))
                            .with_location(Location::in_file(
                                crate::report::paths::shown(cfg),
                                ig.line,
                                ig.col,
                            ))
                            .with_help("remove the entry, or fix its rule or paths"),
                    );
                }
            }
        }
    }
    if let Some(o) = config.severity_override(&UNUSED.code) {
        for f in out.iter_mut().filter(|f| f.rule == UNUSED.code) {
            f.severity = o;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::runconfig::gl101_torch_cuda_vs_base::META as R1;
    use std::path::Path;

    fn f(line: u32) -> Finding {
        R1.finding("x")
            .with_location(Location::in_file("Dockerfile", line, 1))
    }

    #[test]
    fn inline_covers_the_next_instruction_and_unused_are_reported() {
        let text = "FROM x\n# gpulint ignore=GL101 known, we pin below\nRUN a \\\n  && b\n# gpulint ignore=GL102\nRUN c\n";
        let texts = vec![FileText {
            display: "Dockerfile".to_string(),
            text: text.to_string(),
            statements: Some(vec![(1, 1), (3, 4), (6, 6)]),
            original: None,
        }];
        let out = apply(
            vec![f(4), f(6)],
            &texts,
            &[],
            &Config::default(),
            Path::new("/w"),
            &|s: &str| Path::new("/w").join(s),
        );
        let rules: Vec<_> = out
            .iter()
            .map(|x| (x.rule.as_str(), x.location.as_ref().unwrap().line))
            .collect();
        assert_eq!(rules, vec![("GL101", Some(6)), ("GL199", Some(5))]);
    }

    #[test]
    fn unknown_codes_in_pragmas_are_named_with_a_suggestion() {
        let text = "FROM x\n# gpulint ignore=GL1O1\nRUN a\n";
        let texts = vec![FileText {
            display: "Dockerfile".to_string(),
            text: text.to_string(),
            statements: None,
            original: None,
        }];
        let out = apply(
            vec![f(3)],
            &texts,
            &[],
            &Config::default(),
            Path::new("/w"),
            &|s: &str| Path::new("/w").join(s),
        );
        let unknown: Vec<_> = out.iter().filter(|x| x.rule == "GL199").collect();
        assert_eq!(unknown.len(), 1, "{out:?}");
        assert!(
            unknown[0]
                .message
                .contains("unknown rule \"GL1O1\" (did you mean GL101?)"),
            "{}",
            unknown[0].message
        );
        assert!(out.iter().any(|x| x.rule == "GL101"), "not suppressed");
    }

    #[test]
    fn file_level_and_yaml_blocks() {
        let text = "# gpulint ignore-file=GL101\nservices:\n  # gpulint ignore=GL101\n  a:\n    image: x\n";
        let texts = vec![FileText {
            display: "Dockerfile".to_string(),
            text: text.to_string(),
            statements: None,
            original: None,
        }];
        let out = apply(
            vec![f(5)],
            &texts,
            &[],
            &Config::default(),
            Path::new("/w"),
            &|s: &str| Path::new("/w").join(s),
        );
        assert!(out.is_empty(), "{out:?}");
        let p = pragmas(text, None);
        assert_eq!((p[1].from, p[1].to), (4, 5));
    }

    #[test]
    fn config_overrides() {
        let known = |c: &str| c.starts_with("GL1");
        let c = Config::parse(
            "c.toml",
            "[rules]\nGL101 = \"info\"\n[[ignore]]\nrule = \"GL102\"\nreason = \"r\"\n",
            &known,
        )
        .unwrap();
        let out = apply(
            vec![f(1)],
            &[],
            &[PathBuf::from("/w")],
            &c,
            Path::new("/w"),
            &|s: &str| Path::new("/w").join(s),
        );
        assert_eq!(out[0].severity, crate::finding::Severity::Info);
        assert!(out
            .iter()
            .any(|x| x.rule == "GL199" && x.message.contains("GL102")));
    }

    /// An `[[ignore]]` that matched nothing is unused only when it could have matched: the
    /// config's whole directory was walked, or a checked file lies under its `paths`. A run
    /// over other files (pre-commit's changed files) cannot tell.
    #[test]
    fn unmatched_config_ignores_are_unused_only_where_they_could_apply() {
        let known = |c: &str| c.starts_with("GL1");
        let mut c = Config::parse(
            "c.toml",
            "[[ignore]]\nrule = \"GL102\"\npaths = [\"b/**\"]\nreason = \"r\"\n\
             [[ignore]]\nrule = \"GL103\"\nreason = \"r\"\n",
            &known,
        )
        .unwrap();
        c.base = Some(PathBuf::from("/w/repo"));
        let checked = |display: &str| FileText {
            display: display.to_string(),
            text: "FROM x\n".to_string(),
            statements: None,
            original: None,
        };
        let unused = |texts: &[FileText], walked: &[PathBuf]| -> Vec<u32> {
            apply(
                Vec::new(),
                texts,
                walked,
                &c,
                Path::new("/w"),
                &|s: &str| Path::new("/w").join(s),
            )
            .iter()
            .filter(|x| x.rule == "GL199")
            .map(|x| x.location.as_ref().unwrap().line.unwrap())
            .collect()
        };
        assert_eq!(
            unused(&[checked("repo/a/Dockerfile")], &[]),
            Vec::<u32>::new()
        );
        assert_eq!(unused(&[checked("repo/b/Dockerfile")], &[]), vec![1]);
        // A walk below the config's directory does not cover it; one at or above does.
        let sub = [PathBuf::from("repo/a")];
        assert_eq!(
            unused(&[checked("repo/a/Dockerfile")], &sub),
            Vec::<u32>::new()
        );
        for root in ["repo", ".", "/w/repo/a/.."] {
            assert_eq!(
                unused(&[checked("repo/a/Dockerfile")], &[PathBuf::from(root)]),
                vec![1, 5],
                "{root}"
            );
        }
    }

    /// Image findings go through the same policy: off drops, an override re-grades, an
    /// `[[ignore]]` without paths drops, one with paths does not apply (no repository file),
    /// and nothing is reported as unused.
    #[test]
    fn image_findings_follow_the_same_config_policy() {
        use crate::rules::image::{
            gl001_no_kernel_image::META as G1, gl002_driver_too_old::META as G2,
            gl004_driver_libs_in_image::META as G4, gl006_conflicting_cuda_runtimes::META as G6,
        };
        let known = |c: &str| c.starts_with("GL0");
        let c = Config::parse(
            "c.toml",
            "[rules]\nGL001 = \"off\"\nGL002 = \"warning\"\n\
             [[ignore]]\nrule = \"GL004\"\nreason = \"r\"\n\
             [[ignore]]\nrule = \"GL006\"\npaths = [\"deploy/**\"]\nreason = \"r\"\n",
            &known,
        )
        .unwrap();
        assert_eq!(
            config_verdict(&c, "GL001", Severity::Error, None),
            ConfigVerdict::Disabled
        );
        assert_eq!(
            config_verdict(&c, "GL004", Severity::Error, None),
            ConfigVerdict::Ignored(0)
        );
        assert_eq!(
            config_verdict(&c, "GL006", Severity::Error, Some("deploy/x.yaml")),
            ConfigVerdict::Ignored(1)
        );
        let out = apply_config(
            vec![
                G1.finding("a"),
                G2.finding("b"),
                G4.finding("c"),
                G6.finding("d"),
            ],
            &c,
        );
        let got: Vec<(&str, Severity)> =
            out.iter().map(|f| (f.rule.as_str(), f.severity)).collect();
        assert_eq!(
            got,
            vec![("GL002", Severity::Warning), ("GL006", Severity::Error)]
        );
    }
}
