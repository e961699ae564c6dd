//! The squashed inventory of an image: what CUDA/GPU software is inside, where, and from
//! which layer. Field names here are the stable JSON contract of `gpulint inventory`.
//!
//! In: an [`ImageMeta`] (reference, config, layer list) and the squashed `FileTree` whose
//! nodes carry detector facts. Out: [`build`] → [`Inventory`]; [`render_text`] prints it.
//! `libs` classifies library names and paths; `build` joins the facts.
//!
//! Known gaps: rpm databases are not read (no `os_packages` on RHEL/UBI images); egg-info
//! `requires.txt` is not read; dpkg `*.list` files are not used to map system libraries to
//! packages (their file names carry full versions anyway); a `/usr/local/cuda` that is a real directory counts as a toolkit only when it
//! holds version.json / version.txt.

mod build;
pub mod cuda_need;
mod family;
pub mod libs;
pub mod names;
pub mod require;
mod text;

pub(crate) use build::binary_from_elf;
pub use build::{build, build_with, ImageMeta};
pub use family::{LibFamily, LibVersion};
pub use text::render_text;

use crate::arch::ArchTarget;
use crate::source::Platform;
use crate::version::{CudaVersion, DriverVersion};
use crate::vocab::ImagePath;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Inventory {
    pub image: ImageInfo,
    pub cuda_toolkits: Vec<CudaToolkit>,
    pub cuda_libraries: Vec<CudaLibrary>,
    pub driver_libraries: Vec<DriverLibrary>,
    pub python_packages: Vec<PythonPackage>,
    pub conda_packages: Vec<CondaPackage>,
    pub os_packages: Vec<OsPackage>,
    pub binaries: Vec<Binary>,
    /// Standalone `*.ptx` files (raw PTX a program loads itself): listed, not judged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ptx_files: Vec<PtxFile>,
    /// Standalone device code (`.cubin` files, `.ptx` files) per package that ships them:
    /// counts and targets, not one row per file (flashinfer-cubin ships thousands).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub device_code_files: Vec<DeviceCodeFiles>,
    /// triton's bundled assemblers (`triton/backends/nvidia/bin/ptxas`, `ptxas-blackwell`)
    /// with the CUDA release of each, read from its `--version` banner.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub triton_ptxas: Vec<TritonPtxas>,
    /// The loader configuration needed to resolve libraries the way ld.so does.
    pub loader: LoaderConfig,
    /// True when some input could not be read; `errors` says what and where.
    pub partial: bool,
    pub errors: Vec<crate::walk::ScanIssue>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ImageInfo {
    pub reference: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    pub platform: Option<Platform>,
    /// Selected variables: CUDA_VERSION, NVIDIA_REQUIRE_CUDA, NVIDIA_VISIBLE_DEVICES,
    /// NVIDIA_DRIVER_CAPABILITIES, LD_LIBRARY_PATH, PATH, BNB_CUDA_VERSION, TRITON_PTXAS_PATH,
    /// TRITON_PTXAS_BLACKWELL_PATH (and other
    /// NVIDIA_/CUDA_ ones).
    pub env: BTreeMap<String, String>,
    pub entrypoint: Vec<String>,
    pub cmd: Vec<String>,
    pub labels: BTreeMap<String, String>,
    pub layers: Vec<LayerInfo>,
    /// glibc version of the image (from libc.so.6 / ld-linux), e.g. "2.35".
    pub glibc: Option<String>,
    /// Python interpreters found: path and version ("3.10").
    pub python: Vec<PythonInterpreter>,
}

impl ImageInfo {
    /// The glibc version as (major, minor): "2.35" → (2, 35); a suffix after the minor's
    /// digits ("2.31+deb") is dropped.
    pub fn glibc_version(&self) -> Option<(u32, u32)> {
        let (a, b) = self.glibc.as_deref()?.split_once('.')?;
        Some((
            a.parse().ok()?,
            b.trim_end_matches(|c: char| !c.is_ascii_digit())
                .parse()
                .ok()?,
        ))
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LayerInfo {
    pub index: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PythonInterpreter {
    #[serde(with = "crate::vocab::image_path::absolute")]
    pub path: ImagePath,
    pub version: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CudaToolkit {
    /// e.g. "/usr/local/cuda-12.1"
    #[serde(with = "crate::vocab::image_path::absolute")]
    pub path: ImagePath,
    /// From version.json (cuda / cuda_cudart), version.txt, nvcc's binary or the package
    /// that installed the toolkit, in that order; None if none of them says.
    pub version: Option<CudaVersion>,
    /// Where `version` was read: "version.json", "version.txt", "nvcc",
    /// "dpkg <package> <version>" or "conda cuda-nvcc <version>".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_from: Option<String>,
    /// True if `/usr/local/cuda` resolves to this directory.
    pub default: bool,
    pub layer: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LibraryProvider {
    /// A distro package / CUDA toolkit install under /usr or /usr/local/cuda*.
    System,
    /// A pip `nvidia-*` wheel (site-packages/nvidia/<lib>/lib or nvidia/cu13/lib).
    PipWheel,
    Conda,
    /// Shipped inside another package (torch/lib, jaxlib, cupy, tensorflow, …).
    Bundled,
    /// `lib64/stubs`: link-time stubs, never loadable at run time.
    Stub,
    /// `cuda-X.Y/compat`: the forward-compatibility package.
    ForwardCompat,
    Other,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(from = "CudaLibraryText")]
pub struct CudaLibrary {
    #[serde(with = "crate::vocab::image_path::absolute")]
    pub path: ImagePath,
    /// Library family: cudart, cublas, cublasLt, cudnn, cudnn_ops, nccl, nvrtc, …
    #[serde(rename = "name")]
    pub family: LibFamily,
    pub soname: Option<String>,
    /// Full version when known (from the file name, the owning wheel, the package db or the
    /// runtime's code), in the family's numbering.
    pub version: Option<LibVersion>,
    pub provider: LibraryProvider,
    /// Other in-image paths (symlinks, hardlinks) that resolve to this file, e.g. the
    /// `libcudart.so.12` soname link. The loader emulation matches NEEDED names against them.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        with = "crate::vocab::image_path::absolute::list"
    )]
    pub aliases: Vec<ImagePath>,
    /// The pip distribution / conda package / dpkg package that owns it, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    pub layer: Option<usize>,
}

impl CudaLibrary {
    /// The version as read, for messages.
    pub fn version_text(&self) -> Option<&str> {
        self.version.as_ref().map(LibVersion::as_str)
    }
}

/// A [`CudaLibrary`] as the inventory JSON writes it: the version's numbering follows from
/// the family, so it is typed after both are read.
#[derive(Deserialize)]
struct CudaLibraryText {
    #[serde(with = "crate::vocab::image_path::absolute")]
    path: ImagePath,
    name: LibFamily,
    soname: Option<String>,
    version: Option<String>,
    provider: LibraryProvider,
    #[serde(default, with = "crate::vocab::image_path::absolute::list")]
    aliases: Vec<ImagePath>,
    #[serde(default)]
    package: Option<String>,
    layer: Option<usize>,
}

impl From<CudaLibraryText> for CudaLibrary {
    fn from(t: CudaLibraryText) -> Self {
        CudaLibrary {
            version: t.version.map(|v| LibVersion::read(&t.name, v)),
            path: t.path,
            family: t.name,
            soname: t.soname,
            provider: t.provider,
            aliases: t.aliases,
            package: t.package,
            layer: t.layer,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DriverLibrary {
    #[serde(with = "crate::vocab::image_path::absolute")]
    pub path: ImagePath,
    /// "libcuda", "libnvidia-ml", "libnvidia-ptxjitcompiler", …
    pub name: String,
    /// From the file name (libcuda.so.535.104.05 → 535.104.05).
    pub version: Option<DriverVersion>,
    pub provider: LibraryProvider,
    pub layer: Option<usize>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PythonPackage {
    pub name: String,
    pub version: String,
    /// Wheel tags from the WHEEL file, e.g. ["cp312-cp312-manylinux_2_28_x86_64"].
    pub tags: Vec<String>,
    /// The site-packages directory it is installed in.
    #[serde(with = "crate::vocab::image_path::absolute")]
    pub location: ImagePath,
    /// For GPU-relevant packages: the CUDA version it was built for ("13.0"), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cuda: Option<CudaVersion>,
    /// Requires-Dist lines (for companion checks).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requires: Vec<String>,
    pub layer: Option<usize>,
    /// The CUDA / cuDNN it needs from its own evidence (name, Requires-Dist, a pinned torch,
    /// DT_NEEDED of its files, version module, static cudart, PTX ISA), each piece named;
    /// absent when nothing says. See `docs/schema/inventory.schema.json`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_need: Option<cuda_need::CudaNeed>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CondaPackage {
    pub name: String,
    pub version: String,
    pub build: Option<String>,
    pub channel: Option<String>,
    pub prefix: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OsPackage {
    pub name: String,
    pub version: String,
    /// "dpkg" or "rpm"
    pub manager: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PtxFile {
    #[serde(with = "crate::vocab::image_path::absolute")]
    pub path: ImagePath,
    pub layer: usize,
    /// `compute_NN` from the module's `.target`.
    pub target: ArchTarget,
    /// The PTX ISA version of its `.version` ("8.4").
    pub isa: String,
}

/// The standalone `.cubin` and `.ptx` files one package ships (or, when no package owns
/// them, one directory holds): programs load them with `cuModuleLoad` and pick one per GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceCodeFiles {
    /// The Python distribution that installed them, PEP 503-normalized (its RECORD, else the
    /// site-packages directory named after it); None when no package owns them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The package's site-packages directory; without a package, the directory holding them.
    #[serde(with = "crate::vocab::image_path::absolute")]
    pub location: ImagePath,
    /// Number of cubin files (EM_CUDA ELF images, whatever their names).
    pub cubins: usize,
    /// The SASS targets of those cubins, from their e_flags; sorted, each once.
    pub sass: Vec<ArchTarget>,
    /// Number of `*.ptx` files whose module header was read.
    pub ptx_files: usize,
    /// Their `compute_XY` targets; sorted, each once.
    pub ptx: Vec<ArchTarget>,
    /// One of the files, for locating findings.
    #[serde(with = "crate::vocab::image_path::absolute")]
    pub example: ImagePath,
    pub layer: usize,
}

/// A triton-bundled assembler and its CUDA release.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TritonPtxas {
    #[serde(with = "crate::vocab::image_path::absolute")]
    pub path: ImagePath,
    pub layer: usize,
    /// "ptxas" or "ptxas-blackwell".
    pub tool: String,
    /// The CUDA release of its banner ("12.4"); None when the banner was not found.
    pub release: Option<CudaVersion>,
    /// The full version of its banner ("12.4.131").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Why the release is unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unread: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Binary {
    #[serde(with = "crate::vocab::image_path::absolute")]
    pub path: ImagePath,
    pub layer: Option<usize>,
    pub machine: String,
    pub needed: Vec<String>,
    pub runpath: Vec<String>,
    pub rpath: Vec<String>,
    /// SASS targets the runtime can load (cuobjdump --list-elf set).
    pub sass: Vec<ArchTarget>,
    /// PTX targets (cuobjdump --list-ptx set).
    pub ptx: Vec<ArchTarget>,
    /// SASS in fatbins outside `.nv_fatbin` (e.g. cuFFT's `.ldata`): loaded by the library
    /// itself through cuModuleLoadData. cuobjdump does not list these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub embedded_sass: Vec<ArchTarget>,
    /// PTX in such self-loaded fatbins.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub embedded_ptx: Vec<ArchTarget>,
    /// SASS of cubins stored outside any fatbin (CUPTI's and nvperf's `.rodata` arrays),
    /// loaded by the library itself; listed, not judged (like a standalone `.cubin` file).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loose_sass: Vec<ArchTarget>,
    /// PTX text stored outside any fatbin (nvperf's compute_70, raw PTX jax and TensorFlow
    /// load themselves); listed, not judged, like a standalone `.ptx` file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loose_ptx: Vec<ArchTarget>,
    /// PTX ISA version of each PTX entry, "compute_90" → "8.8".
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ptx_isa: BTreeMap<String, String>,
    /// Whether any entry is compressed, and with what ("lz4", "zstd").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compression: Vec<String>,
    /// True if the file has device code (a fatbin); false if it only links CUDA libraries.
    pub has_device_code: bool,
    /// Whether that device code defines any kernel: false only when every cubin and PTX
    /// text was read and none has one (nothing to launch, so nothing to fail); None unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_kernels: Option<bool>,
    /// The CUDA runtime release linked into the binary itself (nvcc's default `-cudart
    /// static`), read from its `cudaRuntimeGetVersion`: it needs a driver for that release
    /// like a libcudart would. Known only while the binary keeps its `.symtab`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub static_cuda_runtime: Option<CudaVersion>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LoaderConfig {
    /// Directories from /etc/ld.so.conf and /etc/ld.so.conf.d/*.conf, in order.
    pub ld_so_conf: Vec<String>,
    /// Symlinked directories (`usr/local/cuda` → `usr/local/cuda-12.1`), so paths in
    /// LD_LIBRARY_PATH / RUNPATH can be resolved the way the kernel would.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub dir_links: BTreeMap<String, String>,
}

#[cfg(test)]
mod cuda_need_tests;
#[cfg(test)]
pub(crate) mod tests;

impl Binary {
    /// The PTX ISA version recorded for a PTX target ("8.8" → (8, 8)).
    pub fn ptx_isa_version(&self, t: &ArchTarget) -> Option<(u16, u16)> {
        let (a, c) = self.ptx_isa.get(&t.to_string())?.split_once('.')?;
        Some((a.parse().ok()?, c.parse().ok()?))
    }

    /// Whether the binary carries SASS or PTX that something would load (registered by the
    /// runtime or loaded by the library itself); LTO-IR alone does not count.
    pub fn has_loadable_code(&self) -> bool {
        !(self.sass.is_empty()
            && self.ptx.is_empty()
            && self.embedded_sass.is_empty()
            && self.embedded_ptx.is_empty())
    }
}
