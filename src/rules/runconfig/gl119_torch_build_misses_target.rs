//! GL119: the official torch build a Dockerfile installs ships no kernel for a target GPU.
//!
//! The build is the one pip resolves: the pinned version (or, unpinned, the newest release)
//! and its CUDA variant (a `+cuXYZ` pin, a download.pytorch.org index, or PyPI's default).
//! Its SASS/PTX come from `matrices/torch.toml`; where no row exists the answer is
//! "unknown", never "ok".

use crate::arch::{ArchTarget, ComputeCapability};
use crate::finding::{Finding, Severity};
use crate::fix::suggest::arch_list;
use crate::fix::suggest::torch::{fixes_for, help_for, BuildsCache, Installed, Pool};
use crate::gpu_target::Target;
use crate::matrix::torch::{TorchRelease, TorchVariant, VariantArchs};
use crate::matrix::{Basis, Facts};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};
use crate::rules::image::context::list;
use crate::runconfig::torch::{all_torch, TorchCuda, TorchInstall};
use crate::runconfig::{loc, SpecContext, Subject};
use crate::version::CudaVersion;

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL119"),
    name: "torch-build-misses-target",
    default_severity: Severity::Error,
    other_severities: &[Severity::Warning],
    summary: "The torch build the Dockerfile installs ships no kernel for a target GPU",
    doc: RuleDoc {
        what: "`pip install torch==X` (with its CUDA variant: a `+cuXYZ` pin, a \
            download.pytorch.org/whl/cuXYZ index, or PyPI's default build) installs an official \
            build whose SASS and PTX cover none of a target GPU's compute capability; or what \
            that build ships is unknown.",
        why: "Every official torch build is compiled for a fixed architecture list, and each \
            release drops old GPUs: torch 2.11's CUDA 13.0 build has no sm_70 (V100), torch \
            2.0's CUDA 11.7 build no sm_90 (H100). On such a GPU `torch.cuda.is_available()` \
            is true, then the first kernel fails with `no kernel image is available for \
            execution on the device` (torch warns `… with CUDA capability sm_70 is not \
            compatible with the current PyTorch installation`). An unpinned `pip install torch` \
            gets the newest release, so it inherits the newest release's list.",
        example: "`RUN pip install torch==2.11.0` deployed on a V100 (compute capability 7.0).",
        fix: "Install a build whose architecture list covers the GPU. gpulint computes it: \
            the torch releases and CUDA variants whose architecture rows cover every target \
            GPU and whose CUDA runs on the targets' drivers, the same release line first, with \
            the exact install line (`pip install torch==2.7.0 torchvision==0.22.0 \
            torchaudio==2.7.0 --index-url https://download.pytorch.org/whl/cu128` for an RTX \
            5090). Where no official build runs, build torch from source with the \
            `TORCH_CUDA_ARCH_LIST` gpulint names.",
        sources: &[
            "https://github.com/pytorch/pytorch/blob/main/RELEASE.md#pytorch-cuda-support-matrix",
            "https://github.com/pytorch/pytorch/blob/main/.ci/manywheel/build_cuda.sh",
            "https://docs.nvidia.com/cuda/cuda-compiler-driver-nvcc/index.html#gpu-feature-list",
        ],
    },
};

/// What gpulint knows of the build an install resolves to.
enum Build<'a> {
    /// Exactly this build (`how` says why: pinned, or the last release with that variant).
    Exact {
        release: &'a TorchRelease,
        variant: &'a TorchVariant,
        how: String,
    },
    /// A release at least as new as the newest we know (pinned newer, or unpinned): judged by
    /// the newest known release's matching build.
    AtLeast {
        newest: &'a TorchRelease,
        variant: &'a TorchVariant,
        how: String,
    },
    /// Not judgeable: the reason, for the message.
    Unknown(String),
}

fn numeric(v: &str) -> Vec<u64> {
    v.split(['.', '+'])
        .take(2)
        .map(|p| p.parse().unwrap_or(0))
        .collect()
}

/// The variant of `release` that an install with `cuda` (None: PyPI's default) gets.
fn variant_of(release: &TorchRelease, cuda: Option<CudaVersion>) -> Option<&TorchVariant> {
    match cuda {
        Some(c) => release.variant(&c.cu_tag()),
        None => release.pypi_default_variant(),
    }
}

