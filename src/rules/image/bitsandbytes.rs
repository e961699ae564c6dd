//! Which `libbitsandbytes_cuda{XYZ}.so` bitsandbytes loads, as its `cextension.py`
//! (`get_cuda_bnb_library_path`) chooses it: `BNB_CUDA_VERSION` when set (that file, no
//! fallback); else the CUDA of torch (`torch.version.cuda`, "12.4" → `cuda124`), exactly; where
//! that file is missing, current releases take the highest packaged version below it of the
//! same CUDA major, else the lowest above it, and never another major ("No cross-major
//! fallback"); older releases (their `cextension.py` has no such fallback) load the exact
//! name or fail.
//! GL013 judges the choice; GL001 grades the files it does not choose (never loaded) as info.

use crate::inventory::{Binary, Inventory, PythonPackage};
use crate::vocab::ImagePath;

/// The source this model follows.
pub const SOURCE: &str =
    "https://github.com/bitsandbytes-foundation/bitsandbytes/blob/main/bitsandbytes/cextension.py";

/// One packaged CUDA library: `libbitsandbytes_cuda124.so` → (12, 4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packaged {
    pub cuda: (u32, u32),
    pub path: ImagePath,
}

/// What bitsandbytes will load in one environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// The file it asks for exists.
    Exact(ImagePath),
    /// The exact file is missing; current releases fall back to this same-major one, older
    /// ones fail.
    SameMajor(ImagePath),
    /// No release loads anything: the override's file, or every file of the CUDA major, is
    /// missing.
    Missing,
}

/// bitsandbytes in one site-packages directory, with the name it asks for and why.
#[derive(Debug, Clone)]
pub struct Selection<'a> {
    pub package: &'a PythonPackage,
    /// `libbitsandbytes_cuda124.so`.
    pub wanted: String,
    /// Why that name: "torch 2.4.0+cu124 is built for CUDA 12.4" or "BNB_CUDA_VERSION=121".
    pub why: String,
    pub packaged: Vec<Packaged>,
    pub choice: Choice,
}

/// `libbitsandbytes_cuda124.so` → (12, 4); the `_nocublaslt` variants of old releases and
/// anything else → None. The CUDA major is always two digits (`_split_cuda_version`).
fn packaged_cuda(name: &str) -> Option<(u32, u32)> {
    let digits = name
        .strip_prefix("libbitsandbytes_cuda")?
        .strip_suffix(".so")?;
    if digits.len() < 3 || digits.len() > 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((digits[..2].parse().ok()?, digits[2..].parse().ok()?))
}

/// The bitsandbytes package directory of `p`.
fn package_dir(p: &PythonPackage) -> String {
    format!("{}/bitsandbytes", p.location.as_str().trim_end_matches('/'))
}

fn packaged_in<'a>(binaries: impl Iterator<Item = &'a Binary>, dir: &str) -> Vec<Packaged> {
    let mut v: Vec<Packaged> = binaries
        .filter(|b| b.path.parent().is_some_and(|d| d.as_str() == dir))
        .filter_map(|b| {
            Some(Packaged {
                cuda: packaged_cuda(b.path.file_name())?,
                path: b.path.clone(),
            })
        })
        .collect();
    v.sort_by_key(|p| p.cuda);
    v
}

/// The selection of every bitsandbytes whose choice is known: an override in the image's
/// environment, or a torch with a known CUDA in the same site-packages. Unknown is left out.
pub fn selections(inv: &Inventory) -> Vec<Selection<'_>> {
    let mut out = Vec::new();
    for p in inv
        .python_packages
        .iter()
        .filter(|p| p.name == "bitsandbytes")
    {
        let dir = package_dir(p);
        let packaged = packaged_in(inv.binaries.iter(), &dir);
        let override_value = inv
            .image
            .env
            .get("BNB_CUDA_VERSION")
            .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) && v.len() <= 4);
        let (wanted, why, runtime) = if let Some(v) = override_value {
            (
                format!("libbitsandbytes_cuda{v}.so"),
                format!("BNB_CUDA_VERSION={v} in the image config"),
                None,
            )
        } else {
            let Some((torch, cuda)) = inv
                .python_packages
                .iter()
                .find(|t| t.name == "torch" && t.location == p.location)
                .and_then(|t| Some((t, t.cuda?)))
            else {
                continue;
            };
            (
                format!("libbitsandbytes_cuda{}{}.so", cuda.major, cuda.minor),
                format!(
                    "torch {} is built for CUDA {}",
                    torch.version,
                    cuda.major_minor()
                ),
                Some((cuda.major, cuda.minor)),
            )
        };
        let exact = packaged.iter().find(|k| k.path.file_name() == wanted);
        let choice = match (exact, runtime) {
            (Some(k), _) => Choice::Exact(k.path.clone()),
            // An override loads that file or nothing.
            (None, None) => Choice::Missing,
            (None, Some(rt)) => {
                let same: Vec<&Packaged> = packaged.iter().filter(|k| k.cuda.0 == rt.0).collect();
                let lower = same.iter().filter(|k| k.cuda < rt).max_by_key(|k| k.cuda);
                let higher = same.iter().filter(|k| k.cuda > rt).min_by_key(|k| k.cuda);
                match lower.or(higher) {
                    Some(k) => Choice::SameMajor(k.path.clone()),
                    None => Choice::Missing,
                }
            }
        };
        out.push(Selection {
            package: p,
            wanted,
            why,
            packaged,
            choice,
        });
    }
    out
}

/// For a binary that is a packaged bitsandbytes CUDA library no release would load: why.
pub fn not_selected(selections: &[Selection], b: &Binary) -> Option<String> {
    let s = selections
        .iter()
        .find(|s| s.packaged.iter().any(|k| k.path == b.path))?;
    let (loaded, what) = match &s.choice {
        Choice::Exact(p) => (Some(p), p.file_name().to_string()),
        Choice::SameMajor(p) => (
            Some(p),
            format!(
                "{} or, where that is missing, {} (current releases)",
                s.wanted,
                p.file_name()
            ),
        ),
        Choice::Missing => (None, s.wanted.clone()),
    };
    (loaded != Some(&b.path))
        .then(|| format!("bitsandbytes loads {what} ({}), not this file", s.why))
}

/// The packaged versions, for messages: "cuda118, cuda121".
pub fn packaged_list(s: &Selection) -> String {
    if s.packaged.is_empty() {
        return "none".into();
    }
    s.packaged
        .iter()
        .map(|k| k.path.file_name().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packaged_names() {
        assert_eq!(packaged_cuda("libbitsandbytes_cuda124.so"), Some((12, 4)));
        assert_eq!(packaged_cuda("libbitsandbytes_cuda118.so"), Some((11, 8)));
        assert_eq!(packaged_cuda("libbitsandbytes_cuda130.so"), Some((13, 0)));
        assert_eq!(packaged_cuda("libbitsandbytes_cuda118_nocublaslt.so"), None);
        assert_eq!(packaged_cuda("libbitsandbytes_cpu.so"), None);
        assert_eq!(packaged_cuda("libbitsandbytes_cuda1.so"), None);
    }
}
