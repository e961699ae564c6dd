//! GL118: a base image or run image with no tag, `:latest`, or another floating tag.

use crate::finding::{Finding, Severity};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};
use crate::runconfig::dockerfile::Pos;
use crate::runconfig::image::{is_gpu_capable_image, is_gpu_name, ImageInfo, ImageRef};
use crate::runconfig::{loc, SpecContext, Subject};

pub static META: RuleMeta = RuleMeta {
    code: Code::new("GL118"),
    name: "image-tag-unpinned",
    default_severity: Severity::Warning,
    other_severities: &[],
    summary: "A base or run image has no tag, `:latest`, or another floating tag",
    doc: RuleDoc {
        what:
            "A Dockerfile `FROM` (after ARG substitution; not `scratch`, not an earlier stage), a \
            `docker run` image, a compose `image:` or a Kubernetes container image with no tag \
            (Docker then pulls `:latest`), with `:latest`, or with a floating alias of it \
            (`latest-gpu`, `latest-cuda`, `main-…`, `nightly`).",
        why:
            "Such a tag moves. For a GPU image that means the CUDA runtime inside, and with it the \
            minimum driver the host needs and the GPU architectures the binaries are built for, \
            changes on the next pull or node restart without any change in the repository: an \
            image that ran yesterday fails today with `CUDA driver version is insufficient` or \
            `no kernel image is available`. `nvidia/cuda` has no `latest` tag at all (NVIDIA \
            deprecated it), so an untagged `nvidia/cuda` does not pull. Images that are not GPU \
            images, and images built by the same compose file or script (`build:`, `docker build \
            -t`), are not reported; nor are one-component names (`bert`, `ubuntu`): they resolve \
            to Docker Hub's official library, which has no CUDA image, so they are an OS image \
            with no CUDA inside or an image built locally (by another script), which no registry \
            moves.",
        example: "`FROM pytorch/pytorch:latest`, `docker run --gpus all ollama/ollama`.",
        fix: "Pin a versioned tag that names the CUDA release \
            (`nvidia/cuda:12.4.1-runtime-ubuntu22.04`, \
            `pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime`), or pin a digest (`image@sha256:…`). \
            A digest is never reported.",
        sources: &[
            "https://docs.docker.com/build/building/best-practices/#pin-base-image-versions",
            "https://kubernetes.io/docs/concepts/containers/images/#image-names",
            "https://docs.docker.com/reference/cli/docker/image/tag/#description",
        ],
    },
};

/// Why a tag floats, or None when it is pinned.
fn floating(r: &ImageRef) -> Option<String> {
    if r.digest.is_some() {
        return None;
    }
    let Some(tag) = r.tag.as_deref() else {
        return Some("has no tag (Docker pulls `:latest`)".into());
    };
    let t = tag.to_ascii_lowercase();
    if t == "latest" {
        return Some("uses `:latest`".into());
    }
    let first = t.split(['-', '_']).next().unwrap_or("");
    let is_alias = t.starts_with("latest")
        || t.ends_with("-latest")
        || t.contains("-latest-")
        || matches!(first, "main" | "master" | "nightly" | "edge");
    is_alias.then(|| format!("uses the floating tag `:{tag}`"))
}

/// A reference we can judge (`reference`, read from `image`): no unexpanded variables or
/// placeholders, a lowercase repository.
fn plausible<'a>(image: &str, reference: Option<&'a ImageRef>) -> Option<&'a ImageRef> {
    if image
        .chars()
        .any(|c| "${}<>[]*\"'`()|,;=".contains(c) || c.is_whitespace())
    {
        return None;
    }
    // Docker's grammar (`FROM base-${TARGETARCH}` expands to `base-` here, a stage name, not
    // an image).
    crate::vocab::Reference::parse(image).ok()?;
    let r = reference?;
    (r.repo != "scratch").then_some(r)
}

