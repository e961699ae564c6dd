//! The architecture list that covers a fleet: SASS for each GPU family present (the lowest
//! capability of each major runs on the others of that major), SASS and PTX for the newest
//! GPU (its PTX also reaches GPUs newer than any in the fleet), written in the syntax of the
//! list being fixed, and checked against what the image's (or base image's) nvcc can compile
//! (`cuda_arch.toml`).

use super::basis_of;
use crate::arch::{ArchTarget, ArchVariant, CodeKind, ComputeCapability};
use crate::fix::{Applicability, Change, Fix, FixKind};
use crate::matrix::Facts;
use crate::version::CudaVersion;

/// How the list is written where it is fixed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Syntax {
    /// `TORCH_CUDA_ARCH_LIST="8.0;9.0+PTX"`.
    Torch,
    /// `-gencode arch=compute_80,code=sm_80 …`.
    Gencode,
    /// `CMAKE_CUDA_ARCHITECTURES="80-real;90"`.
    Cmake,
}

impl Syntax {
    /// The syntax of a list as a rule names it (`ENV TORCH_CUDA_ARCH_LIST=…`, `nvcc -gencode
    /// …`, `-DCMAKE_CUDA_ARCHITECTURES=…`).
    pub fn of(what: &str) -> Syntax {
        if what.contains("TORCH_CUDA_ARCH_LIST") {
            Syntax::Torch
        } else if what.contains("CUDA_ARCHITECTURES") {
            Syntax::Cmake
        } else {
            Syntax::Gencode
        }
    }
}

/// SASS targets and the one PTX target of a covering list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchList {
    /// Ascending, each once.
    pub sass: Vec<ComputeCapability>,
    pub ptx: ComputeCapability,
}

impl ArchList {
    /// The list covering `ccs`; `None` for no capability.
    pub fn covering(ccs: &[ComputeCapability]) -> Option<ArchList> {
        let newest = *ccs.iter().max()?;
        let mut sass: Vec<ComputeCapability> = Vec::new();
        for cc in ccs {
            let lowest_of_major = ccs
                .iter()
                .filter(|c| c.major == cc.major)
                .min()
                .copied()
                .unwrap_or(*cc);
            sass.push(lowest_of_major);
        }
        sass.push(newest);
        sass.sort();
        sass.dedup();
        Some(ArchList { sass, ptx: newest })
    }

    /// Every target the list builds.
    pub fn targets(&self) -> Vec<ArchTarget> {
        let mut t: Vec<ArchTarget> = self
            .sass
            .iter()
            .map(|c| ArchTarget::new(CodeKind::Sass, c.sm(), ArchVariant::Generic))
            .collect();
        t.push(ArchTarget::new(
            CodeKind::Ptx,
            self.ptx.sm(),
            ArchVariant::Generic,
        ));
        t
    }

