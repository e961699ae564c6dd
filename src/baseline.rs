//! Baselines, for adopting gpulint on an existing repository: `--write-baseline FILE` records
//! the findings of today; `--baseline FILE` then reports only the findings not recorded, so a
//! CI job or a pre-commit hook fails on new problems only.
//!
//! A finding matches an entry by the fingerprint SARIF (`partialFingerprints`) and GitLab
//! reports already carry ([`Report::fingerprint`]: rule, target, file or image, message; not
//! the line, so moving code does not break the match). Each entry hides one finding: two
//! recorded copies hide two, a third copy is new. An entry left over after matching is
//! reported as GL198 when this run looked where it points (its file was among the inputs,
//! its rule was run, its target was checked), so a hook over the changed files only does not
//! call the rest stale.
//!
//! The file is JSON, one entry per line so that its diffs read well:
//! `{"version": 1, "entries": [{"fingerprint", "code", "path", "message", "target"?}, …]}`.

use crate::finding::{Finding, Location, Severity};
use crate::report::Report;
use anyhow::Context as _;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The format version written and the only one read.
pub const VERSION: u64 = 1;
/// A baseline larger than this is refused (a repository's findings are far smaller).
const MAX_BASELINE_FILE: u64 = 64 << 20;

/// One recorded finding.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub fingerprint: String,
    pub code: String,
    /// Where the finding was filed: the file, or the image for findings inside an image.
    pub path: String,
    pub message: String,
    /// The target (GPU / driver / pool) of a per-target finding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct BaselineFile {
    version: u64,
    entries: Vec<Entry>,
}

/// A baseline read from disk.
#[derive(Debug)]
pub struct Baseline {
    /// The file as named on the command line (GL198 findings point into it).
    pub file: String,
    pub entries: Vec<Entry>,
    /// Its text, to find the line of an entry.
    text: String,
}

/// The entries that record these findings, sorted.
pub fn entries(report: &Report) -> Vec<Entry> {
    let mut out: Vec<Entry> = report
        .findings
        .iter()
        .map(|f| Entry {
            fingerprint: report.fingerprint(f),
            code: f.rule.to_string(),
            path: report.place(f).file_name().to_string(),
            message: f.message.clone(),
            target: f.target.clone(),
        })
        .collect();
    out.sort_by(|a, b| (&a.path, &a.code, &a.fingerprint).cmp(&(&b.path, &b.code, &b.fingerprint)));
    out
}

/// The baseline file's text for these entries: one entry per line.
pub fn render(entries: &[Entry]) -> String {
    let mut s = format!("{{\n  \"version\": {VERSION},\n  \"entries\": [");
    for (i, e) in entries.iter().enumerate() {
        s.push_str(if i == 0 { "\n    " } else { ",\n    " });
        s.push_str(&serde_json::to_string(e).unwrap_or_default());
    }
    s.push_str(if entries.is_empty() {
        "]\n}\n"
    } else {
        "\n  ]\n}\n"
    });
    s
}

/// Write the findings of `report` as a baseline to `path`; the number of entries.
pub fn write(path: &Path, report: &Report) -> anyhow::Result<usize> {
    let entries = entries(report);
    std::fs::write(path, render(&entries))
        .with_context(|| format!("writing baseline {}", path.display()))?;
    Ok(entries.len())
}

/// Read a baseline; a missing, oversized, malformed or newer-version file is an error (the
/// run would otherwise report every old finding, or hide new ones).
pub fn load(path: &Path) -> anyhow::Result<Baseline> {
    let text = crate::io_util::read_regular_string(path, MAX_BASELINE_FILE)
        .with_context(|| format!("reading baseline {}", path.display()))?;
    let parsed: BaselineFile = serde_json::from_str(&text).with_context(|| {
        format!(
            "baseline {}: not a gpulint baseline (write one with --write-baseline)",
            path.display()
        )
    })?;
    if parsed.version != VERSION {
        anyhow::bail!(
            "baseline {}: version {} is not supported (this gpulint reads version {VERSION})",
            path.display(),
            parsed.version
        );
    }
    Ok(Baseline {
        file: path.to_string_lossy().replace('\\', "/"),
        entries: parsed.entries,
        text,
    })
}

impl Baseline {
    /// Drop the findings the baseline records (one per entry) and add a GL198 finding for
    /// each fingerprint with entries left over that `in_scope` says this run looked at.
    /// `stale_severity` is GL198's severity, None when GL198 is off.
    pub fn apply(
        &self,
        report: &mut Report,
        in_scope: &dyn Fn(&Entry) -> bool,
        stale_severity: Option<Severity>,
    ) {
        let mut left: BTreeMap<&str, usize> = BTreeMap::new();
        for e in &self.entries {
            *left.entry(e.fingerprint.as_str()).or_default() += 1;
        }
        let fingerprints: Vec<String> = report
            .findings
            .iter()
            .map(|f| report.fingerprint(f))
            .collect();
        let mut kept: Vec<Finding> = Vec::with_capacity(report.findings.len());
        for (f, fp) in std::mem::take(&mut report.findings)
            .into_iter()
            .zip(&fingerprints)
        {
            match left.get_mut(fp.as_str()) {
                Some(n) if *n > 0 => *n -= 1,
                _ => kept.push(f),
            }
        }
        report.findings = kept;
        let Some(severity) = stale_severity else {
            return;
        };
        let mut reported: std::collections::BTreeSet<&str> = Default::default();
        for e in &self.entries {
            let n = left.get(e.fingerprint.as_str()).copied().unwrap_or(0);
            let target_checked = e.target.as_ref().is_none_or(|t| report.targets.contains(t));
            if n == 0 || !target_checked || !in_scope(e) || !reported.insert(e.fingerprint.as_str())
            {
                continue;
            }
            let copies = if n > 1 {
                format!(" ({n} entries)")
            } else {
                String::new()
            };
            let line = self
                .text
                .lines()
                .position(|l| l.contains(&e.fingerprint))
                .map_or(1, |i| i as u32 + 1);
            report.findings.push(
                crate::rules::runconfig::gl198_stale_baseline_entry::META
                    .finding(format!(
                        "baseline entry{copies} matches no finding any more: {} in {}: {}",
                        e.code, e.path, e.message
                    ))
                    .with_severity(severity)
                    .with_location(Location::in_file(self.file.clone(), line, 1))
                    .with_help(
                        "fixed? remove the entry, or rewrite the file with --write-baseline",
                    ),
            );
        }
    }
}

