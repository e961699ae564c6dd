//! The rules, one file each (code, name, documentation, check, tests), in one folder per family:
//!
//! - [`image`] GL0xx: a squashed image inventory judged against targets;
//! - [`runconfig`] GL1xx: Dockerfiles, compose files, Kubernetes manifests, run lines;
//! - [`host`] GL2xx: diagnosis of the machine itself (`gpulint host --check`).
//!
//! [`RULES`] is the only table from codes to rules: every rule's [`RuleMeta`] and what runs it
//! ([`Check`]). `gpulint rules`, `explain`, SARIF, configuration validation and the three
//! runners all read it. Adding a rule = one file in its family's folder, its `pub mod` line in
//! the family's `mod.rs`, and its line in [`RULES`] here. A code is never reused; a retired
//! code stays in the table.

pub mod docs;
pub mod host;
pub mod image;
pub mod runconfig;

pub use crate::rule_meta::{Code, RuleMeta};
// Helper modules of the image rules, at the paths the rest of the crate has used.
pub use image::{context, loader, requirements};
pub use image::{ImageCheck, Scope};
pub use runconfig::SpecCheck;

use crate::finding::Finding;
use crate::gpu_target::Target;
use crate::inventory::Inventory;
use crate::matrix::Facts;
use host::{HostCheck, RunsOn};
use image::ImageContext;

/// What runs a rule.
#[derive(Clone, Copy)]
pub enum Check {
    /// No check of its own: reported by whatever reads the input (GL000 an unreadable image
    /// part, GL100 a spec file that does not parse).
    Input,
    /// No check of its own: reported by the suppression pass (GL199).
    Suppression,
    /// No check of its own: reported by `--baseline` for entries left over (GL198).
    Baseline,
    /// No check of its own: reported where the fleet comes from the cluster's nodes
    /// (`--fleet-from-nodes`): pools of unknown GPUs, workloads matched to pools.
    Fleet,
    /// An image check, per target or once per image.
    Image(ImageCheck, Scope),
    /// A Dockerfile / run-configuration check.
    Spec(SpecCheck),
    /// A host check: where it applies (the others get "not applicable") and which checks'
    /// symptoms its problem explains (those are folded under it as evidence; see
    /// [`host::fold_consequences`]).
    Host {
        check: HostCheck,
        runs_on: RunsOn,
        explains: &'static [Code],
    },
}

/// One row of the rule table.
pub struct Rule {
    pub meta: &'static RuleMeta,
    pub check: Check,
}

const fn image(meta: &'static RuleMeta, check: ImageCheck, scope: Scope) -> Rule {
    Rule {
        meta,
        check: Check::Image(check, scope),
    }
}

const fn spec(meta: &'static RuleMeta, check: SpecCheck) -> Rule {
    Rule {
        meta,
        check: Check::Spec(check),
    }
}

const fn host(meta: &'static RuleMeta, check: HostCheck, runs_on: RunsOn) -> Rule {
    Rule {
        meta,
        check: Check::Host {
            check,
            runs_on,
            explains: &[],
        },
    }
}

impl Rule {
    /// A host check whose problem is the cause of these checks' problems (one root cause, one
    /// error): `host(..).explains(&[GL203, GL207])`.
    const fn explains(self, codes: &'static [Code]) -> Rule {
        match self.check {
            Check::Host { check, runs_on, .. } => Rule {
                meta: self.meta,
                check: Check::Host {
                    check,
                    runs_on,
                    explains: codes,
                },
            },
            _ => panic!("only host checks explain other checks"),
        }
    }
}

/// Codes for the `explains` lists of the host rows.
const fn c(code: &'static str) -> Code {
    Code::new(code)
}

const fn input(meta: &'static RuleMeta) -> Rule {
    Rule {
        meta,
        check: Check::Input,
    }
}

use host::*;
use image::*;
use runconfig::*;
use Scope::{Image as Once, PerTarget};

