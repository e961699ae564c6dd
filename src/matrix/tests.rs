//! Matrix loading and lookups against the embedded matrices/*.toml: every table parses, rows
//! keep their source URLs, and the lookups the rules rely on give the published answers.

use super::*;
use crate::arch::ComputeCapability;

fn m() -> Matrix {
    Matrix::embedded().unwrap()
}
fn d(s: &str) -> DriverVersion {
    s.parse().unwrap()
}
fn c(s: &str) -> CudaVersion {
    s.parse().unwrap()
}
fn cc(s: &str) -> ComputeCapability {
    s.parse().unwrap()
}

// ---- verify: the data files are tidy ----

#[test]
fn every_row_has_an_http_source() {
    let m = m();
    let sources = m.sources();
    assert!(sources.len() > 150);
    for (file, id, src) in sources {
        assert!(
            src.starts_with("https://") || src.starts_with("http://"),
            "{file} {id}: source {src:?} is not an http(s) URL"
        );
        assert!(!src.contains(' '), "{file} {id}: source has a space");
    }
}

fn assert_strictly_sorted<T: PartialOrd + std::fmt::Debug>(file: &str, keys: &[T]) {
    for w in keys.windows(2) {
        assert!(
            w[0] < w[1],
            "{file}: {:?} must come before {:?} (sorted, no duplicates)",
            w[0],
            w[1]
        );
    }
}

#[test]
fn files_are_sorted_without_duplicate_keys() {
    let m = m();
    let k: Vec<_> = m.minor_compat.iter().map(|r| r.cuda_major).collect();
    assert_strictly_sorted(CUDA_DRIVER, &k);
    let k: Vec<_> = m.releases.iter().map(|r| r.version).collect();
    assert_strictly_sorted(CUDA_DRIVER, &k);
    let k: Vec<_> = m.arch.iter().map(|r| r.cuda).collect();
    assert_strictly_sorted(CUDA_ARCH, &k);
    let k: Vec<_> = m.arch_names.iter().map(|r| r.cc).collect();
    assert_strictly_sorted(GPUS, &k);
    let k: Vec<_> = m.gpus.iter().map(|r| r.name.clone()).collect();
    assert_strictly_sorted(GPUS, &k);
    let k: Vec<_> = m.ptx.iter().map(|r| parse_isa(&r.ptx).unwrap()).collect();
    assert_strictly_sorted(PTX_ISA, &k);
    let k: Vec<_> = m.fc_packages.iter().map(|r| r.cuda).collect();
    assert_strictly_sorted(FORWARD_COMPAT, &k);
    let k: Vec<_> = m
        .cudnn
        .iter()
        .map(|r| (r.cudnn_major, r.cuda_major))
        .collect();
    assert_strictly_sorted(CUDNN, &k);
    let k: Vec<_> = m.ngc.iter().map(|r| r.tag.clone()).collect();
    assert_strictly_sorted(NGC_PYTORCH, &k);
    for r in &m.arch {
        assert_strictly_sorted(CUDA_ARCH, &r.sm);
        assert_strictly_sorted(CUDA_ARCH, &r.arch_specific);
        assert_strictly_sorted(CUDA_ARCH, &r.family_specific);
        for v in r.arch_specific.iter().chain(&r.family_specific) {
            assert!(
                r.sm.contains(v),
                "{CUDA_ARCH} {}: variant of sm_{v} without sm_{v}",
                r.cuda
            );
        }
    }
}

#[test]
fn gpu_aliases_are_unique_and_archs_known() {
    let m = m();
    let mut seen = std::collections::BTreeMap::new();
    for g in m.gpus() {
        let arch = m.arch_name(g.cc);
        assert_eq!(arch, Some(g.arch.as_str()), "{}: cc {} arch", g.name, g.cc);
        assert_eq!(g.datacenter, g.segment == Segment::Datacenter);
        for a in std::iter::once(&g.name).chain(&g.aliases) {
            let n = gpu::normalize(a);
            if let Some(other) = seen.insert(n.clone(), g.name.clone()) {
                assert_eq!(other, g.name, "alias {a:?} used by two GPUs");
            }
            // every alias finds its own model
            assert_eq!(m.gpu(a).map(|x| &x.name), Some(&g.name), "alias {a:?}");
        }
    }
}

#[test]
fn forward_compat_table_is_complete() {
    let m = m();
    for p in &m.fc_packages {
        let mut all: Vec<u32> = p
            .compatible
            .iter()
            .chain(&p.not_applicable)
            .chain(&p.incompatible)
            .chain(&p.unlisted)
            .copied()
            .collect();
        all.sort_unstable();
        assert_eq!(
            all, m.fc_rules.branches,
            "package {} must classify every branch",
            p.cuda
        );
    }
}

