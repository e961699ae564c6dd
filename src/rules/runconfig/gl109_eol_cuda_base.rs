//! GL109: base image (or run image) on an end-of-life CUDA release or OS.

use crate::finding::{Finding, Severity};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};
use crate::runconfig::dockerfile::Pos;
use crate::runconfig::image::ImageInfo;
use crate::runconfig::{loc, SpecContext, Subject};
use crate::version::CudaVersion;

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL109"),
    name: "eol-cuda-image",
    default_severity: Severity::Warning,
    other_severities: &[Severity::Info],
    summary: "The image is built on an end-of-life CUDA release or operating system",
    doc: RuleDoc {
        what: "The base image (or the image a run configuration starts) has a CUDA release whose \
            container images NVIDIA no longer supports (CUDA < 11.8), or an OS past its end of \
            life (Ubuntu 18.04, CentOS 7); or the Dockerfile installs such a CUDA itself on a \
            base without CUDA (apt/yum `cuda-toolkit-10-2`, conda `cudatoolkit=10.1`, the \
            `cuda_10.2.89_…_linux.run` runfile). A release chosen by an ARG default (`ARG \
            CUDA_VERSION=11.3.1` … `FROM nvidia/cuda:${CUDA_VERSION}-…`) is reported at that ARG, \
            where it is changed.",
        why:
            "EOL nvidia/cuda tags are no longer rebuilt and are being deleted from the registries, \
            so builds start failing on pull; old CUDA has no code for newer GPUs (CUDA 10 \
            predates Ampere, CUDA 11.x before 11.8 predates Hopper), and EOL distributions get no \
            security fixes.",
        example: "`FROM nvidia/cuda:10.1-cudnn7-devel-ubuntu18.04`.",
        fix: "Move to a supported CUDA (12.x) on a supported OS, and rebuild the framework for it.",
        sources: &[
            "https://gitlab.com/nvidia/container-images/cuda/-/blob/master/doc/support-policy.md",
        ],
    },
};

/// Where a version read from the image is changed: the global ARG default the FROM expands
/// into it (`ARG CUDA_VERSION=11.3.1` … `FROM nvidia/cuda:${CUDA_VERSION}-…`), else the image
/// reference itself. (position, " (… from `ARG …`)" for the message)
fn version_site(version: &str, args: &[(String, String, Pos)], pos: Pos) -> (Pos, String) {
    match args
        .iter()
        .find(|(_, v, _)| !version.is_empty() && v.contains(version))
    {
        Some((n, v, p)) => (
            *p,
            format!(" (`ARG {n}={v}`, used by the FROM on line {})", pos.line),
        ),
        None => (pos, String::new()),
    }
}

fn judge(
    info: &ImageInfo,
    image: &str,
    file: &str,
    (pos, args): (Pos, &[(String, String, Pos)]),
    cx: &SpecContext,
    out: &mut Vec<Finding>,
) {
    if let Some(c) = info.cuda {
        if let Some(e) = cx.facts.cuda_eol(c) {
            let (at, from) = version_site(&c.major_minor(), args, pos);
            out.push(
                META.finding(format!(
                    "`{image}` is CUDA {c}{}{from}: CUDA {} images are end of life",
                    if info.inferred {
                        " (from its name)"
                    } else {
                        ""
                    },
                    e.value
                ))
                .with_location(loc(file, at))
                .with_help(format!(
                    "move to a supported CUDA release; policy: {}",
                    e.source
                )),
            );
            return;
        }
    }
    if let Some(os) = &info.os {
        if let Some(e) = cx.facts.os_eol(os) {
            let release = os.trim_start_matches(|c: char| c.is_ascii_alphabetic());
            let (at, from) = version_site(release, args, pos);
            out.push(
                META.finding(format!(
                    "`{image}` is based on {os}{from}, end of life since {}",
                    e.value
                ))
                .with_severity(Severity::Info)
                .with_location(loc(file, at))
                .with_help(format!(
                    "use a supported OS flavor of the image; {}",
                    e.source
                )),
            );
        }
    }
}