/// Every rule gpulint knows, in code order (a test keeps it sorted and unique).
#[rustfmt::skip]
pub static RULES: &[Rule] = &[
    input(&gl000_unreadable_input::META),
    image(&gl001_no_kernel_image::META, gl001_no_kernel_image::check, PerTarget),
    image(&gl002_driver_too_old::META, gl002_driver_too_old::check, PerTarget),
    image(&gl003_ptx_jit_needs_newer_driver::META, gl003_ptx_jit_needs_newer_driver::check, PerTarget),
    image(&gl004_driver_libs_in_image::META, gl004_driver_libs_in_image::check, Once),
    image(&gl005_forward_compat_unsupported::META, gl005_forward_compat_unsupported::check, PerTarget),
    image(&gl006_conflicting_cuda_runtimes::META, gl006_conflicting_cuda_runtimes::check, Once),
    image(&gl007_wheel_tag_mismatch::META, gl007_wheel_tag_mismatch::check, Once),
    image(&gl008_torch_companion_mismatch::META, gl008_torch_companion_mismatch::check, Once),
    image(&gl009_platform_mismatch::META, gl009_platform_mismatch::check, PerTarget),
    image(&gl010_require_cuda_unsatisfied::META, gl010_require_cuda_unsatisfied::check, PerTarget),
    image(&gl011_driver_does_not_support_gpu::META, gl011_driver_does_not_support_gpu::check, PerTarget),
    image(&gl012_package_library_missing::META, gl012_package_library_missing::check, Once),
    image(&gl013_bitsandbytes_library_missing::META, gl013_bitsandbytes_library_missing::check, Once),
    image(&gl014_triton_ptxas_too_old::META, gl014_triton_ptxas_too_old::check, PerTarget),
    image(&gl015_standalone_device_code::META, gl015_standalone_device_code::check, PerTarget),
    image(&gl016_cuda_wheel_requirement_unmet::META, gl016_cuda_wheel_requirement_unmet::check, Once),
    input(&gl100_invalid_spec_file::META),
    spec(&gl101_torch_cuda_vs_base::META, gl101_torch_cuda_vs_base::check),
    spec(&gl102_torch_cuda_variant_unpinned::META, gl102_torch_cuda_variant_unpinned::check),
    spec(&gl103_driver_in_image::META, gl103_driver_in_image::check),
    spec(&gl104_cuda_toolkit_over_base::META, gl104_cuda_toolkit_over_base::check),
    spec(&gl105_conda_cuda_with_pip_torch::META, gl105_conda_cuda_with_pip_torch::check),
    spec(&gl106_ld_library_path_cuda_override::META, gl106_ld_library_path_cuda_override::check),
    spec(&gl107_arch_list_misses_target::META, gl107_arch_list_misses_target::check),
    spec(&gl108_unquoted_version_specifier::META, gl108_unquoted_version_specifier::check),
    spec(&gl109_eol_cuda_base::META, gl109_eol_cuda_base::check),
    spec(&gl110_gpu_not_requested::META, gl110_gpu_not_requested::check),
    spec(&gl111_host_cuda_mounted::META, gl111_host_cuda_mounted::check),
    spec(&gl112_host_driver_libs_mounted::META, gl112_host_driver_libs_mounted::check),
    spec(&gl113_partial_nvidia_devices::META, gl113_partial_nvidia_devices::check),
    spec(&gl114_default_shm_with_pytorch::META, gl114_default_shm_with_pytorch::check),
    spec(&gl115_visible_devices_all_bypasses_plugin::META, gl115_visible_devices_all_bypasses_plugin::check),
    spec(&gl116_deprecated_nvidia_runtime::META, gl116_deprecated_nvidia_runtime::check),
    spec(&gl117_cuda_visible_devices_unavailable::META, gl117_cuda_visible_devices_unavailable::check),
    spec(&gl118_image_tag_unpinned::META, gl118_image_tag_unpinned::check),
    spec(&gl119_torch_build_misses_target::META, gl119_torch_build_misses_target::check),
    Rule { meta: &gl120_gpu_pool_unknown::META, check: Check::Fleet },
    Rule { meta: &gl121_workload_on_failing_pool::META, check: Check::Fleet },
    Rule { meta: &gl122_workload_fits_no_pool::META, check: Check::Fleet },
    Rule { meta: &gl198_stale_baseline_entry::META, check: Check::Baseline },
    Rule { meta: &gl199_unused_suppression::META, check: Check::Suppression },
    host(&gl201_gpu_not_visible::META, gl201_gpu_not_visible::check, RunsOn::BARE_METAL_OR_VM),
    host(&gl202_nouveau_loaded::META, gl202_nouveau_loaded::check, RunsOn::GPU_HOST_KERNEL)
        .explains(&[c("GL201"), c("GL203"), c("GL206"), c("GL207")]),
    host(&gl203_nvidia_module_not_loaded::META, gl203_nvidia_module_not_loaded::check, RunsOn::GPU_LINUX_DRIVER)
        .explains(&[c("GL201"), c("GL207")]),
    host(&gl204_driver_version_mismatch::META, gl204_driver_version_mismatch::check, RunsOn::GPU),
    host(&gl205_kernel_module_flavor_unsupported::META, gl205_kernel_module_flavor_unsupported::check, RunsOn::GPU_HOST_KERNEL)
        .explains(&[c("GL201")]),
    host(&gl206_module_not_built_for_kernel::META, gl206_module_not_built_for_kernel::check, RunsOn::GPU_HOST_KERNEL)
        .explains(&[c("GL201"), c("GL203"), c("GL207")]),
    host(&gl207_device_nodes_unusable::META, gl207_device_nodes_unusable::check, RunsOn::GPU_LINUX_DRIVER),
    host(&gl208_persistence_mode_off::META, gl208_persistence_mode_off::check, RunsOn::GPU_HOST_KERNEL),
    host(&gl209_mig_misconfigured::META, gl209_mig_misconfigured::check, RunsOn::GPU),
    host(&gl210_gpu_unhealthy::META, gl210_gpu_unhealthy::check, RunsOn::GPU)
        .explains(&[c("GL201")]),
    host(&gl211_cuda_toolkit_conflict::META, gl211_cuda_toolkit_conflict::check, RunsOn::ANYWHERE),
    // Not GL215: a pip torch brings its own CUDA runtime, so the toolkit does not explain it.
    host(&gl212_driver_older_than_toolkit::META, gl212_driver_older_than_toolkit::check, RunsOn::ANYWHERE),
    host(&gl213_container_toolkit_missing::META, gl213_container_toolkit_missing::check, RunsOn::GPU_NOT_IN_CONTAINER),
    host(&gl214_nvml_unknown_error_risk::META, gl214_nvml_unknown_error_risk::check, RunsOn::GPU_NOT_IN_CONTAINER),
    host(&gl215_torch_mismatch::META, gl215_torch_mismatch::check, RunsOn::ANYWHERE),
    host(&gl216_container_without_gpus::META, gl216_container_without_gpus::check, RunsOn::ANYWHERE)
        .explains(&[c("GL203"), c("GL204"), c("GL207"), c("GL209"), c("GL210"), c("GL212"), c("GL215")]),
    host(&gl217_gpu_throttled::META, gl217_gpu_throttled::check, RunsOn::GPU),
    host(&gl218_visible_devices_invalid::META, gl218_visible_devices_invalid::check, RunsOn::GPU),
    host(&gl219_cuda_libs_shadow_torch::META, gl219_cuda_libs_shadow_torch::check, RunsOn::ANYWHERE)
        .explains(&[c("GL211")]),
    host(&gl220_gpu_bar_unassigned::META, gl220_gpu_bar_unassigned::check, RunsOn::GPU),
    host(&gl230_driver_install_mixed::META, gl230_driver_install_mixed::check, RunsOn::GPU_HOST_KERNEL),
    // The file that sets LD_LIBRARY_PATH is where GL219's environment came from.
    host(&gl240_ld_library_path_export_shadows_torch::META, gl240_ld_library_path_export_shadows_torch::check, RunsOn::ANYWHERE)
        .explains(&[c("GL219")]),
    host(&gl241_torch_companion_mismatch::META, gl241_torch_companion_mismatch::check, RunsOn::ANYWHERE),
    host(&gl242_gpus_across_numa_nodes::META, gl242_gpus_across_numa_nodes::check, RunsOn::GPU),
    host(&gl243_gpu_bar1_small::META, gl243_gpu_bar1_small::check, RunsOn::GPU),
];

