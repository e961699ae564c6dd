//! GL213: container engine present but GPUs not wired into it (NVIDIA Container Toolkit,
//! Docker runtimes / CDI, containerd runtime).

use super::{first_line, CheckResult, HostContext};
use crate::finding::Severity;
use crate::host::evidence::Evidence;
use crate::host::reader::{HostCommand, HostReader};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

pub(crate) static META: RuleMeta = RuleMeta {
    code: Code::new("GL213"),
    name: "container-toolkit-missing",
    default_severity: Severity::Error,
    other_severities: &[Severity::Info, Severity::Warning],
    summary: "Docker or containerd is installed but cannot give containers GPUs",
    doc: RuleDoc {
        what: "Looks for the NVIDIA Container Toolkit (nvidia-ctk, nvidia-container-cli, \
            nvidia-container-runtime(-hook)), Docker's /etc/docker/daemon.json (runtimes, \
            default-runtime, CDI), containerd's /etc/containerd/config.toml (an nvidia runtime), \
            and CDI specs in /etc/cdi and /var/run/cdi.",
        why: "Without the toolkit, `docker run --gpus all` fails with \"could not select device \
            driver \\\"\\\" with capabilities: [[gpu]]\"; a runtime entry that names a missing \
            binary fails every container using it; Kubernetes' device plugin needs containerd's \
            nvidia runtime (or CDI).",
        example: "Docker installed, the NVIDIA Container Toolkit not: `the NVIDIA Container Toolkit is \
            not installed (no nvidia-ctk, nvidia-container-cli or nvidia-container-runtime): \
            `--gpus` fails with \"could not select device driver\"`.",
        fix: "Install nvidia-container-toolkit, then `sudo nvidia-ctk runtime configure \
            --runtime=docker` (or `--runtime=containerd`) and restart the engine; for CDI, `sudo \
            nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`.",
        sources: &[
            "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html",
            "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/cdi-support.html",
        ],
    },
};

pub(crate) const DAEMON_JSON: &str = "/etc/docker/daemon.json";
pub(crate) const CONTAINERD_TOML: &str = "/etc/containerd/config.toml";

/// A program on PATH or in the usual bin dirs.
pub(crate) fn find_program(r: &dyn HostReader, name: &str) -> Option<String> {
    let path = r.env("PATH").unwrap_or_default();
    let mut dirs: Vec<String> = path
        .split(':')
        .filter(|d| d.starts_with('/'))
        .map(String::from)
        .collect();
    for d in ["/usr/bin", "/usr/local/bin", "/usr/sbin", "/bin", "/sbin"] {
        if !dirs.iter().any(|x| x == d) {
            dirs.push(d.into());
        }
    }
    dirs.into_iter()
        .map(|d| format!("{}/{name}", d.trim_end_matches('/')))
        .find(|p| r.exists(p))
}

/// CDI spec files that describe NVIDIA devices.
pub(crate) fn cdi_specs(r: &dyn HostReader) -> Vec<String> {
    let mut out = Vec::new();
    for dir in ["/etc/cdi", "/var/run/cdi", "/run/cdi"] {
        for (name, kind) in r.list_dir(dir).unwrap_or_default() {
            let p = format!("{dir}/{name}");
            if kind != crate::host::reader::EntryKind::Dir
                && (name.ends_with(".yaml") || name.ends_with(".json") || name.ends_with(".yml"))
                && r.read_string(&p)
                    .map(|t| t.contains("nvidia.com/"))
                    .unwrap_or(false)
            {
                out.push(p);
            }
        }
    }
    out
}

