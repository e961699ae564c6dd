//! GL104: a second CUDA toolkit (or CUDA libraries for another release) installed on a base
//! image that already has CUDA.

use crate::finding::{Finding, Severity};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};
use crate::runconfig::pkg::Install;
use crate::runconfig::{loc, SpecContext, Subject};

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL104"),
    name: "cuda-toolkit-over-base",
    default_severity: Severity::Warning,
    other_severities: &[Severity::Info],
    summary: "A CUDA toolkit / CUDA libraries of another release are installed over the base image's CUDA",
    doc: RuleDoc {
        what: "Apt/yum/conda installs CUDA packages (cuda-toolkit-X-Y, cuda-X-Y, \
            nvidia-cuda-toolkit, cudatoolkit, the distribution's own CUDA packages such as \
            libcupti-dev, or NCCL / cuDNN builds for another CUDA) on an \
            image that already ships CUDA (nvidia/cuda, pytorch/pytorch, NGC).",
        why: "Two toolkits mean two nvcc and two sets of libcudart/cublas; which one a program \
            loads depends on PATH and loader order. Unpinned libnccl2/libcudnn upgrades (often \
            with --allow-change-held-packages) replace the versions the base image holds with \
            builds for a newer CUDA minor than the image has.",
        example: "`FROM nvidia/cuda:12.6.3-devel-ubuntu22.04` + `apt-get install -y \
            --allow-change-held-packages libnccl2 libnccl-dev`.",
        fix: "Pick a base image with the CUDA you need, or pin the packages to the base's CUDA \
            (`libnccl2=2.21.5-1+cuda12.6`, `cuda-nvcc-12-6`).",
        sources: &[
            "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html",
            "https://gitlab.com/nvidia/container-images/cuda/-/blob/master/doc/support-policy.md",
        ],
    },
};

/// `cuda-12-4`: NVIDIA's metapackage for a whole release (toolkit and driver).
fn is_cuda_meta(n: &str) -> bool {
    n.strip_prefix("cuda-")
        .and_then(|r| r.split_once('-'))
        .is_some_and(|(a, b)| {
            !a.is_empty()
                && !b.is_empty()
                && a.bytes().all(|c| c.is_ascii_digit())
                && b.bytes().all(|c| c.is_ascii_digit())
        })
}

/// Debian/Ubuntu's own CUDA packages (multiverse/non-free, built from the distribution's
/// CUDA release): `libcupti-dev`, `nvidia-cuda-dev`, `libcudart11.0`, `libcufft10`. NVIDIA's
/// repository names them `cuda-cupti-12-4`, `libcufft-12-4`. (Not cuBLAS: NVIDIA's CUDA 10
/// repository published `libcublas10` itself.)
fn is_distro_cuda_pkg(n: &str) -> bool {
    if matches!(
        n,
        "libcupti-dev" | "nvidia-cuda-dev" | "nvidia-cuda-toolkit-gcc" | "libcupti-doc"
    ) {
        return true;
    }
    [
        "libcupti",
        "libcudart",
        "libcufft",
        "libcurand",
        "libcusparse",
        "libnvrtc",
        "libcusolver",
    ]
    .iter()
    .any(|p| {
        n.strip_prefix(p)
            .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
    })
}

