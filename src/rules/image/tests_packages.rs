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

fn fatbin_format_fixture(name: &str) -> Vec<u8> {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/fatbin/fatbin-format");
    std::fs::read(dir.join(name)).unwrap()
}

/// A synthetic triton ptxas: an ELF executable's magic, filler, and the banner the real
/// ptxas of `nvidia-cuda-nvcc-cu12` 12.4.131 holds in its `.rodata` (there 22 MB in; here
/// past the first read chunks, so the walker has to stream to it).
fn synthetic_ptxas(release: &str, version: &str) -> Vec<u8> {
    let mut v = b"\x7fELF\x02\x01\x01".to_vec();
    v.resize(300_000, 0x90);
    v.extend_from_slice(b"Cuda compilation tools, release %d.%d, add referenced %s: %s\0");
    v.extend_from_slice(
        format!("Cuda compilation tools, release {release}, V{version}\0").as_bytes(),
    );
    v.resize(400_000, 0);
    v
}

/// Issue 28 "triton's bundled ptxas" and "standalone cubins", scanned as a `dir:` image:
/// the walker reads the ptxas banner (GL014 judges it: CUDA 12.4 knows no Blackwell) and
/// the cubins' targets from their headers, counted per package (GL015, one info each).
#[test]
fn triton_ptxas_and_standalone_cubins_from_a_tree() {
    let m = matrix();
    let root = tempfile::tempdir().unwrap();
    let site = "usr/local/lib/python3.11/site-packages";
    let r = root.path();
    put(
        r,
        &format!("{site}/triton/backends/nvidia/bin/ptxas"),
        &synthetic_ptxas("12.4", "12.4.131"),
    );
    put(
        r,
        &format!("{site}/triton-3.0.0.dist-info/METADATA"),
        b"Metadata-Version: 2.1\nName: triton\nVersion: 3.0.0\n",
    );
    let cubins = [
        (
            "flashinfer_cubin/cubins/a/k_sm80.cubin",
            "cubin_ptxas11.8_sm80.cubin",
        ),
        (
            "flashinfer_cubin/cubins/b/k_sm80.cubin",
            "cubin_ptxas11.8_sm80.cubin",
        ),
        (
            "flashinfer_cubin/cubins/c/k_sm90a.cubin",
            "cubin_ptxas12.9_sm90a.cubin",
        ),
        (
            "flashinfer_cubin/cubins/d/k_sm100a.cubin",
            "cubin_ptxas12.9_sm100a.cubin",
        ),
    ];
    let mut record = String::new();
    for (rel, fixture) in cubins {
        put(r, &format!("{site}/{rel}"), &fatbin_format_fixture(fixture));
        record.push_str(&format!("{rel},,\n"));
    }
    put(
        r,
        &format!("{site}/flashinfer_cubin-0.4.1.dist-info/METADATA"),
        b"Metadata-Version: 2.1\nName: flashinfer-cubin\nVersion: 0.4.1\n",
    );
    put(
        r,
        &format!("{site}/flashinfer_cubin-0.4.1.dist-info/RECORD"),
        record.as_bytes(),
    );
    // A PTX file no package owns.
    put(
        r,
        "opt/kernels/k.ptx",
        b".version 8.0\n.target sm_80\n.address_size 64\n",
    );
    let inv = crate::scan::scan_image(&format!("dir:{}", r.display()), None).unwrap();
    assert!(!inv.partial, "{:?}", inv.errors);
    let ptxas: Vec<(&str, Option<String>, Option<&str>)> = inv
        .triton_ptxas
        .iter()
        .map(|t| {
            (
                t.tool.as_str(),
                t.release.map(|r| r.to_string()),
                t.version.as_deref(),
            )
        })
        .collect();
    assert_eq!(ptxas, [("ptxas", Some("12.4".into()), Some("12.4.131"))]);
    // The assembler is no binary of the image's GPU code.
    assert!(inv.binaries.is_empty(), "{:?}", inv.binaries);
    let groups: Vec<(Option<&str>, usize, String, usize, String)> = inv
        .device_code_files
        .iter()
        .map(|g| {
            (
                g.package.as_deref(),
                g.cubins,
                super::context::list(&g.sass),
                g.ptx_files,
                super::context::list(&g.ptx),
            )
        })
        .collect();
    assert_eq!(
        groups,
        [
            (None, 0, "none".into(), 1, "compute_80".into()),
            (
                Some("flashinfer-cubin"),
                4,
                "sm_80, sm_90a, sm_100a".into(),
                0,
                "none".into()
            ),
        ]
    );
    // The new inventory fields are documented, closed, in the schema.
    let schema_path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/schema/inventory.schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(schema_path).unwrap()).unwrap();
    let validator = jsonschema::options().build(&schema).unwrap();
    let mut json = serde_json::to_value(&inv).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&json)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    json["triton_ptxas"][0]["undocumented"] = serde_json::json!(1);
    json["device_code_files"][0]["undocumented"] = serde_json::json!(1);
    assert_eq!(validator.iter_errors(&json).count(), 2);
    let b200 = check_image(&inv, &m, &[target(&m, "B200", "580.65.06")]);
    let gl014 = of_rule(&b200, "GL014");
    assert_eq!(gl014.len(), 1, "{b200:?}");
    assert_eq!(
        gl014[0].0,
        format!("/{site}/triton/backends/nvidia/bin/ptxas")
    );
    assert_eq!(gl014[0].1, Severity::Error);
    assert!(
        gl014[0]
            .2
            .contains("CUDA 12.4 (12.4.131), which does not know sm_100"),
        "{}",
        gl014[0].2
    );
    let gl015 = of_rule(&b200, "GL015");
    assert_eq!(gl015.len(), 2, "{gl015:?}");
    assert!(gl015.iter().all(|f| f.1 == Severity::Info));
    assert!(
        gl015[1]
            .2
            .contains("flashinfer-cubin 0.4.1 ships 4 standalone cubins"),
        "{gl015:?}"
    );
    assert!(
        gl015[1].2.ends_with("cubins for [sm_100a] run on it"),
        "{gl015:?}"
    );
    let a100 = check_image(&inv, &m, &[target(&m, "A100", "580.65.06")]);
    assert!(of_rule(&a100, "GL014").is_empty(), "{a100:?}");
    let gl015 = of_rule(&a100, "GL015");
    assert!(
        gl015[1].2.ends_with("cubins for [sm_80] run on it"),
        "{gl015:?}"
    );
    // The unowned PTX file: JIT-able on an A100, counted under its directory.
    assert_eq!(gl015[0].0, "/opt/kernels/k.ptx", "{gl015:?}");
    assert!(
        gl015[0]
            .2
            .starts_with("/opt/kernels ships no standalone cubins and 1 PTX file [compute_80]"),
        "{gl015:?}"
    );
    assert!(
        gl015[0]
            .2
            .ends_with("PTX [compute_80] can be JIT-compiled for it"),
        "{gl015:?}"
    );
}

