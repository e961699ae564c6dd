//! NVIDIA compatibility facts as data, with typed lookups.
//!
//! The facts live in `matrices/*.toml` (one fact per row, each row with the `source` URL of the
//! NVIDIA document it was read from) and are embedded with `include_str!`. [`Matrix::embedded`]
//! parses them; [`Matrix::with_overrides`] lets a directory replace any file by name, so users
//! can update facts without a new gpulint release. Lookups never guess: a fact the documents do
//! not give is absent, and the lookup answers `None` / [`ForwardCompat::Unknown`].
//!
//! In: TOML text. Out: [`Matrix`], the loaded data; the rules ask [`Facts`], its one view.

mod facts;
mod forward_compat;
mod gpu;
mod images;
mod inferred;
#[cfg(test)]
mod measured_tests;
mod rows;
#[cfg(test)]
mod tests;
pub mod torch;

use crate::arch::{ArchTarget, ArchVariant};
use crate::version::{CudaVersion, DriverVersion};
use anyhow::Context;
use std::path::Path;

pub use facts::{Basis, Facts, OrtBuild, PciGpu, Sourced};
pub use inferred::{explain_section, inferred_note, InferredRow};
use rows::{
    ArchNameRow, ArchRow, CompatPackageRow, ComponentsRow, CudaArchFile, CudaComponentsFile,
    CudaDriverFile, CudnnFile, CudnnRow, DependentRow, DependentsFile, ForwardCompatFile,
    ForwardCompatRules, GpuPciFile, GpusFile, MinorCompatRow, NgcFile, OrtBuildRow, OrtFile,
    PtxFile, PtxRow, ReleaseRow,
};
pub use rows::{BranchRow, BranchType, GpuModel, NgcPytorch, PciRow, Segment};

pub(crate) const CUDA_DRIVER: &str = "cuda_driver.toml";
pub(crate) const CUDA_ARCH: &str = "cuda_arch.toml";
pub(crate) const GPUS: &str = "gpus.toml";
pub(crate) const PTX_ISA: &str = "ptx_isa.toml";
pub(crate) const FORWARD_COMPAT: &str = "forward_compat.toml";
pub(crate) const CUDNN: &str = "cudnn.toml";
pub(crate) const NGC_PYTORCH: &str = "ngc_pytorch.toml";
pub(crate) const TORCH: &str = "torch.toml";
pub(crate) const TORCH_COMPANIONS: &str = "torch_companions.toml";
pub(crate) const CUDA_COMPONENTS: &str = "cuda_components.toml";
pub(crate) const TORCH_DEPENDENTS: &str = "torch_dependents.toml";
pub(crate) const CUDA_IMAGES: &str = "cuda-images.toml";
pub(crate) const GPU_PCI: &str = "gpu_pci.toml";
pub(crate) const ONNXRUNTIME: &str = "onnxruntime.toml";

/// Every data file, with its embedded text.
pub(crate) const FILES: &[(&str, &str)] = &[
    (CUDA_DRIVER, include_str!("../../matrices/cuda_driver.toml")),
    (CUDA_ARCH, include_str!("../../matrices/cuda_arch.toml")),
    (GPUS, include_str!("../../matrices/gpus.toml")),
    (PTX_ISA, include_str!("../../matrices/ptx_isa.toml")),
    (
        FORWARD_COMPAT,
        include_str!("../../matrices/forward_compat.toml"),
    ),
    (CUDNN, include_str!("../../matrices/cudnn.toml")),
    (NGC_PYTORCH, include_str!("../../matrices/ngc_pytorch.toml")),
    (TORCH, include_str!("../../matrices/torch.toml")),
    (
        TORCH_COMPANIONS,
        include_str!("../../matrices/torch_companions.toml"),
    ),
    (
        CUDA_COMPONENTS,
        include_str!("../../matrices/cuda_components.toml"),
    ),
    (
        TORCH_DEPENDENTS,
        include_str!("../../matrices/torch_dependents.toml"),
    ),
    (CUDA_IMAGES, include_str!("../../matrices/cuda-images.toml")),
    (GPU_PCI, include_str!("../../matrices/gpu_pci.toml")),
    (ONNXRUNTIME, include_str!("../../matrices/onnxruntime.toml")),
];

