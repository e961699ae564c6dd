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

/// torch (CUDA `torch_cuda`) and bitsandbytes shipping cuda118 (sm_80 only), cuda121 and
/// cuda124 (sm_80, sm_90; cuda124 also sm_100), in one site-packages directory.
fn bnb_inventory(torch_cuda: Option<&str>) -> Inventory {
    let site = "usr/local/lib/python3.11/site-packages";
    let mut inv = Inventory::default();
    inv.python_packages
        .push(pkg("torch", "2.4.0", torch_cuda, site));
    inv.python_packages
        .push(pkg("bitsandbytes", "0.45.0", None, site));
    for (v, sass) in [
        ("118", &["sm_80"][..]),
        ("121", &["sm_80", "sm_90"][..]),
        ("124", &["sm_80", "sm_90", "sm_100"][..]),
    ] {
        let mut b = binary(
            &format!("{site}/bitsandbytes/libbitsandbytes_cuda{v}.so"),
            sass,
            &[],
        );
        b.needed = vec![format!("libcudart.so.{}", &v[..2])];
        inv.binaries.push(b);
    }
    inv
}

/// Issue 28, bitsandbytes: the library it will load (torch's CUDA, or BNB_CUDA_VERSION) must
/// exist (GL013) and its fatbin must cover the GPU (GL001, an error); the ones it will not load
/// are GL001 info. Selection as bitsandbytes' cextension.py: exact, else the same major's
/// nearest (current releases), never another major.
#[test]
fn bitsandbytes_loads_the_library_for_torchs_cuda() {
    let m = matrix();
    let b200 = |inv: &Inventory| check_image(inv, &m, &[target(&m, "NVIDIA B200", "580.65.06")]);
    let sev_at = |f: &[Finding], file: &str| -> Option<Severity> {
        of_rule(f, "GL001")
            .into_iter()
            .find(|g| g.0.ends_with(file))
            .map(|g| g.1)
    };
    // torch cu124: cuda124 is loaded and has sm_100; cuda118 and cuda121 are never loaded.
    let inv = bnb_inventory(Some("12.4"));
    let f = b200(&inv);
    assert!(of_rule(&f, "GL013").is_empty(), "{f:?}");
    assert_eq!(sev_at(&f, "libbitsandbytes_cuda124.so"), None);
    assert_eq!(
        sev_at(&f, "libbitsandbytes_cuda118.so"),
        Some(Severity::Info)
    );
    let info = of_rule(&f, "GL001");
    assert!(
        info.iter().any(|g| g.2.contains(
            "never loaded: bitsandbytes loads libbitsandbytes_cuda124.so (torch 2.4.0 is built for CUDA 12.4)"
        )),
        "{info:?}"
    );
    // BNB_CUDA_VERSION=121 picks cuda121, which has no sm_100: an error on the B200, and
    // cuda124 is the one never loaded now.
    let mut inv = bnb_inventory(Some("12.4"));
    inv.image
        .env
        .insert("BNB_CUDA_VERSION".into(), "121".into());
    let f = b200(&inv);
    assert!(of_rule(&f, "GL013").is_empty(), "{f:?}");
    assert_eq!(
        sev_at(&f, "libbitsandbytes_cuda121.so"),
        Some(Severity::Error)
    );
    assert_eq!(
        sev_at(&f, "libbitsandbytes_cuda118.so"),
        Some(Severity::Info)
    );
    // An override naming a version it does not ship: an error, no fallback.
    inv.image
        .env
        .insert("BNB_CUDA_VERSION".into(), "125".into());
    let g = of_rule(&b200(&inv), "GL013");
    assert_eq!(g.len(), 1, "{g:?}");
    assert_eq!(g[0].1, Severity::Error);
    assert!(
        g[0].2.starts_with("bitsandbytes 0.45.0 asks for libbitsandbytes_cuda125.so (BNB_CUDA_VERSION=125 in the image config), which it does not ship (it has libbitsandbytes_cuda118.so, libbitsandbytes_cuda121.so, libbitsandbytes_cuda124.so)"),
        "{g:?}"
    );
    // torch cu126: no exact file; current releases fall back to cuda124: a warning.
    let g = of_rule(&b200(&bnb_inventory(Some("12.6"))), "GL013");
    assert_eq!(g.len(), 1, "{g:?}");
    assert_eq!(g[0].1, Severity::Warning);
    assert!(
        g[0].2.contains("load libbitsandbytes_cuda124.so instead"),
        "{g:?}"
    );
    // torch cu130: no CUDA 13 library at all: an error.
    let g = of_rule(&b200(&bnb_inventory(Some("13.0"))), "GL013");
    assert_eq!(g.len(), 1, "{g:?}");
    assert_eq!(g[0].1, Severity::Error);
    // torch's CUDA unknown: the choice is unknown, nothing said, and GL001 stays an error.
    let f = b200(&bnb_inventory(None));
    assert!(of_rule(&f, "GL013").is_empty(), "{f:?}");
    assert_eq!(
        sev_at(&f, "libbitsandbytes_cuda118.so"),
        Some(Severity::Error)
    );
}
