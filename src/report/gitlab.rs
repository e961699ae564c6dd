//! GitLab Code Quality report (`artifacts:reports:codequality`): a JSON array of issues with
//! `description`, `check_name`, `fingerprint`, `severity` (`info`, `minor`, `major`,
//! `critical`, `blocker`) and `location.path` / `location.lines.begin`, the fields GitLab reads.
//! GitLab needs a line; image findings (no lines) use line 1 of the image reference, and a
//! path relative to the repository: a local archive or layout below the working directory is
//! named by that relative path, without its transport prefix.

use super::{escape, Place, Report};
use crate::finding::Severity;
use serde_json::json;

pub fn severity(s: Severity) -> &'static str {
    match s {
        Severity::Error => "critical",
        Severity::Warning => "major",
        Severity::Info => "info",
    }
}

/// `docker-archive:/repo/build/app.tar` run in `/repo` → `build/app.tar`; a reference that is
/// no local path below the working directory stays as it is.
fn repo_relative(artifact: &str) -> String {
    let local = ["docker-archive:", "oci-archive:", "oci:", "dir:"]
        .iter()
        .find_map(|t| artifact.strip_prefix(t))
        .unwrap_or(artifact);
    let p = std::path::Path::new(local);
    let rel = std::env::current_dir()
        .ok()
        .filter(|_| p.is_absolute() && p.exists())
        .and_then(|cwd| {
            p.strip_prefix(cwd)
                .ok()
                .map(|r| r.to_string_lossy().into_owned())
        });
    match rel {
        Some(r) if !r.is_empty() => r,
        _ => artifact.to_string(),
    }
}

pub fn render(report: &Report) -> String {
    let issues: Vec<_> = report
        .findings
        .iter()
        .map(|f| {
            let place = report.place(f);
            let mut description = String::new();
            if let Place::InImage { path, .. } = &place {
                description.push_str(&format!("/{}: ", path.trim_start_matches('/')));
            }
            if let Some(t) = &f.target {
                description.push_str(&format!("[{t}] "));
            }
            description.push_str(&f.message);
            let path = match place {
                Place::File { path, .. } => path.to_string(),
                _ => repo_relative(place.file_name()),
            };
            let line = match place {
                Place::File { line, .. } => line.unwrap_or(1).max(1),
                _ => 1,
            };
            json!({
                "type": "issue",
                "check_name": f.rule,
                "description": description,
                "categories": ["Bug Risk"],
                "fingerprint": report.fingerprint(f),
                "severity": severity(f.severity),
                "location": {"path": path, "lines": {"begin": line}},
            })
        })
        .collect();
    let mut s = serde_json::to_string_pretty(&issues).unwrap_or_else(|_| "[]".into());
    s.push('\n');
    escape::json_text(s)
}
