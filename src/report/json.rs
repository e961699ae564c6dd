//! JSON report: the serde form of [`Report`]; a stable schema (`findings[]` with `rule`,
//! `severity`, `message`, `target`, `location`).

use super::Report;
use serde_json::json;

pub const SCHEMA_VERSION: u32 = 1;

pub fn render(report: &Report) -> String {
    let v = json!({
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "gpulint", "version": env!("CARGO_PKG_VERSION")},
        "subject": report.subject,
        "targets": report.targets,
        "details": report.details,
        "findings": report.findings,
        "summary": {
            "error": report.count(crate::finding::Severity::Error),
            "warning": report.count(crate::finding::Severity::Warning),
            "info": report.count(crate::finding::Severity::Info),
        }
    });
    let mut s = serde_json::to_string_pretty(&v).unwrap_or_else(|_| "{}".into());
    s.push('\n');
    s
}
