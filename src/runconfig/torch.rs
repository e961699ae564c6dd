//! Which CUDA build of PyTorch an install gets: a `+cuXYZ` pin, a wheel URL, a
//! `download.pytorch.org/whl/cuXYZ` index, uv's `--torch-backend`, conda `pytorch-cuda=` /
//! `cudatoolkit=`, or nothing (PyPI's default for that version, from the facts).

use super::build::{BuildFacts, Stage};
use super::dockerfile::Pos;
use super::pkg::{Install, PipInstall, Req};
use crate::matrix::Facts;
use crate::version::CudaVersion;

#[derive(Debug, Clone, PartialEq)]
pub enum TorchCuda {
    /// The CUDA build was chosen explicitly (`how` says by what).
    Pinned {
        cuda: CudaVersion,
        how: String,
    },
    Cpu,
    /// Nothing chose a CUDA build: PyPI's default for `version` (None = unpinned version).
    PypiDefault {
        version: Option<String>,
        cuda: Option<CudaVersion>,
        source: Option<String>,
    },
    /// Some index / channel we cannot read (NGC, a private mirror, `auto` backend).
    Other(String),
}

#[derive(Debug, Clone)]
pub struct TorchInstall {
    pub pos: Pos,
    pub text: String,
    pub cuda: TorchCuda,
    /// The torch release the install names (`==2.3.0`, `~=2.3.0`, a wheel file name, conda
    /// `pytorch=2.3`); None when the resolver picks it at build time.
    pub version: Option<String>,
    pub via_conda: bool,
    pub stage: usize,
}

/// The torch version a pip requirement fixes: an `==` pin, `~=X.Y.Z` (the minor is fixed),
/// or the version in a wheel file name (`torch-2.3.0+cu121-cp310-…whl`).
fn pip_torch_version(r: &Req) -> Option<String> {
    if r.unresolved {
        return None;
    }
    if let Some(v) = r.pinned.as_deref().filter(|v| !v.contains('$')) {
        return Some(v.to_string());
    }
    if let Some(s) = r.spec.strip_prefix("~=") {
        return Some(s.trim().to_string());
    }
    let url = r.url.as_deref()?;
    let file = url.rsplit('/').next()?;
    let file = file.replace("%2B", "+").replace("%2b", "+");
    let rest = file.strip_prefix("torch-")?;
    let v = rest.split('-').next()?;
    v.starts_with(|c: char| c.is_ascii_digit())
        .then(|| v.to_string())
}

fn cu_in_url(u: &str) -> Option<CudaVersion> {
    let l = u.to_ascii_lowercase();
    for seg in l.split(['/', '+', '-', '_', '=', '.']) {
        if seg.starts_with("cu") {
            if let Some(v) = CudaVersion::from_cu_tag(seg) {
                return Some(v);
            }
        }
    }
    None
}

fn is_cpu_url(u: &str) -> bool {
    let l = u.to_ascii_lowercase();
    l.contains("/whl/cpu") || l.ends_with("/cpu")
}

fn pip_torch(p: &PipInstall, r: &Req, facts: &Facts) -> TorchCuda {
    if let Some(l) = &r.local {
        if l == "cpu" {
            return TorchCuda::Cpu;
        }
        if let Some(v) = CudaVersion::from_cu_tag(l) {
            return TorchCuda::Pinned {
                cuda: v,
                how: format!("the +{l} local version"),
            };
        }
    }
    if let Some(u) = &r.url {
        if let Some(v) = cu_in_url(u) {
            return TorchCuda::Pinned {
                cuda: v,
                how: "the wheel URL".into(),
            };
        }
    }
    if let Some(b) = &p.torch_backend {
        if let Some(v) = CudaVersion::from_cu_tag(b) {
            return TorchCuda::Pinned {
                cuda: v,
                how: format!("uv --torch-backend={b}"),
            };
        }
        if b == "cpu" {
            return TorchCuda::Cpu;
        }
        return TorchCuda::Other(format!(
            "uv --torch-backend={b} (chosen on the build machine)"
        ));
    }
    if let Some(pypi) = outdated_extra_index(p, r, facts) {
        return pypi;
    }
    let urls: Vec<&String> = p
        .index_url
        .iter()
        .chain(&p.extra_index_urls)
        .chain(&p.find_links)
        .collect();
    for u in &urls {
        if let Some(v) = cu_in_url(u) {
            return TorchCuda::Pinned {
                cuda: v,
                how: format!("the index {u}"),
            };
        }
    }
    if p.index_url.as_deref().map(is_cpu_url).unwrap_or(false) {
        return TorchCuda::Cpu;
    }
    if let Some(u) = p.index_url.as_ref().filter(|u| !u.contains("pypi.org")) {
        return TorchCuda::Other(format!("the index {u}"));
    }
    if r.unresolved
        || r.pinned
            .as_deref()
            .map(|v| v.contains('$'))
            .unwrap_or(false)
    {
        return TorchCuda::Other("a version from a build argument".into());
    }
    let version = r.pinned.clone().or_else(|| {
        // `torch~=2.3.0` / `torch>=2.3,<2.4`: the minor is still fixed.
        let s = r.spec.trim_start_matches("~=");
        (r.spec.starts_with("~=")).then(|| s.to_string())
    });
    let (cuda, source) = match version.as_deref().and_then(|v| facts.torch_pypi_default(v)) {
        Some(s) => (Some(s.value), Some(s.source)),
        None => (None, None),
    };
    TorchCuda::PypiDefault {
        version,
        cuda,
        source,
    }
}

