//! GL016 cuda-wheel-requirement-unmet: a package's own metadata asks for a version of an NVIDIA
//! CUDA wheel (`nvidia-cudnn-cu12>=9.8,<10.0`) that the environment it is installed in has at
//! another version.

use super::context::ImageContext;
use super::gl012_package_library_missing::package_location;
use crate::detect::python_dist::{normalize_name, version_satisfies};
use crate::finding::Finding;
use crate::inventory::cuda_need::extra_of;
use crate::inventory::PythonPackage;
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL016"),
    name: "cuda-wheel-requirement-unmet",
    default_severity: crate::finding::Severity::Error,
    other_severities: &[],
    summary: "A package requires another version of an NVIDIA CUDA wheel than its environment has",
    doc: RuleDoc {
        what: "A Python package's METADATA (`Requires-Dist`) names the NVIDIA CUDA component wheels \
            it was built and tested against, with version floors and ceilings: jax's CUDA plugin \
            `nvidia-cudnn-cu12>=9.8,<10.0` under its `with-cuda` extra, TensorFlow's \
            `[and-cuda]` exact pins, torch's exact pins. The wheel of that name installed in the \
            same site-packages is at a version the requirement excludes (pip installed it for \
            another package, or a later `pip install` replaced it). A requirement under an \
            extra is judged only when the wheel it names is installed there, since that is when \
            the package loads it; markers for other platforms are skipped.",
        why: "jax checks the cuDNN, cuBLAS, cuSPARSE, cuFFT and cuSOLVER it loads at start-up and \
            refuses older ones (`RuntimeError: Unable to load cuDNN. Is it installed?`, `cuDNN \
            version ... is older than the version jaxlib was built against`); TensorFlow and \
            torch fail with missing symbols or wrong results on a component older than their \
            build. The package's own metadata is the floor its makers state; `pip check` reports \
            the same conflict, but nobody runs it inside the image.",
        example: "jax-cuda12-plugin 0.6.0 requires `nvidia-cudnn-cu12>=9.8,<10.0` (extra \
            `with-cuda`); the image has nvidia-cudnn-cu12 9.1.0.70 (pinned by torch 2.5.1).",
        fix: "Install versions of the two packages whose requirements agree (`pip check` in the \
            image lists every conflict), or give each its own environment.",
        sources: &[
            "https://packaging.python.org/en/latest/specifications/core-metadata/#requires-dist-multiple-use",
            "https://docs.jax.dev/en/latest/installation.html#pip-installation-nvidia-gpu-cuda-installed-via-pip-easier",
        ],
    },
};

/// A Requires-Dist line on an NVIDIA CUDA wheel that applies on Linux on `machine` (Python's
/// `platform_machine`: `x86_64`, `aarch64`; `None` when the image's is unknown): (normalized
/// name, specifiers, extra).
fn cuda_wheel_requirement(
    line: &str,
    machine: Option<&str>,
) -> Option<(String, String, Option<String>)> {
    let (req, marker) = match line.split_once(';') {
        Some((r, m)) => (r.trim(), Some(m.trim())),
        None => (line.trim(), None),
    };
    // Another platform's requirement is not this image's; a machine condition is judged only
    // when it names the image's machine.
    if marker.is_some_and(|m| {
        ["Windows", "Darwin", "win32"].iter().any(|p| m.contains(p))
            || (m.contains("platform_machine") && !machine.is_some_and(|x| m.contains(x)))
    }) {
        return None;
    }
    let extra = marker.and_then(extra_of);
    let end = req
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'))
        .unwrap_or(req.len());
    let name = normalize_name(&req[..end]);
    if !name.starts_with("nvidia-") {
        return None;
    }
    let spec = req[end..]
        .trim()
        .trim_start_matches('(')
        .trim_end_matches(')')
        .trim();
    if spec.is_empty() || spec.starts_with('[') {
        return None;
    }
    Some((name, spec.to_string(), extra))
}

pub fn check(ctx: &ImageContext, out: &mut Vec<Finding>) {
    let pkgs = &ctx.inventory.python_packages;
    let machine = ctx
        .inventory
        .image
        .platform
        .as_ref()
        .map(|p| match p.architecture.as_str() {
            "amd64" => "x86_64",
            "arm64" => "aarch64",
            other => other,
        });
    let installed = |name: &str, env: &PythonPackage| {
        pkgs.iter()
            .find(|q| q.location == env.location && normalize_name(&q.name) == name)
    };
    for p in pkgs {
        for line in &p.requires {
            let Some((name, spec, extra)) = cuda_wheel_requirement(line, machine) else {
                continue;
            };
            let Some(have) = installed(&name, p) else {
                continue;
            };
            if version_satisfies(&have.version, &spec) != Some(false) {
                continue;
            }
            let under = extra.map(|e| format!(" (extra `{e}`)")).unwrap_or_default();
            out.push(
                META.finding(format!(
                    "{} {} requires `{name}{spec}`{under}; its environment has {} {}, which that excludes",
                    p.name, p.version, have.name, have.version
                ))
                .with_location(package_location(ctx, p))
                .with_help(format!(
                    "install a {name} version that meets `{spec}` and every other package's requirement (`pip check` lists the conflicts), or versions of {} that agree with it",
                    p.name
                )),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirement_lines() {
        let x86 = Some("x86_64");
        assert_eq!(
            cuda_wheel_requirement("nvidia-cudnn-cu12<10.0,>=9.8; extra == \"with-cuda\"", x86),
            Some((
                "nvidia-cudnn-cu12".into(),
                "<10.0,>=9.8".into(),
                Some("with-cuda".into())
            ))
        );
        assert_eq!(
            cuda_wheel_requirement(
                "nvidia_cublas_cu12 (==12.4.5.8) ; platform_system == \"Linux\"",
                x86
            ),
            Some(("nvidia-cublas-cu12".into(), "==12.4.5.8".into(), None))
        );
        let torch = "nvidia-nccl-cu12==2.21.5; platform_system == \"Linux\" and platform_machine == \"x86_64\"";
        assert!(cuda_wheel_requirement(torch, x86).is_some());
        assert_eq!(cuda_wheel_requirement(torch, Some("aarch64")), None);
        assert_eq!(cuda_wheel_requirement(torch, None), None);
        assert_eq!(
            cuda_wheel_requirement("nvidia-cudnn-cu12>=9; sys_platform == \"win32\"", x86),
            None
        );
        assert_eq!(cuda_wheel_requirement("nvidia-cudnn-cu12", x86), None);
        assert_eq!(cuda_wheel_requirement("numpy>=1.26", x86), None);
        assert_eq!(version_satisfies("9.1.0.70", "<10.0,>=9.8"), Some(false));
        assert_eq!(version_satisfies("9.8.0.87", "<10.0,>=9.8"), Some(true));
        assert_eq!(version_satisfies("not a version", ">=9.8"), None);
    }
}
