//! GL008 torch-companion-mismatch: torchvision, torchaudio, xformers, flash-attn, triton or
//! the nvidia-* wheels were built for another torch or CUDA than the installed torch.

use super::context::ImageContext;
use crate::finding::{Finding, Location, Severity};
use crate::inventory::PythonPackage;
use crate::rule_meta::{Code, RuleDoc, RuleMeta};
use crate::vocab::ImagePath;
use std::str::FromStr;

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL008"),
    name: "torch-companion-mismatch",
    default_severity: Severity::Error,
    other_severities: &[Severity::Warning],
    summary:
        "A torch companion package was built for another torch or CUDA than the installed torch",
    doc: RuleDoc {
        what:
            "Torchvision, torchaudio, xformers, flash-attn and similar packages contain C++/CUDA \
            extensions compiled against one exact torch release and CUDA variant. The installed \
            torch is another one: a companion from a different release line (torchvision 0.17 \
            pairs with torch 2.2, not 2.3), another CUDA variant (torch cu121 with torchvision \
            cu118), or a pin in a package's metadata (xformers `Requires-Dist: torch==2.3.0`, \
            torch's own `nvidia-cudnn-cu12==…`) that the installed versions violate.",
        why: "The extensions link torch's C++ ABI and CUDA runtime; mismatches fail at import \
            (`undefined symbol`, `operator torchvision::nms does not exist`) or at the first \
            kernel (`CUDA error: invalid device function`). Versions pairs are from PyTorch's \
            published compatibility tables (matrices/torch_companions.toml).",
        example:
            "`pip install torch==2.3.1 torchvision==0.17.2`: `torchvision 0.17.2 pairs with torch \
            2.2, but torch 2.3.1 is installed`; or torch from whl/cu121 with torchvision from \
            whl/cu118: `torchvision 0.18.1+cu118 is built for CUDA 11.8 but torch 2.3.1+cu121 is \
            built for CUDA 12.1`.",
        fix: "Install matching versions from the same index, e.g. `pip install torch==2.3.1 \
            torchvision==0.18.1 --index-url https://download.pytorch.org/whl/cu121`.",
        sources: &[
            "https://github.com/pytorch/pytorch/blob/main/RELEASE.md#release-compatibility-matrix",
            "https://pytorch.org/get-started/previous-versions/",
        ],
    },
};

fn major_minor(v: &str) -> String {
    let base = v.split('+').next().unwrap_or(v);
    base.split('.').take(2).collect::<Vec<_>>().join(".")
}

/// `torch2.3` inside a local version such as `+cu122torch2.3cxx11abiFALSE`.
fn local_torch(v: &str) -> Option<String> {
    let local = v.split_once('+')?.1;
    let i = local.find("torch")?;
    let rest = &local[i + 5..];
    let mm: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    (!mm.is_empty()).then(|| mm.trim_end_matches('.').to_string())
}

/// Parse a Requires-Dist line into (normalized name, specifiers) when it applies
/// unconditionally on Linux (markers with `extra` are optional features: skipped).
fn requirement(line: &str) -> Option<(String, String)> {
    let (req, marker) = match line.split_once(';') {
        Some((r, m)) => (r, Some(m)),
        None => (line, None),
    };
    if let Some(m) = marker {
        if m.contains("extra")
            || m.contains("Windows")
            || m.contains("Darwin")
            || m.contains("win32")
        {
            return None;
        }
    }
    let req = req.trim();
    let end = req
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'))
        .unwrap_or(req.len());
    let name = req[..end].to_ascii_lowercase().replace('_', "-");
    let spec = req[end..]
        .trim()
        .trim_start_matches('(')
        .trim_end_matches(')')
        .trim();
    if spec.starts_with('[') || spec.is_empty() {
        return None;
    }
    Some((name, spec.to_string()))
}

fn satisfies(version: &str, spec: &str) -> Option<bool> {
    let v = pep440_rs::Version::from_str(version).ok()?;
    let s = pep440_rs::VersionSpecifiers::from_str(spec).ok()?;
    Some(s.contains(&v))
}

/// The torch release a companion version pairs with (torch companions matrix).
fn companion_torch(ctx: &ImageContext, name: &str, version: &str) -> Option<String> {
    ctx.facts.torch_companion(name, version).map(|t| t.value)
}

