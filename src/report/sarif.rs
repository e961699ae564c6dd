//! SARIF 2.1.0 as GitHub code scanning accepts it: one run, the rule table from
//! `rules::all()` with a `helpUri` per rule, one result per finding with `partialFingerprints`.
//!
//! Locations: a file on disk is an artifact relative to the repository root (`uriBaseId`
//! `%SRCROOT%`, the directory gpulint ran in) with a region only where the line is known; a
//! finding inside an image names the image reference as the artifact and the in-image path as
//! a logical location (an image has no lines, so no region is invented).

use super::{Place, Report};
use crate::finding::Severity;
use serde_json::{json, Value};

/// Where the per-rule pages live (`docs/rules/GLxxx.md`).
pub const RULE_DOCS_BASE: &str = "https://github.com/gpulint/gpulint/blob/main/docs/rules/";
/// The `uriBaseId` of files given relative to the directory gpulint ran in.
pub const SRCROOT: &str = "%SRCROOT%";
/// The key of gpulint's own fingerprint in `partialFingerprints`.
pub const FINGERPRINT_KEY: &str = "gpulint/v1";

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

/// The page documenting a rule.
pub fn help_uri(code: &str) -> String {
    format!("{RULE_DOCS_BASE}{code}.md")
}

/// Percent-encode a path for a URI: everything but RFC 3986 unreserved characters and `/`.
/// `:` is encoded too, so `name:tag` cannot read as a URI scheme.
pub fn encode_uri_path(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// An artifact location: absolute paths as `file://` URIs, the rest relative to `%SRCROOT%`.
fn artifact_location(path: &str) -> Value {
    if path.starts_with('/') {
        json!({"uri": format!("file://{}", encode_uri_path(path))})
    } else {
        let p = path.strip_prefix("./").unwrap_or(path);
        json!({"uri": encode_uri_path(p), "uriBaseId": SRCROOT})
    }
}

/// An image (or host) as the artifact: a local archive path as a `file://` URI, a reference as
/// its encoded name.
fn subject_location(reference: &str) -> Value {
    if reference.starts_with('/') {
        json!({"uri": format!("file://{}", encode_uri_path(reference))})
    } else {
        json!({"uri": encode_uri_path(reference)})
    }
}

fn location(place: &Place) -> Value {
    match place {
        Place::File { path, line, column } => {
            let mut phys = json!({"artifactLocation": artifact_location(path)});
            if let Some(l) = line.filter(|l| *l > 0) {
                let mut region = json!({"startLine": l});
                if let Some(c) = column.filter(|c| *c > 0) {
                    region["startColumn"] = json!(c);
                }
                phys["region"] = region;
            }
            json!({"physicalLocation": phys})
        }
        Place::InImage { artifact, path, .. } => json!({
            "physicalLocation": {"artifactLocation": subject_location(artifact)},
            "logicalLocations": [{
                "fullyQualifiedName": format!("/{}", path.trim_start_matches('/')),
                "kind": "resource",
            }],
        }),
        Place::Subject(s) => json!({
            "physicalLocation": {"artifactLocation": subject_location(s)},
        }),
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
                "helpUri": help_uri(r.code.as_str()),
            })
        })
        .collect();
    let results: Vec<Value> = report
        .findings
        .iter()
        .map(|f| {
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
                "locations": [location(&report.place(f))],
                "partialFingerprints": {FINGERPRINT_KEY: report.fingerprint(f)},
            });
            // Every code is in the table (GL000 included), so every result resolves.
            if let Some(i) = rules.iter().position(|m| m.code == f.rule) {
                r["ruleIndex"] = json!(i);
            }
            let mut props = serde_json::Map::new();
            if let Some(t) = &f.target {
                props.insert("target".into(), json!(t));
            }
            if let Some(layer) = f.location.as_ref().and_then(|l| l.layer.clone()) {
                props.insert("layer".into(), json!(layer));
            }
            if !props.is_empty() {
                r["properties"] = Value::Object(props);
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
            "originalUriBaseIds": {
                SRCROOT: {"description": {"text": "The directory gpulint ran in (the repository root in CI)."}},
            },
            "results": results,
        }]
    });
    let mut s = serde_json::to_string_pretty(&v).unwrap_or_else(|_| "{}".into());
    s.push('\n');
    super::escape::json_text(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_are_encoded_and_never_a_scheme_by_accident() {
        assert_eq!(
            encode_uri_path("deploy/my app.yaml"),
            "deploy/my%20app.yaml"
        );
        assert_eq!(
            subject_location("pytorch/pytorch:2.3.0")["uri"],
            "pytorch/pytorch%3A2.3.0"
        );
        assert_eq!(
            subject_location("/tmp/a b.tar")["uri"],
            "file:///tmp/a%20b.tar"
        );
        let rel = artifact_location("./k8s/job.yaml");
        assert_eq!(rel["uri"], "k8s/job.yaml");
        assert_eq!(rel["uriBaseId"], SRCROOT);
        assert!(artifact_location("/proc/driver/nvidia/version")
            .get("uriBaseId")
            .is_none());
    }
}
