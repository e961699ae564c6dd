//! The rules: one file each, with its code, name, explanation, check and tests. This module
//! holds the only table from codes to rules ([`all`]). A code is never reused; a retired code
//! stays in the table.
//!
//! Code ranges: GL0xx image rules (inventory vs target), GL1xx Dockerfile / run-configuration
//! rules, GL2xx host checks.

pub mod spec_list;
pub use spec_list::*;
pub mod context;
pub mod gl001_no_kernel_image;
pub mod gl002_driver_too_old;
pub mod gl003_ptx_jit_needs_newer_driver;
pub mod gl004_driver_libs_in_image;
pub mod gl005_forward_compat_unsupported;
pub mod gl006_conflicting_cuda_runtimes;
pub mod gl007_wheel_tag_mismatch;
pub mod gl008_torch_companion_mismatch;
pub mod gl009_platform_mismatch;
pub mod gl010_require_cuda_unsatisfied;
pub mod loader;
pub mod requirements;
#[cfg(test)]
mod tests_image;
#[cfg(test)]
mod testutil;

use crate::finding::{Finding, Location, Severity};
use crate::inventory::Inventory;
use crate::matrix::Matrix;
use crate::target::Target;
use context::ImageContext;

pub type ImageCheck = fn(&ImageContext, &mut Vec<Finding>);

/// Whether an image rule is judged per target or once per image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    PerTarget,
    Image,
}

/// The image rules, in code order.
pub fn image_rules() -> Vec<(&'static RuleMeta, ImageCheck, Scope)> {
    vec![
        (
            &gl001_no_kernel_image::META,
            gl001_no_kernel_image::check as ImageCheck,
            Scope::PerTarget,
        ),
        (
            &gl002_driver_too_old::META,
            gl002_driver_too_old::check,
            Scope::PerTarget,
        ),
        (
            &gl003_ptx_jit_needs_newer_driver::META,
            gl003_ptx_jit_needs_newer_driver::check,
            Scope::PerTarget,
        ),
        (
            &gl004_driver_libs_in_image::META,
            gl004_driver_libs_in_image::check,
            Scope::Image,
        ),
        (
            &gl005_forward_compat_unsupported::META,
            gl005_forward_compat_unsupported::check,
            Scope::PerTarget,
        ),
        (
            &gl006_conflicting_cuda_runtimes::META,
            gl006_conflicting_cuda_runtimes::check,
            Scope::Image,
        ),
        (
            &gl007_wheel_tag_mismatch::META,
            gl007_wheel_tag_mismatch::check,
            Scope::Image,
        ),
        (
            &gl008_torch_companion_mismatch::META,
            gl008_torch_companion_mismatch::check,
            Scope::Image,
        ),
        (
            &gl009_platform_mismatch::META,
            gl009_platform_mismatch::check,
            Scope::PerTarget,
        ),
        (
            &gl010_require_cuda_unsatisfied::META,
            gl010_require_cuda_unsatisfied::check,
            Scope::PerTarget,
        ),
    ]
}

/// Run every image rule: per-target rules once per target, image rules once (seeing the
/// target only when there is exactly one, so their messages can compare with it).
pub fn check_image(inventory: &Inventory, matrix: &Matrix, targets: &[Target]) -> Vec<Finding> {
    let mut out = Vec::new();
    for (_, check, scope) in image_rules() {
        match scope {
            Scope::PerTarget => {
                for t in targets {
                    let ctx = ImageContext {
                        inventory,
                        matrix,
                        target: Some(t),
                    };
                    check(&ctx, &mut out);
                }
            }
            Scope::Image => {
                let ctx = ImageContext {
                    inventory,
                    matrix,
                    target: if targets.len() == 1 {
                        targets.first()
                    } else {
                        None
                    },
                };
                check(&ctx, &mut out);
            }
        }
    }
    out
}

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
    let mut v: Vec<&'static RuleMeta> = image_rules().into_iter().map(|r| r.0).collect();
    v.extend(spec_list::spec_rules());
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
