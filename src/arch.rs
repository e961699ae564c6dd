//! GPU architecture vocabulary: compute capabilities of devices and the code targets
//! (`sm_90`, `sm_90a`, `sm_100f`, `compute_90`) compiled into CUDA binaries, plus NVIDIA's
//! documented rule for which code runs on which device.
//!
//! Rule source: CUDA C++ Programming Guide, "Binary Compatibility" / "PTX Compatibility"
//! (<https://docs.nvidia.com/cuda/cuda-c-programming-guide/#binary-compatibility>) and
//! the CUDA 12.9 "family-specific features" note
//! (<https://developer.nvidia.com/blog/nvidia-blackwell-and-nvidia-cuda-12-9-introduce-family-specific-architecture-features/>).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A device's compute capability, e.g. 9.0 for H100/H200, 7.5 for T4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ComputeCapability {
    pub major: u32,
    pub minor: u32,
}

impl ComputeCapability {
    pub const fn new(major: u32, minor: u32) -> Self {
        ComputeCapability { major, minor }
    }
    /// The SM number: 10·major + minor (9.0 → 90, 12.1 → 121).
    pub fn sm(&self) -> u32 {
        self.major * 10 + self.minor
    }
    pub fn from_sm(sm: u32) -> Self {
        ComputeCapability::new(sm / 10, sm % 10)
    }
}

impl FromStr for ComputeCapability {
    type Err = String;
    /// Accepts `9.0`, `sm_90`, `compute_90`, `90`, `sm90`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().to_ascii_lowercase();
        if let Some((a, b)) = t.split_once('.') {
            let major = a
                .parse()
                .map_err(|_| format!("invalid compute capability {s:?}"))?;
            let minor = b
                .parse()
                .map_err(|_| format!("invalid compute capability {s:?}"))?;
            return Ok(ComputeCapability::new(major, minor));
        }
        let digits = t
            .trim_start_matches("sm_")
            .trim_start_matches("compute_")
            .trim_start_matches("sm")
            .trim_end_matches(['a', 'f']);
        let sm: u32 = digits
            .parse()
            .map_err(|_| format!("invalid compute capability {s:?}"))?;
        if !(10..=999).contains(&sm) {
            return Err(format!("invalid compute capability {s:?}"));
        }
        Ok(ComputeCapability::from_sm(sm))
    }
}
impl TryFrom<String> for ComputeCapability {
    type Error = String;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}
impl From<ComputeCapability> for String {
    fn from(c: ComputeCapability) -> String {
        c.to_string()
    }
}
impl fmt::Display for ComputeCapability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// What kind of device code a fatbin entry holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CodeKind {
    /// Machine code (cubin), runs as is.
    Sass,
    /// PTX, JIT-compiled by the driver.
    Ptx,
    /// LTO-IR (NVVM), never loaded by the driver directly.
    Lto,
}

/// The `a` (arch-specific) / `f` (family-specific) suffix of a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ArchVariant {
    Generic,
    /// `sm_90a`: runs only on exactly that compute capability.
    ArchSpecific,
    /// `sm_100f`: runs on that compute capability and later members of its family.
    FamilySpecific,
}

/// One code target, e.g. `sm_90a` or `compute_120`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ArchTarget {
    pub kind: CodeKind,
    pub sm: u32,
    pub variant: ArchVariant,
}

impl ArchTarget {
    pub fn new(kind: CodeKind, sm: u32, variant: ArchVariant) -> Self {
        ArchTarget { kind, sm, variant }
    }
    pub fn cc(&self) -> ComputeCapability {
        ComputeCapability::from_sm(self.sm)
    }

