//! PyTorch-ecosystem facts: which CUDA builds each PyTorch release line published, which of
//! them the plain PyPI `torch==X` wheel is, the Python versions it has wheels for, the GPU
//! code (SASS and PTX) each official CUDA build ships, and which torchvision / torchaudio /
//! triton versions pin which torch.
//!
//! In: `matrices/torch.toml` and `matrices/torch_companions.toml` (embedded). Out:
//! [`TorchMatrix`], keyed by torch `major.minor`. Every row carries the URL it was read
//! from. Facts we could not source are absent and the lookups return `None`; nothing is
//! filled in by analogy with a neighbouring release.

use crate::arch::{ArchTarget, ArchVariant, CodeKind};
use crate::version::CudaVersion;
use anyhow::{bail, ensure, Context, Result};
use serde::Deserialize;
use std::cmp::Ordering;

mod arch_list;
use arch_list::parse_arch_list;

const TORCH_TOML: &str = include_str!("../../matrices/torch.toml");
const COMPANIONS_TOML: &str = include_str!("../../matrices/torch_companions.toml");

/// Packages whose versions `torch_companions.toml` pins against torch.
const COMPANION_PACKAGES: [&str; 3] = ["torchaudio", "torchvision", "triton"];

/// One PyTorch release line (`2.3` covers 2.3.0 and 2.3.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TorchRelease {
    /// `major.minor`, e.g. `"2.3"`.
    pub version: String,
    /// The official CUDA builds (`+cuXYZ` wheels), oldest CUDA first. Empty when no source
    /// we hold lists them (the newest line, see the data file).
    pub variants: Vec<TorchVariant>,
    /// The CUDA build the plain PyPI wheel (`pip install torch==X`, Linux x86_64) is.
    pub pypi_default: Option<String>,
    /// CPython versions (`"3.10"`) with a Linux x86_64 wheel on PyPI for the `.0` release.
    /// Free-threaded builds (`cp313t`) are not listed.
    pub python: Vec<String>,
    pub source: String,
    /// How the row is known, when the data file says; `None`: from its source.
    pub basis: Option<super::Basis>,
}

/// One official CUDA build of a release line, e.g. torch 2.3 `cu121`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TorchVariant {
    /// `cu121`.
    pub tag: String,
    pub cuda: CudaVersion,
    /// The GPU code this build ships, when a source for it exists: the `[[arch]]` row, else
    /// what the release's build script sets (`[[build_script]]`).
    pub archs: Option<VariantArchs>,
    /// What the release's build script sets for this build, when read (`[[build_script]]`),
    /// kept beside a measured `[[arch]]` row so the two can be compared.
    pub build_script: Option<VariantArchs>,
    /// Where the existence of this build is documented.
    pub source: String,
    /// How the row is known, when the data file says; `None`: from its source.
    pub basis: Option<super::Basis>,
}

/// The device code an official torch CUDA build was compiled for (`TORCH_CUDA_ARCH_LIST`
/// of the release's build script: `9.0` → `sm_90`; `9.0+PTX` → `sm_90` and `compute_90`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VariantArchs {
    pub sass: Vec<ArchTarget>,
    pub ptx: Vec<ArchTarget>,
    pub source: String,
    /// How the list is known: measured from the wheel, cited from the release's own build
    /// script, or inferred (a build-script snapshot near the release, not its tag).
    pub basis: super::Basis,
}

impl TorchVariant {
    /// SASS targets, `None` when unknown.
    pub fn sass(&self) -> Option<&[ArchTarget]> {
        self.archs.as_ref().map(|a| a.sass.as_slice())
    }
    /// PTX targets, `None` when unknown (`Some(&[])`: known to ship no PTX).
    pub fn ptx(&self) -> Option<&[ArchTarget]> {
        self.archs.as_ref().map(|a| a.ptx.as_slice())
    }
}

impl TorchRelease {
    pub fn variant(&self, tag: &str) -> Option<&TorchVariant> {
        let tag = tag.trim().to_ascii_lowercase();
        self.variants.iter().find(|v| v.tag == tag)
    }
    /// The variant row of the PyPI default build, when both are known.
    pub fn pypi_default_variant(&self) -> Option<&TorchVariant> {
        self.variant(self.pypi_default.as_deref()?)
    }
}

/// The companion versions pinned to one torch release (from the companions' own
/// `Requires-Dist: torch==…` and torch's own `Requires-Dist: triton==…`). Where several
/// releases of a companion pin the same torch, the newest is given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Companions {
    /// Full torch version, e.g. `"2.3.1"`.
    pub torch: String,
    pub torchvision: Option<String>,
    pub torchaudio: Option<String>,
    pub triton: Option<String>,
}

