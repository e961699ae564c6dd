//! Image references (`registry/repo:tag@digest`) and what a tag says about the image:
//! `nvidia/cuda:<ver>-[cudnn[N]-]<flavor>-<os>`, `pytorch/pytorch:<torch>-cuda<ver>-cudnn<n>-
//! <flavor>`, `nvcr.io/nvidia/pytorch:YY.MM-py3` (CUDA from the facts), and the common
//! third-party spellings (`…-cuda11.3…`, `…-cu124-…`, `miniconda-cuda:11.3-devel`).

use crate::matrix::Facts;
use crate::version::CudaVersion;
use crate::vocab::Reference;

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ImageRef {
    /// `docker.io` when not written.
    pub registry: String,
    /// `nvidia/cuda`, `library/ubuntu` shortened to `ubuntu`.
    pub repo: String,
    pub tag: Option<String>,
    pub digest: Option<String>,
}

impl ImageRef {
    /// Cut by the one reference grammar ([`Reference::split`]), without judging characters:
    /// a Dockerfile's `FROM` may still hold `${VAR}`s, which the rules look at themselves.
    pub fn parse(s: &str) -> Option<ImageRef> {
        let s = s.trim();
        if s.contains(char::is_whitespace) || s.starts_with('-') {
            return None;
        }
        let r = Reference::split(s)?;
        Some(ImageRef {
            registry: r.registry(),
            repo: r.short_repository(),
            tag: r.tag,
            digest: r.digest,
        })
    }
    /// `nvcr.io/nvidia/pytorch` or `nvidia/cuda` (Docker Hub without the registry).
    pub fn full_repo(&self) -> String {
        if self.registry == "docker.io" {
            self.repo.clone()
        } else {
            format!("{}/{}", self.registry, self.repo)
        }
    }
}

/// Which family of known image a reference is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageKind {
    NvidiaCuda,
    PyTorch,
    NgcPyTorch,
    /// A tag or name that mentions CUDA / GPU; facts are inferred from the spelling.
    OtherGpu,
    Other,
}

/// What we know about an image from its reference alone.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageInfo {
    pub kind: ImageKind,
    pub cuda: Option<CudaVersion>,
    pub cudnn: Option<u32>,
    pub torch: Option<String>,
    /// `base`, `runtime`, `devel`.
    pub flavor: Option<String>,
    pub os: Option<String>,
    /// CUDA parsed from a third-party spelling rather than a known scheme.
    pub inferred: bool,
    /// Source of the CUDA fact when it came from a table.
    pub source: Option<String>,
}

impl ImageInfo {
    pub fn unknown() -> ImageInfo {
        ImageInfo {
            kind: ImageKind::Other,
            cuda: None,
            cudnn: None,
            torch: None,
            flavor: None,
            os: None,
            inferred: false,
            source: None,
        }
    }
    /// The image ships a CUDA toolkit / runtime of its own.
    pub fn has_cuda(&self) -> bool {
        self.cuda.is_some() || matches!(self.kind, ImageKind::NvidiaCuda | ImageKind::NgcPyTorch)
    }
    /// The image is meant to run on a GPU.
    pub fn is_gpu(&self) -> bool {
        self.kind != ImageKind::Other || self.cuda.is_some()
    }
}

fn parse_cuda_prefix(s: &str) -> Option<CudaVersion> {
    let v: String = s
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let v = v.trim_end_matches('.');
    if v.is_empty() || !v.contains('.') && v.len() > 2 {
        return None;
    }
    v.parse().ok()
}