/// pip treats `--extra-index-url` / `--find-links` as more places to look, not as a choice:
/// it takes the highest version found anywhere (a `+cu113` local version sorts above the
/// same plain release, so a pinned release still comes from the CUDA index). An unpinned
/// torch next to a CUDA index that stopped at an older release therefore resolves to PyPI's
/// newest. uv is not judged so: it prefers the first index that has the package. Only when
/// a newer release than the index's last is known to lack that build (a release whose builds
/// we hold), so a current index is never called outdated.
pub fn outdated_extra_index(p: &PipInstall, r: &Req, facts: &Facts) -> Option<TorchCuda> {
    let by_pip = matches!(p.tool.as_str(), "pip" | "pip3") || p.tool.starts_with("python");
    if !by_pip || p.index_url.is_some() || pip_torch_version(r).is_some() || r.local.is_some() {
        return None;
    }
    let releases = facts.matrix().torch().releases();
    let tag = p
        .extra_index_urls
        .iter()
        .chain(&p.find_links)
        .find_map(|u| cu_in_url(u))?
        .cu_tag();
    let last = releases
        .iter()
        .rposition(|rel| rel.variant(&tag).is_some())?;
    releases[last + 1..]
        .iter()
        .any(|rel| !rel.variants.is_empty())
        .then(|| {
            // At least the newest release we hold; its PyPI build's CUDA is a floor.
            let newest = facts.torch_newest_release()?;
            let cuda = facts.torch_pypi_default(&newest.value.version)?;
            Some(TorchCuda::PypiDefault {
                version: None,
                cuda: Some(cuda.value),
                source: Some(cuda.source),
            })
        })
        .flatten()
}

/// The release an unpinned torch resolves to instead of the extra CUDA index's, for messages:
/// `torch (… stops at torch 1.12 …)`.
pub fn outdated_extra_index_note(p: &PipInstall, facts: &Facts) -> Option<String> {
    let tag = p
        .extra_index_urls
        .iter()
        .chain(&p.find_links)
        .find_map(|u| cu_in_url(u))?
        .cu_tag();
    let (rel, _) = facts.torch_newest_with_variant(&tag)?.value;
    Some(format!(
        "its extra index has {tag} builds only up to torch {}, so pip takes PyPI's newer torch",
        rel.version
    ))
}

