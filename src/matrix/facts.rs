//! [`Facts`]: the one view of the compatibility knowledge that every rule family asks (image
//! rules through `ImageContext::facts`, run-configuration rules through `RuleCtx::facts`, host
//! checks through `CheckOptions::facts`). One method per question; each answer carries the
//! row it came from ([`Sourced`]: the row's source and its [`Basis`]) so messages can cite it.
//! The data behind it is the loaded [`Matrix`] (with `--matrices` overrides); rules never read
//! its tables themselves.

use super::images::ImagesFile;
use super::rows::{ArchRow, ForwardCompatRules};
use super::torch::{TorchMatrix, TorchRelease, TorchVariant};
use super::{DriverCuda, ForwardCompat, GpuDriverFloor, GpuModel, Matrix, PtxNeed};
use crate::arch::{ArchTarget, ComputeCapability};
use crate::version::{CudaVersion, DriverVersion};

/// How a fact is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Basis {
    /// Read from an artifact gpulint's tooling fetched (a wheel's metadata, its sha256 kept).
    Measured,
    /// Stated by the document at the row's URL.
    Cited,
    /// Neither: derived or noted without a document.
    Inferred,
}

impl Basis {
    /// The basis a row has when its data file does not state one (rows carry no `basis`
    /// yet): a row with a URL is cited, any other row inferred.
    fn of_source(source: &str) -> Basis {
        if source.starts_with("https://") || source.starts_with("http://") {
            Basis::Cited
        } else {
            Basis::Inferred
        }
    }
}

/// An answer with the row it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sourced<T> {
    pub value: T,
    /// The row's source: a URL, or a note where no document exists.
    pub source: String,
    pub basis: Basis,
}

impl<T> Sourced<T> {
    /// An answer from a row: the basis its data file states, else the one its source gives.
    fn row(value: T, source: &str, basis: Option<Basis>) -> Sourced<T> {
        Sourced {
            value,
            source: source.to_string(),
            basis: basis.unwrap_or_else(|| Basis::of_source(source)),
        }
    }

    /// An answer from a row read off an artifact gpulint's tooling fetched (a wheel, its
    /// sha256 kept): measured unless its data file states otherwise.
    fn measured_row(value: T, source: &str, basis: Option<Basis>) -> Sourced<T> {
        Sourced {
            value,
            source: source.to_string(),
            basis: basis.unwrap_or(Basis::Measured),
        }
    }
}

/// One ONNX Runtime GPU build (onnxruntime.toml): the row's release, CUDA column and cuDNN
/// major.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrtBuild {
    pub ort: String,
    pub cuda: String,
    pub cudnn: u32,
}

/// The compatibility knowledge, asked one question at a time.
#[derive(Debug, Clone)]
pub struct Facts {
    matrix: Matrix,
}

impl Facts {
    /// Facts over `matrix` (the one the command loaded, with its overrides).
    pub fn new(matrix: Matrix) -> Facts {
        Facts { matrix }
    }

    /// Facts over the built-in matrices.
    pub fn embedded() -> anyhow::Result<Facts> {
        Ok(Facts::new(Matrix::embedded()?))
    }

