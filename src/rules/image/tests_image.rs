//! Cross-rule tests over synthetic inventories; per-rule edge cases live in the rule files,
//! real-binary verdicts in tests/verdicts.rs.

use super::testutil::*;
use super::*;
use crate::inventory::Inventory;
use crate::inventory::LibraryProvider;
use crate::rule_meta::Severity;
use crate::rules::check_image;

#[test]
fn torch_cu130_needs_a_580_driver() {
    let m = matrix();
    let inv = torch_cu130_inventory();
    // Issue 3 acceptance: V100 → GL001; driver 570.133.20 → GL002; H100 + 580.65.06 clean.
    let v100 = check_image(&inv, &m, &[target(&m, "V100", "580.65.06")]);
    assert_eq!(codes(&v100), vec!["GL001"]);
    let old = check_image(&inv, &m, &[target(&m, "H100", "570.133.20")]);
    assert_eq!(codes(&old), vec!["GL002"]);
    // The target and the location are shown beside the message, which does not repeat them.
    let msg = &old[0].message;
    assert!(
        msg.ends_with("; the target's driver is 570.133.20"),
        "{msg}"
    );
    let at = old[0]
        .location
        .as_ref()
        .and_then(|l| l.path.clone())
        .unwrap();
    assert!(!msg.contains(&at) && !msg.contains("H100"), "{msg}");
    let ok = check_image(&inv, &m, &[target(&m, "H100", "580.65.06")]);
    assert!(codes(&ok).is_empty(), "{ok:?}");
    let ctx = context::ImageContext {
        inventory: &inv,
        facts: &m,
        target: None,
    };
    let r = requirements::compute(&ctx);
    assert!(r.min_driver.starts_with("580."), "{}", r.min_driver);
    assert!(r.runs_on.contains(&"9.0".to_string()) && !r.runs_on.contains(&"7.0".to_string()));
}

#[test]
fn minor_version_compatibility_is_not_driver_too_old() {
    let m = matrix();
    let mut inv = Inventory::default();
    inv.cuda_libraries.push(lib(
        "usr/local/cuda-12.4/lib64/libcudart.so.12.4.127",
        "cudart",
        "12.4.127",
        LibraryProvider::System,
    ));
    // 535 < 12.4's 550.54.14 but >= the 12.x floor 525.60.13.
    let f = check_image(&inv, &m, &[target(&m, "A100", "535.104.05")]);
    assert!(codes(&f).is_empty(), "{f:?}");
    // 470 is below the 12.x floor.
    let f = check_image(&inv, &m, &[target(&m, "A100", "470.82.01")]);
    assert_eq!(codes(&f), vec!["GL002"]);
}

#[test]
fn ptx_only_binary_needs_driver_that_knows_the_isa() {
    let m = matrix();
    let mut inv = Inventory::default();
    // PTX from CUDA 12.4 (ISA 8.4) only; driver 535 = CUDA 12.2.
    inv.binaries
        .push(binary("app/libk.so", &["sm_80"], &[("compute_80", "8.4")]));
    let f = check_image(&inv, &m, &[target(&m, "H100", "535.104.05")]);
    assert_eq!(codes(&f), vec!["GL003"]);
    // On an A100 the sm_80 SASS runs: no JIT, no finding.
    let f = check_image(&inv, &m, &[target(&m, "A100", "535.104.05")]);
    assert!(codes(&f).is_empty(), "{f:?}");
    // A 550 driver (CUDA 12.4) can JIT it.
    let f = check_image(&inv, &m, &[target(&m, "H100", "550.54.14")]);
    assert!(codes(&f).is_empty(), "{f:?}");
}

