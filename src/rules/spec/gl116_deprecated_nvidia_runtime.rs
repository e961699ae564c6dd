//! GL116: `runtime: nvidia` / `--runtime=nvidia` / nvidia-docker instead of GPU requests.

use crate::finding::{Finding, Severity};
use crate::rule_meta::{Code, RuleMeta};
use crate::spec::runspec::RunKind;
use crate::spec::{loc, RuleCtx, Subject};

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL116"),
    name: "deprecated-nvidia-runtime",
    default_severity: Severity::Warning,
    summary: "GPUs requested through the legacy NVIDIA runtime (runtime: nvidia, nvidia-docker)",
    explanation: "What: compose `runtime: nvidia`, `docker run --runtime=nvidia`, or the \
`nvidia-docker` wrapper.\n\
Why: these need the nvidia runtime registered in the daemon's daemon.json (nvidia-docker2, \
deprecated since 2023); the GPUs then come from NVIDIA_VISIBLE_DEVICES (usually `all` from the \
image) instead of an explicit request. Docker's `--gpus` and compose device reservations work \
with the NVIDIA Container Toolkit alone. Combined with a device reservation it is redundant and \
hides which path actually provides the GPU. `--runtime=nvidia` with NVIDIA_VISIBLE_DEVICES is \
still documented for special setups, so that form is only informational.\n\
Example: `services: {app: {runtime: nvidia}}`.\n\
Fix: use `deploy.resources.reservations.devices` (compose) or `--gpus` (docker).",
};

pub fn check(s: &Subject, _cx: &RuleCtx) -> Vec<Finding> {
    let Subject::Runs(specs) = s else {
        return Vec::new();
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

#[cfg(test)]
mod tests {
    use crate::finding::Severity;
    use crate::spec::testutil::runs;

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
}