/// The image rules, in code order.
pub fn image_rules() -> impl Iterator<Item = (&'static RuleMeta, ImageCheck, Scope)> {
    RULES.iter().filter_map(|r| match r.check {
        Check::Image(check, scope) => Some((r.meta, check, scope)),
        _ => None,
    })
}

/// The Dockerfile / run-configuration rules that have a check, in code order.
pub fn spec_checks() -> impl Iterator<Item = (&'static RuleMeta, SpecCheck)> {
    RULES.iter().filter_map(|r| match r.check {
        Check::Spec(check) => Some((r.meta, check)),
        _ => None,
    })
}

/// The host checks with where each applies and what it explains, in code order.
pub fn host_checks() -> impl Iterator<Item = (&'static RuleMeta, HostCheck, RunsOn)> {
    RULES.iter().filter_map(|r| match r.check {
        Check::Host { check, runs_on, .. } => Some((r.meta, check, runs_on)),
        _ => None,
    })
}

/// The codes whose symptoms a host check's problem explains (empty for other rules).
pub fn host_explains(code: Code) -> &'static [Code] {
    RULES
        .iter()
        .find(|r| r.meta.code == code)
        .map(|r| match r.check {
            Check::Host { explains, .. } => explains,
            _ => &[],
        })
        .unwrap_or(&[])
}