/// Minimum drivers for one CUDA toolkit release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverReq {
    pub linux: Option<DriverVersion>,
    pub windows: Option<DriverVersion>,
    /// The table row that answered, e.g. "CUDA 12.1 Update 1".
    pub release: String,
    pub source: String,
    /// How the row is known, when the data file says.
    pub basis: Option<Basis>,
}

/// What a driver's CUDA support is known to be. A driver at or below the newest row's branch
/// supports exactly `at_least` (what `nvidia-smi` prints). A driver of a newer branch than
/// every row supports at least the newest known release and possibly newer ones we have no
/// row for: the upper bound is open, and no verdict may assume it is `at_least`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DriverCuda {
    pub at_least: CudaVersion,
    /// The driver is newer than every row: its real CUDA support is unknown above `at_least`.
    pub open: bool,
}

impl std::fmt::Display for DriverCuda {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.open {
            write!(f, ">= {} (newest known release)", self.at_least)
        } else {
            write!(f, "{}", self.at_least)
        }
    }
}

/// The oldest driver that can drive a GPU of some compute capability: the minimum driver of
/// the first CUDA release whose nvcc targets it (a driver older than its first CUDA release
/// does not know the GPU).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuDriverFloor {
    /// The first CUDA release of cuda_arch.toml that lists the `sm_XY`.
    pub first_release: CudaVersion,
    /// That release's minimum Linux driver: at or above it the driver surely drives the GPU.
    pub driver: DriverVersion,
    /// A driver below this surely does not: the minimum driver of the release after the last
    /// known release without the `sm_XY`. Equal to `driver` when no release in between lacks
    /// an arch row; lower when rows are missing (then drivers in between are unknown).
    /// `None` when no earlier release is known not to support it.
    pub surely_unsupported_below: Option<DriverVersion>,
    pub source: String,
    /// How the `cuda_arch.toml` row is known, when the data file says.
    pub basis: Option<Basis>,
}

/// The oldest CUDA release whose driver can JIT a PTX ISA version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PtxNeed {
    /// A row of ptx_isa.toml names the release.
    Known(CudaVersion),
    /// The ISA is above every row: it was produced by a CUDA newer than every release we
    /// know (`newest_isa` is ptx_isa.toml's newest row, introduced by `newest_cuda`).
    NewerThanKnown {
        newest_isa: (u16, u16),
        newest_cuda: CudaVersion,
    },
}

/// Whether a `cuda-compat` (forward compatibility) package lets a driver run a CUDA version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ForwardCompat {
    /// NVIDIA's table marks the pair compatible (C).
    Supported,
    /// The driver runs this CUDA version by itself (its own release or newer, or the table's
    /// N/A cell): no compat package is needed.
    NotNeeded,
    /// The table marks the pair incompatible (X), or the driver branch is not a supported
    /// target (not listed: end of life or a New Feature Branch).
    Unsupported { reason: String },
    /// The branch is not in NVIDIA's current table: end of life or a New Feature Branch. Not a
    /// supported target today, though it may have been when the package shipped (NGC 24.05's
    /// notes list R470 for its CUDA 12.4 compat package); gpulint warns rather than fails.
    Unlisted { reason: String },
    /// The documents do not say (e.g. packages older than cuda-compat-12-2).
    Unknown,
}

/// The parsed compatibility matrices.
#[derive(Debug, Clone)]
pub struct Matrix {
    minor_compat: Vec<MinorCompatRow>,
    releases: Vec<ReleaseRow>,
    arch: Vec<ArchRow>,
    arch_names: Vec<ArchNameRow>,
    gpus: Vec<GpuModel>,
    ptx: Vec<PtxRow>,
    fc_rules: ForwardCompatRules,
    fc_branches: Vec<BranchRow>,
    fc_packages: Vec<CompatPackageRow>,
    cudnn: Vec<CudnnRow>,
    /// cuDNN major → CUDA majors, derived from `cudnn` so lookups can return a slice.
    cudnn_majors: Vec<(u32, Vec<u32>)>,
    ngc: Vec<NgcPytorch>,
    torch: torch::TorchMatrix,
    components: Vec<ComponentsRow>,
    dependents: Vec<DependentRow>,
    ort_builds: Vec<OrtBuildRow>,
    images: images::ImagesFile,
    pci: GpuPciFile,
}

