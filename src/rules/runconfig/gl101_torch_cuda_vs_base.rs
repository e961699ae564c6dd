//! GL101: PyTorch's CUDA build does not match the base image's CUDA / NVIDIA_REQUIRE_CUDA.

use crate::finding::{Finding, Severity};
use crate::fix::suggest::base_image::{self, Base};
use crate::fix::suggest::torch::{builds_for, fixes_for, help_for, BuildsCache, Installed, Pool};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};
use crate::runconfig::torch::{all_torch, TorchCuda};
use crate::runconfig::{loc, SpecContext, Subject};
use crate::version::CudaVersion;

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL101"),
    name: "torch-cuda-vs-base-cuda",
    default_severity: Severity::Error,
    other_severities: &[Severity::Info, Severity::Warning],
    summary: "PyTorch's CUDA build differs from the base image's CUDA",
    doc: RuleDoc {
        what: "The Dockerfile installs a PyTorch built for one CUDA release (`+cu121`, a whl/cu121 \
            index, conda pytorch-cuda=12.1) on a base image that ships another \
            (nvidia/cuda:11.8.0-…, pytorch/pytorch:…-cuda11.8-…, NGC PyTorch YY.MM). Also \
            TensorFlow pinned in a RUN (`tensorflow-gpu==1.14.0`, `tensorflow==2.8.0`) whose GPU \
            build is for another CUDA than the image's (TensorFlow's tested build \
            configurations; before 2.14 only), and a CPU-only TensorFlow package \
            (`tensorflow-cpu`, `tensorflow` before 2.1) on a CUDA image.",
        why: "The base image advertises its own CUDA in NVIDIA_REQUIRE_CUDA (cuda>=11.8), so the \
            container toolkit starts it on drivers that support 11.8 but not the CUDA 12 that \
            torch needs (`CUDA driver version is insufficient`): an error. The other way round             (torch's CUDA 11.8 on a CUDA 12.4 base) runs, since a driver for 12.4 also runs             11.8: reported as info (warning in devel images). In devel images, CUDA extensions \
            compiled with the image's nvcc against a torch of another CUDA major fail torch's \
            version check; within one major they only warn, and the mix of two CUDA runtimes in \
            one image is a source of symbol and performance surprises. TensorFlow before 2.14 \
            loads the system's CUDA libraries by soname (`libcudart.so.10.0` before CUDA 11, \
            `libcublas.so.11` from it): on another CUDA it logs that it cannot load them and runs \
            on the CPU.",
        example: "`FROM nvidia/cuda:11.8.0-devel-ubuntu22.04` + `pip install torch==2.3.0+cu121`.",
        fix: "Install the torch build for the image's CUDA (`--index-url \
            https://download.pytorch.org/whl/cu118`), or move the base image to the CUDA torch \
            uses: gpulint names the nvidia/cuda tag of torch's CUDA with the base's kind and OS \
            from NVIDIA's list of supported tags (`11.8.0-runtime-ubuntu22.04` → \
            `12.1.1-runtime-ubuntu22.04` for a cu121 torch), as an unsafe `--fix` edit.",
        sources: &[
            "https://github.com/pytorch/pytorch/blob/main/RELEASE.md#pytorch-cuda-support-matrix",
            "https://pytorch.org/get-started/previous-versions/",
            "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/docker-specialized.html",
            "https://www.tensorflow.org/install/source#gpu",
        ],
    },
};