/// GL016: jax's CUDA plugin asks for cuDNN 9.8 or newer under its `with-cuda` extra; the
/// environment has 9.1 (pinned by another package): an error at the plugin. The same plugin
/// beside cuDNN 9.10 is fine, and a requirement whose wheel is not installed says nothing.
#[test]
fn a_cuda_wheel_below_a_packages_own_floor_is_an_error() {
    let m = matrix();
    let site = "usr/local/lib/python3.12/site-packages";
    let tree = |cudnn: &str| {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        put(
            r,
            &format!("{site}/jax_cuda12_plugin-0.6.0.dist-info/METADATA"),
            b"Metadata-Version: 2.1\nName: jax-cuda12-plugin\nVersion: 0.6.0\nRequires-Dist: jax-cuda12-pjrt==0.6.0\nRequires-Dist: nvidia-cudnn-cu12<10.0,>=9.8; extra == \"with-cuda\"\nRequires-Dist: nvidia-cusparse-cu12>=12.1.0.106; extra == \"with-cuda\"\n",
        );
        put(
            r,
            &format!("{site}/nvidia_cudnn_cu12-{cudnn}.dist-info/METADATA"),
            format!("Metadata-Version: 2.1\nName: nvidia-cudnn-cu12\nVersion: {cudnn}\n")
                .as_bytes(),
        );
        let inv = crate::scan::scan_image(&format!("dir:{}", r.display()), None).unwrap();
        of_rule(
            &check_image(&inv, &m, &[target(&m, "H100", "580.65.06")]),
            "GL016",
        )
    };
    let old = tree("9.1.0.70");
    assert_eq!(old.len(), 1, "{old:?}");
    assert_eq!(old[0].1, Severity::Error);
    assert!(
        old[0].2.contains(
            "jax-cuda12-plugin 0.6.0 requires `nvidia-cudnn-cu12<10.0,>=9.8` (extra `with-cuda`)"
        ) && old[0].2.contains("nvidia-cudnn-cu12 9.1.0.70"),
        "{}",
        old[0].2
    );
    assert!(tree("9.10.1.4").is_empty());
}
