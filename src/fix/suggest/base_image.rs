//! The base image tag that makes the base and torch agree (GL101): the nvidia/cuda tag
//! of torch's CUDA release with the kind (`runtime`, `devel`, `cudnn-runtime`, …) and OS of
//! the current tag, among the tags NVIDIA's supported-tags list names (`cuda_image_tag` rows
//! of `cuda-images.toml`), not of an end-of-life CUDA, and whose CUDA every known target
//! driver runs natively: the image advertises `NVIDIA_REQUIRE_CUDA=cuda>=X.Y`, and the
//! container toolkit refuses drivers below that release's own minimum. Where the list has no
//! such tag (another repository, kind or OS, a driver too old) the fix names no tag and says
//! why: the tag is never made up.

use super::basis_of;
use crate::fix::{Applicability, Change, Fix, FixKind, TagSite};
use crate::gpu_target::Target;
use crate::matrix::Facts;
use crate::runconfig::build::BuildFacts;
use crate::version::CudaVersion;

/// Repositories whose tags NVIDIA's list names (Docker Hub and NGC publish the same tags).
const LISTED_REPOS: [&str; 2] = ["nvidia/cuda", "nvcr.io/nvidia/cuda"];

/// The base image a fix would change.
#[derive(Debug, Clone)]
pub struct Base<'a> {
    /// The repository as `ImageRef::full_repo` spells it (`nvidia/cuda`).
    pub repo: String,
    pub tag: &'a str,
    /// Where the tag is written (the FROM, or an ARG default it expands), nearest first.
    pub sites: Vec<TagSite>,
}

impl<'a> Base<'a> {
    /// The external base image of each stage (the root of its FROM chain), by stage index,
    /// with where its tag is written: the FROM line, then the ARG defaults the FROM expands
    /// (holding the whole tag, or its version alone). `None` for an untagged or unresolved
    /// base. One pass in stage order (a parent is always an earlier stage): no chain walk
    /// per stage, which is quadratic in a long FROM chain.
    pub fn of_stages(bf: &'a BuildFacts) -> Vec<Option<Base<'a>>> {
        let mut roots: Vec<usize> = Vec::with_capacity(bf.stages.len());
        for (i, st) in bf.stages.iter().enumerate() {
            let root = st.parent.filter(|p| *p < i).map_or(i, |p| roots[p]);
            roots.push(root);
        }
        let own: Vec<Option<Base<'a>>> = bf.stages.iter().map(Base::of_root).collect();
        roots.iter().map(|r| own[*r].clone()).collect()
    }

    /// The base of a stage that names an external image itself.
    fn of_root(root: &'a crate::runconfig::build::Stage) -> Option<Base<'a>> {
        let r = root.root_ref.as_ref().filter(|_| !root.image_unresolved)?;
        let tag = r.tag.as_deref()?;
        let version = tag.split('-').next().unwrap_or(tag);
        let mut sites = vec![TagSite {
            line: root.image_pos.line,
            old: tag.to_string(),
            new: String::new(),
        }];
        for (_, default, pos) in &root.image_args {
            let old = if default.contains(tag) {
                tag
            } else if default == version {
                version
            } else {
                continue;
            };
            sites.push(TagSite {
                line: pos.line,
                old: old.to_string(),
                new: String::new(),
            });
        }
        Some(Base {
            repo: r.full_repo(),
            tag,
            sites,
        })
    }
}

/// An nvidia/cuda tag cut into its parts: `12.1.1-cudnn8-runtime-ubuntu22.04` →
/// (`12.1.1`, `cudnn8-runtime`, `ubuntu22.04`).
fn parts(tag: &str) -> Option<(&str, &str, &str)> {
    let (version, rest) = tag.split_once('-')?;
    let (kind, os) = rest.rsplit_once('-')?;
    Some((version, kind, os))
}

/// The kind of the new tag: the same kind when listed, else (for a cuDNN kind) the listed
/// cuDNN kind of the same flavour (`cudnn8-runtime` → `cudnn-runtime`).
fn kind_in<'a>(listed: &[&'a str], kind: &str) -> Option<&'a str> {
    if let Some(k) = listed.iter().find(|k| **k == kind) {
        return Some(k);
    }
    let (cudnn, flavour) = kind.split_once('-')?;
    if !cudnn.starts_with("cudnn") {
        return None;
    }
    listed.iter().copied().find(|k| {
        k.split_once('-')
            .is_some_and(|(c, f)| c.starts_with("cudnn") && f == flavour)
    })
}

