//! GL121: a Kubernetes workload can be scheduled onto a node pool where it fails.

use crate::finding::Severity;
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL121"),
    name: "workload-can-land-on-failing-pool",
    default_severity: Severity::Error,
    other_severities: &[],
    summary: "A workload's scheduling constraints allow a node pool on which it fails",
    doc: RuleDoc {
        what: "With `--fleet-from-nodes`, each Kubernetes workload (and each pod of \
            `kubectl get pods -A -o json`) is judged against the pools its `nodeSelector`, \
            required node affinity, tolerations and NVIDIA resource requests let the scheduler \
            pick (a pod with `spec.nodeName` also against its node's pool). This finding names \
            each such pool, and its nodes, where an error-level check fails for the workload.",
        why: "The scheduler may place the workload on any node that passes its filters; one \
            compatible pool does not help when another admissible pool lacks the compute \
            capability or driver the image needs. The pod then crashes at the first kernel \
            launch or CUDA initialisation, only on some nodes.",
        example: "A pod with `nvidia.com/gpu: 1` and a toleration for `nvidia.com/gpu`, an image \
            built for sm_80 and sm_90, and a V100 (sm_70) pool it is allowed onto.",
        fix: "Constrain the workload to the pools it runs on (a `nodeSelector` or required \
            affinity on `nvidia.com/gpu.product`, `nvidia.com/gpu.compute.major` or the driver \
            labels), or fix the image for the pool the finding names.",
        sources: &[
            "https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/",
            "https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/",
            "https://github.com/NVIDIA/k8s-device-plugin/blob/main/docs/gpu-feature-discovery/README.md",
        ],
    },
};