fn parse<T: serde::de::DeserializeOwned>(name: &str, text: &str) -> anyhow::Result<T> {
    toml::from_str(text).with_context(|| format!("parsing matrix file {name}"))
}

impl Matrix {
    /// PyTorch release facts: CUDA variants, PyPI defaults, arch lists, companions.
    pub fn torch(&self) -> &torch::TorchMatrix {
        &self.torch
    }

    /// Parse the embedded data files.
    pub fn embedded() -> anyhow::Result<Matrix> {
        Self::from_texts(|name| Ok(embedded_text(name)))
    }

    /// Like [`Matrix::embedded`], but each file present in `dir` (same file name) replaces the
    /// embedded one as a whole.
    pub fn with_overrides(dir: &Path) -> anyhow::Result<Matrix> {
        Self::from_texts(|name| {
            let path = dir.join(name);
            if path.is_file() {
                // A regular file of at most 16 MiB, as every other file named by the user.
                crate::io_util::read_regular_string(&path, crate::io_util::MAX_CONFIG_FILE)
                    .with_context(|| format!("reading matrix override {}", path.display()))
            } else {
                Ok(embedded_text(name))
            }
        })
    }

    fn from_texts(get: impl Fn(&str) -> anyhow::Result<String>) -> anyhow::Result<Matrix> {
        let driver: CudaDriverFile = parse(CUDA_DRIVER, &get(CUDA_DRIVER)?)?;
        let arch: CudaArchFile = parse(CUDA_ARCH, &get(CUDA_ARCH)?)?;
        let mut gpus: GpusFile = parse(GPUS, &get(GPUS)?)?;
        let ptx: PtxFile = parse(PTX_ISA, &get(PTX_ISA)?)?;
        let fc: ForwardCompatFile = parse(FORWARD_COMPAT, &get(FORWARD_COMPAT)?)?;
        let cudnn: CudnnFile = parse(CUDNN, &get(CUDNN)?)?;
        let ngc: NgcFile = parse(NGC_PYTORCH, &get(NGC_PYTORCH)?)?;
        let components: CudaComponentsFile = parse(CUDA_COMPONENTS, &get(CUDA_COMPONENTS)?)?;
        let torch = torch::TorchMatrix::from_toml(&get(TORCH)?, &get(TORCH_COMPANIONS)?)
            .with_context(|| format!("parsing {TORCH} / {TORCH_COMPANIONS}"))?;
        let dependents: DependentsFile = parse(TORCH_DEPENDENTS, &get(TORCH_DEPENDENTS)?)?;
        let images: images::ImagesFile = parse(CUDA_IMAGES, &get(CUDA_IMAGES)?)?;
        let pci: GpuPciFile = parse(GPU_PCI, &get(GPU_PCI)?)?;
        let ort: OrtFile = parse(ONNXRUNTIME, &get(ONNXRUNTIME)?)?;
        for r in &ort.build {
            anyhow::ensure!(
                r.source.starts_with("https://"),
                "{ONNXRUNTIME}: {} (CUDA {}) has no https source",
                r.ort,
                r.cuda
            );
        }
        for r in &pci.device {
            anyhow::ensure!(
                pci_id(&r.pci).is_some(),
                "{GPU_PCI}: {:?} is not a 4-digit hex PCI device ID",
                r.pci
            );
        }
        for d in &dependents.dependent {
            anyhow::ensure!(
                d.source.starts_with("https://"),
                "{TORCH_DEPENDENTS}: {} {} has no https source",
                d.package,
                d.version
            );
        }
        for g in &mut gpus.gpu {
            g.datacenter = g.segment == Segment::Datacenter;
        }
        for row in &ptx.isa {
            parse_isa(&row.ptx)
                .with_context(|| format!("{PTX_ISA}: invalid PTX ISA version {:?}", row.ptx))?;
        }
        let mut cudnn_majors: Vec<(u32, Vec<u32>)> = Vec::new();
        for r in &cudnn.pair {
            match cudnn_majors.iter_mut().find(|(m, _)| *m == r.cudnn_major) {
                Some((_, v)) => v.push(r.cuda_major),
                None => cudnn_majors.push((r.cudnn_major, vec![r.cuda_major])),
            }
        }
        Ok(Matrix {
            pci,
            images,
            dependents: dependents.dependent,
            ort_builds: ort.build,
            torch,
            minor_compat: driver.minor_compat,
            releases: driver.release,
            arch: arch.release,
            arch_names: gpus.arch,
            gpus: gpus.gpu,
            ptx: ptx.isa,
            fc_rules: fc.rules,
            fc_branches: fc.branch,
            fc_packages: fc.package,
            cudnn: cudnn.pair,
            cudnn_majors,
            ngc: ngc.container,
            components: components.release,
        })
    }

