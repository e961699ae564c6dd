//! Which CUDA (and cuDNN major) a Python distribution needs, from its own evidence, each
//! piece named: the distribution's name tag (`spconv-cu126`), a CUDA tag in its local version
//! (`2.5.1+cu121`), its `Requires-Dist` on CUDA-tagged wheels (`nvidia-cublas-cu12`, also under
//! extras) and on one torch release (`torch==2.9.0`: the CUDA of that release's PyPI wheel,
//! from `matrices/torch.toml`), the DT_NEEDED entries of the ELF files its RECORD lists
//! (`libcudart.so.12`), a version module it ships (`paddle/version`, TensorFlow's build info),
//! a CUDA runtime linked statically into its binaries, and last the PTX ISA of its fatbins
//! (ISA 7.8 ⇒ built by nvcc 11.8 or later: a lower bound, from `matrices/ptx_isa.toml`).
//! Earlier kinds decide; a later one that agrees may add the minor (`12` → `12.5`); where
//! evidence disagrees the need carries a `conflict` note.
//!
//! METADATA is untrusted: requirement lines, their count and the evidence list are bounded.

use super::libs;
use crate::matrix::{Facts, PtxNeed};
use crate::version::{CudaTag, CudaVersion};
use serde::{Deserialize, Serialize};

/// Requirement lines read per distribution; real ones have at most a few hundred.
const MAX_REQUIRES: usize = 512;
/// A requirement line longer than this is not a real one and is skipped.
const MAX_REQUIRE_LEN: usize = 512;
/// Evidence entries kept per distribution and kind (torch links hundreds of binaries to
/// CUDA): one kind's flood cannot push out the others.
pub const MAX_EVIDENCE: usize = 32;

/// The CUDA and cuDNN a distribution needs, with the evidence that says so. `Default` (no
/// evidence, nothing known) lets tests build one field by field.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CudaNeed {
    /// `12.6`, or `12` when the evidence names only the major (never written as `12.0`).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "tag_text")]
    pub cuda: Option<CudaTag>,
    /// The cuDNN major (`9`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cudnn: Option<u32>,
    /// Every piece of evidence read, in the order that decides (first kind wins).
    pub evidence: Vec<CudaEvidence>,
    /// Set when pieces of evidence name different CUDA releases or cuDNN majors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conflict: Option<String>,
    /// The kind of the piece `cuda` was taken from (a later kind when it added the minor).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_from: Option<EvidenceKind>,
    /// True when `cuda` is only a lower bound (decided by the PTX ISA: built by that nvcc or
    /// a later one).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cuda_lower_bound: bool,
    /// The kind of the piece `cudnn` was taken from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cudnn_from: Option<EvidenceKind>,
}

/// What kind of evidence a piece is, in deciding order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceKind {
    /// The distribution's name: `spconv-cu126`, `cupy-cuda11x`, `nvidia-cudnn-cu12`.
    DistName,
    /// A CUDA tag in the version's local part: `2.5.1+cu121`.
    LocalVersion,
    /// A `Requires-Dist` on a CUDA-tagged wheel: `nvidia-cudnn-cu12==9.*`.
    RequiresDist,
    /// A `Requires-Dist` pin of one torch release (`torch==2.9.0`, xformers', vllm's,
    /// flash-attn's builds): the CUDA of that release's plain PyPI wheel (`torch.toml`).
    RequiresTorch,
    /// A DT_NEEDED entry of an ELF file the distribution installed: `libcudart.so.12`.
    DtNeeded,
    /// A version module it ships: `paddle/version/__init__.py`, TensorFlow's `build_info.py`,
    /// onnxruntime's `build_and_package_info.py`, cupy's `.data/_wheel.json`.
    VersionModule,
    /// The CUDA runtime linked statically into one of its binaries (its
    /// `cudaRuntimeGetVersion`).
    StaticCudart,
    /// The newest PTX ISA of its fatbins: the CUDA release that introduced it is a lower bound
    /// of the nvcc that built them (`ptx_isa.toml`).
    PtxIsa,
}

