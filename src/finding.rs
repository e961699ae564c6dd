//! A finding: one problem a rule saw, where it saw it, and for which target.
//! Reporters read only `[Finding]` and the rule list.

use serde::{Deserialize, Serialize};
use std::fmt;

pub use crate::rule_meta::Severity;
use crate::rule_meta::{Code, RuleMeta};

/// `--fail-on` / `fail-on`: the severity from which findings fail the run, or `none`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailOn {
    Never,
    At(Severity),
}

impl FailOn {
    /// The threshold; `None` never fails.
    pub fn threshold(self) -> Option<Severity> {
        match self {
            FailOn::Never => None,
            FailOn::At(s) => Some(s),
        }
    }
}

impl std::str::FromStr for FailOn {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "none" | "never" => Ok(FailOn::Never),
            other => other.parse().map(FailOn::At).map_err(|_| {
                format!("unknown severity {s:?} (expected error, warning, info or none)")
            }),
        }
    }
}

/// Where a finding points: inside an image (layer + path) or in a file on disk (file:line:col).
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Location {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layer: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
}

impl Location {
    /// `path` is shown as given: an [`crate::vocab::ImagePath`] shows as `/usr/lib/x`.
    pub fn in_image(layer: Option<String>, path: impl std::fmt::Display) -> Self {
        Location {
            layer,
            path: Some(path.to_string()),
            ..Default::default()
        }
    }
    pub fn in_file(file: impl Into<String>, line: u32, column: u32) -> Self {
        Location {
            file: Some(file.into()),
            line: Some(line),
            column: Some(column),
            ..Default::default()
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{file}")?;
            if let Some(l) = self.line {
                write!(f, ":{l}")?;
                if let Some(c) = self.column {
                    write!(f, ":{c}")?;
                }
            }
            return Ok(());
        }
        if let Some(p) = &self.path {
            write!(f, "/{}", p.trim_start_matches('/'))?;
        }
        if let Some(layer) = &self.layer {
            let short = layer.strip_prefix("sha256:").unwrap_or(layer);
            write!(f, " (layer {})", &short[..short.len().min(12)])?;
        }
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Stable rule code, e.g. `GL001`.
    pub rule: Code,
    /// Kebab-case rule name, e.g. `no-kernel-image`.
    pub name: String,
    pub severity: Severity,
    pub message: String,
    /// The target (host, GPU, fleet pool) the finding is about; None when target-independent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    /// How to fix it, one or two sentences.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
    /// Set when the same problem may repeat across the services of one compose file or the
    /// containers of one manifest: findings of one key become one finding naming every
    /// member ([`merge_repeats`]), after suppressions, so a pragma silences only its own.
    /// Concrete changes that would remove the finding, computed from the tables; `--fix`
    /// applies the safe edits among them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fixes: Vec<crate::fix::Fix>,
    #[serde(skip)]
    pub repeat: Option<Repeat>,
    /// The edits a run-configuration rule plans for its fix, made exact once the file's text
    /// is at hand ([`crate::fix::runconfig_edit::attach`]).
    #[serde(skip)]
    pub planned: Option<crate::fix::plan::Plan>,
}

/// Which group of repeats a finding belongs to, and the member (service, container) it is of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repeat {
    pub key: String,
    pub member: String,
}

/// One finding per repeat group: the first (its member comes first in the file) keeps its
/// place, the others are named in its message with their lines; the same finding twice at
/// one place is one. Findings with no group pass unchanged, in order.
pub fn merge_repeats(findings: Vec<Finding>) -> Vec<Finding> {
    type Kept = (Finding, Vec<(String, u32)>);
    let mut kept: Vec<Kept> = Vec::new();
    for f in findings {
        let line = f.location.as_ref().and_then(|l| l.line).unwrap_or(0);
        let same_group = |k: &Kept| match (&k.0.repeat, &f.repeat) {
            (Some(a), Some(b)) => a.key == b.key,
            _ => false,
        };
        match kept.iter_mut().find(|k| same_group(k)) {
            Some((first, others)) => {
                merge_fix_edits(&mut first.fixes, &f.fixes);
                let first_line = first.location.as_ref().and_then(|l| l.line);
                if first_line != Some(line) && !others.iter().any(|(_, l)| *l == line) {
                    let member = f.repeat.map(|r| r.member).unwrap_or_default();
                    others.push((member, line));
                }
            }
            None => kept.push((f, Vec::new())),
        }
    }
    kept.into_iter()
        .map(|(mut f, others)| {
            if !others.is_empty() {
                for fix in &mut f.fixes {
                    fix.edits.sort_by(|a, b| {
                        (a.start, a.end, &a.new_text).cmp(&(b.start, b.end, &b.new_text))
                    });
                    fix.edits.dedup();
                }
                let names: Vec<String> = others
                    .iter()
                    .map(|(n, l)| format!("`{n}` (line {l})"))
                    .collect();
                let which = if others.len() > 1 {
                    "these"
                } else {
                    "this one"
                };
                f.message
                    .push_str(&format!(" (also {which}: {})", names.join(", ")));
            }
            f
        })
        .collect()
}

/// The fixes of a finding that now also stands for `other`: a fix that edits the file must
/// edit every member, so the member's edits of the same fix join it (as safe as the less safe
/// of the two); where the member has no such edits, the fix cannot remove the merged finding
/// and becomes advice.
fn merge_fix_edits(fixes: &mut [crate::fix::Fix], other: &[crate::fix::Fix]) {
    for fix in fixes.iter_mut().filter(|x| !x.edits.is_empty()) {
        let same = other.iter().find(|o| {
            o.kind == fix.kind && o.replacement == fix.replacement && !o.edits.is_empty()
        });
        match same {
            Some(o) => {
                // Duplicates go once the group is complete ([`merge_repeats`]): checking each
                // push would be quadratic in the members.
                fix.edits.extend(o.edits.iter().cloned());
                fix.applicability =
                    crate::fix::plan::least_safe(fix.applicability, o.applicability);
            }
            None => {
                fix.edits.clear();
                fix.applicability = crate::fix::Applicability::Manual;
            }
        }
    }
}

impl Finding {
    /// Deterministic order for output: target, location, rule, message.
    pub fn sort_key(&self) -> impl Ord + '_ {
        (
            self.target.clone(),
            self.location.clone(),
            self.rule,
            self.message.clone(),
        )
    }
}

impl RuleMeta {
    /// A finding of this rule at its default severity.
    pub fn finding(&'static self, message: impl Into<String>) -> Finding {
        Finding {
            rule: self.code,
            name: self.name.to_string(),
            severity: self.default_severity,
            message: message.into(),
            target: None,
            location: None,
            help: None,
            fixes: Vec::new(),
            repeat: None,
            planned: None,
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
    pub fn with_fix(mut self, fix: crate::fix::Fix) -> Self {
        self.fixes.push(fix);
        self
    }
    /// A run-configuration fix with the plan of its edits: advice (`manual`) until the plan
    /// is made into edits of the file's text, which then take the plan's applicability.
    pub fn with_planned_fix(
        mut self,
        mut fix: crate::fix::Fix,
        plan: Option<crate::fix::plan::Plan>,
    ) -> Self {
        fix.applicability = crate::fix::Applicability::Manual;
        self.fixes.push(fix);
        self.planned = plan;
        self
    }
    pub fn with_severity(mut self, s: Severity) -> Self {
        self.severity = s;
        self
    }
}