struct Use<'a> {
    image: &'a str,
    /// The reference read from `image`, and what it is (resolved with the spec).
    reference: Option<&'a ImageRef>,
    info: Option<&'a ImageInfo>,
    file: &'a str,
    pos: Pos,
    gpu: bool,
}

fn judge(mut uses: Vec<Use>) -> Vec<Finding> {
    // GPU uses first, so the one reported for an image is where it matters (a README that
    // shows the CPU command before the `--gpus` one).
    uses.sort_by_key(|u| !u.gpu);
    // One finding per image and file (documentation repeats the same command).
    let mut out: Vec<Finding> = Vec::new();
    let mut seen: Vec<(&str, &str, usize)> = Vec::new();
    for u in &uses {
        let (Some(r), Some(info)) = (plausible(u.image, u.reference), u.info) else {
            continue;
        };
        let Some(why) = floating(r) else { continue };
        if let Some(s) = seen
            .iter_mut()
            .find(|(f, i, _)| *f == u.file && *i == u.image)
        {
            s.2 += 1;
            continue;
        }
        // A one-component name is Docker Hub's official library (`ubuntu` is
        // `docker.io/library/ubuntu`), which holds no CUDA image, or an image built on this
        // machine (`docker build -t bert`), which no registry moves: no CUDA release changes
        // with its tag.
        if r.registry == "docker.io" && !r.repo.contains('/') && !info.is_gpu() {
            continue;
        }
        let gpu = u.gpu || info.is_gpu() || is_gpu_name(u.image) || is_gpu_capable_image(u.image);
        if !gpu {
            // Not a GPU image: a floating tag there is general hygiene (hadolint DL3006/DL3007),
            // not a GPU compatibility risk.
            continue;
        }
        seen.push((u.file, u.image, 1));
        let repo = r.full_repo();
        let (sev, msg, help) = {
            let what = if repo == "nvidia/cuda" || repo == "nvcr.io/nvidia/cuda" {
                "nvidia/cuda publishes no `latest` tag, so this pull fails or gets a stale image; \
                 and the CUDA release"
                    .to_string()
            } else {
                "the CUDA release inside".to_string()
            };
            (
                Severity::Warning,
                format!(
                    "GPU image `{}` {why}: {what}, and so the minimum driver and the GPU \
                     architectures it runs on, change under you when the tag moves",
                    u.image
                ),
                format!(
                    "pin a versioned tag that names the CUDA release (e.g. `{}`) or a digest \
                     (`{repo}@sha256:…`)",
                    example(&repo)
                ),
            )
        };
        out.push(
            META.finding(msg)
                .with_severity(sev)
                .with_location(loc(u.file, u.pos))
                .with_help(help),
        );
    }
    // Mention repeats in the message of the first use.
    for (f, (_, _, n)) in out.iter_mut().zip(seen.iter()) {
        if *n > 1 {
            f.message.push_str(&format!(" ({n} uses in this file)"));
        }
    }
    out
}

fn example(repo: &str) -> String {
    match repo {
        "nvidia/cuda" | "nvcr.io/nvidia/cuda" => format!("{repo}:12.4.1-runtime-ubuntu22.04"),
        "pytorch/pytorch" => "pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime".into(),
        "nvcr.io/nvidia/pytorch" => "nvcr.io/nvidia/pytorch:24.05-py3".into(),
        _ => format!("{repo}:<version>"),
    }
}

/// The table's entry point: this rule's findings on the context's subject.
pub fn check(cx: &SpecContext<'_>, out: &mut Vec<Finding>) {
    out.extend(findings(&cx.subject, cx));
}