/// One piece of evidence and what it says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CudaEvidence {
    pub kind: EvidenceKind,
    /// What was read: the name, the version, the requirement line, or `<file>: <soname>`.
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "tag_text")]
    pub cuda: Option<CudaTag>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cudnn: Option<u32>,
    /// The extra a requirement is under (`and-cuda`): it applies only when that extra is
    /// installed, so extras naming different CUDA majors are alternatives, not a conflict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<String>,
    /// The CUDA tag in the file name of a per-CUDA build the package picks from at run time
    /// (`cuda121` of `libbitsandbytes_cuda121.so`), set only when the package ships builds
    /// for several: those name different CUDA releases as alternatives, not a conflict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// True when `cuda` is only a lower bound (`ptx_isa`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lower_bound: bool,
    /// The table row the value was looked up in (`requires_torch`, `ptx_isa`): its source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cited: Option<String>,
    /// Why a piece says nothing (`torch 2.99 is not in gpulint's torch table`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// `CudaTag` as its text (`12.6`, `12`) in JSON.
mod tag_text {
    use crate::version::CudaTag;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(t: &Option<CudaTag>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.collect_str(t),
            None => s.serialize_none(),
        }
    }
    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<CudaTag>, D::Error> {
        let text: Option<String> = Option::deserialize(d)?;
        match text {
            None => Ok(None),
            Some(t) => CudaTag::from_release_text(&t)
                .map(Some)
                .ok_or_else(|| serde::de::Error::custom(format!("invalid CUDA release {t:?}"))),
        }
    }
}

/// Evidence from the distribution's name and version.
pub fn from_name_and_version(name: &str, version: &str) -> Vec<CudaEvidence> {
    let mut out = Vec::new();
    if let Some(t) = CudaTag::from_dist_name(name) {
        out.push(evidence(EvidenceKind::DistName, name, Some(t), None, None));
    }
    if let Some(t) = CudaTag::from_local_version(version) {
        out.push(evidence(
            EvidenceKind::LocalVersion,
            version,
            Some(t),
            None,
            None,
        ));
    }
    out
}

/// Evidence from `Requires-Dist` lines: a requirement on a CUDA-tagged wheel names the CUDA
/// major; an exact pin of `nvidia-cudnn-cuXX` (`==9.*`, `==8.9.2.26`) names the cuDNN major.
pub fn from_requires(requires: &[String]) -> Vec<CudaEvidence> {
    requires
        .iter()
        .take(MAX_REQUIRES)
        .filter(|r| r.len() <= MAX_REQUIRE_LEN)
        .filter_map(|r| requirement_evidence(r))
        .collect()
}

fn requirement_evidence(line: &str) -> Option<CudaEvidence> {
    let (spec, marker) = match line.split_once(';') {
        Some((s, m)) => (s, Some(m)),
        None => (line, None),
    };
    let spec = spec.trim();
    let n = spec
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        .unwrap_or(spec.len());
    let name = crate::detect::python_dist::normalize_name(&spec[..n]);
    let cuda = CudaTag::from_dist_name(&name)?;
    // Past the name: optional `[extras]`, then the version specifier, maybe in parentheses.
    let rest = spec[n..].trim_start();
    let rest = match rest.strip_prefix('[') {
        Some(r) => r.split_once(']').map_or("", |(_, after)| after),
        None => rest,
    };
    let rest = rest.trim_start().trim_start_matches('(').trim_start();
    let cudnn = if name.starts_with("nvidia-cudnn-") {
        cudnn_major_of_spec(rest.trim_end_matches(')'))
    } else {
        None
    };
    let extra = marker.and_then(extra_of);
    Some(evidence(
        EvidenceKind::RequiresDist,
        line.trim(),
        Some(cuda),
        cudnn,
        extra,
    ))
}

/// The cuDNN major a version specifier admits alone: an exact or compatible pin (`==9.*`,
/// `~=9.0`), or a floor with the next major as ceiling (`<10.0,>=9.3.0.75`, TensorFlow's);
/// a bare floor `>=9.1` admits any later major.
fn cudnn_major_of_spec(spec: &str) -> Option<u32> {
    let clauses: Vec<&str> = spec.split(',').map(str::trim).collect();
    if let Some(m) = clauses.iter().find_map(|c| {
        c.strip_prefix("==")
            .or_else(|| c.strip_prefix("~="))
            .and_then(leading_number)
    }) {
        return Some(m);
    }
    let floor = clauses
        .iter()
        .find_map(|c| c.strip_prefix(">=").and_then(leading_number))?;
    let ceiling = clauses.iter().find_map(|c| {
        let v = c.strip_prefix('<').filter(|v| !v.starts_with('='))?.trim();
        let n = leading_number(v)?;
        // `<10` or `<10.0`: nothing of major 10 is admitted.
        let tail = v.trim_start_matches(|c: char| c.is_ascii_digit());
        tail.trim_start_matches(['.', '0', '*'])
            .is_empty()
            .then_some(n)
    })?;
    (ceiling == floor + 1).then_some(floor)
}