/// Run every image rule: per-target rules once per target, image rules once (seeing the
/// target only when there is exactly one, so their messages can compare with it).
pub fn check_image(inventory: &Inventory, facts: &Facts, targets: &[Target]) -> Vec<Finding> {
    let mut out = Vec::new();
    for (_, check, scope) in image_rules() {
        match scope {
            Scope::PerTarget => {
                for t in targets {
                    let ctx = ImageContext {
                        inventory,
                        facts,
                        target: Some(t),
                    };
                    check(&ctx, &mut out);
                }
            }
            Scope::Image => {
                let ctx = ImageContext {
                    inventory,
                    facts,
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

/// Every rule gpulint knows, in code order.
pub fn all() -> Vec<&'static RuleMeta> {
    RULES.iter().map(|r| r.meta).collect()
}

/// Every rule's code and name, for selectors written by users.
pub fn names() -> Vec<crate::selection::RuleName> {
    RULES
        .iter()
        .map(|r| (r.meta.code.as_str(), r.meta.name))
        .collect()
}

/// The rule with this code.
pub fn find_code(code: Code) -> Option<&'static RuleMeta> {
    RULES.iter().map(|r| r.meta).find(|m| m.code == code)
}

/// Look a rule up by code (`GL001`, case-insensitive) or name (`no-kernel-image`).
pub fn find(code_or_name: &str) -> Option<&'static RuleMeta> {
    RULES
        .iter()
        .map(|r| r.meta)
        .find(|m| m.code.eq_ignore_ascii_case(code_or_name) || m.name == code_or_name)
}

/// A code the table knows (`gl101` → `GL101`); None for anything else.
pub fn parse_code(s: &str) -> Option<Code> {
    Code::parse(s, RULES.iter().map(|r| r.meta.code))
}

#[cfg(test)]
pub(crate) mod generated_fixtures;
#[cfg(test)]
mod no_string_versions;

#[cfg(test)]
mod tests {
    use super::*;

    /// What `gpulint rules` shows is what a rule emits: every severity a rule's own source
    /// names (outside its tests and its default) is declared in `other_severities`, and every
    /// declared one is used. Computed severities are also checked at run time by the
    /// suppression pass (debug builds), which every finding passes.
    #[test]
    fn declared_severities_are_the_emitted_ones() {
        use crate::finding::Severity;
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/rules");
        for r in RULES {
            let m = r.meta;
            let family = match m.code.number() {
                0..=99 => "image",
                100..=199 => "runconfig",
                _ => "host",
            };
            let prefix = format!("{}_", m.code.to_ascii_lowercase());
            let file = std::fs::read_dir(root.join(family))
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .find(|p| {
                    p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with(&prefix))
                })
                .unwrap_or_else(|| panic!("no source file for {}", m.code));
            let src = std::fs::read_to_string(&file)
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let body = src.split("#[cfg(test)]").next().unwrap_or("");
            let body: String = body
                .lines()
                .filter(|l| !l.contains("default_severity:") && !l.contains("other_severities:"))
                .collect::<Vec<_>>()
                .join("\n");
            let mut used: Vec<Severity> = Vec::new();
            for (lit, s) in [
                ("Severity::Info", Severity::Info),
                ("Severity::Warning", Severity::Warning),
                ("Severity::Error", Severity::Error),
            ] {
                if body.contains(lit) {
                    used.push(s);
                }
            }
            // Host checks report "could not check" as info through their shared runner.
            if family == "host" && !used.contains(&Severity::Info) {
                used.push(Severity::Info);
            }
            for s in &used {
                assert!(
                    m.emits(*s),
                    "{} emits {s} but `gpulint rules` shows only {}",
                    m.code,
                    m.severity_label()
                );
            }
            // Input rules are reported by the readers, not by code in their own file.
            if matches!(
                r.check,
                Check::Input | Check::Suppression | Check::Baseline | Check::Fleet
            ) {
                continue;
            }
            for s in m.other_severities {
                assert!(
                    used.contains(s) && *s != m.default_severity,
                    "{} declares {s} but never emits it (or it is the default)",
                    m.code
                );
            }
        }
        let gl116 = find("GL116").unwrap();
        assert_eq!(gl116.severity_label(), "warning (also info)");
        assert!(!gl116.emits(Severity::Error));
    }

    #[test]
    fn codes_and_names_are_unique_sorted_and_well_formed() {
        let codes: Vec<Code> = RULES.iter().map(|r| r.meta.code).collect();
        assert!(
            codes.windows(2).all(|w| w[0] < w[1]),
            "RULES must be sorted by code with no code twice: {codes:?}"
        );
        let mut names: Vec<_> = RULES.iter().map(|r| r.meta.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), RULES.len(), "duplicate rule name");
        for r in all() {
            assert!(r
                .name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c == '-' || c.is_ascii_digit()));
        }
    }

    /// Every rule documents each part, so `explain`, SARIF and docs/rules never show a gap.
    #[test]
    fn every_rule_has_a_complete_doc() {
        let mut gaps = Vec::new();
        for r in all() {
            let d = &r.doc;
            for (part, text) in [
                ("summary", r.summary),
                ("what", d.what),
                ("why", d.why),
                ("example", d.example),
                ("fix", d.fix),
            ] {
                if text.trim().len() < 10 {
                    gaps.push(format!("{} has no {part}", r.code));
                }
                if text != text.trim() {
                    gaps.push(format!("{} {part} has surrounding whitespace", r.code));
                }
            }
            if d.sources.is_empty() {
                gaps.push(format!("{} names no source", r.code));
            }
            for s in d.sources {
                if !s.starts_with("https://") || s.contains(char::is_whitespace) {
                    gaps.push(format!("{} source {s:?} is not a URL", r.code));
                }
            }
        }
        assert!(gaps.is_empty(), "{gaps:#?}");
    }

    /// Each family sits in its code range, so a rule filed in the wrong table row shows.
    #[test]
    fn families_match_code_ranges() {
        for r in RULES {
            let n = r.meta.code.number();
            let ok = match r.check {
                Check::Image(..) => n < 100,
                Check::Spec(_) | Check::Suppression | Check::Baseline | Check::Fleet => {
                    (100..200).contains(&n)
                }
                Check::Host { .. } => (200..300).contains(&n),
                Check::Input => n == 0 || n == 100,
            };
            assert!(ok, "{} is filed under the wrong family", r.meta.code);
        }
    }

    #[test]
    fn unreadable_input_is_a_rule() {
        let m = find("GL000").expect("GL000 in the table");
        assert_eq!(m.name, "unreadable-input");
        assert_eq!(find("unreadable-input").map(|m| m.code), Some(m.code));
        assert_eq!(parse_code("gl000"), Some(m.code));
        assert_eq!(parse_code("GL999"), None);
    }

    #[test]
    fn host_rules_come_from_the_table() {
        let host: Vec<Code> = host_checks().map(|(m, _, _)| m.code).collect();
        assert!(!host.is_empty());
        for c in &host {
            assert!(find_code(*c).is_some(), "{c}");
        }
        assert_eq!(find("GL207").map(|m| m.name), Some("device-nodes-unusable"));
    }
}
