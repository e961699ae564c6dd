//! The GL1xx rules: Dockerfiles, compose files, Kubernetes manifests and run lines, read as
//! facts by `crate::runconfig`. Each check sees a [`SpecContext`] (the [`Subject`], targets, matrix
//! facts) and pushes findings located in the file. GL100 (the file does not parse), GL198 (a
//! baseline entry matched nothing) and GL199 (a suppression matched nothing) have no check: the
//! spec reader, `crate::baseline` and `crate::suppress` report them. The table that lists them is `super::RULES`.

pub mod gl100_invalid_spec_file;
pub mod gl101_torch_cuda_vs_base;
pub mod gl102_torch_cuda_variant_unpinned;
pub mod gl103_driver_in_image;
pub mod gl104_cuda_toolkit_over_base;
pub mod gl105_conda_cuda_with_pip_torch;
pub mod gl106_ld_library_path_cuda_override;
pub mod gl107_arch_list_misses_target;
pub mod gl108_unquoted_version_specifier;
pub mod gl109_eol_cuda_base;
pub mod gl110_gpu_not_requested;
pub mod gl111_host_cuda_mounted;
pub mod gl112_host_driver_libs_mounted;
pub mod gl113_partial_nvidia_devices;
pub mod gl114_default_shm_with_pytorch;
pub mod gl115_visible_devices_all_bypasses_plugin;
pub mod gl116_deprecated_nvidia_runtime;
pub mod gl117_cuda_visible_devices_unavailable;
pub mod gl118_image_tag_unpinned;
pub mod gl119_torch_build_misses_target;
pub mod gl120_gpu_pool_unknown;
pub mod gl121_workload_on_failing_pool;
pub mod gl122_workload_fits_no_pool;
pub mod gl198_stale_baseline_entry;
pub mod gl199_unused_suppression;

use crate::finding::Finding;
use crate::runconfig::build::BuildFacts;
use crate::runconfig::runspec::{RunKind, RunSpec};
use crate::runconfig::{SpecContext, Subject};

/// Indices of the stages the final image is built on (the last built stage and its
/// parents): what they set reaches the running container. Other stages are throw-away
/// builders whose files reach the image only through an explicit `COPY --from`.
pub(crate) fn final_chain(bf: &BuildFacts) -> Vec<usize> {
    bf.built_stages()
        .last()
        .map(|f| bf.chain(f.index).iter().map(|s| s.index).collect())
        .unwrap_or_default()
}

/// The mounts of every workload container of a run subject (infrastructure containers such as
/// a GPU operator's own pods left out), each with its container.
pub(crate) fn workload_mounts<'a>(
    s: &'a Subject,
) -> impl Iterator<Item = (&'a RunSpec, &'a crate::runconfig::runspec::Mount)> + 'a {
    let specs: &[RunSpec] = match s {
        Subject::Runs(specs) => specs,
        Subject::Dockerfile(_) | Subject::Script(_) => &[],
    };
    specs
        .iter()
        .filter(|r| !r.infra)
        .flat_map(|r| r.mounts.iter().map(move |m| (r, m)))
}