#[test]
fn baked_driver_libs_and_forward_compat() {
    let m = matrix();
    let mut inv = Inventory::default();
    inv.driver_libraries.push(crate::inventory::DriverLibrary {
        path: ImagePath::new("usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05").unwrap(),
        name: "libcuda".into(),
        version: Some("535.104.05".parse().unwrap()),
        provider: LibraryProvider::System,
        layer: Some(0),
    });
    let f = check_image(&inv, &m, &[]);
    assert_eq!(codes(&f), vec!["GL004"]);
    // The library is the location; the message does not repeat it.
    assert_eq!(
        f[0].message,
        "a driver library (535.104.05) is baked into the image"
    );

    // CUDA 12.8 runtime + cuda-compat on a 470 driver: fine on a datacenter GPU? 470 is not
    // a supported forward-compat branch → GL005 on an A100; on an RTX 4090 never.
    let mut inv = Inventory::default();
    inv.cuda_libraries.push(lib(
        "usr/local/cuda-12.8/lib64/libcudart.so.12.8.90",
        "cudart",
        "12.8.90",
        LibraryProvider::System,
    ));
    inv.cuda_libraries.push(lib(
        "usr/local/cuda-12.8/compat/libcuda.so.570.124.06",
        "cuda",
        "570.124.06",
        LibraryProvider::ForwardCompat,
    ));
    // (470 predates Ada altogether: GL011 says so too.)
    let f = check_image(&inv, &m, &[target(&m, "RTX 4090", "470.82.01")]);
    assert_eq!(codes(&f), vec!["GL005", "GL011"], "{f:?}");
    let f = check_image(&inv, &m, &[target(&m, "A100", "535.104.05")]);
    assert!(
        codes(&f).is_empty(),
        "535 runs 12.8 through minor-version compatibility: {f:?}"
    );
}

#[test]
fn loader_prefers_ld_library_path_over_runpath() {
    let m = matrix();
    let site = "usr/local/lib/python3.10/dist-packages";
    let mut inv = Inventory::default();
    inv.image
        .env
        .insert("LD_LIBRARY_PATH".into(), "/usr/local/cuda/lib64".into());
    let mut sys = lib(
        "usr/local/cuda-12.1/lib64/libcublas.so.12.1.3.1",
        "cublas",
        "12.1.3.1",
        LibraryProvider::System,
    );
    sys.aliases = vec![
        ImagePath::new("usr/local/cuda/lib64/libcublas.so.12").unwrap(),
        ImagePath::new("usr/local/cuda-12.1/lib64/libcublas.so.12").unwrap(),
    ];
    inv.cuda_libraries.push(sys);
    inv.cuda_libraries.push(lib(
        &format!("{site}/nvidia/cublas/lib/libcublas.so.12"),
        "cublas",
        "12.4.5.8",
        LibraryProvider::PipWheel,
    ));
    let mut b = binary(
        &format!("{site}/torch/lib/libtorch_cuda.so"),
        &["sm_80"],
        &[],
    );
    b.needed = vec!["libcublas.so.12".into(), "libcudnn.so.9".into()];
    b.runpath = vec!["$ORIGIN/../../nvidia/cublas/lib".into()];
    inv.binaries.push(b);
    let f = check_image(&inv, &m, &[]);
    let gl006: Vec<_> = f.iter().filter(|f| f.rule == "GL006").collect();
    assert_eq!(gl006.len(), 2, "{gl006:?}");
    assert!(gl006
        .iter()
        .any(|f| f.message.contains("LD_LIBRARY_PATH") && f.severity == Severity::Error));
    assert!(gl006
        .iter()
        .any(|f| f.message.contains("libcudnn.so.9") && f.message.contains("nowhere")));
}

#[test]
fn companions_and_wheel_tags() {
    let m = matrix();
    let site = "usr/lib/python3.10/site-packages";
    let mut inv = Inventory::default();
    inv.image.glibc = Some("2.31".into());
    inv.image.platform = Some("linux/amd64".parse().unwrap());
    inv.python_packages
        .push(pkg("torch", "2.3.0+cu121", Some("12.1"), site));
    inv.python_packages
        .push(pkg("torchvision", "0.18.0+cu118", Some("11.8"), site));
    let mut x = pkg("xformers", "0.0.27", None, site);
    x.requires = vec!["torch==2.4.0".into()];
    inv.python_packages.push(x);
    let mut w = pkg("somewheel", "1.0", None, site);
    w.tags = vec!["cp310-cp310-manylinux_2_34_x86_64".into()];
    inv.python_packages.push(w);
    let mut ok = pkg("okwheel", "1.0", None, site);
    ok.tags = vec![
        "cp310-cp310-manylinux_2_17_x86_64".into(),
        "cp310-cp310-manylinux2014_x86_64".into(),
    ];
    inv.python_packages.push(ok);
    let f = check_image(&inv, &m, &[]);
    let msgs: Vec<_> = f
        .iter()
        .map(|f| format!("{} {}", f.rule, f.message))
        .collect();
    assert!(
        msgs.iter()
            .any(|s| s.starts_with("GL008") && s.contains("CUDA 11.8")),
        "{msgs:?}"
    );
    assert!(
        msgs.iter()
            .any(|s| s.starts_with("GL008") && s.contains("xformers")),
        "{msgs:?}"
    );
    assert!(
        msgs.iter()
            .any(|s| s.starts_with("GL007") && s.contains("somewheel") && s.contains("2.34")),
        "{msgs:?}"
    );
    assert!(!msgs.iter().any(|s| s.contains("okwheel")), "{msgs:?}");

    // torchvision 0.17 pairs with torch 2.2 (PyPI metadata), not the installed 2.3.
    let mut inv = Inventory::default();
    inv.python_packages
        .push(pkg("torch", "2.3.0", Some("12.1"), site));
    inv.python_packages
        .push(pkg("torchvision", "0.17.0", None, site));
    let f = check_image(&inv, &m, &[]);
    assert!(
        f.iter()
            .any(|f| f.rule == "GL008" && f.message.contains("pairs with torch 2.2")),
        "{f:?}"
    );
    inv.python_packages[1].version = "0.18.0".into();
    assert!(check_image(&inv, &m, &[]).is_empty());
}

