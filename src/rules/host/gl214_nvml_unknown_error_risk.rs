//! GL214: configurations behind "Failed to initialize NVML: Unknown Error" in containers.

use super::gl213_container_toolkit_missing::{CONTAINERD_TOML, DAEMON_JSON};
use super::{CheckResult, HostContext};
use crate::finding::Severity;
use crate::host::evidence::Evidence;
use crate::host::reader::HostCommand;
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

pub(crate) static META: RuleMeta = RuleMeta {
    code: Code::new("GL214"),
    name: "nvml-unknown-error-risk",
    default_severity: Severity::Warning,
    other_severities: &[Severity::Info],
    summary: "Containers may lose their GPUs (\"Failed to initialize NVML: Unknown Error\")",
    doc: RuleDoc {
        what: "Reads the container engine's cgroup driver (daemon.json `exec-opts` \
            native.cgroupdriver, `docker info`, containerd `SystemdCgroup`), the NVIDIA Container \
            Runtime config (/etc/nvidia-container-runtime/config.toml: `no-cgroups`, `mode`) and \
            the /dev/char symlinks for the NVIDIA devices.",
        why: "With the systemd cgroup driver, the legacy (hook-based) runtime adds GPU device rules \
            that systemd does not know about; the next `systemctl daemon-reload` rewrites the \
            container's device cgroup and running containers get \"Failed to initialize NVML: \
            Unknown Error\" (NVIDIA/nvidia-container-toolkit#48). `no-cgroups = true` sets up no \
            device rules at all, so unless devices are passed explicitly the same error appears \
            at once.",
        example: "Docker with `\"exec-opts\": [\"native.cgroupdriver=systemd\"]`, the legacy runtime \
            mode and no /dev/char symlinks for the NVIDIA devices: containers start fine and, \
            after the next `systemctl daemon-reload`, `nvidia-smi` inside them prints `Failed to \
            initialize NVML: Unknown Error`.",
        fix: "Create the /dev/char symlinks (`sudo nvidia-ctk system create-dev-char-symlinks \
            --create-all`, and the udev rule that keeps them), or switch to CDI mode (`mode = \
            \"cdi\"`), or use the cgroupfs driver; set `no-cgroups = false` unless running \
            rootless.",
        sources: &[
            "https://github.com/NVIDIA/nvidia-container-toolkit/issues/48",
            "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/troubleshooting.html#containers-losing-access-to-gpus-with-error-failed-to-initialize-nvml-unknown-error",
        ],
    },
};

const CTK_CONFIG: &str = "/etc/nvidia-container-runtime/config.toml";

pub(crate) fn check(cx: &HostContext<'_>, out: &mut Vec<CheckResult>) {
    let r = cx.reader;
    let mut evidence = Vec::new();
    let mut systemd: Option<bool> = None;
    let daemon = r.read_string(DAEMON_JSON);
    if let Some(v) = daemon
        .as_deref()
        .and_then(|d| serde_json::from_str::<serde_json::Value>(d).ok())
    {
        for o in v
            .get("exec-opts")
            .and_then(|x| x.as_array())
            .into_iter()
            .flatten()
        {
            if let Some(s) = o
                .as_str()
                .and_then(|s| s.strip_prefix("native.cgroupdriver="))
            {
                evidence.push(Evidence::file(
                    DAEMON_JSON,
                    format!("exec-opts native.cgroupdriver={s}"),
                ));
                systemd = Some(s == "systemd");
            }
        }
    }
    if systemd.is_none() {
        if let Some(info) = r
            .run(HostCommand::DockerInfo)
            .ok_stdout()
            .and_then(|o| serde_json::from_str::<serde_json::Value>(o).ok())
        {
            if let Some(d) = info.get("CgroupDriver").and_then(|x| x.as_str()) {
                evidence.push(Evidence::command(
                    "docker info",
                    format!("CgroupDriver {d}"),
                ));
                systemd = Some(d == "systemd");
            }
        }
    }
    if let Some(c) = r.read_string(CONTAINERD_TOML) {
        if let Some(l) = c
            .lines()
            .find(|l| l.trim().replace(' ', "").starts_with("SystemdCgroup="))
        {
            evidence.push(Evidence::file(CONTAINERD_TOML, l.trim()));
            if l.contains("true") {
                systemd = Some(true);
            }
        }
    }
    let ctk = r.read_string(CTK_CONFIG);
    let mut no_cgroups = false;
    let mut mode: Option<String> = None;
    if let Some(t) = &ctk {
        for l in t.lines() {
            let s = l
                .split('#')
                .next()
                .unwrap_or_default()
                .trim()
                .replace(' ', "");
            if s == "no-cgroups=true" {
                no_cgroups = true;
                evidence.push(Evidence::file(CTK_CONFIG, l.trim()));
            }
            if let Some(m) = s.strip_prefix("mode=") {
                mode = Some(m.trim_matches('"').to_string());
                evidence.push(Evidence::file(CTK_CONFIG, l.trim()));
            }
        }
    }
    let char_links = r.list_dir("/dev/char").map(|v| {
        v.into_iter()
            .filter(|(n, _)| {
                r.read_link(&format!("/dev/char/{n}"))
                    .map(|t| t.contains("nvidia"))
                    .unwrap_or(false)
            })
            .count()
    });
    match char_links {
        Some(n) => evidence.push(Evidence::file(
            "/dev/char",
            format!("{n} symlink(s) to nvidia devices"),
        )),
        None => evidence.push(Evidence::file("/dev/char", "not readable")),
    }
    if daemon.is_none() && ctk.is_none() && systemd.is_none() {
        out.push(
            CheckResult::skipped(
                &META,
                "not applicable: no container engine / NVIDIA runtime configuration found",
            )
            .evidence(evidence),
        );
        return;
    }
    let mut problems = Vec::new();
    if no_cgroups {
        problems.push(format!("{CTK_CONFIG} sets no-cgroups = true: containers get no GPU device rules (NVML Unknown Error unless devices are passed explicitly; fine only for rootless)"));
    }
    let cdi_mode = mode.as_deref() == Some("cdi");
    if systemd == Some(true) && !cdi_mode && char_links == Some(0) {
        problems.push("systemd cgroup driver with the legacy NVIDIA runtime and no /dev/char symlinks: after `systemctl daemon-reload` running containers fail with \"Failed to initialize NVML: Unknown Error\"".into());
    }
    if !problems.is_empty() {
        out.push(CheckResult::problem(&META, problems.join("; "))
            .evidence(evidence)
            .fix("`sudo nvidia-ctk system create-dev-char-symlinks --create-all` (and its udev rule), or mode = \"cdi\", or the cgroupfs driver; set no-cgroups = false unless rootless."));
        return;
    }
    if systemd.is_none() {
        out.push(
            CheckResult::could_not(&META, "the container engine's cgroup driver is unknown")
                .evidence(evidence),
        );
        return;
    }
    if systemd == Some(true) && !cdi_mode && char_links.is_none() {
        out.push(CheckResult::could_not(
            &META,
            "systemd cgroup driver, but /dev/char is not visible to confirm the device symlinks",
        )
        .evidence(evidence));
        return;
    }
    out.push(
        CheckResult::ok(
            &META,
            "cgroup setup keeps GPU access across systemd reloads",
        )
        .evidence(evidence),
    );
}