/// The table's entry point: this rule's findings on the context's subject.
pub fn check(cx: &SpecContext<'_>, out: &mut Vec<Finding>) {
    out.extend(findings(&cx.subject, cx));
}

fn findings(s: &Subject, cx: &SpecContext) -> Vec<Finding> {
    let mut out = Vec::new();
    match s {
        Subject::Dockerfile(bf) => {
            for st in bf.built_stages().filter(|s| s.parent.is_none()) {
                let site = (st.image_pos, st.image_args.as_slice());
                judge(&st.info, &st.image, &bf.file, site, cx, &mut out);
            }
            // An end-of-life CUDA installed by the Dockerfile itself on a base without CUDA.
            for st in bf.built_stages() {
                if st.info.has_cuda() {
                    continue;
                }
                // One release installed by several packages (cuda-cudart-11-2,
                // cuda-libraries-11-2, libcudnn8=…+cuda11.2) is one problem: reported at its
                // first package, counting the others.
                let installed = st.installed_cuda();
                for (i, (v, what, pos)) in installed.iter().enumerate() {
                    let same = |o: &(CudaVersion, String, Pos)| o.0.same_release(v);
                    if installed[..i].iter().any(same) {
                        continue;
                    }
                    let Some(e) = cx.facts.cuda_eol(*v) else {
                        continue;
                    };
                    let more = installed[i + 1..].iter().filter(|o| same(o)).count();
                    let (v, pos) = (*v, *pos);
                    let f = META
                        .finding(format!(
                            "`{what}`{} installs CUDA {}: CUDA {} is end of life",
                            match more {
                                0 => String::new(),
                                1 => " (and 1 more package of that release)".to_string(),
                                n => format!(" (and {n} more packages of that release)"),
                            },
                            v.major_minor(),
                            e.value
                        ))
                        .with_location(loc(&bf.file, pos))
                        .with_help(format!(
                            "install a supported CUDA release; policy: {}",
                            e.source
                        ));
                    if !out
                        .iter()
                        .any(|o| o.location == f.location && o.message == f.message)
                    {
                        out.push(f);
                    }
                }
            }
        }
        Subject::Runs(specs) => {
            for r in specs.iter() {
                if let Some(info) = r.image.as_ref().and_then(|i| i.info.as_ref()) {
                    judge(
                        info,
                        r.image_text().unwrap_or(""),
                        &r.file,
                        (r.image_pos, &[]),
                        cx,
                        &mut out,
                    );
                }
            }
        }
        Subject::Script(_) => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::finding::Severity;
    use crate::runconfig::testutil::{dockerfile, runs};

    #[test]
    fn a_version_from_an_arg_default_is_reported_at_the_arg() {
        let d = "ARG CUDA_VERSION=11.3.1\nARG UBUNTU=22.04\nARG BASE=nvidia/cuda:${CUDA_VERSION}-cudnn8-devel-ubuntu${UBUNTU}\nARG BASE=${BASE:-ubuntu:${UBUNTU}}\nFROM ${BASE}\n";
        let f = dockerfile(d, "GL109", vec![]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(1));
        assert!(
            f[0].message
                .contains("(`ARG CUDA_VERSION=11.3.1`, used by the FROM on line 5)"),
            "{}",
            f[0].message
        );
        // Written in the FROM itself: reported there.
        let f = dockerfile(
            "ARG UBUNTU=22.04\nFROM nvidia/cuda:11.3.1-devel-ubuntu${UBUNTU}\n",
            "GL109",
            vec![],
        );
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(2));
    }

    #[test]
    fn a_published_image_whose_tag_does_not_spell_its_cuda() {
        // k8s.gcr.io/cuda-vector-add:v0.1 is built FROM nvidia/cuda:8.0-devel-ubuntu16.04.
        let k = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    image: \"k8s.gcr.io/cuda-vector-add:v0.1\"\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n";
        let f = crate::runconfig::testutil::runs("k8s", k, "GL109", vec![]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("CUDA 8"), "{}", f[0].message);
        let other = k.replace("v0.1", "v0.2");
        assert!(crate::runconfig::testutil::runs("k8s", &other, "GL109", vec![]).is_empty());
    }

    #[test]
    fn eol_bases() {
        let f = dockerfile(
            "ARG CUDA=10.1\nFROM nvidia/cuda:${CUDA}-cudnn7-devel-ubuntu18.04\n",
            "GL109",
            vec![],
        );
        assert_eq!(f.len(), 1);
        // At the ARG that chooses the release (see a_version_from_an_arg_default_…).
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(1));
        let f = dockerfile(
            "FROM nvidia/cuda:12.2.2-devel-ubuntu18.04\n",
            "GL109",
            vec![],
        );
        assert_eq!(f[0].severity, Severity::Info);
        assert!(dockerfile(
            "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\n",
            "GL109",
            vec![]
        )
        .is_empty());
        // EOL CUDA installed on a non-CUDA base: apt, conda, runfile; not a supported one.
        let t = "FROM ubuntu:18.04\nRUN apt-get install -y cuda-toolkit-10-2 cuda-toolkit-12-4\nRUN conda install -y cudatoolkit=10.1 -c nvidia\nRUN wget https://x/cuda_11.3.1_465.19.01_linux.run && sh cuda_11.3.1_465.19.01_linux.run --silent --toolkit\n";
        let f = dockerfile(t, "GL109", vec![]);
        let got: Vec<_> = f
            .iter()
            .map(|f| {
                (
                    f.location.as_ref().unwrap().line.unwrap(),
                    f.message.clone(),
                )
            })
            .collect();
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(
            got.iter().any(|(l, m)| *l == 2 && m.contains("CUDA 10.2")),
            "{got:?}"
        );
        assert!(!got.iter().any(|(_, m)| m.contains("12.4")), "{got:?}");
        assert!(
            got.iter().any(|(l, m)| *l == 3 && m.contains("CUDA 10.1")),
            "{got:?}"
        );
        assert!(
            got.iter().any(|(l, m)| *l == 4 && m.contains("CUDA 11.3")),
            "{got:?}"
        );
        // On a CUDA base the base image is what is judged (GL104 covers a second toolkit).
        assert!(dockerfile(
            "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\nRUN apt-get install -y cuda-toolkit-10-2\n",
            "GL109",
            vec![]
        )
        .is_empty());
        assert_eq!(
            runs(
                "sh",
                "docker run --gpus all pytorch/pytorch:1.2-cuda10.0-cudnn7-runtime\n",
                "GL109",
                vec![]
            )
            .len(),
            1
        );
    }

    /// CUDA installed by a RUN on a base without it, by several packages of one release or by
    /// a library pinned to a CUDA build (TensorFlow's libcudnn7=…+cuda10.0): one finding per
    /// release, at its first package.
    #[test]
    fn cuda_installed_by_packages_is_one_finding_per_release() {
        let d = "FROM ubuntu:18.04\nRUN apt-get update && apt-get install -y --no-install-recommends \\\n    cuda-cudart-11-2=11.2.152-1 \\\n    cuda-libraries-11-2=11.2.2-1 \\\n    libcublas-11-2=11.4.1.1043-1\n";
        let f: Vec<_> = dockerfile(d, "GL109", vec![])
            .into_iter()
            .filter(|f| f.message.contains("installs CUDA"))
            .collect();
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(3));
        assert!(f[0].message.contains("1 more package"), "{}", f[0].message);
        let tf = "FROM ubuntu:18.04\nRUN apt-get install -y libcudnn7=7.6.5.32-1+cuda10.0\n";
        let f = dockerfile(tf, "GL109", vec![]);
        assert!(
            f.iter().any(|f| f.message.contains("installs CUDA 10.0")),
            "{f:?}"
        );
    }
}