#[test]
fn require_cuda_and_platform() {
    let m = matrix();
    let mut inv = Inventory::default();
    inv.image.platform = Some("linux/arm64".parse().unwrap());
    inv.image.env.insert(
        "NVIDIA_REQUIRE_CUDA".into(),
        "cuda>=12.4 brand=tesla,driver>=470,driver<471 brand=tesla,driver>=535,driver<536".into(),
    );
    let mut t = target(&m, "H100", "525.60.13");
    t.platform = Some("linux/amd64".parse().unwrap());
    let f = check_image(&inv, &m, &[t]);
    assert_eq!(codes(&f), vec!["GL009", "GL010"], "{f:?}");
    // The target is shown beside each message: the messages do not repeat its name.
    assert_eq!(
        f[0].message,
        "image is linux/arm64 but the target is linux/amd64"
    );
    assert!(
        f[1].message
            .contains("is not satisfied by the target's driver 525.60.13 (CUDA 12.0)"),
        "{}",
        f[1].message
    );
    assert!(f.iter().all(|x| !x.message.contains("H100")), "{f:?}");
    let f = check_image(&inv, &m, &[target(&m, "H100", "550.54.14")]);
    assert!(codes(&f).is_empty(), "{f:?}");
}

#[test]
fn self_loaded_fatbins_count_and_preloaded_python_deps_are_fine() {
    // Seen on a real torch 2.11 + cupy venv on an H200: libcufft.so.12 (CUDA 13) registers
    // one sm_75 fatbin in .nv_fatbin and keeps its kernels in 23,983 fatbins in .ldata that it
    // loads itself; torchvision's _C.so needs libcudart.so.13 without a RUNPATH to it (torch
    // preloads it). Both ran there.
    let m = matrix();
    let site = "opt/venv/lib/python3.12/site-packages";
    let mut inv = Inventory::default();
    let mut cufft = binary(
        &format!("{site}/nvidia/cu13/lib/libcufft.so.12"),
        &["sm_75"],
        &[],
    );
    cufft.embedded_sass = ["sm_80", "sm_90", "sm_100", "sm_120"]
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
    inv.binaries.push(cufft);
    inv.cuda_libraries.push(lib(
        &format!("{site}/nvidia/cu13/lib/libcudart.so.13"),
        "cudart",
        "13.0.96",
        LibraryProvider::PipWheel,
    ));
    let mut tv = binary(&format!("{site}/torchvision/_C.so"), &["sm_90"], &[]);
    tv.needed = vec!["libcudart.so.13".into()];
    inv.binaries.push(tv);
    let f = check_image(&inv, &m, &[target(&m, "NVIDIA H200", "580.159.04")]);
    assert!(codes(&f).is_empty(), "{f:?}");
    // The same extension outside site-packages, with the library off the search path: warn.
    inv.binaries[1].path = ImagePath::new("usr/local/bin/app").unwrap();
    let f = check_image(&inv, &m, &[target(&m, "NVIDIA H200", "580.159.04")]);
    assert_eq!(codes(&f), vec!["GL006"], "{f:?}");
    // And a GPU the self-loaded code lacks still fails.
    let f = check_image(&inv, &m, &[target(&m, "V100", "580.159.04")]);
    assert!(
        f.iter().any(|f| f.rule == "GL001"
            && f.location
                .as_ref()
                .and_then(|l| l.path.as_deref())
                .is_some_and(|p| p.contains("libcufft"))),
        "{f:?}"
    );
}

