//! GL008 torch-companion-mismatch: torchvision, torchaudio, xformers, flash-attn, triton or
//! the nvidia-* wheels were built for another torch or CUDA than the installed torch.

use super::context::ImageContext;
use crate::detect::python_dist::version_satisfies;
use crate::finding::{Finding, Location, Severity};
use crate::inventory::PythonPackage;
use crate::rule_meta::{Code, RuleDoc, RuleMeta};
use crate::vocab::ImagePath;

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
            torch's own `nvidia-cudnn-cu12==…`) that the installed versions violate. Every \
            distribution built against torch is judged, not only a named list: an exact \
            `Requires-Dist: torch==X` (xformers, vllm, flash-attn builds), a torch recorded in \
            the version (flash-attn's `+cu122torch2.3…`, PyG's `+pt23cu121`), the torch its \
            release pins on PyPI when the installed metadata names none \
            (matrices/torch_dependents.toml), and a CUDA major in such a package's version \
            (`+cu118`) other than torch's. These extend GL008 rather than forming a new rule: \
            the failure, the fix (install the build for the installed torch) and the \
            suppression a user writes are the same as for torchvision.",
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

/// The torch release line a local version records: flash-attn's `+cu122torch2.3cxx11abiFALSE`
/// → 2.3; PyG's `+pt23cu121` (torch-scatter, torch-sparse) → 2.3, `+pt113cu117` → 1.13
/// (torch majors are one digit).
fn local_torch(v: &str) -> Option<String> {
    let local = v.split_once('+')?.1.to_ascii_lowercase();
    if let Some(i) = local.find("torch") {
        let mm: String = local[i + 5..]
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let mm = mm.trim_end_matches('.');
        return (!mm.is_empty()).then(|| mm.to_string());
    }
    let i = local
        .match_indices("pt")
        .map(|(i, _)| i)
        .find(|&i| i == 0 || !local.as_bytes()[i - 1].is_ascii_alphabetic())?;
    let digits: String = local[i + 2..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    (2..=3)
        .contains(&digits.len())
        .then(|| format!("{}.{}", &digits[..1], &digits[1..]))
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

/// The torch release a companion version pairs with (torch companions matrix).
fn companion_torch(ctx: &ImageContext, name: &str, version: &str) -> Option<String> {
    ctx.facts.torch_companion(name, version).map(|t| t.value)
}

/// What GL008 adds for extensions other than torch's own companions: a CUDA major recorded
/// in the version (`+cu118`, `+pt23cu121`) other than torch's, for a package built against
/// torch (it pins torch, or its version names a torch); and, when the installed metadata pins
/// no torch, the torch its release pins on PyPI (matrices/torch_dependents.toml).
fn extension_findings(
    ctx: &ImageContext,
    torch: &PythonPackage,
    p: &PythonPackage,
    at: &dyn Fn(&PythonPackage) -> Location,
    out: &mut Vec<Finding>,
) {
    if ["torchvision", "torchaudio", "torchtext"].contains(&p.name.as_str()) {
        return; // judged by release line and CUDA release above
    }
    let pins_torch = p
        .requires
        .iter()
        .any(|r| requirement(r).is_some_and(|(n, _)| n == "torch"));
    let pypi_pin = (!pins_torch)
        .then(|| ctx.facts.torch_pinned_by(&p.name, &p.version))
        .flatten();
    if let Some(pin) = &pypi_pin {
        if version_satisfies(&torch.version, &format!("=={}", pin.value)) == Some(false) {
            out.push(
                META.finding(format!(
                    "{} {} is built for torch {} (its release's wheel metadata on PyPI pins torch=={}), but torch {} is installed",
                    p.name, p.version, pin.value, pin.value, torch.version
                ))
                .with_location(at(p))
                .with_help(format!(
                    "install the {} release built for torch {}",
                    p.name, torch.version
                )),
            );
        }
    }
    let built_against_torch = pins_torch || pypi_pin.is_some() || local_torch(&p.version).is_some();
    // The package's CUDA as the inventory read it from its version (`+cu118`, `+pt23cu121`).
    let (Some(mine), Some(theirs)) = (p.cuda, torch.cuda) else {
        return;
    };
    if built_against_torch && mine.major != theirs.major {
        out.push(
            META.finding(format!(
                "{} {} is built for CUDA {} but torch {} is built for CUDA {}",
                p.name,
                p.version,
                mine.major_minor(),
                torch.version,
                theirs.major_minor()
            ))
            .with_location(at(p))
            .with_help(format!(
                "install the {} build for torch's CUDA ({})",
                p.name,
                theirs.cu_tag()
            )),
        );
    }
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
            extension_findings(ctx, torch, p, &at, out);
            // flash-attn / PyG style local versions: +cu122torch2.3…, +pt23cu121.
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
                if name == "torch" && version_satisfies(&torch.version, &spec) == Some(false) {
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
                if version_satisfies(&dep.version, &spec) == Some(false) {
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
    fn torch_and_cuda_in_local_versions() {
        assert_eq!(local_torch("2.1.2+pt23cu121").as_deref(), Some("2.3"));
        assert_eq!(local_torch("0.6.18+pt113cu117").as_deref(), Some("1.13"));
        assert_eq!(local_torch("1.0+opt23"), None);
        assert_eq!(local_torch("0.0.28+cu121"), None);
        use crate::version::CudaTag;
        assert_eq!(
            CudaTag::from_local_version("2.1.2+pt23cu121"),
            Some(CudaTag::release(12, 1))
        );
        assert_eq!(CudaTag::from_local_version("2.1.2"), None);
    }

    /// Issue 28: every extension built against torch, not only torchvision/torchaudio: an
    /// exact pin in its metadata, a torch in its version (PyG's `+pt23`), the pin its PyPI
    /// release records when the installed metadata has none, and a CUDA major in its version.
    #[test]
    fn extensions_built_against_another_torch() {
        use crate::rules::check_image;
        use crate::rules::image::testutil::{matrix, pkg};
        let m = matrix();
        let site = "usr/lib/python3/dist-packages";
        let gl008 = |extra: Vec<PythonPackage>| -> Vec<String> {
            let mut inv = crate::inventory::Inventory::default();
            inv.python_packages
                .push(pkg("torch", "2.4.0+cu121", Some("12.1"), site));
            inv.python_packages.extend(extra);
            check_image(&inv, &m, &[])
                .into_iter()
                .filter(|f| f.rule == "GL008")
                .map(|f| f.message)
                .collect()
        };
        let mut xf = pkg("xformers", "0.0.27.post2", None, site);
        xf.requires = vec!["torch==2.4.0".into(), "numpy".into()];
        assert!(gl008(vec![xf.clone()]).is_empty());
        xf.requires = vec!["torch==2.3.1".into()];
        assert_eq!(
            gl008(vec![xf]),
            ["xformers 0.0.27.post2 requires torch==2.3.1, but torch 2.4.0+cu121 is installed"]
        );
        // PyG's wheels record torch and CUDA in the version.
        let scatter = pkg("torch-scatter", "2.1.2+pt23cu118", Some("11.8"), site);
        let f = gl008(vec![scatter]);
        assert!(
            f.contains(&"torch-scatter 2.1.2+pt23cu118 is built for torch 2.3, but torch 2.4.0+cu121 is installed".to_string()),
            "{f:?}"
        );
        assert!(
            f.contains(&"torch-scatter 2.1.2+pt23cu118 is built for CUDA 11.8 but torch 2.4.0+cu121 is built for CUDA 12.1".to_string()),
            "{f:?}"
        );
        assert!(gl008(vec![pkg(
            "torch-scatter",
            "2.1.2+pt24cu121",
            Some("12.1"),
            site
        )])
        .is_empty());
        // A CUDA tag alone says nothing about torch: a package not built against torch.
        assert!(gl008(vec![pkg("cupy", "13.0.0+cu118", Some("11.8"), site)]).is_empty());
        // vllm 0.30.0 pins torch==2.13.0 on PyPI (torch_dependents.toml); installed metadata
        // without Requires-Dist (an egg-info) is judged by that pin.
        let f = gl008(vec![pkg("vllm", "0.30.0", None, site)]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].starts_with("vllm 0.30.0 is built for torch 2.13.0 (its release's wheel metadata on PyPI pins torch==2.13.0)"),
            "{f:?}"
        );
        // A release the table does not list: unknown, nothing said.
        assert!(gl008(vec![pkg("vllm", "0.0.1", None, site)]).is_empty());
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
        assert_eq!(version_satisfies("2.3.1", "==2.3.0"), Some(false));
        assert_eq!(version_satisfies("2.3.1", ">=2.3"), Some(true));
    }
}