    /// The list written in `syntax`.
    pub fn render(&self, syntax: Syntax) -> String {
        match syntax {
            Syntax::Torch => self
                .sass
                .iter()
                .map(|c| {
                    if *c == self.ptx {
                        format!("{c}+PTX")
                    } else {
                        c.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join(";"),
            Syntax::Gencode => {
                let mut parts: Vec<String> = self
                    .sass
                    .iter()
                    .map(|c| format!("-gencode arch=compute_{0},code=sm_{0}", c.sm()))
                    .collect();
                parts.push(format!(
                    "-gencode arch=compute_{0},code=compute_{0}",
                    self.ptx.sm()
                ));
                parts.join(" ")
            }
            Syntax::Cmake => self
                .sass
                .iter()
                .map(|c| {
                    if *c == self.ptx {
                        c.sm().to_string()
                    } else {
                        format!("{}-real", c.sm())
                    }
                })
                .collect::<Vec<_>>()
                .join(";"),
        }
    }
}

/// The covering list of `ccs` as a fix in `syntax`, checked against nvcc of `nvcc` (the
/// image's or base image's CUDA) when known. `None` for no capability.
pub fn fix_for(
    facts: &Facts,
    ccs: &[ComputeCapability],
    nvcc: Option<CudaVersion>,
    syntax: Syntax,
) -> Option<Fix> {
    let list = ArchList::covering(ccs)?;
    let ccs_text: Vec<String> = ccs.iter().map(|c| c.to_string()).collect();
    let mut rationale = format!(
        "SASS for each GPU family of compute capability {} and PTX for the newest ({}), which also reaches newer GPUs",
        ccs_text.join(", "),
        list.ptx
    );
    let mut basis = Vec::new();
    let mut applicability = Applicability::Manual;
    match nvcc {
        Some(cuda) => {
            let mut cannot: Vec<String> = Vec::new();
            let mut unknown = false;
            for t in list.targets() {
                match facts.nvcc_supports(&cuda, &t) {
                    Some(s) => {
                        if !s.value {
                            let first = facts
                                .gpu_driver_floor(t.sm)
                                .map(|f| format!(" (first in CUDA {})", f.value.first_release))
                                .unwrap_or_default();
                            cannot.push(format!("{t}{first}"));
                        }
                        if basis.is_empty() {
                            basis.push(basis_of(
                                "cuda_arch",
                                format!("nvcc {}", cuda.major_minor()),
                                &s,
                            ));
                        }
                    }
                    None => unknown = true,
                }
            }
            if !cannot.is_empty() {
                rationale.push_str(&format!(
                    "; nvcc of CUDA {} cannot compile {}: build on a newer CUDA",
                    cuda.major_minor(),
                    cannot.join(", ")
                ));
            } else if unknown {
                rationale.push_str(&format!(
                    "; what nvcc of CUDA {} compiles is unknown to gpulint",
                    cuda.major_minor()
                ));
            } else {
                rationale.push_str(&format!(
                    "; nvcc of CUDA {} compiles every entry",
                    cuda.major_minor()
                ));
                applicability = Applicability::Safe;
            }
        }
        None => rationale.push_str("; the nvcc it is built with is unknown: not checked"),
    }
    let rendered = list.render(syntax);
    Some(Fix {
        kind: FixKind::ArchList,
        change: Some(Change::ArchList {
            syntax,
            list: rendered.clone(),
        }),
        replacement: rendered,
        rationale,
        basis,
        edits: Vec::new(),
        applicability,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ccs(list: &[&str]) -> Vec<ComputeCapability> {
        list.iter().map(|s| s.parse().unwrap()).collect()
    }

    #[test]
    fn the_list_covers_every_gpu_of_the_fleet() {
        let fleet = ccs(&["7.0", "8.0", "8.6", "8.9", "9.0", "12.0"]);
        let list = ArchList::covering(&fleet).unwrap();
        for cc in &fleet {
            assert!(
                list.targets()
                    .iter()
                    .any(|t| t.kind == CodeKind::Sass && t.runs_on(*cc)),
                "no SASS for {cc}"
            );
        }
        assert_eq!(list.render(Syntax::Torch), "7.0;8.0;9.0;12.0+PTX");
        assert_eq!(list.render(Syntax::Cmake), "70-real;80-real;90-real;120");
        assert!(list
            .render(Syntax::Gencode)
            .ends_with("-gencode arch=compute_120,code=compute_120"));
        // The rendered lists read back as the same targets.
        let facts = Facts::embedded().unwrap();
        let parsed = crate::rules::runconfig::gl107_arch_list_misses_target::parse_arch_list(
            &list.render(Syntax::Torch),
            &facts,
        )
        .unwrap();
        for cc in &fleet {
            assert!(parsed.iter().any(|t| t.runs_on(*cc)), "{cc}");
        }
    }

    #[test]
    fn checked_against_the_nvcc_that_builds_it() {
        let f = Facts::embedded().unwrap();
        let fleet = ccs(&["8.0", "12.0"]);
        // CUDA 12.4's nvcc has no sm_120 (cuda_arch.toml): the fix says so and is not safe.
        let old = fix_for(&f, &fleet, Some(CudaVersion::new(12, 4)), Syntax::Torch).unwrap();
        assert_eq!(
            f.nvcc_supports(&CudaVersion::new(12, 4), &"sm_120".parse().unwrap())
                .map(|s| s.value),
            Some(false)
        );
        assert!(
            old.rationale.contains("cannot compile sm_120"),
            "{}",
            old.rationale
        );
        assert_ne!(old.applicability, Applicability::Safe);
        let new = fix_for(&f, &fleet, Some(CudaVersion::new(12, 8)), Syntax::Torch).unwrap();
        assert_eq!(new.applicability, Applicability::Safe, "{}", new.rationale);
        assert_eq!(new.replacement, "8.0;12.0+PTX");
    }
}