    /// Facts that know nothing: every question answers unknown. Host detection without the
    /// matrices uses it, and then relies on what the driver itself reports.
    pub fn unknown() -> &'static Facts {
        static UNKNOWN: std::sync::OnceLock<Facts> = std::sync::OnceLock::new();
        UNKNOWN.get_or_init(|| {
            Facts::new(Matrix {
                minor_compat: Vec::new(),
                releases: Vec::new(),
                arch: Vec::new(),
                arch_names: Vec::new(),
                gpus: Vec::new(),
                ptx: Vec::new(),
                fc_rules: ForwardCompatRules {
                    introduced_in: CudaVersion::new(0, 0),
                    applies_to: Vec::new(),
                    unlisted_branches_supported: false,
                    new_feature_branches_supported: false,
                    branches: Vec::new(),
                    source: String::new(),
                    basis: None,
                },
                fc_branches: Vec::new(),
                fc_packages: Vec::new(),
                cudnn: Vec::new(),
                cudnn_majors: Vec::new(),
                ngc: Vec::new(),
                torch: TorchMatrix::default(),
                components: Vec::new(),
                dependents: Vec::new(),
                ort_builds: Vec::new(),
                images: ImagesFile::default(),
                pci: Default::default(),
            })
        })
    }

    /// The loaded data, for resolving targets and listing GPUs; rules ask the questions below.
    pub fn matrix(&self) -> &Matrix {
        &self.matrix
    }

    // ---- drivers and CUDA releases (cuda_driver.toml) ------------------------------------

    /// Minimum Linux driver for this CUDA release, without minor-version compatibility. The
    /// runtime checks the driver's CUDA version (major.minor) only, so every update and patch
    /// of a release needs what its GA row needs: 12.4.1 answers from the 12.4 row, and the
    /// patch of a library (cudart 13.0.96) is not read as a toolkit update.
    pub fn cuda_min_driver(&self, cuda: CudaVersion) -> Option<Sourced<DriverVersion>> {
        let req = self
            .matrix
            .cuda_min_driver(&CudaVersion::new(cuda.major, cuda.minor))?;
        Some(Sourced::row(req.linux?, &req.source, req.basis))
    }

    /// Oldest Linux driver that runs any release of this CUDA major (minor-version
    /// compatibility). `None` for majors without it (10.x and older) or not in the table.
    pub fn minor_compat_floor(&self, major: u32) -> Option<Sourced<DriverVersion>> {
        let row = self
            .matrix
            .minor_compat
            .iter()
            .find(|r| r.cuda_major == major)?;
        Some(Sourced::row(row.linux.clone(), &row.source, row.basis))
    }

    /// The CUDA support of a driver, open above for a driver newer than every row; the source
    /// is the row of the newest release the driver meets.
    pub fn driver_cuda(&self, driver: &DriverVersion) -> Option<Sourced<DriverCuda>> {
        let value = self.matrix.driver_cuda(driver)?;
        let row = self.matrix.newest_release_within(driver)?;
        Some(Sourced::row(value, &row.source, row.basis))
    }

    /// The newest CUDA release a driver supports (what nvidia-smi prints as "CUDA Version");
    /// `None` for a driver newer than every row (see [`Self::driver_cuda`]).
    pub fn max_cuda_for_driver(&self, driver: &DriverVersion) -> Option<Sourced<CudaVersion>> {
        let d = self.driver_cuda(driver)?;
        (!d.value.open).then_some(Sourced {
            value: d.value.at_least,
            source: d.source,
            basis: d.basis,
        })
    }

    /// Whether a cuda-compat package lets `driver` run `cuda` (see [`Matrix::forward_compat`]);
    /// the source is NVIDIA's forward-compatibility table row for that release, else the
    /// table's rules.
    pub fn forward_compat(
        &self,
        driver: &DriverVersion,
        cuda: &CudaVersion,
    ) -> Sourced<ForwardCompat> {
        let rules = &self.matrix.fc_rules;
        let branch = driver.branch();
        let pkg = self
            .matrix
            .fc_packages
            .iter()
            .find(|p| p.cuda.same_release(cuda));
        let in_cell = pkg.is_some_and(|p| {
            [&p.compatible, &p.not_applicable, &p.incompatible]
                .iter()
                .any(|c| c.contains(&branch))
        });
        let nfb = self
            .matrix
            .branch_type(branch)
            .filter(|b| b.designation == super::BranchType::NewFeature);
        let (source, basis) = match (pkg, nfb) {
            // A cell the table we read did not show is inferred, whatever the row's basis.
            (Some(p), _) if in_cell && p.inferred_cells.contains(&branch) => {
                (&p.source, Some(Basis::Inferred))
            }
            (Some(p), _) if in_cell => (&p.source, p.basis),
            // Decided by the branch's type, which its own row states.
            (_, Some(b)) => (&b.source, None),
            (Some(p), None) => (&p.source, p.basis),
            (None, None) => (&rules.source, rules.basis),
        };
        Sourced::row(self.matrix.forward_compat(driver, cuda), source, basis)
    }

    /// What a driver needs to JIT PTX of this ISA (see [`Matrix::ptx_isa_need`]); the source
    /// is the ISA's row, or the newest row for an ISA above every row.
    pub fn ptx_isa_need(&self, isa: (u16, u16)) -> Option<Sourced<PtxNeed>> {
        let need = self.matrix.ptx_isa_need(isa)?;
        let row_isa = match need {
            PtxNeed::Known(_) => isa,
            PtxNeed::NewerThanKnown { newest_isa, .. } => newest_isa,
        };
        let row = self.matrix.ptx_row(row_isa)?;
        Some(Sourced::row(need, &row.source, row.basis))
    }

    // ---- GPUs (gpus.toml, cuda_arch.toml) --------------------------------------------------

    /// A GPU by `nvidia-smi` name or short name ("NVIDIA H200", "H100").
    pub fn gpu(&self, name: &str) -> Option<Sourced<&GpuModel>> {
        let g = self.matrix.gpu(name)?;
        Some(Sourced::row(g, &g.source, g.basis))
    }

    /// A GPU by its PCI IDs, as `/sys/bus/pci/devices/*/{device,subsystem_vendor,
    /// subsystem_device}` give them for vendor 0x10de: NVIDIA's product name for the device,
    /// and its model when the name matches one (as an `nvidia-smi` name would). Boards of one
    /// device ID that NVIDIA names apart are told apart by the subsystem IDs; without them
    /// (or with IDs the table lacks) such a device answers `None`.
    pub fn gpu_by_pci(
        &self,
        device: u16,
        subsystem: Option<(u16, u16)>,
    ) -> Option<Sourced<PciGpu<'_>>> {
        let rows: Vec<&super::PciRow> = self
            .matrix
            .pci
            .device
            .iter()
            .filter(|r| super::pci_id(&r.pci) == Some(device))
            .collect();
        let exact = subsystem.and_then(|(v, d)| {
            let want = format!("{v:04X} {d:04X}");
            rows.iter().find(|r| {
                r.subsystem
                    .as_deref()
                    .is_some_and(|s| s.eq_ignore_ascii_case(&want))
            })
        });
        let row = match exact {
            Some(r) => *r,
            None => {
                let first = rows.first()?;
                if !rows.iter().all(|r| r.name == first.name) {
                    return None;
                }
                *first
            }
        };
        let value = PciGpu {
            name: &row.name,
            model: self.matrix.gpu(&row.name),
        };
        Some(Sourced::row(value, &self.matrix.pci.table.source, None))
    }

    /// The first driver known to drive a GPU model: the earliest of the first open kernel
    /// module releases whose README lists one of the model's PCI device IDs under one of its
    /// own names (a driver below it drives none of its boards). Only for Blackwell and later
    /// (compute capability 10.0 and up), which NVIDIA supports with the open kernel modules
    /// alone (NVIDIA's "transitions fully towards open-source GPU kernel modules" post): for
    /// older GPUs the proprietary driver's support predates the open README's listing (the T4
    /// is listed from 575.51.02 on, and driven since R410). `None` also when any of its
    /// devices was listed from the first README with a table, or no device names it.
    pub fn gpu_first_listed(&self, model: &GpuModel) -> Option<Sourced<DriverVersion>> {
        if model.cc.major < 10 {
            return None;
        }
        let own = |n: &str| {
            let n = super::gpu::normalize(n);
            std::iter::once(&model.name)
                .chain(&model.aliases)
                .any(|a| super::gpu::normalize(a) == n)
        };
        let mut firsts = self
            .matrix
            .pci
            .device
            .iter()
            .filter(|r| own(&r.name))
            .map(|r| r.first_listed.as_ref())
            .peekable();
        firsts.peek()?;
        // The earliest listing of any board: a driver below it drives none of them.
        let first = firsts
            .collect::<Option<Vec<_>>>()?
            .into_iter()
            .min()?
            .clone();
        let t = &self.matrix.pci.table;
        let source = t
            .source
            .replace(&format!("blob/{}/", t.commit), &format!("blob/{first}/"));
        Some(Sourced::row(first, &source, None))
    }

    /// Every compute capability of a known GPU, ascending, each once.
    pub fn known_capabilities(&self) -> Vec<ComputeCapability> {
        let mut ccs: Vec<ComputeCapability> = self.matrix.gpus.iter().map(|g| g.cc).collect();
        ccs.sort();
        ccs.dedup();
        ccs
    }

    // ---- ONNX Runtime (onnxruntime.toml) ------------------------------------------------

    /// The build of ONNX Runtime `version` for CUDA major `cuda_major`: its CUDA column and
    /// cuDNN major. The most specific row wins (`1.18.1` over `1.18`). With the CUDA major
    /// unknown it answers only when every build of the release has the same cuDNN major.
    pub fn onnxruntime_build(
        &self,
        version: &str,
        cuda_major: Option<u32>,
    ) -> Option<Sourced<OrtBuild>> {
        let release = version.split('+').next().unwrap_or(version);
        let matches = |ort: &str| release == ort || release.starts_with(&format!("{ort}."));
        let major_of = |cuda: &str| cuda.split('.').next().and_then(|m| m.parse::<u32>().ok());
        let rows: Vec<_> = self
            .matrix
            .ort_builds
            .iter()
            .filter(|r| matches(&r.ort))
            .filter(|r| cuda_major.is_none() || major_of(&r.cuda) == cuda_major)
            .collect();
        // Per CUDA major, the most specific row.
        let mut best: Vec<&super::rows::OrtBuildRow> = Vec::new();
        for r in rows {
            let depth = r.ort.split('.').count();
            match best
                .iter_mut()
                .find(|b| major_of(&b.cuda) == major_of(&r.cuda))
            {
                Some(b) if b.ort.split('.').count() < depth => *b = r,
                Some(_) => {}
                None => best.push(r),
            }
        }
        let first = *best.first()?;
        if best.iter().any(|b| b.cudnn != first.cudnn) {
            return None;
        }
        Some(Sourced::row(
            OrtBuild {
                ort: first.ort.clone(),
                cuda: first.cuda.clone(),
                cudnn: first.cudnn,
            },
            &first.source,
            first.basis,
        ))
    }

    /// The oldest compute capability of the architecture one word of whose name is `word`,
    /// any case: "blackwell" → 10.0, "ada" → 8.9 ("Ada Lovelace").
    pub fn arch_first_cc(&self, word: &str) -> Option<Sourced<ComputeCapability>> {
        let row = self
            .matrix
            .arch_names
            .iter()
            .filter(|a| {
                a.name
                    .split_whitespace()
                    .any(|w| w.eq_ignore_ascii_case(word))
            })
            .min_by_key(|a| a.cc)?;
        Some(Sourced::row(row.cc, &row.source, None))
    }

    /// The oldest driver that can drive a GPU of `sm_<sm>` (see [`GpuDriverFloor`]).
    pub fn gpu_driver_floor(&self, sm: u32) -> Option<Sourced<GpuDriverFloor>> {
        let floor = self.matrix.gpu_driver_floor(sm)?;
        let (source, basis) = (floor.source.clone(), floor.basis);
        Some(Sourced::row(floor, &source, basis))
    }

    /// The real (`sm_XY`) targets nvcc of this CUDA release accepts.
    pub fn nvcc_targets(&self, cuda: &CudaVersion) -> Option<Sourced<&[u32]>> {
        let row = self.matrix.arch_row(cuda)?;
        Some(Sourced::row(
            row.sm.as_slice(),
            &row.source,
            arch_basis(row),
        ))
    }

    /// Whether nvcc of this CUDA release can compile for `target`; `None` when the release
    /// has no row.
    pub fn nvcc_supports(&self, cuda: &CudaVersion, target: &ArchTarget) -> Option<Sourced<bool>> {
        let row = self.matrix.arch_row(cuda)?;
        let value = self.matrix.nvcc_supports(cuda, target)?;
        Some(Sourced::row(value, &row.source, arch_basis(row)))
    }

    /// The CUDA release (major.minor) that ships an NVIDIA component wheel at this version
    /// (see [`Matrix::component_release`]).
    pub fn component_release(&self, dist: &str, version: &str) -> Option<Sourced<CudaVersion>> {
        let row = self.matrix.component_row(dist, version)?;
        let release = CudaVersion::new(row.toolkit.major, row.toolkit.minor);
        Some(Sourced::measured_row(release, &row.source, row.basis))
    }

    // ---- PyTorch (torch.toml, torch_companions.toml, torch_dependents.toml) ---------------

    /// The release line of a torch version (`2.3.1` → the 2.3 line).
    pub fn torch_release(&self, version: &str) -> Option<Sourced<&TorchRelease>> {
        let r = self.matrix.torch.release(version)?;
        Some(Sourced::row(r, &r.source, r.basis))
    }

    /// The newest torch release line gpulint holds.
    pub fn torch_newest_release(&self) -> Option<Sourced<&TorchRelease>> {
        let r = self.matrix.torch.releases().last()?;
        Some(Sourced::row(r, &r.source, r.basis))
    }

    /// The newest torch release line with a build for this CUDA tag (`cu121`), and that build.
    pub fn torch_newest_with_variant(
        &self,
        tag: &str,
    ) -> Option<Sourced<(&TorchRelease, &TorchVariant)>> {
        let (r, v) = self
            .matrix
            .torch
            .releases()
            .iter()
            .rev()
            .find_map(|r| r.variant(tag).map(|v| (r, v)))?;
        Some(Sourced::row((r, v), &v.source, v.basis))
    }

    /// The CUDA variant PyPI serves for `torch==version` (Linux x86_64).
    pub fn torch_pypi_default(&self, torch_version: &str) -> Option<Sourced<CudaVersion>> {
        let rel = self.matrix.torch.release(torch_version)?;
        let value = match rel.pypi_default_variant() {
            Some(v) => v.cuda,
            None => CudaVersion::from_cu_tag(rel.pypi_default.as_deref()?)?,
        };
        Some(Sourced::row(value, &rel.source, rel.basis))
    }

    /// The torch `major.minor` a companion release (`torchvision 0.18.1`) pairs with.
    pub fn torch_companion(&self, package: &str, version: &str) -> Option<Sourced<String>> {
        let (torch, source, basis) = self.matrix.torch.companion_pin(package, version)?;
        Some(Sourced::row(torch, source, basis))
    }

    /// The torch release `package==version` pins in its wheel metadata.
    pub fn torch_pinned_by(&self, package: &str, version: &str) -> Option<Sourced<String>> {
        let d = self.matrix.dependent(package, version)?;
        Some(Sourced::measured_row(d.torch.clone(), &d.source, d.basis))
    }

    /// Every torch release line gpulint holds, oldest first (suggestions search them all).
    pub fn torch_releases(&self) -> &[TorchRelease] {
        self.matrix.torch.releases()
    }

    /// The companion releases (torchvision, torchaudio) pinned to a full torch version
    /// (`2.7.0`), each with the source of its pin.
    pub fn torch_companions_of(&self, torch: &str) -> Vec<Sourced<(&'static str, String)>> {
        let Some(c) = self.matrix.torch.companions_of(torch) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (package, version) in [
            ("torchvision", &c.torchvision),
            ("torchaudio", &c.torchaudio),
        ] {
            let Some(v) = version else { continue };
            if let Some(pin) = self.torch_companion(package, v) {
                out.push(Sourced {
                    value: (package, v.clone()),
                    source: pin.source,
                    basis: pin.basis,
                });
            }
        }
        out
    }

    // ---- images and run configurations (ngc_pytorch.toml, cuda-images.toml) --------------

    /// CUDA inside `nvcr.io/nvidia/pytorch:<tag>` (`24.05-py3`).
    pub fn ngc_pytorch_cuda(&self, tag: &str) -> Option<Sourced<CudaVersion>> {
        let yymm = tag.split('-').next()?;
        let c = self.matrix.ngc_pytorch(yymm)?;
        Some(Sourced::row(c.cuda?, &c.source, c.basis))
    }

    /// The end-of-life CUDA image series containing `cuda` ("10.1", or a whole major).
    pub fn cuda_eol(&self, cuda: CudaVersion) -> Option<Sourced<String>> {
        self.images().cuda_eol.iter().find_map(|r| {
            let hit = match r.series.split_once('.') {
                Some((a, b)) => a.parse() == Ok(cuda.major) && b.parse() == Ok(cuda.minor),
                None => r.series.parse() == Ok(cuda.major),
            };
            hit.then(|| Sourced::row(r.series.clone(), &r.source, r.basis))
        })
    }

    /// The end-of-life date of a base OS (`ubuntu18.04`, any case).
    pub fn os_eol(&self, os: &str) -> Option<Sourced<String>> {
        let os = os.to_ascii_lowercase();
        self.images()
            .os_eol
            .iter()
            .find_map(|r| (r.os == os).then(|| Sourced::row(r.eol.clone(), &r.source, r.basis)))
    }

    /// The control device nodes needed next to `/dev/nvidiaN`.
    pub fn required_devices(&self) -> Vec<Sourced<String>> {
        self.images()
            .required_device
            .iter()
            .map(|r| Sourced::row(r.path.clone(), &r.source, r.basis))
            .collect()
    }

    /// A named TORCH_CUDA_ARCH_LIST entry (`Ampere`, any case) → its list (`8.0;8.6+PTX`).
    pub fn arch_list_named(&self, name: &str) -> Option<Sourced<String>> {
        let n = name.to_ascii_lowercase();
        let r = self.images().arch_name.iter().find(|r| r.name == n)?;
        Some(Sourced::row(r.archs.clone(), &r.source, r.basis))
    }

    /// Whether an image repository publishes no `latest` tag (`Some` when it does not).
    pub fn has_no_latest_tag(&self, repo: &str) -> Option<Sourced<()>> {
        let r = self
            .images()
            .no_latest_tag
            .iter()
            .find(|r| r.repo == repo)?;
        Some(Sourced::row((), &r.source, r.basis))
    }

    /// The CUDA of a published image whose tag does not spell it (`image_cuda` rows).
    pub fn image_cuda(&self, full_repo: &str, tag: &str) -> Option<Sourced<CudaVersion>> {
        self.images().image_cuda.iter().find_map(|r| {
            (r.repo == full_repo && r.tag == tag)
                .then(|| {
                    r.cuda
                        .parse()
                        .ok()
                        .map(|v| Sourced::row(v, &r.source, r.basis))
                })
                .flatten()
        })
    }

    /// The CUDA that TensorFlow `major.minor` GPU builds use (`tensorflow_cuda` rows).
    pub fn tensorflow_cuda(&self, major: u32, minor: u32) -> Option<Sourced<CudaVersion>> {
        let mm = |v: &str| -> Option<(u32, u32)> {
            let (a, b) = v.split_once('.')?;
            Some((a.parse().ok()?, b.parse().ok()?))
        };
        self.images().tensorflow_cuda.iter().find_map(|r| {
            let (fa, fb) = mm(&r.from)?;
            let (ta, tb) = mm(&r.to)?;
            let covers = fa == major && ta == major && (fb..=tb).contains(&minor);
            if !covers {
                return None;
            }
            Some(Sourced::row(r.cuda.parse().ok()?, &r.source, r.basis))
        })
    }

    /// The nvidia/cuda tag of CUDA release `major.minor` with `kind` (`cudnn-runtime`) on
    /// `os` (`ubuntu22.04`) that NVIDIA's supported-tags list names (`cuda_image_tag`
    /// rows; the newest update of that minor when several are listed): the tag and its CUDA.
    pub fn nvidia_cuda_tag(
        &self,
        cuda: CudaVersion,
        kind: &str,
        os: &str,
    ) -> Option<Sourced<(String, CudaVersion)>> {
        self.images()
            .cuda_image_tag
            .iter()
            .filter(|r| r.os == os && r.kinds.iter().any(|k| k == kind))
            .filter_map(|r| {
                let v: CudaVersion = r.cuda.parse().ok()?;
                v.same_release(&cuda).then_some((v, r))
            })
            .max_by_key(|(v, _)| *v)
            .map(|(v, r)| Sourced::row((format!("{}-{kind}-{os}", r.cuda), v), &r.source, r.basis))
    }

    /// The kinds (`runtime`, `cudnn-devel`, …) NVIDIA lists for CUDA `major.minor` on `os`;
    /// empty when it lists none.
    pub fn nvidia_cuda_kinds(&self, cuda: CudaVersion, os: &str) -> Vec<&str> {
        self.images()
            .cuda_image_tag
            .iter()
            .filter(|r| {
                r.os == os
                    && r.cuda
                        .parse::<CudaVersion>()
                        .is_ok_and(|v| v.same_release(&cuda))
            })
            .flat_map(|r| r.kinds.iter().map(String::as_str))
            .collect()
    }

    fn images(&self) -> &ImagesFile {
        &self.matrix.images
    }
}

/// A GPU named by its PCI IDs (see [`Facts::gpu_by_pci`]).
#[derive(Debug, Clone, Copy)]
pub struct PciGpu<'a> {
    /// NVIDIA's product name for the device ("NVIDIA A800 80GB PCIe").
    pub name: &'a str,
    /// Its `gpus.toml` model, when the name matches one.
    pub model: Option<&'a GpuModel>,
}

/// A `cuda_arch.toml` row's basis: the one it states, else measured when its note says it was
/// (`measured by ci/nvcc-arch-lists.py: …`, naming the wheel and its sha256).
fn arch_basis(row: &ArchRow) -> Option<Basis> {
    let measured = row
        .note
        .as_deref()
        .is_some_and(|n| n.starts_with("measured by "));
    row.basis.or(measured.then_some(Basis::Measured))
}

impl PtxNeed {
    /// The release a known ISA needs; `None` for an ISA above every row.
    pub fn known(self) -> Option<CudaVersion> {
        match self {
            PtxNeed::Known(c) => Some(c),
            PtxNeed::NewerThanKnown { .. } => None,
        }
    }
}

#[cfg(test)]
#[path = "facts_tests.rs"]
mod tests;