/// The table's entry point: this rule's findings on the context's subject.
pub fn check(cx: &SpecContext<'_>, out: &mut Vec<Finding>) {
    let s = &cx.subject;
    let Subject::Dockerfile(bf) = s else {
        return;
    };
    for st in bf.built_stages() {
        if !st.info.has_cuda() {
            continue;
        }
        let base = st.info.cuda;
        let base_s = base
            .map(|b| b.major_minor())
            .unwrap_or_else(|| "its own".into());
        let runtime_base = matches!(st.info.flavor.as_deref(), Some("runtime" | "base"));
        for i in &st.installs {
            match i {
                Install::Os(o) => {
                    for p in &o.pkgs {
                        let (n, ver, pos) = (&p.name, &p.version, &p.pos);
                        let n_l = n.to_ascii_lowercase();
                        let mut info_msg: Option<String> = None;
                        let toolkit =
                            n_l == "nvidia-cuda-toolkit" || n_l == "cuda" || n_l == "cuda-toolkit";
                        let cuda_pkg = n_l.starts_with("cuda-")
                            || n_l.starts_with("libcublas-")
                            || n_l.starts_with("libcusparse-")
                            || n_l.starts_with("libcufft-");
                        let msg = if is_distro_cuda_pkg(&n_l) {
                            Some(format!("`{n}` is the distribution's CUDA package (the CUDA release the OS packages, not the image's {base_s}): a second copy of those libraries, and the loader picks whichever comes first"))
                        } else if toolkit {
                            Some(format!("`{n}` installs a whole CUDA toolkit (its own version) on an image that already has CUDA {base_s}"))
                        } else if cuda_pkg {
                            match (p.cuda, base) {
                                (Some(v), Some(b))
                                    if !v.same_release(&b) && !n_l.starts_with("cuda-compat") =>
                                {
                                    Some(format!(
                                        "`{n}` installs CUDA {} packages on a CUDA {} image",
                                        v.major_minor(),
                                        b.major_minor()
                                    ))
                                }
                                // The same release's toolkit on a runtime image: it works, but
                                // the -devel image of that release already is exactly this.
                                (Some(v), Some(_))
                                    if runtime_base
                                        && (n_l.starts_with("cuda-toolkit-")
                                            || n_l.starts_with("cuda-nvcc-")
                                            || n_l.starts_with("cuda-libraries-dev-")
                                            || is_cuda_meta(&n_l)) =>
                                {
                                    info_msg = Some(format!(
                                        "`{n}` installs the CUDA {} toolkit on a runtime image of the same release: the `-devel` image already ships it (smaller, cached, and its packages held at matching versions)",
                                        v.major_minor()
                                    ));
                                    None
                                }
                                _ => None,
                            }
                        } else if n_l.starts_with("libnccl") || n_l.starts_with("libcudnn") {
                            let held = n_l.starts_with("libnccl")
                                && st.info.flavor.as_deref() != Some("base")
                                || n_l.starts_with("libcudnn") && st.info.cudnn.is_some();
                            match p.built_for_cuda {
                                Some(v) => match base {
                                    Some(b) if v.major != b.major || (v.major, v.minor) > (b.major, b.minor) => Some(format!(
                                        "`{n}={}` is built for CUDA {}, the image has CUDA {}",
                                        ver.as_deref().unwrap_or(""),
                                        v.major_minor(),
                                        b.major_minor()
                                    )),
                                    _ => None,
                                },
                                None if ver.is_none() && held => Some(format!(
                                    "unpinned `{n}` replaces the version the base image ships (and holds) with the newest in the CUDA repository, usually built for a newer CUDA than {base_s}"
                                )),
                                None => None,
                            }
                        } else {
                            None
                        };
                        if let Some(m) = msg {
                            out.push(
                                META.finding(m)
                                    .with_location(loc(&bf.file, *pos))
                                    .with_help("use a base image with the CUDA you need, or pin packages to the base's CUDA release"),
                            );
                        }
                        if let Some(m) = info_msg.take() {
                            out.push(
                                META.finding(m)
                                    .with_severity(Severity::Info)
                                    .with_location(loc(&bf.file, *pos))
                                    .with_help("start from the -devel variant of the base image instead of installing the toolkit"),
                            );
                        }
                    }
                }
                Install::Conda(c) => {
                    for p in &c.pkgs {
                        let (n, v, pos) = (&p.name, &p.spec, &p.pos);
                        // The same release as the base's CUDA is no second CUDA.
                        let same = p
                            .cuda
                            .zip(base)
                            .is_some_and(|(v, b)| (v.major, v.minor) == (b.major, b.minor));
                        if !same
                            && matches!(
                                n.as_str(),
                                "cudatoolkit"
                                    | "cuda-toolkit"
                                    | "cuda"
                                    | "cuda-nvcc"
                                    | "cuda-runtime"
                            )
                        {
                            out.push(
                                META.finding(format!("conda `{n}{}` adds a second CUDA next to the image's CUDA {base_s}", if v.is_empty() { String::new() } else { format!("={v}") }))
                                    .with_location(loc(&bf.file, *pos))
                                    .with_help("use the image's CUDA, or start from a base image without CUDA"),
                            );
                        }
                    }
                }
                Install::Pip(_) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::runconfig::testutil::dockerfile;

    #[test]
    fn distribution_cuda_packages_on_a_cuda_image() {
        let t = "FROM nvidia/cuda:12.2.2-devel-ubuntu20.04\nRUN apt-get update && apt-get install -y --no-install-recommends libsndfile-dev libcupti-dev libcudart10.1 libjpeg-dev\n";
        let f = dockerfile(t, "GL104", vec![]);
        assert_eq!(f.len(), 2, "{f:?}");
        assert!(
            f[0].message.contains("distribution's CUDA"),
            "{}",
            f[0].message
        );
        // NVIDIA's own packages of the image's release, and packages on a non-CUDA base, are not.
        let nv = "FROM nvidia/cuda:12.2.2-devel-ubuntu20.04\nRUN apt-get install -y libcublas-12-2 cuda-cupti-12-2\n";
        let cuda10 = "FROM nvidia/cuda:10.1-base-ubuntu18.04\nRUN apt-get install -y libcublas10=10.2.1.243-1\n";
        assert!(dockerfile(cuda10, "GL104", vec![]).is_empty());
        assert!(dockerfile(nv, "GL104", vec![]).is_empty());
        let plain = "FROM ubuntu:20.04\nRUN apt-get install -y libcupti-dev\n";
        assert!(dockerfile(plain, "GL104", vec![]).is_empty());
    }

    #[test]
    fn toolkits_and_held_packages() {
        let t = "FROM nvidia/cuda:12.6.3-cudnn-devel-ubuntu22.04\nRUN apt-get install -y --allow-change-held-packages libnccl2 libnccl-dev cuda-toolkit-12-1 cuda-nvcc-12-6\nRUN apt-get install -y libnccl2=2.26.2-1+cuda12.8\n";
        let f = dockerfile(t, "GL104", vec![]);
        assert_eq!(f.len(), 4, "{f:?}");
        let ok = "FROM nvidia/cuda:12.8.1-devel-ubuntu22.04\nRUN apt-get install -y libnccl2=2.26.2-1+cuda12.8 cuda-nvcc-12-8\n";
        assert!(dockerfile(ok, "GL104", vec![]).is_empty());
        // conda's cudatoolkit of the base's own release is no second CUDA.
        let t =
            "FROM nvidia/cuda:11.8.0-devel-ubuntu22.04\nRUN conda install -y cudatoolkit=11.8\n";
        assert!(
            dockerfile(t, "GL104", vec![]).is_empty(),
            "{:?}",
            dockerfile(t, "GL104", vec![])
        );
        let t =
            "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\nRUN conda install -y cudatoolkit=11.8\n";
        assert_eq!(dockerfile(t, "GL104", vec![]).len(), 1);
        // The same release's toolkit on a runtime base: use -devel (info).
        let t = "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN apt-get install -y cuda-toolkit-12-4\n";
        let f = dockerfile(t, "GL104", vec![]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, crate::finding::Severity::Info);
        assert!(f[0].message.contains("-devel"), "{}", f[0].message);
        assert!(dockerfile(
            "FROM ubuntu:22.04\nRUN apt-get install -y cuda-toolkit-12-4\n",
            "GL104",
            vec![]
        )
        .is_empty());
    }
}
