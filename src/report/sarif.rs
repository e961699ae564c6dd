//! SARIF 2.1.0 as GitHub code scanning accepts it: one run, the rule table from
//! `rules::all()` with a `helpUri` per rule, one result per finding with `partialFingerprints`.
//!
//! Locations, as GitHub code scanning ingests them: every result has a physical location
//! relative to the repository root (`uriBaseId` `%SRCROOT%`) with `region.startLine`. A file
//! in the repository is itself at its line; an image is its archive in the repository, or the
//! placeholder `.gpulint/image/<reference>`, at line 1, the in-image path a logical location;
//! the host is `.gpulint/host` ([`super::paths`], [`Report::repo_place`]).

use super::{RepoPlace, Report};
use crate::finding::Severity;
use crate::rule_meta::RuleMeta;
use serde_json::{json, Value};

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

/// The rule's help as GitHub code scanning shows it (SARIF `help.markdown`).
fn help_markdown(r: &RuleMeta) -> String {
    let d = &r.doc;
    let mut s = format!(
        "**What:** {}\n\n**Why:** {}\n\n**Example:** {}\n\n**Fix:** {}\n\n**Sources:**\n",
        d.what, d.why, d.example, d.fix
    );
    for u in d.sources {
        s.push_str(&format!("- <{u}>\n"));
    }
    s
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

/// An artifact relative to the repository root.
fn artifact_location(path: &str) -> Value {
    let p = path.strip_prefix("./").unwrap_or(path);
    json!({"uri": encode_uri_path(p), "uriBaseId": SRCROOT})
}

fn location(place: &RepoPlace) -> Value {
    let mut region = json!({"startLine": place.line});
    if let Some(c) = place.column {
        region["startColumn"] = json!(c);
    }
    let mut loc = json!({"physicalLocation": {
        "artifactLocation": artifact_location(&place.file),
        "region": region,
    }});
    if let Some(inner) = &place.inner {
        loc["logicalLocations"] = json!([{"fullyQualifiedName": inner, "kind": "resource"}]);
    }
    loc
}

/// A message and its fix as one text: the message ends as a sentence before "Fix:" (SARIF
/// viewers show the text as one paragraph).
fn with_fix(message: &str, fix: &str) -> String {
    let message = message.trim_end();
    let stop = if message.ends_with(['.', '!', '?']) {
        ""
    } else {
        "."
    };
    format!("{message}{stop} Fix: {fix}")
}

/// A fix as SARIF's `fix` object: its edits as `artifactChanges`. Only fixes that edit the
/// finding's own file qualify (SARIF requires at least one change, and the file's repository
/// path is known only for the finding's location); advice stays in the message and JSON.
fn sarif_fix(
    fix: &crate::fix::Fix,
    f: &crate::finding::Finding,
    place: &RepoPlace,
) -> Option<Value> {
    let own_file = f.location.as_ref().and_then(|l| l.file.as_deref())?;
    let replacements: Vec<Value> = fix
        .edits
        .iter()
        .filter(|e| e.file == own_file)
        .map(|e| {
            json!({
                "deletedRegion": {
                    "startLine": e.start_line,
                    "startColumn": e.start_column,
                    "endLine": e.end_line,
                    "endColumn": e.end_column,
                },
                "insertedContent": {"text": e.new_text},
            })
        })
        .collect();
    if replacements.is_empty() || replacements.len() != fix.edits.len() {
        return None;
    }
    Some(json!({
        "description": {"text": format!("{} ({})", fix.replacement, fix.rationale)},
        "artifactChanges": [{
            "artifactLocation": artifact_location(&place.file),
            "replacements": replacements,
        }],
    }))
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
                "fullDescription": {"text": format!("{} {}", r.doc.what, r.doc.why)},
                "help": {"text": r.explanation(100), "markdown": help_markdown(r)},
                "defaultConfiguration": {"level": level(r.default_severity)},
                "helpUri": r.help_uri(),
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
                text = with_fix(&text, h);
            }
            let place = report.repo_place(f);
            let mut r = json!({
                "ruleId": f.rule,
                "level": level(f.severity),
                "message": {"text": text},
                "locations": [location(&place)],
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
            let fixes: Vec<Value> = f
                .fixes
                .iter()
                .filter_map(|x| sarif_fix(x, f, &place))
                .collect();
            if !fixes.is_empty() {
                r["fixes"] = json!(fixes);
            }
            r
        })
        .collect();
    let mut v = json!({
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
                SRCROOT: {"description": {"text": "The repository root: GITHUB_WORKSPACE or CI_PROJECT_DIR, else the git top level, else the directory gpulint ran in."}},
            },
            "results": results,
        }]
    });
    // An image judged against a fleet: what would make it work, in the run's property bag.
    if let Some(r) = report.details.get("remedies") {
        v["runs"][0]["properties"] = json!({"remedies": r});
    }
    let mut s = serde_json::to_string_pretty(&v).unwrap_or_else(|_| "{}".into());
    s.push('\n');
    super::escape::json_text(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fix_starts_a_sentence_of_its_own() {
        assert_eq!(
            with_fix(
                "needs SASS sm_90 or PTX compute_XY with XY <= 90",
                "rebuild"
            ),
            "needs SASS sm_90 or PTX compute_XY with XY <= 90. Fix: rebuild"
        );
        assert_eq!(with_fix("It is old.", "update"), "It is old. Fix: update");
    }

    #[test]
    fn fixes_that_edit_the_file_become_artifact_changes_and_advice_does_not() {
        use crate::fix::{Applicability, Fix, FixKind, TextEdit};
        let text = "FROM python:3.12\nRUN pip install torch==2.6.0\n";
        let start = text.find("torch==2.6.0").unwrap();
        let edit = TextEdit::new(
            "Dockerfile",
            text,
            start,
            start + "torch==2.6.0".len(),
            "torch==2.7.0 --index-url https://download.pytorch.org/whl/cu128",
        )
        .unwrap();
        let fix = |edits: Vec<TextEdit>| Fix {
            kind: FixKind::IndexUrl,
            replacement: "torch 2.7.0 cu128".into(),
            rationale: "covers sm_120".into(),
            basis: Vec::new(),
            edits,
            applicability: Applicability::Unsafe,
            change: None,
        };
        let finding = crate::rules::runconfig::gl119_torch_build_misses_target::META
            .finding("no kernel image")
            .with_location(crate::finding::Location::in_file("Dockerfile", 2, 17))
            .with_fix(fix(vec![edit]))
            .with_fix(fix(Vec::new()));
        let mut report = Report::new("Dockerfile");
        report.findings.push(finding);
        let v: Value = serde_json::from_str(&render(&report)).unwrap();
        let fixes = v["runs"][0]["results"][0]["fixes"].as_array().unwrap();
        assert_eq!(fixes.len(), 1, "advice without an edit is not a SARIF fix");
        let change = &fixes[0]["artifactChanges"][0];
        assert_eq!(change["artifactLocation"]["uri"], "Dockerfile");
        let r = &change["replacements"][0];
        assert_eq!(r["deletedRegion"]["startLine"], 2);
        assert_eq!(r["deletedRegion"]["startColumn"], 17);
        assert_eq!(r["deletedRegion"]["endColumn"], 29);
        assert!(r["insertedContent"]["text"]
            .as_str()
            .unwrap()
            .ends_with("whl/cu128"));
    }

    #[test]
    fn uris_are_encoded_relative_and_never_a_scheme_by_accident() {
        assert_eq!(
            encode_uri_path("deploy/my app.yaml"),
            "deploy/my%20app.yaml"
        );
        assert_eq!(
            encode_uri_path(".gpulint/image/a:b"),
            ".gpulint/image/a%3Ab"
        );
        let rel = artifact_location("./k8s/job.yaml");
        assert_eq!(rel["uri"], "k8s/job.yaml");
        assert_eq!(rel["uriBaseId"], SRCROOT);
    }
}
