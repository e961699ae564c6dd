//! The vocabulary every rule, finding and reporter shares: a rule [`Code`], its [`Severity`]
//! and its static description [`RuleMeta`]. This module sits on the bottom floor: it depends on
//! nothing else in the crate, so `finding`, `rules`, `config`, `suppress` and the reporters can
//! all use it without cycles.

use serde::{Deserialize, Serialize, Serializer};
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        })
    }
}

impl std::str::FromStr for Severity {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "info" | "note" => Ok(Severity::Info),
            "warning" | "warn" => Ok(Severity::Warning),
            "error" => Ok(Severity::Error),
            _ => Err(format!(
                "unknown severity {s:?} (expected error, warning or info)"
            )),
        }
    }
}

/// A rule code: `GL` and three digits. Fixed width, so string order is code order. Built
/// only by [`Code::new`] in a rule's `META` (checked at compile time there) or by
/// [`Code::parse`], which hands out the registry's own `&'static str`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Code(&'static str);

impl Code {
    /// A code from a literal; in a `static`/`const` a malformed code fails the build.
    pub const fn new(code: &'static str) -> Code {
        assert!(
            Code::well_formed(code),
            "a rule code is GL and three digits"
        );
        Code(code)
    }

    const fn well_formed(s: &str) -> bool {
        let b = s.as_bytes();
        b.len() == 5
            && b[0] == b'G'
            && b[1] == b'L'
            && b[2].is_ascii_digit()
            && b[3].is_ascii_digit()
            && b[4].is_ascii_digit()
    }

    /// `GL001` (any case) among `known` codes; None when malformed or unknown.
    pub fn parse(s: &str, known: impl IntoIterator<Item = Code>) -> Option<Code> {
        known.into_iter().find(|c| c.0.eq_ignore_ascii_case(s))
    }

    pub fn as_str(self) -> &'static str {
        self.0
    }

    /// The number after `GL` (1 for GL001); the range tells the rule family.
    pub fn number(self) -> u16 {
        self.0
            .get(2..)
            .and_then(|d| d.parse().ok())
            .unwrap_or_default()
    }
}

impl std::ops::Deref for Code {
    type Target = str;
    fn deref(&self) -> &str {
        self.0
    }
}

impl AsRef<str> for Code {
    fn as_ref(&self) -> &str {
        self.0
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl PartialEq<str> for Code {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for Code {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for Code {
    fn eq(&self, other: &String) -> bool {
        self.0 == other.as_str()
    }
}

impl Serialize for Code {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0)
    }
}

/// Static description of a rule; the single source for `gpulint explain`, SARIF and the
/// generated pages under `docs/rules/`.
#[derive(Debug)]
pub struct RuleMeta {
    pub code: Code,
    pub name: &'static str,
    pub default_severity: Severity,
    /// The other severities the rule reports in some cases (its doc says when), so that what
    /// `gpulint rules` shows is every severity it emits. A finding at a severity that is
    /// neither is a bug (checked in debug builds by the suppression pass, and by a test over
    /// every rule's source).
    pub other_severities: &'static [Severity],
    /// One line.
    pub summary: &'static str,
    pub doc: RuleDoc,
}

/// A rule's documentation in parts, so every output can lay it out its own way and a test can
/// require each part. Text is plain prose with `inline code`; paragraphs are split by a blank
/// line (`\n\n`).
#[derive(Debug)]
pub struct RuleDoc {
    /// What the rule looks at and what it reports.
    pub what: &'static str,
    /// Why that breaks (or risks breaking) a GPU workload: the mechanism and the error seen.
    pub why: &'static str,
    /// A concrete case: an input (a Dockerfile line, an image situation, a host state) and,
    /// where the rule has one, the message gpulint prints for it.
    pub example: &'static str,
    /// What to change.
    pub fix: &'static str,
    /// Published documents the facts come from (URLs).
    pub sources: &'static [&'static str],
}

/// Where the generated rule pages live in the repository, and the public copy of it that
/// SARIF's `helpUri` points to.
pub const DOCS_DIR: &str = "docs/rules";
const REPO_BLOB: &str = "https://github.com/gpulint/gpulint/blob/main";

impl RuleMeta {
    /// Whether the rule may report a finding at `s` (before configuration overrides).
    pub fn emits(&self, s: Severity) -> bool {
        s == self.default_severity || self.other_severities.contains(&s)
    }

    /// `warning`, or `warning (also info, error)` when the severity depends on the case.
    pub fn severity_label(&self) -> String {
        if self.other_severities.is_empty() {
            return self.default_severity.to_string();
        }
        let mut others: Vec<Severity> = self.other_severities.to_vec();
        others.sort_by(|a, b| b.cmp(a));
        let others: Vec<String> = others.iter().map(|s| s.to_string()).collect();
        format!("{} (also {})", self.default_severity, others.join(", "))
    }

    /// The rule's page relative to the repository root: `docs/rules/GL001.md`.
    pub fn doc_path(&self) -> String {
        format!("{DOCS_DIR}/{}.md", self.code)
    }

    /// The rule's page on the project's public repository (SARIF `helpUri`).
    pub fn help_uri(&self) -> String {
        format!("{REPO_BLOB}/{}", self.doc_path())
    }

    /// The documentation as plain text with `What:` / `Why:` / … headings, as `gpulint explain`
    /// prints it below the title, each part wrapped to `width` columns.
    pub fn explanation(&self, width: usize) -> String {
        let d = &self.doc;
        let mut out = String::new();
        for (head, body) in [
            ("What", d.what),
            ("Why", d.why),
            ("Example", d.example),
            ("Fix", d.fix),
        ] {
            out.push_str(head);
            out.push_str(":\n");
            for (i, para) in body.split("\n\n").enumerate() {
                if i > 0 {
                    out.push('\n');
                }
                out.push_str(&wrap(para, width, "  "));
            }
            out.push('\n');
        }
        out.push_str("Sources:\n");
        for s in d.sources {
            out.push_str("  ");
            out.push_str(s);
            out.push('\n');
        }
        out
    }
}

/// Word-wrap `text` to `width` columns, each line starting with `indent`; a word longer than
/// the width (a URL) stays whole on its own line.
pub fn wrap(text: &str, width: usize, indent: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && indent.len() + line.len() + 1 + word.len() > width {
            out.push_str(indent);
            out.push_str(&line);
            out.push('\n');
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        out.push_str(indent);
        out.push_str(&line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_parse_display_and_order() {
        const A: Code = Code::new("GL001");
        const B: Code = Code::new("GL010");
        const C: Code = Code::new("GL201");
        assert_eq!(A.to_string(), "GL001");
        assert_eq!(C.number(), 201);
        assert!(A < B && B < C);
        assert_eq!(Code::parse("gl010", [A, B, C]), Some(B));
        assert_eq!(Code::parse("GL011", [A, B, C]), None);
        assert!(A == "GL001");
        assert_eq!(serde_json::to_string(&A).unwrap(), "\"GL001\"");
        assert!(!Code::well_formed("GL01"));
        assert!(!Code::well_formed("XL001"));
        assert!(!Code::well_formed("GL0a1"));
    }
}
