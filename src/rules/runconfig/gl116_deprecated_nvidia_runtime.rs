//! GL116: `runtime: nvidia` / `--runtime=nvidia` / nvidia-docker instead of GPU requests.

use crate::finding::{Finding, Severity};
use crate::fix::plan::{self, At, Plan, PlannedEdit, YamlMap};
use crate::fix::{Applicability, Fix, FixKind};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};
use crate::runconfig::dockerfile::Pos;
use crate::runconfig::runspec::{RunKind, RunSpec};
use crate::runconfig::{loc, SpecContext, Subject};

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL116"),
    name: "deprecated-nvidia-runtime",
    default_severity: Severity::Warning,
    other_severities: &[Severity::Info],
    summary: "GPUs requested through the legacy NVIDIA runtime (runtime: nvidia, nvidia-docker)",
    doc: RuleDoc {
        what: "Compose `runtime: nvidia`, `docker run --runtime=nvidia`, the `nvidia-docker` \
            wrapper, or a script installing the `nvidia-docker2` package.",
        why:
            "These need the nvidia runtime registered in the daemon's daemon.json (nvidia-docker2, \
            deprecated since 2023); the GPUs then come from NVIDIA_VISIBLE_DEVICES (usually `all` \
            from the image) instead of an explicit request. Docker's `--gpus` and compose device \
            reservations work with the NVIDIA Container Toolkit alone. Combined with a device \
            reservation it is redundant and hides which path actually provides the GPU. \
            `--runtime=nvidia` with NVIDIA_VISIBLE_DEVICES is still documented for special \
            setups, so that form is only informational.",
        example: "`services: {app: {runtime: nvidia}}`.",
        fix: "Use `deploy.resources.reservations.devices` (compose) or `--gpus` (docker). The fix \
            keeps the GPUs the runtime handed over, which NVIDIA_VISIBLE_DEVICES names (the \
            command's, else the image's): `--runtime=nvidia` / `--runtime nvidia` becomes \
            `--gpus all`, `nvidia-docker` becomes `docker … --gpus all`, and compose `runtime: \
            nvidia` becomes a device reservation `{driver: nvidia, count: all, capabilities: \
            [gpu]}` (joining the service's own `deploy:`). Safe when the command sets \
            NVIDIA_VISIBLE_DEVICES=all or the image does (nvidia/cuda and NGC PyTorch images); \
            unsafe for other images (without the variable the runtime gave no GPU, the request \
            gives every one) and when the variable lists devices (`--gpus '\"device=1\"'`, \
            `device_ids: [\"1\"]`, the variable staying beside it). `none` / `void` or a \
            variable that is not a literal list get no edit. Beside a GPU request the runtime is \
            only removed (safe unless NVIDIA_VISIBLE_DEVICES is set). Repeats in one file are one \
            fix editing each, or none when one of them cannot be edited (a runtime from a YAML \
            anchor).",
        sources: &[
            "https://github.com/NVIDIA/nvidia-docker",
            "https://docs.docker.com/compose/how-tos/gpu-support/",
        ],
    },
};