#[test]
fn every_cudnn_and_ngc_row_parses_and_arch_cc_is_known() {
    let m = m();
    for r in &m.arch {
        for sm in &r.sm {
            // sm_101: Thor before CUDA 13.0 renamed it sm_110. sm_88: nvcc 13.1+ accepts it
            // (measured), but NVIDIA publishes no architecture or product for it: unknown.
            let known =
                m.arch_name(ComputeCapability::from_sm(*sm)).is_some() || *sm == 101 || *sm == 88;
            assert!(known, "{CUDA_ARCH} {}: sm_{sm} has no architecture", r.cuda);
        }
    }
    assert_eq!(m.ngc_pytorch("24.05").unwrap().cuda, Some(c("12.4.1")));
}

// ---- spot checks against the documents ----

#[test]
fn cuda_min_driver_spot_checks() {
    let m = m();
    let r = m.cuda_min_driver(&c("12.1.1")).unwrap();
    assert_eq!(r.linux, Some(d("530.30.02")));
    assert_eq!(r.release, "CUDA 12.1 Update 1");
    // a cudart patch selects the last update of the minor
    assert_eq!(
        m.cuda_min_driver(&c("12.1.105")).unwrap().release,
        "CUDA 12.1 Update 1"
    );
    assert_eq!(
        m.cuda_min_driver(&c("12.2.140")).unwrap().linux,
        Some(d("535.104.05"))
    );
    assert_eq!(
        m.cuda_min_driver(&c("12.2")).unwrap().linux,
        Some(d("535.54.03"))
    );
    assert_eq!(
        m.cuda_min_driver(&c("11.8")).unwrap().linux,
        Some(d("520.61.05"))
    );
    assert_eq!(
        m.cuda_min_driver(&c("11.8")).unwrap().windows,
        Some(d("520.06"))
    );
    let r = m.cuda_min_driver(&c("13.0")).unwrap();
    assert_eq!(r.linux, Some(d("580.65.06")));
    assert_eq!(r.windows, None);
    assert_eq!(
        m.cuda_min_driver(&c("11.0")).unwrap().release,
        "CUDA 11.0.1 RC"
    );
    assert_eq!(
        m.cuda_min_driver(&c("10.1.243")).unwrap().linux,
        Some(d("418.39"))
    );
    assert_eq!(m.cuda_min_driver(&c("12.7")), None);
    assert_eq!(m.cuda_min_driver(&c("9.2")), None);
}

#[test]
fn minor_compat_floors() {
    let m = m();
    assert_eq!(m.minor_compat_floor(11).unwrap().0, d("450.80.02"));
    assert_eq!(m.minor_compat_floor(12).unwrap().0, d("525.60.13"));
    assert_eq!(m.minor_compat_floor(13).unwrap().0.branch(), 580);
    assert_eq!(m.minor_compat_floor(10), None);
}

#[test]
fn max_cuda_for_driver_matches_nvidia_smi() {
    let m = m();
    assert_eq!(m.max_cuda_for_driver(&d("535.104.05")), Some(c("12.2")));
    assert_eq!(m.max_cuda_for_driver(&d("580.159.04")), Some(c("13.0")));
    assert_eq!(m.max_cuda_for_driver(&d("525.60.13")), Some(c("12.0")));
    assert_eq!(m.max_cuda_for_driver(&d("470.82.01")), Some(c("11.4")));
    assert_eq!(m.max_cuda_for_driver(&d("595.71.05")), Some(c("13.2")));
    assert_eq!(m.max_cuda_for_driver(&d("400.1")), None);
}