    /// Whether the driver can load this code on a device of capability `dev` without
    /// considering driver/PTX-ISA versions (that is a separate check).
    ///
    /// - SASS `sm_XY` runs on X.Z for Z ≥ Y (never across majors).
    /// - `sm_XYa` / `compute_XYa` only on exactly X.Y.
    /// - `sm_XYf` / `compute_XYf` on X.Z for Z ≥ Y (the family).
    /// - PTX `compute_XY` JITs on any device ≥ X.Y.
    /// - LTO-IR never runs directly.
    pub fn runs_on(&self, dev: ComputeCapability) -> bool {
        let me = self.cc();
        match (self.kind, self.variant) {
            (CodeKind::Lto, _) => false,
            (_, ArchVariant::ArchSpecific) => me == dev,
            (_, ArchVariant::FamilySpecific) => me.major == dev.major && me.minor <= dev.minor,
            (CodeKind::Sass, ArchVariant::Generic) => {
                me.major == dev.major && me.minor <= dev.minor
            }
            (CodeKind::Ptx, ArchVariant::Generic) => me.sm() <= dev.sm(),
        }
    }
}

impl fmt::Display for ArchTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let prefix = match self.kind {
            CodeKind::Sass => "sm_",
            CodeKind::Ptx => "compute_",
            CodeKind::Lto => "lto_",
        };
        let suffix = match self.variant {
            ArchVariant::Generic => "",
            ArchVariant::ArchSpecific => "a",
            ArchVariant::FamilySpecific => "f",
        };
        write!(f, "{prefix}{}{suffix}", self.sm)
    }
}

impl FromStr for ArchTarget {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().to_ascii_lowercase();
        let (kind, rest) = if let Some(r) = t.strip_prefix("sm_") {
            (CodeKind::Sass, r)
        } else if let Some(r) = t.strip_prefix("compute_") {
            (CodeKind::Ptx, r)
        } else if let Some(r) = t.strip_prefix("lto_") {
            (CodeKind::Lto, r)
        } else {
            return Err(format!("invalid arch target {s:?}"));
        };
        let (digits, variant) = if let Some(d) = rest.strip_suffix('a') {
            (d, ArchVariant::ArchSpecific)
        } else if let Some(d) = rest.strip_suffix('f') {
            (d, ArchVariant::FamilySpecific)
        } else {
            (rest, ArchVariant::Generic)
        };
        let sm = digits
            .parse()
            .map_err(|_| format!("invalid arch target {s:?}"))?;
        Ok(ArchTarget::new(kind, sm, variant))
    }
}

impl Serialize for ArchTarget {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}
impl<'de> Deserialize<'de> for ArchTarget {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> ArchTarget {
        s.parse().unwrap()
    }
    fn cc(s: &str) -> ComputeCapability {
        s.parse().unwrap()
    }

    #[test]
    fn parse_and_display_round_trip() {
        for s in [
            "sm_80",
            "sm_90a",
            "sm_100f",
            "compute_90",
            "compute_120a",
            "lto_90",
        ] {
            assert_eq!(t(s).to_string(), s);
        }
        assert_eq!(cc("sm_90"), ComputeCapability::new(9, 0));
        assert_eq!(cc("12.1"), ComputeCapability::new(12, 1));
        assert_eq!(cc("compute_86"), ComputeCapability::new(8, 6));
        assert!("sm_x".parse::<ArchTarget>().is_err());
    }

    #[test]
    fn sass_runs_within_major_only() {
        assert!(t("sm_80").runs_on(cc("8.6")));
        assert!(t("sm_80").runs_on(cc("8.9")));
        assert!(!t("sm_86").runs_on(cc("8.0")));
        assert!(!t("sm_80").runs_on(cc("9.0")));
        assert!(!t("sm_75").runs_on(cc("9.0")));
        assert!(t("sm_120").runs_on(cc("12.1")));
    }

    #[test]
    fn a_and_f_variants() {
        assert!(t("sm_90a").runs_on(cc("9.0")));
        assert!(!t("sm_100a").runs_on(cc("10.3")));
        assert!(t("sm_100f").runs_on(cc("10.3")));
        assert!(!t("sm_100f").runs_on(cc("12.0")));
        assert!(!t("compute_90a").runs_on(cc("10.0")));
    }

    #[test]
    fn ptx_jits_forward_and_lto_never_runs() {
        assert!(t("compute_75").runs_on(cc("9.0")));
        assert!(t("compute_90").runs_on(cc("12.0")));
        assert!(!t("compute_90").runs_on(cc("8.9")));
        assert!(!t("lto_90").runs_on(cc("9.0")));
    }
}
