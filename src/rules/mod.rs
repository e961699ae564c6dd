//! The rules: one file each, with its code, name, explanation, check and tests. This module
//! holds the only table from codes to rules ([`all`]). A code is never reused; a retired code
//! stays in the table.
//!
//! Code ranges: GL0xx image rules (inventory vs target), GL1xx Dockerfile / run-configuration
//! rules, GL2xx host checks.

use crate::finding::{Finding, Location, Severity};

/// Static description of a rule; the single source for `gpulint explain`, SARIF and docs.
#[derive(Debug)]
pub struct RuleMeta {
    pub code: &'static str,
    pub name: &'static str,
    pub default_severity: Severity,
    /// One line.
    pub summary: &'static str,
    /// What, why, example, fix — plain text, shown by `gpulint explain CODE`.
    pub explanation: &'static str,
}

impl RuleMeta {
    /// A finding of this rule at its default severity.
    pub fn finding(&'static self, message: impl Into<String>) -> Finding {
        Finding {
            rule: self.code.to_string(),
            name: self.name.to_string(),
            severity: self.default_severity,
            message: message.into(),
            target: None,
            location: None,
            help: None,
        }
    }
}

impl Finding {
    pub fn with_target(mut self, target: impl Into<String>) -> Self {
        self.target = Some(target.into());
        self
    }
    pub fn with_location(mut self, loc: Location) -> Self {
        self.location = Some(loc);
        self
    }
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
    pub fn with_severity(mut self, s: Severity) -> Self {
        self.severity = s;
        self
    }
}

/// Every rule gpulint knows, sorted by code.
pub fn all() -> Vec<&'static RuleMeta> {
    let mut v: Vec<&'static RuleMeta> = Vec::new();
    v.extend(crate::host::rule_metas());
    v.sort_by_key(|m| m.code);
    v
}

/// Look a rule up by code (`GL001`, case-insensitive) or name (`no-kernel-image`).
pub fn find(code_or_name: &str) -> Option<&'static RuleMeta> {
    all()
        .into_iter()
        .find(|m| m.code.eq_ignore_ascii_case(code_or_name) || m.name == code_or_name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_names_are_unique_and_well_formed() {
        let rules = all();
        let mut codes: Vec<_> = rules.iter().map(|r| r.code).collect();
        let mut names: Vec<_> = rules.iter().map(|r| r.name).collect();
        codes.sort();
        codes.dedup();
        names.sort();
        names.dedup();
        assert_eq!(codes.len(), rules.len(), "duplicate rule code");
        assert_eq!(names.len(), rules.len(), "duplicate rule name");
        for r in rules {
            assert!(r.code.starts_with("GL") && r.code.len() == 5, "{}", r.code);
            assert!(r
                .name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c == '-' || c.is_ascii_digit()));
            assert!(
                !r.explanation.trim().is_empty(),
                "{} has no explanation",
                r.code
            );
        }
    }
}
