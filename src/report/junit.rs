//! JUnit XML: one `<testsuite>` per target (the subject when there is none) and one
//! `<testcase>` per checked rule in it, failed exactly when the rule has a finding at or
//! above `--fail-on` for that target (so the report fails when the gate does); findings below
//! it are listed in the test case's `<system-out>`. A check that did not apply is
//! `<skipped/>`. Target-independent findings count under every target, since each target
//! ships the same image or file.

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
    let (mut total, mut failed, mut skipped) = (0usize, 0usize, 0usize);
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
        let mut suite_skipped = 0;
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
            let skipped = report.skipped_rules.iter().find(|(c, _)| c == code);
            if hits.is_empty() {
                match skipped {
                    Some((_, why)) => {
                        suite_skipped += 1;
                        let _ = write!(
                            cases,
                            ">\n      <skipped message=\"{}\"/>\n    </testcase>\n",
                            xml_attr(why)
                        );
                    }
                    None => cases.push_str("/>\n"),
                }
                continue;
            }
            let (failing, below): (Vec<&Finding>, Vec<&Finding>) = hits
                .iter()
                .map(|f| **f)
                .partition(|f| report.fail_on.is_some_and(|t| f.severity >= t));
            cases.push_str(">\n");
            if let Some(first) = failing.first() {
                suite_failed += 1;
                let worst = failing
                    .iter()
                    .map(|f| f.severity)
                    .max()
                    .unwrap_or(first.severity);
                let text: Vec<String> = failing
                    .iter()
                    .map(|f| xml_attr(&describe(report, f)))
                    .collect();
                let _ = writeln!(
                    cases,
                    "      <failure type=\"{worst}\" message=\"{}\">{}</failure>",
                    xml_attr(&format!(
                        "{}: {}",
                        crate::vocab::count(failing.len(), "finding", "findings"),
                        first.message
                    )),
                    text.join("&#10;"),
                );
            }
            if !below.is_empty() {
                let text: Vec<String> = below
                    .iter()
                    .map(|f| xml_attr(&describe(report, f)))
                    .collect();
                let _ = writeln!(
                    cases,
                    "      <system-out>{}</system-out>",
                    text.join("&#10;")
                );
            }
            cases.push_str("    </testcase>\n");
        }
        total += codes.len();
        failed += suite_failed;
        skipped += suite_skipped;
        let _ = write!(
            body,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{suite_failed}\" errors=\"0\" skipped=\"{suite_skipped}\">\n{cases}  </testsuite>\n",
            xml_attr(name),
            codes.len(),
        );
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"gpulint {}\" tests=\"{total}\" failures=\"{failed}\" errors=\"0\" skipped=\"{skipped}\">\n{body}</testsuites>\n",
        xml_attr(&report.subject)
    )
}