#[test]
fn no_kernel_image_names_the_binary_once_and_the_sass_that_runs() {
    // The binary is the finding's location, which every format shows: the message does not
    // repeat it. The SASS that runs on 9.0 is sm_90 alone, not "sm_9x with x <= 0".
    let m = matrix();
    let mut inv = Inventory::default();
    let path = "opt/venv/lib/python3.11/site-packages/myext/_C.so";
    inv.binaries.push(binary(path, &["sm_75"], &[]));
    let message = |gpu: &str| {
        let f = check_image(&inv, &m, &[target(&m, gpu, "580.65.06")]);
        let g: Vec<_> = f.iter().filter(|f| f.rule == "GL001").collect();
        assert_eq!(g.len(), 1, "{f:?}");
        assert_eq!(
            g[0].location.as_ref().and_then(|l| l.path.as_deref()),
            Some(format!("/{path}").as_str())
        );
        g[0].message.clone()
    };
    let h100 = message("H100");
    assert!(!h100.contains("_C.so"), "{h100}");
    assert!(
        h100.contains("the GPU needs SASS sm_90 or PTX compute_XY with XY <= 90"),
        "{h100}"
    );
    assert!(
        h100.starts_with("no kernel image for H100 (NVIDIA H100 SXM) (compute capability 9.0): "),
        "{h100}"
    );
    let by_cc = message("sm_90");
    assert!(
        by_cc.starts_with("no kernel image for compute capability 9.0: "),
        "{by_cc}"
    );
    let l4 = message("L4");
    assert!(
        l4.contains("the GPU needs SASS sm_80 to sm_89 or PTX compute_XY with XY <= 89"),
        "{l4}"
    );
}

#[test]
fn nvidia_libraries_are_judged_by_their_release() {
    // libcufftw.so.12 from the CUDA 13 wheels registers only an sm_75 fatbin, yet it is part
    // of a release built for sm_75…sm_121: judged by the release's architecture list.
    let m = matrix();
    let path = "venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcufftw.so.12";
    let mut inv = Inventory::default();
    inv.binaries.push(binary(path, &["sm_75"], &[]));
    let mut l = lib(path, "cufftw", "12.0.0.61", LibraryProvider::PipWheel);
    l.package = Some("nvidia-cufft".into());
    inv.cuda_libraries.push(l);
    let f = check_image(&inv, &m, &[target(&m, "H100", "580.65.06")]);
    assert!(codes(&f).is_empty(), "{f:?}");
    let f = check_image(&inv, &m, &[target(&m, "V100", "580.65.06")]);
    assert!(
        f.iter()
            .any(|f| f.rule == "GL001" && f.message.contains("CUDA 13.0 does not support")),
        "{f:?}"
    );
    // The same file as a framework's own extension is judged by its fatbin.
    inv.cuda_libraries.clear();
    let f = check_image(&inv, &m, &[target(&m, "H100", "580.65.06")]);
    assert_eq!(codes(&f), vec!["GL001"]);
}

#[test]
fn a_statically_linked_librarys_kernels_do_not_cover_the_binarys_own() {
    // torch 1.13's libtorch_cuda_cpp.so registers torch's kernels (up to sm_86) and carries
    // a statically linked cuFFT's self-loaded fatbins (with sm_90): torch's own kernels have
    // no code for an H100, whatever cuFFT ships.
    let m = matrix();
    let mut inv = Inventory::default();
    let mut b = binary(
        "opt/venv/lib/python3.10/site-packages/torch/lib/libtorch_cuda_cpp.so",
        &["sm_80", "sm_86", "sm_80"],
        &[],
    );
    b.embedded_sass = ["sm_80", "sm_90"]
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
    inv.binaries.push(b);
    let f = check_image(&inv, &m, &[target(&m, "H100", "580.65.06")]);
    let g: Vec<_> = f.iter().filter(|f| f.rule == "GL001").collect();
    assert_eq!(g.len(), 1, "{f:?}");
    assert!(
        g[0].message.contains("SASS [sm_80, sm_86]"),
        "targets once each: {}",
        g[0].message
    );
    assert!(
        g[0].message.contains("statically linked"),
        "{}",
        g[0].message
    );
    // On an A100 torch's own sm_80 runs: clean.
    let f = check_image(&inv, &m, &[target(&m, "A100", "580.65.06")]);
    assert!(!f.iter().any(|f| f.rule == "GL001"), "{f:?}");
}

/// `testdata/rules/image/make-cases.sh` is the single source of the image-rule case trees.
#[test]
fn image_cases_are_generated_by_the_script() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/rules/image");
    crate::rules::generated_fixtures::assert_script_makes(
        &dir.join("make-cases.sh"),
        &dir.join("cases"),
    );
}