/// The extra named by a marker: `extra == "and-cuda"` → `and-cuda`.
pub fn extra_of(marker: &str) -> Option<String> {
    let (_, after) = marker.split_once("extra")?;
    let after = after.trim_start().strip_prefix("==")?.trim_start();
    let quote = after.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let value = after[1..].split(quote).next()?;
    (!value.is_empty()).then(|| crate::detect::python_dist::normalize_name(value))
}

fn leading_number(s: &str) -> Option<u32> {
    let s = s.trim_start();
    let n = s.bytes().take_while(u8::is_ascii_digit).count();
    (n > 0 && n <= 4).then(|| s[..n].parse().ok()).flatten()
}

/// Evidence from one DT_NEEDED entry of a file the distribution installed. Only libraries
/// whose soname major is the CUDA major count (`libcudart`, `libcublas(Lt)`, `libnvrtc`,
/// `libnvJitLink`); cuFFT, cuRAND, cuSPARSE and cuSOLVER number their sonames on their own
/// (CUDA 12's cuFFT is `libcufft.so.11`). cuDNN's sonames give the cuDNN major.
pub fn from_needed(file: &str, needed: &str) -> Option<CudaEvidence> {
    let so = libs::parse_so_name(needed)?;
    let major = so
        .suffix
        .as_deref()
        .and_then(|s| s.split('.').next())
        .and_then(leading_number)?;
    let source = format!("{file}: {needed}");
    match so.stem.as_str() {
        "cudart" | "cublas" | "cublasLt" | "nvrtc" | "nvJitLink" => Some(evidence(
            EvidenceKind::DtNeeded,
            &source,
            Some(CudaTag::major_only(major)),
            None,
            None,
        )),
        s if s == "cudnn" || s.starts_with("cudnn_") => Some(evidence(
            EvidenceKind::DtNeeded,
            &source,
            None,
            Some(major),
            None,
        )),
        _ => None,
    }
}

/// Evidence from a `Requires-Dist` pin of one torch release (`torch==2.9.0`, `torch
/// (==2.5.1+cu121)`): a CUDA tag in the pinned version's local part names the CUDA itself;
/// else the CUDA of that release line's plain PyPI wheel, looked up in `facts`' torch table
/// (unknown, with a note, when the table has no row). A floor (`torch>=2.4`) pins nothing.
pub fn from_torch_pins(requires: &[String], facts: &Facts) -> Vec<CudaEvidence> {
    requires
        .iter()
        .take(MAX_REQUIRES)
        .filter(|r| r.len() <= MAX_REQUIRE_LEN)
        .filter_map(|r| torch_pin_evidence(r, facts))
        .collect()
}

fn torch_pin_evidence(line: &str, facts: &Facts) -> Option<CudaEvidence> {
    let (spec, marker) = match line.split_once(';') {
        Some((s, m)) => (s, Some(m)),
        None => (line, None),
    };
    let spec = spec.trim();
    let n = spec
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        .unwrap_or(spec.len());
    if crate::detect::python_dist::normalize_name(&spec[..n]) != "torch" {
        return None;
    }
    // One clause of the specifier is an exact pin: `==2.9.0` (not `===`, `!=`, `>=`).
    let version = spec[n..]
        .trim()
        .trim_start_matches('(')
        .trim_end_matches(')')
        .split(',')
        .find_map(|c| {
            let v = c.trim().strip_prefix("==")?;
            (!v.starts_with('=')).then(|| v.trim())
        })
        .filter(|v| !v.is_empty())?;
    let mut e = evidence(
        EvidenceKind::RequiresTorch,
        line.trim(),
        None,
        None,
        marker.and_then(extra_of),
    );
    if let Some(t) = CudaTag::from_local_version(version) {
        e.cuda = Some(t);
        return Some(e);
    }
    let line_of = version.trim_end_matches(".*");
    match facts.torch_pypi_default(line_of) {
        Some(d) => {
            e.cuda = Some(CudaTag::release(d.value.major, d.value.minor));
            e.cited = Some(d.source);
        }
        None => {
            e.note = Some(format!(
                "torch {line_of} is not in gpulint's torch table: the CUDA of its PyPI wheel is unknown"
            ))
        }
    }
    Some(e)
}

