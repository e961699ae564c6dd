//! Issue 27: cited and inferred driver rows, and what a verdict resting on an inferred row says.

use super::*;
use crate::matrix::{BranchType, ForwardCompat};
use crate::version::{CudaVersion, DriverVersion};

fn facts() -> Facts {
    Facts::embedded().unwrap()
}
fn d(s: &str) -> DriverVersion {
    s.parse().unwrap()
}
fn c(s: &str) -> CudaVersion {
    s.parse().unwrap()
}

#[test]
fn update_releases_without_a_table_row_resolve_to_their_minors_row() {
    let f = facts();
    for v in ["12.3.2", "12.8.2", "12.9.2", "13.0.3", "13.1.2"] {
        let v = c(v);
        let minor = CudaVersion::new(v.major, v.minor);
        let got = f
            .cuda_min_driver(v)
            .unwrap_or_else(|| panic!("{v}: no row"));
        assert_eq!(Some(got), f.cuda_min_driver(minor), "{v}");
        // The table lookup picks the newest update row of the same minor at or below it.
        let row = f.matrix().cuda_min_driver(&v).unwrap();
        assert!(
            row.release
                .starts_with(&format!("CUDA {}.{} ", v.major, v.minor)),
            "{v}: {}",
            row.release
        );
    }
    // The runfile's bundled driver is not the minimum: 12.8.2 bundles 570.211.01.
    assert_eq!(f.cuda_min_driver(c("12.8.2")).unwrap().value, d("570.26"));
}

#[test]
fn cuda_13_5_is_r620_by_inference_with_its_evidence() {
    let f = facts();
    let r = f.cuda_min_driver(c("13.5.0")).unwrap();
    assert_eq!(r.value, d("620"));
    assert_eq!(r.basis, Basis::Inferred);
    let rows = f.matrix().inferred_rows();
    let row = rows
        .iter()
        .find(|r| r.file == CUDA_DRIVER && r.row == "release 13.5")
        .expect("13.5 listed as inferred");
    assert!(row.evidence.contains("redistrib_13.5.0.json"), "{row:?}");
    assert!(row.evidence.contains("620.70.06"), "{row:?}");
    // Cited rows stay cited: 13.4 -> R615, 13.3 -> 610.43.02.
    assert_eq!(f.cuda_min_driver(c("13.4.1")).unwrap().basis, Basis::Cited);
    assert_eq!(f.cuda_min_driver(c("13.3")).unwrap().value, d("610.43.02"));
}

#[test]
fn an_inferred_row_never_closes_a_drivers_cuda_support() {
    let f = facts();
    // R620 supports at least 13.5 (inferred); whether it runs 13.6 stays unknown.
    let dc = f.driver_cuda(&d("620.70.06")).unwrap().value;
    assert_eq!(dc.at_least, c("13.5"));
    assert!(dc.open, "{dc:?}");
    assert_eq!(f.max_cuda_for_driver(&d("620.70.06")), None);
    // A cited branch is exact.
    assert_eq!(
        f.max_cuda_for_driver(&d("615.71.09")).map(|c| c.value),
        Some(c("13.4"))
    );
}

#[test]
fn forward_compat_uses_branch_types_and_marks_inferred_cells() {
    let f = facts();
    let m = f.matrix();
    let r620 = m.branch_type(620).unwrap();
    assert_eq!(r620.designation, BranchType::LongTermSupport);
    assert_eq!(r620.eol.as_deref(), Some("September 2029"));
    assert_eq!(
        m.branch_type(610).unwrap().designation,
        BranchType::NewFeature
    );
    assert!(m.branch_type(615).is_none(), "no page read designates R615");

    // cuda-compat-13-5 on R535: not on the 620-era list of supported branches.
    let fc = f.forward_compat(&d("535.104.05"), &c("13.5"));
    assert_eq!(fc.basis, Basis::Inferred);
    match &fc.value {
        ForwardCompat::Unlisted { reason } => {
            assert!(
                reason.contains("Long Term Support Branch, end of life June 2026"),
                "{reason}"
            )
        }
        other => panic!("{other:?}"),
    }
    // NVIDIA's cuda-compat-13-4 row marks R610 (a New Feature Branch) compatible, but that
    // cell never decides: R610 runs every 13.x by minor version compatibility.
    assert_eq!(
        f.forward_compat(&d("610.43.02"), &c("13.4")).value,
        ForwardCompat::NotNeeded
    );
    // Without a cell, a New Feature Branch is not a target, by the page's rule.
    let fc = f.forward_compat(&d("610.43.02"), &c("14.0"));
    assert_eq!(fc.basis, Basis::Cited);
    match &fc.value {
        ForwardCompat::Unsupported { reason } => {
            assert!(reason.contains("New Feature Branch"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    // The R620 column of an older package is an inferred cell; the other cells stay cited.
    assert_eq!(
        f.forward_compat(&d("620.70.06"), &c("12.8")).value,
        ForwardCompat::NotNeeded
    );
    assert_eq!(
        f.forward_compat(&d("535.104.05"), &c("12.8")).basis,
        Basis::Cited
    );
}

#[test]
fn explain_lists_the_inferred_rows_under_a_rule() {
    let f = facts();
    let s = explain_section(&f, "GL002", 100).expect("GL002 rests on cuda_driver.toml");
    assert!(s.contains("cuda_driver.toml release 13.5\n"), "{s}");
    assert!(s.contains("basis: inferred"), "{s}");
    assert!(s.contains("redistrib_620.70.06.json"), "{s}");
    let s = explain_section(&f, "GL005", 100).unwrap();
    assert!(s.contains("forward_compat.toml package 13.5"), "{s}");
    // A rule reading no table with inferred rows has no such section.
    assert_eq!(explain_section(&f, "GL004", 100), None);
}

#[test]
fn gpus_are_named_by_pci_device_id_and_a800_l2_are_inferred_rows() {
    let f = facts();
    let l2 = f.gpu_by_pci(0x27b6, None).unwrap();
    assert_eq!(l2.value.name, "NVIDIA L2");
    assert!(
        l2.source.contains("open-gpu-kernel-modules/blob/"),
        "{}",
        l2.source
    );
    let model = l2.value.model.unwrap();
    assert_eq!(
        (model.name.as_str(), model.cc.to_string()),
        ("NVIDIA L2", "8.9".into())
    );
    assert_eq!(f.gpu("NVIDIA L2").unwrap().basis, Basis::Inferred);
    // 20F5 is two boards NVIDIA names apart: the subsystem IDs decide, else unknown.
    let a800 = f.gpu_by_pci(0x20f5, Some((0x10de, 0x1799))).unwrap();
    assert_eq!(a800.value.name, "NVIDIA A800 80GB PCIe");
    assert_eq!(a800.value.model.unwrap().cc.to_string(), "8.0");
    assert!(f.gpu_by_pci(0x20f5, None).is_none());
    assert_eq!(
        f.gpu("NVIDIA A800-SXM4-80GB").unwrap().value.name,
        "NVIDIA A800"
    );
    // A documented model keeps its cited row: the H100 SXM5 board.
    let h100 = f.gpu_by_pci(0x2330, Some((0x10de, 0x16c1))).unwrap();
    assert_eq!(h100.value.model.unwrap().cc.to_string(), "9.0");
    assert!(f.gpu_by_pci(0x0001, None).is_none());
}