#[test]
fn nvcc_targets_spot_checks() {
    let m = m();
    let t = |s: &str| s.parse::<crate::arch::ArchTarget>().unwrap();
    assert!(m.nvcc_targets(&c("11.8")).unwrap().contains(&35));
    assert!(!m.nvcc_targets(&c("12.0")).unwrap().contains(&37));
    assert!(m.nvcc_targets(&c("12.9")).unwrap().contains(&70));
    assert!(!m.nvcc_targets(&c("13.0")).unwrap().contains(&70));
    assert!(m.nvcc_targets(&c("12.8.1")).unwrap().contains(&120));
    assert_eq!(m.nvcc_supports(&c("12.8"), &t("sm_100f")), Some(false));
    assert_eq!(m.nvcc_supports(&c("12.9"), &t("sm_100f")), Some(true));
    assert_eq!(m.nvcc_supports(&c("13.0"), &t("sm_101")), Some(false));
    assert_eq!(m.nvcc_supports(&c("13.0"), &t("sm_110a")), Some(true));
    assert_eq!(m.nvcc_supports(&c("12.0"), &t("compute_90a")), Some(true));
    // Measured from the 13.0 nvcc wheels; the release notes' transcription lacked it.
    assert!(m.nvcc_targets(&c("13.0")).unwrap().contains(&88));
    assert!(m.nvcc_targets(&c("13.1")).unwrap().contains(&88));
    assert!(!m.nvcc_targets(&c("13.3")).unwrap().contains(&107));
    assert_eq!(m.nvcc_supports(&c("13.4"), &t("sm_107a")), Some(true));
    // 11.2 and 11.5 (no wheel) cited from CMake's model, as their measured neighbours say.
    // 11.3/11.4/11.6 from their NVRTC: sm_87 arrives in 11.4; 11.7 from its ptxas: sm_87,
    // no sm_90.
    assert!(!m.nvcc_targets(&c("11.2")).unwrap().contains(&87));
    assert!(m.nvcc_targets(&c("11.2")).unwrap().contains(&86));
    assert!(m.nvcc_targets(&c("11.5")).unwrap().contains(&87));
    assert!(!m.nvcc_targets(&c("11.3")).unwrap().contains(&87));
    assert!(m.nvcc_targets(&c("11.3")).unwrap().contains(&86));
    assert!(m.nvcc_targets(&c("11.4")).unwrap().contains(&87));
    assert!(m.nvcc_targets(&c("11.6.2")).unwrap().contains(&35));
    assert!(!m.nvcc_targets(&c("11.6")).unwrap().contains(&89));
    assert!(m.nvcc_targets(&c("11.7")).unwrap().contains(&87));
    assert!(!m.nvcc_targets(&c("11.7")).unwrap().contains(&90));
}

#[test]
fn gpu_lookup_spot_checks() {
    let m = m();
    let g = |q: &str| m.gpu(q).map(|g| (g.name.clone(), g.cc));
    assert_eq!(g("Tesla T4").unwrap().1, cc("7.5"));
    assert_eq!(g("T4").unwrap().1, cc("7.5"));
    assert_eq!(g("H100").unwrap().1, cc("9.0"));
    assert_eq!(
        g("NVIDIA H100 80GB HBM3").unwrap(),
        ("NVIDIA H100 SXM".into(), cc("9.0"))
    );
    assert_eq!(g("NVIDIA H100 PCIe").unwrap().0, "NVIDIA H100 PCIe");
    assert_eq!(g("nvidia h100 pcie").unwrap().0, "NVIDIA H100 PCIe");
    assert_eq!(g("NVIDIA GeForce RTX 4090").unwrap().1, cc("8.9"));
    assert_eq!(g("RTX 4090").unwrap().1, cc("8.9"));
    assert_eq!(g("NVIDIA B200").unwrap().1, cc("10.0"));
    assert_eq!(g("NVIDIA GeForce RTX 5090").unwrap().1, cc("12.0"));
    assert_eq!(g("Tesla V100-SXM2-16GB").unwrap().1, cc("7.0"));
    assert_eq!(g("NVIDIA A100-SXM4-80GB").unwrap().1, cc("8.0"));
    assert_eq!(g("NVIDIA A10G").unwrap().0, "NVIDIA A10G");
    assert_eq!(g("NVIDIA A10").unwrap().0, "NVIDIA A10");
    assert_eq!(g("NVIDIA L40S").unwrap().0, "NVIDIA L40S");
    assert_eq!(g("NVIDIA L4").unwrap().0, "NVIDIA L4");
    assert_eq!(g("Tesla K80").unwrap().1, cc("3.7"));
    assert_eq!(g("Tesla P100-PCIE-16GB").unwrap().1, cc("6.0"));
    assert_eq!(g("NVIDIA GH200 480GB").unwrap().1, cc("9.0"));
    assert_eq!(g("NVIDIA RTX A6000").unwrap().1, cc("8.6"));
    assert_eq!(g("NVIDIA RTX 6000 Ada Generation").unwrap().1, cc("8.9"));
    assert_eq!(g("GB200").unwrap().1, cc("10.0"));
    assert_eq!(g("H20").unwrap().1, cc("9.0"));
    assert_eq!(g("Jetson Orin").unwrap().1, cc("8.7"));
    assert_eq!(g("NVIDIA A100 80GB PCIe").unwrap().1, cc("8.0"));
    assert_eq!(g("NVIDIA H200").unwrap().0, "NVIDIA H200");
    assert_eq!(g("sm_90"), None);
    assert_eq!(g("9.0"), None);
    assert_eq!(g(""), None);
    assert!(m.gpu("Tesla T4").unwrap().datacenter);
    assert!(!m.gpu("RTX 4090").unwrap().datacenter);
    assert_eq!(
        m.gpu("RTX 4090").unwrap().forward_compat_eligible(),
        Some(false)
    );
    assert_eq!(m.gpu("RTX A6000").unwrap().forward_compat_eligible(), None);
}