fn findings(s: &Subject, _cx: &SpecContext) -> Vec<Finding> {
    let uses: Vec<Use> = match s {
        Subject::Dockerfile(bf) => bf
            .built_stages()
            .filter(|st| st.parent.is_none() && !st.image_unresolved)
            .map(|st| Use {
                image: &st.image,
                reference: st.root_ref.as_ref(),
                info: Some(&st.info),
                file: &bf.file,
                pos: st.image_pos,
                gpu: st.info.is_gpu(),
            })
            .collect(),
        Subject::Runs(specs) => specs
            .iter()
            // A compose `image:` next to `build:` names what the build produces.
            // A compose `image:` next to `build:` (or built by another service / by the
            // script's `docker build -t`) names a local build.
            .filter(|r| !r.build)
            .filter_map(|r| {
                let image = r.image.as_ref()?;
                Some(Use {
                    image: &image.text,
                    reference: image.reference.as_ref(),
                    info: image.info.as_ref(),
                    file: &r.file,
                    pos: r.image_pos,
                    gpu: r.gpus.is_some()
                        || r.runtime.as_ref().is_some_and(|(rt, _)| rt == "nvidia")
                        || r.runtime_class
                            .as_ref()
                            .is_some_and(|(rc, _)| rc.contains("nvidia"))
                        || r.engine == "nvidia-docker",
                })
            })
            .collect(),
        Subject::Script(_) => Vec::new(),
    };
    judge(uses)
}

#[cfg(test)]
mod tests {
    use crate::finding::Severity;
    use crate::runconfig::testutil::{dockerfile, runs};

    fn df(text: &str) -> Vec<crate::finding::Finding> {
        dockerfile(text, "GL118", vec![])
    }

