//! JSON report: the serde form of [`Report`]; one schema for every command (`image`, the
//! configuration linters, `host --check`): `schema_version`, `tool`, `subject`, `targets`,
//! `details` (command-specific extras), `findings[]` with `rule`, `name`, `severity`,
//! `message`, `target`, `location`, `help`, and `summary` counts. `details` is always an
//! object (`{}` for the configuration linters). The JSON Schema is
//! `docs/schema/report.schema.json`; the tests validate every command's output against it.

use super::{escape, Report};
use serde_json::json;

/// 2: `host --check` moved to the shared schema (its checks under `details.checks`, each
/// with `rule` where version 1 said `id`).
pub const SCHEMA_VERSION: u32 = 2;

pub fn render(report: &Report) -> String {
    let v = json!({
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "gpulint", "version": env!("CARGO_PKG_VERSION")},
        "subject": report.subject,
        "targets": report.targets,
        "details": if report.details.is_null() {
            json!({})
        } else {
            report.details.clone()
        },
        "findings": report.findings,
        "summary": {
            "error": report.count(crate::finding::Severity::Error),
            "warning": report.count(crate::finding::Severity::Warning),
            "info": report.count(crate::finding::Severity::Info),
        }
    });
    let mut s = serde_json::to_string_pretty(&v).unwrap_or_else(|_| "{}".into());
    s.push('\n');
    escape::json_text(s)
}