/// Products added from the legacy compute-capability page and from pages that state an
/// architecture with a single compute capability; the two TITAN X generations stay apart.
#[test]
fn legacy_and_architecture_sourced_gpus() {
    let m = m();
    let g = |q: &str| m.gpu(q).map(|g| (g.name.clone(), g.cc));
    assert_eq!(g("Quadro P4000").unwrap().1, cc("6.1"));
    assert_eq!(
        g("NVIDIA GeForce GTX 1070 Ti").unwrap().0,
        "GeForce GTX 1070 Ti"
    );
    assert_eq!(g("NVIDIA GeForce GTX 1070").unwrap().0, "GeForce GTX 1070");
    assert_eq!(g("Quadro M6000 24GB").unwrap().0, "Quadro M6000 24GB");
    assert_eq!(g("Quadro M6000").unwrap().1, cc("5.2"));
    assert_eq!(g("NVIDIA GeForce GTX 750 Ti").unwrap().1, cc("5.0"));
    assert_eq!(g("Quadro K620").unwrap().0, "Quadro K620");
    assert_eq!(g("Quadro K620M").unwrap().0, "Quadro K620M");
    assert_eq!(g("NVIDIA TITAN X (Pascal)").unwrap().1, cc("6.1"));
    assert_eq!(g("NVIDIA GeForce GTX TITAN X").unwrap().1, cc("5.2"));
    // A bare "TITAN X" names two GPUs of different compute capability: unknown.
    assert_eq!(g("TITAN X"), None);
    assert_eq!(
        m.gpu("Quadro P4000").unwrap().forward_compat_eligible(),
        None
    );
    assert_eq!(
        m.gpu("GeForce GTX 950").unwrap().forward_compat_eligible(),
        Some(false)
    );
    // L20: Ada (8.9) from NVIDIA's TensorRT-LLM page, which names no segment.
    let l20 = m.gpu("NVIDIA L20").unwrap();
    assert_eq!((l20.cc, l20.segment), (cc("8.9"), Segment::Unknown));
    assert_eq!(l20.forward_compat_eligible(), None);
    assert_eq!(g("L20").unwrap().0, "NVIDIA L20");
    // No NVIDIA page read states these: inferred from their PCI device-ID block (issue 27),
    // and marked so; "L2" is not a token of "L20" or "L4".
    assert_eq!(g("NVIDIA L2").unwrap(), ("NVIDIA L2".into(), cc("8.9")));
    assert_eq!(m.gpu("NVIDIA L2").unwrap().basis, Some(Basis::Inferred));
    assert_eq!(g("NVIDIA L20").unwrap().0, "NVIDIA L20");
    assert_eq!(
        g("NVIDIA A800-SXM4-80GB").unwrap(),
        ("NVIDIA A800".into(), cc("8.0"))
    );
}

#[test]
fn ptx_isa_spot_checks() {
    let m = m();
    assert_eq!(m.ptx_isa_min_cuda((7, 0)), Some(c("11.0")));
    assert_eq!(m.ptx_isa_min_cuda((7, 8)), Some(c("11.8")));
    assert_eq!(m.ptx_isa_min_cuda((8, 0)), Some(c("12.0")));
    assert_eq!(m.ptx_isa_min_cuda((8, 6)), Some(c("12.7")));
    assert_eq!(m.ptx_isa_min_cuda((8, 8)), Some(c("12.9")));
    assert_eq!(m.ptx_isa_min_cuda((9, 0)), Some(c("13.0")));
    assert_eq!(m.ptx_isa_min_cuda((99, 0)), None);
}