    /// Minimum drivers for a CUDA version.
    ///
    /// NVIDIA's table has one row per toolkit release (GA, Update 1, …); rows are matched on
    /// major.minor, then the patch picks the newest row whose version is ≤ the given one.
    /// The patch of a version found in an image is often a component version (cudart
    /// `12.1.105`), not an update number; such large patches select the last update of that
    /// minor, which is the strictest requirement (a conservative reading). If the given patch
    /// is below every row (e.g. `11.0` against the table's 11.0.1 RC), the first row of that
    /// minor answers. `None` when the table has no row for major.minor (e.g. 12.7).
    pub fn cuda_min_driver(&self, cuda: &CudaVersion) -> Option<DriverReq> {
        let same: Vec<&ReleaseRow> = self
            .releases
            .iter()
            .filter(|r| r.version.same_release(cuda))
            .collect();
        let row = same
            .iter()
            .rev()
            .find(|r| r.version <= *cuda)
            .or_else(|| same.first())?;
        Some(DriverReq {
            linux: row.linux.clone(),
            windows: row.windows.clone(),
            release: row.label.clone(),
            source: row.source.clone(),
            basis: row.basis,
        })
    }

    /// The Linux driver floor for CUDA minor version compatibility within `cuda_major`
    /// (11 → 450.80.02, 12 → 525.60.13, 13 → branch 580). `None` for majors without minor
    /// version compatibility (10.x and older) or not in the table.
    pub fn minor_compat_floor(&self, cuda_major: u32) -> Option<(DriverVersion, String)> {
        self.minor_compat
            .iter()
            .find(|r| r.cuda_major == cuda_major)
            .map(|r| (r.linux.clone(), r.source.clone()))
    }

    /// The newest CUDA major.minor whose minimum Linux driver is ≤ `driver`, which is what
    /// `nvidia-smi` prints as "CUDA Version" (535.104.05 → 12.2, 580.159.04 → 13.0).
    /// `None` when unknown, including a driver of a branch newer than every row: it supports
    /// at least the newest known release, and perhaps newer ones (see [`Self::driver_cuda`]);
    /// answering the newest known release would saturate a fact we do not have.
    pub fn max_cuda_for_driver(&self, driver: &DriverVersion) -> Option<CudaVersion> {
        self.driver_cuda(driver)
            .filter(|d| !d.open)
            .map(|d| d.at_least)
    }

    /// The CUDA support of a driver, with an open upper bound for a driver of a branch newer
    /// than the newest row's (610.x when the table ends at CUDA 13.2 / 595.x). Only rows a
    /// document states close the bound: a driver of an inferred row's branch (620.x, CUDA
    /// 13.5 inferred) supports at least that release, and whether it supports more stays
    /// unknown, so no verdict can turn that inference into "too old".
    pub fn driver_cuda(&self, driver: &DriverVersion) -> Option<DriverCuda> {
        let best = self.newest_release_within(driver)?;
        let newest_branch = self
            .releases
            .iter()
            .filter(|r| !release_is_inferred(r))
            .filter_map(|r| r.linux.as_ref().map(|d| d.branch()))
            .max()?;
        Some(DriverCuda {
            at_least: CudaVersion::new(best.version.major, best.version.minor),
            open: driver.branch() > newest_branch,
        })
    }

