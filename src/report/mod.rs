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
pub mod paths;
pub mod sarif;
pub mod sweep;
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
    /// Text printed after the findings in text mode, before the counts (the closing "What
    /// would make it work" block of an image judged against a fleet).
    #[serde(skip)]
    pub epilogue: String,
    /// The artifact that in-image paths belong to (the image reference); None for commands
    /// that check files on disk.
    #[serde(skip)]
    pub artifact: Option<String>,
    /// The repository file (or `.gpulint/…` placeholder, see [`paths`]) that stands for the
    /// artifact in formats that need a file: the image archive, `.gpulint/host`.
    #[serde(skip)]
    pub artifact_file: Option<String>,
    /// The rule codes this run checked, for reporters that also list what passed (JUnit).
    #[serde(skip)]
    pub checked_rules: Vec<String>,
    /// Checks that did not apply (rule code, why), reported as skipped, not as passed.
    #[serde(skip)]
    pub skipped_rules: Vec<(String, String)>,
    /// `--fail-on`: findings from this severity fail the run (None: never), and so fail
    /// their JUnit test case; findings below it are reported without failing it.
    #[serde(skip)]
    pub fail_on: Option<Severity>,
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

/// A finding's place in the repository: [`Report::repo_place`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoPlace {
    /// Relative to the repository root, `/`-separated; never absolute.
    pub file: String,
    /// At least 1: line 1 where the input has no lines or the line is unknown.
    pub line: u32,
    /// Whether `line` is the finding's own line (else a stand-in 1).
    pub exact_line: bool,
    pub column: Option<u32>,
    /// The path inside the image or on the host the finding is about.
    pub inner: Option<String>,
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
            epilogue: String::new(),
            artifact: None,
            artifact_file: None,
            checked_rules: Vec::new(),
            skipped_rules: Vec::new(),
            fail_on: Some(Severity::Error),
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

    /// Where a finding is for the formats that need a repository file and a line (SARIF,
    /// GitLab, Checkstyle, GitHub): one spelling for every format. A file in the repository is
    /// named relative to its root; what has no file there (an image, the host, a command
    /// line, a file outside the repository) by the artifact's file or a `.gpulint/…`
    /// placeholder at line 1, with the path inside it kept as `inner`.
    pub fn repo_place(&self, f: &Finding) -> RepoPlace {
        let artifact_file = || {
            self.artifact_file.clone().unwrap_or_else(|| {
                paths::placeholder("subject", self.artifact.as_deref().unwrap_or(&self.subject))
            })
        };
        let at_line_1 = |file: String, inner: Option<&str>| RepoPlace {
            file,
            line: 1,
            exact_line: false,
            column: None,
            inner: inner.map(|p| format!("/{}", p.trim_start_matches('/'))),
        };
        match self.place(f) {
            Place::File { path, line, column } => {
                let file =
                    if let Some(name) = path.strip_prefix('<').and_then(|p| p.strip_suffix('>')) {
                        // `<command line>`, `<stdin>`: no file holds the input.
                        paths::placeholder("input", name)
                    } else if path.starts_with('/') || path.split('/').any(|s| s == "..") {
                        // Outside the repository (paths inside it are relative by now): the
                        // host's files belong to the host's placeholder, others to their own.
                        if self.artifact_file.is_some() && path.starts_with('/') {
                            return at_line_1(artifact_file(), Some(path));
                        }
                        paths::placeholder("external", path)
                    } else {
                        path.to_string()
                    };
                let known = line.filter(|l| *l > 0);
                RepoPlace {
                    file,
                    line: known.unwrap_or(1),
                    exact_line: known.is_some(),
                    column: column.filter(|c| *c > 0 && known.is_some()),
                    // `--scan-images`: an image finding at the configuration line naming the
                    // image keeps the path inside the image.
                    inner: f
                        .location
                        .as_ref()
                        .and_then(|l| l.path.as_deref())
                        .map(|p| format!("/{}", p.trim_start_matches('/'))),
                }
            }
            Place::InImage { path, .. } => at_line_1(artifact_file(), Some(path)),
            Place::Subject(_) => at_line_1(artifact_file(), None),
        }
    }

    /// A stable identity for a finding that survives edits elsewhere in the file: rule,
    /// target, file or in-image path and message, not the line number. Hex SHA-256, 32 digits.
    /// Image findings are identified by the image's repository spelling, not the absolute
    /// path it was read from, so the identity does not depend on the checkout directory.
    pub fn fingerprint(&self, f: &Finding) -> String {
        let place = match self.place(f) {
            Place::File { path, .. } => format!("file\0{path}"),
            Place::InImage { path, .. } => {
                format!("image\0{}\0{path}", self.repo_place(f).file)
            }
            Place::Subject(_) => format!("subject\0{}", self.repo_place(f).file),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Location;

    fn finding(loc: Location) -> Finding {
        crate::rules::image::gl000_unreadable_input::META
            .finding("m")
            .with_location(loc)
    }

    /// Every finding has a repository file and a line ≥ 1 for the CI formats: a file at its
    /// line, an in-image path under the image's file, a host file under `.gpulint/host`, a
    /// command line and a file outside the repository under their placeholders.
    #[test]
    fn every_finding_has_a_repository_file_and_a_line() {
        let mut image = Report::new("image x");
        image.artifact = Some("docker-archive:build/app.tar".into());
        image.artifact_file = Some("build/app.tar".into());
        let p = image.repo_place(&finding(Location::in_image(None, "/usr/lib/libcuda.so.1")));
        assert_eq!(
            (p.file.as_str(), p.line, p.exact_line, p.inner.as_deref()),
            ("build/app.tar", 1, false, Some("/usr/lib/libcuda.so.1"))
        );

        let mut host = Report::new("host");
        host.artifact_file = Some(".gpulint/host".into());
        let at_host_file = finding(Location {
            file: Some("/proc/driver/nvidia/version".into()),
            ..Default::default()
        });
        let p = host.repo_place(&at_host_file);
        assert_eq!(
            (p.file.as_str(), p.line, p.inner.as_deref()),
            (".gpulint/host", 1, Some("/proc/driver/nvidia/version"))
        );

        let spec = Report::new("run lines");
        let p = spec.repo_place(&finding(Location::in_file("<command line>", 1, 17)));
        assert_eq!(
            (p.file.as_str(), p.line, p.column),
            (".gpulint/input/command_line", 1, Some(17))
        );
        let p = spec.repo_place(&finding(Location::in_file("/etc/app/Dockerfile", 3, 1)));
        assert_eq!(
            (p.file.as_str(), p.line, p.exact_line),
            (".gpulint/external/_etc_app_Dockerfile", 3, true)
        );
        let p = spec.repo_place(&finding(Location::in_file("../other/Dockerfile", 2, 1)));
        assert_eq!(p.file, ".gpulint/external/.._other_Dockerfile");
        let p = spec.repo_place(&finding(Location::in_file("deploy/job.yaml", 9, 5)));
        assert_eq!(
            (p.file.as_str(), p.line, p.column, p.exact_line),
            ("deploy/job.yaml", 9, Some(5), true)
        );
        // A finding with no location at all: the subject's placeholder, line 1.
        let p = spec.repo_place(&crate::rules::image::gl000_unreadable_input::META.finding("m"));
        assert_eq!((p.file.as_str(), p.line), (".gpulint/subject/run_lines", 1));
    }
}