/// Evidence from a version module the distribution ships: its CUDA (`12.5.1` → 12.5, cupy's
/// `12.x` → 12) and cuDNN (`8.6.0` → 8). `file` is the module's path in site-packages.
pub fn from_version_module(
    file: &str,
    cuda: Option<&str>,
    cudnn: Option<&str>,
) -> Option<CudaEvidence> {
    let tag = cuda.and_then(|c| {
        let c = c.trim();
        match c.strip_suffix(".x") {
            Some(major) => Some(CudaTag::major_only(leading_number(major)?)),
            None => CudaTag::from_release_text(c)
                .or_else(|| CudaTag::from_release_text(c.rsplit_once('.')?.0)),
        }
    });
    // A patch level (`12.5.1`) is dropped above: CudaTag holds major.minor.
    let cudnn_major = cudnn.and_then(|d| {
        let d = d.trim();
        let n = d.bytes().take_while(u8::is_ascii_digit).count();
        (n > 0 && d[n..].chars().all(|c| c == '.' || c.is_ascii_digit()))
            .then(|| leading_number(d))
            .flatten()
    });
    if tag.is_none() && cudnn_major.is_none() {
        return None;
    }
    let mut said = Vec::new();
    if let Some(c) = cuda {
        said.push(format!("cuda {c}"));
    }
    if let Some(d) = cudnn {
        said.push(format!("cudnn {d}"));
    }
    Some(evidence(
        EvidenceKind::VersionModule,
        &format!("{file}: {}", said.join(", ")),
        tag,
        cudnn_major,
        None,
    ))
}

/// Evidence from the CUDA runtime linked statically into `file` (what its
/// `cudaRuntimeGetVersion` reports).
pub fn from_static_cudart(file: &str, runtime: CudaVersion) -> CudaEvidence {
    evidence(
        EvidenceKind::StaticCudart,
        &format!("{file}: static cudart {}.{}", runtime.major, runtime.minor),
        Some(CudaTag::release(runtime.major, runtime.minor)),
        None,
        None,
    )
}

/// Evidence from the newest PTX ISA in `file`'s fatbins: the CUDA release that introduced it
/// (`facts`' PTX ISA table) is a lower bound of the nvcc that built it. An ISA above every
/// row says only "newer than every release gpulint knows" (a note, no value).
pub fn from_ptx_isa(file: &str, isa: (u16, u16), facts: &Facts) -> CudaEvidence {
    let mut e = evidence(
        EvidenceKind::PtxIsa,
        &format!("{file}: PTX ISA {}.{}", isa.0, isa.1),
        None,
        None,
        None,
    );
    e.lower_bound = true;
    match facts.ptx_isa_need(isa) {
        Some(s) => {
            e.cited = Some(s.source);
            match s.value {
                PtxNeed::Known(c) => e.cuda = Some(CudaTag::release(c.major, c.minor)),
                PtxNeed::NewerThanKnown {
                    newest_isa,
                    newest_cuda,
                } => {
                    e.note = Some(format!(
                        "newer than ISA {}.{} (CUDA {newest_cuda}), the newest gpulint knows",
                        newest_isa.0, newest_isa.1
                    ))
                }
            }
        }
        None => e.note = Some("an ISA gpulint's PTX ISA table does not list".into()),
    }
    e
}

fn evidence(
    kind: EvidenceKind,
    source: &str,
    cuda: Option<CudaTag>,
    cudnn: Option<u32>,
    extra: Option<String>,
) -> CudaEvidence {
    CudaEvidence {
        kind,
        source: source.to_string(),
        cuda,
        cudnn,
        extra,
        variant: None,
        lower_bound: false,
        cited: None,
        note: None,
    }
}

