//! GL116: `runtime: nvidia` / `--runtime=nvidia` / nvidia-docker instead of GPU requests.

use crate::finding::{Finding, Severity};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};
use crate::runconfig::runspec::RunKind;
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
        fix: "Use `deploy.resources.reservations.devices` (compose) or `--gpus` (docker).",
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
            out.push(
                META.finding("`nvidia-docker` is the deprecated nvidia-docker wrapper")
                    .with_location(loc(&r.file, r.pos))
                    .with_help("use `docker run --gpus all`"),
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
            continue;
        }
        out.push(
            META.finding(msg)
                .with_severity(sev)
                .with_location(loc(&r.file, *p))
                .with_help(match r.kind {
                    RunKind::Compose => {
                        "use deploy.resources.reservations.devices with driver: nvidia"
                    }
                    _ => "use --gpus all / --gpus '\"device=0\"'",
                }),
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