/// Every torch install in a stage (not its parents).
pub fn stage_torch(st: &Stage, facts: &Facts) -> Vec<TorchInstall> {
    let mut out = Vec::new();
    for i in &st.installs {
        match i {
            Install::Pip(p) => {
                for r in p.reqs.iter().filter(|r| r.name == "torch") {
                    let note = outdated_extra_index(p, r, facts)
                        .and_then(|_| outdated_extra_index_note(p, facts))
                        .map(|n| format!(" ({n})"))
                        .unwrap_or_default();
                    out.push(TorchInstall {
                        pos: r.pos,
                        text: format!("{}{}{note}", r.name, r.spec),
                        cuda: pip_torch(p, r, facts),
                        version: pip_torch_version(r),
                        via_conda: false,
                        stage: st.index,
                    });
                }
                // A package that pins torch in its metadata (`vllm==0.6.3` → `torch==2.4.0`)
                // installs that torch, from the same indexes, unless torch is named too or
                // dependencies are off.
                if p.no_deps || p.reqs.iter().any(|r| r.name == "torch") {
                    continue;
                }
                for r in &p.reqs {
                    let Some(v) = r.pinned.as_deref().filter(|_| !r.unresolved) else {
                        continue;
                    };
                    let Some(t) = facts.torch_pinned_by(&r.name, v) else {
                        continue;
                    };
                    let torch_req = Req {
                        name: "torch".into(),
                        spec: format!("=={}", t.value),
                        pinned: Some(t.value.clone()),
                        local: None,
                        url: None,
                        pos: r.pos,
                        unresolved: false,
                    };
                    out.push(TorchInstall {
                        pos: r.pos,
                        text: format!(
                            "{}{} (which pins torch=={}: {})",
                            r.name, r.spec, t.value, t.source
                        ),
                        cuda: pip_torch(p, &torch_req, facts),
                        version: Some(t.value.clone()),
                        via_conda: false,
                        stage: st.index,
                    });
                }
            }
            Install::Conda(c) => {
                let Some(t) = c.pkgs.iter().find(|p| p.name == "pytorch") else {
                    continue;
                };
                let pin = c
                    .pkgs
                    .iter()
                    .find(|p| {
                        p.name == "pytorch-cuda"
                            || p.name == "cudatoolkit"
                            || p.name == "cuda-version"
                    })
                    .and_then(|p| {
                        p.spec
                            .trim_start_matches('=')
                            .parse::<CudaVersion>()
                            .ok()
                            .map(|v| (p.name.clone(), v))
                    });
                let cpu = c.pkgs.iter().any(|p| p.name == "cpuonly");
                out.push(TorchInstall {
                    pos: t.pos,
                    text: format!(
                        "pytorch{}",
                        if t.spec.is_empty() {
                            String::new()
                        } else {
                            format!("={}", t.spec)
                        }
                    ),
                    cuda: if cpu {
                        TorchCuda::Cpu
                    } else {
                        match pin {
                            Some((n, v)) => TorchCuda::Pinned {
                                cuda: v,
                                how: format!("conda {n}={}", v.major_minor()),
                            },
                            None => {
                                TorchCuda::Other("conda (the solver picks the CUDA build)".into())
                            }
                        }
                    },
                    version: Some(
                        t.spec
                            .trim_start_matches(['=', '<', '>', '~', '!'])
                            .to_string(),
                    )
                    .filter(|v| v.starts_with(|c: char| c.is_ascii_digit())),
                    via_conda: true,
                    stage: st.index,
                });
            }
            Install::Os(_) => {}
        }
    }
    out
}

/// Torch installs in all built stages.
pub fn all_torch(bf: &BuildFacts, facts: &Facts) -> Vec<TorchInstall> {
    bf.built_stages()
        .flat_map(|s| stage_torch(s, facts))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runconfig::build::{analyze, BuildOptions};

    fn torch_of(df: &str) -> Vec<TorchInstall> {
        let facts = Facts::embedded().unwrap();
        let bf = analyze("Dockerfile", df, &BuildOptions::default(), &facts);
        all_torch(&bf, &facts)
    }

    /// pip takes the highest version across PyPI and an extra index: an unpinned torch next
    /// to an extra CUDA index that stopped releasing is PyPI's newest, not that CUDA build.
    #[test]
    fn an_outdated_extra_index_does_not_pin_an_unpinned_torch() {
        let base = "FROM nvidia/cuda:11.4.2-cudnn8-runtime-ubuntu20.04\n";
        let t = torch_of(&format!("{base}RUN pip install torch torchvision --extra-index-url https://download.pytorch.org/whl/cu113\n"));
        assert_eq!(t.len(), 1);
        assert!(
            matches!(t[0].cuda, TorchCuda::PypiDefault { version: None, .. }),
            "{:?}",
            t[0].cuda
        );
        assert!(
            t[0].text.contains("cu113 builds only up to torch 1.12"),
            "{}",
            t[0].text
        );
        // A pinned release the index holds sorts above PyPI's (+cu113 > plain): pinned.
        let t = torch_of(&format!("{base}RUN pip install torch==1.12.1 --extra-index-url https://download.pytorch.org/whl/cu113\n"));
        assert!(
            matches!(t[0].cuda, TorchCuda::Pinned { .. }),
            "{:?}",
            t[0].cuda
        );
        // The chosen index, or uv (first index wins): pinned.
        for cmd in [
            "pip install torch --index-url https://download.pytorch.org/whl/cu113",
            "uv pip install torch --extra-index-url https://download.pytorch.org/whl/cu113",
        ] {
            let t = torch_of(&format!("{base}RUN {cmd}\n"));
            assert!(
                matches!(t[0].cuda, TorchCuda::Pinned { .. }),
                "{cmd}: {:?}",
                t[0].cuda
            );
        }
    }
}
