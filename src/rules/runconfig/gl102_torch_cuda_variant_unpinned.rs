//! GL102: torch installed without choosing its CUDA build: PyPI's default decides.

use crate::finding::{Finding, Severity};
use crate::fix::suggest::torch::{builds_for, fixes_for, help_for, BuildsCache, Installed, Pool};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};
use crate::runconfig::torch::{all_torch, TorchCuda};
use crate::runconfig::{loc, SpecContext, Subject};

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL102"),
    name: "torch-cuda-variant-unpinned",
    default_severity: Severity::Warning,
    other_severities: &[Severity::Error, Severity::Info],
    summary: "torch is installed without a CUDA variant: PyPI's default build decides the CUDA and driver",
    doc: RuleDoc {
        what: "`pip install torch==2.7` (or an unpinned `torch`) with no `+cuXYZ`, no \
            download.pytorch.org/whl/cuXYZ index and no uv --torch-backend.",
        why: "PyPI serves one CUDA build per torch release (2.3 → CUDA 12.1, 2.7 → 12.6, 2.8 → \
            12.8), chosen by PyTorch, not by you: it may differ from the base image's CUDA, it \
            pulls 2–3 GB of nvidia-* wheels, and it needs a driver new enough for that CUDA major \
            (525.60.13 for 12.x, 580.65.06 for 13.x). Without a version pin, the next rebuild \
            silently changes all of this.",
        example: "`FROM nvidia/cuda:12.4.1-devel-ubuntu22.04` + `pip install torch==2.7`.",
        fix: "Pin the variant: `pip install torch==2.7.0 --index-url \
            https://download.pytorch.org/whl/cu126` (or `+cpu` from whl/cpu for CPU-only images). \
            gpulint names a variant the release publishes, nearest the base image's CUDA, that \
            covers every target GPU and runs on the targets' drivers.",
        sources: &[
            "https://github.com/pytorch/pytorch/blob/main/RELEASE.md#pytorch-cuda-support-matrix",
            "https://pypi.org/project/torch/",
            "https://docs.astral.sh/uv/guides/integration/pytorch/",
        ],
    },
};

/// ": cu118, cu124, cu126" for the release line of `version` (the newest when unpinned), or
/// nothing when gpulint holds none.
fn variants_of(cx: &SpecContext, version: Option<&str>) -> String {
    let release = match version {
        Some(v) => cx.facts.torch_release(v),
        None => cx.facts.torch_newest_release(),
    };
    let tags: Vec<&str> = release
        .map(|r| r.value.variants.iter().map(|v| v.tag.as_str()).collect())
        .unwrap_or_default();
    if tags.is_empty() {
        String::new()
    } else {
        format!(" ({})", tags.join(", "))
    }
}