/// A Dockerfile / run-configuration / script check: the context holds the subject (a build,
/// the run specs of a file, a script's text) with the targets and facts; findings are pushed
/// onto the list, as image checks do.
pub type SpecCheck = fn(&SpecContext<'_>, &mut Vec<Finding>);

/// A Kubernetes container's own name (its spec is named `workload/container`): what the
/// fixes check its `name:` line against.
pub(crate) fn container_name(r: &RunSpec) -> String {
    r.name.rsplit('/').next().unwrap_or_default().to_string()
}

/// Mark what may repeat across the services of one compose file (or the containers of one
/// manifest), as linters group identical findings: the fix is the same, and N copies of one
/// warning bury the rest. Findings are the same when rule, severity, target, file and message
/// agree once the service's own name is set aside. The post-pass merges them
/// ([`crate::finding::merge_repeats`]) after suppressions.
pub(crate) fn mark_repeats(findings: Vec<Finding>, specs: &[RunSpec]) -> Vec<Finding> {
    // The service or container a finding is about: the last one starting at or above it.
    let owner = |f: &Finding| -> Option<&RunSpec> {
        let l = f.location.as_ref()?;
        let (file, line) = (l.file.as_deref()?, l.line?);
        specs
            .iter()
            .filter(|r| {
                matches!(r.kind, RunKind::Compose | RunKind::K8s)
                    && r.file == file
                    && r.pos.line <= line
            })
            .max_by_key(|r| r.pos.line)
    };
    findings
        .into_iter()
        .map(|mut f| {
            if let Some(o) = owner(&f) {
                let key = format!(
                    "{}\0{:?}\0{:?}\0{}\0{}",
                    f.rule,
                    f.severity,
                    f.target,
                    o.file,
                    f.message.replace(&format!("`{}`", o.name), "`\u{1}`")
                );
                f.repeat = Some(crate::finding::Repeat {
                    key,
                    member: o.name.clone(),
                });
            }
            f
        })
        .collect()
}

#[cfg(test)]
mod resolve_tests {
    /// The rules judge what the resolving pass filled in (`Stage::info`, `RunImage::info`):
    /// none parses an image reference or looks up what it is again.
    #[test]
    fn no_rule_reads_an_image_reference_itself() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/rules/runconfig");
        let mut offenders = Vec::new();
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let text = std::fs::read_to_string(&p).unwrap();
            // The rule itself, not its tests.
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            for needle in ["ImageRef::parse", "image_info("] {
                if code.contains(needle) {
                    offenders.push(format!("{}: {needle}", p.display()));
                }
            }
        }
        assert!(offenders.is_empty(), "{offenders:#?}");
    }
}

#[cfg(test)]
mod group_tests {
    use crate::runconfig::testutil::runs;

    /// Suppressions apply before repeats merge: a pragma on one service silences that one,
    /// neither the whole group nor nothing (an "unused" pragma).
    #[test]
    fn a_pragma_silences_only_its_own_service() {
        let svc = |name: &str| {
            format!("  {name}:\n    image: pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime\n    command: torchrun --backend nccl main.py\n    gpus: all\n")
        };
        let text = format!(
            "services:\n{}  # gpulint ignore=GL114 runs with ipc: host in production\n{}{}",
            svc("rank0"),
            svc("rank1"),
            svc("rank2")
        );
        let found = crate::runconfig::testutil::run_findings("compose", &text, vec![]);
        assert_eq!(found.iter().filter(|f| f.rule == "GL114").count(), 3);
        let texts = [crate::suppress::FileText {
            display: "compose.yaml".into(),
            text: text.clone(),
            statements: None,
            original: None,
        }];
        let out = crate::suppress::apply(
            found,
            &texts,
            &[],
            &crate::config::Config::default(),
            std::path::Path::new("."),
            &|shown: &str| std::path::PathBuf::from(shown),
        );
        let gl114: Vec<_> = out.iter().filter(|f| f.rule == "GL114").collect();
        assert_eq!(gl114.len(), 1, "{out:?}");
        let m = &gl114[0].message;
        assert!(m.contains("`rank2`") && !m.contains("`rank1`"), "{m}");
        assert!(!out.iter().any(|f| f.rule == "GL199"), "{out:?}");
    }

    #[test]
    fn repeats_across_services_are_one_finding_naming_them() {
        let c = "services:\n  rank0:\n    image: pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime\n    command: torchrun --backend nccl main.py\n    gpus: all\n  rank1:\n    image: pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime\n    command: torchrun --backend nccl main.py\n    gpus: all\n";
        let f = runs("compose", c, "GL114", vec![]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(2));
        assert!(f[0].message.contains("`rank0`"), "{}", f[0].message);
        assert!(
            f[0].message.ends_with("(also this one: `rank1` (line 6))"),
            "{}",
            f[0].message
        );
        // Different findings stay apart: only rank1 reports when rank0 has its shm.
        let c = c.replacen("    gpus: all\n", "    gpus: all\n    ipc: host\n", 1);
        let f = runs("compose", &c, "GL114", vec![]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("`rank1`") && !f[0].message.contains("also"));
    }
}