/// Decide from the evidence (any order; sorted by kind here): the first piece of the first
/// kind that says wins; a later exact piece of the same major may add the minor. A lower
/// bound (PTX ISA) decides only when nothing else names the CUDA; the highest bound wins.
/// Requirements under extras decide only when every extra agrees (jax's `cuda12` and `cuda13`
/// extras are alternatives). `None` when there is no evidence.
pub fn decide(mut evidence: Vec<CudaEvidence>) -> Option<CudaNeed> {
    if evidence.is_empty() {
        return None;
    }
    // Stable: within a kind the reading order is kept.
    evidence.sort_by_key(|e| e.kind);
    // Duplicates (one soname NEEDed by many files of a dist, one runtime linked into many)
    // say nothing new.
    let mut seen = std::collections::BTreeSet::new();
    let mut per_kind = std::collections::BTreeMap::new();
    evidence.retain(|e| {
        let key = match e.kind {
            EvidenceKind::DtNeeded => e.source.rsplit(": ").next().unwrap_or("").to_string(),
            EvidenceKind::StaticCudart | EvidenceKind::PtxIsa => {
                e.source.rsplit(": ").next().unwrap_or("").to_string()
            }
            _ => e.source.clone(),
        };
        if !seen.insert((e.kind, key)) {
            return false;
        }
        let n = per_kind.entry(e.kind).or_insert(0usize);
        *n += 1;
        *n <= MAX_EVIDENCE
    });

    let binding: Vec<&CudaEvidence> = evidence
        .iter()
        .filter(|e| e.extra.is_none() || extras_agree(&evidence, e))
        .filter(|e| e.variant.is_none() || variants_agree(&evidence))
        .collect();
    let exact = || binding.iter().copied().filter(|e| !e.lower_bound);
    let first = exact().find(|e| e.cuda.is_some());
    let (cuda, cuda_from, cuda_lower_bound) = match first {
        Some(e) => {
            let d = e.cuda.unwrap_or(CudaTag::major_only(0));
            // A later exact piece of the same major names the minor the first one left open.
            let refined = d
                .minor
                .is_none()
                .then(|| {
                    exact().find(|o| {
                        o.cuda
                            .is_some_and(|t| t.major == d.major && t.minor.is_some())
                    })
                })
                .flatten();
            match refined {
                Some(r) => (r.cuda, Some(r.kind), false),
                None => (Some(d), Some(e.kind), false),
            }
        }
        None => {
            let bound = binding
                .iter()
                .filter(|e| e.lower_bound)
                .filter_map(|e| Some((e.cuda?, e.kind)))
                .max_by_key(|(t, _)| (t.major, t.minor));
            match bound {
                Some((t, k)) => (Some(t), Some(k), true),
                None => (None, None, false),
            }
        }
    };
    let cudnn_piece = binding.iter().find(|e| e.cudnn.is_some());
    let cudnn = cudnn_piece.and_then(|e| e.cudnn);

    let mut notes = Vec::new();
    if let Some(d) = cuda.filter(|_| !cuda_lower_bound) {
        let mut disagree: Vec<String> = exact()
            .filter(|e| e.cuda.is_some_and(|t| !same_release(d, t)))
            .map(|e| {
                format!(
                    "{} says {}",
                    e.source,
                    e.cuda.map_or(String::new(), |t| t.to_string())
                )
            })
            .collect();
        // Built by a newer nvcc than the CUDA it claims.
        disagree.extend(
            binding
                .iter()
                .filter(|e| e.lower_bound)
                .filter(|e| e.cuda.is_some_and(|b| above(b, d)))
                .map(|e| {
                    format!(
                        "{} says at least {}",
                        e.source,
                        e.cuda.map_or(String::new(), |t| t.to_string())
                    )
                }),
        );
        if !disagree.is_empty() {
            notes.push(format!("CUDA {d} disagrees with: {}", disagree.join("; ")));
        }
    }
    if let Some(d) = cudnn {
        let disagree: Vec<String> = binding
            .iter()
            .filter(|e| e.cudnn.is_some_and(|m| m != d))
            .map(|e| format!("{} says {}", e.source, e.cudnn.unwrap_or_default()))
            .collect();
        if !disagree.is_empty() {
            notes.push(format!("cuDNN {d} disagrees with: {}", disagree.join("; ")));
        }
    }
    Some(CudaNeed {
        cuda,
        cudnn,
        conflict: (!notes.is_empty()).then(|| notes.join(". ")),
        cuda_from,
        cuda_lower_bound,
        cudnn_from: cudnn_piece.map(|e| e.kind),
        evidence,
    })
}

/// Whether a lower bound `b` excludes every release `d` admits: bound 13.0 over `12`, 12.8
/// over 12.6 (not 12.8 over `12`, which admits 12.8).
fn above(b: CudaTag, d: CudaTag) -> bool {
    b.major > d.major
        || (b.major == d.major
            && match (b.minor, d.minor) {
                (Some(x), Some(y)) => x > y,
                _ => false,
            })
}

