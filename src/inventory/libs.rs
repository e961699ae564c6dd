//! Pure classification of library file names and paths: which CUDA library or driver file a
//! name is (`libcudart.so.12.1.105` → cudart 12.1.105), where it came from (stubs, the
//! forward-compat package, a pip wheel, bundled in a framework, conda, the system), and which
//! pip dist would own it when no RECORD says so.

use crate::inventory::LibraryProvider;
use crate::version::{CudaTag, CudaVersion};
use crate::vocab::ImagePath;

/// A shared-object file name split up: `libcudart-d0da41ae.so.11.0` →
/// stem `cudart`, suffix `11.0`, hashed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SoName {
    /// The name without `lib`, `.so…` and an auditwheel hash (`-d0da41ae`).
    pub stem: String,
    /// What follows `.so.` ("12.1.105"), if anything.
    pub suffix: Option<String>,
    /// Whether the name carries an auditwheel/delvewheel hash.
    pub hashed: bool,
    pub has_lib_prefix: bool,
}

impl SoName {
    pub fn suffix_parts(&self) -> usize {
        self.suffix.as_deref().map_or(0, |s| s.split('.').count())
    }
}

fn is_version_suffix(s: &str) -> bool {
    !s.is_empty()
        && s.split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// Split a shared-object file name; None for anything else (`.a`, headers, `x.so.bak`).
pub fn parse_so_name(file: &str) -> Option<SoName> {
    let (i, rest) = file.match_indices(".so").find_map(|(i, _)| {
        let rest = &file[i + 3..];
        (rest.is_empty() || rest.strip_prefix('.').is_some_and(is_version_suffix))
            .then_some((i, rest))
    })?;
    let raw = &file[..i];
    let (raw, has_lib_prefix) = match raw.strip_prefix("lib") {
        Some(r) => (r, true),
        None => (raw, false),
    };
    if raw.is_empty() {
        return None;
    }
    // auditwheel writes `libx-<8 hex>.so.N`; some wheels use `libx.<8 hex>.so.N`.
    let is_hash = |h: &str| {
        h.len() == 8
            && h.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    let (stem, hashed) = match raw.rsplit_once(['-', '.']) {
        Some((s, h)) if is_hash(h) && !s.is_empty() => (s, true),
        _ => (raw, false),
    };
    Some(SoName {
        stem: stem.to_string(),
        suffix: rest.strip_prefix('.').map(str::to_string),
        hashed,
        has_lib_prefix,
    })
}

/// What a library stem is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LibKind {
    /// A CUDA runtime-side library, by family name ("cudart", "cudnn_ops", …).
    Cuda(String),
    /// A user-space driver library ("libcuda", "libnvidia-ml", …).
    Driver(String),
}

const CUDA_EXACT: &[&str] = &[
    "cudart",
    "cublas",
    "cublasLt",
    "cudnn",
    "nccl",
    "nvrtc",
    "nvrtc-builtins",
    "nvJitLink",
    "nvjitlink",
    "cufft",
    "cufftw",
    "curand",
    "cusparse",
    "cusparseLt",
    "cusolver",
    "cusolverMg",
    "cupti",
    "nvperf_host",
    "nvperf_target",
    "pcsamplingutil",
    "nvToolsExt",
    "nvtx3interop",
    "nvjpeg",
    "nvjpeg2k",
    "cufile",
    "cufile_rdma",
    "cudla",
    "nvblas",
    "nvfatbin",
    "nvvm",
    "cudss",
    "cutensor",
    "cutensorMg",
    "nvonnxparser",
    "nvparsers",
    "nvshmem_host",
];

/// Prefixes of CUDA library families with many members.
const CUDA_PREFIX: &[&str] = &[
    "cudnn_",   // cudnn_ops, cudnn_cnn, cudnn_engines_*, cudnn_ops_infer, …
    "npp",      // nppc, nppial, nppicc, …
    "nvinfer",  // nvinfer, nvinfer_plugin, nvinfer_lean, nvinfer_dispatch
    "nvshmem_", // nvshmem_bootstrap_*, nvshmem_transport_*
    "cutensor", // cutensor variants
];

/// Classify a library stem. `libcuda` and other driver files count as driver libraries here;
/// the caller decides that one inside `stubs/` or `compat/` is not a driver install.
/// Whether a NEEDED name is a CUDA runtime-side library (cudart, cuBLAS, cuDNN, NCCL, …),
/// not a driver library.
pub fn is_cuda_runtime_lib(file: &str) -> bool {
    matches!(
        parse_so_name(file).and_then(|so| classify_stem(&so)),
        Some(LibKind::Cuda(_))
    )
}

pub fn classify_stem(so: &SoName) -> Option<LibKind> {
    let stem = so.stem.as_str();
    // `libnvrtc.alt.so.13` / `libnvrtc-builtins.alt.so.13.0`: the alternate builds.
    let base = stem.strip_suffix(".alt").unwrap_or(stem);
    if so.has_lib_prefix {
        if base == "cuda"
            || base == "cudadebugger"
            || base == "nvcuvid"
            || base == "nvoptix"
            || base.starts_with("nvidia-")
            || base.ends_with("_nvidia")
        {
            return Some(LibKind::Driver(format!("lib{base}")));
        }
        if CUDA_EXACT.contains(&base) || CUDA_PREFIX.iter().any(|p| base.starts_with(p)) {
            let name = if base == "nvjitlink" {
                "nvJitLink"
            } else {
                base
            };
            return Some(LibKind::Cuda(name.to_string()));
        }
    } else if base.starts_with("nvshmem_") {
        // nvshmem plugins ship without the `lib` prefix.
        return Some(LibKind::Cuda(base.to_string()));
    }
    None
}

/// The version in a file name, when the name says more than the soname major:
/// `libcudart.so.12.1.105` → 12.1.105, `libnvrtc-builtins.so.13.0` → 13.0.
pub fn file_name_version(so: &SoName) -> Option<String> {
    (so.suffix_parts() >= 2)
        .then(|| so.suffix.clone())
        .flatten()
}

/// Whether the file name carries the full version (three or more components).
pub fn has_full_version(so: &SoName) -> bool {
    so.suffix_parts() >= 3
}

/// The soname ld.so would look for, derived from the file name when the ELF's DT_SONAME is
/// unknown: `libcudart.so.12.1.105` → `libcudart.so.12`; `libnvrtc-builtins.so.13.0.88` →
/// `libnvrtc-builtins.so.13.0`; a name with no version (`libcuda.so` in stubs) → None.
pub fn derived_soname(file: &str, so: &SoName) -> Option<String> {
    let suffix = so.suffix.as_deref()?;
    let parts: Vec<&str> = suffix.split('.').collect();
    if so.hashed || parts.len() <= 2 {
        return Some(file.to_string());
    }
    let keep = if so.stem.starts_with("nvrtc-builtins") {
        2
    } else {
        1
    };
    let head = file.strip_suffix(suffix)?;
    Some(format!("{head}{}", parts.get(..keep)?.join(".")))
}

/// The soname of a driver library, which its versioned file name does not show
/// (`libcuda.so.530.30.02` has DT_SONAME `libcuda.so.1`).
pub fn driver_soname(name: &str) -> Option<String> {
    let major = match name {
        "libnvidia-nvvm" => 4,
        "libGLX_nvidia" | "libEGL_nvidia" => 0,
        "libGLESv2_nvidia" => 2,
        n if n.starts_with("libnvidia-") || n.starts_with("lib") => 1,
        _ => return None,
    };
    Some(format!("{name}.so.{major}"))
}

/// Where a library sits, judged from its path alone (ownership can refine PipWheel/Bundled).
pub fn provider_from_path(components: &[&str], conda_prefix: bool) -> LibraryProvider {
    if components.contains(&"stubs") {
        return LibraryProvider::Stub;
    }
    if let Some(i) = components.iter().position(|c| *c == "compat") {
        if components[..i].iter().any(|c| c.starts_with("cuda")) {
            return LibraryProvider::ForwardCompat;
        }
    }
    if let Some(i) = components
        .iter()
        .position(|c| *c == "site-packages" || *c == "dist-packages")
    {
        return match components.get(i + 1) {
            Some(&"nvidia") => LibraryProvider::PipWheel,
            _ => LibraryProvider::Bundled,
        };
    }
    if conda_prefix {
        return LibraryProvider::Conda;
    }
    match components.first() {
        Some(&"usr") | Some(&"lib") | Some(&"lib64") => LibraryProvider::System,
        _ => LibraryProvider::Other,
    }
}

/// The release of the toolkit directory a path lies in: `/usr/local/cuda-12.1/lib64/…` →
/// 12.1 (major and minor only; the first such directory counts).
pub fn toolkit_dir_release(path: &ImagePath) -> Option<CudaVersion> {
    path.components().find_map(|part| {
        let v = part.strip_prefix("cuda-")?.parse::<CudaVersion>().ok()?;
        Some(CudaVersion::new(v.major, v.minor))
    })
}

/// For a library under `site-packages/nvidia/<dir>/lib/` with no RECORD to say who owns it:
/// the dist-name stems that would (`nvidia-<stem>` or `nvidia-<stem>-cuNN`).
pub fn nvidia_dist_stems(dir: &str, family: &str) -> Vec<String> {
    if CudaTag::parse(dir).is_none() {
        return vec![dir.replace('_', "-").to_ascii_lowercase()];
    }
    // The CUDA 13 layout puts every toolkit wheel into nvidia/cu13/lib: go by family.
    let f = family.strip_suffix(".alt").unwrap_or(family);
    let stem = match f {
        "cudart" => "cuda-runtime",
        "cublas" | "cublasLt" | "nvblas" => "cublas",
        "nvrtc" | "nvrtc-builtins" => "cuda-nvrtc",
        "nvJitLink" => "nvjitlink",
        "cufft" | "cufftw" => "cufft",
        "curand" => "curand",
        "cusparse" => "cusparse",
        "cusolver" | "cusolverMg" => "cusolver",
        "cupti" | "nvperf_host" | "nvperf_target" | "pcsamplingutil" => "cuda-cupti",
        "nvToolsExt" | "nvtx3interop" => "nvtx",
        "nvjpeg" => "nvjpeg",
        "cufile" | "cufile_rdma" => "cufile",
        "nvfatbin" => "nvfatbin",
        "nvvm" => "cuda-nvcc",
        f if f.starts_with("npp") => "npp",
        _ => return vec![],
    };
    vec![stem.to_string()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn so(s: &str) -> SoName {
        parse_so_name(s).unwrap()
    }
    fn kind(s: &str) -> Option<LibKind> {
        classify_stem(&so(s))
    }

    #[test]
    fn splits_names() {
        let s = so("libcudart.so.12.1.105");
        assert_eq!(
            (s.stem.as_str(), s.suffix.as_deref()),
            ("cudart", Some("12.1.105"))
        );
        let s = so("libcudart-d0da41ae.so.11.0");
        assert_eq!(s.stem, "cudart");
        assert!(s.hashed);
        assert_eq!(so("libnvrtc.alt.so.13").stem, "nvrtc.alt");
        let s = so("libnvjpeg.f00ca762.so.12");
        assert_eq!((s.stem.as_str(), s.hashed), ("nvjpeg", true));
        assert_eq!(
            so("libnvrtc-builtins.alt.so.13.0").stem,
            "nvrtc-builtins.alt"
        );
        assert_eq!(so("libcuda.so").suffix, None);
        assert!(parse_so_name("libcudart_static.a").is_none());
        assert!(parse_so_name("libfoo.so.bak").is_none());
        assert!(parse_so_name("x.sock").is_none());
    }

    #[test]
    fn classifies_cuda_and_driver_libs() {
        // Every library of the real CUDA 13 pip layout (nvidia_tree.txt) that is CUDA.
        for (f, fam) in [
            ("libcublasLt.so.13", "cublasLt"),
            ("libcudart.so.13", "cudart"),
            ("libcufftw.so.12", "cufftw"),
            ("libcufile_rdma.so.1", "cufile_rdma"),
            ("libcusolverMg.so.12", "cusolverMg"),
            ("libnvJitLink.so.13", "nvJitLink"),
            ("libnvrtc.alt.so.13", "nvrtc"),
            ("libnvrtc-builtins.alt.so.13.0", "nvrtc-builtins"),
            ("libnvtx3interop.so.1", "nvtx3interop"),
            (
                "libcudnn_engines_precompiled.so.9",
                "cudnn_engines_precompiled",
            ),
            ("libcudnn_ops_infer.so.8", "cudnn_ops_infer"),
            ("libcusparseLt.so.0", "cusparseLt"),
            ("libnvshmem_host.so.3", "nvshmem_host"),
            ("nvshmem_bootstrap_uid.so.3", "nvshmem_bootstrap_uid"),
            ("libnppial.so.12", "nppial"),
            ("libnvinfer_plugin.so.8", "nvinfer_plugin"),
        ] {
            assert_eq!(kind(f), Some(LibKind::Cuda(fam.into())), "{f}");
        }
        for (f, n) in [
            ("libcuda.so.535.104.05", "libcuda"),
            ("libnvidia-ml.so.1", "libnvidia-ml"),
            (
                "libnvidia-ptxjitcompiler.so.580.159.04",
                "libnvidia-ptxjitcompiler",
            ),
            ("libcudadebugger.so.1", "libcudadebugger"),
            ("libEGL_nvidia.so.0", "libEGL_nvidia"),
        ] {
            assert_eq!(kind(f), Some(LibKind::Driver(n.into())), "{f}");
        }
        for f in [
            "libtorch_cuda.so",
            "libc10_cuda.so",
            "libcaffe2_nvrtc.so",
            "libgomp.so.1",
            "libc.so.6",
        ] {
            assert_eq!(kind(f), None, "{f}");
        }
    }

    #[test]
    fn versions_and_sonames() {
        let f = "libcudart.so.12.1.105";
        assert_eq!(file_name_version(&so(f)).as_deref(), Some("12.1.105"));
        assert_eq!(
            derived_soname(f, &so(f)).as_deref(),
            Some("libcudart.so.12")
        );
        let f = "libnvrtc-builtins.so.12.1.105";
        assert_eq!(
            derived_soname(f, &so(f)).as_deref(),
            Some("libnvrtc-builtins.so.12.1")
        );
        let f = "libcudnn.so.9";
        assert_eq!(file_name_version(&so(f)), None);
        assert_eq!(derived_soname(f, &so(f)).as_deref(), Some("libcudnn.so.9"));
        assert_eq!(derived_soname("libcuda.so", &so("libcuda.so")), None);
    }

    #[test]
    fn providers_from_paths() {
        let pv = |p: &str, conda| {
            let c: Vec<&str> = p.split('/').collect();
            provider_from_path(&c, conda)
        };
        use LibraryProvider::*;
        assert_eq!(
            pv(
                "usr/local/cuda-12.1/targets/x86_64-linux/lib/stubs/libcuda.so",
                false
            ),
            Stub
        );
        assert_eq!(
            pv("usr/local/cuda-12.1/compat/libcuda.so.530.30.02", false),
            ForwardCompat
        );
        assert_eq!(
            pv("usr/local/cuda/compat/lib/libcuda.so.1", false),
            ForwardCompat
        );
        assert_eq!(
            pv(
                "opt/v/lib/python3.12/site-packages/nvidia/cu13/lib/libcudart.so.13",
                false
            ),
            PipWheel
        );
        assert_eq!(
            pv(
                "opt/v/lib/python3.12/site-packages/torch/lib/libcudart-d0da41ae.so.11.0",
                false
            ),
            Bundled
        );
        assert_eq!(pv("opt/conda/lib/libcudart.so.11.8.89", true), Conda);
        assert_eq!(
            pv("usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.0", false),
            System
        );
        assert_eq!(pv("opt/tensorrt/lib/libnvinfer.so.8", false), Other);
        assert_eq!(pv("compat/libcuda.so.1", false), Other);
    }

    #[test]
    fn toolkit_directories_name_their_release() {
        let at = |p: &str| toolkit_dir_release(&ImagePath::new(p).unwrap());
        assert_eq!(
            at("usr/local/cuda-12.1/targets/x86_64-linux/lib/libcufft.so.11.0.2.4"),
            Some(CudaVersion::new(12, 1))
        );
        assert_eq!(
            at("usr/local/cuda-12.4.1/lib64/libcublas.so.12"),
            Some(CudaVersion::new(12, 4))
        );
        assert_eq!(at("usr/local/cuda-x/lib64/libcublas.so.12"), None);
        assert_eq!(at("usr/lib/x86_64-linux-gnu/libcufft.so.11"), None);
    }

    #[test]
    fn nvidia_dir_fallback() {
        assert_eq!(nvidia_dist_stems("cudnn", "cudnn_ops"), vec!["cudnn"]);
        assert_eq!(
            nvidia_dist_stems("cuda_runtime", "cudart"),
            vec!["cuda-runtime"]
        );
        assert_eq!(nvidia_dist_stems("cu13", "cublasLt"), vec!["cublas"]);
        assert_eq!(
            nvidia_dist_stems("cu13", "nvrtc-builtins"),
            vec!["cuda-nvrtc"]
        );
    }
}
