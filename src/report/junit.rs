//! JUnit XML: one `<testsuite>` per target (the subject when there is none) and one
//! `<testcase>` per checked rule in it, failed when the rule has findings for that target.
//! Target-independent findings fail the rule under every target, since each target ships
//! the same image or file.

use super::{escape::xml_attr, Place, Report};
use crate::finding::Finding;
use std::fmt::Write;

fn describe(report: &Report, f: &Finding) -> String {
    let place = match report.place(f) {
        Place::File { path, line, column } => match (line, column) {
            (Some(l), Some(c)) => format!("{path}:{l}:{c}"),
            (Some(l), None) => format!("{path}:{l}"),
            _ => path.to_string(),
        },
        Place::InImage { path, .. } => format!("/{}", path.trim_start_matches('/')),
        Place::Subject(s) => s.to_string(),
    };
    let mut s = format!("{}: {}: {}", f.severity, place, f.message);
    if let Some(h) = &f.help {
        let _ = write!(s, " (help: {h})");
    }
    s
}

pub fn render(report: &Report) -> String {
    let suites: Vec<Option<&str>> = if report.targets.is_empty() {
        vec![None]
    } else {
        report.targets.iter().map(|t| Some(t.as_str())).collect()
    };
    let mut body = String::new();
    let (mut total, mut failed) = (0usize, 0usize);
    for suite in suites {
        let in_suite: Vec<&Finding> = report
            .findings
            .iter()
            .filter(|f| f.target.is_none() || f.target.as_deref() == suite)
            .collect();
        // Rules that ran, plus any rule that reported without being listed (GL000).
        let mut codes: Vec<&str> = report.checked_rules.iter().map(String::as_str).collect();
        for f in &in_suite {
            if !codes.contains(&f.rule.as_str()) {
                codes.push(&f.rule);
            }
        }
        codes.sort_unstable();
        let name = suite.unwrap_or(&report.subject);
        let mut cases = String::new();
        let mut suite_failed = 0;
        for code in &codes {
            let hits: Vec<&&Finding> = in_suite.iter().filter(|f| f.rule == *code).collect();
            let rule_name = crate::rules::find(code)
                .map(|m| m.name.to_string())
                .or_else(|| hits.first().map(|f| f.name.clone()))
                .unwrap_or_default();
            let _ = write!(
                cases,
                "    <testcase classname=\"{}\" name=\"{}\"",
                xml_attr(&format!("gpulint.{name}")),
                xml_attr(&format!("{code} {rule_name}")),
            );
            if hits.is_empty() {
                cases.push_str("/>\n");
                continue;
            }
            suite_failed += 1;
            let worst = hits
                .iter()
                .map(|f| f.severity)
                .max()
                .unwrap_or(crate::finding::Severity::Info);
            let text: Vec<String> = hits
                .iter()
                .map(|f| xml_attr(&describe(report, f)))
                .collect();
            let _ = write!(
                cases,
                ">\n      <failure type=\"{worst}\" message=\"{}\">{}</failure>\n    </testcase>\n",
                xml_attr(&format!(
                    "{}: {}",
                    crate::vocab::count(hits.len(), "finding", "findings"),
                    hits[0].message
                )),
                text.join("&#10;"),
            );
        }
        total += codes.len();
        failed += suite_failed;
        let _ = write!(
            body,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{suite_failed}\" errors=\"0\" skipped=\"0\">\n{cases}  </testsuite>\n",
            xml_attr(name),
            codes.len(),
        );
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"gpulint {}\" tests=\"{total}\" failures=\"{failed}\" errors=\"0\">\n{body}</testsuites>\n",
        xml_attr(&report.subject)
    )
}