pub(crate) fn check(cx: &HostContext<'_>, out: &mut Vec<CheckResult>) {
    let r = cx.reader;
    let mut evidence = Vec::new();
    let daemon = r.read_string(DAEMON_JSON);
    let containerd = r.read_string(CONTAINERD_TOML);
    let docker_bin = find_program(r, "dockerd").or_else(|| find_program(r, "docker"));
    let containerd_bin = find_program(r, "containerd");
    let has_docker = daemon.is_some() || docker_bin.is_some();
    let has_containerd = containerd.is_some() || containerd_bin.is_some();
    for b in [&docker_bin, &containerd_bin].into_iter().flatten() {
        evidence.push(Evidence::file(b.as_str(), "present"));
    }
    if !has_docker && !has_containerd {
        out.push(CheckResult::ok(
            &META,
            "no Docker or containerd found: container wiring not checked",
        ));
        return;
    }
    let mut tools = Vec::new();
    for t in [
        "nvidia-ctk",
        "nvidia-container-cli",
        "nvidia-container-runtime",
        "nvidia-container-runtime-hook",
    ] {
        if let Some(p) = find_program(r, t) {
            evidence.push(Evidence::file(&p, "present"));
            tools.push(t);
        }
    }
    for cmd in [
        HostCommand::NvidiaCtkVersion,
        HostCommand::NvidiaContainerCliVersion,
    ] {
        if let Some(o) = r.run(cmd).ok_stdout() {
            evidence.push(Evidence::command(cmd.display(), first_line(o)));
            let name = if cmd == HostCommand::NvidiaCtkVersion {
                "nvidia-ctk"
            } else {
                "nvidia-container-cli"
            };
            if !tools.contains(&name) {
                tools.push(name);
            }
        }
    }
    let cdi = cdi_specs(r);
    for c in &cdi {
        evidence.push(Evidence::file(c, "CDI spec for nvidia.com devices"));
    }
    let mut problems: Vec<(String, Severity)> = Vec::new();
    if tools.is_empty() {
        problems.push(("the NVIDIA Container Toolkit is not installed (no nvidia-ctk, nvidia-container-cli or nvidia-container-runtime): `--gpus` fails with \"could not select device driver\"".into(), Severity::Error));
    }
    if let Some(d) = &daemon {
        match serde_json::from_str::<serde_json::Value>(d) {
            Ok(v) => {
                let runtimes = v.get("runtimes").and_then(|x| x.as_object());
                if let Some(rt) = runtimes {
                    for (name, spec) in rt {
                        let path = spec
                            .get("path")
                            .and_then(|p| p.as_str())
                            .unwrap_or_default();
                        evidence.push(Evidence::file(
                            DAEMON_JSON,
                            format!("runtime {name} -> {path}"),
                        ));
                        if path.contains("nvidia") {
                            let found = if path.starts_with('/') {
                                r.exists(path)
                            } else {
                                find_program(r, path).is_some()
                            };
                            if !found {
                                problems.push((format!("{DAEMON_JSON} runtime {name:?} points to {path}, which is not installed"), Severity::Error));
                            }
                        }
                    }
                }
                if let Some(def) = v.get("default-runtime").and_then(|x| x.as_str()) {
                    evidence.push(Evidence::file(
                        DAEMON_JSON,
                        format!("default-runtime {def}"),
                    ));
                    if !runtimes.map(|m| m.contains_key(def)).unwrap_or(false)
                        && def != "runc"
                        && def != "io.containerd.runc.v2"
                    {
                        problems.push((format!("{DAEMON_JSON} default-runtime {def:?} is not defined in runtimes: dockerd will not start"), Severity::Error));
                    }
                }
                if v.pointer("/features/cdi").and_then(|x| x.as_bool()) == Some(true) {
                    evidence.push(Evidence::file(DAEMON_JSON, "features.cdi true"));
                    if cdi.is_empty() {
                        problems.push(("Docker has CDI enabled but no NVIDIA CDI spec exists in /etc/cdi or /var/run/cdi".into(), Severity::Warning));
                    }
                }
            }
            Err(e) => problems.push((
                format!("{DAEMON_JSON} is not valid JSON ({e}): dockerd will not start"),
                Severity::Error,
            )),
        }
    }
    if let Some(c) = &containerd {
        let nvidia_rt = c.contains("nvidia-container-runtime")
            || c.contains("runtimes.nvidia")
            || c.contains("nvidia-cdi");
        let cdi_on = c
            .lines()
            .any(|l| l.trim().replace(' ', "") == "enable_cdi=true");
        evidence.push(Evidence::file(
            CONTAINERD_TOML,
            format!(
                "nvidia runtime {}, enable_cdi {}",
                if nvidia_rt { "configured" } else { "absent" },
                cdi_on
            ),
        ));
        let cdi_ready = cdi_on && !cdi.is_empty();
        if !nvidia_rt && !cdi_ready {
            problems.push((format!("{CONTAINERD_TOML} has no nvidia runtime (and no CDI): Kubernetes pods get no GPUs"), Severity::Warning));
        }
    }
    if !problems.is_empty() {
        out.push(CheckResult::problems(&META, "", &problems)
            .evidence(evidence)
            .fix("Install nvidia-container-toolkit, run `sudo nvidia-ctk runtime configure --runtime=docker` (or containerd) and restart the engine; for CDI `sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`."));
        return;
    }
    out.push(
        CheckResult::ok(
            &META,
            format!("container toolkit present ({})", tools.join(", ")),
        )
        .evidence(evidence),
    );
}