/// `cuda11.3`, `cuda-11.3`, `cu124` / `cu118` anywhere in `s`.
fn find_cuda_in(s: &str) -> Option<CudaVersion> {
    let l = s.to_ascii_lowercase();
    let b = l.as_bytes();
    let mut i = 0;
    while let Some(p) = l[i..].find("cu") {
        let at = i + p;
        let before_ok = at == 0 || !b[at - 1].is_ascii_alphabetic();
        let rest = &l[at + 2..];
        if before_ok {
            if let Some(r) = rest.strip_prefix("da") {
                let r = r.trim_start_matches(['-', '_']);
                if let Some(v) = parse_cuda_prefix(r) {
                    if v.major >= 7 && v.major <= 20 {
                        return Some(v);
                    }
                }
            } else {
                let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
                let after = rest[digits.len()..].chars().next();
                if (digits.len() == 3 || digits.len() == 2)
                    && !after.map(|c| c.is_ascii_alphabetic()).unwrap_or(false)
                {
                    if let Some(v) = CudaVersion::from_cu_tag(&format!("cu{digits}")) {
                        if v.major >= 9 && v.major <= 20 {
                            return Some(v);
                        }
                    }
                }
            }
        }
        i = at + 2;
    }
    None
}

/// What a reference says. `facts` answers NGC tags.
pub fn image_info(r: &ImageRef, facts: &Facts) -> ImageInfo {
    let mut info = ImageInfo::unknown();
    let repo = r.repo.to_ascii_lowercase();
    let tag = r.tag.clone().unwrap_or_default();
    // nvidia/cudagl (discontinued) is nvidia/cuda plus OpenGL, built FROM it with the same tag
    // scheme: https://gitlab.com/nvidia/container-images/cudagl
    if (repo == "nvidia/cuda" || repo == "nvidia/cudagl")
        && (r.registry == "docker.io" || r.registry == "nvcr.io")
    {
        info.kind = ImageKind::NvidiaCuda;
        let parts: Vec<&str> = tag.split('-').collect();
        info.cuda = parts.first().and_then(|p| parse_cuda_prefix(p));
        for p in &parts[1.min(parts.len())..] {
            if let Some(n) = p.strip_prefix("cudnn") {
                info.cudnn = Some(n.parse().unwrap_or(0));
            } else if matches!(*p, "base" | "runtime" | "devel") {
                info.flavor = Some(p.to_string());
            }
        }
        if parts.len() >= 3 {
            info.os = parts.last().map(|s| s.to_string());
        }
        return info;
    }
    if repo == "pytorch/pytorch" {
        info.kind = ImageKind::PyTorch;
        let parts: Vec<&str> = tag.split('-').collect();
        if let Some(t) = parts.first() {
            if t.starts_with(|c: char| c.is_ascii_digit()) {
                info.torch = Some(t.to_string());
            }
        }
        for p in parts.iter().skip(1) {
            if let Some(v) = p.strip_prefix("cuda") {
                info.cuda = parse_cuda_prefix(v);
            } else if let Some(n) = p.strip_prefix("cudnn") {
                info.cudnn = n.parse().ok();
            } else if matches!(*p, "runtime" | "devel") {
                info.flavor = Some(p.to_string());
            }
        }
        return info;
    }
    if r.registry == "nvcr.io" && repo == "nvidia/pytorch" {
        info.kind = ImageKind::NgcPyTorch;
        info.flavor = Some("devel".into());
        if let Some(s) = facts.ngc_pytorch_cuda(&tag) {
            info.cuda = Some(s.value);
            info.source = Some(s.source);
        }
        return info;
    }
    if (repo == "tensorflow/tensorflow" || repo == "tensorflow/serving")
        && r.registry == "docker.io"
        && tag.contains("gpu")
    {
        info.kind = ImageKind::OtherGpu;
        if let Some(s) = tensorflow_version(&tag).and_then(|(a, b)| facts.tensorflow_cuda(a, b)) {
            info.cuda = Some(s.value);
            info.source = Some(s.source);
        }
        return info;
    }
    if let Some(s) = facts.image_cuda(&r.full_repo(), &tag) {
        info.kind = ImageKind::OtherGpu;
        info.cuda = Some(s.value);
        info.source = Some(s.source);
        return info;
    }
    let whole = format!("{repo}:{tag}");
    if let Some(v) = find_cuda_in(&whole) {
        info.kind = ImageKind::OtherGpu;
        info.cuda = Some(v);
        info.inferred = true;
    } else if repo.ends_with("-cuda") || repo.ends_with("/cuda") {
        // gpuci/miniconda-cuda:11.3-devel
        info.kind = ImageKind::OtherGpu;
        info.cuda = parse_cuda_prefix(&tag);
        info.inferred = true;
    } else if is_gpu_name(&whole) {
        info.kind = ImageKind::OtherGpu;
    }
    for f in ["devel", "runtime", "base"] {
        if whole.contains(f) {
            info.flavor = Some(f.into());
            break;
        }
    }
    info
}