/// Issue 34: a fatbin whose cubin defines no kernel (libnppc, libcufftw, nvcc's
/// `__nvcc_device_query`) never launches anything, so no GPU can lack a kernel image for it,
/// neither by its own targets nor by its CUDA release; the same build with one kernel fails.
/// The binaries are the nvcc builds of `testdata/fatbin/kernels` (sm_80 SASS only).
#[test]
fn a_fatbin_without_kernels_cannot_lack_a_kernel_image() {
    let m = matrix();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/fatbin/kernels");
    let scanned = |file: &str, at: &str| {
        let data = std::fs::read(dir.join(file)).unwrap();
        let facts = crate::detect::elf::scan_elf_bytes(&data).unwrap();
        crate::inventory::binary_from_elf(ImagePath::new(at).unwrap(), Some(0), &facts).unwrap()
    };
    let mut inv = Inventory::default();
    let none = scanned(
        "libnokernel_sm80.so",
        "usr/lib/x86_64-linux-gnu/libnppc.so.11.8.0.86",
    );
    let one = scanned("libonekernel_sm80.so", "opt/app/libone.so");
    assert_eq!(
        (none.has_kernels, one.has_kernels),
        (Some(false), Some(true))
    );
    inv.binaries.push(none);
    inv.binaries.push(one);
    // V100 (7.0): sm_80 SASS does not run there; only the library with a kernel can fail.
    let f = check_image(&inv, &m, &[target(&m, "V100", "580.65.06")]);
    let gl001: Vec<Option<&str>> = f
        .iter()
        .filter(|f| f.rule == "GL001")
        .map(|f| f.location.as_ref().and_then(|l| l.path.as_deref()))
        .collect();
    assert_eq!(gl001.len(), 1, "{f:?}");
    assert_eq!(gl001[0], Some("/opt/app/libone.so"), "{f:?}");
    // The zero-kernel file as a CUDA 11.8 distribution library (Debian's libcufftw10): its
    // release does not support a B200, yet nothing in it is ever launched.
    inv.binaries.remove(1);
    inv.binaries[0].path =
        ImagePath::new("usr/lib/x86_64-linux-gnu/libcufftw.so.10.9.0.58").unwrap();
    inv.cuda_libraries.push(lib(
        "usr/lib/x86_64-linux-gnu/libcufftw.so.10.9.0.58",
        "cufftw",
        "10.9.0.58",
        LibraryProvider::System,
    ));
    for gpu in ["NVIDIA B200", "V100"] {
        let f = check_image(&inv, &m, &[target(&m, gpu, "580.65.06")]);
        assert!(!f.iter().any(|f| f.rule == "GL001"), "{gpu}: {f:?}");
    }
    // Unknown (a payload not read) is judged as before: by its release, which lacks 10.0.
    inv.binaries[0].has_kernels = None;
    let f = check_image(&inv, &m, &[target(&m, "NVIDIA B200", "580.65.06")]);
    assert!(
        f.iter()
            .any(|f| f.rule == "GL001" && f.message.contains("CUDA 11.8 does not support")),
        "{f:?}"
    );
}

