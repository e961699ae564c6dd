//! What image rules see: the inventory, the knowledge ([`Facts`]) and (optionally) one target, plus
//! derived facts several rules share (which CUDA runtimes the image loads, how the dynamic
//! loader resolves a library).

use crate::arch::{ArchTarget, CodeKind, ComputeCapability};
use crate::finding::Location;
use crate::gpu_target::Target;
use crate::inventory::{Binary, CudaLibrary, Inventory, LibFamily, LibVersion, LibraryProvider};
use crate::matrix::Facts;
use crate::version::{CudaVersion, DriverVersion};
use crate::vocab::ImagePath;

pub struct ImageContext<'a> {
    pub inventory: &'a Inventory,
    pub facts: &'a Facts,
    pub target: Option<&'a Target>,
}

/// A CUDA runtime the image will load, and why we think so.
#[derive(Debug, Clone)]
pub struct RuntimeUse {
    pub version: CudaVersion,
    /// "libcudart.so.12.1.105 (system)", "torch 2.11.0 (torch/version.py)".
    pub what: String,
    /// `what` for a finding located at `location`, which shows the path: without it.
    pub brief: String,
    pub location: Option<Location>,
}

impl<'a> ImageContext<'a> {
    pub fn target_name(&self) -> Option<String> {
        self.target.map(|t| t.name.clone())
    }

    pub fn layer_digest(&self, layer: Option<usize>) -> Option<String> {
        let i = layer?;
        self.inventory
            .image
            .layers
            .get(i)
            .and_then(|l| l.digest.clone().or_else(|| l.diff_id.clone()))
    }

    pub fn binary_location(&self, b: &Binary) -> Location {
        Location::in_image(self.layer_digest(b.layer), b.path.clone())
    }

    /// CUDA runtimes the image carries: every loadable libcudart (not stubs/compat) with a
    /// known version, and torch's CUDA from torch/version.py. Falls back to the image's
    /// `CUDA_VERSION` env only when nothing else says.
    pub fn cuda_runtimes(&self) -> Vec<RuntimeUse> {
        let inv = self.inventory;
        let mut out = Vec::new();
        for lib in &inv.cuda_libraries {
            if lib.family != LibFamily::Cudart
                || matches!(
                    lib.provider,
                    LibraryProvider::Stub | LibraryProvider::ForwardCompat
                )
            {
                continue;
            }
            if let Some(v) = lib.version.as_ref().and_then(LibVersion::cuda_release) {
                out.push(RuntimeUse {
                    version: v,
                    what: format!("CUDA runtime {v} ({})", lib.path),
                    brief: format!("CUDA runtime {v}"),
                    location: Some(Location::in_image(
                        self.layer_digest(lib.layer),
                        lib.path.clone(),
                    )),
                });
            }
        }
        // Runtimes linked into binaries (nvcc's default `-cudart static`): one per release
        // not already carried by a libcudart.
        for b in &inv.binaries {
            if let Some(v) = b.static_cuda_runtime {
                if !out.iter().any(|r| r.version.same_release(&v)) {
                    out.push(RuntimeUse {
                        version: v,
                        what: format!("CUDA runtime {v} linked statically into {}", b.path),
                        brief: format!("CUDA runtime {v}, linked statically,"),
                        location: Some(self.binary_location(b)),
                    });
                }
            }
        }
        for p in &inv.python_packages {
            if p.name == "torch" {
                if let Some(v) = p.cuda {
                    // A cudart of the same release already covers it.
                    if !out.iter().any(|r| r.version.same_release(&v)) {
                        out.push(RuntimeUse {
                            version: v,
                            what: format!("torch {} built for CUDA {}", p.version, v),
                            brief: format!("torch {} built for CUDA {}", p.version, v),
                            location: Some(Location::in_image(
                                self.layer_digest(p.layer),
                                format!("{}/torch/version.py", p.location),
                            )),
                        });
                    }
                }
            }
        }
        if out.is_empty() {
            if let Some(v) = inv.image.cuda_version() {
                out.push(RuntimeUse {
                    version: v,
                    what: format!("CUDA_VERSION={v} in the image config"),
                    brief: format!("CUDA_VERSION={v} in the image config"),
                    location: None,
                });
            }
        }
        out.sort_by(|a, b| a.version.cmp(&b.version).then(a.what.cmp(&b.what)));
        out
    }

    /// The compat (forward-compatibility) driver version shipped in the image, if any.
    pub fn forward_compat_driver(&self) -> Option<(DriverVersion, ImagePath)> {
        self.inventory
            .cuda_libraries
            .iter()
            .filter(|l| l.provider == LibraryProvider::ForwardCompat && l.family == LibFamily::Cuda)
            .filter_map(|l| Some((l.version.as_ref()?.driver()?.clone(), l.path.clone())))
            .max_by(|a, b| a.0.cmp(&b.0))
    }

    /// The newest CUDA version the target's driver supports natively, if known exactly.
    /// `None` for a driver newer than every row (see [`Self::driver_cuda_bound`]).
    pub fn driver_cuda(&self) -> Option<CudaVersion> {
        self.driver_cuda_bound()
            .filter(|d| !d.open)
            .map(|d| d.at_least)
    }

    /// The target driver's CUDA support, with an open upper bound for a driver newer than
    /// every row. A CUDA version the target states (`nvidia-smi`'s) is exact.
    pub fn driver_cuda_bound(&self) -> Option<crate::matrix::DriverCuda> {
        let t = self.target?;
        if let Some(c) = t.driver_cuda {
            return Some(crate::matrix::DriverCuda {
                at_least: c,
                open: false,
            });
        }
        self.facts.driver_cuda(t.driver.as_ref()?).map(|d| d.value)
    }
}