/// The fix that bases the image on CUDA `cuda`: a listed tag (an unsafe edit: the whole base
/// changes) when one qualifies, else advice that says why no tag is named.
pub fn fix_for(facts: &Facts, base: Option<&Base>, cuda: CudaVersion, targets: &[Target]) -> Fix {
    let mm = cuda.major_minor();
    let advice = |why: String| advice(cuda, &why);
    let Some(base) = base else {
        return advice("the base image's tag is not known (untagged, or set at build time), so the tag is yours to pick".into());
    };
    if !LISTED_REPOS.contains(&base.repo.as_str()) {
        return advice(format!(
            "gpulint knows the published tags of nvidia/cuda only, not of {}, so the tag is yours to pick",
            base.repo
        ));
    }
    let Some((_, kind, os)) = parts(base.tag) else {
        return advice(format!(
            "the tag {} does not read as <version>-<kind>-<os>, so no tag of the same kind and OS is named",
            base.tag
        ));
    };
    let listed = facts.nvidia_cuda_kinds(cuda, os);
    let Some(new_kind) = kind_in(&listed, kind) else {
        return advice(format!(
            "NVIDIA's list of supported nvidia/cuda tags names no CUDA {mm} tag of kind {kind} on {os}"
        ));
    };
    let Some(tag) = facts.nvidia_cuda_tag(cuda, new_kind, os) else {
        return advice(format!(
            "NVIDIA's list names no CUDA {mm} {new_kind} tag on {os}"
        ));
    };
    let (new_tag, new_cuda) = tag.value.clone();
    if let Some(eol) = facts.cuda_eol(new_cuda) {
        return advice(format!(
            "its listed tag {new_tag} is of CUDA {}, which is end of life ({})",
            eol.value, eol.source
        ));
    }
    let Some(min) = facts.cuda_min_driver(new_cuda) else {
        return advice(format!(
            "the driver CUDA {mm} needs is unknown to gpulint, so {new_tag} is not named"
        ));
    };
    let old: Vec<&Target> = targets
        .iter()
        .filter(|t| t.driver.as_ref().is_some_and(|d| *d < min.value))
        .collect();
    if !old.is_empty() {
        let names: Vec<&str> = old.iter().map(|t| t.name.as_str()).collect();
        return advice(format!(
            "the listed tag {new_tag} needs driver >= {}, which {} {}",
            min.value,
            names.join(", "),
            if names.len() == 1 { "lacks" } else { "lack" }
        ));
    }
    let drivers = if targets.iter().any(|t| t.driver.is_some()) {
        "which every target with a known driver has"
    } else {
        "the targets' drivers are unknown"
    };
    let cudnn_note = if new_kind != kind {
        format!("; the list has no {kind} tag for CUDA {mm}, so the cuDNN kind becomes {new_kind}")
    } else {
        String::new()
    };
    let (version, _, _) = parts(base.tag).unwrap_or_default();
    let new_version = new_tag.split('-').next().unwrap_or_default();
    // A site that holds only the version (`ARG CUDA=12.1.1`) takes the new version, when the
    // rest of the tag stays.
    let sites = base
        .sites
        .iter()
        .filter_map(|s| {
            if s.old == base.tag {
                Some(TagSite {
                    new: new_tag.clone(),
                    ..s.clone()
                })
            } else if s.old == version && new_kind == kind {
                Some(TagSite {
                    new: new_version.to_string(),
                    ..s.clone()
                })
            } else {
                None
            }
        })
        .collect();
    Fix {
        kind: FixKind::BaseImage,
        replacement: format!("{}:{new_tag}", base.repo),
        rationale: format!(
            "{}:{new_tag} is NVIDIA's listed tag of CUDA {mm} with the base's kind and OS{cudnn_note}; torch's CUDA {mm} and the base's then agree, and it needs driver >= {} (NVIDIA_REQUIRE_CUDA=cuda>={mm}), {drivers}",
            base.repo, min.value
        ),
        basis: vec![
            basis_of(
                "cuda_image_tag",
                format!("{}:{new_tag} listed", base.repo),
                &tag,
            ),
            basis_of(
                "cuda_driver",
                format!("CUDA {mm}: Linux >= {}", min.value),
                &min,
            ),
        ],
        edits: Vec::new(),
        applicability: Applicability::Unsafe,
        change: Some(Change::BaseImage {
            image: base.repo.to_string(),
            from: base.tag.to_string(),
            to: new_tag,
            cuda: new_cuda,
            sites,
        }),
    }
}

