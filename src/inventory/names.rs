//! NVIDIA names, classified in one place for every reader (the inventory, the image rules, the
//! Dockerfile and run-config rules): which library files are the user-space driver or a CUDA
//! runtime library, and which OS packages install the driver or anything GPU-related.
//! Library file names are split by [`super::libs::parse_so_name`] and judged by
//! [`super::libs::classify_stem`].

use super::libs::{classify_stem, parse_so_name, LibKind};

/// Whether a file (a path or a bare name) is a user-space driver library: `libcuda.so*`,
/// `libnvidia-*.so*`, `libcudadebugger`, `libnvcuvid`, `libnvoptix`, `*_nvidia` (GLX/EGL
/// vendor libraries). These come from the host's driver at run time and must never be
/// installed, copied or mounted in by hand.
pub fn is_driver_library_file(file: &str) -> bool {
    let base = file.rsplit('/').next().unwrap_or(file);
    matches!(
        parse_so_name(base).and_then(|so| classify_stem(&so)),
        Some(LibKind::Driver(_))
    )
}

/// Whether a file is a CUDA runtime-side library (cudart, cuBLAS, cuDNN, NCCL, …), not a
/// driver library.
pub fn is_cuda_runtime_library_file(file: &str) -> bool {
    let base = file.rsplit('/').next().unwrap_or(file);
    super::libs::is_cuda_runtime_lib(base)
}

/// Package names of the NVIDIA user-space driver on Debian/Ubuntu/RHEL.
pub fn is_driver_package(n: &str) -> bool {
    let n = n.to_ascii_lowercase();
    let prefixes = [
        "nvidia-driver",
        "libnvidia-compute-",
        "libnvidia-gl-",
        "libnvidia-encode-",
        "libnvidia-decode-",
        "libnvidia-extra-",
        "nvidia-utils-",
        "nvidia-dkms-",
        "nvidia-kernel-",
        "nvidia-headless-",
        "cuda-drivers",
        "xserver-xorg-video-nvidia",
        "libcuda1",
        "nvidia-compute-utils-",
        "kmod-nvidia",
    ];
    prefixes.iter().any(|p| n.starts_with(p))
        || n.strip_prefix("nvidia-")
            .map(|r| !r.is_empty() && r.chars().all(|c| c.is_ascii_digit()))
            .unwrap_or(false)
}

/// dpkg packages that carry CUDA/NVIDIA user-space software.
pub fn is_gpu_os_package(name: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "cuda-",
        "libcuda",
        "libcudnn",
        "libnccl",
        "libnvidia-",
        "nvidia-",
        "libcublas",
        "libcufft",
        "libcurand",
        "libcusparse",
        "libcusolver",
        "libnpp",
        "libnvjpeg",
        "tensorrt",
        "libnvinfer",
        "libnvonnxparser",
        "libnvparsers",
        "libcutensor",
        "libcufile",
        "libnvjitlink",
        "libnvrtc",
        "libcupti",
        "libnvtoolsext",
        "libnvtx",
        "libnvvm",
        "libnvblas",
        "libnvshmem",
        "libcudss",
        "datacenter-gpu-manager",
    ];
    PREFIXES.iter().any(|p| name.starts_with(p))
}

/// NVIDIA's `cuda` and `cuda-X-Y` meta-packages install "all CUDA Toolkit and Driver
/// packages" (cuda-drivers among them), unlike `cuda-toolkit-X-Y`: the CUDA installation
/// guide's meta-package table.
pub fn is_cuda_metapackage_with_driver(n: &str) -> bool {
    let n = n.to_ascii_lowercase();
    match n.strip_prefix("cuda") {
        Some("") => true,
        Some(rest) => rest
            .strip_prefix('-')
            .and_then(|v| v.split_once('-'))
            .is_some_and(|(a, b)| {
                !a.is_empty()
                    && !b.is_empty()
                    && a.chars().all(|c| c.is_ascii_digit())
                    && b.chars().all(|c| c.is_ascii_digit())
            }),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_libraries() {
        for yes in [
            "libcuda.so",
            "libcuda.so.1",
            "/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05",
            "libnvidia-ml.so.1",
            "libnvidia-ptxjitcompiler.so.580.159.04",
            "libnvidia-encode.so.1",
            "libcudadebugger.so.1",
            "libGLX_nvidia.so.0",
        ] {
            assert!(is_driver_library_file(yes), "{yes}");
        }
        for no in [
            "libcudart.so.12",
            "libcudnn.so.9",
            "libnvrtc.so.12",
            "libc.so.6",
            "cuda.h",
        ] {
            assert!(!is_driver_library_file(no), "{no}");
        }
        assert!(is_cuda_runtime_library_file("x/libcublasLt.so.12"));
        assert!(!is_cuda_runtime_library_file("libcuda.so.1"));
    }

    #[test]
    fn packages() {
        for yes in [
            "nvidia-driver-535",
            "libnvidia-compute-550",
            "cuda-drivers",
            "nvidia-550",
            "kmod-nvidia",
        ] {
            assert!(is_driver_package(yes), "{yes}");
        }
        for no in [
            "cuda-toolkit-12-4",
            "libcudnn9-cuda-12",
            "nvidia-container-toolkit",
            "nvidia-",
        ] {
            assert!(!is_driver_package(no), "{no}");
        }
        assert!(is_gpu_os_package("libcudnn9-cuda-12"));
        assert!(is_gpu_os_package("cuda-cudart-12-4"));
        assert!(!is_gpu_os_package("libc6"));
    }
}
