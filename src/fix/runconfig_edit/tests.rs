//! The rules' plans made into edits on real texts, applied, and linted again: the edited file
//! parses and the rule no longer reports what was fixed.

use super::attach;
use crate::finding::{merge_repeats, Finding};
use crate::fix::{apply, Applicability, FixKind};
use crate::runconfig::testutil::run_findings;

/// The file name `run_findings` gives each kind.
fn file_of(kind: &str) -> &'static str {
    match kind {
        "sh" => "run.sh",
        "md" => "README.md",
        "k8s" => "pod.yaml",
        _ => "compose.yaml",
    }
}

/// The findings of `rule` in `text`, with edits attached and repeats merged, as a command
/// reports them.
fn found(kind: &str, text: &str, rule: &str) -> Vec<Finding> {
    let mut f = run_findings(kind, text, vec![]);
    attach(&mut f, file_of(kind), text, kind == "md");
    merge_repeats(f)
        .into_iter()
        .filter(|f| f.rule == rule)
        .collect()
}

/// The text after the run-configuration fix of the one finding of `rule`, and its
/// applicability; `None` when the fix has no edits.
fn fixed(kind: &str, text: &str, rule: &str) -> Option<(String, Applicability)> {
    let f = found(kind, text, rule);
    assert_eq!(f.len(), 1, "{f:?}");
    let fix = f[0].fixes.iter().find(|x| x.kind == FixKind::RunConfig)?;
    if fix.edits.is_empty() {
        assert_eq!(fix.applicability, Applicability::Manual, "{fix:?}");
        return None;
    }
    Some((apply::apply(text, &fix.edits), fix.applicability))
}

/// The edited text lints again without `rule` and without a parse error.
fn relints_clean(kind: &str, text: &str, rule: &str) {
    let again = run_findings(kind, text, vec![]);
    assert!(
        !again.iter().any(|f| f.rule == rule || f.rule == "GL100"),
        "{text}\n{again:?}"
    );
}

#[test]
fn compose_runtime_nvidia_becomes_a_reservation_in_every_service() {
    let c = "# GPU services\nservices:\n  a:\n    image: nvidia/cuda:12.4.1-base-ubuntu22.04\n    runtime: nvidia # legacy\n    command: nvidia-smi\n  b:\n    image: nvidia/cuda:12.4.1-base-ubuntu22.04\n    deploy:\n      replicas: 1\n    runtime: nvidia\n";
    let (new, a) = fixed("compose", c, "GL116").unwrap();
    assert_eq!(
        a,
        Applicability::Safe,
        "nvidia/cuda sets NVIDIA_VISIBLE_DEVICES=all"
    );
    assert_eq!(
        new,
        "# GPU services\nservices:\n  a:\n    image: nvidia/cuda:12.4.1-base-ubuntu22.04\n    deploy:\n      resources:\n        reservations:\n          devices:\n            - driver: nvidia\n              count: all\n              capabilities: [gpu]\n    command: nvidia-smi\n  b:\n    image: nvidia/cuda:12.4.1-base-ubuntu22.04\n    deploy:\n      replicas: 1\n      resources:\n        reservations:\n          devices:\n            - driver: nvidia\n              count: all\n              capabilities: [gpu]\n"
    );
    relints_clean("compose", &new, "GL116");
    relints_clean("compose", &new, "GL110");
}

#[test]
fn listed_devices_keep_their_ids_and_make_the_fix_unsafe() {
    let c = "services:\n  a:\n    image: myorg/app:1\n    runtime: nvidia\n    environment:\n      - NVIDIA_VISIBLE_DEVICES=1\n";
    let (new, a) = fixed("compose", c, "GL116").unwrap();
    assert_eq!(a, Applicability::Unsafe);
    assert!(new.contains("device_ids: [\"1\"]"), "{new}");
    relints_clean("compose", &new, "GL116");
    // `none` asks for no GPU: no request says that, the fix stays advice.
    let none = c.replace("=1", "=none");
    assert_eq!(fixed("compose", &none, "GL116"), None);
}

