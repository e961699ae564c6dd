//! Serde shapes of the `matrices/*.toml` files, one struct per row kind. Unknown keys are
//! errors so a typo in a data file fails the load instead of silently dropping a fact.

use crate::arch::ComputeCapability;
use crate::version::{CudaVersion, DriverVersion};
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CudaDriverFile {
    pub(crate) minor_compat: Vec<MinorCompatRow>,
    pub(crate) release: Vec<ReleaseRow>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
// Some fields are facts kept for messages and the verify test, not read by lookups yet.
#[allow(dead_code)]
pub(crate) struct MinorCompatRow {
    pub(crate) cuda_major: u32,
    pub(crate) linux: DriverVersion,
    pub(crate) windows: Option<DriverVersion>,
    pub(crate) max_branch_exclusive: Option<u32>,
    pub(crate) note: Option<String>,
    pub(crate) source: String,
    /// How the row is known, when the data file says; `None`: from its source.
    #[serde(default)]
    pub(crate) basis: Option<super::Basis>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReleaseRow {
    pub(crate) version: CudaVersion,
    pub(crate) label: String,
    pub(crate) linux: Option<DriverVersion>,
    pub(crate) windows: Option<DriverVersion>,
    /// Corroboration, or for an inferred row the evidence it is inferred from.
    pub(crate) note: Option<String>,
    pub(crate) source: String,
    /// How the row is known, when the data file says; `None`: from its source.
    #[serde(default)]
    pub(crate) basis: Option<super::Basis>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CudaArchFile {
    pub(crate) release: Vec<ArchRow>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
// Some fields are facts kept for messages and the verify test, not read by lookups yet.
#[allow(dead_code)]
pub(crate) struct ArchRow {
    pub(crate) cuda: CudaVersion,
    pub(crate) sm: Vec<u32>,
    pub(crate) arch_specific: Vec<u32>,
    pub(crate) family_specific: Vec<u32>,
    pub(crate) note: Option<String>,
    pub(crate) source: String,
    /// How the row is known, when the data file says; `None`: from its source.
    #[serde(default)]
    pub(crate) basis: Option<super::Basis>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct GpusFile {
    pub(crate) arch: Vec<ArchNameRow>,
    pub(crate) gpu: Vec<GpuModel>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ArchNameRow {
    pub(crate) cc: ComputeCapability,
    pub(crate) name: String,
    pub(crate) source: String,
}

/// Where NVIDIA's compute-capability page lists a product.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Segment {
    Datacenter,
    Workstation,
    Consumer,
    Jetson,
    /// A product whose compute capability an NVIDIA page states but no page we read places in
    /// a segment: forward compatibility eligibility stays unknown rather than guessed.
    Unknown,
}

/// One GPU product from `gpus.toml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuModel {
    pub name: String,
    pub cc: ComputeCapability,
    /// Architecture name: Kepler, Maxwell, Pascal, Volta, Turing, Ampere, Ada Lovelace,
    /// Hopper, Blackwell.
    pub arch: String,
    pub segment: Segment,
    /// `nvidia-smi` product names and short names.
    pub aliases: Vec<String>,
    pub note: Option<String>,
    pub source: String,
    /// How the row is known, when the data file says; `None`: from its source.
    #[serde(default)]
    pub basis: Option<super::Basis>,
    /// Filled in after parsing from `segment`.
    #[serde(skip)]
    pub datacenter: bool,
}

impl GpuModel {
    /// Whether CUDA forward compatibility (the `cuda-compat` package) may be used on this GPU.
    /// The CUDA Compatibility guide allows it on data center GPUs and Jetson boards, and on
    /// "select NGC Server Ready SKUs of RTX cards", which a product name cannot tell apart:
    /// workstation RTX parts and products of no known segment answer `None` (unknown),
    /// consumer GeForce parts `Some(false)`.
    pub fn forward_compat_eligible(&self) -> Option<bool> {
        match self.segment {
            Segment::Datacenter | Segment::Jetson => Some(true),
            Segment::Workstation | Segment::Unknown => None,
            Segment::Consumer => Some(false),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PtxFile {
    pub(crate) isa: Vec<PtxRow>,
    /// The newest PTX ISA each CUDA release's ptxas accepts, where a wheel lets us measure it:
    /// evidence for the `isa` rows (src/matrix/measured_tests.rs), not read by lookups.
    #[serde(default)]
    #[allow(dead_code)]
    pub(crate) release: Vec<PtxReleaseRow>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
// Evidence for the `isa` rows, checked by src/matrix/measured_tests.rs; no lookup reads it.
#[allow(dead_code)]
pub(crate) struct PtxReleaseRow {
    pub(crate) cuda: CudaVersion,
    /// "9.0": the newest `.version` the release's ptxas accepts (what its nvcc writes).
    pub(crate) newest_isa: String,
    pub(crate) note: Option<String>,
    pub(crate) source: String,
    #[serde(default)]
    pub(crate) basis: Option<super::Basis>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PtxRow {
    /// "8.7" (major.minor of the PTX ISA).
    pub(crate) ptx: String,
    pub(crate) cuda: CudaVersion,
    /// How the row was measured (wheel and sha256), when it was.
    #[allow(dead_code)]
    pub(crate) note: Option<String>,
    pub(crate) source: String,
    /// How the row is known, when the data file says; `None`: from its source.
    #[serde(default)]
    pub(crate) basis: Option<super::Basis>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ForwardCompatFile {
    pub(crate) rules: ForwardCompatRules,
    pub(crate) branch: Vec<BranchRow>,
    pub(crate) package: Vec<CompatPackageRow>,
}

/// NVIDIA's designation of a data center driver branch (Supported Drivers and CUDA Toolkit
/// Versions): it decides whether the branch may be a forward compatibility target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BranchType {
    LongTermSupport,
    Production,
    /// Short-lived; never a forward compatibility target.
    NewFeature,
}

impl std::fmt::Display for BranchType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BranchType::LongTermSupport => "a Long Term Support Branch",
            BranchType::Production => "a Production Branch",
            BranchType::NewFeature => "a New Feature Branch",
        })
    }
}

/// One driver branch with its designation and end of life, as NVIDIA's driver docs list it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BranchRow {
    pub branch: u32,
    pub designation: BranchType,
    /// "September 2029"; `None` where the page gives none (New Feature Branches).
    pub eol: Option<String>,
    pub source: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
// Some fields are facts kept for messages and the verify test, not read by lookups yet.
#[allow(dead_code)]
pub(crate) struct ForwardCompatRules {
    pub(crate) introduced_in: CudaVersion,
    pub(crate) applies_to: Vec<String>,
    pub(crate) unlisted_branches_supported: bool,
    pub(crate) new_feature_branches_supported: bool,
    pub(crate) branches: Vec<u32>,
    pub(crate) source: String,
    /// How the row is known, when the data file says; `None`: from its source.
    #[serde(default)]
    pub(crate) basis: Option<super::Basis>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CompatPackageRow {
    pub(crate) cuda: CudaVersion,
    pub(crate) compatible: Vec<u32>,
    pub(crate) not_applicable: Vec<u32>,
    pub(crate) incompatible: Vec<u32>,
    /// Branches the supported-drivers page of the package's time does not list (end of life,
    /// or New Feature Branches): not supported targets, by the page's rules.
    #[serde(default)]
    pub(crate) unlisted: Vec<u32>,
    /// Cells the table we read did not show, filled by inference (see `note`).
    #[serde(default)]
    pub(crate) inferred_cells: Vec<u32>,
    /// The evidence for inferred cells or an inferred row.
    pub(crate) note: Option<String>,
    pub(crate) source: String,
    /// How the row is known, when the data file says; `None`: from its source.
    #[serde(default)]
    pub(crate) basis: Option<super::Basis>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CudnnFile {
    pub(crate) pair: Vec<CudnnRow>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
// Some fields are facts kept for messages and the verify test, not read by lookups yet.
#[allow(dead_code)]
pub(crate) struct CudnnRow {
    pub(crate) cudnn_major: u32,
    pub(crate) cuda_major: u32,
    pub(crate) linux: Option<DriverVersion>,
    pub(crate) windows: Option<DriverVersion>,
    pub(crate) note: Option<String>,
    pub(crate) source: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NgcFile {
    pub(crate) container: Vec<NgcPytorch>,
}

/// One `nvcr.io/nvidia/pytorch:YY.MM-py3` release. Fields the release notes did not let us
/// confirm are `None`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NgcPytorch {
    /// "24.05".
    pub tag: String,
    /// `None` where no source read gives it (the PyTorch version may still be known).
    pub cuda: Option<CudaVersion>,
    /// The image's own `CUDA_DRIVER_VERSION` ENV: the driver its CUDA release ships with (what
    /// its cuda-compat carries), not a minimum the host needs.
    pub cuda_driver_version: Option<DriverVersion>,
    /// `true` for a month NVIDIA published no release (25.07): the row says so, nothing else.
    #[serde(default)]
    pub no_release: bool,
    /// The release notes' wording, e.g. "CUDA 10.1 Update 1".
    pub cuda_label: Option<String>,
    pub pytorch: Option<String>,
    pub cudnn: Option<String>,
    /// "requires NVIDIA Driver release N or later".
    pub min_driver_branch: Option<u32>,
    /// Older data center drivers the notes allow through forward compatibility.
    #[serde(default)]
    pub datacenter_drivers: Vec<DriverVersion>,
    pub source: String,
    /// How the row is known, when the data file says; `None`: from its source.
    #[serde(default)]
    pub basis: Option<super::Basis>,
    pub note: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CudaComponentsFile {
    pub(crate) release: Vec<ComponentsRow>,
}

/// One CUDA toolkit release and the exact version of each component wheel it pins.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
// `wheel`/`sha256` identify the measured artifact: ci/verify-citations.py checks them on PyPI.
#[allow(dead_code)]
pub(crate) struct ComponentsRow {
    pub(crate) toolkit: CudaVersion,
    pub(crate) source: String,
    /// How the row is known, when the data file says; `None`: from its source.
    #[serde(default)]
    pub(crate) basis: Option<super::Basis>,
    pub(crate) wheel: String,
    pub(crate) sha256: String,
    pub(crate) components: std::collections::BTreeMap<String, String>,
}

/// `torch_dependents.toml`: the torch a package release pins in its wheel metadata
/// (`ci/torch-dependents.py`).
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DependentRow {
    pub(crate) package: String,
    pub(crate) version: String,
    pub(crate) torch: String,
    #[allow(dead_code)]
    pub(crate) sha256: String,
    pub(crate) source: String,
    /// How the row is known, when the data file says; `None`: from its source.
    #[serde(default)]
    pub(crate) basis: Option<super::Basis>,
}

#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DependentsFile {
    #[serde(default)]
    pub(crate) dependent: Vec<DependentRow>,
}

/// `gpu_pci.toml`: NVIDIA's PCI device-ID table (ci/open-gpu-pci-ids.py).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct GpuPciFile {
    pub(crate) table: PciTable,
    pub(crate) device: Vec<PciRow>,
}

/// Where the device table was read: the README at one tag of open-gpu-kernel-modules.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PciTable {
    #[allow(dead_code)] // the citation's tag; `commit` pins it in `source`
    pub(crate) tag: String,
    pub(crate) commit: String,
    pub(crate) source: String,
}

/// One row of the table: a PCI device ID (with the subsystem IDs where boards differ) and the
/// product name, which is the `nvidia-smi` spelling.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PciRow {
    /// "20F5" (upper-case hex, as the README writes it).
    pub pci: String,
    /// "10DE 1799": subsystem vendor and device.
    pub subsystem: Option<String>,
    pub name: String,
    /// The first open kernel module release whose README lists the device ID; `None` when it
    /// is in the first README with a table (older drivers drove it too).
    pub first_listed: Option<DriverVersion>,
}

/// `onnxruntime.toml`: the CUDA and cuDNN an ONNX Runtime release's GPU packages are built for.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct OrtBuildRow {
    /// A release line (`1.19`) or one exact version (`1.18.1`).
    pub(crate) ort: String,
    /// The CUDA column: `12` (12.x) or `11.8`.
    pub(crate) cuda: String,
    pub(crate) cudnn: u32,
    /// Whether PyPI's `onnxruntime-gpu` of that release is this build. Kept as the page says;
    /// no verdict assumes the PyPI build (ONNX Runtime's own feeds use the same name).
    #[allow(dead_code)]
    pub(crate) pypi: bool,
    pub(crate) source: String,
    /// How the row is known, when the data file says; `None`: from its source.
    #[serde(default)]
    pub(crate) basis: Option<super::Basis>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct OrtFile {
    #[serde(default)]
    pub(crate) build: Vec<OrtBuildRow>,
}
