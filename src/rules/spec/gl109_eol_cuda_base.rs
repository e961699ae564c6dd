//! GL109: base image (or run image) on an end-of-life CUDA release or OS.

use crate::finding::{Finding, Severity};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};
use crate::spec::dockerfile::Pos;
use crate::spec::image::{image_info, ImageInfo, ImageRef};
use crate::spec::{loc, RuleCtx, Subject};

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL109"),
    name: "eol-cuda-image",
    default_severity: Severity::Warning,
    other_severities: &[Severity::Info],
    summary: "The image is built on an end-of-life CUDA release or operating system",
    doc: RuleDoc {
        what: "The base image (or the image a run configuration starts) has a CUDA release whose \
            container images NVIDIA no longer supports (CUDA < 11.8), or an OS past its end of \
            life (Ubuntu 18.04, CentOS 7).",
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

fn judge(
    info: &ImageInfo,
    image: &str,
    file: &str,
    pos: Pos,
    cx: &RuleCtx,
    out: &mut Vec<Finding>,
) {
    if let Some(c) = info.cuda {
        if let Some(e) = cx.facts.cuda_eol(c) {
            out.push(
                META.finding(format!(
                    "`{image}` is CUDA {c}{}: CUDA {} images are end of life",
                    if info.inferred {
                        " (from its name)"
                    } else {
                        ""
                    },
                    e.value
                ))
                .with_location(loc(file, pos))
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
            out.push(
                META.finding(format!(
                    "`{image}` is based on {os}, end of life since {}",
                    e.value
                ))
                .with_severity(Severity::Info)
                .with_location(loc(file, pos))
                .with_help(format!(
                    "use a supported OS flavor of the image; {}",
                    e.source
                )),
            );
        }
    }
}

pub fn check(s: &Subject, cx: &RuleCtx) -> Vec<Finding> {
    let mut out = Vec::new();
    match s {
        Subject::Dockerfile(bf) => {
            for st in bf.built_stages().filter(|s| s.parent.is_none()) {
                judge(&st.info, &st.image, &bf.file, st.image_pos, cx, &mut out);
            }
        }
        Subject::Runs(specs) => {
            for r in specs.iter() {
                if let Some(img) = r.image.as_deref().and_then(ImageRef::parse) {
                    let info = image_info(&img, cx.facts);
                    judge(
                        &info,
                        r.image.as_deref().unwrap_or(""),
                        &r.file,
                        r.image_pos,
                        cx,
                        &mut out,
                    );
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::finding::Severity;
    use crate::spec::testutil::{dockerfile, runs};

    #[test]
    fn eol_bases() {
        let f = dockerfile(
            "ARG CUDA=10.1\nFROM nvidia/cuda:${CUDA}-cudnn7-devel-ubuntu18.04\n",
            "GL109",
            vec![],
        );
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(2));
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
}
