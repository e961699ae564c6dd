//! Version types that are not semver: NVIDIA driver versions (`535.104.05`, leading zeros
//! are significant in the text but compare numerically) and CUDA toolkit versions (`12.1`,
//! `12.1.105`). PEP 440 versions of Python packages use `pep440_rs` instead.

use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

/// An NVIDIA driver version such as `535.104.05` or `580.159.04`.
///
/// Kept as the exact text users typed (for messages) plus numeric components (for ordering).
/// `535.104.05` and `535.104.5` compare equal; we never round-trip through semver.
#[derive(Debug, Clone, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct DriverVersion {
    text: String,
    parts: Vec<u32>,
}

impl DriverVersion {
    pub fn parts(&self) -> &[u32] {
        &self.parts
    }
    /// The driver branch (first component): 535, 580, …
    pub fn branch(&self) -> u32 {
        self.parts.first().copied().unwrap_or(0)
    }
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl FromStr for DriverVersion {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        if t.is_empty() {
            return Err("empty driver version".into());
        }
        let mut parts = Vec::new();
        for p in t.split('.') {
            if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) || p.len() > 9 {
                return Err(format!(
                    "invalid driver version {t:?}: expected digits separated by dots, e.g. 535.104.05"
                ));
            }
            parts.push(p.parse::<u32>().map_err(|e| e.to_string())?);
        }
        if parts.len() > 4 {
            return Err(format!("invalid driver version {t:?}: too many components"));
        }
        Ok(DriverVersion {
            text: t.to_string(),
            parts,
        })
    }
}

impl TryFrom<String> for DriverVersion {
    type Error = String;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}
impl From<DriverVersion> for String {
    fn from(v: DriverVersion) -> String {
        v.text
    }
}

fn cmp_parts(a: &[u32], b: &[u32]) -> Ordering {
    let n = a.len().max(b.len());
    for i in 0..n {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        match x.cmp(&y) {
            Ordering::Equal => continue,
            o => return o,
        }
    }
    Ordering::Equal
}

impl PartialEq for DriverVersion {
    fn eq(&self, other: &Self) -> bool {
        cmp_parts(&self.parts, &other.parts) == Ordering::Equal
    }
}
impl PartialOrd for DriverVersion {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for DriverVersion {
    fn cmp(&self, other: &Self) -> Ordering {
        cmp_parts(&self.parts, &other.parts)
    }
}
impl fmt::Display for DriverVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A CUDA toolkit / runtime version: `12`, `12.1`, `12.1.105`, `13.0.2`.
/// Missing components compare as 0 (`12.1` == `12.1.0`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct CudaVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl CudaVersion {
    pub const fn new(major: u32, minor: u32) -> Self {
        CudaVersion {
            major,
            minor,
            patch: 0,
        }
    }
    /// `12.1` (drops the patch), the form NVIDIA's tables use.
    pub fn major_minor(&self) -> String {
        format!("{}.{}", self.major, self.minor)
    }
    /// Same major and minor (ignores the patch).
    pub fn same_release(&self, other: &CudaVersion) -> bool {
        self.major == other.major && self.minor == other.minor
    }
    /// The release a PyTorch-style variant tag names when it names a minor: `cu121` → 12.1,
    /// `cu92` → 9.2; `None` for a major-only tag (`cu12`), the `cuda…` spellings of other
    /// indexes and anything else. Goes through [`CudaTag`], the one reader of the grammar.
    pub fn from_cu_tag(tag: &str) -> Option<CudaVersion> {
        if tag.starts_with("cuda") {
            return None;
        }
        CudaTag::parse(tag)?.version()
    }
    /// The release `cudaRuntimeGetVersion` encodes as one number: 11070 → 11.7, 12080 → 12.8.
    pub const fn from_runtime_number(v: u32) -> CudaVersion {
        CudaVersion::new(v / 1000, (v % 1000) / 10)
    }
    /// The PyTorch variant tag for this version: 12.1 → `cu121`.
    pub fn cu_tag(&self) -> String {
        format!("cu{}{}", self.major, self.minor)
    }
}

impl FromStr for CudaVersion {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().trim_start_matches('v').trim_start_matches('V');
        let mut it = t.split('.');
        let parse = |p: Option<&str>, required: bool| -> Result<u32, String> {
            match p {
                None if !required => Ok(0),
                None => Err(format!("invalid CUDA version {s:?}")),
                Some(x) => x
                    .parse::<u32>()
                    .map_err(|_| format!("invalid CUDA version {s:?}")),
            }
        };
        let major = parse(it.next(), true)?;
        let minor = parse(it.next(), false)?;
        let patch = parse(it.next(), false)?;
        // A fourth component (e.g. 12.1.105.1) is ignored on purpose: tables never use it.
        Ok(CudaVersion {
            major,
            minor,
            patch,
        })
    }
}
impl TryFrom<String> for CudaVersion {
    type Error = String;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}
