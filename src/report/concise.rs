//! One line per finding, `file:line:col: GL001 [target] message`: clickable in editors and
//! terminals, and greppable. In-image findings start with the in-image path.

use super::{escape, Place, Report};
use std::fmt::Write;

pub fn render(report: &Report) -> String {
    let mut out = String::new();
    for f in &report.findings {
        let place = match report.place(f) {
            Place::File { path, line, column } => {
                let mut s = escape::field(path).into_owned();
                if let Some(l) = line {
                    let _ = write!(s, ":{l}");
                    if let Some(c) = column {
                        let _ = write!(s, ":{c}");
                    }
                }
                s
            }
            Place::InImage { path, .. } => {
                format!("/{}", escape::field(path.trim_start_matches('/')))
            }
            Place::Subject(s) => escape::field(s).into_owned(),
        };
        let target = f
            .target
            .as_deref()
            .map(|t| format!(" [{}]", escape::field(t)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{place}: {} {}{target} {}",
            escape::field(&f.rule),
            f.severity,
            escape::field(&f.message)
        );
    }
    out
}
