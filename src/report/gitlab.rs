//! GitLab Code Quality report (`artifacts:reports:codequality`): a JSON array of issues with
//! `description`, `check_name`, `fingerprint`, `severity` (`info`, `minor`, `major`,
//! `critical`, `blocker`) and `location.path` / `location.lines.begin`, the fields GitLab reads.
//! GitLab needs a path in the repository and a line: [`Report::repo_place`], the same
//! spelling as every other format (an image is its archive in the repository or a
//! `.gpulint/image/…` placeholder, at line 1, with the in-image path in the description).

use super::{escape, Report};
use crate::finding::Severity;
use serde_json::json;

pub fn severity(s: Severity) -> &'static str {
    match s {
        Severity::Error => "critical",
        Severity::Warning => "major",
        Severity::Info => "info",
    }
}

pub fn render(report: &Report) -> String {
    let issues: Vec<_> = report
        .findings
        .iter()
        .map(|f| {
            let place = report.repo_place(f);
            let mut description = String::new();
            if let Some(inner) = &place.inner {
                description.push_str(&format!("{inner}: "));
            }
            if let Some(t) = &f.target {
                description.push_str(&format!("[{t}] "));
            }
            description.push_str(&f.message);
            json!({
                "type": "issue",
                "check_name": f.rule,
                "description": description,
                "categories": ["Bug Risk"],
                "fingerprint": report.fingerprint(f),
                "severity": severity(f.severity),
                "location": {"path": place.file, "lines": {"begin": place.line}},
            })
        })
        .collect();
    let mut s = serde_json::to_string_pretty(&issues).unwrap_or_else(|_| "[]".into());
    s.push('\n');
    escape::json_text(s)
}