impl From<CudaVersion> for String {
    fn from(v: CudaVersion) -> String {
        v.to_string()
    }
}
impl fmt::Display for CudaVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.patch == 0 {
            write!(f, "{}.{}", self.major, self.minor)
        } else {
            write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
        }
    }
}

/// A CUDA release named by a build tag: PyTorch's `cu121`, NVIDIA's wheel suffix `-cu12`,
/// `cupy-cuda12x`, `jax-cuda12-plugin`, flash-attn's `+cu12torch2.3`, conda's `cuda-version
/// 12.4`. The one reader of that grammar. The major is always known; the minor only when the
/// tag writes it, so a major-only tag never passes for `x.0` unless a caller says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CudaTag {
    pub major: u32,
    /// `None` for a major-only tag (`cu12`, `cuda12`, `cuda12x`).
    pub minor: Option<u32>,
}

impl CudaTag {
    pub const fn major_only(major: u32) -> Self {
        CudaTag { major, minor: None }
    }
    pub const fn release(major: u32, minor: u32) -> Self {
        CudaTag {
            major,
            minor: Some(minor),
        }
    }
    /// The release, when the tag names its minor.
    pub fn version(&self) -> Option<CudaVersion> {
        Some(CudaVersion::new(self.major, self.minor?))
    }
    /// The lowest release the tag admits (`cu12` → 12.0), for output that has always written
    /// a major-only tag that way (the inventory's `cuda` field of a Python package).
    pub fn floor(&self) -> CudaVersion {
        CudaVersion::new(self.major, self.minor.unwrap_or(0))
    }

    /// A whole tag: `cu121`, `cu92`, `cu12` (major only), `cuda12`, `cuda12x`, `cuda102`,
    /// `cuda12.1`. Lower case, as every index writes them.
    pub fn parse(tag: &str) -> Option<CudaTag> {
        match Self::parse_prefix(tag)? {
            (t, "") => Some(t),
            _ => None,
        }
    }

    /// A tag in a PEP 440 local version: `2.5.1+cu121` → 12.1, flash-attn's
    /// `2.5.8+cu122torch2.3cxx11abiFALSE` → 12.2, `0.4.13+cuda12.cudnn89` → 12 (major only),
    /// PyG's `2.1.2+pt23cu121` (torch 2.3 first) → 12.1.
    pub fn from_local_version(version: &str) -> Option<CudaTag> {
        let (_, local) = version.split_once('+')?;
        // Whatever follows the tag's digits is not the tag's (`cu122torch2`).
        local.split(['.', '-', '_']).find_map(|seg| {
            let seg = seg.to_ascii_lowercase();
            let seg = match seg.strip_prefix("pt") {
                Some(rest) => rest.trim_start_matches(|c: char| c.is_ascii_digit()),
                None => seg.as_str(),
            };
            Some(Self::parse_prefix(seg)?.0)
        })
    }

    /// A tag in a distribution name: `spconv-cu126` → 12.6, `nvidia-cudnn-cu12` → 12,
    /// `cupy-cuda12x` → 12, `cupy-cuda102` → 10.2, `jax-cuda12-plugin` → 12. The last
    /// `-`/`_`-separated part that is a whole tag wins; `nvidia-cuda-runtime` has none.
    pub fn from_dist_name(name: &str) -> Option<CudaTag> {
        let name = name.to_ascii_lowercase();
        name.rsplit(['-', '_']).find_map(Self::parse)
    }

    /// A conda package that pins the CUDA release by its version: `cuda-version 12.4`,
    /// `cudatoolkit 11.8.0` → 11.8, `pytorch-cuda 12.1`; `cuda-version 12` → 12 (major
    /// only). `None` for any other package.
    pub fn from_conda(name: &str, version: &str) -> Option<CudaTag> {
        match name {
            "cuda-version" | "cudatoolkit" | "pytorch-cuda" => Self::from_release_text(version),
            _ => None,
        }
    }