#[test]
fn a_redundant_runtime_is_dropped() {
    let c = "services:\n  a:\n    image: x/y:1\n    runtime: nvidia\n    deploy:\n      resources:\n        reservations:\n          devices: [{driver: nvidia, count: 1, capabilities: [gpu]}]\n";
    let (new, a) = fixed("compose", c, "GL116").unwrap();
    assert_eq!(a, Applicability::Safe);
    assert_eq!(new, c.replace("    runtime: nvidia\n", ""));
    relints_clean("compose", &new, "GL116");
}

#[test]
fn docker_run_forms_of_the_legacy_runtime() {
    for (sh, want, safe) in [
        (
            "docker run --runtime=nvidia --rm nvidia/cuda:12.4.1-base-ubuntu22.04 nvidia-smi\n",
            "docker run --gpus all --rm nvidia/cuda:12.4.1-base-ubuntu22.04 nvidia-smi\n",
            true,
        ),
        (
            "docker run --runtime nvidia -e NVIDIA_VISIBLE_DEVICES=0,1 myorg/app:1 t.py\n",
            "docker run --gpus '\"device=0,1\"' -e NVIDIA_VISIBLE_DEVICES=0,1 myorg/app:1 t.py\n",
            false,
        ),
        (
            "sudo nvidia-docker run -it myorg/app:1\n",
            "sudo docker run --gpus all -it myorg/app:1\n",
            false,
        ),
    ] {
        let (new, a) = fixed("sh", sh, "GL116").unwrap();
        assert_eq!(new, want);
        assert_eq!(a == Applicability::Safe, safe, "{sh}");
        relints_clean("sh", &new, "GL116");
    }
}