/// Issue 34 (severity by reachability): GL001 on a library loaded only on demand is a warning
/// with the reason while nothing NEEDs it, an error once something does; an ordinary library
/// nothing NEEDs stays an error.
#[test]
fn gl001_on_demand_library_is_a_warning_unless_needed() {
    let m = matrix();
    let gl001 = |inv: &Inventory| -> Vec<(String, Severity, String)> {
        check_image(inv, &m, &[target(&m, "NVIDIA B200", "580.65.06")])
            .into_iter()
            .filter(|f| f.rule == "GL001")
            .map(|f| {
                let path = f.location.and_then(|l| l.path).unwrap_or_default();
                (path, f.severity, f.message)
            })
            .collect()
    };
    let cupti_path = "usr/local/cuda-11.8/extras/CUPTI/lib64/libcupti.so.2022.3.0";
    let mut inv = Inventory::default();
    inv.binaries.push(binary(cupti_path, &["sm_80"], &[]));
    inv.binaries
        .push(binary("opt/app/libfoo.so", &["sm_80"], &[]));
    let mut cupti_lib = lib(cupti_path, "cupti", "2022.3.0", LibraryProvider::System);
    cupti_lib.soname = Some("libcupti.so.11.8".into());
    inv.cuda_libraries.push(cupti_lib);
    // CUPTI's checkpoint library: not a CUDA library the inventory names, judged by its code.
    let checkpoint_path = "usr/local/cuda-11.8/extras/CUPTI/lib64/libcheckpoint.so";
    inv.binaries.push(binary(checkpoint_path, &["sm_80"], &[]));
    let f = gl001(&inv);
    assert_eq!(f.len(), 3, "{f:?}");
    let at = |path: &str| f.iter().find(|g| g.0 == format!("/{path}")).unwrap();
    let (cupti, foo, checkpoint) = (at(cupti_path), at("opt/app/libfoo.so"), at(checkpoint_path));
    // CUDA 11.8 predates the B200 (10.0): judged by its release, still on demand.
    assert!(cupti.2.contains("CUDA 11.8 does not support"), "{f:?}");
    assert_eq!(checkpoint.1, Severity::Warning, "{f:?}");
    assert!(
        checkpoint.2.contains("no kernel image") && checkpoint.2.contains("on demand"),
        "{f:?}"
    );
    assert_eq!(foo.1, Severity::Error, "{f:?}");
    assert_eq!(cupti.1, Severity::Warning, "{f:?}");
    assert!(
        cupti.2.contains("loaded only on demand by profilers")
            && cupti.2.contains("nothing in the image NEEDs it"),
        "{f:?}"
    );
    // An executable that links CUPTI by its soname: the library is reached, an error again.
    let mut app = binary("usr/bin/myprofiler", &[], &[]);
    app.needed = vec!["libcupti.so.11.8".into()];
    inv.binaries.push(app.clone());
    let f = gl001(&inv);
    let severity_of = |f: &[(String, Severity, String)], path: &str| {
        f.iter().find(|g| g.0 == format!("/{path}")).map(|g| g.1)
    };
    assert_eq!(severity_of(&f, cupti_path), Some(Severity::Error), "{f:?}");
    assert!(
        !f.iter()
            .any(|g| g.0.contains("libcupti") && g.2.contains("on demand")),
        "{f:?}"
    );
    // What it does not NEED keeps its own verdict.
    assert_eq!(
        severity_of(&f, checkpoint_path),
        Some(Severity::Warning),
        "{f:?}"
    );
    // NEEDed only by another on-demand library that nothing NEEDs: still not reached.
    inv.binaries.pop();
    let mut nvperf = binary(
        "usr/local/cuda-11.8/extras/CUPTI/lib64/libnvperf_target.so",
        &[],
        &[],
    );
    nvperf.needed = vec!["libcupti.so.11.8".into()];
    inv.binaries.push(nvperf);
    let f = gl001(&inv);
    assert_eq!(
        severity_of(&f, cupti_path),
        Some(Severity::Warning),
        "{f:?}"
    );
    // cupy's optional cuDNN module, imported lazily: a warning with cupy's reason.
    let mut inv = Inventory::default();
    inv.binaries.push(binary(
        "usr/lib/python3/dist-packages/cupy_backends/cuda/libs/cudnn.cpython-312-x86_64-linux-gnu.so",
        &["sm_80"],
        &[],
    ));
    let f = gl001(&inv);
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].1, Severity::Warning, "{f:?}");
    assert!(f[0].2.contains("by cupy"), "{f:?}");
}

/// Writes `data` at `rel` under `root`, with its directories.
fn put(root: &std::path::Path, rel: &str, data: &[u8]) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, data).unwrap();
}