    /// The newest release row whose minimum Linux driver is ≤ `driver`.
    fn newest_release_within(&self, driver: &DriverVersion) -> Option<&ReleaseRow> {
        self.releases
            .iter()
            .filter(|r| r.linux.as_ref().is_some_and(|d| d <= driver))
            .max_by(|a, b| a.version.cmp(&b.version))
    }

    /// The newest CUDA release (major.minor) of the driver table.
    pub fn newest_cuda_release(&self) -> Option<CudaVersion> {
        self.releases
            .iter()
            .map(|r| CudaVersion::new(r.version.major, r.version.minor))
            .max()
    }

    /// The real (`sm_XY`) targets nvcc of this CUDA major.minor accepts. `None` when unknown.
    pub fn nvcc_targets(&self, cuda: &CudaVersion) -> Option<&[u32]> {
        self.arch_row(cuda).map(|r| r.sm.as_slice())
    }

    /// Whether nvcc of this CUDA major.minor can compile for `target` (including its `a`/`f`
    /// variant). `None` when the release is unknown.
    pub fn nvcc_supports(&self, cuda: &CudaVersion, target: &ArchTarget) -> Option<bool> {
        let row = self.arch_row(cuda)?;
        let list = match target.variant {
            ArchVariant::Generic => &row.sm,
            ArchVariant::ArchSpecific => &row.arch_specific,
            ArchVariant::FamilySpecific => &row.family_specific,
        };
        Some(list.contains(&target.sm))
    }

    /// The first CUDA release whose nvcc accepts `sm_XY`, when the tables can tell. `None`
    /// when no listed release has it, when the oldest listed release already has it (older
    /// releases are not in `cuda_arch.toml`), or when a release between the previous listed
    /// one and it is missing there (support may have come in that release).
    pub fn first_cuda_for_sm(&self, sm: u32) -> Option<CudaVersion> {
        let mut rows: Vec<&ArchRow> = self.arch.iter().collect();
        rows.sort_by_key(|r| r.cuda);
        let i = rows.iter().position(|r| r.sm.contains(&sm))?;
        let prev = rows.get(i.checked_sub(1)?)?;
        let first = rows.get(i)?.cuda;
        let key = |v: &CudaVersion| (v.major, v.minor);
        let gap = self
            .releases
            .iter()
            .any(|r| key(&r.version) > key(&prev.cuda) && key(&r.version) < key(&first));
        (!gap).then_some(first)
    }

    /// The `torch_dependents.toml` row of `package==version` (its wheel metadata's torch
    /// pin). `package` is compared normalized (`flash_attn` = `flash-attn`).
    fn dependent(&self, package: &str, version: &str) -> Option<&DependentRow> {
        let norm = |s: &str| s.to_ascii_lowercase().replace(['_', '.'], "-");
        let p = norm(package);
        self.dependents
            .iter()
            .find(|d| norm(&d.package) == p && d.version == version)
    }

    fn arch_row(&self, cuda: &CudaVersion) -> Option<&ArchRow> {
        self.arch.iter().find(|r| r.cuda.same_release(cuda))
    }

    /// The CUDA release (major.minor) that ships an NVIDIA component wheel at this version:
    /// `("nvidia-cufft-cu12", "11.3.3.83")` → 12.8. The `-cuNN` suffix of the distribution
    /// name is dropped and never used as the answer: a cu12 wheel may come from any 12.x.
    /// A version the table lists for several releases (unchanged across updates) answers the
    /// first. `None` when no row lists this version: the release is unknown.
    pub fn component_release(&self, dist: &str, version: &str) -> Option<CudaVersion> {
        self.component_row(dist, version)
            .map(|r| CudaVersion::new(r.toolkit.major, r.toolkit.minor))
    }

