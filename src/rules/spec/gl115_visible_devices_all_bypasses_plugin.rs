//! GL115: NVIDIA_VISIBLE_DEVICES=all in Kubernetes bypasses the device plugin.

use crate::finding::{Finding, Severity};
use crate::rule_meta::{Code, RuleMeta};
use crate::spec::runspec::RunKind;
use crate::spec::{loc, RuleCtx, Subject};

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL115"),
    name: "visible-devices-all-bypasses-plugin",
    default_severity: Severity::Warning,
    summary: "NVIDIA_VISIBLE_DEVICES=all in a pod spec exposes every GPU of the node",
    explanation: "What: a Kubernetes container sets `NVIDIA_VISIBLE_DEVICES=all` (or a list) in \
its env.\n\
Why: with the NVIDIA runtime, this variable decides which GPUs are mounted — the device plugin's \
allocation is bypassed. The pod sees GPUs the scheduler gave to other pods (or none were \
accounted to it at all), so workloads collide and quotas mean nothing.\n\
Example: `env: [{name: NVIDIA_VISIBLE_DEVICES, value: all}]` with runtimeClassName: nvidia.\n\
Fix: remove the variable and request `nvidia.com/gpu` limits; configure the device plugin with \
`DEVICE_LIST_STRATEGY=volume-mounts` / `accept-nvidia-visible-devices-envvar-when-unprivileged=false` \
to stop unprivileged pods from doing this.",
};

pub fn check(s: &Subject, _cx: &RuleCtx) -> Vec<Finding> {
    let Subject::Runs(specs) = s else {
        return Vec::new();
    };
    let mut out = Vec::new();
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
    out
}

#[cfg(test)]
mod tests {
    use crate::spec::testutil::runs;

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