#[test]
fn forward_compat_spot_checks() {
    let m = m();
    use ForwardCompat::*;
    assert_eq!(m.forward_compat(&d("535.104.05"), &c("12.4")), NotNeeded); // minor version compat
    assert_eq!(m.forward_compat(&d("535.104.05"), &c("13.0")), Supported);
    assert_eq!(m.forward_compat(&d("570.124.06"), &c("13.1")), Supported);
    assert_eq!(m.forward_compat(&d("580.65.06"), &c("13.0")), NotNeeded);
    assert!(matches!(
        m.forward_compat(&d("550.54.15"), &c("13.0")),
        Unlisted { .. }
    ));
    assert!(matches!(
        m.forward_compat(&d("470.82.01"), &c("12.4")),
        Unlisted { .. }
    ));
    // NVIDIA's table marks cuda-compat-12-4 "X" on R570, but no package is needed: CUDA 12.4
    // needs driver >= 550.54.14 (CUDA 12.4 release notes, "CUDA Driver", table 3), and "the
    // CUDA driver maintains backward compatibility to continue support of applications built
    // on older toolkits" (docs.nvidia.com/deploy/cuda-compatibility/conclusion.html): the
    // 570.124.06 driver runs CUDA 12.4 itself.
    assert_eq!(m.forward_compat(&d("570.124.06"), &c("12.4")), NotNeeded);
    assert_eq!(m.forward_compat(&d("450.80.02"), &c("11.8")), NotNeeded);
    assert_eq!(m.forward_compat(&d("418.39"), &c("11.0")), Unknown);
}

#[test]
fn cudnn_and_ngc() {
    let m = m();
    assert_eq!(m.cudnn_cuda_majors(9), Some(&[11, 12, 13][..]));
    assert_eq!(m.cudnn_cuda_majors(8), Some(&[10, 11, 12][..]));
    assert_eq!(m.cudnn_cuda_majors(6), None);
    assert_eq!(m.cudnn_min_driver(9, 13), Some(&d("580.65.06")));
    let n = m.ngc_pytorch("nvcr.io/nvidia/pytorch:24.05-py3").unwrap();
    assert_eq!(n.cudnn.as_deref(), Some("9.1.0.70"));
    assert_eq!(m.ngc_pytorch("24.05-py3").unwrap().tag, "24.05");
    assert!(m.ngc_pytorch("23.99").is_none());
}

/// NGC PyTorch 23.01-25.12 (ci/ngc-pytorch-rows.py): the PyTorch of every month Triton's
/// compatibility.md names, the image ENV where a dump was read, 25.07 as no release.
#[test]
fn ngc_pytorch_2023_to_2025() {
    let m = m();
    let torch = |t: &str| m.ngc_pytorch(t).and_then(|r| r.pytorch.clone());
    for (tag, want) in [
        ("23.10", "2.1.0a0+32f93b1"),
        ("24.03", "2.3.0a0+40ec155e58"),
        ("24.07", "2.4.0a0+3bcc3cddb5"),
        ("24.10", "2.5.0a0+e000cf0ad9"),
        ("24.11", "2.6.0a0+df5bbc09d1"),
        ("25.01", "2.6.0a0+ecf3bae40a"),
        ("25.03", "2.7.0a0+7c8ec84dab"),
        ("25.04", "2.7.0a0+79aa17489c"),
        ("25.05", "2.8.0a0+5228986c39"),
        ("25.06", "2.8.0a0+5228986c39"),
        ("25.10", "2.9.0a0+145a3a7bda"),
        ("25.11", "2.10.0a0+b558c986e8"),
    ] {
        assert_eq!(torch(tag).as_deref(), Some(want), "{tag}");
    }
    let r = m.ngc_pytorch("23.10").unwrap();
    assert_eq!(r.cuda, Some(c("12.2.2")));
    assert_eq!(r.cuda_driver_version, Some(d("535.104.05")));
    assert_eq!(m.ngc_pytorch("25.10").unwrap().cuda, Some(c("13.0.2")));
    // Only the PyTorch is known for 24.07.
    assert_eq!(m.ngc_pytorch("24.07").unwrap().cuda, None);
    // 25.07 was never released: a row that says so and nothing else.
    for r in &m.ngc {
        if r.no_release {
            assert!(
                r.cuda.is_none() && r.pytorch.is_none() && r.cudnn.is_none(),
                "{NGC_PYTORCH} {}: a no-release row with facts",
                r.tag
            );
        }
    }
    assert!(m.ngc_pytorch("25.07").unwrap().no_release);
    // Months with no source stay unknown.
    assert!(m.ngc_pytorch("23.01").is_none());
}

