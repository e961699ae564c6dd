//! Versions read typed out of host evidence (library file names, toolkit directories, tool
//! output), once, where the evidence is read: the host checks compare these and never parse a
//! version string themselves.

use crate::inventory::libs::{file_name_version, parse_so_name};
use crate::version::{CudaVersion, DriverVersion};

/// The driver version of a user-space driver library file: `libnvidia-ml.so.<ver>` /
/// `libcuda.so.<ver>` (not the bare `.so.1` soname link).
pub fn driver_lib_version(file_name: &str) -> Option<DriverVersion> {
    ["libnvidia-ml.so.", "libcuda.so."]
        .iter()
        .find_map(|prefix| file_name.strip_prefix(prefix))
        .filter(|v| v.contains('.'))
        .and_then(|v| v.parse().ok())
}

/// A driver version as a driver tool or file states it (`550.54.15`).
pub fn driver_version(text: &str) -> Option<DriverVersion> {
    text.parse().ok()
}

/// The CUDA major.minor in a CUDA library's file name (`libcublas.so.12.4.5.8` → 12.4).
pub fn cuda_lib_file_release(file_name: &str) -> Option<CudaVersion> {
    let v = parse_so_name(file_name).and_then(|so| file_name_version(&so))?;
    let mut parts = v.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some(CudaVersion::new(major, minor))
}

/// The CUDA release of the toolkit directory a path lies in (`/usr/local/cuda-12.1/lib64` →
/// 12.1); None for the unversioned `/usr/local/cuda`.
pub fn cuda_dir_release(path: &str) -> Option<CudaVersion> {
    super::cuda_dir_version(path)?.parse().ok()
}

/// A CUDA version as a toolkit states it (version.json's `12.4.1`, nvcc's `13.0.88`, a
/// directory's `11.8`).
pub fn toolkit_release(text: &str) -> Option<CudaVersion> {
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_libraries_name_their_version() {
        let v = |s: &str| driver_lib_version(s).map(|d| d.to_string());
        assert_eq!(v("libnvidia-ml.so.550.54.15").as_deref(), Some("550.54.15"));
        assert_eq!(v("libcuda.so.580.159.04").as_deref(), Some("580.159.04"));
        // The soname link and other libraries carry no driver version.
        assert_eq!(v("libcuda.so.1"), None);
        assert_eq!(v("libcudart.so.12.4.127"), None);
        assert_eq!(v("libcuda.so.garbage.x"), None);
    }

    #[test]
    fn cuda_releases_from_files_and_directories() {
        assert_eq!(
            cuda_lib_file_release("libcublas.so.12.4.5.8"),
            Some(CudaVersion::new(12, 4))
        );
        assert_eq!(cuda_lib_file_release("libcublas.so.12"), None);
        assert_eq!(
            cuda_dir_release("/usr/local/cuda-12.1/lib64"),
            Some(CudaVersion::new(12, 1))
        );
        assert_eq!(cuda_dir_release("/usr/local/cuda/lib64"), None);
        assert_eq!(toolkit_release("13.0.88"), "13.0.88".parse().ok());
        assert_eq!(toolkit_release("unknown"), None);
    }
}
