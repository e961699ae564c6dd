//! Reporters: render a sorted list of findings (and, for images, the requirements summary)
//! as text, JSON or SARIF. Only reporters write to stdout.

pub mod json;
pub mod sarif;
pub mod text;

use crate::finding::{Finding, Severity};
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum Format {
    #[default]
    Text,
    Json,
    Sarif,
}

/// Everything a reporter may show for one run of a command.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// What was checked: an image reference, a file, a host.
    pub subject: String,
    /// The targets findings refer to (names), in order.
    pub targets: Vec<String>,
    /// Free-form structured extras (the image requirements, per-pool verdicts).
    #[serde(skip_serializing_if = "serde_json::Value::is_null")]
    pub details: serde_json::Value,
    /// Text lines printed before the findings in text mode (requirements summary).
    #[serde(skip)]
    pub preamble: Vec<String>,
    pub findings: Vec<Finding>,
}

impl Report {
    pub fn new(subject: impl Into<String>) -> Self {
        Report {
            subject: subject.into(),
            targets: Vec::new(),
            details: serde_json::Value::Null,
            preamble: Vec::new(),
            findings: Vec::new(),
        }
    }

    /// Sort findings deterministically and drop exact duplicates.
    pub fn normalize(&mut self) {
        self.findings
            .sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
        self.findings.dedup();
    }

    pub fn count(&self, s: Severity) -> usize {
        self.findings.iter().filter(|f| f.severity == s).count()
    }

    /// True when some finding is at or above `fail_on`.
    pub fn fails(&self, fail_on: Severity) -> bool {
        self.findings.iter().any(|f| f.severity >= fail_on)
    }

    pub fn render(&self, format: Format, color: bool) -> String {
        match format {
            Format::Text => text::render(self, color),
            Format::Json => json::render(self),
            Format::Sarif => sarif::render(self),
        }
    }
}

/// Colors only on a terminal and when NO_COLOR is unset (https://no-color.org).
pub fn use_color() -> bool {
    use std::io::IsTerminal;
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stdout().is_terminal()
}

/// Text from images and files with control characters escaped (`\x1b`, `\n`, `\r`, …), so a
/// tar name or a Dockerfile line can neither colour the terminal nor start a forged report
/// line ("ok: no findings"). Printable text, tabs included, is unchanged.
pub fn escape_control(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(|c| c.is_control() && c != '\t') {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\t' => out.push(c),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {
                use std::fmt::Write;
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}
