//! GL122: a Kubernetes workload that asks for an NVIDIA GPU fits no node pool.

use crate::finding::Severity;
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL122"),
    name: "workload-fits-no-pool",
    default_severity: Severity::Error,
    other_severities: &[],
    summary: "A GPU workload's scheduling constraints match no node pool of the cluster",
    doc: RuleDoc {
        what: "With `--fleet-from-nodes`, a workload requesting `nvidia.com/gpu` or a MIG \
            resource (`nvidia.com/mig-1g.10gb`, …) whose `nodeSelector`, required node affinity \
            (`In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt`, `Lt`), tolerations (`NoSchedule`, \
            `NoExecute` taints) or resource request no GPU node satisfies; or a pod whose \
            `spec.nodeName` is not a GPU node of the list. The message gives each pool's first \
            reason.",
        why: "The pod stays Pending (`0/N nodes are available`), or, bound by name to a node \
            without the resource, fails admission: the rollout never becomes ready.",
        example: "A pod requesting `nvidia.com/gpu: 1` on a cluster whose A100 nodes use the \
            mixed MIG strategy and offer only `nvidia.com/mig-1g.10gb`.",
        fix: "Request a resource the pools offer, tolerate their taints, or correct the selector \
            (GFD's values: `nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3`).",
        sources: &[
            "https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/",
            "https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/",
            "https://github.com/NVIDIA/k8s-device-plugin#configuring-the-nvidia-device-plugin-binary",
        ],
    },
};
