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
    /// Parse a PyTorch-style variant tag: `cu121` → 12.1, `cu118` → 11.8, `cu130` → 13.0.
    pub fn from_cu_tag(tag: &str) -> Option<CudaVersion> {
        let digits = tag.strip_prefix("cu")?;
        if digits.len() < 2 || digits.len() > 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        // The last digit is the minor: cu92 → 9.2, cu102 → 10.2, cu121 → 12.1, cu130 → 13.0.
        let (maj, min) = digits.split_at(digits.len() - 1);
        Some(CudaVersion::new(maj.parse().ok()?, min.parse().ok()?))
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
}