/// The table's entry point: this rule's findings on the context's subject.
pub fn check(cx: &SpecContext<'_>, out: &mut Vec<Finding>) {
    let s = &cx.subject;
    let Subject::Dockerfile(bf) = s else {
        return;
    };
    let mut cache = BuildsCache::new(cx.facts, Pool::of(cx.targets));
    for t in all_torch(bf, cx.facts) {
        let TorchCuda::PypiDefault {
            version,
            cuda,
            source,
        } = &t.cuda
        else {
            continue;
        };
        let st = &bf.stages[t.stage];
        let base = st.info.cuda;
        let floor = cuda.and_then(|c| cx.facts.minor_compat_floor(c.major));
        let what = match (version, cuda) {
            (Some(v), Some(c)) => format!(
                "PyPI serves torch {v} built for CUDA {} ({}){}",
                c.major_minor(),
                c.cu_tag(),
                floor
                    .as_ref()
                    .map(|f| format!(", which needs driver >= {}", f.value))
                    .unwrap_or_default()
            ),
            (Some(v), None) => {
                format!("PyPI serves torch {v} with whatever CUDA build PyTorch chose for it")
            }
            (None, _) => {
                "the newest torch at build time, with whatever CUDA build PyPI serves then"
                    .to_string()
            }
        };
        let matches_base = matches!((cuda, base), (Some(c), Some(b)) if c.same_release(&b));
        let sev = if matches_base && version.is_some() {
            Severity::Info
        } else {
            Severity::Warning
        };
        let base_note = match base {
            Some(b) if !matches_base => format!("; the base image has CUDA {b}"),
            _ => String::new(),
        };
        // A variant that exists for this release, runs on every target and is nearest the
        // base image's CUDA: never a tag made up from the base (2.6.0 has no cu128 build).
        let builds = cache.get(Installed {
            version: version.as_deref(),
            cuda: base.or(*cuda),
        });
        // A release gpulint does not hold has no variants to name; otherwise the first build
        // is of the pinned line when one of its variants runs on every target.
        let known = version.is_none()
            || version
                .as_deref()
                .and_then(|v| cx.facts.torch_release(v))
                .is_some();
        let chosen = builds.first().filter(|_| known);
        let pin = match chosen {
            Some(b) => format!("pin the build: {}", b.install_line()),
            None => format!(
                "pin the build with the index of a CUDA variant torch {} publishes{}",
                version.as_deref().unwrap_or("(the newest release)"),
                variants_of(cx, version.as_deref())
            ),
        };
        let mut f = META
            .finding(format!(
                "`{}` has no CUDA variant: {what}{base_note}",
                t.text
            ))
            .with_severity(sev)
            .with_location(loc(&bf.file, t.pos))
            .with_help(format!(
                "{pin} (or +cpu from whl/cpu){}",
                source
                    .as_ref()
                    .map(|s| format!("; default variants: {s}"))
                    .unwrap_or_default()
            ));
        if let Some(b) = chosen {
            f = f.with_fix(b.fix());
        }
        if t.via_conda {
            f = f.with_severity(Severity::Info);
        }
        out.push(f);
        if let Some(fl) = &floor {
            for tg in cx.targets {
                if let Some(d) = &tg.driver {
                    if *d < fl.value {
                        let builds = builds_for(
                            cx.facts,
                            &Pool::of(std::slice::from_ref(tg)),
                            Installed {
                                version: version.as_deref(),
                                cuda: *cuda,
                            },
                        );
                        let mut f =
                            META.finding(format!(
                                "`{}` gets PyPI's CUDA {} build, which needs driver >= {}; the target's driver is {d}",
                                t.text,
                                cuda.map(|c| c.major_minor()).unwrap_or_default(),
                                fl.value
                            ))
                            .with_severity(Severity::Error)
                            .with_target(tg.name.clone())
                            .with_location(loc(&bf.file, t.pos))
                            .with_help(match help_for(&builds) {
                                Some(h) => format!("install a torch build for a CUDA the driver supports: {h}"),
                                None => "no official torch build gpulint knows runs on this target: upgrade the driver".to_string(),
                            });
                        for fix in fixes_for(&builds, 2) {
                            f = f.with_fix(fix);
                        }
                        out.push(f);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::finding::Severity;
    use crate::runconfig::testutil::{dockerfile, target};

    #[test]
    fn pypi_default_is_named() {
        let f = dockerfile(
            "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\nRUN uv pip install torch==2.7\n",
            "GL102",
            vec![],
        );
        assert_eq!(f.len(), 1);
        assert!(f[0].message.contains("CUDA 12.6"), "{}", f[0].message);
        assert!(f[0].message.contains("525.60.13"), "{}", f[0].message);
        assert_eq!(f[0].severity, Severity::Warning);
    }

    #[test]
    fn the_suggested_variant_exists_for_the_release_and_runs_on_the_targets() {
        // torch 2.6.0 has no cu128 build; the help used to build the tag from the base image.
        let df = "FROM nvidia/cuda:12.8.1-devel-ubuntu22.04\nRUN pip install torch==2.6.0\n";
        let f = dockerfile(df, "GL102", vec![]);
        let help = f[0].help.as_deref().unwrap();
        assert!(!help.contains("cu128"), "{help}");
        assert!(
            help.contains("torch==2.6.0 ") && help.contains("whl/cu126"),
            "{help}"
        );
        // An RTX 5090 pool: no 2.6 build runs there; the suggestion is one that does.
        let f = dockerfile(
            df,
            "GL102",
            vec![target("5090", &["12.0"], Some("575.51.03"))],
        );
        let fix = &f[0].fixes[0];
        assert!(
            fix.replacement.starts_with("pip install torch==2.7.0 ")
                && fix.replacement.ends_with("whl/cu128"),
            "{}",
            fix.replacement
        );
        // The pinned line, linted again, is not reported by this rule.
        let fixed = format!(
            "FROM nvidia/cuda:12.8.1-devel-ubuntu22.04\nRUN {}\n",
            fix.replacement
        );
        assert!(dockerfile(&fixed, "GL102", vec![]).is_empty(), "{fixed}");
        // A release gpulint does not hold: no build is named.
        let f = dockerfile(
            "FROM python:3\nRUN pip install torch==1.4.0\n",
            "GL102",
            vec![],
        );
        assert!(f[0].fixes.is_empty(), "{:?}", f[0].fixes);
    }

    #[test]
    fn no_base_image_fix_since_a_base_change_pins_no_variant() {
        // PyPI's torch 2.7.0 is the cu126 build on a CUDA 12.4 base: moving the base to 12.6
        // would leave the variant unpinned (GL102 at info), so only the pin is offered.
        let text = "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN pip install torch==2.7.0\n";
        let f = dockerfile(text, "GL102", vec![]);
        assert!(!f[0].fixes.is_empty());
        assert!(
            f[0].fixes
                .iter()
                .all(|x| x.kind == crate::fix::FixKind::Package),
            "{:?}",
            f[0].fixes
        );
    }

    #[test]
    fn torch_pinned_by_another_package_is_judged_like_torch() {
        // vllm 0.30.0's wheel metadata pins torch==2.13.0 (matrices/torch_dependents.toml).
        let t = "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\nRUN pip install vllm==0.30.0\n";
        let f = dockerfile(t, "GL102", vec![]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].message
                .contains("vllm==0.30.0 (which pins torch==2.13.0"),
            "{}",
            f[0].message
        );
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(2));
        // No dependencies, torch named next to it, or a release with no row: nothing implied.
        for t in [
            "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\nRUN pip install --no-deps vllm==0.30.0\n",
            "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\nRUN pip install vllm==0.0.1\n",
        ] {
            assert!(dockerfile(t, "GL102", vec![]).is_empty(), "{t}");
        }
    }

    #[test]
    fn pinned_or_cpu_is_fine_and_old_driver_is_an_error() {
        assert!(dockerfile("FROM python:3\nRUN pip install torch==2.3.0 --index-url https://download.pytorch.org/whl/cpu\n", "GL102", vec![]).is_empty());
        assert!(dockerfile(
            "FROM python:3\nRUN pip install torch==2.3.0+cu118\n",
            "GL102",
            vec![]
        )
        .is_empty());
        let f = dockerfile(
            "FROM python:3\nRUN pip3 install torch==2.3.0\n",
            "GL102",
            vec![target("t4", &["7.5"], Some("470.82.01"))],
        );
        assert!(f
            .iter()
            .any(|f| f.severity == Severity::Error && f.target.is_some()));
    }
}