fn resolve<'a>(facts: &'a Facts, t: &TorchInstall, cuda: Option<CudaVersion>) -> Build<'a> {
    let Some(newest) = facts.torch_newest_release().map(|r| r.value) else {
        return Build::Unknown("gpulint holds no torch release".into());
    };
    let build_name = |c: Option<CudaVersion>| match c {
        Some(c) => format!("{} build", c.cu_tag()),
        None => "PyPI default build".to_string(),
    };
    match t.version.as_deref() {
        Some(v) => {
            if let Some(release) = facts.torch_release(v).map(|r| r.value) {
                return match variant_of(release, cuda) {
                    Some(variant) => Build::Exact {
                        release,
                        variant,
                        how: format!("torch {v}"),
                    },
                    None => Build::Unknown(format!(
                        "gpulint knows no {} of torch {}",
                        build_name(cuda),
                        release.version
                    )),
                };
            }
            if numeric(v) > numeric(&newest.version) {
                return match variant_of(newest, cuda) {
                    Some(variant) => Build::AtLeast {
                        newest,
                        variant,
                        how: format!(
                            "torch {v} is newer than every release gpulint knows (newest {})",
                            newest.version
                        ),
                    },
                    None => Build::Unknown(format!(
                        "torch {v} is newer than every release gpulint knows"
                    )),
                };
            }
            Build::Unknown(format!("gpulint knows no torch release {v}"))
        }
        None => match cuda {
            // An index that pins the variant: the newest release that has it.
            Some(c) => {
                let tag = c.cu_tag();
                match facts.torch_newest_with_variant(&tag).map(|s| s.value) {
                    Some((r, variant)) if r.version == newest.version => Build::AtLeast {
                        newest,
                        variant,
                        how: format!(
                            "unpinned torch from the {tag} index gets the newest release (>= {})",
                            newest.version
                        ),
                    },
                    Some((release, variant)) => Build::Exact {
                        release,
                        variant,
                        how: format!(
                            "unpinned torch from the {tag} index gets torch {}, the last release with a {tag} build",
                            release.version
                        ),
                    },
                    None => Build::Unknown(format!("gpulint knows no torch release with a {tag} build")),
                }
            }
            None => match newest.pypi_default_variant() {
                Some(variant) => Build::AtLeast {
                    newest,
                    variant,
                    how: format!(
                        "unpinned torch from PyPI gets the newest release (>= {})",
                        newest.version
                    ),
                },
                None => Build::Unknown(format!(
                    "gpulint does not know PyPI's default build of torch {}",
                    newest.version
                )),
            },
        },
    }
}

/// Said after a source the verdict rests on when that row is inferred, not measured or cited.
fn basis_note(a: &VariantArchs) -> &'static str {
    match a.basis {
        Basis::Inferred => {
            "; inferred: the build script of a main-branch snapshot near that release, not its tag"
        }
        Basis::Measured | Basis::Cited => "",
    }
}

/// The GPUs of `tg` with capability `cc`, for messages ("7.0 (V100)").
fn gpu_names(tg: &Target, cc: ComputeCapability) -> String {
    let mut names: Vec<&str> = tg
        .gpus
        .iter()
        .filter(|g| g.cc == Some(cc))
        .map(|g| g.name.as_str())
        .collect();
    names.dedup();
    format!("{cc} ({})", names.join(", "))
}

/// What one build means for one capability.
enum Verdict {
    Runs,
    /// No kernel image, with the reason (after "ships …").
    Misses(String),
    /// Unknown, with the reason.
    Unknown(String),
}

fn covers(sass: &[ArchTarget], ptx: &[ArchTarget], cc: ComputeCapability) -> bool {
    sass.iter().chain(ptx).any(|a| a.runs_on(cc))
}

fn judge(build: &Build, cc: ComputeCapability) -> Verdict {
    match build {
        Build::Exact {
            release,
            variant,
            how,
        } => match &variant.archs {
            None => Verdict::Unknown(format!(
                "gpulint has no architecture list for torch {}'s {} build",
                release.version, variant.tag
            )),
            Some(a) if covers(&a.sass, &a.ptx, cc) => Verdict::Runs,
            Some(a) => Verdict::Misses(format!(
                "{how}, {} build, ships SASS [{}] and PTX [{}] (source: {}{})",
                variant.tag,
                list(&a.sass),
                list(&a.ptx),
                a.source,
                basis_note(a)
            )),
        },
        Build::AtLeast {
            newest,
            variant,
            how,
        } => match &variant.archs {
            None => Verdict::Unknown(format!(
                "{how}, and gpulint has no architecture list for torch {}'s {} build",
                newest.version, variant.tag
            )),
            Some(a) if covers(&a.sass, &a.ptx, cc) => Verdict::Runs,
            Some(a) => {
                // Releases drop old architectures and add new ones: a GPU older than
                // everything the newest known build targets is not coming back.
                let oldest = a.sass.iter().chain(&a.ptx).map(|t| t.cc()).min();
                let shipped = format!(
                    "{how}; torch {}'s {} build already ships only SASS [{}] and PTX [{}]",
                    newest.version,
                    variant.tag,
                    list(&a.sass),
                    list(&a.ptx)
                );
                if oldest.is_some_and(|o| cc < o) {
                    Verdict::Misses(format!(
                        "{shipped}, and PyTorch does not re-add architectures it dropped"
                    ))
                } else {
                    Verdict::Unknown(format!("{shipped}; whether a newer release adds it"))
                }
            }
        },
        Build::Unknown(why) => Verdict::Unknown(why.clone()),
    }
}

