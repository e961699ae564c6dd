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

/// Static description of a rule; the single source for `gpulint explain`, SARIF and docs.
#[derive(Debug)]
pub struct RuleMeta {
    pub code: Code,
    pub name: &'static str,
    pub default_severity: Severity,
    /// One line.
    pub summary: &'static str,
    /// What, why, example, fix — plain text, shown by `gpulint explain CODE`.
    pub explanation: &'static str,
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