/// Whether an entry's file was checked by a run over `inputs` (display paths as findings
/// show them; none = the command's default, the working directory).
pub fn path_in_inputs(path: &str, inputs: &[String]) -> bool {
    inputs.is_empty()
        || inputs.iter().any(|i| {
            let i = i.trim_start_matches("./").trim_end_matches('/');
            i.is_empty()
                || i == "."
                || path == i
                || path
                    .strip_prefix(i)
                    .is_some_and(|rest| rest.starts_with('/'))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Location;
    use crate::rules::runconfig::gl108_unquoted_version_specifier::META as GL108;

    fn finding(line: u32, msg: &str) -> Finding {
        GL108
            .finding(msg)
            .with_location(Location::in_file("Dockerfile", line, 1))
    }

    fn report(findings: Vec<Finding>) -> Report {
        let mut r = Report::new("repository");
        r.findings = findings;
        r
    }

    fn load_text(text: &str) -> anyhow::Result<Baseline> {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("b.json");
        std::fs::write(&p, text).unwrap();
        load(&p)
    }

    #[test]
    fn recorded_findings_are_hidden_across_line_moves_counting_copies() {
        let old = report(vec![finding(2, "a"), finding(5, "a"), finding(9, "b")]);
        let text = render(&entries(&old));
        assert_eq!(text.lines().count(), 3 + 5, "one entry per line:\n{text}");
        let b = load_text(&text).unwrap();

        // The same findings on other lines, one more copy of "a", and a new "c".
        let mut now = report(vec![
            finding(3, "a"),
            finding(7, "a"),
            finding(8, "a"),
            finding(12, "b"),
            finding(1, "c"),
        ]);
        b.apply(&mut now, &|_| true, Some(Severity::Warning));
        let left: Vec<(&str, &str)> = now
            .findings
            .iter()
            .map(|f| (f.rule.as_str(), f.message.as_str()))
            .collect();
        assert_eq!(left, vec![("GL108", "a"), ("GL108", "c")]);
    }

    #[test]
    fn leftover_entries_are_gl198_only_where_the_run_looked() {
        let old = report(vec![
            finding(2, "a"),
            finding(5, "gone"),
            finding(6, "gone"),
        ]);
        let b = load_text(&render(&entries(&old))).unwrap();
        let mut now = report(vec![finding(2, "a")]);
        b.apply(&mut now, &|_| true, Some(Severity::Warning));
        assert_eq!(now.findings.len(), 1, "{:?}", now.findings);
        let f = &now.findings[0];
        assert_eq!(f.rule, "GL198");
        assert_eq!(f.severity, Severity::Warning);
        assert!(
            f.message.starts_with(
                "baseline entry (2 entries) matches no finding any more: GL108 in Dockerfile: gone"
            ),
            "{}",
            f.message
        );
        let loc = f.location.as_ref().unwrap();
        assert!(loc.file.as_deref().unwrap().ends_with("b.json"));
        // The line of the entry in the file (line 1 is `{`).
        assert!(loc.line.unwrap() > 3, "{loc:?}");

        // Out of scope (another file, a rule not run) or GL198 off: nothing.
        for (scope, sev) in [(false, Some(Severity::Warning)), (true, None)] {
            let mut now = report(vec![finding(2, "a")]);
            b.apply(&mut now, &|_| scope, sev);
            assert!(now.findings.is_empty(), "{:?}", now.findings);
        }
    }

    #[test]
    fn a_baseline_that_is_not_one_is_refused() {
        for (text, why) in [
            ("[]", "not a gpulint baseline"),
            (
                "{\"version\": 2, \"entries\": []}",
                "version 2 is not supported",
            ),
            (
                "{\"version\": 1, \"entries\": [{\"fingerprint\": \"x\"}]}",
                "not a gpulint baseline",
            ),
        ] {
            let e = format!("{:#}", load_text(text).unwrap_err());
            assert!(e.contains(why), "{text}: {e}");
        }
        assert!(load_text(&render(&[])).unwrap().entries.is_empty());
    }

    #[test]
    fn inputs_cover_their_own_files_only() {
        let inputs = vec!["deploy".to_string(), "./Dockerfile".to_string()];
        assert!(path_in_inputs("deploy/k8s/job.yaml", &inputs));
        assert!(path_in_inputs("Dockerfile", &inputs));
        assert!(!path_in_inputs("deployment.yaml", &inputs));
        assert!(!path_in_inputs("app/Dockerfile", &inputs));
        assert!(path_in_inputs("anything", &[]));
        assert!(path_in_inputs("anything", &[".".to_string()]));
    }
}
