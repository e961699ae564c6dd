//! The rules: one file each, with its code, name, explanation, check and tests. This file
//! holds the only table from codes to rules. A code is never reused.

use crate::finding::Severity;

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