/// TensorFlow's `major.minor` from an image tag (`2.15.0-gpu` → (2, 15)).
fn tensorflow_version(tag: &str) -> Option<(u32, u32)> {
    let ver = tag.split('-').next()?;
    let mut it = ver.split('.');
    let major: u32 = it.next()?.parse().ok()?;
    let minor: u32 = it.next()?.parse().ok()?;
    Some((major, minor))
}

/// A name or tag that announces a GPU build.
pub fn is_gpu_name(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    ["cuda", "gpu", "nvidia", "tensorrt", "cudnn", "-cu1", "_cu1"]
        .iter()
        .any(|k| l.contains(k))
        || l.starts_with("nvcr.io/")
}

/// Serving images published for NVIDIA GPUs only (other accelerators get other repositories
/// or tag suffixes, which are excluded): starting one without a GPU is a mistake.
/// - ghcr.io/huggingface/text-generation-inference: "optimized for Nvidia GPUs"; AMD and
///   Intel builds carry `-rocm` / `-intel` tags
///   (https://huggingface.co/docs/text-generation-inference/installation_nvidia,
///   https://huggingface.co/docs/text-generation-inference/installation_amd).
/// - vllm/vllm-openai: the CUDA build; ROCm is `rocm/vllm`, CPU builds are built locally
///   (https://docs.vllm.ai/en/latest/deployment/docker.html).
/// - ghcr.io/huggingface/text-embeddings-inference: CPU builds are tagged `cpu-*`
///   (https://huggingface.co/docs/text-embeddings-inference/supported_models).
const GPU_ONLY_IMAGES: &[&str] = &[
    "ghcr.io/huggingface/text-generation-inference",
    "vllm/vllm-openai",
    "ghcr.io/huggingface/text-embeddings-inference",
];

/// Images that bundle a CUDA runtime for their GPU path but also run on CPUs: starting one
/// without a GPU is fine (GL110), but its tag decides which CUDA, and so which driver, it needs
/// (GL118).
/// - ollama/ollama: bundles CUDA runner libraries, falls back to CPU
///   (https://github.com/ollama/ollama/blob/main/docs/docker.md, docs/gpu.md).
const GPU_CAPABLE_IMAGES: &[&str] = &["ollama/ollama"];

pub fn is_gpu_capable_image(s: &str) -> bool {
    is_gpu_only_image(s)
        || ImageRef::parse(s).is_some_and(|r| {
            GPU_CAPABLE_IMAGES.contains(&r.full_repo().as_str())
                && !r.tag.as_deref().unwrap_or("").contains("rocm")
        })
}