fn require_cuda(v: &str) -> Option<CudaVersion> {
    let i = v.find("cuda>=")?;
    let rest = &v[i + 6..];
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// The table's entry point: this rule's findings on the context's subject.
pub fn check(cx: &SpecContext<'_>, out: &mut Vec<Finding>) {
    let s = &cx.subject;
    let Subject::Dockerfile(bf) = s else {
        return;
    };
    // NVIDIA_REQUIRE_CUDA at the end of each stage, once for all stages (a chain walk per
    // torch install is quadratic in a long FROM chain).
    let require_env = bf.nearest_in_chain(|s| {
        s.envs
            .iter()
            .rev()
            .find(|e| e.name == "NVIDIA_REQUIRE_CUDA" && !e.is_arg)
    });
    let mut cache = BuildsCache::new(cx.facts, Pool::of(cx.targets));
    let bases = Base::of_stages(bf);
    for t in all_torch(bf, cx.facts) {
        // PyPI's default build of a pinned release is a known CUDA too (GL102 says it was not
        // chosen); from it only what breaks is reported here, not the harmless mixes.
        let (tc, how, by_default) = match &t.cuda {
            TorchCuda::Pinned { cuda, how } => (cuda, how.clone(), false),
            TorchCuda::PypiDefault {
                version: Some(v),
                cuda: Some(cuda),
                ..
            } => (cuda, format!("PyPI's default build of torch {v}"), true),
            // Unpinned, where we know PyPI's newest release is what resolves (an extra index
            // that stopped releasing): its build's CUDA is a floor.
            TorchCuda::PypiDefault {
                version: None,
                cuda: Some(cuda),
                ..
            } => (
                cuda,
                format!("PyPI's newest torch, CUDA {} or newer", cuda.major_minor()),
                true,
            ),
            _ => continue,
        };
        let st = &bf.stages[t.stage];
        let req = require_env
            .get(st.index)
            .copied()
            .flatten()
            .and_then(|e| e.value.as_deref().and_then(require_cuda));
        let base = st.info.cuda.or(req);
        let Some(bc) = base else { continue };
        let image = st
            .root_ref
            .as_ref()
            .map(|r| r.full_repo() + ":" + r.tag.as_deref().unwrap_or("latest"))
            .unwrap_or_else(|| st.image.clone());
        let devel = st.info.flavor.as_deref() == Some("devel");
        let floor = cx
            .facts
            .minor_compat_floor(tc.major)
            .map(|d| format!(" (driver >= {})", d.value))
            .unwrap_or_default();
        let (sev, why) = if tc.major < bc.major {
            // Drivers are backward compatible: any driver that passes the base's
            // `cuda>=12.4` runs torch's CUDA 11.8. Only builds against the base's nvcc break.
            if devel {
                (
                    Severity::Warning,
                    format!(
                        "CUDA extensions compiled with this image's nvcc {} fail torch's CUDA major check against torch's CUDA {} (runtime is fine: a driver for CUDA {} also runs CUDA {})",
                        bc.major_minor(),
                        tc.major_minor(),
                        bc.major_minor(),
                        tc.major_minor()
                    ),
                )
            } else {
                (
                    Severity::Info,
                    format!(
                        "torch uses its bundled CUDA {} libraries; the image's CUDA {} stays unused by torch (a driver for CUDA {} also runs CUDA {})",
                        tc.major_minor(),
                        bc.major_minor(),
                        bc.major_minor(),
                        tc.major_minor()
                    ),
                )
            }
        } else if tc.major > bc.major
            && (devel || req.is_none_or(|r| (r.major, r.minor) < (tc.major, tc.minor)))
        {
            // (Unless the Dockerfile itself advertises torch's CUDA in NVIDIA_REQUIRE_CUDA.)
            (
                Severity::Error,
                format!(
                    "the image advertises NVIDIA_REQUIRE_CUDA=cuda>={bc_mm}, so it starts on drivers that cannot run torch's CUDA {tmaj}{floor}{dev}",
                    bc_mm = bc.major_minor(),
                    tmaj = tc.major,
                    dev = if devel { "; extensions built with this image's nvcc fail torch's CUDA major check" } else { "" },
                ),
            )
        } else if (tc.major, tc.minor) > (bc.major, bc.minor) {
            (
                if devel {
                    Severity::Warning
                } else {
                    Severity::Info
                },
                if devel {
                    format!("CUDA extensions compiled here use nvcc {} against torch's CUDA {} (torch.utils.cpp_extension only warns)", bc.major_minor(), tc.major_minor())
                } else {
                    format!("torch brings its own CUDA {} libraries next to the image's {}; same major, so minor-version compatibility covers the driver", tc.major_minor(), bc.major_minor())
                },
            )
        } else if (tc.major, tc.minor) < (bc.major, bc.minor) {
            (
                Severity::Info,
                format!("torch uses its bundled CUDA {} libraries, the image's CUDA {} stays unused by torch", tc.major_minor(), bc.major_minor()),
            )
        } else {
            continue;
        };
        if by_default && (sev == Severity::Info || tc.major == bc.major) {
            continue;
        }
        // Smallest change first: a build of the same torch release for the base's CUDA major
        // (nearest its minor) that exists and runs on every target; else the base's CUDA.
        let builds = cache.get(Installed {
            version: t.version.as_deref(),
            cuda: Some(bc),
        });
        let line = t
            .version
            .as_deref()
            .and_then(|v| cx.facts.torch_release(v))
            .map(|r| r.value.version.clone());
        let agreeing = builds.iter().find(|b| {
            b.variant.cuda.major == bc.major
                && (b.variant.cuda.minor <= bc.minor || !devel)
                && line.as_deref().is_none_or(|l| l == b.release.version)
        });
        // The other change: the listed nvidia/cuda tag of torch's CUDA with the base's kind
        // and OS (or advice saying why none is named).
        let base_fix = if by_default && t.version.is_none() {
            base_image::advice(
                *tc,
                "torch is unpinned, so its CUDA moves with each release: no tag is named",
            )
        } else {
            base_image::fix_for(
                cx.facts,
                bases.get(t.stage).and_then(Option::as_ref),
                *tc,
                cx.targets,
            )
        };
        let mut f = META
            .finding(format!(
                "`{}` is built for CUDA {} ({how}) but the base image {image} has CUDA {}: {why}",
                t.text,
                tc.major_minor(),
                bc
            ))
            .with_severity(sev)
            .with_location(loc(&bf.file, t.pos))
            .with_help(match agreeing {
                Some(b) => format!(
                    "install the {} build of torch ({}) or base the image on {}",
                    b.variant.tag,
                    b.install_line(),
                    base_fix.replacement
                ),
                None => format!(
                    "base the image on {} (torch {} publishes no build for CUDA {}.x that runs on every target)",
                    base_fix.replacement,
                    t.version.as_deref().unwrap_or("(unpinned)"),
                    bc.major
                ),
            });
        if let Some(b) = agreeing {
            f = f.with_fix(b.fix());
        }
        out.push(f.with_fix(base_fix));
    }
    // Target drivers too old for the torch CUDA.
    for t in all_torch(bf, cx.facts) {
        let TorchCuda::Pinned { cuda: tc, .. } = &t.cuda else {
            continue;
        };
        let Some(floor) = cx.facts.minor_compat_floor(tc.major) else {
            continue;
        };
        for tg in cx.targets {
            if let Some(d) = &tg.driver {
                if *d < floor.value {
                    // The build the help used to name was "CUDA <driver branch>.x": computed
                    // now from the builds that run on this target's driver and GPUs.
                    let builds = builds_for(
                        cx.facts,
                        &Pool::of(std::slice::from_ref(tg)),
                        Installed {
                            version: t.version.as_deref(),
                            cuda: Some(*tc),
                        },
                    );
                    let mut f = META.finding(format!(
                            "`{}` needs CUDA {} (driver >= {}), but the target's driver is {d}",
                            t.text,
                            tc.major_minor(),
                            floor.value
                        ))
                        .with_target(tg.name.clone())
                        .with_location(loc(&bf.file, t.pos))
                        .with_help(match help_for(&builds) {
                            Some(h) => format!("install a torch build this driver runs ({h}), or upgrade the driver to >= {}; source: {}", floor.value, floor.source),
                            None => format!("upgrade the driver to >= {}; source: {}", floor.value, floor.source),
                        });
                    for fix in fixes_for(&builds, 2) {
                        f = f.with_fix(fix);
                    }
                    out.push(f);
                }
            }
        }
    }
    out.extend(require_vs_image(bf, cx));
    out.extend(cpu_torch_on_a_cuda_base(bf, cx));
    out.extend(tensorflow_vs_image(bf, cx));
}

/// TensorFlow pinned in a RUN (`tensorflow-gpu==1.12.0`) against the image's CUDA (the base
/// image's, else what a RUN of the stage installs). Before 2.14 TensorFlow's GPU build loads
/// the system CUDA libraries by soname, `libcudart.so.10.0` before CUDA 11 and
/// `libcublas.so.11` from it: on another CUDA (another minor before 11, another major from
/// it) it finds no GPU and runs on the CPU. From 2.14 `tensorflow[and-cuda]` may bring CUDA
/// wheels of its own, so nothing is said. A CPU-only package on a CUDA image is said too.
fn tensorflow_vs_image(bf: &crate::runconfig::build::BuildFacts, cx: &SpecContext) -> Vec<Finding> {
    let mut out = Vec::new();
    for st in bf.built_stages() {
        let installed = || {
            st.installed_cuda()
                .into_iter()
                .max_by_key(|(v, _, _)| (v.major, v.minor))
                .map(|(v, what, _)| (v, format!("`{what}`")))
        };
        let image = st
            .info
            .cuda
            .map(|c| (c, format!("the base image {}", st.image)))
            .or_else(installed);
        let Some((bc, whose)) = image.filter(|_| !st.image_unresolved) else {
            continue;
        };
        for t in crate::runconfig::tensorflow::stage_tensorflow(st) {
            let tf = cx.facts.tensorflow_cuda(t.major, t.minor);
            if t.cpu_only {
                out.push(
                    META.finding(format!(
                        "`{}` is TensorFlow's CPU-only package, installed on an image with CUDA {bc} ({whose}): TensorFlow never uses the GPU in this image",
                        t.text
                    ))
                    .with_severity(Severity::Warning)
                    .with_location(loc(&bf.file, t.pos))
                    .with_help(match &tf {
                        Some(c) if t.major == 1 || (t.major, t.minor) == (2, 0) => format!(
                            "install tensorflow-gpu=={}.{}.* (built for CUDA {}), or base a CPU image on an image without CUDA; source: {}",
                            t.major, t.minor, c.value, c.source
                        ),
                        _ => "install the `tensorflow` package (GPU support included from 2.1), or base a CPU image on an image without CUDA".to_string(),
                    }),
                );
                continue;
            }
            let Some(tc) = tf.filter(|_| (t.major, t.minor) < (2, 14)) else {
                continue;
            };
            let tcv = tc.value;
            // The sonames a build for `v` loads exist in an image of CUDA `bc`.
            let loads = |v: CudaVersion| {
                if v.major < 11 {
                    (v.major, v.minor) == (bc.major, bc.minor)
                } else {
                    v.major == bc.major
                }
            };
            if loads(tcv) {
                continue;
            }
            let soname = if tcv.major < 11 {
                format!("libcudart.so.{}", tcv.major_minor())
            } else {
                format!("libcublas.so.{}", tcv.major)
            };
            // Releases (before 2.14) whose GPU build loads in this image, by the table.
            let fitting: Vec<String> = (1..=2u32)
                .flat_map(|a| (0..=13u32).map(move |b| (a, b)))
                .filter(|(a, b)| (*a, *b) < (2, 14))
                .filter(|(a, b)| {
                    cx.facts
                        .tensorflow_cuda(*a, *b)
                        .is_some_and(|c| loads(c.value))
                })
                .map(|(a, b)| format!("{a}.{b}"))
                .collect();
            let instead = match (fitting.first(), fitting.last()) {
                (Some(f), Some(l)) if f == l => format!("install TensorFlow {f}"),
                (Some(f), Some(l)) => format!("install a TensorFlow release from {f} to {l}"),
                _ => format!(
                    "no TensorFlow release before 2.14 is built for CUDA {}: base the image on CUDA {} instead",
                    bc.major_minor(),
                    tcv.major_minor()
                ),
            };
            out.push(
                META.finding(format!(
                    "`{}` is built for CUDA {} (TensorFlow's tested build configurations), but the image has CUDA {bc} ({whose}): TensorFlow {}.{} loads the CUDA libraries by soname ({soname}), which this image does not have, so it finds no GPU and runs on the CPU",
                    t.text,
                    tcv.major_minor(),
                    t.major,
                    t.minor
                ))
                .with_location(loc(&bf.file, t.pos))
                .with_help(if fitting.is_empty() {
                    format!("{instead}; source: {}", tc.source)
                } else {
                    format!(
                        "{instead} (built for this image's CUDA {}), or base the image on CUDA {}; source: {}",
                        bc.major_minor(),
                        tcv.major_minor(),
                        tc.source
                    )
                }),
            );
        }
    }
    out
}

/// The CPU build of torch (`+cpu`, the whl/cpu index, uv's cpu backend, conda `cpuonly`) in an
/// image built on a CUDA base: torch runs, but never on the GPU the image was made for.
fn cpu_torch_on_a_cuda_base(
    bf: &crate::runconfig::build::BuildFacts,
    cx: &SpecContext,
) -> Vec<Finding> {
    let mut out = Vec::new();
    for t in all_torch(bf, cx.facts) {
        let st = &bf.stages[t.stage];
        if t.cuda != TorchCuda::Cpu || !st.info.has_cuda() || st.image_unresolved {
            continue;
        }
        let cuda = st
            .info
            .cuda
            .map(|c| format!(" (CUDA {c})"))
            .unwrap_or_default();
        out.push(
            META.finding(format!(
                "`{}` is torch's CPU-only build, installed on the CUDA base image {}{cuda}: \
                 torch.cuda.is_available() is False in this image, whatever GPU it runs on",
                t.text, st.image
            ))
            .with_severity(Severity::Warning)
            .with_location(loc(&bf.file, t.pos))
            .with_help(
                "install a CUDA build of torch (--index-url https://download.pytorch.org/whl/cuXYZ), \
                 or base a CPU image on an image without CUDA",
            ),
        );
    }
    out
}

/// An `ENV NVIDIA_REQUIRE_CUDA=cuda>=X.Y` the Dockerfile writes itself, against the CUDA the
/// image holds (the base image's, what a RUN installs, torch's pinned build): the container
/// toolkit admits exactly the drivers that satisfy it. Understated across a major (cuda>=8.0
/// on a CUDA 9.0 stack; before CUDA 11, also across a minor) it admits drivers that cannot run
/// the image; overstated (cuda>=12.8 on a CUDA 12.4 stack) it refuses drivers that would.
fn require_vs_image(bf: &crate::runconfig::build::BuildFacts, cx: &SpecContext) -> Vec<Finding> {
    let torch = all_torch(bf, cx.facts);
    // The newest CUDA each stage holds with what says so, its own or its FROM ancestors':
    // one pass in stage order (a parent is always an earlier stage), not a chain walk per
    // stage.
    let mut held: Vec<Option<(CudaVersion, String)>> = Vec::with_capacity(bf.stages.len());
    for (i, st) in bf.stages.iter().enumerate() {
        let mut mine: Vec<(CudaVersion, String)> = st
            .installed_cuda()
            .into_iter()
            .map(|(v, what, _)| (v, format!("`{what}`")))
            .collect();
        for t in torch.iter().filter(|t| t.stage == i) {
            if let TorchCuda::Pinned { cuda, .. } = &t.cuda {
                mine.push((*cuda, format!("`{}`", t.text)));
            }
        }
        if let Some(c) = st.info.cuda {
            mine.push((c, format!("the base image {}", st.image)));
        }
        if let Some(p) = st.parent.filter(|p| *p < i) {
            mine.extend(held.get(p).cloned().flatten());
        }
        held.push(mine.into_iter().max_by_key(|(v, _)| (v.major, v.minor)));
    }
    let mut out = Vec::new();
    for st in bf.built_stages() {
        let Some(e) = st
            .envs
            .iter()
            .rev()
            .find(|e| e.name == "NVIDIA_REQUIRE_CUDA" && !e.is_arg && !e.unresolved)
        else {
            continue;
        };
        let Some(req) = e.value.as_deref().and_then(require_cuda) else {
            continue;
        };
        let Some((top, what)) = held.get(st.index).cloned().flatten() else {
            continue;
        };
        let under = req.major < top.major
            || (top.major < 11 && req.major == top.major && req.minor < top.minor);
        let over = (req.major, req.minor) > (top.major, top.minor);
        let why = if under {
            format!(
                "{what} is CUDA {}: the container toolkit starts it on drivers that support CUDA {} but not {}",
                top.major_minor(),
                req.major_minor(),
                top.major_minor()
            )
        } else if over {
            format!(
                "the newest CUDA in the image is {} ({what}): the container toolkit refuses drivers that support CUDA {} but not {}, which would run it",
                top.major_minor(),
                top.major_minor(),
                req.major_minor()
            )
        } else {
            continue;
        };
        out.push(
            META.finding(format!(
                "NVIDIA_REQUIRE_CUDA=cuda>={} {} the image: {why}",
                req.major_minor(),
                if under { "understates" } else { "overstates" }
            ))
            .with_severity(Severity::Warning)
            .with_location(loc(&bf.file, e.pos))
            .with_help(format!(
                "require what the image needs: cuda>={} (or leave the base image's value)",
                top.major_minor()
            )),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::runconfig::testutil::{dockerfile, target};

    /// TensorFlow pinned in a RUN against the base's CUDA: before CUDA 11 the minor must
    /// match (libcudart.so.10.0), from 11 the major; CPU-only packages on a CUDA image are
    /// said; releases the table has no row for, and 2.14+, are not judged.
    #[test]
    fn tensorflow_pinned_in_a_run_against_the_image_cuda() {
        let gl101 = |from: &str, run: &str| {
            dockerfile(
                &format!("FROM {from}\nRUN pip install {run}\n"),
                "GL101",
                vec![],
            )
        };
        let cuda = |v: &str| format!("nvidia/cuda:{v}-cudnn7-runtime-ubuntu18.04");
        let f = gl101(&cuda("10.1"), "tensorflow-gpu==1.14.0");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, crate::finding::Severity::Error);
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(2));
        assert!(
            f[0].message.contains("built for CUDA 10.0"),
            "{}",
            f[0].message
        );
        assert!(
            f[0].message.contains("libcudart.so.10.0"),
            "{}",
            f[0].message
        );
        let help = f[0].help.as_deref().unwrap();
        assert!(help.contains("tensorflow.org"), "{help}");
        // The table's releases built for CUDA 10.1.
        assert!(help.contains("from 2.1 to 2.3"), "{help}");
        assert!(gl101(&cuda("10.0"), "tensorflow-gpu==1.14.0").is_empty());
        // CUDA 11: one soname per major, so 11.2's TensorFlow runs on an 11.8 image.
        assert!(gl101(
            "nvidia/cuda:11.8.0-cudnn8-runtime-ubuntu22.04",
            "tensorflow==2.8.0"
        )
        .is_empty());
        let f = gl101(
            "nvidia/cuda:12.2.2-cudnn8-runtime-ubuntu22.04",
            "tensorflow==2.8.0",
        );
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("libcublas.so.11"), "{}", f[0].message);
        // Before 2.1 `tensorflow` is the CPU-only package.
        let f = gl101(&cuda("10.0"), "tensorflow==1.14.0");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, crate::finding::Severity::Warning);
        assert!(f[0].message.contains("CPU-only"), "{}", f[0].message);
        assert!(
            f[0].help
                .as_deref()
                .unwrap()
                .contains("tensorflow-gpu==1.14.*"),
            "{f:?}"
        );
        // Unknown to the table, bundling its own CUDA, unpinned, or no CUDA in the image.
        assert!(gl101(&cuda("10.0"), "tensorflow-gpu==0.12.0").is_empty());
        assert!(gl101(
            "nvidia/cuda:12.2.2-runtime-ubuntu22.04",
            "tensorflow[and-cuda]==2.15.0"
        )
        .is_empty());
        assert!(gl101(&cuda("10.1"), "tensorflow-gpu").is_empty());
        assert!(gl101("ubuntu:18.04", "tensorflow-gpu==1.14.0").is_empty());
        // CUDA a RUN installs counts as the image's.
        let f = dockerfile(
            "FROM ubuntu:18.04\nRUN apt-get install -y cuda-libraries-10-1\nRUN pip install tensorflow-gpu==1.13.1\n",
            "GL101",
            vec![],
        );
        assert!(
            f.iter().any(|f| f.message.contains("cuda-libraries-10-1")),
            "{f:?}"
        );
    }

    #[test]
    fn a_driver_too_old_gets_a_build_it_runs_not_a_branch_read_as_a_cuda() {
        // The help used to say "install a torch build for CUDA 470.x or older".
        let df = "FROM nvidia/cuda:12.1.1-runtime-ubuntu22.04\nRUN pip install torch==2.3.0 --index-url https://download.pytorch.org/whl/cu121\n";
        let f = dockerfile(df, "GL101", vec![target("t4", &["7.5"], Some("470.82.01"))]);
        let f: Vec<_> = f.iter().filter(|f| f.target.is_some()).collect();
        assert_eq!(f.len(), 1, "{f:?}");
        let help = f[0].help.as_deref().unwrap();
        assert!(!help.contains("CUDA 470"), "{help}");
        // 2.3's cu118 build has no architecture row, so the nearest line whose CUDA 11
        // build has one is named.
        assert!(help.contains("whl/cu11"), "{help}");
        // The suggested build, linted again on that target, needs no newer driver.
        let fixed = format!(
            "FROM nvidia/cuda:12.1.1-runtime-ubuntu22.04\nRUN {}\n",
            f[0].fixes[0].replacement
        );
        let again = dockerfile(
            &fixed,
            "GL101",
            vec![target("t4", &["7.5"], Some("470.82.01"))],
        );
        assert!(again.iter().all(|f| f.target.is_none()), "{again:?}");
    }

    /// The base-image fix of the one GL101 finding of `text`, its edits attached.
    fn base_fix(text: &str) -> crate::fix::Fix {
        let mut f = dockerfile(
            text,
            "GL101",
            vec![target("h100", &["9.0"], Some("575.51.03"))],
        );
        assert_eq!(f.len(), 1, "{f:?}");
        crate::fix::suggest::dockerfile_edit::attach(&mut f, "Dockerfile", text);
        let fixes = &f[0].fixes;
        let at = fixes
            .iter()
            .position(|x| x.kind == crate::fix::FixKind::BaseImage)
            .expect("a base-image fix");
        // The torch change, when the release has one for the base's CUDA, is smaller: first.
        assert!(fixes[..at]
            .iter()
            .all(|x| x.kind == crate::fix::FixKind::Package));
        fixes[at].clone()
    }

    #[test]
    fn the_base_image_fix_names_a_listed_tag_of_torchs_cuda_and_relints_clean() {
        use crate::fix::Change;
        let cases = [
            // The tag in the FROM; in an ARG default the FROM expands; its version alone.
            "FROM nvidia/cuda:11.8.0-runtime-ubuntu22.04\nRUN pip install torch==2.3.0+cu121\n",
            "ARG BASE=nvidia/cuda:11.8.0-runtime-ubuntu22.04\nFROM ${BASE}\nRUN pip install torch==2.3.0+cu121\n",
            "ARG CUDA=11.8.0\nFROM nvidia/cuda:${CUDA}-runtime-ubuntu22.04\nRUN pip install torch==2.3.0+cu121\n",
        ];
        for text in cases {
            let fix = base_fix(text);
            let Some(Change::BaseImage { to, cuda, .. }) = &fix.change else {
                panic!("{text}: no tag: {}", fix.rationale)
            };
            // The truth: torch's cu121 is CUDA 12.1, and the tag is in NVIDIA's list.
            assert!(
                cuda.same_release(&crate::version::CudaVersion::new(12, 1)),
                "{to}"
            );
            let f = crate::matrix::Facts::embedded().unwrap();
            let listed = f
                .nvidia_cuda_tag(*cuda, "runtime", "ubuntu22.04")
                .unwrap()
                .value
                .0;
            assert_eq!(*to, listed);
            assert_eq!(fix.applicability, crate::fix::Applicability::Unsafe);
            assert_eq!(fix.edits.len(), 1, "{text}: {fix:?}");
            let fixed = crate::fix::suggest::dockerfile_edit::apply(text, &fix.edits);
            assert_eq!(fixed.lines().count(), text.lines().count(), "{fixed}");
            let again = dockerfile(
                &fixed,
                "GL101",
                vec![target("h100", &["9.0"], Some("575.51.03"))],
            );
            assert!(again.is_empty(), "{fixed}: {again:?}");
        }
    }

    #[test]
    fn a_base_the_list_has_no_tag_for_gets_advice_that_says_why() {
        let fix = base_fix(
            "FROM pytorch/pytorch:2.1.0-cuda11.8-cudnn8-runtime\nRUN pip install torch==2.3.0+cu121\n",
        );
        assert!(fix.change.is_none() && fix.edits.is_empty(), "{fix:?}");
        assert_eq!(fix.replacement, "a CUDA 12.1 base image");
        assert!(
            fix.rationale.contains("nvidia/cuda only"),
            "{}",
            fix.rationale
        );
    }

    #[test]
    fn pypi_default_build_of_another_cuda_major() {
        // torch 1.13.0 from PyPI is the cu117 build: extensions built with a CUDA 12 nvcc
        // fail torch's major check.
        let t = "FROM nvidia/cuda:12.2.2-devel-ubuntu20.04\nENV V=1.13.0\nRUN pip install torch==${V}\n";
        let f = dockerfile(t, "GL101", vec![]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, crate::finding::Severity::Warning);
        assert!(
            f[0].message.contains("PyPI's default build"),
            "{}",
            f[0].message
        );
        // In a runtime image, or within one major, GL102 alone speaks.
        let rt = t.replace("-devel-", "-runtime-");
        assert!(dockerfile(&rt, "GL101", vec![]).is_empty());
        let same = "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\nRUN pip install torch==2.7.0\n";
        assert!(dockerfile(same, "GL101", vec![]).is_empty());
    }

    #[test]
    fn older_torch_cuda_major_on_a_newer_base_runs() {
        // cu118 torch on a CUDA 12.4 base: every driver that passes cuda>=12.4 runs CUDA 11.8.
        let f = dockerfile(
            "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN pip install torch==2.3.0+cu118\n",
            "GL101",
            vec![],
        );
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, crate::finding::Severity::Info);
        assert!(!f[0].message.contains("cannot run"), "{}", f[0].message);
        let f = dockerfile(
            "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\nRUN pip install torch==2.3.0+cu118\n",
            "GL101",
            vec![],
        );
        assert_eq!(f[0].severity, crate::finding::Severity::Warning);
        assert!(f[0].message.contains("major check"), "{}", f[0].message);
    }

    #[test]
    fn seed_cuda_11_8_base_with_cu121_torch() {
        let f = dockerfile(
            "FROM nvidia/cuda:11.8.0-runtime-ubuntu22.04\nRUN pip install torch==2.3.0+cu121\n",
            "GL101",
            vec![],
        );
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, crate::finding::Severity::Error);
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(2));
        assert!(f[0].message.contains("cuda>=11.8"), "{}", f[0].message);
    }

    #[test]
    fn index_url_stages_and_matches() {
        let t = "ARG CU=cu118\nFROM nvidia/cuda:12.4.1-devel-ubuntu22.04 AS b\nFROM b\nRUN pip install torch --index-url https://download.pytorch.org/whl/${CU}\n";
        // The global ARG is not visible in the stage without re-declaring: no index → not pinned.
        assert!(dockerfile(t, "GL101", vec![]).is_empty());
        let t = "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04 AS b\nFROM b\nARG CU=cu118\nRUN pip install torch --index-url https://download.pytorch.org/whl/${CU}\n";
        assert_eq!(dockerfile(t, "GL101", vec![]).len(), 1);
        let ok =
            "FROM nvidia/cuda:12.1.1-runtime-ubuntu22.04\nRUN pip install torch==2.3.0+cu121\n";
        assert!(dockerfile(ok, "GL101", vec![]).is_empty());
        let conda = "FROM gpuci/miniconda-cuda:11.3-devel-ubuntu18.04\nRUN conda install -c pytorch -c nvidia pytorch=2.1.1 pytorch-cuda=12.1\n";
        assert_eq!(dockerfile(conda, "GL101", vec![]).len(), 1);
    }

    #[test]
    fn old_target_driver() {
        let t = "FROM python:3.11\nRUN pip install torch==2.3.0+cu121\n";
        let f = dockerfile(t, "GL101", vec![target("old", &["7.5"], Some("470.82.01"))]);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].target.as_deref(), Some("old"));
    }

    /// An NVIDIA_REQUIRE_CUDA written in the Dockerfile is held against the CUDA the image
    /// holds: understated across a major, or overstated, it is reported at the ENV.
    #[test]
    fn require_cuda_against_the_image() {
        let f = dockerfile(
            "FROM nvidia/cuda:9.0-cudnn7-runtime-ubuntu16.04\nENV NVIDIA_VISIBLE_DEVICES=all \\\n    NVIDIA_REQUIRE_CUDA=\"cuda>=8.0\"\n",
            "GL101",
            vec![],
        );
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("understates"), "{}", f[0].message);
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(3));
        let f = dockerfile(
            "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nENV NVIDIA_REQUIRE_CUDA=\"cuda>=12.8\"\n",
            "GL101",
            vec![],
        );
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("overstates"), "{}", f[0].message);
        // CUDA installed in a RUN counts; minor-version compatibility covers 11.0 on 11.2.
        for fine in [
            "FROM ubuntu:20.04\nRUN apt-get install -y cuda-cudart-11-2=11.2.152-1\nENV NVIDIA_REQUIRE_CUDA \"cuda>=11.2\"\n",
            "FROM nvidia/cuda:11.2.2-runtime-ubuntu20.04\nENV NVIDIA_REQUIRE_CUDA=cuda>=11.0\n",
            "FROM nvidia/cuda:11.8.0-runtime-ubuntu22.04\nRUN pip install torch==2.3.0 --index-url https://download.pytorch.org/whl/cu121\nENV NVIDIA_REQUIRE_CUDA=cuda>=12.1\n",
            "FROM ubuntu:22.04\nENV NVIDIA_REQUIRE_CUDA=cuda>=12.1\n",
        ] {
            let f = dockerfile(fine, "GL101", vec![]);
            assert!(
                f.iter().all(|f| !f.message.contains("states the image")),
                "{fine}: {f:?}"
            );
        }
    }

    /// torch's CPU build on a CUDA base is reported; on a base without CUDA it is what a CPU
    /// image should do.
    #[test]
    fn cpu_torch_on_a_cuda_base() {
        let f = dockerfile(
            "FROM nvidia/cuda:12.1.1-runtime-ubuntu22.04\nRUN pip install torch==2.3.0+cpu -f https://download.pytorch.org/whl/torch_stable.html\n",
            "GL101",
            vec![],
        );
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("CPU-only"), "{}", f[0].message);
        let f = dockerfile(
            "FROM pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime\nRUN pip install torch==2.3.0 --index-url https://download.pytorch.org/whl/cpu\n",
            "GL101",
            vec![],
        );
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(dockerfile(
            "FROM python:3.11-slim\nRUN pip install torch==2.3.0 --index-url https://download.pytorch.org/whl/cpu\n",
            "GL101",
            vec![]
        )
        .is_empty());
    }
}