/// Advice to base the image on CUDA `cuda`, naming no tag, and why none is named.
pub fn advice(cuda: CudaVersion, why: &str) -> Fix {
    let mm = cuda.major_minor();
    Fix {
        kind: FixKind::BaseImage,
        replacement: format!("a CUDA {mm} base image"),
        rationale: format!("torch's CUDA {mm} and the base's then agree; {why}"),
        basis: Vec::new(),
        edits: Vec::new(),
        applicability: Applicability::Manual,
        change: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base(tag: &str) -> Base<'_> {
        Base {
            repo: "nvidia/cuda".into(),
            tag,
            sites: Vec::new(),
        }
    }

    /// The truth: the tag is one NVIDIA's list names, read again from the data file.
    fn listed(tag: &str) -> bool {
        let text = include_str!("../../../matrices/cuda-images.toml");
        let doc: toml::Value = toml::from_str(text).unwrap();
        doc["cuda_image_tag"].as_array().unwrap().iter().any(|r| {
            r["kinds"].as_array().unwrap().iter().any(|k| {
                format!(
                    "{}-{}-{}",
                    r["cuda"].as_str().unwrap(),
                    k.as_str().unwrap(),
                    r["os"].as_str().unwrap()
                ) == tag
            })
        })
    }

    #[test]
    fn the_tag_is_listed_and_its_cuda_is_torchs() {
        let f = Facts::embedded().unwrap();
        for (from, cuda) in [
            ("11.8.0-runtime-ubuntu22.04", CudaVersion::new(12, 1)),
            ("12.4.1-devel-ubuntu22.04", CudaVersion::new(12, 6)),
            ("12.1.1-cudnn8-runtime-ubuntu22.04", CudaVersion::new(12, 8)),
            ("12.6.3-base-ubuntu24.04", CudaVersion::new(13, 0)),
        ] {
            let fix = fix_for(&f, Some(&base(from)), cuda, &[]);
            let Some(Change::BaseImage { to, cuda: got, .. }) = &fix.change else {
                panic!("{from} → {cuda}: no tag: {}", fix.rationale)
            };
            assert!(listed(to), "{to} is not in the list");
            assert!(got.same_release(&cuda), "{to}: {got} is not {cuda}");
            assert_eq!(fix.replacement, format!("nvidia/cuda:{to}"));
            assert_eq!(fix.applicability, Applicability::Unsafe);
            // Same OS, same flavour.
            let (_, kind, os) = parts(from).unwrap();
            let (_, new_kind, new_os) = parts(to).unwrap();
            assert_eq!(os, new_os);
            assert_eq!(kind.rsplit('-').next(), new_kind.rsplit('-').next());
        }
    }

    #[test]
    fn no_tag_where_the_list_has_none_or_a_driver_cannot_run_it() {
        let f = Facts::embedded().unwrap();
        // Not nvidia/cuda; an OS the list has no CUDA 12.8 tags for; an end-of-life CUDA.
        let other = Base {
            repo: "pytorch/pytorch".into(),
            tag: "2.3.0-cuda12.1-cudnn8-runtime",
            sites: Vec::new(),
        };
        for (b, cuda, why) in [
            (other, CudaVersion::new(12, 4), "nvidia/cuda only"),
            (
                base("10.2-runtime-ubuntu18.04"),
                CudaVersion::new(12, 8),
                "names no CUDA 12.8",
            ),
            (
                base("12.1.1-runtime-ubuntu20.04"),
                CudaVersion::new(11, 7),
                "end of life",
            ),
        ] {
            let fix = fix_for(&f, Some(&b), cuda, &[]);
            assert!(fix.change.is_none(), "{fix:?}");
            assert_eq!(fix.applicability, Applicability::Manual);
            assert!(fix.rationale.contains(why), "{}", fix.rationale);
        }
        // A target whose driver is older than CUDA 12.8's minimum.
        let t = crate::fix::suggest::torch::tests::target(&f, &["H100"], Some("535.104.05"));
        let fix = fix_for(
            &f,
            Some(&base("12.1.1-runtime-ubuntu22.04")),
            CudaVersion::new(12, 8),
            &[t],
        );
        assert!(fix.change.is_none(), "{fix:?}");
        let min = f.cuda_min_driver(CudaVersion::new(12, 8)).unwrap().value;
        assert!(
            fix.rationale.contains(&format!("needs driver >= {min}")),
            "{}",
            fix.rationale
        );
    }

    #[test]
    fn a_version_only_arg_site_takes_the_new_version() {
        let f = Facts::embedded().unwrap();
        let site = |old: &str| TagSite {
            line: 1,
            old: old.into(),
            new: String::new(),
        };
        let b = Base {
            repo: "nvidia/cuda".into(),
            tag: "11.8.0-runtime-ubuntu22.04",
            sites: vec![site("11.8.0-runtime-ubuntu22.04"), site("11.8.0")],
        };
        let fix = fix_for(&f, Some(&b), CudaVersion::new(12, 1), &[]);
        let Some(Change::BaseImage { to, sites, .. }) = &fix.change else {
            panic!("{fix:?}")
        };
        assert_eq!(sites[0].new, *to);
        assert_eq!(sites[1].new, to.split('-').next().unwrap());
    }
}