/// Issue 34: the zero-kernel rule holds wherever the file sits: in an NVIDIA wheel's tree
/// (nvidia-cufft's `libcufftw` has no kernel), in torch's `lib/`, in a third-party directory.
/// Scanned as a `dir:` image (the seekable reader) and judged on a V100, where their sm_80-only
/// code could not run: only the third-party library with a kernel is reported.
#[test]
fn zero_kernel_files_in_wheel_trees_are_not_judged() {
    let m = matrix();
    let kernels = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/fatbin/kernels");
    let none = std::fs::read(kernels.join("libnokernel_sm80.so")).unwrap();
    let one = std::fs::read(kernels.join("libonekernel_sm80.so")).unwrap();
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    let sp = "usr/local/lib/python3.12/site-packages";
    put(r, &format!("{sp}/nvidia/cufft/lib/libcufftw.so.11"), &none);
    let info = format!("{sp}/nvidia_cufft_cu12-11.4.1.4.dist-info");
    put(
        r,
        &format!("{info}/METADATA"),
        b"Metadata-Version: 2.1\nName: nvidia-cufft-cu12\nVersion: 11.4.1.4\n",
    );
    put(
        r,
        &format!("{info}/RECORD"),
        b"nvidia/cufft/lib/libcufftw.so.11,sha256=AAAA,1\n",
    );
    put(
        r,
        &format!("{info}/WHEEL"),
        b"Wheel-Version: 1.0\nTag: py3-none-manylinux2014_x86_64\n",
    );
    put(r, &format!("{sp}/torch/lib/libtorch_zero.so"), &none);
    put(r, "opt/vendor/lib/libzero.so", &none);
    put(r, "opt/vendor/lib/libone.so", &one);
    let inv = crate::scan::scan_image(&format!("dir:{}", r.display()), None).unwrap();
    let mut zero: Vec<&str> = inv
        .binaries
        .iter()
        .filter(|b| b.has_kernels == Some(false))
        .map(|b| b.path.as_str())
        .collect();
    zero.sort();
    assert_eq!(
        zero,
        [
            "opt/vendor/lib/libzero.so",
            "usr/local/lib/python3.12/site-packages/nvidia/cufft/lib/libcufftw.so.11",
            "usr/local/lib/python3.12/site-packages/torch/lib/libtorch_zero.so",
        ]
    );
    // The wheel's library is known as the wheel's (judged by its release when its code is
    // not readable), yet its code, read, has no kernel.
    assert!(
        inv.cuda_libraries
            .iter()
            .any(|l| l.path.as_str().ends_with("libcufftw.so.11")
                && l.provider == LibraryProvider::PipWheel),
        "{:?}",
        inv.cuda_libraries
    );
    let f = check_image(&inv, &m, &[target(&m, "V100", "580.65.06")]);
    let gl001: Vec<Option<&str>> = f
        .iter()
        .filter(|f| f.rule == "GL001")
        .map(|f| f.location.as_ref().and_then(|l| l.path.as_deref()))
        .collect();
    assert_eq!(gl001, [Some("/opt/vendor/lib/libone.so")], "{f:?}");
}

/// Issue 34: device code a program loads itself from outside any fatbin (PTX text in a
/// library's data, a standalone `.ptx` file) is listed by the inventory, and no rule judges
/// it, like a standalone cubin: a V100 with sm_90 PTX raises nothing.
#[test]
fn loose_ptx_and_ptx_files_are_listed_not_judged() {
    let m = matrix();
    let root = tempfile::tempdir().unwrap();
    put(
        root.path(),
        "opt/jax/kernels/k.ptx",
        b"//\n// Generated by NVIDIA NVVM Compiler\n//\n\n.version 8.0\n.target sm_90\n.address_size 64\n",
    );
    put(
        root.path(),
        "opt/jax/kernels/notes.ptx",
        b"no module here\n",
    );
    let mut inv = crate::scan::scan_image(&format!("dir:{}", root.path().display()), None).unwrap();
    let files: Vec<(&str, String, &str)> = inv
        .ptx_files
        .iter()
        .map(|p| (p.path.as_str(), p.target.to_string(), p.isa.as_str()))
        .collect();
    assert_eq!(
        files,
        [("opt/jax/kernels/k.ptx", "compute_90".into(), "8.0")]
    );
    assert!(!inv.partial, "{:?}", inv.errors);
    // A library whose only device code is PTX text in its `.rodata` (nvperf's compute_70).
    let elf = crate::detect::elf::ElfFacts {
        class: 64,
        machine: "x86_64".into(),
        elf_type: "dyn".into(),
        soname: None,
        needed: vec![],
        rpath: vec![],
        runpath: vec![],
        cudart_version: None,
        static_cudart_version: None,
        fatbin: None,
        has_kernels: None,
        cubin: None,
        loose_cubins: vec![],
        loose_ptx: vec![crate::detect::elf::LoosePtx {
            section: ".rodata".into(),
            offset: 0x1003,
            header: crate::detect::elf::PtxHeader {
                target: "compute_90".parse().unwrap(),
                isa: (8, 0),
            },
        }],
        warnings: vec![],
    };
    let path = ImagePath::new("usr/local/cuda/lib64/libnvperf_target.so").unwrap();
    let b = crate::inventory::binary_from_elf(path, Some(0), &elf).unwrap();
    assert_eq!(b.loose_ptx, ["compute_90".parse().unwrap()]);
    assert!(!b.has_device_code);
    inv.binaries.push(b);
    let text = crate::inventory::render_text(&inv);
    assert!(text.contains("      loose PTX: compute_90\n"), "{text}");
    assert!(
        text.contains("PTX files (loaded by their programs; not judged):\n  /opt/jax/kernels/k.ptx compute_90 (ISA 8.0)\n"),
        "{text}"
    );
    let f = check_image(&inv, &m, &[target(&m, "V100", "580.65.06")]);
    assert!(
        f.iter().all(|f| f.rule != "GL001" && f.rule != "GL003"),
        "{f:?}"
    );
}