pub fn is_gpu_only_image(s: &str) -> bool {
    let Some(r) = ImageRef::parse(s) else {
        return false;
    };
    let name = r.full_repo();
    let tag = r.tag.as_deref().unwrap_or("").to_ascii_lowercase();
    GPU_ONLY_IMAGES.contains(&name.as_str())
        && !["cpu", "rocm", "intel", "xpu", "gaudi", "hpu", "neuron"]
            .iter()
            .any(|k| tag.contains(k))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::Facts;

    #[test]
    fn tensorflow_gpu_images_map_to_their_cuda() {
        let c = |s: &str| info(s).cuda.map(|v| v.major_minor());
        assert_eq!(
            c("tensorflow/tensorflow:1.15.0-gpu-py3").as_deref(),
            Some("10.0")
        );
        assert_eq!(c("tensorflow/tensorflow:1.8.0-gpu").as_deref(), Some("9.0"));
        assert_eq!(
            c("tensorflow/tensorflow:2.15.0-gpu").as_deref(),
            Some("12.2")
        );
        assert_eq!(c("tensorflow/serving:1.12.0-gpu").as_deref(), Some("9.0"));
        // Not in the table, or the CPU image: unknown.
        assert_eq!(c("tensorflow/tensorflow:9.9.0-gpu"), None);
        assert_eq!(c("tensorflow/tensorflow:2.15.0"), None);
        assert!(info("tensorflow/tensorflow:latest-gpu").is_gpu());
    }

    fn info(s: &str) -> ImageInfo {
        let f = Facts::embedded().unwrap();
        image_info(&ImageRef::parse(s).unwrap(), &f)
    }

    #[test]
    fn refs() {
        let r = ImageRef::parse("nvcr.io/nvidia/pytorch:25.06-py3").unwrap();
        assert_eq!(
            (r.registry.as_str(), r.repo.as_str(), r.tag.as_deref()),
            ("nvcr.io", "nvidia/pytorch", Some("25.06-py3"))
        );
        let r = ImageRef::parse("localhost:5000/x@sha256:abc").unwrap();
        assert_eq!(r.registry, "localhost:5000");
        assert_eq!(r.tag, None);
        assert_eq!(
            ImageRef::parse("library/ubuntu:22.04").unwrap().repo,
            "ubuntu"
        );
    }

    #[test]
    fn known_schemes() {
        let i = info("nvidia/cuda:12.4.1-cudnn-devel-ubuntu22.04");
        assert_eq!(i.cuda, Some("12.4.1".parse().unwrap()));
        assert_eq!(i.flavor.as_deref(), Some("devel"));
        assert_eq!(i.os.as_deref(), Some("ubuntu22.04"));
        let i = info("nvidia/cuda:10.1-cudnn7-devel-ubuntu18.04");
        assert_eq!((i.cuda, i.cudnn), (Some(CudaVersion::new(10, 1)), Some(7)));
        let i = info("nvidia/cudagl:10.1-runtime-ubuntu16.04");
        assert_eq!(i.kind, ImageKind::NvidiaCuda);
        assert_eq!(i.cuda, Some(CudaVersion::new(10, 1)));
        assert_eq!(i.os.as_deref(), Some("ubuntu16.04"));
        let i = info("pytorch/pytorch:2.6.0-cuda12.4-cudnn9-devel");
        assert_eq!(i.torch.as_deref(), Some("2.6.0"));
        assert_eq!(i.cuda, Some(CudaVersion::new(12, 4)));
        let i = info("nvcr.io/nvidia/pytorch:24.05-py3");
        assert_eq!(i.kind, ImageKind::NgcPyTorch);
        assert_eq!(i.cuda, Some("12.4.1".parse().unwrap()));
        // A release the NGC matrix does not hold: known kind, unknown CUDA (never guessed).
        let i = info("nvcr.io/nvidia/pytorch:25.06-py3");
        assert_eq!(i.kind, ImageKind::NgcPyTorch);
        assert_eq!(i.cuda, None);
        let i = info("axolotlai/axolotl-cloud:main-py3.11-cu124-2.6.0");
        assert_eq!(i.cuda, Some(CudaVersion::new(12, 4)));
        let i = info("gpuci/miniconda-cuda:11.3-devel-ubuntu18.04");
        assert_eq!(i.cuda, Some(CudaVersion::new(11, 3)));
        let i = info("msramcg/pytorch1.8.1-cuda11.1-cudnn8-runtime-pip20.1.1");
        assert_eq!(i.cuda, Some(CudaVersion::new(11, 1)));
        assert_eq!(info("ubuntu:22.04").kind, ImageKind::Other);
        assert_eq!(info("python:3.11-slim").cuda, None);
    }
}