/// The builds that run on every target (computed from the tables, nearest to the installed
/// one first), or, where no official build does, the architecture list to build torch with.
fn with_suggestions(
    mut f: Finding,
    cx: &SpecContext,
    cache: &mut BuildsCache,
    version: Option<&str>,
    installed_cuda: Option<CudaVersion>,
) -> Finding {
    let builds = cache.get(Installed {
        version,
        cuda: installed_cuda,
    });
    if let Some(help) = help_for(builds) {
        f = f.with_help(format!(
            "install a build that runs on every target GPU: {help}"
        ));
        for fix in fixes_for(builds, 3) {
            f = f.with_fix(fix);
        }
        return f;
    }
    let pool = Pool::of(cx.targets);
    match arch_list::fix_for(cx.facts, &pool.ccs, None, arch_list::Syntax::Torch) {
        Some(fix) => {
            f = f.with_help(format!(
                "no official torch build gpulint knows runs on every target GPU: build torch from source with TORCH_CUDA_ARCH_LIST=\"{}\"",
                fix.replacement
            ));
            f.with_fix(fix)
        }
        None => f.with_help("no official torch build gpulint knows runs on every target GPU: build torch from source with TORCH_CUDA_ARCH_LIST set"),
    }
}

/// The table's entry point: this rule's findings on the context's subject.
pub fn check(cx: &SpecContext<'_>, out: &mut Vec<Finding>) {
    out.extend(findings(&cx.subject, cx));
}

