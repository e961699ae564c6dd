//! Typed names and versions of CUDA libraries: the family a library file belongs to
//! ([`LibFamily`]) and its version in that family's own numbering ([`LibVersion`]), decided
//! once when the inventory is built so rules never read them back out of strings. Both print
//! as the text the inventory has always shown (its JSON contract).

use crate::version::{CudaVersion, DriverVersion};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Declares the families with a fixed name: variant, then the name `libs::classify_stem` gives.
macro_rules! families {
    ($($(#[$doc:meta])* $variant:ident => $name:literal,)*) => {
        /// A CUDA library family: `libcudart.so.12.1.105` is [`LibFamily::Cudart`]. Families
        /// with many members (`cudnn_ops`, `nppial`, `nvinfer_plugin`, `nvshmem_bootstrap_uid`)
        /// and driver files found in `stubs/` or `compat/` (`nvidia-ml`) keep their name in
        /// [`LibFamily::Other`].
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum LibFamily {
            $($(#[$doc])* $variant,)*
            Other(String),
        }

        impl LibFamily {
            /// The family of a library stem as `libs::classify_stem` names it.
            pub fn from_name(name: &str) -> LibFamily {
                match name {
                    $($name => LibFamily::$variant,)*
                    other => LibFamily::Other(other.to_string()),
                }
            }
            /// The name the inventory prints: `cudart`, `cublasLt`, `cudnn_ops`.
            pub fn name(&self) -> &str {
                match self {
                    $(LibFamily::$variant => $name,)*
                    LibFamily::Other(n) => n,
                }
            }
        }
    };
}

families! {
    Cudart => "cudart",
    Cublas => "cublas",
    CublasLt => "cublasLt",
    Cudnn => "cudnn",
    Nccl => "nccl",
    Nvrtc => "nvrtc",
    NvrtcBuiltins => "nvrtc-builtins",
    NvJitLink => "nvJitLink",
    Cufft => "cufft",
    Cufftw => "cufftw",
    Curand => "curand",
    Cusparse => "cusparse",
    CusparseLt => "cusparseLt",
    Cusolver => "cusolver",
    CusolverMg => "cusolverMg",
    Cupti => "cupti",
    NvperfHost => "nvperf_host",
    NvperfTarget => "nvperf_target",
    PcSamplingUtil => "pcsamplingutil",
    NvToolsExt => "nvToolsExt",
    Nvtx3Interop => "nvtx3interop",
    Nvjpeg => "nvjpeg",
    Nvjpeg2k => "nvjpeg2k",
    Cufile => "cufile",
    CufileRdma => "cufile_rdma",
    Cudla => "cudla",
    Nvblas => "nvblas",
    Nvfatbin => "nvfatbin",
    Nvvm => "nvvm",
    Cudss => "cudss",
    Cutensor => "cutensor",
    CutensorMg => "cutensorMg",
    NvOnnxParser => "nvonnxparser",
    NvParsers => "nvparsers",
    NvshmemHost => "nvshmem_host",
    /// `libcuda` itself, found as a link stub or in the forward-compat package.
    Cuda => "cuda",
}

impl LibFamily {
    /// NPP, one family of many libraries (`nppc`, `nppial`, `nppicc`, …).
    pub fn is_npp(&self) -> bool {
        matches!(self, LibFamily::Other(n) if n.starts_with("npp"))
    }
}

impl fmt::Display for LibFamily {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for LibFamily {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for LibFamily {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(LibFamily::from_name(&String::deserialize(d)?))
    }
}

/// A library's version in its own family's numbering, with the text it was read as (the
/// file name, the owning wheel or package, the runtime's code) kept for output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LibVersion {
    /// The CUDA runtime (cudart): a CUDA release, `12.1.105`.
    Cuda { release: CudaVersion, text: String },
    /// `libcuda` of the forward-compat package: a driver version, `530.30.02`.
    Driver(DriverVersion),
    /// Any other library's own numbering (cuDNN `9.1.0.70`, cuBLAS `12.1.3.1`, NCCL
    /// `2.21.5`), or a text the family's numbering does not read.
    Own(String),
}

impl LibVersion {
    /// Type `text` by the family's numbering.
    pub fn read(family: &LibFamily, text: String) -> LibVersion {
        match family {
            LibFamily::Cudart => match text.parse::<CudaVersion>() {
                Ok(release) => LibVersion::Cuda { release, text },
                Err(_) => LibVersion::Own(text),
            },
            LibFamily::Cuda => match text.parse::<DriverVersion>() {
                Ok(v) => LibVersion::Driver(v),
                Err(_) => LibVersion::Own(text),
            },
            _ => LibVersion::Own(text),
        }
    }
    /// A runtime release read from the runtime's code (`cudaRuntimeGetVersion`'s number).
    pub fn runtime(release: CudaVersion) -> LibVersion {
        LibVersion::Cuda {
            release,
            text: release.to_string(),
        }
    }
    /// The CUDA release, for the CUDA runtime.
    pub fn cuda_release(&self) -> Option<CudaVersion> {
        match self {
            LibVersion::Cuda { release, .. } => Some(*release),
            _ => None,
        }
    }
    /// The driver version, for the forward-compat `libcuda`.
    pub fn driver(&self) -> Option<&DriverVersion> {
        match self {
            LibVersion::Driver(v) => Some(v),
            _ => None,
        }
    }
    /// The version as read.
    pub fn as_str(&self) -> &str {
        match self {
            LibVersion::Cuda { text, .. } | LibVersion::Own(text) => text,
            LibVersion::Driver(v) => v.as_str(),
        }
    }
}

impl fmt::Display for LibVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for LibVersion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_round_trip_their_names() {
        for name in [
            "cudart",
            "cublasLt",
            "nvrtc-builtins",
            "cuda",
            "cudnn_ops",
            "nppial",
        ] {
            assert_eq!(LibFamily::from_name(name).name(), name);
        }
        assert_eq!(LibFamily::from_name("cudart"), LibFamily::Cudart);
        assert_eq!(
            LibFamily::from_name("cudnn_ops"),
            LibFamily::Other("cudnn_ops".into())
        );
        assert!(LibFamily::from_name("nppial").is_npp());
        assert!(!LibFamily::Nvjpeg.is_npp());
    }

    #[test]
    fn versions_are_typed_by_family_and_print_as_read() {
        let rt = LibVersion::read(&LibFamily::Cudart, "12.1.0".into());
        assert_eq!(rt.cuda_release(), Some(CudaVersion::new(12, 1)));
        // The text is kept: CudaVersion alone would print 12.1.
        assert_eq!(rt.as_str(), "12.1.0");
        let compat = LibVersion::read(&LibFamily::Cuda, "530.30.02".into());
        assert_eq!(compat.driver().map(|d| d.as_str()), Some("530.30.02"));
        assert_eq!(compat.cuda_release(), None);
        // cuDNN 9.1.0 is not CUDA 9.1.
        let cudnn = LibVersion::read(&LibFamily::Cudnn, "9.1.0.70".into());
        assert_eq!(cudnn.cuda_release(), None);
        assert_eq!(cudnn.as_str(), "9.1.0.70");
        assert_eq!(
            LibVersion::read(&LibFamily::Cudart, "12.x".into()),
            LibVersion::Own("12.x".into())
        );
        assert_eq!(
            serde_json::to_string(&LibVersion::runtime(CudaVersion::new(11, 7))).unwrap(),
            "\"11.7\""
        );
    }
}