/// Whether every requirement under an extra names the same CUDA major as `e` does.
fn extras_agree(all: &[CudaEvidence], e: &CudaEvidence) -> bool {
    all.iter()
        .filter(|o| {
            matches!(
                o.kind,
                EvidenceKind::RequiresDist | EvidenceKind::RequiresTorch
            ) && o.extra.is_some()
                && o.cuda.is_some()
        })
        .all(|o| o.cuda.map(|t| t.major) == e.cuda.map(|t| t.major))
}

/// Whether the per-CUDA builds (pieces with a `variant`) all name one CUDA major and one
/// cuDNN major: then they bind like any other piece.
fn variants_agree(all: &[CudaEvidence]) -> bool {
    let variants = || all.iter().filter(|o| o.variant.is_some());
    let cuda: std::collections::BTreeSet<u32> =
        variants().filter_map(|o| o.cuda.map(|t| t.major)).collect();
    let cudnn: std::collections::BTreeSet<u32> = variants().filter_map(|o| o.cudnn).collect();
    cuda.len() <= 1 && cudnn.len() <= 1
}

/// The CUDA tag in a binary's file name (`libbitsandbytes_cuda121.so` → `cuda121`).
pub fn file_name_tag(file_name: &str) -> Option<(&str, CudaTag)> {
    file_name
        .split(['_', '-', '.'])
        .find_map(|part| Some((part, CudaTag::parse(part)?)))
}

