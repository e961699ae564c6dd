//! GL115: NVIDIA_VISIBLE_DEVICES=all in Kubernetes (or baked into an image) bypasses the
//! device plugin.

use crate::finding::{Finding, Severity};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};
use crate::runconfig::runspec::RunKind;
use crate::runconfig::{loc, SpecContext, Subject};

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL115"),
    name: "visible-devices-all-bypasses-plugin",
    default_severity: Severity::Warning,
    other_severities: &[Severity::Error],
    summary: "NVIDIA_VISIBLE_DEVICES=all in a pod spec or baked into an image exposes every GPU of the node",
    doc: RuleDoc {
        what: "A Kubernetes container sets `NVIDIA_VISIBLE_DEVICES=all` (or a list) in its env, or a \
            Dockerfile bakes it into an image whose non-NVIDIA base does not set it.",
        why: "With the NVIDIA runtime, this variable decides which GPUs are mounted — the device \
            plugin's allocation is bypassed. The pod sees GPUs the scheduler gave to other pods \
            (or none were accounted to it at all), so workloads collide and quotas mean nothing.",
        example: "`env: [{name: NVIDIA_VISIBLE_DEVICES, value: all}]` with runtimeClassName: nvidia.",
        fix: "Remove the variable and request `nvidia.com/gpu` limits; configure the device plugin \
            with `DEVICE_LIST_STRATEGY=volume-mounts` / \
            `accept-nvidia-visible-devices-envvar-when-unprivileged=false` to stop unprivileged \
            pods from doing this.",
        sources: &[
            "https://github.com/NVIDIA/k8s-device-plugin",
            "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/docker-specialized.html",
        ],
    },
};

/// A Dockerfile that bakes NVIDIA_VISIBLE_DEVICES into an image whose base does not set it
/// (a non-NVIDIA base: ubuntu, python). NVIDIA's CUDA/PyTorch/NGC bases set it themselves, so
/// repeating it there changes nothing.
fn baked(bf: &crate::runconfig::build::BuildFacts) -> Vec<Finding> {
    use crate::runconfig::image::ImageKind;
    let Some(last) = bf.built_stages().last() else {
        return Vec::new();
    };
    let chain = bf.chain(last.index);
    let Some(root) = chain.last() else {
        return Vec::new();
    };
    if root.info.kind != ImageKind::Other || root.image_unresolved || root.image.contains('$') {
        return Vec::new();
    }
    let mut out = Vec::new();
    for st in &chain {
        for e in st
            .envs
            .iter()
            .filter(|e| e.name == "NVIDIA_VISIBLE_DEVICES" && !e.is_arg)
        {
            let v = e.value.as_deref().unwrap_or("");
            if v.is_empty() || v == "void" || v == "none" || e.unresolved {
                continue;
            }
            out.push(
                META.finding(format!(
                    "the image bakes NVIDIA_VISIBLE_DEVICES={v} into a non-CUDA base (`{}`): where nvidia is the default runtime, every container from it gets {} without --gpus or an nvidia.com/gpu limit, outside the device plugin's allocation",
                    root.image,
                    if v == "all" { "every GPU" } else { "those GPUs" }
                ))
                .with_location(loc(&bf.file, e.pos))
                .with_help("remove the ENV; request GPUs at run time (--gpus, a device reservation, an nvidia.com/gpu limit)"),
            );
        }
    }
    out
}

/// The table's entry point: this rule's findings on the context's subject.
pub fn check(cx: &SpecContext<'_>, out: &mut Vec<Finding>) {
    let s = &cx.subject;
    let specs = match s {
        Subject::Runs(specs) => specs,
        Subject::Dockerfile(bf) => {
            out.extend(baked(bf));
            return;
        }
        Subject::Script(_) => return,
    };
    for r in specs.iter().filter(|r| r.kind == RunKind::K8s && !r.infra) {
        if let Some((_, v, p)) = r.env_value("NVIDIA_VISIBLE_DEVICES") {
            if v == "void" || v == "none" || v.is_empty() {
                continue;
            }
            let sev = if r.gpus.is_none() {
                Severity::Error
            } else {
                Severity::Warning
            };
            out.push(
                META.finding(format!(
                    "container `{}` sets NVIDIA_VISIBLE_DEVICES={v}{}: the runtime mounts those GPUs regardless of the device plugin's allocation",
                    r.name,
                    if r.gpus.is_none() { " without an nvidia.com/gpu limit" } else { "" }
                ))
                .with_severity(sev)
                .with_location(loc(&r.file, *p))
                .with_help("remove it and request resources.limits[\"nvidia.com/gpu\"]"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::runconfig::testutil::{dockerfile, runs};

    #[test]
    fn baked_into_a_non_cuda_base() {
        let f = dockerfile(
            "FROM python:3.6\nRUN pip install x\nENV NVIDIA_VISIBLE_DEVICES all\n",
            "GL115",
            vec![],
        );
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(3));
        // NVIDIA's bases set it themselves; a builder stage does not reach the image.
        assert!(dockerfile(
            "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nENV NVIDIA_VISIBLE_DEVICES=all\n",
            "GL115",
            vec![]
        )
        .is_empty());
        assert!(dockerfile(
            "FROM ubuntu:22.04 AS b\nENV NVIDIA_VISIBLE_DEVICES=all\nFROM ubuntu:22.04\nCOPY --from=b /a /a\n",
            "GL115",
            vec![]
        )
        .is_empty());
    }

    #[test]
    fn k8s_env_all() {
        let k = "kind: Deployment\nmetadata:\n  name: d\nspec:\n  template:\n    spec:\n      runtimeClassName: nvidia\n      containers:\n      - name: c\n        image: x\n        env:\n        - name: NVIDIA_VISIBLE_DEVICES\n          value: all\n";
        let f = runs("k8s", k, "GL115", vec![]);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(12));
        assert!(runs(
            "sh",
            "docker run -e NVIDIA_VISIBLE_DEVICES=all img\n",
            "GL115",
            vec![]
        )
        .is_empty());
    }
}