/// A host setup script (or its documentation) installing the deprecated nvidia-docker
/// packages: `apt-get install nvidia-docker2`, `yum install nvidia-docker2`.
fn script_findings(file: &str, text: &str, markdown: bool) -> Vec<Finding> {
    if !text.contains("nvidia-docker") {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (words, _) in crate::runconfig::runspec::script_commands(file, text, markdown) {
        let argv: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
        let start = argv.iter().position(|w| *w != "sudo").unwrap_or(0);
        let Some(tool) = argv.get(start) else {
            continue;
        };
        if !matches!(*tool, "apt" | "apt-get" | "yum" | "dnf" | "zypper")
            || !argv[start..].contains(&"install")
        {
            continue;
        }
        for w in &words[start..] {
            let pkg = w.text.split(['=', '-']).collect::<Vec<_>>();
            if w.text == "nvidia-docker2"
                || w.text == "nvidia-docker"
                || pkg.starts_with(&["nvidia", "docker2"])
            {
                out.push(
                    META.finding(format!("installs `{}`, the deprecated nvidia-docker runtime package (its repository is archived): GPUs then come from `--runtime=nvidia` / `runtime: nvidia`", w.text))
                        .with_location(loc(file, w.pos))
                        .with_help("install nvidia-container-toolkit and request GPUs with `docker run --gpus` (or CDI)"),
                );
            }
        }
    }
    out
}

/// The table's entry point: this rule's findings on the context's subject.
pub fn check(cx: &SpecContext<'_>, out: &mut Vec<Finding>) {
    out.extend(findings(&cx.subject, cx));
}

/// The GPUs the legacy runtime hands over, as a request that keeps them.
enum Visible {
    /// Every GPU: NVIDIA_VISIBLE_DEVICES=all, said in the command (`true`) or left to the
    /// image.
    All(bool),
    /// The devices NVIDIA_VISIBLE_DEVICES lists (indexes or UUIDs).
    Ids(Vec<String>),
}

/// What NVIDIA_VISIBLE_DEVICES says; `None` when it asks for no GPU (`none`, `void`, empty)
/// or is not a literal list, which no request expresses.
fn visible(r: &RunSpec) -> Option<Visible> {
    let Some((_, v, _)) = r.env_value("NVIDIA_VISIBLE_DEVICES") else {
        return Some(Visible::All(false));
    };
    let v = v.trim().trim_matches(['"', '\'']);
    if v == "all" {
        return Some(Visible::All(true));
    }
    if matches!(v, "none" | "void" | "") {
        return None;
    }
    let ids: Vec<String> = v.split(',').map(|x| x.trim().to_string()).collect();
    ids.iter()
        .all(|x| !x.is_empty() && x.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
        .then_some(Visible::Ids(ids))
}

/// Whether the image itself sets NVIDIA_VISIBLE_DEVICES=all, so that without the variable
/// in the command the legacy runtime hands over every GPU, as `--gpus all` does: the
/// nvidia/cuda images (`ENV NVIDIA_VISIBLE_DEVICES all` in their Dockerfiles) and NGC's
/// PyTorch images built on them.
fn image_sets_all(r: &RunSpec) -> bool {
    use crate::runconfig::image::ImageKind;
    r.image
        .as_ref()
        .and_then(|i| i.info.as_ref())
        .is_some_and(|i| matches!(i.kind, ImageKind::NvidiaCuda | ImageKind::NgcPyTorch))
}

/// The GPU request that replaces the legacy runtime, and how safe the swap is: safe when it
/// hands over the same GPUs (all of them, and either the command or the image says all);
/// unsafe when the image may not set the variable (the runtime then gave no GPU, the request
/// gives every one) or when devices are listed (the variable stays beside the request).
fn request_for(r: &RunSpec) -> Option<(Visible, Applicability)> {
    let v = visible(r)?;
    let applicability = match &v {
        Visible::All(true) => Applicability::Safe,
        Visible::All(false) if image_sets_all(r) => Applicability::Safe,
        _ => Applicability::Unsafe,
    };
    Some((v, applicability))
}

fn gpus_flag(v: &Visible) -> String {
    match v {
        Visible::All(_) => "--gpus all".to_string(),
        Visible::Ids(ids) => format!("--gpus '\"device={}\"'", ids.join(",")),
    }
}

/// The device entry of a compose reservation for `v`.
fn reservation(v: &Visible) -> Vec<String> {
    let which = match v {
        Visible::All(_) => "count: all".to_string(),
        Visible::Ids(ids) => format!(
            "device_ids: [{}]",
            ids.iter()
                .map(|i| format!("\"{i}\""))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    vec![
        "driver: nvidia".to_string(),
        which,
        "capabilities: [gpu]".to_string(),
    ]
}

const WHY_SAFE: &str = "the legacy runtime hands over the GPUs NVIDIA_VISIBLE_DEVICES names (the command's, else the image's); a GPU request hands over the same ones through the NVIDIA Container Toolkit without the runtime registered in daemon.json";

/// The fix of one `runtime: nvidia` / `--runtime=nvidia` / `nvidia-docker` start: the fix
/// shown and the edits planned.
fn runtime_fix(r: &RunSpec, runtime_at: Pos) -> (Fix, Option<Plan>) {
    let at = |p: Pos| At {
        line: p.line,
        col: p.col,
    };
    let command = at(r.pos);
    // Already requested: the runtime only goes (the request decides the GPUs, unless the
    // variable chose them before).
    if r.gpus.is_some() {
        let applicability = if r.env_value("NVIDIA_VISIBLE_DEVICES").is_some() {
            Applicability::Unsafe
        } else {
            Applicability::Safe
        };
        let (replacement, edit) = match r.kind {
            RunKind::Compose => (
                "remove `runtime: nvidia`".to_string(),
                PlannedEdit::YamlDrop {
                    at: at(runtime_at),
                    key: "runtime".into(),
                    value: "nvidia".into(),
                },
            ),
            _ if r.engine == "nvidia-docker" => (
                "docker run (the GPU request stays)".to_string(),
                PlannedEdit::NvidiaDocker {
                    command,
                    flags: String::new(),
                },
            ),
            _ => (
                "remove --runtime=nvidia".to_string(),
                PlannedEdit::RunRuntime {
                    command,
                    with: String::new(),
                },
            ),
        };
        return (
            run_fix(replacement, "the GPU request already hands over the GPUs; the runtime only adds a dependency on daemon.json", applicability),
            plan::one(applicability, edit),
        );
    }
    let Some((v, applicability)) = request_for(r) else {
        let advice = match r.kind {
            RunKind::Compose => "deploy.resources.reservations.devices with driver: nvidia",
            _ => "--gpus with the devices NVIDIA_VISIBLE_DEVICES meant",
        };
        return (
            run_fix(advice.to_string(), "NVIDIA_VISIBLE_DEVICES asks for no GPU or is not a literal list: no request says the same", Applicability::Manual),
            None,
        );
    };
    let (replacement, edit) = match r.kind {
        RunKind::Compose => (
            format!(
                "deploy.resources.reservations.devices: [{{{}}}]",
                reservation(&v).join(", ")
            ),
            PlannedEdit::ComposeRuntimeToReservation {
                runtime: at(runtime_at),
                service: YamlMap::ValueOf {
                    at: command,
                    key: r.name.clone(),
                },
                reservation: reservation(&v),
            },
        ),
        _ if r.engine == "nvidia-docker" => (
            format!("docker run {}", gpus_flag(&v)),
            PlannedEdit::NvidiaDocker {
                command,
                flags: gpus_flag(&v),
            },
        ),
        _ => (
            gpus_flag(&v),
            PlannedEdit::RunRuntime {
                command,
                with: gpus_flag(&v),
            },
        ),
    };
    (
        run_fix(replacement, WHY_SAFE, applicability),
        plan::one(applicability, edit),
    )
}

fn run_fix(replacement: String, rationale: &str, applicability: Applicability) -> Fix {
    Fix {
        kind: FixKind::RunConfig,
        replacement,
        rationale: rationale.to_string(),
        basis: Vec::new(),
        edits: Vec::new(),
        change: None,
        applicability,
    }
}

fn findings(s: &Subject, _cx: &SpecContext) -> Vec<Finding> {
    let specs = match s {
        Subject::Runs(specs) => specs,
        Subject::Script(script) => {
            return script_findings(script.file, script.text, script.markdown);
        }
        Subject::Dockerfile(_) => return Vec::new(),
    };
    let mut out = Vec::new();
    for r in specs.iter() {
        if r.engine == "nvidia-docker" {
            let (fix, plan) = runtime_fix(r, r.pos);
            out.push(
                META.finding("`nvidia-docker` is the deprecated nvidia-docker wrapper")
                    .with_location(loc(&r.file, r.pos))
                    .with_help("use `docker run --gpus all`")
                    .with_planned_fix(fix, plan),
            );
            continue;
        }
        let Some((rt, p)) = &r.runtime else { continue };
        if rt != "nvidia" {
            continue;
        }
        let (sev, msg) = match (r.kind, r.gpus.is_some()) {
            (_, true) => (Severity::Warning, "runtime nvidia together with a GPU request: redundant, and it requires the nvidia runtime in daemon.json".to_string()),
            (RunKind::Compose, false) => (Severity::Warning, format!("service `{}` uses `runtime: nvidia` (nvidia-docker2 era) instead of a device reservation", r.name)),
            _ => (Severity::Info, "--runtime=nvidia: legacy way to get GPUs (needs the runtime in daemon.json; GPUs come from NVIDIA_VISIBLE_DEVICES)".to_string()),
        };
        // One finding per file and form: the fix (and daemon.json) is the same for every
        // service repeating it; the count goes into the message.
        if let Some(prev) = out.iter_mut().find(|f| {
            f.message.starts_with(msg.split('`').next().unwrap_or(&msg))
                && f.location
                    .as_ref()
                    .is_some_and(|l| l.file.as_deref() == Some(r.file.as_str()))
        }) {
            bump_count(&mut prev.message);
            // One fix for every repeat: all their edits, or none.
            let (_, plan) = runtime_fix(r, *p);
            prev.planned = Plan::merged(prev.planned.take(), plan.as_ref());
            continue;
        }
        let (fix, plan) = runtime_fix(r, *p);
        out.push(
            META.finding(msg)
                .with_severity(sev)
                .with_location(loc(&r.file, *p))
                .with_help(match r.kind {
                    RunKind::Compose => {
                        "use deploy.resources.reservations.devices with driver: nvidia"
                    }
                    _ => "use --gpus all / --gpus '\"device=0\"'",
                })
                .with_planned_fix(fix, plan),
        );
    }
    out
}

/// `msg` → `msg (2 services in this file)` → `msg (3 services in this file)`.
fn bump_count(msg: &mut String) {
    const SUFFIX: &str = " services in this file)";
    if let Some(open) = msg.rfind(" (") {
        if let Some(n) = msg
            .strip_suffix(SUFFIX)
            .and_then(|m| m.get(open + 2..))
            .and_then(|n| n.parse::<u32>().ok())
        {
            msg.truncate(open);
            msg.push_str(&format!(" ({}{SUFFIX}", n + 1));
            return;
        }
    }
    msg.push_str(&format!(" (2{SUFFIX}"));
}

#[cfg(test)]
mod tests {
    #[test]
    fn installing_nvidia_docker2() {
        let sh = "curl -s -L https://nvidia.github.io/nvidia-docker/gpgkey | sudo apt-key add -\nsudo apt-get update && sudo apt-get install -y nvidia-docker2\nsudo systemctl restart docker\n";
        let f = super::script_findings("setup.sh", sh, false);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(2));
        let md = "Install:\n\n```bash\nyum install -y nvidia-docker2\n```\n\nThe `nvidia-docker2` package is gone.\n";
        assert_eq!(super::script_findings("README.md", md, true).len(), 1);
        let toolkit = "sudo apt-get install -y nvidia-container-toolkit\n";
        assert!(super::script_findings("setup.sh", toolkit, false).is_empty());
    }

    use crate::finding::Severity;
    use crate::runconfig::testutil::runs;

    #[test]
    fn forms() {
        let f = runs(
            "compose",
            "services:\n  a:\n    image: x\n    runtime: nvidia\n",
            "GL116",
            vec![],
        );
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(4));
        assert_eq!(f[0].severity, Severity::Warning);
        let f = runs(
            "sh",
            "docker run --runtime=nvidia -e NVIDIA_VISIBLE_DEVICES=0 img\n",
            "GL116",
            vec![],
        );
        assert_eq!(f[0].severity, Severity::Info);
        assert_eq!(
            runs("sh", "nvidia-docker run img\n", "GL116", vec![]).len(),
            1
        );
    }

    #[test]
    fn repeats_in_one_file_are_one_finding() {
        let c = "services:\n  a:\n    image: x\n    runtime: nvidia\n  b:\n    image: x\n    runtime: nvidia\n  c:\n    image: x\n    runtime: nvidia\n";
        let f = runs("compose", c, "GL116", vec![]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(4));
        assert!(
            f[0].message.ends_with("(3 services in this file)"),
            "{}",
            f[0].message
        );
    }
}