#[test]
fn overrides_replace_whole_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(PTX_ISA),
        "[[isa]]\nptx = \"9.9\"\ncuda = \"14.0\"\nsource = \"https://example.com/ptx\"\n",
    )
    .unwrap();
    let m = Matrix::with_overrides(dir.path()).unwrap();
    assert_eq!(m.ptx_isa_min_cuda((9, 9)), Some(c("14.0")));
    assert_eq!(m.ptx_isa_min_cuda((8, 0)), None);
    // other files are still the embedded ones
    assert_eq!(m.gpu("Tesla T4").unwrap().cc, cc("7.5"));

    std::fs::write(dir.path().join(GPUS), "[[gpu]]\nname = 1\n").unwrap();
    let err = Matrix::with_overrides(dir.path()).unwrap_err();
    assert!(format!("{err:#}").contains(GPUS));
}

// ---- cuda_components.toml: a library's release from its own version ----

#[test]
fn component_versions_give_their_cuda_release_not_the_wheel_major() {
    let m = m();
    // torch 2.8.0 (cu128) pulls nvidia-cufft-cu12 11.3.3.83: CUDA 12.8 Update 1, not 12.0.
    assert_eq!(
        m.component_release("nvidia-cufft-cu12", "11.3.3.83"),
        Some(c("12.8"))
    );
    assert_eq!(
        m.component_release("nvidia-cuda-runtime-cu12", "12.8.90"),
        Some(c("12.8"))
    );
    // CUDA 13 wheels have no suffix; cuFFT's own major (12) is not the CUDA major.
    assert_eq!(
        m.component_release("nvidia-cufft", "12.0.0.61"),
        Some(c("13.0"))
    );
    // A pinned prefix matches a longer version, but not a different number.
    assert_eq!(
        m.component_release("nvidia-npp", "13.0.1.2"),
        Some(c("13.0"))
    );
    assert_eq!(m.component_release("nvidia-cufft-cu12", "11.3.3.8"), None);
    // Versions in no row are unknown, whatever the wheel suffix says.
    assert_eq!(m.component_release("nvidia-cufft-cu12", "99.0.0.1"), None);
    assert_eq!(m.component_release("nvidia-cudnn-cu12", "9.10.2.21"), None);
}

// ---- facts newer than our tables: open bounds, never saturated ----

#[test]
fn driver_newer_than_every_row_has_an_open_cuda_bound() {
    let m = m();
    // The newest row a document states: an inferred row never closes the bound (issue 27).
    let newest = m
        .releases
        .iter()
        .filter(|r| r.basis != Some(Basis::Inferred))
        .map(|r| CudaVersion::new(r.version.major, r.version.minor))
        .max()
        .unwrap();
    let newest_row = m.cuda_min_driver(&newest).unwrap().linux.unwrap();
    // The newest row's own driver supports exactly that release.
    let exact = m.driver_cuda(&newest_row).unwrap();
    assert_eq!((exact.at_least, exact.open), (newest, false));
    assert_eq!(m.max_cuda_for_driver(&newest_row), Some(newest));
    // A driver of a newer branch supports at least it, maybe more: never "exactly newest".
    let newer: DriverVersion = format!("{}.10.01", newest_row.branch() + 15)
        .parse()
        .unwrap();
    let open = m.driver_cuda(&newer).unwrap();
    assert!(open.open && open.at_least >= newest, "{open:?}");
    assert_eq!(m.max_cuda_for_driver(&newer), None);
    assert!(open.to_string().starts_with(">= "), "{open}");
    // Older drivers are exact as before.
    let d: DriverVersion = "535.104.05".parse().unwrap();
    assert_eq!(m.max_cuda_for_driver(&d), Some(c("12.2")));
}

#[test]
fn ptx_isa_above_every_row_needs_a_cuda_newer_than_every_release() {
    let m = m();
    assert_eq!(m.ptx_isa_need((9, 0)), Some(PtxNeed::Known(c("13.0"))));
    match m.ptx_isa_need((99, 5)) {
        Some(PtxNeed::NewerThanKnown {
            newest_isa,
            newest_cuda,
        }) => {
            assert!(newest_isa >= (9, 2), "{newest_isa:?}");
            assert_eq!(m.ptx_isa_min_cuda(newest_isa), Some(newest_cuda));
        }
        other => panic!("{other:?}"),
    }
    // Below every row is not "newer": unknown.
    assert_eq!(m.ptx_isa_need((1, 0)), None);
}

// ---- cross-file consistency: a release added to one table must be added to all ----

/// Releases a table is known to lack, each with the reason; the test fails both when a new
/// release is missing from a table and when a listed gap has been filled (shrink the list).
const KNOWN_GAPS: &[(&str, &str, &str)] = &[];