    fn component_row(&self, dist: &str, version: &str) -> Option<&ComponentsRow> {
        let stem = component_stem(dist);
        self.components.iter().find(|r| {
            r.components.get(stem).is_some_and(|pinned| {
                version == pinned
                    || version
                        .strip_prefix(pinned.as_str())
                        .is_some_and(|rest| rest.starts_with('.'))
            })
        })
    }

    /// Every CUDA release (major.minor) the component table has a row for.
    pub fn component_releases(&self) -> Vec<CudaVersion> {
        let mut v: Vec<_> = self
            .components
            .iter()
            .map(|r| CudaVersion::new(r.toolkit.major, r.toolkit.minor))
            .collect();
        v.dedup();
        v
    }

    /// Look a GPU up by `nvidia-smi` name or short name; see [`gpu`] for the matching rules.
    /// Compute-capability strings ("sm_90", "9.0") are not product names and answer `None`.
    pub fn gpu(&self, query: &str) -> Option<&GpuModel> {
        gpu::find(&self.gpus, query)
    }

    pub fn gpus(&self) -> &[GpuModel] {
        &self.gpus
    }

    /// The architecture name of a compute capability ("Hopper" for 9.0), if known.
    pub fn arch_name(&self, cc: crate::arch::ComputeCapability) -> Option<&str> {
        self.arch_names
            .iter()
            .find(|a| a.cc == cc)
            .map(|a| a.name.as_str())
    }

    /// The CUDA release that introduced a PTX ISA version: (8, 7) → 12.8.
    pub fn ptx_isa_min_cuda(&self, isa: (u16, u16)) -> Option<CudaVersion> {
        self.ptx_row(isa).map(|r| r.cuda)
    }

    fn ptx_row(&self, isa: (u16, u16)) -> Option<&PtxRow> {
        self.ptx
            .iter()
            .find(|r| parse_isa(&r.ptx).ok() == Some(isa))
    }

    /// The driver floor for a GPU whose real architecture is `sm_<sm>`; see [`GpuDriverFloor`].
    /// `None` when no known CUDA release lists the architecture.
    pub fn gpu_driver_floor(&self, sm: u32) -> Option<GpuDriverFloor> {
        let mut rows: Vec<&ArchRow> = self.arch.iter().collect();
        rows.sort_by_key(|r| r.cuda);
        let first = rows.iter().position(|r| r.sm.contains(&sm))?;
        let first_row = rows.get(first)?;
        let req = self.cuda_min_driver(&first_row.cuda)?;
        let driver = req.linux?;
        let surely_unsupported_below = first
            .checked_sub(1)
            .and_then(|i| rows.get(i))
            .and_then(|last_without| {
                // The release right after the last one known not to target sm_XY.
                self.releases
                    .iter()
                    .map(|r| CudaVersion::new(r.version.major, r.version.minor))
                    .filter(|v| *v > last_without.cuda)
                    .min()
            })
            .and_then(|next| self.cuda_min_driver(&next)?.linux);
        Some(GpuDriverFloor {
            first_release: first_row.cuda,
            driver,
            surely_unsupported_below,
            source: first_row.source.clone(),
            basis: first_row.basis,
        })
    }

    /// What a driver needs to JIT PTX of this ISA: a known release, or (ISA above every row)
    /// a release newer than every one we know. `None` for an ISA older than every row or not
    /// in the table between rows.
    pub fn ptx_isa_need(&self, isa: (u16, u16)) -> Option<PtxNeed> {
        if let Some(c) = self.ptx_isa_min_cuda(isa) {
            return Some(PtxNeed::Known(c));
        }
        let (newest_isa, newest_cuda) = self
            .ptx
            .iter()
            .filter_map(|r| Some((parse_isa(&r.ptx).ok()?, r.cuda)))
            .max_by_key(|(i, _)| *i)?;
        (isa > newest_isa).then_some(PtxNeed::NewerThanKnown {
            newest_isa,
            newest_cuda,
        })
    }

    /// The CUDA majors a cuDNN major ships for (cuDNN 9 → [11, 12, 13]).
    pub fn cudnn_cuda_majors(&self, cudnn_major: u32) -> Option<&[u32]> {
        self.cudnn_majors
            .iter()
            .find(|(m, _)| *m == cudnn_major)
            .map(|(_, v)| v.as_slice())
    }

