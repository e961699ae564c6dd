//! GitHub Actions workflow commands: one `::error|warning|notice file=…,line=…,col=…,title=…::`
//! annotation per finding, escaped as the Actions runner decodes them (`%25`, `%0D`, `%0A` in
//! the message; also `%3A` and `%2C` in property values).

use super::{escape, paths, Place, Report};
use crate::finding::Severity;
use std::fmt::Write;

/// The message part (after `::`).
pub fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A property value (`file=`, `title=`).
pub fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

pub fn render(report: &Report) -> String {
    let mut out = String::new();
    for f in &report.findings {
        let command = match f.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "notice",
        };
        let mut props = Vec::new();
        let mut message = String::new();
        // A file of the repository at its line, named as every format names it; anything
        // else (an image, the host, a command line, a file outside the repository) is named in
        // the message: an annotation on a file that is not in the repository, or on an
        // archive, cannot be shown where it points.
        let place = report.repo_place(f);
        match report.place(f) {
            Place::File { .. } if !paths::is_placeholder(&place.file) => {
                props.push(format!(
                    "file={}",
                    escape_property(&escape::field(&place.file))
                ));
                if place.exact_line {
                    props.push(format!("line={}", place.line));
                    if let Some(c) = place.column {
                        props.push(format!("col={c}"));
                    }
                }
            }
            Place::File { path, line, .. } if place.inner.is_none() => {
                let _ = write!(message, "{}", escape::field(path));
                if let Some(l) = line {
                    let _ = write!(message, ":{l}");
                }
                message.push_str(": ");
            }
            Place::InImage { artifact, .. } => {
                let _ = write!(message, "{} ", escape::field(artifact));
            }
            _ => {}
        }
        if let Some(inner) = &place.inner {
            let _ = write!(message, "{}: ", escape::field(inner));
        }
        props.push(format!(
            "title={}",
            escape_property(&format!(
                "{} {}",
                escape::field(&f.rule),
                escape::field(&f.name)
            ))
        ));
        if let Some(t) = &f.target {
            let _ = write!(message, "[{}] ", escape::field(t));
        }
        message.push_str(&escape::field(&f.message));
        if let Some(h) = &f.help {
            let _ = write!(message, "\nhelp: {}", escape::field(h));
        }
        let _ = writeln!(
            out,
            "::{command} {}::{}",
            props.join(","),
            escape_data(&message)
        );
    }
    out
}
