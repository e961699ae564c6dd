//! Issue 28 over synthetic trees: package-level requirements (which libraries a package
//! loads, on which GPUs) judged through the loader and reachability models.

use super::testutil::*;
use crate::finding::Finding;
use crate::inventory::Inventory;
use crate::rule_meta::Severity;
use crate::rules::check_image;

/// Writes `data` at `rel` under `root`, with its directories.
fn put(root: &std::path::Path, rel: &str, data: &[u8]) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, data).unwrap();
}

fn kernel_fixture(name: &str) -> Vec<u8> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/fatbin/kernels");
    std::fs::read(dir.join(name)).unwrap()
}

/// (path, severity, message) of one rule's findings.
fn of_rule(f: &[Finding], rule: &str) -> Vec<(String, Severity, String)> {
    f.iter()
        .filter(|f| f.rule == rule)
        .map(|f| {
            let path = f
                .location
                .as_ref()
                .and_then(|l| l.path.clone())
                .unwrap_or_default();
            (path, f.severity, f.message.clone())
        })
        .collect()
}

/// Issue 28 "Libraries loaded only on some GPUs": triton's CUPTI for Blackwell sits in
/// `backends/nvidia/lib/cupti-blackwell/`, a directory triton selects for compute capability
/// 10.0 and newer. On a V100 it is never loaded: GL001 is info, with the reason. Its sibling
/// `cupti/` keeps the on-demand warning; a plain library in a `-hopper` directory is judged
/// normally on a Hopper GPU; once a Python extension NEEDs the variant it is an error again.
/// Real fatbin fixtures (sm_80 SASS only), scanned as a `dir:` image.
#[test]
fn gl001_arch_variant_directories_are_info_on_older_gpus() {
    let m = matrix();
    let one = kernel_fixture("libonekernel_sm80.so");
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    let lib = "usr/local/lib/python3.12/site-packages/triton/backends/nvidia/lib";
    put(r, &format!("{lib}/cupti-blackwell/libcupti.so.12"), &one);
    put(r, &format!("{lib}/cupti/libcupti.so.12"), &one);
    put(r, "opt/plugins/kernels-hopper/libplug.so", &one);
    let mut inv = crate::scan::scan_image(&format!("dir:{}", r.display()), None).unwrap();
    let on = |inv: &Inventory, gpu: &str| {
        of_rule(
            &check_image(inv, &m, &[target(&m, gpu, "580.65.06")]),
            "GL001",
        )
    };
    let at = |f: &[(String, Severity, String)], p: &str| {
        f.iter()
            .find(|g| g.0.ends_with(p))
            .cloned()
            .unwrap_or_else(|| panic!("no GL001 at {p}: {f:?}"))
    };
    let v100 = on(&inv, "V100");
    assert_eq!(v100.len(), 3, "{v100:?}");
    let bw = at(&v100, "cupti-blackwell/libcupti.so.12");
    assert_eq!(bw.1, Severity::Info, "{bw:?}");
    assert!(
        bw.2.contains("not loaded on this GPU")
            && bw.2.contains("cupti-blackwell/ at run time for Blackwell GPUs (compute capability 10.0 and newer)"),
        "{bw:?}"
    );
    let plain = at(&v100, "cupti/libcupti.so.12");
    assert_eq!(plain.1, Severity::Warning, "{plain:?}");
    assert_eq!(at(&v100, "kernels-hopper/libplug.so").1, Severity::Info);
    // On an H100 the Hopper plugin is selected and its sm_80 code cannot run: an error.
    let h100 = on(&inv, "H100");
    assert_eq!(at(&h100, "kernels-hopper/libplug.so").1, Severity::Error);
    assert_eq!(
        at(&h100, "cupti-blackwell/libcupti.so.12").1,
        Severity::Info
    );
    // On a B200 triton selects cupti-blackwell/; CUPTI is still loaded only on demand.
    let b200 = on(&inv, "NVIDIA B200");
    assert_eq!(
        at(&b200, "cupti-blackwell/libcupti.so.12").1,
        Severity::Warning,
        "{b200:?}"
    );
    // A Python extension that NEEDs the plugin by name reaches it: an error on the V100.
    let mut ext = binary(
        "usr/local/lib/python3.12/site-packages/plug/_C.cpython-312-x86_64-linux-gnu.so",
        &[],
        &[],
    );
    ext.needed = vec!["libplug.so".into()];
    inv.binaries.push(ext);
    assert_eq!(
        at(&on(&inv, "V100"), "kernels-hopper/libplug.so").1,
        Severity::Error
    );
}

/// The directory's words are matched against the architecture names of the matrices; an
/// ancestor's name, an executable or a Python extension is never a run-time variant.
#[test]
fn arch_variant_dir_reads_only_the_containing_directory() {
    use super::reachability::arch_variant_dir;
    let m = matrix();
    let v = |p: &str| {
        arch_variant_dir(&m, &binary(p, &[], &[])).map(|v| (v.arch, v.first_cc.to_string()))
    };
    assert_eq!(
        v("x/lib/cupti-blackwell/libcupti.so.12"),
        Some(("Blackwell".into(), "10.0".into()))
    );
    assert_eq!(
        v("x/ada_kernels/libk.so"),
        Some(("Ada Lovelace".into(), "8.9".into()))
    );
    assert_eq!(v("opt/hopper-app/lib/libk.so"), None);
    assert_eq!(v("x/hopper/bin/tool"), None);
    assert_eq!(v("x/hopper/_C.cpython-312-x86_64-linux-gnu.so"), None);
    assert_eq!(v("x/lib/cupti/libcupti.so.12"), None);
}