    #[test]
    fn tag_missing_and_latest() {
        let f = df("FROM nvidia/cuda\n");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0].message.contains("no tag"), "{}", f[0].message);
        assert!(f[0].message.contains("publishes no `latest`"));
        assert!(f[0].message.contains("minimum driver"));
        let f = df("FROM pytorch/pytorch:latest\nRUN pip install x\n");
        assert_eq!(f.len(), 1);
        assert!(f[0].message.contains("`:latest`"));
        assert!(f[0].message.contains("CUDA release"));
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(1));
        // Floating aliases of latest and branch tags.
        assert_eq!(df("FROM tensorflow/tensorflow:latest-gpu-py3\n").len(), 1);
        assert_eq!(
            df("FROM axolotlai/axolotl-cloud:main-py3.11-cu124-2.6.0\n").len(),
            1
        );
        // A non-GPU image is out of scope.
        assert!(df("FROM ubuntu\n").is_empty());
        // The third-party GPU base with no tag (corpus: mmcv).
        let f = df("FROM msramcg/pytorch1.8.1-cuda11.1-cudnn8-runtime-pip20.1.1\n");
        assert_eq!(f[0].severity, Severity::Warning);
    }

    #[test]
    fn pinned_digest_scratch_and_stages() {
        assert!(df("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n").is_empty());
        assert!(df("FROM nvidia/cuda@sha256:0123abcd\n").is_empty());
        assert!(df("FROM nvidia/cuda:latest@sha256:0123abcd\n").is_empty());
        assert!(df("FROM scratch\nCOPY a /a\n").is_empty());
        assert!(df("FROM localhost:5000/cuda:12.4.1-base\n").is_empty());
        let f = df(
            "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04 AS build\nRUN make\n\
             FROM build AS test\nRUN make test\nFROM scratch\nCOPY --from=build /a /a\n",
        );
        assert!(f.is_empty(), "{f:?}");
        // An unresolved ARG cannot be judged.
        assert!(df("ARG BASE\nFROM ${BASE}\n").is_empty());
    }

    #[test]
    fn arg_substitution() {
        let f = df("ARG TAG=latest\nFROM pytorch/pytorch:${TAG}\n");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(2));
        let f = df("ARG BASE=nvidia/cuda\nFROM $BASE\n");
        assert_eq!(f.len(), 1);
        // BuildKit's automatic platform ARGs select a stage, not an image.
        assert!(df("FROM almalinux:8 AS base-amd64\nFROM base-${TARGETARCH} AS base\n").is_empty());
        assert!(df("ARG CUDA=12.4.1\nFROM nvidia/cuda:${CUDA}-base-ubuntu22.04\n").is_empty());
    }

    #[test]
    fn runs_compose_k8s() {
        let f = runs(
            "sh",
            "docker run -d ollama/ollama\ndocker run --gpus all ollama/ollama serve\n",
            "GL118",
            vec![],
        );
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0].message.contains("2 uses"), "{}", f[0].message);
        // The use with GPUs is the one reported.
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(2));
        assert!(runs(
            "sh",
            "docker run --gpus all nvidia/cuda:12.4.1-base-ubuntu22.04 nvidia-smi\n",
            "GL118",
            vec![]
        )
        .is_empty());
        // Placeholders and variables are not references.
        assert!(runs("sh", "docker run --gpus all $IMAGE\n", "GL118", vec![]).is_empty());
        assert!(runs(
            "md",
            "```\ndocker run --gpus all <image>\n```\n",
            "GL118",
            vec![]
        )
        .is_empty());
        let f = runs(
            "compose",
            "services:\n  app:\n    image: libretranslate/libretranslate:latest-cuda\n",
            "GL118",
            vec![],
        );
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(3));
        assert_eq!(f[0].severity, Severity::Warning);
        // image: next to build: is the name of the build result.
        assert!(runs(
            "compose",
            "services:\n  app:\n    image: myapp\n    build: .\n",
            "GL118",
            vec![]
        )
        .is_empty());
        let k8s = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: c\nspec:\n  containers:\n  - name: c\n    image: ghcr.io/haveagitgat/tdarr_node\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n";
        let f = runs("k8s", k8s, "GL118", vec![]);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(8));
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(runs(
            "k8s",
            &k8s.replace("tdarr_node\n", "tdarr_node:2.17.01\n"),
            "GL118",
            vec![]
        )
        .is_empty());
    }

    #[test]
    fn inline_ignore() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("Dockerfile");
        std::fs::write(
            &p,
            "# gpulint ignore=GL118 rebuilt nightly on purpose\nFROM pytorch/pytorch:latest\n",
        )
        .unwrap();
        let c = crate::runconfig::testutil::ctx(vec![]);
        let args = crate::cli::DockerfileArgs {
            paths: vec![p.clone()],
            ..Default::default()
        };
        let f = crate::commands::runconfig::cmd_dockerfile(&args, &c).unwrap();
        assert!(
            !f.iter().any(|x| x.rule == "GL118" || x.rule == "GL199"),
            "{f:?}"
        );
        std::fs::write(&p, "FROM pytorch/pytorch:latest\n").unwrap();
        let f = crate::commands::runconfig::cmd_dockerfile(&args, &c).unwrap();
        assert!(f.iter().any(|x| x.rule == "GL118"), "{f:?}");
    }

    #[test]
    fn images_built_locally_are_not_reported() {
        let sh = "docker build -t myorg/cuda-app .\ndocker run --gpus all myorg/cuda-app\ndocker run --gpus all nvidia/cuda\n";
        let f = runs("sh", sh, "GL118", vec![]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(3));
        let c = "services:\n  build-it:\n    build: .\n    image: myorg/cuda-app:latest\n  use-it:\n    image: myorg/cuda-app:latest\n    runtime: nvidia\n";
        assert!(runs("compose", c, "GL118", vec![]).is_empty());
        // A CPU/GPU image bundling CUDA is judged as a GPU image even when started on CPU.
        let c = "services:\n  ollama:\n    image: ollama/ollama:latest\n";
        assert_eq!(runs("compose", c, "GL118", vec![]).len(), 1);
    }

    #[test]
    fn one_component_names_are_local_or_os_images() {
        // `bert` built by another script, `ubuntu` from the official library: no CUDA inside
        // moves with the tag; a namespaced image on the same line still counts.
        let sh = "docker run --gpus all bert python run.py
docker run --gpus all ubuntu nvidia-smi
docker run --gpus all docker.io/library/ubuntu nvidia-smi
docker run --gpus all myorg/bert
";
        let f = runs("sh", sh, "GL118", vec![]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].location.as_ref().unwrap().line, Some(4));
    }
}
