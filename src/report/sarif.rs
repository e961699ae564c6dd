//! SARIF 2.1.0, as GitHub code scanning accepts it: one run, the rule table from
//! `rules::all()`, one result per finding with a physical location.

use super::Report;
use crate::finding::Severity;
use serde_json::{json, Value};

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

pub fn render(report: &Report) -> String {
    let rules = crate::rules::all();
    let rule_objs: Vec<Value> = rules
        .iter()
        .map(|r| {
            json!({
                "id": r.code,
                "name": r.name,
                "shortDescription": {"text": r.summary},
                "fullDescription": {"text": r.summary},
                "help": {"text": r.explanation},
                "defaultConfiguration": {"level": level(r.default_severity)},
                "helpUri": format!("https://github.com/gpulint/gpulint/blob/main/README.md#{}", r.code.to_ascii_lowercase()),
            })
        })
        .collect();
    let results: Vec<Value> = report
        .findings
        .iter()
        .map(|f| {
            let (uri, line, col) = match &f.location {
                Some(l) if l.file.is_some() => (
                    l.file.clone().unwrap_or_default(),
                    l.line.unwrap_or(1).max(1),
                    l.column.unwrap_or(1).max(1),
                ),
                Some(l) => (
                    l.path.clone().unwrap_or_else(|| report.subject.clone()),
                    1,
                    1,
                ),
                None => (report.subject.clone(), 1, 1),
            };
            let uri = uri.trim_start_matches('/').to_string();
            let mut text = f.message.clone();
            if let Some(t) = &f.target {
                text = format!("[{t}] {text}");
            }
            if let Some(h) = &f.help {
                text = format!("{text} Fix: {h}");
            }
            let mut r = json!({
                "ruleId": f.rule,
                "level": level(f.severity),
                "message": {"text": text},
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": {"uri": uri},
                        "region": {"startLine": line, "startColumn": col}
                    }
                }],
            });
            // Every code is in the table (GL000 included), so every result resolves.
            if let Some(i) = rules.iter().position(|m| m.code == f.rule) {
                r["ruleIndex"] = json!(i);
            }
            if let Some(layer) = f.location.as_ref().and_then(|l| l.layer.clone()) {
                r["properties"] = json!({"layer": layer});
            }
            r
        })
        .collect();
    let v = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "gpulint",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": "https://github.com/gpulint/gpulint",
                "rules": rule_objs,
            }},
            "results": results,
        }]
    });
    let mut s = serde_json::to_string_pretty(&v).unwrap_or_else(|_| "{}".into());
    s.push('\n');
    s
}