    /// A release written out: `12`, `12.4`, `11.8.0`, `12.4.*`.
    pub fn from_release_text(text: &str) -> Option<CudaTag> {
        let mut parts = text.trim().split('.');
        let num = |p: &str| {
            (!p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
                .then(|| p.parse::<u32>().ok())
                .flatten()
        };
        let major = num(parts.next()?)?;
        Some(match parts.next() {
            None => CudaTag::major_only(major),
            Some(m) => CudaTag::release(major, num(m)?),
        })
    }

    /// A tag at the start of `s` and what follows it: `cu122torch2` → (12.2, `torch2`).
    fn parse_prefix(s: &str) -> Option<(CudaTag, &str)> {
        let (after, word) = match s.strip_prefix("cuda") {
            Some(r) => (r, true),
            None => (s.strip_prefix("cu")?, false),
        };
        let n = after.bytes().take_while(u8::is_ascii_digit).count();
        let (digits, rest) = after.split_at(n);
        if digits.is_empty() || digits.len() > 3 || digits.starts_with('0') {
            return None;
        }
        let num = |d: &str| d.parse::<u32>().ok();
        if word {
            // cupy's `cuda12x`: any release of that major.
            if let Some(r) = rest.strip_prefix('x') {
                return Some((CudaTag::major_only(num(digits)?), r));
            }
            // old jaxlib's `cuda12.1`
            if let Some(m) = rest.strip_prefix('.') {
                let k = m.bytes().take_while(u8::is_ascii_digit).count();
                if k > 0 && digits.len() <= 2 {
                    return Some((CudaTag::release(num(digits)?, num(&m[..k])?), &m[k..]));
                }
            }
            if digits.len() == 1 {
                return Some((CudaTag::major_only(num(digits)?), rest));
            }
        }
        let tag = match digits.len() {
            // `cu10`…`cu19`: CUDA 10 on has two-digit majors, so `cu12` is 12, never 1.2.
            2 if digits.starts_with('1') => CudaTag::major_only(num(digits)?),
            // The last digit is the minor: cu92 → 9.2, cu102 → 10.2, cu130 → 13.0.
            2 | 3 => {
                let (maj, min) = digits.split_at(digits.len() - 1);
                CudaTag::release(num(maj)?, num(min)?)
            }
            _ => return None,
        };
        Some((tag, rest))
    }
}

impl fmt::Display for CudaTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.minor {
            Some(m) => write!(f, "{}.{m}", self.major),
            None => write!(f, "{}", self.major),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_versions_compare_numerically_and_keep_text() {
        let a: DriverVersion = "535.104.05".parse().unwrap();
        let b: DriverVersion = "535.104.5".parse().unwrap();
        let c: DriverVersion = "580.65.06".parse().unwrap();
        assert_eq!(a, b);
        assert!(a < c);
        assert_eq!(a.to_string(), "535.104.05");
        assert_eq!(c.branch(), 580);
        assert!("535.x".parse::<DriverVersion>().is_err());
        assert!("".parse::<DriverVersion>().is_err());
    }

    #[test]
    fn cuda_versions_parse_and_tags() {
        let v: CudaVersion = "12.1.105".parse().unwrap();
        assert_eq!((v.major, v.minor, v.patch), (12, 1, 105));
        assert_eq!(
            CudaVersion::from_cu_tag("cu121"),
            Some(CudaVersion::new(12, 1))
        );
        assert_eq!(
            CudaVersion::from_cu_tag("cu130"),
            Some(CudaVersion::new(13, 0))
        );
        assert_eq!(
            CudaVersion::from_cu_tag("cu92"),
            Some(CudaVersion::new(9, 2))
        );
        assert_eq!(CudaVersion::from_cu_tag("cpu"), None);
        assert_eq!(CudaVersion::new(11, 8).cu_tag(), "cu118");
        assert!("12.1".parse::<CudaVersion>().unwrap() < "12.1.1".parse().unwrap());
    }