#[test]
fn gpu_requests_for_docker_compose_and_kubernetes() {
    let (new, a) = fixed(
        "sh",
        "docker run --rm nvidia/cuda:12.4.1-base-ubuntu22.04 nvidia-smi\n",
        "GL110",
    )
    .unwrap();
    assert_eq!(a, Applicability::Unsafe);
    assert_eq!(
        new,
        "docker run --gpus all --rm nvidia/cuda:12.4.1-base-ubuntu22.04 nvidia-smi\n"
    );
    relints_clean("sh", &new, "GL110");
    let c = "services:\n  train:\n    image: nvcr.io/nvidia/pytorch:24.04-py3\n    shm_size: 8gb\n";
    let (new, _) = fixed("compose", c, "GL110").unwrap();
    relints_clean("compose", &new, "GL110");
    // k8s: merged into the container's own `resources:`, after its `requests:`.
    let k = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    image: nvidia/cuda:12.4.1-base-ubuntu22.04\n    command: [\"nvidia-smi\"]\n    resources:\n      requests:\n        cpu: 1\n  - name: sidecar\n    image: busybox\n";
    let (new, a) = fixed("k8s", k, "GL110").unwrap();
    assert_eq!(a, Applicability::Unsafe);
    assert_eq!(
        new,
        k.replace(
            "        cpu: 1\n",
            "        cpu: 1\n      limits:\n        nvidia.com/gpu: 1\n"
        )
    );
    relints_clean("k8s", &new, "GL110");
}

#[test]
fn a_gpu_request_without_limit_gets_the_same_limit_safely() {
    let k = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    image: nvidia/cuda:12.4.1-base-ubuntu22.04\n    resources:\n      requests:\n        nvidia.com/gpu: \"2\"\n";
    let (new, a) = fixed("k8s", k, "GL110").unwrap();
    assert_eq!(a, Applicability::Safe);
    assert!(
        new.ends_with("      limits:\n        nvidia.com/gpu: 2\n"),
        "{new}"
    );
    relints_clean("k8s", &new, "GL110");
}

#[test]
fn shared_memory_for_docker_compose_and_kubernetes() {
    let (new, a) = fixed(
        "sh",
        "docker run --gpus all nvcr.io/nvidia/pytorch:24.04-py3 torchrun train.py\n",
        "GL114",
    )
    .unwrap();
    assert_eq!(a, Applicability::Safe);
    assert_eq!(
        new,
        "docker run --shm-size=8g --gpus all nvcr.io/nvidia/pytorch:24.04-py3 torchrun train.py\n"
    );
    relints_clean("sh", &new, "GL114");
    // Two repeated services: one finding, one fix editing both.
    let c = "services:\n  rank0:\n    image: pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime\n    command: torchrun --node_rank 0 train.py\n    deploy:\n      resources:\n        reservations:\n          devices: [{driver: nvidia, count: 1, capabilities: [gpu]}]\n  rank1:\n    image: pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime\n    command: torchrun --node_rank 1 train.py\n    deploy:\n      resources:\n        reservations:\n          devices: [{driver: nvidia, count: 1, capabilities: [gpu]}]\n";
    let (new, a) = fixed("compose", c, "GL114").unwrap();
    assert_eq!(a, Applicability::Safe);
    assert_eq!(new.matches("    shm_size: 8gb\n").count(), 2, "{new}");
    relints_clean("compose", &new, "GL114");
    let k = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: train\nspec:\n  template:\n    spec:\n      containers:\n        - name: trainer\n          image: pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime\n          command: [torchrun, train.py]\n          resources:\n            limits:\n              nvidia.com/gpu: 1\n      nodeSelector:\n        gpu: \"yes\"\n";
    let (new, a) = fixed("k8s", k, "GL114").unwrap();
    assert_eq!(a, Applicability::Unsafe);
    assert!(
        new.contains("              nvidia.com/gpu: 1\n          volumeMounts:\n            - name: dshm\n              mountPath: /dev/shm\n"),
        "{new}"
    );
    assert!(
        new.ends_with("        gpu: \"yes\"\n      volumes:\n        - name: dshm\n          emptyDir:\n            medium: Memory\n            sizeLimit: 8Gi\n"),
        "{new}"
    );
    relints_clean("k8s", &new, "GL114");
}

#[test]
fn what_the_text_does_not_bear_out_stays_advice() {
    // The runtime comes from an anchor: the service has no line of its own to edit.
    let c = "x-gpu: &gpu\n  runtime: nvidia\nservices:\n  a:\n    <<: *gpu\n    image: nvidia/cuda:12.4.1-base-ubuntu22.04\n";
    assert_eq!(fixed("compose", c, "GL116"), None);
    // A flow-style service.
    let c = "services:\n  train: {image: nvcr.io/nvidia/pytorch:24.04-py3}\n";
    assert_eq!(fixed("compose", c, "GL110"), None);
    // The image and flags come from a variable.
    let sh = "CMD=\"docker run --rm\"\n$CMD nvidia/cuda:12.4.1-base-ubuntu22.04 nvidia-smi\n";
    assert_eq!(fixed("sh", sh, "GL110"), None);
}

#[test]
fn markdown_code_blocks_are_edited_in_place_and_prose_is_kept() {
    let md = "# Run it\n\nWith the old runtime (`docker run --runtime=nvidia` in prose is not code):\n\n```console\n$ docker run --runtime=nvidia --rm nvidia/cuda:12.4.1-base-ubuntu22.04 nvidia-smi\n```\n";
    let (new, a) = fixed("md", md, "GL116").unwrap();
    assert_eq!(a, Applicability::Safe);
    assert_eq!(
        new,
        md.replace(
            "$ docker run --runtime=nvidia --rm",
            "$ docker run --gpus all --rm"
        )
    );
    relints_clean("md", &new, "GL116");
}

#[test]
fn the_container_edited_is_the_one_named_not_one_whose_name_starts_the_same() {
    let k = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: app-proxy\n    image: envoyproxy/envoy:v1.30.1\n  - name: app\n    image: nvidia/cuda:12.4.1-base-ubuntu22.04\n    command: [\"nvidia-smi\"]\n";
    let f = found("k8s", k, "GL110");
    assert_eq!(f[0].location.as_ref().unwrap().line, Some(9), "{f:?}");
    let (new, _) = fixed("k8s", k, "GL110").unwrap();
    assert!(
        new.ends_with("    command: [\"nvidia-smi\"]\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n"),
        "{new}"
    );
    relints_clean("k8s", &new, "GL110");
}