/// One pin row, kept for `companion_for`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pin {
    torch: String,
    package: String,
    version: String,
    source: String,
    basis: Option<super::Basis>,
}

// Default: no releases, for a knowledge view that knows nothing (`Facts::unknown`).
#[derive(Debug, Clone, Default)]
pub struct TorchMatrix {
    releases: Vec<TorchRelease>,
    companions: Vec<Companions>,
    pins: Vec<Pin>,
}

// ---- raw (file) form -------------------------------------------------------------------

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTorchFile {
    #[serde(default)]
    release: Vec<RawRelease>,
    #[serde(default)]
    variant: Vec<RawVariant>,
    #[serde(default)]
    arch: Vec<RawArch>,
    #[serde(default)]
    build_script: Vec<RawBuildScript>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRelease {
    torch: String,
    pypi_default: Option<String>,
    #[serde(default)]
    python: Vec<String>,
    source: String,
    /// How the row is known, when the data file says; `None`: from its source.
    #[serde(default)]
    basis: Option<super::Basis>,
    #[allow(dead_code)]
    note: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVariant {
    torch: String,
    tag: String,
    source: String,
    /// How the row is known, when the data file says; `None`: from its source.
    #[serde(default)]
    basis: Option<super::Basis>,
    #[allow(dead_code)]
    note: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawArch {
    torch: String,
    tag: String,
    sass: Vec<String>,
    ptx: Vec<String>,
    source: String,
    /// How the row is known, when the data file says; `None`: from its source.
    #[serde(default)]
    basis: Option<super::Basis>,
    #[allow(dead_code)]
    note: Option<String>,
}

/// The `TORCH_CUDA_ARCH_LIST` a release's build script sets for one CUDA build, as
/// ci/torch-build-arch-lists.py reads it (`3.7;5.0;9.0+PTX`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBuildScript {
    torch: String,
    tag: String,
    arch_list: String,
    source: String,
    #[serde(default)]
    basis: Option<super::Basis>,
    #[allow(dead_code)]
    note: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCompanionsFile {
    #[serde(default)]
    pin: Vec<RawPin>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPin {
    /// Full torch version the package pins (`2.3.0`).
    torch: String,
    package: String,
    /// Full package version (`0.18.0`).
    version: String,
    /// The requirement as written in the metadata (`torch==2.3.0`, `triton~=3.8.0`).
    requires: String,
    source: String,
    /// How the row is known, when the data file says; `None`: from its source.
    #[serde(default)]
    basis: Option<super::Basis>,
    #[allow(dead_code)]
    note: Option<String>,
}

// ---- version helpers -------------------------------------------------------------------

/// Leading numeric components of a PEP 440-ish version: `2.3.0+cu121` → [2, 3, 0],
/// `2.4.0.dev20240501` → [2, 4, 0], `2.3rc1` → [2, 3]. Stops at the first non-numeric part.
fn numeric_parts(v: &str) -> Vec<u32> {
    let public = v.trim().split('+').next().unwrap_or("");
    let mut out = Vec::new();
    for part in public.split('.') {
        let digits: String = part.chars().take_while(|c| c.is_ascii_digit()).collect();
        if digits.is_empty() {
            break;
        }
        match digits.parse() {
            Ok(n) => out.push(n),
            Err(_) => break,
        }
        if digits.len() != part.len() {
            break;
        }
    }
    out
}

/// `"2.3.0+cu121"` → `Some("2.3")`.
fn major_minor(v: &str) -> Option<String> {
    let p = numeric_parts(v);
    match p.as_slice() {
        [a, b, ..] => Some(format!("{a}.{b}")),
        _ => None,
    }
}

/// `"2.3"` → `"2.3.0"`, `"2.3.1+cu121"` → `"2.3.1"`.
fn full_version(v: &str) -> Option<String> {
    let p = numeric_parts(v);
    match p.as_slice() {
        [a, b] => Some(format!("{a}.{b}.0")),
        [a, b, c, ..] => Some(format!("{a}.{b}.{c}")),
        _ => None,
    }
}

fn cmp_versions(a: &str, b: &str) -> Ordering {
    numeric_parts(a).cmp(&numeric_parts(b))
}

fn check_source(what: &str, source: &str) -> Result<()> {
    ensure!(
        source.starts_with("https://") || source.starts_with("http://"),
        "{what}: source {source:?} is not an http(s) URL"
    );
    Ok(())
}

fn check_major_minor(what: &str, v: &str) -> Result<()> {
    ensure!(
        major_minor(v).as_deref() == Some(v),
        "{what}: torch {v:?} must be written major.minor"
    );
    Ok(())
}

fn check_full(what: &str, v: &str) -> Result<()> {
    ensure!(
        full_version(v).as_deref() == Some(v) && numeric_parts(v).len() == 3,
        "{what}: version {v:?} must be written major.minor.patch"
    );
    Ok(())
}

fn cu_tag(what: &str, tag: &str) -> Result<CudaVersion> {
    let cuda = CudaVersion::from_cu_tag(tag)
        .with_context(|| format!("{what}: {tag:?} is not a cuXYZ tag"))?;
    ensure!(
        cuda.cu_tag() == tag,
        "{what}: tag {tag:?} is not normalized (expected {})",
        cuda.cu_tag()
    );
    Ok(cuda)
}

/// The basis of a row whose data file states none: a URL is a cited source.
fn basis_of(basis: Option<super::Basis>, source: &str) -> super::Basis {
    basis.unwrap_or(
        if source.starts_with("https://") || source.starts_with("http://") {
            super::Basis::Cited
        } else {
            super::Basis::Inferred
        },
    )
}

fn parse_targets(what: &str, list: &[String], kind: CodeKind) -> Result<Vec<ArchTarget>> {
    let mut out: Vec<ArchTarget> = Vec::with_capacity(list.len());
    for s in list {
        let t: ArchTarget = s
            .parse()
            .map_err(|e: String| anyhow::anyhow!("{what}: {e}"))?;
        ensure!(t.kind == kind, "{what}: {s:?} is in the wrong list");
        ensure!(t.to_string() == *s, "{what}: {s:?} is not normalized");
        ensure!(
            t.variant == ArchVariant::Generic,
            "{what}: {s:?}: torch's default builds use generic targets only"
        );
        if let Some(prev) = out.last() {
            ensure!(prev.sm < t.sm, "{what}: {s:?} out of order or duplicated");
        }
        out.push(t);
    }
    Ok(out)
}

fn join(targets: &[ArchTarget]) -> String {
    targets
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" ")
}

// ---- loading ---------------------------------------------------------------------------

impl TorchMatrix {
    /// Parse and validate both files. Rows must be sorted, unique and sourced.
    pub fn from_toml(torch_toml: &str, companions_toml: &str) -> Result<TorchMatrix> {
        let raw: RawTorchFile = toml::from_str(torch_toml).context("parsing torch.toml")?;
        let comp: RawCompanionsFile =
            toml::from_str(companions_toml).context("parsing torch_companions.toml")?;

        // Releases.
        let mut releases: Vec<TorchRelease> = Vec::new();
        for r in &raw.release {
            let what = format!("torch.toml release {}", r.torch);
            check_major_minor(&what, &r.torch)?;
            check_source(&what, &r.source)?;
            if let Some(prev) = releases.last() {
                ensure!(
                    cmp_versions(&prev.version, &r.torch) == Ordering::Less,
                    "{what}: releases must be sorted and unique (after {})",
                    prev.version
                );
            }
            if let Some(d) = &r.pypi_default {
                cu_tag(&what, d)?;
            }
            for (i, py) in r.python.iter().enumerate() {
                ensure!(
                    major_minor(py).as_deref() == Some(py.as_str()),
                    "{what}: python {py:?} must be major.minor"
                );
                if i > 0 {
                    ensure!(
                        cmp_versions(&r.python[i - 1], py) == Ordering::Less,
                        "{what}: python versions must be sorted and unique"
                    );
                }
            }
            releases.push(TorchRelease {
                version: r.torch.clone(),
                variants: Vec::new(),
                pypi_default: r.pypi_default.clone(),
                python: r.python.clone(),
                source: r.source.clone(),
                basis: r.basis,
            });
        }

        // Variants, sorted by (torch, cuda).
        let mut last: Option<(Vec<u32>, CudaVersion)> = None;
        for v in &raw.variant {
            let what = format!("torch.toml variant {} {}", v.torch, v.tag);
            check_major_minor(&what, &v.torch)?;
            check_source(&what, &v.source)?;
            let cuda = cu_tag(&what, &v.tag)?;
            let key = (numeric_parts(&v.torch), cuda);
            if let Some(prev) = &last {
                ensure!(*prev < key, "{what}: variants must be sorted and unique");
            }
            last = Some(key);
            let rel = releases
                .iter_mut()
                .find(|r| r.version == v.torch)
                .with_context(|| format!("{what}: no release row for torch {}", v.torch))?;
            rel.variants.push(TorchVariant {
                tag: v.tag.clone(),
                cuda,
                archs: None,
                build_script: None,
                source: v.source.clone(),
                basis: v.basis,
            });
        }

        // Arch lists, sorted by (torch, cuda), each for a known variant.
        let mut last: Option<(Vec<u32>, CudaVersion)> = None;
        for a in &raw.arch {
            let what = format!("torch.toml arch {} {}", a.torch, a.tag);
            check_major_minor(&what, &a.torch)?;
            check_source(&what, &a.source)?;
            let cuda = cu_tag(&what, &a.tag)?;
            let key = (numeric_parts(&a.torch), cuda);
            if let Some(prev) = &last {
                ensure!(*prev < key, "{what}: arch rows must be sorted and unique");
            }
            last = Some(key);
            let sass = parse_targets(&what, &a.sass, CodeKind::Sass)?;
            let ptx = parse_targets(&what, &a.ptx, CodeKind::Ptx)?;
            ensure!(!sass.is_empty(), "{what}: empty SASS list");
            let var = releases
                .iter_mut()
                .find(|r| r.version == a.torch)
                .and_then(|r| r.variants.iter_mut().find(|v| v.tag == a.tag))
                .with_context(|| format!("{what}: no variant row for it"))?;
            var.archs = Some(VariantArchs {
                sass,
                ptx,
                source: a.source.clone(),
                basis: basis_of(a.basis, &a.source),
            });
        }

        // Build-script readings, sorted by (torch, cuda), each for a known variant. They give
        // the variant's arch list unless a measured [[arch]] row does; beside a measured row
        // they are kept for `build_script_disagreements`.
        let mut last: Option<(Vec<u32>, CudaVersion)> = None;
        for b in &raw.build_script {
            let what = format!("torch.toml build_script {} {}", b.torch, b.tag);
            check_major_minor(&what, &b.torch)?;
            check_source(&what, &b.source)?;
            let cuda = cu_tag(&what, &b.tag)?;
            let key = (numeric_parts(&b.torch), cuda);
            if let Some(prev) = &last {
                ensure!(
                    *prev < key,
                    "{what}: build_script rows must be sorted and unique"
                );
            }
            last = Some(key);
            let (sass, ptx) = parse_arch_list(&what, &b.arch_list)?;
            ensure!(!sass.is_empty(), "{what}: empty arch list");
            let var = releases
                .iter_mut()
                .find(|r| r.version == b.torch)
                .and_then(|r| r.variants.iter_mut().find(|v| v.tag == b.tag))
                .with_context(|| format!("{what}: no variant row for it"))?;
            let script = VariantArchs {
                sass,
                ptx,
                source: b.source.clone(),
                basis: basis_of(b.basis, &b.source),
            };
            match &var.archs {
                Some(a) if a.basis != super::Basis::Measured => bail!(
                    "{what}: the variant also has a transcribed [[arch]] row ({}); keep one",
                    a.source
                ),
                Some(_) => {}
                None => var.archs = Some(script.clone()),
            }
            var.build_script = Some(script);
        }

        for r in &releases {
            if let (Some(d), false) = (&r.pypi_default, r.variants.is_empty()) {
                ensure!(
                    r.variant(d).is_some(),
                    "torch.toml release {}: pypi_default {d} is not one of its variants",
                    r.version
                );
            }
        }

        // Companion pins, sorted by (torch, package, version).
        let mut pins: Vec<Pin> = Vec::new();
        for p in &comp.pin {
            let what = format!(
                "torch_companions.toml pin torch {} {} {}",
                p.torch, p.package, p.version
            );
            check_full(&what, &p.torch)?;
            check_full(&what, &p.version)?;
            check_source(&what, &p.source)?;
            ensure!(
                COMPANION_PACKAGES.contains(&p.package.as_str()),
                "{what}: unknown package (expected one of {COMPANION_PACKAGES:?})"
            );
            if let Some(prev) = pins.last() {
                let ord = cmp_versions(&prev.torch, &p.torch)
                    .then_with(|| prev.package.cmp(&p.package))
                    .then_with(|| cmp_versions(&prev.version, &p.version));
                ensure!(
                    ord == Ordering::Less,
                    "{what}: pins must be sorted by (torch, package, version) and unique"
                );
            }
            ensure!(
                p.requires.starts_with(p.package.as_str()) || p.requires.starts_with("torch"),
                "{what}: requires {:?} names neither torch nor the package",
                p.requires
            );
            let mm = major_minor(&p.torch).unwrap_or_default();
            ensure!(
                releases.iter().any(|r| r.version == mm),
                "{what}: no release row for torch {mm}"
            );
            pins.push(Pin {
                torch: p.torch.clone(),
                package: p.package.clone(),
                version: p.version.clone(),
                source: p.source.clone(),
                basis: p.basis,
            });
        }
        // A torchvision / torchaudio release pins exactly one torch. (Triton is the other
        // way round: torch pins it, and one triton serves several torch releases.)
        for (i, a) in pins.iter().enumerate() {
            for b in &pins[i + 1..] {
                if a.package != "triton" && a.package == b.package && a.version == b.version {
                    bail!(
                        "torch_companions.toml: {} {} pins both torch {} and {}",
                        a.package,
                        a.version,
                        a.torch,
                        b.torch
                    );
                }
            }
        }

        let mut companions: Vec<Companions> = Vec::new();
        for p in &pins {
            if companions
                .last()
                .map(|c| c.torch != p.torch)
                .unwrap_or(true)
            {
                companions.push(Companions {
                    torch: p.torch.clone(),
                    torchvision: None,
                    torchaudio: None,
                    triton: None,
                });
            }
            if let Some(c) = companions.last_mut() {
                let slot = match p.package.as_str() {
                    "torchvision" => &mut c.torchvision,
                    "torchaudio" => &mut c.torchaudio,
                    _ => &mut c.triton,
                };
                // Rows are sorted by version, so the newest companion release wins (torch
                // 2.0.0 is pinned by both torchvision 0.15.0 and 0.15.1).
                *slot = Some(p.version.clone());
            }
        }

        Ok(TorchMatrix {
            releases,
            companions,
            pins,
        })
    }

    /// Every build whose measured `[[arch]]` row and build-script reading disagree on the
    /// generic SASS or PTX it ships, one line each. A build script read at the wrong commit
    /// (or a snapshot standing for the wrong release) shows up here against the wheel.
    pub fn build_script_disagreements(&self) -> Vec<String> {
        let mut out = Vec::new();
        for r in &self.releases {
            for v in &r.variants {
                let (Some(a), Some(b)) = (&v.archs, &v.build_script) else {
                    continue;
                };
                if a.basis == super::Basis::Measured && (a.sass != b.sass || a.ptx != b.ptx) {
                    out.push(format!(
                        "torch {} {}: measured SASS [{}] PTX [{}] ({}), build script SASS [{}] PTX [{}] ({})",
                        r.version,
                        v.tag,
                        join(&a.sass),
                        join(&a.ptx),
                        a.source,
                        join(&b.sass),
                        join(&b.ptx),
                        b.source
                    ));
                }
            }
        }
        out
    }

    /// The facts shipped with gpulint.
    pub fn embedded() -> Result<TorchMatrix> {
        Self::from_toml(TORCH_TOML, COMPANIONS_TOML)
    }

    /// The release line of `version`: `"2.3"`, `"2.3.1"` and `"2.3.0+cu121"` all give 2.3.
    pub fn release(&self, version: &str) -> Option<&TorchRelease> {
        let mm = major_minor(version)?;
        self.releases.iter().find(|r| r.version == mm)
    }

    /// All release lines, oldest first.
    pub fn releases(&self) -> &[TorchRelease] {
        &self.releases
    }

    /// The torch `major.minor` that `package` (`"torchvision"`, `"torchaudio"`, `"triton"`)
    /// version `companion_version` was released for. `"0.18"` matches any 0.18.x we hold;
    /// a full version (`"0.18.1+cu121"`) must be held exactly.
    pub fn companion_for(&self, package: &str, companion_version: &str) -> Option<String> {
        self.companion_pin(package, companion_version)
            .map(|(torch, ..)| torch)
    }

    /// [`Self::companion_for`] with the source URL of the first pin that matched.
    pub(crate) fn companion_pin(
        &self,
        package: &str,
        companion_version: &str,
    ) -> Option<(String, &str, Option<super::Basis>)> {
        let package = package.trim().to_ascii_lowercase();
        let parts = numeric_parts(companion_version);
        let candidates = self.pins.iter().filter(|p| p.package == package);
        let mut found: Option<(String, &str, Option<super::Basis>)> = None;
        for p in candidates {
            let pv = numeric_parts(&p.version);
            let hit = match parts.len() {
                2 => pv.starts_with(&parts),
                3.. => pv == parts[..3],
                _ => false,
            };
            if hit {
                let mm = major_minor(&p.torch)?;
                match &found {
                    // Patch releases of one companion line pair with one torch line; if the
                    // data ever disagrees, refuse to pick.
                    Some((prev, ..)) if *prev != mm => return None,
                    Some(_) => {}
                    None => found = Some((mm, p.source.as_str(), p.basis)),
                }
            }
        }
        found
    }

    /// Companion versions pinned to `torch_version`: an exact release (`"2.3.1"`), or a line
    /// (`"2.3"`, meaning its `.0` release).
    pub fn companions_of(&self, torch_version: &str) -> Option<&Companions> {
        let full = full_version(torch_version)?;
        self.companions.iter().find(|c| c.torch == full)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m() -> TorchMatrix {
        TorchMatrix::embedded().expect("embedded torch matrix is valid")
    }

    fn targets(list: &[&str]) -> Vec<ArchTarget> {
        list.iter().map(|s| s.parse().unwrap()).collect()
    }

    #[test]
    fn embedded_files_parse_and_every_row_is_sourced() {
        let m = m();
        assert!(!m.releases().is_empty());
        for r in m.releases() {
            assert!(r.source.starts_with("http"), "{}", r.version);
            for v in &r.variants {
                assert!(v.source.starts_with("http"), "{} {}", r.version, v.tag);
                if let Some(a) = &v.archs {
                    assert!(a.source.starts_with("http"), "{} {}", r.version, v.tag);
                }
            }
        }
        // Every line in both files that names a source names an http(s) one.
        for text in [TORCH_TOML, COMPANIONS_TOML] {
            for line in text.lines().filter(|l| l.starts_with("source")) {
                let url = line.split('"').nth(1).unwrap_or("");
                assert!(url.starts_with("https://"), "{line}");
            }
        }
    }

    #[test]
    fn rejects_unsorted_duplicate_and_unsourced_rows() {
        let rel = |v: &str, src: &str| {
            format!("[[release]]\ntorch = \"{v}\"\npython = []\nsource = \"{src}\"\n")
        };
        let ok = format!("{}{}", rel("2.2", "https://x"), rel("2.3", "https://x"));
        assert!(TorchMatrix::from_toml(&ok, "").is_ok());
        let unsorted = format!("{}{}", rel("2.3", "https://x"), rel("2.2", "https://x"));
        assert!(TorchMatrix::from_toml(&unsorted, "").is_err());
        let dup = format!("{}{}", rel("2.3", "https://x"), rel("2.3", "https://x"));
        assert!(TorchMatrix::from_toml(&dup, "").is_err());
        assert!(TorchMatrix::from_toml(&rel("2.3", "RELEASE.md"), "").is_err());
        let bad_arch = format!(
            "{}[[variant]]\ntorch = \"2.3\"\ntag = \"cu121\"\nsource = \"https://x\"\n\
             [[arch]]\ntorch = \"2.3\"\ntag = \"cu121\"\nsass = [\"sm_90\", \"sm_80\"]\n\
             ptx = []\nsource = \"https://x\"\n",
            rel("2.3", "https://x")
        );
        assert!(TorchMatrix::from_toml(&bad_arch, "").is_err());
        let unknown_key = format!("{}extra = 1\n", rel("2.3", "https://x"));
        assert!(TorchMatrix::from_toml(&unknown_key, "").is_err());
    }

    #[test]
    fn lookup_keys() {
        let m = m();
        for k in ["2.3", "2.3.0", "2.3.1", "2.3.0+cu121", " 2.3.0+cu118 "] {
            assert_eq!(m.release(k).map(|r| r.version.as_str()), Some("2.3"), "{k}");
        }
        assert!(m.release("1.9").is_none());
        assert!(m.release("9.9").is_none());
        assert!(m.release("garbage").is_none());
        assert!(m.release("2").is_none());
    }

    #[test]
    fn torch_2_3_spot_check() {
        let m = m();
        let r = m.release("2.3.0").unwrap();
        let tags: Vec<&str> = r.variants.iter().map(|v| v.tag.as_str()).collect();
        assert!(
            tags.contains(&"cu118") && tags.contains(&"cu121"),
            "{tags:?}"
        );
        assert_eq!(r.pypi_default.as_deref(), Some("cu121"));
        assert_eq!(
            r.pypi_default_variant().unwrap().cuda,
            CudaVersion::new(12, 1)
        );
        assert!(r.python.iter().any(|p| p == "3.8"));
    }

    #[test]
    fn torch_1_12_spot_check() {
        let r = m().release("1.12").cloned().unwrap();
        let tags: Vec<&str> = r.variants.iter().map(|v| v.tag.as_str()).collect();
        for t in ["cu102", "cu113", "cu116"] {
            assert!(tags.contains(&t), "{t} missing from {tags:?}");
        }
        assert_eq!(r.pypi_default.as_deref(), Some("cu102"));
    }

    /// The real torch 2.11.0+cu130 install captured on an H200 host
    /// (`shared/fixtures/h200-host/python-env/torch_facts.txt`, copied to testdata/).
    #[test]
    fn torch_2_11_cu130_matches_the_real_install() {
        let facts = include_str!("../../testdata/matrix/torch-2.11.0+cu130_torch_facts.txt");
        let arch_line = facts
            .lines()
            .find_map(|l| l.strip_prefix("arch_list "))
            .expect("arch_list line");
        let mut real_sass: Vec<ArchTarget> = arch_line
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().unwrap())
            .collect();
        real_sass.sort();
        let flags = facts
            .lines()
            .find_map(|l| l.trim().strip_prefix("- NVCC architecture flags: "))
            .expect("NVCC flags line");
        let mut real_ptx: Vec<ArchTarget> = Vec::new();
        let mut gencode_sass: Vec<ArchTarget> = Vec::new();
        for code in flags.split(';').filter_map(|f| f.split("code=").nth(1)) {
            for c in code.trim_matches(|c| c == '[' || c == ']').split(',') {
                let t: ArchTarget = c.parse().unwrap();
                match t.kind {
                    CodeKind::Ptx => real_ptx.push(t),
                    _ => gencode_sass.push(t),
                }
            }
        }
        gencode_sass.sort();
        assert_eq!(gencode_sass, real_sass, "the fixture agrees with itself");

        let m = m();
        let r = m.release("2.11.0+cu130").unwrap();
        assert_eq!(r.pypi_default.as_deref(), Some("cu130"));
        let v = r.variant("cu130").unwrap();
        assert_eq!(v.cuda, CudaVersion::new(13, 0));
        assert_eq!(v.sass().unwrap(), real_sass.as_slice());
        assert_eq!(v.ptx().unwrap(), real_ptx.as_slice());
        assert!(real_ptx.is_empty());
        assert_eq!(
            v.sass().unwrap(),
            targets(&["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]).as_slice()
        );
    }

    #[test]
    fn ptx_entries_only_where_the_build_ships_ptx() {
        let m = m();
        // RELEASE.md promises 12.0+PTX for the CUDA 13.0 builds of 2.12, but the PyPI wheel
        // (measured by ci/torch-arch-lists.py) registers no PTX at all: measured wins.
        let v = m.release("2.12").unwrap().variant("cu130").unwrap();
        assert_eq!(v.ptx().unwrap(), &[] as &[ArchTarget]);
        // 12.0+PTX in 2.7's build script for cu128 (a download.pytorch.org build, transcribed).
        let v = m.release("2.7").unwrap().variant("cu128").unwrap();
        assert_eq!(v.ptx().unwrap(), targets(&["compute_120"]).as_slice());
        // Unknown stays unknown.
        for r in m.releases() {
            for v in &r.variants {
                assert_eq!(v.sass().is_some(), v.ptx().is_some());
            }
        }
    }

    /// The build-script readings (ci/torch-build-arch-lists.py) of every PyPI default build
    /// that was also measured from its wheel agree with the measurement.
    #[test]
    fn build_script_rows_agree_with_measured_wheels() {
        let m = m();
        assert_eq!(
            m.build_script_disagreements(),
            Vec::<String>::new(),
            "a [[build_script]] row disagrees with the measured wheel"
        );
        let compared = m
            .releases()
            .iter()
            .flat_map(|r| &r.variants)
            .filter(|v| {
                v.build_script.is_some()
                    && v.archs.as_ref().map(|a| a.basis) == Some(crate::matrix::Basis::Measured)
            })
            .count();
        assert!(compared >= 10, "only {compared} builds compared");
    }

    #[test]
    fn a_build_script_reading_that_disagrees_with_the_wheel_is_reported() {
        // The KDr2 snapshot's 12.6 case (9.0+PTX), taken for torch 2.7: the measured 2.7.0
        // cu126 wheel ships no PTX.
        let toml = "[[release]]\ntorch = \"2.7\"\npython = []\nsource = \"https://x\"\n\
            [[variant]]\ntorch = \"2.7\"\ntag = \"cu126\"\nsource = \"https://x\"\n\
            [[arch]]\ntorch = \"2.7\"\ntag = \"cu126\"\nsass = [\"sm_50\", \"sm_90\"]\nptx = []\n\
            basis = \"measured\"\nsource = \"https://pypi.org/x\"\n\
            [[build_script]]\ntorch = \"2.7\"\ntag = \"cu126\"\narch_list = \"5.0;9.0+PTX\"\n\
            basis = \"inferred\"\nsource = \"https://github.com/x\"\n";
        let m = TorchMatrix::from_toml(toml, "").unwrap();
        let d = m.build_script_disagreements();
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].starts_with("torch 2.7 cu126"), "{}", d[0]);
        // The measured row still answers.
        let v = m.release("2.7").unwrap().variant("cu126").unwrap();
        assert_eq!(v.ptx().unwrap(), &[] as &[ArchTarget]);
        // A transcribed [[arch]] row beside a build-script row is one row too many.
        let two = toml.replace("basis = \"measured\"", "basis = \"cited\"");
        assert!(TorchMatrix::from_toml(&two, "").is_err());
    }

    #[test]
    fn non_default_variants_from_the_release_build_scripts() {
        let m = m();
        let get = |t: &str, tag: &str| {
            m.release(t)
                .and_then(|r| r.variant(tag))
                .and_then(|v| v.archs.clone())
                .unwrap_or_else(|| panic!("torch {t} {tag}: no arch list"))
        };
        // 1.10 (pytorch/builder release/1.10, manywheel/build.sh): K80 (sm_37) still in.
        let a = get("1.10.0", "cu113");
        assert_eq!(
            a.sass,
            targets(&["sm_37", "sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86"])
        );
        assert_eq!(a.basis, crate::matrix::Basis::Cited);
        assert!(a.source.contains("pytorch/builder/blob/"), "{}", a.source);
        assert_eq!(
            get("1.10", "cu102").sass,
            targets(&["sm_37", "sm_50", "sm_60", "sm_70"])
        );
        // 2.6 cu126: the snapshots at the 2.6 branch cut set 9.0+PTX.
        let a = get("2.6", "cu126");
        assert_eq!(a.ptx, targets(&["compute_90"]));
        assert_eq!(a.basis, crate::matrix::Basis::Inferred);
        // 2.7 cu118 and the new 2.9 cu126 row.
        assert!(get("2.7.1", "cu118")
            .sass
            .contains(&"sm_37".parse().unwrap()));
        assert_eq!(
            get("2.9", "cu126").sass,
            targets(&["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"])
        );
        // Every variant of 1.10-2.9 now has a list.
        for r in m.releases() {
            if cmp_versions(&r.version, "2.9") != Ordering::Greater {
                for v in &r.variants {
                    assert!(v.archs.is_some(), "torch {} {}", r.version, v.tag);
                }
            }
        }
    }

    #[test]
    fn companions() {
        let m = m();
        assert_eq!(
            m.companion_for("torchvision", "0.18").as_deref(),
            Some("2.3")
        );
        assert_eq!(
            m.companion_for("torchvision", "0.18.1").as_deref(),
            Some("2.3")
        );
        assert_eq!(
            m.companion_for("torchvision", "0.18.0+cu121").as_deref(),
            Some("2.3")
        );
        assert_eq!(m.companion_for("torchaudio", "2.3").as_deref(), Some("2.3"));
        assert_eq!(
            m.companion_for("torchaudio", "2.3.1").as_deref(),
            Some("2.3")
        );
        // torch 1.10 / 1.11 (ci/torch-companion-pins.py); 0.11.0's metadata pins the local
        // build `torch (==1.10.0+cu102)`.
        assert_eq!(
            m.companion_for("torchvision", "0.11.0").as_deref(),
            Some("1.10")
        );
        assert_eq!(
            m.companion_for("torchaudio", "0.11").as_deref(),
            Some("1.11")
        );
        assert_eq!(
            m.companions_of("1.10.2").unwrap().torchvision.as_deref(),
            Some("0.11.3")
        );
        assert_eq!(m.companion_for("torchvision", "0.99"), None);
        assert_eq!(m.companion_for("numpy", "1.26"), None);
        let c = m.companions_of("2.3").unwrap();
        assert_eq!(c.torch, "2.3.0");
        assert_eq!(c.torchvision.as_deref(), Some("0.18.0"));
        assert_eq!(c.torchaudio.as_deref(), Some("2.3.0"));
        assert_eq!(c.triton.as_deref(), Some("2.3.0"));
        let c = m.companions_of("2.3.1+cu121").unwrap();
        assert_eq!(c.torchvision.as_deref(), Some("0.18.1"));
        assert!(m.companions_of("0.1").is_none());
    }

    #[test]
    fn version_helpers() {
        assert_eq!(numeric_parts("2.4.0.dev20240501"), vec![2, 4, 0]);
        assert_eq!(numeric_parts("2.3rc1"), vec![2, 3]);
        assert_eq!(major_minor("2.10.0+cu128").as_deref(), Some("2.10"));
        assert_eq!(full_version("2.10").as_deref(), Some("2.10.0"));
        assert_eq!(cmp_versions("2.9", "2.10"), Ordering::Less);
    }
}