/// Issue 29: a real-shaped `pip install torch==2.6.0` tree (its PyPI cu124 build, SASS as
/// measured in torch.toml) judged against an RTX 5090 pool: the suggestion is a build the
/// tables say runs there, checked against the rows themselves.
#[test]
fn torch_libraries_without_the_gpu_get_a_torch_build_that_runs_there() {
    let m = matrix();
    let site = "opt/venv/lib/python3.11/site-packages";
    let mut inv = Inventory::default();
    inv.python_packages
        .push(pkg("torch", "2.6.0", Some("12.4"), site));
    inv.binaries.push(binary(
        &format!("{site}/torch/lib/libtorch_cuda.so"),
        &[
            "sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90",
        ],
        &[],
    ));
    let t = target(&m, "RTX 5090", "575.51.03");
    let f = check_image(&inv, &m, std::slice::from_ref(&t));
    let gl001: Vec<_> = f.iter().filter(|f| f.rule == "GL001").collect();
    assert_eq!(gl001.len(), 1, "{f:#?}");
    let fix = &gl001[0].fixes[0];
    assert!(
        fix.replacement.starts_with("pip install torch==2.7.0 ")
            && fix
                .replacement
                .ends_with("--index-url https://download.pytorch.org/whl/cu128"),
        "{}",
        fix.replacement
    );
    assert!(gl001[0].help.as_deref().unwrap().contains(&fix.replacement));
    // Every suggestion, read back from the tables, covers the GPU and runs on the driver.
    for fix in &gl001[0].fixes {
        let words: Vec<&str> = fix.replacement.split_whitespace().collect();
        let version = words
            .iter()
            .find_map(|w| w.strip_prefix("torch=="))
            .unwrap();
        let tag = words.last().unwrap().rsplit('/').next().unwrap();
        let v = m
            .torch_release(version)
            .unwrap()
            .value
            .variant(tag)
            .unwrap();
        let a = v.archs.as_ref().unwrap();
        for cc in t.capabilities() {
            assert!(
                a.sass.iter().chain(&a.ptx).any(|x| x.runs_on(cc)),
                "{version} {tag}"
            );
        }
        let floor = m.minor_compat_floor(v.cuda.major).unwrap().value;
        assert!(t.driver.as_ref().unwrap() >= &floor);
    }
    // The tree with the suggested build installed is clean for GL001.
    let mut fixed = inv.clone();
    fixed.python_packages[0] = pkg("torch", "2.7.0", Some("12.8"), site);
    let v = m
        .torch_release("2.7")
        .unwrap()
        .value
        .variant("cu128")
        .unwrap();
    let sass: Vec<String> = v.sass().unwrap().iter().map(|t| t.to_string()).collect();
    let sass: Vec<&str> = sass.iter().map(|s| s.as_str()).collect();
    fixed.binaries[0] = binary(&format!("{site}/torch/lib/libtorch_cuda.so"), &sass, &[]);
    assert!(check_image(&fixed, &m, std::slice::from_ref(&t))
        .iter()
        .all(|f| f.rule != "GL001"));
}

#[test]
fn a_driver_too_old_names_the_driver_and_the_newest_torch_that_runs_on_it() {
    let m = matrix();
    let inv = torch_cu130_inventory();
    let t = target(&m, "H100", "570.133.20");
    let f = check_image(&inv, &m, std::slice::from_ref(&t));
    let gl002 = f.iter().find(|f| f.rule == "GL002").unwrap();
    let driver = gl002.fixes[0]
        .replacement
        .strip_prefix("driver >= ")
        .and_then(|r| r.split(' ').next())
        .unwrap();
    let driver: crate::version::DriverVersion = driver.parse().unwrap();
    // The suggested driver runs CUDA 13.0: under minor-version compatibility at least.
    assert!(driver >= m.minor_compat_floor(13).unwrap().value);
    assert!(driver > *t.driver.as_ref().unwrap());
    // The newest torch build for the current driver: a CUDA 12 build (R570 runs 12.8).
    let torch = gl002
        .fixes
        .iter()
        .find(|x| x.replacement.starts_with("pip install torch=="))
        .expect("a torch build for the current driver");
    assert!(
        torch.replacement.contains("/whl/cu12"),
        "{}",
        torch.replacement
    );
    assert!(gl002.help.as_deref().unwrap().contains(&torch.replacement));
}
