//! Reporters: render a sorted list of findings (and, for images, the requirements summary)
//! in the formats CI systems and editors read. Only reporters write to stdout (or the
//! `--output-file`); every string taken from input goes through [`escape`] first.
//!
//! | format | consumer |
//! |---|---|
//! | `text` | people; grouped by target, colour only on a terminal |
//! | `concise` | editors and grep: `file:line:col: GL001 message` |
//! | `json` | scripts and policy engines; the same schema for every command |
//! | `sarif` | GitHub code scanning and other SARIF 2.1.0 viewers |
//! | `github` | GitHub Actions workflow-command annotations |
//! | `gitlab` | GitLab Code Quality report (`artifacts:reports:codequality`) |
//! | `junit` | test-report viewers: one testcase per rule × target |
//! | `checkstyle` | Jenkins warnings-ng, reviewdog and other checkstyle readers |

pub mod checkstyle;
pub mod concise;
pub use crate::vocab::escape;
pub mod github;
pub mod gitlab;
pub mod json;
pub mod junit;
pub mod sarif;
pub mod text;

use crate::finding::{Finding, Severity};
use serde::Serialize;
use sha2::{Digest, Sha256};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum Format {
    #[default]
    Text,
    Concise,
    Json,
    Sarif,
    Github,
    Gitlab,
    Junit,
    Checkstyle,
}

/// `--color`: auto = only on a terminal, honouring `NO_COLOR` and `FORCE_COLOR`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

/// How a reporter presents the report: colour, and `-q` (findings only).
#[derive(Debug, Clone, Copy, Default)]
pub struct Style {
    pub color: bool,
    pub quiet: bool,
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
    /// The artifact that in-image paths belong to (the image reference); None for commands
    /// that check files on disk.
    #[serde(skip)]
    pub artifact: Option<String>,
    /// The rule codes this run checked, for reporters that also list what passed (JUnit).
    #[serde(skip)]
    pub checked_rules: Vec<String>,
    /// What was checked with what, for the text summary line ("checked 3 files with
    /// .gpulint.toml", "no files found"); None: counts only.
    #[serde(skip)]
    pub scope: Option<String>,
    pub findings: Vec<Finding>,
}

/// Where a finding points, resolved for reporters that need one kind of location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place<'a> {
    /// A file on disk (relative to the working directory when it is below it).
    File {
        path: &'a str,
        line: Option<u32>,
        column: Option<u32>,
    },
    /// A path inside an image (the artifact).
    InImage {
        artifact: &'a str,
        path: &'a str,
        layer: Option<&'a str>,
    },
    /// The whole subject (an image with no path, a host).
    Subject(&'a str),
}

impl Place<'_> {
    /// The file or artifact a reporter files the finding under.
    pub fn file_name(&self) -> &str {
        match self {
            Place::File { path, .. } => path,
            Place::InImage { artifact, .. } => artifact,
            Place::Subject(s) => s,
        }
    }
}

impl Report {
    pub fn new(subject: impl Into<String>) -> Self {
        Report {
            subject: subject.into(),
            targets: Vec::new(),
            details: serde_json::Value::Null,
            preamble: Vec::new(),
            artifact: None,
            checked_rules: Vec::new(),
            scope: None,
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

    /// True when some finding is at or above `fail_on`; `None` (`--fail-on none`) never fails.
    pub fn fails(&self, fail_on: Option<Severity>) -> bool {
        fail_on.is_some_and(|t| self.findings.iter().any(|f| f.severity >= t))
    }

    /// The location of a finding as one of the three kinds reporters distinguish.
    pub fn place<'a>(&'a self, f: &'a Finding) -> Place<'a> {
        match &f.location {
            Some(l) if l.file.is_some() => Place::File {
                path: l.file.as_deref().unwrap_or_default(),
                line: l.line,
                column: l.column,
            },
            Some(l) if l.path.is_some() => Place::InImage {
                artifact: self.artifact.as_deref().unwrap_or(&self.subject),
                path: l.path.as_deref().unwrap_or_default(),
                layer: l.layer.as_deref(),
            },
            _ => Place::Subject(self.artifact.as_deref().unwrap_or(&self.subject)),
        }
    }

    /// A stable identity for a finding that survives edits elsewhere in the file: rule,
    /// target, file or in-image path and message, not the line number. Hex SHA-256, 32 digits.
    pub fn fingerprint(&self, f: &Finding) -> String {
        let place = match self.place(f) {
            Place::File { path, .. } => format!("file\0{path}"),
            Place::InImage { artifact, path, .. } => format!("image\0{artifact}\0{path}"),
            Place::Subject(s) => format!("subject\0{s}"),
        };
        let mut h = Sha256::new();
        for part in [
            f.rule.as_str(),
            f.target.as_deref().unwrap_or(""),
            &place,
            &f.message,
        ] {
            h.update(part.as_bytes());
            h.update([0u8]);
        }
        hex::encode(&h.finalize()[..16])
    }

    pub fn render(&self, format: Format, style: Style) -> String {
        match format {
            Format::Text => text::render(self, style),
            Format::Concise => concise::render(self),
            Format::Json => json::render(self),
            Format::Sarif => sarif::render(self),
            Format::Github => github::render(self),
            Format::Gitlab => gitlab::render(self),
            Format::Junit => junit::render(self),
            Format::Checkstyle => checkstyle::render(self),
        }
    }
}

/// Whether to colour: `--color always|never` decide; on `auto`, a non-empty `NO_COLOR`
/// (https://no-color.org) turns colour off, a non-empty `FORCE_COLOR` other than `0` turns it
/// on, else colour only when the output is a terminal.
pub fn use_color(choice: ColorChoice, to_terminal: bool) -> bool {
    let set = |k: &str| std::env::var_os(k).is_some_and(|v| !v.is_empty());
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto if set("NO_COLOR") => false,
        ColorChoice::Auto if set("FORCE_COLOR") => {
            std::env::var_os("FORCE_COLOR").is_some_and(|v| v != "0" && v != "false")
        }
        ColorChoice::Auto => to_terminal,
    }
}

/// Whether stdout is a terminal.
pub fn stdout_is_terminal() -> bool {
    use std::io::IsTerminal;
    std::io::stdout().is_terminal()
}