/// Two tags name the same release as far as both say: `12` agrees with `12.6`.
fn same_release(a: CudaTag, b: CudaTag) -> bool {
    a.major == b.major
        && match (a.minor, b.minor) {
            (Some(x), Some(y)) => x == y,
            _ => true,
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reqs(lines: &[&str]) -> Vec<String> {
        lines.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn name_tags_keep_major_only_as_major_only() {
        let n = decide(from_name_and_version("spconv-cu126", "2.3.8")).unwrap();
        assert_eq!(n.cuda, Some(CudaTag::release(12, 6)));
        let n = decide(from_name_and_version("nvidia-cudnn-cu12", "9.1.0.70")).unwrap();
        assert_eq!(n.cuda, Some(CudaTag::major_only(12)));
        assert_eq!(n.cuda.unwrap().to_string(), "12");
        let n = decide(from_name_and_version("cupy-cuda11x", "13.3.0")).unwrap();
        assert_eq!(n.cuda, Some(CudaTag::major_only(11)));
        assert_eq!(n.evidence[0].kind, EvidenceKind::DistName);
        assert!(decide(from_name_and_version("numpy", "2.0.0")).is_none());
    }

    #[test]
    fn requires_dist_under_extras_and_cudnn_pins() {
        // tensorflow[and-cuda]-style metadata.
        let ev = from_requires(&reqs(&[
            "numpy>=1.26",
            "nvidia-cublas-cu12==12.5.3.2; extra == \"and-cuda\"",
            "nvidia-cudnn-cu12==9.3.0.75; extra == \"and-cuda\"",
        ]));
        assert_eq!(ev.len(), 2);
        assert_eq!(ev[0].extra.as_deref(), Some("and-cuda"));
        let n = decide(ev).unwrap();
        assert_eq!(n.cuda, Some(CudaTag::major_only(12)));
        assert_eq!(n.cudnn, Some(9));
        assert_eq!(n.conflict, None);
        // Wildcard and parenthesized pins; a floor names no major.
        let n = decide(from_requires(&reqs(&[
            "nvidia-cudnn-cu11 (==8.*)",
            "nvidia-cudnn-cu12>=9.1",
        ])))
        .unwrap();
        assert_eq!(n.cudnn, Some(8));
        assert_eq!(n.evidence[1].cudnn, None);
        // tensorflow 2.21.0: a floor with the next major as ceiling names the major.
        for (spec, want) in [
            ("nvidia-cudnn-cu12<10.0,>=9.3.0.75", Some(9)),
            ("nvidia-cudnn-cu12>=9.3,<10", Some(9)),
            ("nvidia-cudnn-cu12>=9.3,<11", None),
            ("nvidia-cudnn-cu12>=9.3,<=10", None),
            ("nvidia-cudnn-cu12<10.1,>=9.3", None),
        ] {
            assert_eq!(from_requires(&reqs(&[spec]))[0].cudnn, want, "{spec}");
        }
    }

    #[test]
    fn extras_naming_different_majors_are_alternatives() {
        // jax: `jax[cuda12]` and `jax[cuda13]` are choices, not a conflict.
        let n = decide(from_requires(&reqs(&[
            "jax-cuda12-plugin[with-cuda]<=0.7.2,>=0.7.1; extra == 'cuda12'",
            "jax-cuda13-plugin[with-cuda]<=0.7.2,>=0.7.1; extra == 'cuda13'",
        ])))
        .unwrap();
        assert_eq!(n.cuda, None);
        assert_eq!(n.conflict, None);
        assert_eq!(n.evidence.len(), 2);
        assert_eq!(n.evidence[1].cuda, Some(CudaTag::major_only(13)));
    }

    #[test]
    fn dt_needed_counts_only_sonames_numbered_by_cuda() {
        let f = "ort/capi/libonnxruntime_providers_cuda.so";
        let e = from_needed(f, "libcudart.so.11.0").unwrap();
        // libcudart.so.11.0 is every CUDA 11's soname: major 11 only, not 11.0.
        assert_eq!(e.cuda, Some(CudaTag::major_only(11)));
        assert_eq!(from_needed(f, "libcudnn.so.8").unwrap().cudnn, Some(8));
        assert_eq!(
            from_needed(f, "libcudnn_ops_infer.so.8").unwrap().cudnn,
            Some(8)
        );
        assert_eq!(
            from_needed(f, "libnvrtc.so.13").unwrap().cuda,
            Some(CudaTag::major_only(13))
        );
        assert_eq!(
            from_needed(f, "libcublasLt.so.12").unwrap().cuda,
            Some(CudaTag::major_only(12))
        );
        // CUDA 12's cuFFT is libcufft.so.11: its soname says nothing about the CUDA major.
        assert_eq!(from_needed(f, "libcufft.so.11"), None);
        assert_eq!(from_needed(f, "libc.so.6"), None);
        assert_eq!(from_needed(f, "libcudart.so"), None);
    }

    #[test]
    fn disagreement_is_noted_and_earlier_kind_decides() {
        let mut ev = from_name_and_version("spconv-cu126", "2.3.8");
        ev.push(from_needed("spconv/core_cc.so", "libcudart.so.11.0").unwrap());
        ev.push(from_needed("spconv/core_cc.so", "libcublas.so.12").unwrap());
        let n = decide(ev).unwrap();
        assert_eq!(n.cuda, Some(CudaTag::release(12, 6)));
        let c = n.conflict.unwrap();
        assert!(c.contains("libcudart.so.11.0 says 11"), "{c}");
        assert!(!c.contains("libcublas"), "{c}");
    }

    #[test]
    fn torch_pins_exact_only_and_unknown_without_a_row() {
        let facts = Facts::embedded().unwrap();
        let want = facts.torch_pypi_default("2.4.0").unwrap();
        let ev = from_torch_pins(
            &reqs(&[
                "torch (==2.4.0)",
                "torch>=2.4",
                "torch!=2.4.0",
                "torch===2.4.0",
                "torchvision==0.19.0",
                "torch==2.4.*; extra == \"gpu\"",
            ]),
            &facts,
        );
        let sources: Vec<&str> = ev.iter().map(|e| e.source.as_str()).collect();
        assert_eq!(
            sources,
            ["torch (==2.4.0)", "torch==2.4.*; extra == \"gpu\""]
        );
        let t = CudaTag::release(want.value.major, want.value.minor);
        assert_eq!(ev[0].cuda, Some(t));
        assert_eq!(ev[1].cuda, Some(t));
        assert_eq!(ev[1].extra.as_deref(), Some("gpu"));
        // Tables that know nothing: a pin says nothing, with a note.
        let ev = from_torch_pins(&reqs(&["torch==2.4.0"]), Facts::unknown());
        assert_eq!(ev[0].cuda, None);
        assert!(ev[0]
            .note
            .as_deref()
            .unwrap()
            .contains("not in gpulint's torch table"));
        // One unknown pin is no decision.
        assert_eq!(decide(ev).unwrap().cuda, None);
    }

    #[test]
    fn version_module_texts() {
        let e = from_version_module("x/v.py", Some("12.5.1"), Some("9")).unwrap();
        assert_eq!((e.cuda, e.cudnn), (Some(CudaTag::release(12, 5)), Some(9)));
        let e = from_version_module("cupy/.data/_wheel.json", Some("11.x"), None).unwrap();
        assert_eq!(e.cuda, Some(CudaTag::major_only(11)));
        let e = from_version_module("p/v.py", Some("11.8"), Some("8.6.0")).unwrap();
        assert_eq!((e.cuda, e.cudnn), (Some(CudaTag::release(11, 8)), Some(8)));
        // paddle's CPU build writes 'False'.
        assert_eq!(
            from_version_module("p/v.py", Some("False"), Some("False")),
            None
        );
        assert_eq!(from_version_module("p/v.py", None, None), None);
    }

    #[test]
    fn ptx_isa_is_a_lower_bound_that_decides_last() {
        let facts = Facts::embedded().unwrap();
        let Some(s) = facts.ptx_isa_need((7, 8)) else {
            panic!("ISA 7.8 row")
        };
        let PtxNeed::Known(c) = s.value else {
            panic!("7.8 is known")
        };
        let e = from_ptx_isa("ort/libx.so", (7, 8), &facts);
        assert!(e.lower_bound);
        assert_eq!(e.cuda, Some(CudaTag::release(c.major, c.minor)));
        assert_eq!(e.cited, Some(s.source));
        // Alone it decides, as a bound.
        let n = decide(vec![e.clone()]).unwrap();
        assert!(n.cuda_lower_bound);
        assert_eq!(n.cuda_from, Some(EvidenceKind::PtxIsa));
        // Beside a soname it only checks: `11` admits the bound, `12` is above it.
        for (soname, conflict) in [("libcudart.so.11.0", false), ("libcudart.so.12", false)] {
            let n = decide(vec![e.clone(), from_needed("ort/libx.so", soname).unwrap()]).unwrap();
            assert!(!n.cuda_lower_bound);
            assert_eq!(n.conflict.is_some(), conflict, "{soname}");
        }
        let n = decide(vec![
            e,
            from_needed("ort/libx.so", "libcudart.so.10.2").unwrap(),
        ])
        .unwrap();
        assert!(n.conflict.unwrap().contains("PTX ISA 7.8 says at least"));
        // An ISA above every row: no value, a note.
        let e = from_ptx_isa("x.so", (99, 0), &facts);
        assert_eq!(e.cuda, None);
        assert!(e.note.unwrap().contains("newer than ISA"));
        assert!(from_ptx_isa("x.so", (7, 8), Facts::unknown())
            .note
            .is_some());
    }

    #[test]
    fn a_later_exact_piece_adds_the_minor() {
        let mut ev = from_requires(&reqs(&["nvidia-cublas-cu12"]));
        ev.push(from_static_cudart("x/_C.so", CudaVersion::new(12, 4)));
        let n = decide(ev.clone()).unwrap();
        assert_eq!(n.cuda, Some(CudaTag::release(12, 4)));
        assert_eq!(n.cuda_from, Some(EvidenceKind::StaticCudart));
        // Another major adds nothing: it disagrees.
        ev[1] = from_static_cudart("x/_C.so", CudaVersion::new(13, 0));
        let n = decide(ev).unwrap();
        assert_eq!(n.cuda, Some(CudaTag::major_only(12)));
        assert_eq!(n.cuda_from, Some(EvidenceKind::RequiresDist));
        assert!(n.conflict.unwrap().contains("static cudart 13.0 says 13.0"));
    }

    #[test]
    fn untrusted_metadata_is_bounded() {
        let long = format!("nvidia-cublas-cu12{}", " ".repeat(MAX_REQUIRE_LEN));
        assert!(from_requires(&[long]).is_empty());
        let many: Vec<String> = (0..MAX_REQUIRES * 2)
            .map(|i| format!("nvidia-pkg{i}-cu12"))
            .collect();
        assert_eq!(from_requires(&many).len(), MAX_REQUIRES);
        assert_eq!(
            decide(from_requires(&many)).unwrap().evidence.len(),
            MAX_EVIDENCE
        );
        // The bound is per kind: a flood of one kind keeps the others.
        let mut flood = from_requires(&many);
        flood.push(from_static_cudart("x/_C.so", CudaVersion::new(12, 4)));
        let n = decide(flood).unwrap();
        assert_eq!(n.evidence.len(), MAX_EVIDENCE + 1);
        assert_eq!(n.cuda, Some(CudaTag::release(12, 4)));
        let needed: Vec<CudaEvidence> = (0..100)
            .map(|i| from_needed(&format!("x/lib{i}.so"), "libcudart.so.12").unwrap())
            .collect();
        // One soname needed by many files is one piece of evidence.
        assert_eq!(decide(needed).unwrap().evidence.len(), 1);
    }
}