fn findings(s: &Subject, cx: &SpecContext) -> Vec<Finding> {
    let Subject::Dockerfile(bf) = s else {
        return Vec::new();
    };
    if cx.targets.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    // The same unknown build installed again in this file (a reinstall, a later stage): one
    // finding naming every line. (requirement, reason) → (index in `out`, other lines)
    let mut unknown_seen: Vec<(String, String, usize, Vec<u32>)> = Vec::new();
    let mut cache = BuildsCache::new(cx.facts, Pool::of(cx.targets));
    for t in all_torch(bf, cx.facts) {
        // Conda's pytorch builds come from other build scripts: no rows to judge them by.
        if t.via_conda {
            continue;
        }
        let (cuda, installed_cuda) = match &t.cuda {
            TorchCuda::Pinned { cuda, .. } => (Some(*cuda), Some(*cuda)),
            TorchCuda::PypiDefault { cuda, .. } => (None, *cuda),
            TorchCuda::Cpu | TorchCuda::Other(_) => continue,
        };
        let build = resolve(cx.facts, &t, cuda);
        // One finding per install and kind of verdict, naming every GPU it concerns (the
        // reason is the same for all of them).
        let mut missed: Vec<(String, String)> = Vec::new(); // (gpu, reason)
        let mut unknown: Vec<(String, String)> = Vec::new();
        let mut targets: Vec<String> = Vec::new();
        for tg in cx.targets {
            for cc in tg.capabilities() {
                let (bucket, why) = match judge(&build, cc) {
                    Verdict::Runs => continue,
                    Verdict::Misses(w) => (&mut missed, w),
                    Verdict::Unknown(w) => (&mut unknown, w),
                };
                let g = gpu_names(tg, cc);
                if !bucket.iter().any(|(x, _)| *x == g) {
                    bucket.push((g, why));
                }
                if !targets.contains(&tg.name) {
                    targets.push(tg.name.clone());
                }
            }
        }
        let at = loc(&bf.file, t.pos);
        let one_target = (targets.len() == 1).then(|| targets[0].clone());
        let gpus = |v: &[(String, String)]| {
            v.iter()
                .map(|(g, _)| g.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        if let Some((_, why)) = missed.first() {
            let mut f = META
                .finding(format!(
                    "`{}`: {why}: no kernel image for compute capability {}",
                    t.text,
                    gpus(&missed)
                ))
                .with_location(at.clone());
            f = with_suggestions(f, cx, &mut cache, t.version.as_deref(), installed_cuda);
            if let Some(n) = &one_target {
                f = f.with_target(n.clone());
            }
            out.push(f);
        }
        if let Some((_, why)) = unknown.first() {
            if let Some(seen) = unknown_seen
                .iter_mut()
                .find(|(text, w, _, _)| *text == t.text && w == why)
            {
                seen.3.push(t.pos.line);
                continue;
            }
            unknown_seen.push((t.text.clone(), why.clone(), out.len(), Vec::new()));
            let mut f = META
                .finding(format!(
                    "`{}`: whether the torch build installed here ships code for compute capability {} is unknown: {why}",
                    t.text,
                    gpus(&unknown)
                ))
                .with_severity(Severity::Warning)
                .with_location(at)
                .with_help("pin a torch version and CUDA variant gpulint knows, or check `torch.cuda.get_arch_list()` of the build");
            if let Some(n) = &one_target {
                f = f.with_target(n.clone());
            }
            out.push(f);
        }
    }
    for (_, _, i, lines) in unknown_seen {
        if !lines.is_empty() {
            let lines: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
            out[i]
                .message
                .push_str(&format!(" (installed again on line {})", lines.join(", ")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::finding::Severity;
    use crate::runconfig::testutil::{dockerfile, target};

    fn on(df: &str, cc: &str) -> Vec<crate::finding::Finding> {
        dockerfile(df, "GL119", vec![target("t", &[cc], Some("580.65.06"))])
    }

    #[test]
    fn pypi_default_without_the_target_arch_is_an_error() {
        // torch 2.11's PyPI build (CUDA 13.0) starts at sm_75: no V100.
        let f = on("FROM python:3.12\nRUN pip install torch==2.11.0\n", "7.0");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Error);
        assert!(
            f[0].message
                .contains("no kernel image for compute capability 7.0"),
            "{}",
            f[0].message
        );
        assert!(f[0].message.contains("cu130"), "{}", f[0].message);
        // ...and covers an H100.
        assert!(on("FROM python:3.12\nRUN pip install torch==2.11.0\n", "9.0").is_empty());
    }

    #[test]
    fn torch_2_6_on_blackwell_suggests_a_build_that_runs_there_and_relints_clean() {
        // torch 2.6 has no build with sm_120; the suggestion used to be "an older CUDA
        // variant, or an older torch", which cannot work on Blackwell.
        let df = "FROM python:3.12\nRUN pip install torch==2.6.0\n";
        let f = on(df, "12.0");
        assert_eq!(f.len(), 1, "{f:?}");
        let help = f[0].help.as_deref().unwrap();
        assert!(
            help.contains("pip install torch==2.7.0 ")
                && help.contains("--index-url https://download.pytorch.org/whl/cu128"),
            "{help}"
        );
        assert!(!f[0].fixes.is_empty());
        for fix in &f[0].fixes {
            // Each suggested line, installed instead, is clean for this rule on that GPU.
            let fixed = format!("FROM python:3.12\nRUN {}\n", fix.replacement);
            assert!(
                on(&fixed, "12.0").is_empty(),
                "{fixed}: {:?}",
                on(&fixed, "12.0")
            );
            assert!(fix.basis.iter().all(|b| b.source.starts_with("https://")));
        }
    }

    #[test]
    fn with_no_official_build_the_fix_is_an_arch_list_that_covers_the_gpu() {
        let f = on("FROM python:3.12\nRUN pip install torch==2.6.0\n", "3.0");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].fixes.len(), 1, "{f:?}");
        assert_eq!(f[0].fixes[0].replacement, "3.0+PTX");
        assert!(f[0]
            .help
            .as_deref()
            .unwrap()
            .contains("TORCH_CUDA_ARCH_LIST=\"3.0+PTX\""));
    }

    #[test]
    fn old_release_without_hopper_is_an_error() {
        let f = on("FROM python:3.10\nRUN pip install torch==2.0.1\n", "9.0");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Error);
    }

    #[test]
    fn an_older_variant_that_ships_the_arch_is_clean() {
        // The cu126 build of 2.11 still ships sm_70.
        let df = "FROM python:3.12\nRUN pip install torch==2.11.0 --index-url https://download.pytorch.org/whl/cu126\n";
        assert!(on(df, "7.0").is_empty(), "{:?}", on(df, "7.0"));
    }

    #[test]
    fn unpinned_torch_inherits_the_newest_release() {
        // Today's PyPI torch has dropped sm_50 (Maxwell): an error, with the reasoning.
        let f = on("FROM python:3.12\nRUN pip install torch\n", "5.2");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0].message.contains("does not re-add"), "{}", f[0].message);
        assert!(on("FROM python:3.12\nRUN pip install torch\n", "9.0").is_empty());
    }

    #[test]
    fn the_same_unknown_install_twice_is_one_finding_and_dry_runs_install_nothing() {
        let t = "FROM python:3.12\nRUN pip install --dry-run torch==1.4.0\nRUN pip install torch==1.4.0\nRUN pip install torch==1.4.0\n";
        let f = on(t, "9.0");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(3));
        assert!(
            f[0].message.ends_with("(installed again on line 4)"),
            "{}",
            f[0].message
        );
    }

    #[test]
    fn unknown_release_or_build_is_unknown_not_ok() {
        let f = on("FROM python:3.12\nRUN pip install torch==1.4.0\n", "9.0");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("unknown"), "{}", f[0].message);
        assert_eq!(f[0].severity, Severity::Warning);
    }

    #[test]
    fn newer_than_known_release_reasons_from_the_newest() {
        let f = on("FROM python:3.12\nRUN pip install torch==9.9.0\n", "5.2");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].message.contains("newer than every release"),
            "{}",
            f[0].message
        );
        assert_eq!(f[0].severity, Severity::Error);
    }

    #[test]
    fn one_finding_per_install_names_every_gpu() {
        let f = dockerfile(
            "FROM python:3.12\nRUN pip install torch==2.11.0\n",
            "GL119",
            vec![target("fleet", &["6.0", "7.0", "9.0"], Some("580.65.06"))],
        );
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].message.contains("6.0") && f[0].message.contains("7.0"),
            "{}",
            f[0].message
        );
        assert!(!f[0].message.contains("9.0 ("), "{}", f[0].message);
    }

    #[test]
    fn torch_2_7_1_cu118_is_judged_not_unknown() {
        // Its arch list (3.7 ... 9.0) comes from a build-script snapshot: judged, and an
        // error that rests on it says the row is inferred.
        let df = "FROM python:3.10\nRUN pip install torch==2.7.1+cu118\n";
        assert!(on(df, "9.0").is_empty(), "{:?}", on(df, "9.0"));
        assert!(on(df, "3.7").is_empty(), "{:?}", on(df, "3.7"));
        let f = on(df, "12.0");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Error);
        assert!(!f[0].message.contains("unknown"), "{}", f[0].message);
        assert!(f[0].message.contains("inferred"), "{}", f[0].message);
        let df = "FROM python:3.10\nRUN pip install torch==2.7.1 --index-url https://download.pytorch.org/whl/cu118\n";
        assert_eq!(on(df, "12.0").len(), 1);
    }

    #[test]
    fn torch_1_10_builds_are_judged_not_unknown() {
        // PyPI's 1.10.0 is the CUDA 10.2 build: sm_37 ... sm_70, nothing for an A100.
        let f = on("FROM python:3.9\nRUN pip install torch==1.10.0\n", "8.0");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0].message.contains("cu102"), "{}", f[0].message);
        assert!(!f[0].message.contains("inferred"), "{}", f[0].message);
        assert!(on("FROM python:3.9\nRUN pip install torch==1.10.0\n", "7.0").is_empty());
        // The cu113 build covers the A100 and the K80 ...
        let df = "FROM python:3.9\nRUN pip install torch==1.10.2+cu113\n";
        assert!(on(df, "8.0").is_empty(), "{:?}", on(df, "8.0"));
        assert!(on(df, "3.7").is_empty(), "{:?}", on(df, "3.7"));
        // ... but not an H100.
        let f = on(df, "9.0");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Error);
    }

    #[test]
    fn cpu_builds_and_no_targets_are_not_judged() {
        let df = "FROM python:3.12\nRUN pip install torch==2.11.0 --index-url https://download.pytorch.org/whl/cpu\n";
        assert!(on(df, "7.0").is_empty());
        assert!(dockerfile(
            "FROM python:3.12\nRUN pip install torch==2.11.0\n",
            "GL119",
            vec![]
        )
        .is_empty());
    }
}