/// The `key` rows of a data file, as TOML values (for rows no lookup keeps).
fn raw_rows(file: &str, key: &str) -> Vec<toml::Value> {
    let text = FILES.iter().find(|(n, _)| *n == file).unwrap().1;
    let v: toml::Value = toml::from_str(text).unwrap();
    v.get(key)
        .and_then(|a| a.as_array())
        .cloned()
        .unwrap_or_default()
}

/// Every CUDA release (11.0 on) that any table names has a driver row, an arch row and a PTX
/// ISA row (and, from 11.8, a components row), or is a counted KNOWN_GAPS entry.
#[test]
fn every_cuda_release_is_in_every_table_a_verdict_needs() {
    let m = m();
    let mm = |v: CudaVersion| CudaVersion::new(v.major, v.minor);
    let set = |it: Vec<CudaVersion>| -> std::collections::BTreeSet<CudaVersion> {
        it.into_iter().map(mm).filter(|v| *v >= c("11.0")).collect()
    };
    let driver = set(m.releases.iter().map(|r| r.version).collect());
    let arch = set(m.arch.iter().map(|r| r.cuda).collect());
    let components = set(m.component_releases());
    // PTX ISA 8.6 names CUDA 12.7, which never shipped: no other table can have it.
    let ptx = set(m
        .ptx
        .iter()
        .map(|r| r.cuda)
        .filter(|v| *v != c("12.7"))
        .collect());
    // A release that introduced no PTX ISA (12.6 writes 8.5) has its measured [[release]] row.
    let ptx_measured = set(raw_rows(PTX_ISA, "release")
        .iter()
        .filter_map(|r| r.get("cuda")?.as_str()?.parse().ok())
        .collect());
    let ptx_known: std::collections::BTreeSet<CudaVersion> =
        ptx.union(&ptx_measured).copied().collect();
    // CUDA releases the other tables name: torch variants (cu126 → 12.6), NGC containers,
    // cuda-compat packages.
    let torch_variants = set(raw_rows(TORCH, "variant")
        .iter()
        .filter_map(|r| {
            let digits = r.get("tag")?.as_str()?.strip_prefix("cu")?;
            let (major, minor) = digits.split_at(digits.len().checked_sub(1)?);
            Some(CudaVersion::new(major.parse().ok()?, minor.parse().ok()?))
        })
        .collect());
    let others = set(m
        .ngc
        .iter()
        .filter_map(|r| r.cuda)
        .chain(m.fc_packages.iter().map(|r| r.cuda))
        .collect());
    let all: std::collections::BTreeSet<CudaVersion> = driver
        .iter()
        .chain(&arch)
        .chain(&components)
        .chain(&ptx_known)
        .chain(&torch_variants)
        .chain(&others)
        .copied()
        .collect();
    let mut missing: Vec<(String, String)> = Vec::new();
    for v in &all {
        if !driver.contains(v) {
            missing.push((CUDA_DRIVER.into(), v.to_string()));
        }
        if !arch.contains(v) {
            missing.push((CUDA_ARCH.into(), v.to_string()));
        }
        if !ptx_known.contains(v) {
            missing.push((PTX_ISA.into(), v.to_string()));
        }
        // NVIDIA's cuda-toolkit metapackage (the component table's source) starts at 11.8.
        if *v >= c("11.8") && !components.contains(v) {
            missing.push((CUDA_COMPONENTS.into(), v.to_string()));
        }
    }
    let mut gaps: Vec<(String, String)> = KNOWN_GAPS
        .iter()
        .map(|(f, v, _)| (f.to_string(), v.to_string()))
        .collect();
    missing.sort();
    gaps.sort();
    assert_eq!(
        missing, gaps,
        "tables disagree on CUDA releases (left: missing now, right: KNOWN_GAPS)"
    );
}