pub fn file_name(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

/// The device code a binary's own kernels are judged by, deduplicated: `(sass, ptx)`.
///
/// An NVIDIA CUDA library (cuFFT, cuBLAS…) loads its kernels itself from fatbins outside
/// `.nv_fatbin` (cuFFT's `.ldata`), so registered and self-loaded code together are its
/// own. Any other binary (torch's `libtorch_cuda*.so`, an extension) that registers code is
/// judged by what it registers: self-loaded fatbins there come from a statically linked
/// NVIDIA library (cuFFT inside torch 1.13's `libtorch_cuda_cpp.so`) and do not run the
/// binary's own kernels. A binary with only self-loaded code is judged by that.
pub fn own_code(b: &Binary) -> (Vec<ArchTarget>, Vec<ArchTarget>) {
    let registers = !(b.sass.is_empty() && b.ptx.is_empty());
    let nvidia = crate::inventory::libs::is_cuda_runtime_lib(b.path.file_name());
    let (sass, ptx): (Vec<ArchTarget>, Vec<ArchTarget>) = if registers && !nvidia {
        (b.sass.clone(), b.ptx.clone())
    } else {
        (
            b.sass.iter().chain(&b.embedded_sass).copied().collect(),
            b.ptx.iter().chain(&b.embedded_ptx).copied().collect(),
        )
    };
    (dedup_targets(sass), dedup_targets(ptx))
}

/// Sorted, each target once (fatbins of one binary repeat targets).
pub fn dedup_targets(mut v: Vec<ArchTarget>) -> Vec<ArchTarget> {
    v.sort();
    v.dedup();
    v
}

/// Device-code targets of a binary's own kernels ([`own_code`]) that can run on `cc`.
pub fn runnable_targets(b: &Binary, cc: ComputeCapability) -> (Vec<ArchTarget>, Vec<ArchTarget>) {
    let (sass, ptx) = own_code(b);
    (
        sass.into_iter().filter(|t| t.runs_on(cc)).collect(),
        ptx.into_iter()
            .filter(|t| t.kind == CodeKind::Ptx && t.runs_on(cc))
            .collect(),
    )
}

/// PTX ISA version recorded for a PTX target of a binary ("8.8" → (8, 8)).
pub fn ptx_isa_of(b: &Binary, t: &ArchTarget) -> Option<(u16, u16)> {
    b.ptx_isa_version(t)
}

pub fn list(ts: &[ArchTarget]) -> String {
    if ts.is_empty() {
        "none".into()
    } else {
        ts.iter()
            .map(|t| t.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The CUDA release an NVIDIA library in the image belongs to: the toolkit directory it sits
/// in (`/usr/local/cuda-12.1`), else its own version looked up in NVIDIA's per-release
/// component versions (cuFFT 11.3.3.83 ships with CUDA 12.8). Never the wheel's `-cu12`
/// suffix or the `nvidia/cu13` directory: those name a major, and a library from 12.8 judged
/// as 12.0 loses every architecture added since. `None` when the release is unknown.
pub fn vendor_cuda_release(facts: &Facts, lib: &CudaLibrary) -> Option<CudaVersion> {
    if let Some(v) = crate::inventory::libs::toolkit_dir_release(&lib.path) {
        return Some(v);
    }
    let version = lib.version_text()?;
    let dist = lib
        .package
        .as_deref()
        .filter(|p| p.starts_with("nvidia-"))
        .or_else(|| component_of_family(&lib.family))?;
    facts.component_release(dist, version).map(|r| r.value)
}

/// The component wheel that ships a library family, for libraries found outside a wheel
/// (distro packages, `/usr/lib/x86_64-linux-gnu/libcufft.so.11.3.3.83`).
fn component_of_family(family: &LibFamily) -> Option<&'static str> {
    use LibFamily::*;
    Some(match family {
        Cudart => "nvidia-cuda-runtime",
        Cublas | CublasLt | Nvblas => "nvidia-cublas",
        Cufft | Cufftw => "nvidia-cufft",
        Curand => "nvidia-curand",
        Cusolver | CusolverMg => "nvidia-cusolver",
        Cusparse => "nvidia-cusparse",
        NvJitLink => "nvidia-nvjitlink",
        Nvrtc | NvrtcBuiltins => "nvidia-cuda-nvrtc",
        Cupti | NvperfHost | NvperfTarget | PcSamplingUtil => "nvidia-cuda-cupti",
        Cufile | CufileRdma => "nvidia-cufile",
        Nvjpeg => "nvidia-nvjpeg",
        Nvfatbin => "nvidia-nvfatbin",
        f if f.is_npp() => "nvidia-npp",
        _ => return None,
    })
}

/// For NVIDIA's own CUDA libraries (cuBLAS, cuFFT, cuDNN, …) the fatbin the runtime
/// registers is not the whole story: most kernels are loaded lazily or from fatbins the library
/// manages itself, and NVIDIA ships each release for every architecture that release
/// supports. So they are judged by the release's documented architecture list.
/// `Some(true/false)` for such a library with a known release; `None` otherwise.
pub fn vendor_library_supports(
    ctx: &ImageContext,
    b: &Binary,
    cc: ComputeCapability,
) -> Option<(bool, CudaVersion)> {
    let lib = ctx.inventory.cuda_libraries.iter().find(|l| {
        l.path == b.path
            && matches!(
                l.provider,
                LibraryProvider::PipWheel | LibraryProvider::System | LibraryProvider::Conda
            )
    })?;
    let release = vendor_cuda_release(ctx.facts, lib)?;
    let list = ctx.facts.nvcc_targets(&release)?.value;
    // SASS for X.Y also serves X.Z with Z > Y.
    let ok = list
        .iter()
        .any(|sm| *sm / 10 == cc.major && *sm % 10 <= cc.minor);
    Some((ok, release))
}