    /// Every tag PyTorch, NVIDIA's wheels, other distributions and conda use, through the one
    /// parser. `None` in the minor column: the tag names only a major.
    #[test]
    fn cuda_tags_of_every_index() {
        let pytorch = [
            ("cu80", 8, Some(0)),
            ("cu90", 9, Some(0)),
            ("cu91", 9, Some(1)),
            ("cu92", 9, Some(2)),
            ("cu100", 10, Some(0)),
            ("cu101", 10, Some(1)),
            ("cu102", 10, Some(2)),
            ("cu110", 11, Some(0)),
            ("cu111", 11, Some(1)),
            ("cu113", 11, Some(3)),
            ("cu114", 11, Some(4)),
            ("cu115", 11, Some(5)),
            ("cu116", 11, Some(6)),
            ("cu117", 11, Some(7)),
            ("cu118", 11, Some(8)),
            ("cu121", 12, Some(1)),
            ("cu124", 12, Some(4)),
            ("cu126", 12, Some(6)),
            ("cu128", 12, Some(8)),
            ("cu129", 12, Some(9)),
            ("cu130", 13, Some(0)),
            // NVIDIA's wheel suffixes and flash-attn's local tags name a major only.
            ("cu11", 11, None),
            ("cu12", 12, None),
            ("cu13", 13, None),
            ("cuda12", 12, None),
            ("cuda11x", 11, None),
            ("cuda12x", 12, None),
            ("cuda102", 10, Some(2)),
            ("cuda120", 12, Some(0)),
            ("cuda12.1", 12, Some(1)),
        ];
        for (tag, major, minor) in pytorch {
            assert_eq!(CudaTag::parse(tag), Some(CudaTag { major, minor }), "{tag}");
        }
        for bad in [
            "cpu", "cu", "cu1", "cu1210", "cu012", "cudnn89", "cublas", "rocm6.1", "cu121x",
            "cu2qu", "cuda", "cuda-12",
        ] {
            assert_eq!(CudaTag::parse(bad), None, "{bad}");
        }
        for (name, want) in [
            ("spconv-cu126", Some(CudaTag::release(12, 6))),
            ("cumm-cu126", Some(CudaTag::release(12, 6))),
            ("cupy-cuda11x", Some(CudaTag::major_only(11))),
            ("cupy-cuda12x", Some(CudaTag::major_only(12))),
            ("cupy-cuda102", Some(CudaTag::release(10, 2))),
            ("cupy_cuda120", Some(CudaTag::release(12, 0))),
            ("jax-cuda12-plugin", Some(CudaTag::major_only(12))),
            ("jax-cuda12-pjrt", Some(CudaTag::major_only(12))),
            ("nvidia-cudnn-cu12", Some(CudaTag::major_only(12))),
            ("nvidia-cublas-cu11", Some(CudaTag::major_only(11))),
            ("nvidia-cuda-runtime-cu13", Some(CudaTag::major_only(13))),
            ("nvidia-cuda-runtime", None),
            ("cuda-python", None),
            ("cu2qu", None),
            ("torch", None),
        ] {
            assert_eq!(CudaTag::from_dist_name(name), want, "{name}");
        }
        for (version, want) in [
            ("2.5.1+cu121", Some(CudaTag::release(12, 1))),
            ("2.11.0+cu130", Some(CudaTag::release(13, 0))),
            ("1.4.0+cu92", Some(CudaTag::release(9, 2))),
            (
                "2.5.8+cu122torch2.3cxx11abiFALSE",
                Some(CudaTag::release(12, 2)),
            ),
            (
                "2.5.8+cu12torch2.3cxx11abiFALSE",
                Some(CudaTag::major_only(12)),
            ),
            ("0.4.13+cuda12.cudnn89", Some(CudaTag::major_only(12))),
            ("2.11.0", None),
            ("2.4.0+rocm6.1", None),
            ("2.4.0+cpu", None),
        ] {
            assert_eq!(CudaTag::from_local_version(version), want, "{version}");
        }
        for (name, version, want) in [
            ("cuda-version", "12.4", Some(CudaTag::release(12, 4))),
            ("cuda-version", "12", Some(CudaTag::major_only(12))),
            ("cudatoolkit", "11.8.0", Some(CudaTag::release(11, 8))),
            ("cudatoolkit", "10.2.89", Some(CudaTag::release(10, 2))),
            ("pytorch-cuda", "12.1", Some(CudaTag::release(12, 1))),
            ("cuda-version", "twelve", None),
            ("cuda-nvcc", "12.4.131", None),
        ] {
            assert_eq!(CudaTag::from_conda(name, version), want, "{name} {version}");
        }
    }

    /// The grammar's old readers disagreed on `cu12`: one said CUDA 1.2. A major-only tag
    /// names no release, and says so.
    #[test]
    fn major_only_tags_are_not_a_release() {
        assert_eq!(CudaVersion::from_cu_tag("cu12"), None);
        assert_eq!(CudaVersion::from_cu_tag("cuda120"), None);
        assert_eq!(CudaVersion::from_cu_tag("cu1210"), None);
        assert_eq!(CudaTag::parse("cu12").and_then(|t| t.version()), None);
        assert_eq!(CudaTag::major_only(12).floor(), CudaVersion::new(12, 0));
        assert_eq!(CudaTag::major_only(12).to_string(), "12");
        assert_eq!(CudaTag::release(12, 1).to_string(), "12.1");
        assert_eq!(
            CudaVersion::from_runtime_number(11070),
            CudaVersion::new(11, 7)
        );
        assert_eq!(
            CudaVersion::from_runtime_number(12080),
            CudaVersion::new(12, 8)
        );
    }
}
