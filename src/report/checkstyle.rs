//! Checkstyle XML (`<checkstyle><file name><error line column severity message source>`), as
//! Jenkins warnings-ng and reviewdog read it. Findings are grouped by file, named as in every
//! format ([`Report::repo_place`]): image findings under the image's repository file or
//! `.gpulint/image/…` placeholder at line 1, with the in-image path in the message.

use super::{escape::xml_attr, Report};
use crate::finding::Finding;
use std::collections::BTreeMap;
use std::fmt::Write;

pub fn render(report: &Report) -> String {
    let mut files: BTreeMap<String, Vec<&Finding>> = BTreeMap::new();
    for f in &report.findings {
        files.entry(report.repo_place(f).file).or_default().push(f);
    }
    let mut out =
        String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<checkstyle version=\"4.3\">\n");
    for (file, fs) in files {
        let _ = writeln!(out, "  <file name=\"{}\">", xml_attr(&file));
        for f in fs {
            let place = report.repo_place(f);
            let (line, col) = (place.line, place.column);
            let prefix = place.inner.map(|p| format!("{p}: ")).unwrap_or_default();
            let target = f
                .target
                .as_deref()
                .map(|t| format!("[{t}] "))
                .unwrap_or_default();
            let col = col.map(|c| format!(" column=\"{c}\"")).unwrap_or_default();
            let _ = writeln!(
                out,
                "    <error line=\"{line}\"{col} severity=\"{}\" message=\"{}\" source=\"gpulint.{}\"/>",
                f.severity,
                xml_attr(&format!("{prefix}{target}{}", f.message)),
                xml_attr(&f.rule),
            );
        }
        out.push_str("  </file>\n");
    }
    out.push_str("</checkstyle>\n");
    out
}
