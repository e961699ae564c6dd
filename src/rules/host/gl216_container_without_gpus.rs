//! GL216: gpulint runs inside a container that was started without GPUs.

use super::{CheckResult, HostContext};
use crate::finding::Severity;
use crate::host::evidence::Evidence;
use crate::host::reader::HostCommand;
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

pub(crate) static META: RuleMeta = RuleMeta {
    code: Code::new("GL216"),
    name: "container-started-without-gpus",
    default_severity: Severity::Error,
    other_severities: &[Severity::Info],
    summary: "This container was started without GPUs (no --gpus / device request)",
    doc: RuleDoc {
        what: "Inside a container (/.dockerenv, /run/.containerenv, or a container cgroup of PID \
            1), looks for the GPU device nodes the NVIDIA Container Toolkit passes in \
            (/dev/nvidiactl, /dev/nvidia<N>) and at nvidia-smi and NVIDIA_VISIBLE_DEVICES.",
        why: "A container sees only the devices it was started with. Started without `--gpus` \
            (or a CDI device, a compose device reservation, a Kubernetes `nvidia.com/gpu` \
            limit), it has no /dev/nvidia* and no driver libraries: nvidia-smi is missing and \
            CUDA reports \"no CUDA-capable device is detected\". Nothing inside the container — \
            installing drivers, nvidia-modprobe, blacklisting nouveau — can add the GPU; the \
            container has to be started again with one.",
        example: "`docker run -it pytorch/pytorch python -c 'import torch; \
            print(torch.cuda.is_available())'` prints False: `this docker container was started \
            without GPUs: no /dev/nvidiactl or /dev/nvidia<N>`.",
        fix: "Start the container with GPUs: `docker run --gpus all IMAGE` (podman/CDI: `--device \
            nvidia.com/gpu=all`); in compose, `deploy.resources.reservations.devices: [{driver: \
            nvidia, count: all, capabilities: [gpu]}]`; in Kubernetes, `resources.limits: \
            {nvidia.com/gpu: 1}`. The host needs the NVIDIA Container Toolkit (GL213 there).",
        sources: &[
            "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/docker-specialized.html",
            "https://docs.docker.com/engine/containers/resource_constraints/#gpu",
            "https://docs.docker.com/compose/how-tos/gpu-support/",
        ],
    },
};

pub(crate) fn check(cx: &HostContext<'_>, out: &mut Vec<CheckResult>) {
    let r = cx.reader;
    let Some(engine) = cx.env.container.as_deref() else {
        out.push(CheckResult::skipped(
            &META,
            "not applicable: not inside a container",
        ));
        return;
    };
    let mut evidence = cx.env.evidence.clone();
    let Some(nodes) = r.dev_nodes() else {
        out.push(
            CheckResult::could_not(
                &META,
                format!("inside a {engine} container, but /dev/nvidia* cannot be listed"),
            )
            .evidence(evidence),
        );
        return;
    };
    let gpu_nodes: Vec<&str> = nodes
        .iter()
        .filter(|n| {
            n.path == "/dev/nvidiactl"
                || n.path
                    .strip_prefix("/dev/nvidia")
                    .is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()))
        })
        .map(|n| n.path.as_str())
        .collect();
    let visible = r.env("NVIDIA_VISIBLE_DEVICES");
    match &visible {
        Some(v) => evidence.push(Evidence::env(format!("NVIDIA_VISIBLE_DEVICES={v}"))),
        None => evidence.push(Evidence::env("NVIDIA_VISIBLE_DEVICES is not set")),
    }
    if !gpu_nodes.is_empty() {
        out.push(
            CheckResult::ok(
                &META,
                format!(
                    "inside a {engine} container with GPU device nodes {}",
                    gpu_nodes.join(", ")
                ),
            )
            .evidence(evidence),
        );
        return;
    }
    evidence.push(Evidence::file(
        "/dev",
        "no /dev/nvidiactl, no /dev/nvidia<N>",
    ));
    let smi = r.run(HostCommand::NvidiaSmiL);
    evidence.push(Evidence::command(
        "nvidia-smi",
        match &smi {
            crate::host::reader::CommandOutput::NotFound => "not found".to_string(),
            o if o.failed() => format!(
                "failed: {}",
                super::first_line(&o.any_output().unwrap_or_default())
            ),
            _ => "ran".to_string(),
        }
        .to_string(),
    ));
    let why = match visible.as_deref().map(str::trim) {
        Some("void") | Some("none") | Some("") => format!(
            " (NVIDIA_VISIBLE_DEVICES={} asks for no GPU)",
            visible.as_deref().unwrap_or_default().trim()
        ),
        _ => String::new(),
    };
    let run = if engine == "podman" {
        "`podman run --device nvidia.com/gpu=all IMAGE`"
    } else if engine == "kubernetes" {
        "a `resources.limits: {nvidia.com/gpu: 1}` on the container"
    } else {
        "`docker run --gpus all IMAGE` (or `--device nvidia.com/gpu=all` with CDI)"
    };
    out.push(
        CheckResult::problem(
            &META,
            format!(
                "this {engine} container was started without GPUs: no /dev/nvidiactl or \
             /dev/nvidia<N>{why}; nothing inside the container can add one"
            ),
        )
        .evidence(evidence)
        .fix(format!(
            "Start the container again with GPUs: {run}; in compose, \
         `deploy.resources.reservations.devices: [{{driver: nvidia, count: all, capabilities: \
         [gpu]}}]`. Host-side fixes (drivers, modules) do not apply inside the container."
        )),
    );
}