pub fn check(ctx: &ImageContext, out: &mut Vec<Finding>) {
    let inv = ctx.inventory;
    // Judge each environment (site-packages) on its own.
    let mut locations: Vec<&ImagePath> = inv.python_packages.iter().map(|p| &p.location).collect();
    locations.sort();
    locations.dedup();
    for loc in locations {
        let env: Vec<&PythonPackage> = inv
            .python_packages
            .iter()
            .filter(|p| &p.location == loc)
            .collect();
        let Some(torch) = env.iter().find(|p| p.name == "torch") else {
            continue;
        };
        let torch_mm = major_minor(&torch.version);
        let torch_cuda = torch.cuda;
        let at =
            |p: &PythonPackage| Location::in_image(ctx.layer_digest(p.layer), p.location.clone());
        for comp in env
            .iter()
            .filter(|p| p.name == "torchvision" || p.name == "torchaudio" || p.name == "torchtext")
        {
            if let Some(expected) = companion_torch(ctx, &comp.name, &comp.version) {
                if major_minor(&expected) != torch_mm {
                    out.push(
                        META.finding(format!(
                            "{} {} pairs with torch {expected}, but torch {} is installed",
                            comp.name, comp.version, torch.version
                        ))
                        .with_location(at(comp))
                        .with_help(format!(
                            "install the {} release that pairs with torch {torch_mm}",
                            comp.name
                        )),
                    );
                }
            }
            if let (Some(a), Some(b)) = (comp.cuda, torch_cuda) {
                if !a.same_release(&b) {
                    out.push(
                        META.finding(format!(
                            "{} {} is built for CUDA {} but torch {} is built for CUDA {}",
                            comp.name,
                            comp.version,
                            a.major_minor(),
                            torch.version,
                            b.major_minor()
                        ))
                        .with_location(at(comp))
                        .with_help(format!(
                            "install {} from the same index as torch ({})",
                            comp.name,
                            b.cu_tag()
                        )),
                    );
                }
            }
        }
        for p in &env {
            if p.name == "torch" {
                continue;
            }
            // flash-attn style local versions: +cu122torch2.3…
            if let Some(t) = local_torch(&p.version) {
                if t != torch_mm {
                    out.push(
                        META.finding(format!(
                            "{} {} is built for torch {t}, but torch {} is installed",
                            p.name, p.version, torch.version
                        ))
                        .with_location(at(p))
                        .with_help(format!("install a {} build for torch {torch_mm}", p.name)),
                    );
                }
            }
            for r in &p.requires {
                let Some((name, spec)) = requirement(r) else {
                    continue;
                };
                if name == "torch" && satisfies(&torch.version, &spec) == Some(false) {
                    out.push(
                        META.finding(format!(
                            "{} {} requires torch{spec}, but torch {} is installed",
                            p.name, p.version, torch.version
                        ))
                        .with_location(at(p))
                        .with_help(format!(
                            "install a {} release built for torch {}",
                            p.name, torch.version
                        )),
                    );
                }
            }
        }
        // torch's own pins of triton and the nvidia-* wheels.
        for r in &torch.requires {
            let Some((name, spec)) = requirement(r) else {
                continue;
            };
            if !(name.starts_with("nvidia-") || name == "triton" || name == "pytorch-triton") {
                continue;
            }
            if let Some(dep) = env.iter().find(|p| p.name.replace('_', "-") == name) {
                if satisfies(&dep.version, &spec) == Some(false) {
                    out.push(
                        META.finding(format!(
                            "torch {} requires {name}{spec}, but {name} {} is installed",
                            torch.version, dep.version
                        ))
                        .with_severity(Severity::Warning)
                        .with_location(at(dep))
                        .with_help(format!("pip install '{name}{spec}'")),
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_version_parts() {
        assert_eq!(
            local_torch("2.5.8+cu122torch2.3cxx11abiFALSE").as_deref(),
            Some("2.3")
        );
    }

    #[test]
    fn requirement_lines() {
        assert_eq!(
            requirement("torch==2.3.0").unwrap(),
            ("torch".into(), "==2.3.0".into())
        );
        assert_eq!(
            requirement("nvidia-cudnn-cu12==9.1.0.70; platform_system == \"Linux\" and platform_machine == \"x86_64\"").unwrap().0,
            "nvidia-cudnn-cu12"
        );
        assert!(requirement("pytest; extra == \"dev\"").is_none());
        assert_eq!(satisfies("2.3.1", "==2.3.0"), Some(false));
        assert_eq!(satisfies("2.3.1", ">=2.3"), Some(true));
    }
}