/// Every torch line from 1.13 on has its PyPI default build's GPU code measured from the
/// wheel (ci/torch-arch-lists.py: wheel file name and sha256 in the note, the PyPI files page
/// as source). A release added to torch.toml without its measured row fails here, and so
/// does a measured row replaced by a transcription.
#[test]
fn every_pypi_default_build_is_measured_from_its_wheel() {
    let text = FILES.iter().find(|(n, _)| *n == TORCH).unwrap().1;
    let v: toml::Value = toml::from_str(text).unwrap();
    let rows = |k: &str| {
        v.get(k)
            .and_then(|a| a.as_array())
            .cloned()
            .unwrap_or_default()
    };
    let s = |t: &toml::Value, k: &str| t.get(k).and_then(|x| x.as_str()).map(str::to_string);
    let key = |t: &str| -> Vec<u32> { t.split('.').map(|x| x.parse().unwrap()).collect() };
    let mut checked = 0;
    for r in rows("release") {
        let line = s(&r, "torch").unwrap();
        if key(&line) < vec![1, 13] {
            continue;
        }
        let Some(tag) = s(&r, "pypi_default") else {
            continue;
        };
        let arch = rows("arch")
            .into_iter()
            .find(|a| {
                s(a, "torch").as_deref() == Some(&line) && s(a, "tag").as_deref() == Some(&tag)
            })
            .unwrap_or_else(|| panic!("torch {line}: no [[arch]] row for its PyPI default {tag}"));
        let note = s(&arch, "note").unwrap_or_default();
        assert!(
            note.starts_with("measured by ci/torch-arch-lists.py"),
            "torch {line} {tag}: not measured: {note:?}"
        );
        let (wheel, digest) = cited_wheel(&note).unwrap_or_else(|| {
            panic!("torch {line} {tag}: the note names no wheel and digest: {note:?}")
        });
        assert!(
            wheel.starts_with(&format!("torch-{line}.0-")),
            "torch {line} {tag}: cites {wheel}"
        );
        assert!(is_sha256(digest), "torch {line} {tag}: sha256 {digest:?}");
        let suffix = tag.trim_start_matches("cu");
        assert!(
            note.contains(&format!("+cu{suffix}")),
            "torch {line}: the wheel's __version__ is not the {tag} build: {note:?}"
        );
        assert_eq!(
            s(&arch, "source").unwrap(),
            format!("https://pypi.org/project/torch/{line}.0/#files")
        );
        checked += 1;
    }
    assert!(checked >= 17, "{checked} lines checked");
}

pub(super) fn is_sha256(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// `… of torch-2.0.0-cp310-….whl (sha256 7a93…; …` → the wheel's file name and its digest.
fn cited_wheel(note: &str) -> Option<(&str, &str)> {
    let (head, tail) = note.split_once(".whl (sha256 ")?;
    let wheel_start = head.rfind(' ').map_or(0, |i| i + 1);
    let digest = tail.split(|c: char| !c.is_ascii_hexdigit()).next()?;
    Some((&note[wheel_start..head.len() + 4], digest))
}

#[test]
fn cited_wheel_reads_the_note_format() {
    let n = "measured on torch/lib of torch-2.0.0-cp310-cp310-manylinux1_x86_64.whl (sha256 7a9319a67294ef02459a19738bbfa8727bb5307b822dadd708bc2ccf6c901aca; __version__ 2.0.0+cu117)";
    let (w, d) = cited_wheel(n).unwrap();
    assert_eq!(w, "torch-2.0.0-cp310-cp310-manylinux1_x86_64.whl");
    assert!(is_sha256(d), "{d}");
    assert!(cited_wheel("torch-2.0.0.whl (sha 12)").is_none());
}

/// The cited artifacts (cuda_components.toml's cuda-toolkit wheels, torch_dependents.toml's
/// wheels) name a file of that release and a well-formed sha256; ci/verify-citations.py checks
/// each digest against PyPI and re-derives rows from the artifacts.
#[test]
fn cited_artifacts_name_their_release_file_and_sha256() {
    let rows = |name: &str, key: &str| -> Vec<toml::Value> {
        let text = FILES.iter().find(|(n, _)| *n == name).unwrap().1;
        let v: toml::Value = toml::from_str(text).unwrap();
        v.get(key).and_then(|a| a.as_array()).cloned().unwrap()
    };
    let s = |t: &toml::Value, k: &str| t.get(k).and_then(|x| x.as_str()).unwrap().to_string();
    let components = rows(CUDA_COMPONENTS, "release");
    assert!(components.len() >= 30, "{}", components.len());
    for r in &components {
        let toolkit = s(r, "toolkit");
        assert!(
            s(r, "wheel").starts_with(&format!("cuda_toolkit-{toolkit}-")),
            "{toolkit}: {}",
            s(r, "wheel")
        );
        assert!(is_sha256(&s(r, "sha256")), "{toolkit}: {}", s(r, "sha256"));
    }
    let dependents = rows(TORCH_DEPENDENTS, "dependent");
    assert!(dependents.len() >= 30, "{}", dependents.len());
    for r in &dependents {
        let (package, version) = (s(r, "package"), s(r, "version"));
        let file = s(r, "source").rsplit('/').next().unwrap().to_string();
        assert!(
            file.starts_with(&format!("{}-{version}-", package.replace('-', "_")))
                && file.ends_with(".whl"),
            "{package} {version}: {file}"
        );
        assert!(is_sha256(&s(r, "sha256")), "{package} {version}");
    }
}