    /// The minimum Linux driver the cuDNN support matrix states for a cuDNN/CUDA major pair.
    pub fn cudnn_min_driver(&self, cudnn_major: u32, cuda_major: u32) -> Option<&DriverVersion> {
        self.cudnn
            .iter()
            .find(|r| r.cudnn_major == cudnn_major && r.cuda_major == cuda_major)
            .and_then(|r| r.linux.as_ref())
    }

    /// An NGC PyTorch container by tag: "24.05", "24.05-py3" or
    /// "nvcr.io/nvidia/pytorch:24.05-py3".
    pub fn ngc_pytorch(&self, tag: &str) -> Option<&NgcPytorch> {
        let t = tag.trim();
        let t = t.rsplit_once(':').map_or(t, |(_, t)| t);
        let t = t.strip_suffix("-py3").unwrap_or(t);
        self.ngc.iter().find(|c| c.tag == t)
    }

    /// Every row of every file as (file, row id, source), for the verify test and for
    /// `gpulint` to cite where a fact came from.
    pub fn sources(&self) -> Vec<(&'static str, String, String)> {
        let mut out = Vec::new();
        for r in &self.minor_compat {
            out.push((
                CUDA_DRIVER,
                format!("minor_compat {}", r.cuda_major),
                r.source.clone(),
            ));
        }
        for r in &self.releases {
            out.push((
                CUDA_DRIVER,
                format!("release {}", r.version),
                r.source.clone(),
            ));
        }
        for r in &self.arch {
            out.push((CUDA_ARCH, format!("release {}", r.cuda), r.source.clone()));
        }
        for r in &self.arch_names {
            out.push((GPUS, format!("arch {}", r.cc), r.source.clone()));
        }
        for r in &self.gpus {
            out.push((GPUS, format!("gpu {}", r.name), r.source.clone()));
        }
        for r in &self.ptx {
            out.push((PTX_ISA, format!("isa {}", r.ptx), r.source.clone()));
        }
        out.push((
            FORWARD_COMPAT,
            "rules".to_string(),
            self.fc_rules.source.clone(),
        ));
        for r in &self.fc_packages {
            out.push((
                FORWARD_COMPAT,
                format!("package {}", r.cuda),
                r.source.clone(),
            ));
        }
        for r in &self.cudnn {
            out.push((
                CUDNN,
                format!("pair {}/{}", r.cudnn_major, r.cuda_major),
                r.source.clone(),
            ));
        }
        for r in &self.components {
            out.push((
                CUDA_COMPONENTS,
                format!("release {}", r.toolkit),
                r.source.clone(),
            ));
        }
        for r in &self.ngc {
            out.push((
                NGC_PYTORCH,
                format!("container {}", r.tag),
                r.source.clone(),
            ));
        }
        out
    }
}

/// Whether a `cuda_driver.toml` row is inferred rather than stated by its source.
fn release_is_inferred(r: &ReleaseRow) -> bool {
    r.basis == Some(Basis::Inferred)
}

/// The embedded text of a data file ("" for a name not in [`FILES`]).
fn embedded_text(name: &str) -> String {
    FILES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| (*t).to_string())
        .unwrap_or_default()
}

/// "20F5" → 0x20f5; `None` unless exactly four hex digits.
fn pci_id(s: &str) -> Option<u16> {
    (s.len() == 4)
        .then(|| u16::from_str_radix(s, 16).ok())
        .flatten()
}

/// `nvidia-cufft-cu12` → `nvidia-cufft`: the component a distribution carries.
fn component_stem(dist: &str) -> &str {
    match dist.rsplit_once("-cu") {
        Some((stem, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => stem,
        _ => dist,
    }
}

/// "8.7" → (8, 7).
fn parse_isa(s: &str) -> anyhow::Result<(u16, u16)> {
    let (a, b) = s
        .split_once('.')
        .ok_or_else(|| anyhow::anyhow!("expected major.minor"))?;
    Ok((a.parse()?, b.parse()?))
}
