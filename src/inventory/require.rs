//! The image's own statements about the CUDA it needs, typed: `CUDA_VERSION` and the
//! `NVIDIA_REQUIRE_CUDA` expression the NVIDIA container runtime evaluates (OR over
//! space-separated clauses, AND over comma-separated constraints, `key op value`). Read here
//! so rules compare versions, not strings; the `env` map keeps the text for output.

use super::ImageInfo;
use crate::arch::ComputeCapability;
use crate::version::{CudaVersion, DriverVersion};

/// One `key op value` of a clause; the key is lower case (`cuda`, `driver`, `arch`, `brand`).
#[derive(Debug, Clone, PartialEq)]
pub struct Constraint {
    pub key: String,
    /// `>=`, `<=`, `!=`, `==`, `=`, `>`, `<`.
    pub op: String,
    pub value: Required,
}

/// A constraint's value in the numbering its key uses.
#[derive(Debug, Clone, PartialEq)]
pub enum Required {
    Cuda(CudaVersion),
    Driver(DriverVersion),
    Arch(ComputeCapability),
    /// A brand, or a value its key's numbering does not read (judged unknown).
    Text(String),
}

/// A clause: its constraints, all of which must hold, and its text for messages.
#[derive(Debug, Clone, PartialEq)]
pub struct Clause {
    pub text: String,
    pub constraints: Vec<Constraint>,
}

fn constraint(s: &str) -> Option<Constraint> {
    for op in [">=", "<=", "!=", "==", "=", ">", "<"] {
        if let Some(i) = s.find(op) {
            let key = s[..i].trim().to_ascii_lowercase();
            let text = s[i + op.len()..].trim();
            let value = match key.as_str() {
                "cuda" => text.parse().ok().map(Required::Cuda),
                "driver" => text.parse().ok().map(Required::Driver),
                "arch" => text.parse().ok().map(Required::Arch),
                _ => None,
            }
            .unwrap_or_else(|| Required::Text(text.to_string()));
            return Some(Constraint {
                key,
                op: op.to_string(),
                value,
            });
        }
    }
    None
}

/// The clauses of an `NVIDIA_REQUIRE_CUDA` expression; a clause with no readable constraint
/// is left out.
pub fn require_cuda_clauses(expr: &str) -> Vec<Clause> {
    expr.split_whitespace()
        .filter_map(|clause| {
            let constraints: Vec<Constraint> = clause.split(',').filter_map(constraint).collect();
            (!constraints.is_empty()).then(|| Clause {
                text: clause.to_string(),
                constraints,
            })
        })
        .collect()
}

impl ImageInfo {
    /// `CUDA_VERSION` from the image config, when it reads as a CUDA version.
    pub fn cuda_version(&self) -> Option<CudaVersion> {
        self.env.get("CUDA_VERSION")?.parse().ok()
    }
    /// `NVIDIA_REQUIRE_CUDA` from the image config: its text and its clauses.
    pub fn require_cuda(&self) -> Option<(&str, Vec<Clause>)> {
        let expr = self.env.get("NVIDIA_REQUIRE_CUDA")?;
        Some((expr, require_cuda_clauses(expr)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constraints_are_typed_by_key() {
        let c = require_cuda_clauses("cuda>=12.1 brand=Tesla,driver>=470,arch=8.0 cuda>=x.y junk");
        assert_eq!(c.len(), 3, "a clause without a constraint is left out");
        assert_eq!(
            c[0].constraints[0].value,
            Required::Cuda(CudaVersion::new(12, 1))
        );
        let second = &c[1].constraints;
        assert_eq!(second[0].key, "brand");
        assert_eq!(second[0].value, Required::Text("Tesla".into()));
        assert_eq!(second[1].value, Required::Driver("470".parse().unwrap()));
        assert_eq!(
            second[2].value,
            Required::Arch(ComputeCapability::new(8, 0))
        );
        assert_eq!(c[2].constraints[0].value, Required::Text("x.y".into()));
        assert_eq!(c[1].text, "brand=Tesla,driver>=470,arch=8.0");
    }
}
