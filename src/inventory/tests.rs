//! Assembly tests over a hand-laid rootfs (`testdata/rootfs/torch-cu13/`) that mimics the
//! real torch 2.11.0+cu130 venv captured on an H200 host (`testdata/h200/`), plus a CUDA 12.1
//! toolkit with stubs and compat, baked-in driver files, dpkg and conda metadata.

use super::*;
use crate::arch::ArchTarget;
use crate::detect::elf::{ElfFacts, FatbinEntry, FatbinSummary};
use crate::detect::{detectors, Fact};
use crate::walk::{FileTree, ImagePath, Node, NodeKind};
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Build a FileTree from a directory the way the walker would (one layer), running every
/// detector on the files it wants. Test-only: the real walker lives in `walk`.
pub(crate) fn tree_from_dir(root: &Path) -> (FileTree, Vec<String>) {
    let ds = detectors();
    let mut tree = FileTree::default();
    let mut errors = Vec::new();
    for e in walkdir::WalkDir::new(root)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .flatten()
    {
        let Ok(rel) = e.path().strip_prefix(root) else {
            continue;
        };
        let Some(rel) = rel.to_str() else { continue };
        if rel.is_empty() {
            continue;
        }
        let path = ImagePath::new(rel).expect("path inside the rootfs");
        let meta = e.path().symlink_metadata().expect("metadata");
        let mode = meta.permissions().mode();
        let ft = meta.file_type();
        let mut facts = Vec::new();
        let kind = if ft.is_symlink() {
            let t = std::fs::read_link(e.path()).expect("link");
            NodeKind::Symlink {
                target: t.to_string_lossy().into_owned(),
            }
        } else if ft.is_dir() {
            NodeKind::Dir { mode }
        } else if ft.is_file() {
            let size = meta.len();
            for d in ds.wanting(&path) {
                {
                    let mut buf = Vec::new();
                    std::fs::File::open(e.path())
                        .expect("open")
                        .take(d.max_bytes())
                        .read_to_end(&mut buf)
                        .expect("read");
                    match d.detect(&path, &buf) {
                        Ok(f) => facts.extend(f),
                        Err(err) => errors.push(format!("{path}: {}: {err}", d.name())),
                    }
                }
            }
            NodeKind::File { size, mode }
        } else {
            NodeKind::Other
        };
        tree.nodes.insert(
            path,
            Node {
                kind,
                layer: 0,
                facts,
            },
        );
    }
    (tree, errors)
}

fn rootfs() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/rootfs/torch-cu13")
}

fn meta() -> ImageMeta {
    ImageMeta {
        reference: "dir:testdata/rootfs/torch-cu13".into(),
        config: crate::source::ImageConfigFacts {
            env: vec![
                "PATH=/usr/bin".into(),
                "CUDA_VERSION=12.1.1".into(),
                "HOME=/root".into(),
                "NVIDIA_REQUIRE_CUDA=cuda>=12.1".into(),
                "CUDA_VERSION=12.1.0".into(),
            ],
            ..Default::default()
        },
        layers: vec![LayerInfo {
            index: 0,
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn inventory() -> Inventory {
    let (tree, errors) = tree_from_dir(&rootfs());
    assert!(errors.is_empty(), "{errors:?}");
    build(&meta(), &tree, Vec::new())
}

/// `name-version.dist-info` lines of the real capture → version of a dist.
fn captured_dist_version(dist_dir_prefix: &str) -> String {
    let s = include_str!("../../testdata/h200/site_dist_infos.txt");
    s.lines()
        .find_map(|l| {
            l.strip_prefix(dist_dir_prefix)?
                .strip_prefix('-')?
                .strip_suffix(".dist-info")
                .map(str::to_string)
        })
        .unwrap_or_else(|| panic!("{dist_dir_prefix} not in the capture"))
}

const SP: &str = "/opt/torch/.venv/lib/python3.12/site-packages";

fn lib<'a>(inv: &'a Inventory, path: &str) -> &'a CudaLibrary {
    inv.cuda_libraries
        .iter()
        .find(|l| l.path == *path)
        .unwrap_or_else(|| panic!("{path} not among {:#?}", inv.cuda_libraries))
}

fn pkg<'a>(inv: &'a Inventory, name: &str) -> &'a PythonPackage {
    inv.python_packages
        .iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("{name} not found"))
}

#[test]
fn torch_version_and_cuda_match_the_real_capture() {
    let inv = inventory();
    // "torch 2.11.0+cu130 cuda 13.0 cudnn 91900"
    let facts = include_str!("../../testdata/h200/torch_facts.txt");
    let mut words = facts.lines().next().unwrap().split_whitespace();
    assert_eq!(words.next(), Some("torch"));
    let full = words.next().unwrap();
    assert_eq!(words.next(), Some("cuda"));
    let cuda = words.next().unwrap();
    let torch = pkg(&inv, "torch");
    assert_eq!(torch.version, full.split('+').next().unwrap());
    assert_eq!(torch.version, captured_dist_version("torch"));
    assert_eq!(torch.cuda.map(|v| v.to_string()).as_deref(), Some(cuda));
    assert_eq!(torch.tags, vec!["cp312-cp312-manylinux_2_28_x86_64"]);
    assert_eq!(torch.location, SP);
    assert!(torch.requires.iter().any(|r| r == "sympy>=1.13.3"));
    // torchvision's version.py computes cuda at import: the local version says it.
    assert_eq!(
        pkg(&inv, "torchvision")
            .cuda
            .map(|v| v.to_string())
            .as_deref(),
        Some("13.0")
    );
    assert_eq!(
        pkg(&inv, "cupy-cuda13x")
            .cuda
            .map(|v| v.to_string())
            .as_deref(),
        Some("13.0")
    );
    assert_eq!(
        pkg(&inv, "nvidia-cuda-runtime")
            .cuda
            .map(|v| v.to_string())
            .as_deref(),
        Some("13.0")
    );
    assert_eq!(
        pkg(&inv, "nvidia-cudnn-cu13")
            .cuda
            .map(|v| v.to_string())
            .as_deref(),
        Some("13.0")
    );
    // nvidia-cublas has no suffix and no toolkit version: its RECORD puts it in nvidia/cu13.
    assert_eq!(
        pkg(&inv, "nvidia-cublas")
            .cuda
            .map(|v| v.to_string())
            .as_deref(),
        Some("13.0")
    );
    assert_eq!(pkg(&inv, "numpy").cuda, None);
    assert_eq!(pkg(&inv, "numpy").tags.len(), 2);
}

#[test]
fn pip_libraries_get_wheel_versions_and_providers() {
    let inv = inventory();
    let cudnn = lib(&inv, &format!("{SP}/nvidia/cudnn/lib/libcudnn.so.9"));
    assert_eq!(cudnn.family.name(), "cudnn");
    assert_eq!(
        cudnn.version_text(),
        Some(captured_dist_version("nvidia_cudnn_cu13").as_str())
    );
    assert_eq!(cudnn.provider, LibraryProvider::PipWheel);
    assert_eq!(cudnn.package.as_deref(), Some("nvidia-cudnn-cu13"));
    assert_eq!(cudnn.soname.as_deref(), Some("libcudnn.so.9"));
    let ops = lib(
        &inv,
        &format!("{SP}/nvidia/cudnn/lib/libcudnn_engines_precompiled.so.9"),
    );
    assert_eq!(ops.family.name(), "cudnn_engines_precompiled");
    assert_eq!(ops.version, cudnn.version);

    // No RECORD for NCCL: owned by the nvidia/nccl layout.
    let nccl = lib(&inv, &format!("{SP}/nvidia/nccl/lib/libnccl.so.2"));
    assert_eq!(
        nccl.version_text(),
        Some(captured_dist_version("nvidia_nccl_cu13").as_str())
    );
    assert_eq!(nccl.package.as_deref(), Some("nvidia-nccl-cu13"));

    // The CUDA 13 layout: one lib dir shared by many wheels, told apart by RECORD.
    let cublas = lib(&inv, &format!("{SP}/nvidia/cu13/lib/libcublasLt.so.13"));
    assert_eq!(cublas.family.name(), "cublasLt");
    assert_eq!(
        cublas.version_text(),
        Some(captured_dist_version("nvidia_cublas").as_str())
    );
    let rt = lib(&inv, &format!("{SP}/nvidia/cu13/lib/libcudart.so.13"));
    assert_eq!(
        rt.version_text(),
        Some(captured_dist_version("nvidia_cuda_runtime").as_str())
    );
    assert_eq!(rt.provider, LibraryProvider::PipWheel);
    // ... and without RECORD, by library family.
    let nvrtc = lib(
        &inv,
        &format!("{SP}/nvidia/cu13/lib/libnvrtc-builtins.so.13.0"),
    );
    assert_eq!(nvrtc.package.as_deref(), Some("nvidia-cuda-nvrtc"));
    assert_eq!(
        nvrtc.version_text(),
        Some(captured_dist_version("nvidia_cuda_nvrtc").as_str())
    );
    assert_eq!(nvrtc.soname.as_deref(), Some("libnvrtc-builtins.so.13.0"));
    // auditwheel's copy inside another wheel: bundled, owned by that dist, hash kept in soname.
    let jpeg = lib(
        &inv,
        &format!("{SP}/torchvision.libs/libnvjpeg-f00ca762.so.13"),
    );
    assert_eq!(jpeg.family.name(), "nvjpeg");
    assert_eq!(jpeg.provider, LibraryProvider::Bundled);
    assert_eq!(jpeg.package.as_deref(), Some("torchvision"));
    assert_eq!(jpeg.version, None);
    assert_eq!(jpeg.soname.as_deref(), Some("libnvjpeg-f00ca762.so.13"));
    // Static archives and torch's own libraries are not CUDA libraries.
    assert!(!inv
        .cuda_libraries
        .iter()
        .any(|l| l.path.file_name().ends_with(".a")));
    assert!(!inv
        .cuda_libraries
        .iter()
        .any(|l| l.path.to_string().contains("/torch/lib/")));
}

#[test]
fn every_venv_library_of_the_real_capture_is_found() {
    let inv = inventory();
    let captured = include_str!("../../testdata/h200/cuda_libs_find.txt");
    let venv: Vec<&str> = captured
        .lines()
        .filter(|l| l.starts_with("/opt/torch/.venv/"))
        .collect();
    assert!(venv.len() >= 5);
    for p in venv {
        let l = lib(&inv, p);
        assert_eq!(l.provider, LibraryProvider::PipWheel, "{p}");
        assert!(l.version.is_some(), "{p} has no version");
    }
}

#[test]
fn toolkit_stub_compat_conda_and_system_libraries() {
    let inv = inventory();
    let t = "/usr/local/cuda-12.1/targets/x86_64-linux/lib";
    let rt = lib(&inv, &format!("{t}/libcudart.so.12.1.105"));
    assert_eq!(rt.version_text(), Some("12.1.105"));
    assert_eq!(rt.soname.as_deref(), Some("libcudart.so.12"));
    assert_eq!(rt.provider, LibraryProvider::System);
    assert_eq!(
        lib(&inv, &format!("{t}/libcublas.so.12.1.3.1")).version_text(),
        Some("12.1.3.1")
    );
    let stub = lib(&inv, &format!("{t}/stubs/libcuda.so"));
    assert_eq!(
        (stub.family.name(), stub.provider),
        ("cuda", LibraryProvider::Stub)
    );
    assert_eq!(
        lib(&inv, &format!("{t}/stubs/libnvidia-ml.so")).provider,
        LibraryProvider::Stub
    );
    let compat = lib(&inv, "/usr/local/cuda-12.1/compat/libcuda.so.530.30.02");
    assert_eq!(compat.provider, LibraryProvider::ForwardCompat);
    assert_eq!(compat.version_text(), Some("530.30.02"));
    assert_eq!(
        compat.version.as_ref().and_then(LibVersion::driver),
        Some(&"530.30.02".parse().unwrap())
    );
    // From the libcuda.so.1 link beside it.
    assert_eq!(compat.soname.as_deref(), Some("libcuda.so.1"));
    // No link: the driver's own soname, not one derived from the version.
    let jit = lib(
        &inv,
        "/usr/local/cuda-12.1/compat/libnvidia-ptxjitcompiler.so.530.30.02",
    );
    assert_eq!(jit.provider, LibraryProvider::ForwardCompat);
    assert_eq!(jit.soname.as_deref(), Some("libnvidia-ptxjitcompiler.so.1"));
    // Links are not files: only the real file of each chain is listed.
    assert!(!inv.cuda_libraries.iter().any(
        |l| l.path.file_name() == "libcudart.so.12" && l.path.as_str().starts_with("usr/local")
    ));
    let conda_rt = lib(&inv, "/opt/conda/lib/libcudart.so.11.8.89");
    assert_eq!(conda_rt.provider, LibraryProvider::Conda);
    assert_eq!(conda_rt.version_text(), Some("11.8.89"));
    let conda_blas = lib(&inv, "/opt/conda/lib/libcublas.so.11");
    assert_eq!(conda_blas.package.as_deref(), Some("cudatoolkit"));
    assert_eq!(conda_blas.version_text(), Some("11.8.0"));
    let sys_cudnn = lib(&inv, "/usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.0");
    assert_eq!(sys_cudnn.provider, LibraryProvider::System);
    assert_eq!(sys_cudnn.version_text(), Some("8.9.0"));
    // Deterministic order.
    let paths: Vec<&str> = inv.cuda_libraries.iter().map(|l| l.path.as_str()).collect();
    let mut sorted = paths.clone();
    sorted.sort();
    assert_eq!(paths, sorted);
}

#[test]
fn driver_libraries_outside_stubs_and_compat() {
    let inv = inventory();
    let d: Vec<(String, &str, Option<&str>)> = inv
        .driver_libraries
        .iter()
        .map(|d| {
            (
                d.path.to_string(),
                d.name.as_str(),
                d.version.as_ref().map(|v| v.as_str()),
            )
        })
        .collect();
    let d: Vec<(&str, &str, Option<&str>)> =
        d.iter().map(|(p, n, v)| (p.as_str(), *n, *v)).collect();
    assert_eq!(
        d,
        vec![
            (
                "/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05",
                "libcuda",
                Some("535.104.05")
            ),
            (
                "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.535.104.05",
                "libnvidia-ml",
                Some("535.104.05")
            ),
            // Named by its soname only: the version comes from its siblings.
            (
                "/usr/lib/x86_64-linux-gnu/libnvidia-ptxjitcompiler.so.1",
                "libnvidia-ptxjitcompiler",
                Some("535.104.05")
            ),
        ]
    );
}

#[test]
fn toolkits_packages_image_and_loader() {
    let inv = inventory();
    let tk: Vec<(String, Option<String>, bool)> = inv
        .cuda_toolkits
        .iter()
        .map(|t| {
            (
                t.path.to_string(),
                t.version.map(|v| v.to_string()),
                t.default,
            )
        })
        .collect();
    let tk: Vec<(&str, Option<&str>, bool)> = tk
        .iter()
        .map(|(p, v, d)| (p.as_str(), v.as_deref(), *d))
        .collect();
    assert_eq!(
        tk,
        vec![
            ("/usr/local/cuda-11.8", Some("11.8.89"), false),
            ("/usr/local/cuda-12.1", Some("12.1.1"), true),
        ]
    );
    let os: Vec<(&str, &str)> = inv
        .os_packages
        .iter()
        .map(|p| (p.name.as_str(), p.version.as_str()))
        .collect();
    assert_eq!(
        os,
        vec![
            ("cuda-compat-12-1", "530.30.02-1"),
            ("cuda-cudart-12-1", "12.1.105-1"),
            ("libcudnn8", "8.9.0.131-1+cuda12.1"),
        ]
    );
    let conda: Vec<(&str, &str, &str)> = inv
        .conda_packages
        .iter()
        .map(|p| (p.name.as_str(), p.version.as_str(), p.prefix.as_str()))
        .collect();
    assert_eq!(
        conda,
        vec![
            ("cudatoolkit", "11.8.0", "/opt/conda"),
            ("python", "3.11.5", "/opt/conda")
        ]
    );
    assert_eq!(inv.image.glibc.as_deref(), Some("2.35"));
    let py: Vec<(String, &str)> = inv
        .image
        .python
        .iter()
        .map(|p| (p.path.to_string(), p.version.as_str()))
        .collect();
    let py: Vec<(&str, &str)> = py.iter().map(|(p, v)| (p.as_str(), *v)).collect();
    assert_eq!(
        py,
        vec![
            ("/opt/torch/.venv/bin/python3.12", "3.12.3"),
            ("/usr/bin/python3.12", "3.12"),
        ]
    );
    assert_eq!(
        inv.image.env.get("CUDA_VERSION").map(String::as_str),
        Some("12.1.0")
    );
    assert!(!inv.image.env.contains_key("HOME"));
    assert_eq!(
        inv.loader.ld_so_conf,
        vec![
            "/usr/local/cuda/targets/x86_64-linux/lib",
            "/usr/local/lib",
            "/usr/local/lib/x86_64-linux-gnu",
            "/lib/x86_64-linux-gnu",
            "/usr/lib/x86_64-linux-gnu",
        ]
    );
    assert!(!inv.partial);
}

fn t(s: &str) -> ArchTarget {
    s.parse().unwrap()
}

#[test]
fn binaries_with_device_code_or_cuda_links() {
    let mut tree = FileTree::default();
    let file = |facts: Vec<Fact>| Node {
        kind: NodeKind::File {
            size: 10,
            mode: 0o755,
        },
        layer: 1,
        facts,
    };
    let elf = |needed: &[&str], fatbin: Option<FatbinSummary>| {
        Fact::Elf(ElfFacts {
            cudart_version: None,
            static_cudart_version: None,
            class: 64,
            elf_type: "dyn".into(),
            soname: None,
            rpath: vec![],
            warnings: vec![],
            machine: "x86_64".into(),
            needed: needed.iter().map(|s| s.to_string()).collect(),
            runpath: vec!["$ORIGIN/../../nvidia/cu13/lib".into()],
            fatbin,
            has_kernels: None,
            cubin: None,
            loose_cubins: vec![],
            loose_ptx: vec![],
        })
    };
    let entry = |s: &str, v: (u16, u16), c: Option<&str>| FatbinEntry {
        target: t(s),
        code_version: v,
        compression: c.map(str::to_string),
        in_group: false,
        offset: 0,
        header_size: 64,
        payload_size: 0,
        compressed_size: 0,
        uncompressed_size: 0,
        flags: 0,
        member_offset: None,
        payload_offset: 0,
    };
    let summary = |entries: Vec<FatbinEntry>| FatbinSummary {
        sections: vec![crate::detect::elf::FatbinSection {
            name: ".nv_fatbin".into(),
            offset: 0,
            size: 0,
            containers: vec![crate::detect::elf::FatbinContainer {
                offset: 0,
                size: 0,
                entries,
            }],
        }],
    };
    let p = |s: &str| ImagePath::new(s).unwrap();
    tree.nodes.insert(
        p("app/_C.so"),
        file(vec![elf(
            &["libcudart.so.13", "libc.so.6"],
            Some(summary(vec![
                entry("sm_90", (1, 8), Some("zstd")),
                entry("sm_80", (1, 8), None),
                entry("compute_90", (8, 8), Some("lz4")),
            ])),
        )]),
    );
    tree.nodes.insert(
        p("app/links_only"),
        file(vec![elf(&["libcuda.so.1"], None)]),
    );
    tree.nodes
        .insert(p("app/plain"), file(vec![elf(&["libc.so.6"], None)]));
    let inv = build(
        &ImageMeta::default(),
        &tree,
        vec![crate::walk::ScanIssue::at(
            "x",
            "/bad",
            crate::walk::IssueKind::Truncated,
            "truncated",
        )],
    );
    assert!(inv.partial);
    assert_eq!(inv.binaries.len(), 2);
    let b = &inv.binaries[0];
    assert_eq!(b.path, "/app/_C.so");
    assert_eq!(b.sass, vec![t("sm_80"), t("sm_90")]);
    assert_eq!(b.ptx, vec![t("compute_90")]);
    assert_eq!(b.ptx_isa.get("compute_90").map(String::as_str), Some("8.8"));
    assert_eq!(b.compression, vec!["lz4", "zstd"]);
    assert!(b.has_device_code);
    assert_eq!(b.layer, Some(1));
    let l = &inv.binaries[1];
    assert_eq!(l.path, "/app/links_only");
    assert!(!l.has_device_code);
    let text = render_text(&inv);
    assert!(text.contains("/app/_C.so"), "{text}");
    assert!(text.contains("compute_90 (ISA 8.8)"), "{text}");
    assert!(text.contains("1 more ELF files link CUDA"), "{text}");
    assert!(text.contains("PARTIAL"), "{text}");
}

#[test]
fn text_and_json_render() {
    let inv = inventory();
    let text = render_text(&inv);
    for want in [
        "/usr/local/cuda-12.1 12.1.1  [/usr/local/cuda]",
        "pip wheels:",
        "stubs (link-time only, never loaded):",
        "forward-compat package:",
        "torch",
        "CUDA 13.0",
        "libcuda",
        "535.104.05",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    let json = serde_json::to_value(&inv).unwrap();
    for key in [
        "image",
        "cuda_toolkits",
        "cuda_libraries",
        "driver_libraries",
        "python_packages",
        "conda_packages",
        "os_packages",
        "binaries",
        "loader",
        "partial",
        "errors",
    ] {
        assert!(json.get(key).is_some(), "{key}");
    }
    // Sorted by path: /opt/conda/… first; providers serialize in snake_case.
    assert_eq!(json["cuda_libraries"][0]["provider"], "conda");
    let providers: Vec<&str> = json["cuda_libraries"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l["provider"].as_str())
        .collect();
    for p in ["pip_wheel", "forward_compat", "stub", "bundled", "system"] {
        assert!(providers.contains(&p), "{p}");
    }
    // Deterministic: two builds serialize identically.
    assert_eq!(json, serde_json::to_value(inventory()).unwrap());
}

/// torch bundles its CUDA runtime renamed `libcudart-<hash>.so.11.0` (the soname of every
/// CUDA 11 runtime): its release comes from the code (torch 1.13.1's is CUDA 11.7), not the
/// file name; a runtime whose code says nothing keeps the file name's version.
#[test]
fn bundled_runtime_version_from_its_code() {
    let skel = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/cudart/torch-1.13.1-libcudart-e409450e.so.11.0.skel.gz");
    let mut data = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(skel).unwrap())
        .read_to_end(&mut data)
        .unwrap();
    let facts = crate::detect::elf::scan_elf_bytes(&data).unwrap();
    assert_eq!(facts.cudart_version, Some(11070));
    let mut silent = facts.clone();
    silent.cudart_version = None;
    let sp = "opt/v/lib/python3.10/site-packages/torch/lib";
    let mut tree = FileTree::default();
    for (name, f) in [
        ("libcudart-e409450e.so.11.0", facts),
        ("libcudart-0123abcd.so.11.0", silent),
    ] {
        tree.nodes.insert(
            ImagePath::new(&format!("{sp}/{name}")).unwrap(),
            Node {
                kind: NodeKind::File {
                    size: data.len() as u64,
                    mode: 0o755,
                },
                layer: 0,
                facts: vec![Fact::Elf(f)],
            },
        );
    }
    let inv = build(&ImageMeta::default(), &tree, vec![]);
    let rt = lib(&inv, &format!("/{sp}/libcudart-e409450e.so.11.0"));
    assert_eq!(rt.family, LibFamily::Cudart);
    assert_eq!(rt.version_text(), Some("11.7"));
    // Typed where the code was read: no rule turns "11.7" back into a version.
    assert_eq!(
        rt.version.as_ref().and_then(LibVersion::cuda_release),
        Some(crate::version::CudaVersion::new(11, 7))
    );
    assert_eq!(rt.provider, LibraryProvider::Bundled);
    let other = lib(&inv, &format!("/{sp}/libcudart-0123abcd.so.11.0"));
    assert_eq!(other.version_text(), Some("11.0"));
}

/// One loader model: the same root filesystem read as an image layer (the walker's file tree)
/// and as a captured host (`gpulint host --root`) gives the same ld.so.conf directories and
/// resolves every soname to the same file through relative, absolute and chained links.
#[test]
fn image_and_host_resolve_libraries_the_same_way() {
    use crate::loader::{self, LoadRequest, LoaderFs};
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let file = |p: &str, text: &str| {
        let p = root.join(p);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    let link = |p: &str, target: &str| {
        let p = root.join(p);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        symlink(target, p).unwrap();
    };
    let lib = "usr/local/cuda-12.1/targets/x86_64-linux/lib";
    file(&format!("{lib}/libcudart.so.12.1.105"), "x");
    link(&format!("{lib}/libcudart.so.12"), "libcudart.so.12.1.105");
    file(&format!("{lib}/libcublas.so.12.1.3.1"), "x");
    link(&format!("{lib}/libcublas.so.12"), "libcublas.so.12.1.3.1");
    link("usr/local/cuda-12.1/lib64", "targets/x86_64-linux/lib");
    link("etc/alternatives/cuda", "/usr/local/cuda-12.1");
    link("usr/local/cuda", "/etc/alternatives/cuda");
    file("etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n");
    file("etc/ld.so.conf.d/000_cuda.conf", "/usr/local/cuda/lib64\n");
    file("etc/ld.so.conf.d/.hidden.conf", "/nowhere\n");
    let venv = "opt/venv/lib/python3.12/site-packages";
    file(
        &format!("{venv}/nvidia/cuda_runtime/lib/libcudart.so.12"),
        "x",
    );
    file(&format!("{venv}/torch/lib/libtorch_cuda.so"), "x");
    // A loop must end in both, resolving nothing.
    link("opt/loop/a", "b");
    link("opt/loop/b", "a");

    let (tree, _) = tree_from_dir(root);
    let image = super::build::TreeFs(&tree);
    let captured = crate::host::CapturedReader::new(root).unwrap();
    let host = crate::host::reader::HostFs(&captured);
    let both: [&dyn LoaderFs; 2] = [&image, &host];

    let conf: Vec<Vec<(String, String)>> = both
        .iter()
        .map(|fs| loader::system_search_dirs(*fs))
        .collect();
    assert_eq!(conf[0], conf[1]);
    assert_eq!(
        conf[0],
        [(
            "/usr/local/cuda/lib64".to_string(),
            "/etc/ld.so.conf.d/000_cuda.conf".to_string()
        )]
    );
    let conf_dirs: Vec<String> = conf[0].iter().map(|(d, _)| d.clone()).collect();
    let runpath = vec!["$ORIGIN/../../nvidia/cuda_runtime/lib".to_string()];
    let origin = format!("/{venv}/torch/lib");
    for ld_library_path in [
        None,
        Some("/usr/local/cuda/lib64"),
        Some("/opt/loop/a:/usr/lib"),
    ] {
        let order = loader::search_order(&LoadRequest {
            origin: &origin,
            runpath: &runpath,
            ld_library_path,
            ld_so_conf: &conf_dirs,
            machine: "x86_64",
            ..Default::default()
        });
        for needed in ["libcudart.so.12", "libcublas.so.12", "libcufft.so.11"] {
            let found: Vec<_> = both
                .iter()
                .map(|fs| loader::find(*fs, &order, needed))
                .collect();
            assert_eq!(found[0], found[1], "{needed} with {ld_library_path:?}");
        }
        let cudart = loader::find(&image, &order, "libcudart.so.12").unwrap();
        let expected = match ld_library_path {
            Some(d) if d.starts_with("/usr/local/cuda") => {
                format!("/{lib}/libcudart.so.12.1.105")
            }
            _ => format!("/{venv}/nvidia/cuda_runtime/lib/libcudart.so.12"),
        };
        assert_eq!(cudart.real, expected, "{ld_library_path:?}");
        // cuBLAS is found through ld.so.conf and the absolute /etc/alternatives link.
        let cublas = loader::find(&host, &order, "libcublas.so.12").unwrap();
        assert_eq!(cublas.real, format!("/{lib}/libcublas.so.12.1.3.1"));
    }
    assert_eq!(loader::resolve(&image, "/opt/loop/a"), None);
    assert_eq!(loader::resolve(&host, "/opt/loop/a"), None);
}

/// Issue 34: Debian/Ubuntu's `nvidia-cuda-toolkit` has no version file and keeps nvcc in
/// `/usr/lib/nvidia-cuda-toolkit/bin` (`/usr/bin/nvcc` is a wrapper): the toolkit is found
/// there, versioned by the dpkg package, and by nvcc's banner when the binary is readable.
#[test]
fn debian_toolkit_layout_from_dpkg_and_nvcc() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/rootfs/debian-cuda-toolkit");
    let (mut tree, errors) = tree_from_dir(&root);
    assert!(errors.is_empty(), "{errors:?}");
    let meta = ImageMeta {
        reference: "dir:testdata/rootfs/debian-cuda-toolkit".into(),
        ..Default::default()
    };
    let toolkits = |tree: &FileTree| -> Vec<(String, Option<String>, Option<String>)> {
        build(&meta, tree, Vec::new())
            .cuda_toolkits
            .iter()
            .map(|t| {
                (
                    t.path.to_string(),
                    t.version.map(|v| v.to_string()),
                    t.version_from.clone(),
                )
            })
            .collect()
    };
    let from_dpkg = "dpkg nvidia-cuda-toolkit 11.8.89~11.8.0-5~deb12u1";
    assert_eq!(
        toolkits(&tree),
        vec![(
            "/usr/lib/nvidia-cuda-toolkit".to_string(),
            Some("11.8.89".to_string()),
            Some(from_dpkg.to_string())
        )]
    );
    // The real nvcc carries its banner; it is read before the package database.
    let nvcc = ImagePath::new("usr/lib/nvidia-cuda-toolkit/bin/nvcc").unwrap();
    let banner = b"\x7fELF\0Cuda compilation tools, release 11.8, V11.8.89\0";
    let facts = (crate::detect::cuda_toolkit::DETECTOR.parse)(&nvcc, banner).unwrap();
    tree.nodes.get_mut(&nvcc).unwrap().facts = facts;
    assert_eq!(
        toolkits(&tree),
        vec![(
            "/usr/lib/nvidia-cuda-toolkit".to_string(),
            Some("11.8.89".to_string()),
            Some("nvcc".to_string())
        )]
    );
    let inv = build(&meta, &tree, Vec::new());
    let text = render_text(&inv);
    assert!(
        text.contains("/usr/lib/nvidia-cuda-toolkit 11.8.89 (from nvcc)"),
        "{text}"
    );
}

/// Issue 34: the RHEL/Fedora layout of NVIDIA's rpm packages: `/usr/local/cuda-X.Y` trees,
/// `/usr/local/cuda` reaching one through the alternatives system (`/etc/alternatives/cuda`),
/// and the rpm database (`var/lib/rpm/rpmdb.sqlite`, `testdata/rpm`). A version.json wins,
/// then nvcc's banner (`cuda-nvcc-12-6` alone ships no version file), then the package that
/// installed the tree (`cuda-toolkit-12-4`, a tree whose nvcc was removed); the CUDA/NVIDIA
/// rpm packages are listed.
#[test]
fn rhel_toolkit_layout_with_the_rpm_database() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    let put = |rel: &str, data: &[u8]| {
        let p = r.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, data).unwrap();
    };
    let rpmdb =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/rpm/rpmdb.sqlite"))
            .unwrap();
    put("var/lib/rpm/rpmdb.sqlite", &rpmdb);
    put("usr/local/cuda-12.4/lib64/libcudart.so.12.4.127", b"");
    put(
        "usr/local/cuda-12.6/bin/nvcc",
        b"\x7fELF\0Cuda compilation tools, release 12.6, V12.6.85\0",
    );
    put(
        "usr/local/cuda-12.8/version.json",
        br#"{"cuda": {"name": "CUDA SDK", "version": "12.8.1"}}"#,
    );
    std::fs::create_dir_all(r.join("etc/alternatives")).unwrap();
    std::os::unix::fs::symlink("/usr/local/cuda-12.6", r.join("etc/alternatives/cuda")).unwrap();
    std::os::unix::fs::symlink("/etc/alternatives/cuda", r.join("usr/local/cuda")).unwrap();
    let (tree, errors) = tree_from_dir(r);
    assert!(errors.is_empty(), "{errors:?}");
    let inv = build(&ImageMeta::default(), &tree, Vec::new());
    let got: Vec<(String, Option<String>, Option<String>, bool)> = inv
        .cuda_toolkits
        .iter()
        .map(|t| {
            (
                t.path.to_string(),
                t.version.map(|v| v.to_string()),
                t.version_from.clone(),
                t.default,
            )
        })
        .collect();
    let tk = |p: &str, v: &str, from: &str, default| {
        (
            p.to_string(),
            Some(v.to_string()),
            Some(from.to_string()),
            default,
        )
    };
    assert_eq!(
        got,
        vec![
            tk(
                "/usr/local/cuda-12.4",
                "12.4.1",
                "rpm cuda-toolkit-12-4 12.4.1-1",
                false
            ),
            tk("/usr/local/cuda-12.6", "12.6.85", "nvcc", true),
            tk("/usr/local/cuda-12.8", "12.8.1", "version.json", false),
        ]
    );
    let pkgs: Vec<(&str, &str, &str)> = inv
        .os_packages
        .iter()
        .map(|p| (p.name.as_str(), p.version.as_str(), p.manager.as_str()))
        .collect();
    assert_eq!(
        pkgs,
        [
            ("cuda-nvcc-12-4", "12.4.131-1", "rpm"),
            ("cuda-nvcc-12-6", "12.6.85-1", "rpm"),
            ("cuda-toolkit-12-4", "12.4.1-1", "rpm"),
            ("nvidia-driver-cuda-libs", "3:550.54.15-1.el9", "rpm"),
        ]
    );
    assert!(!inv.partial);
}

/// Issue 34: conda's `cuda-nvcc` makes the environment prefix a toolkit without a version
/// file; its conda-meta record versions it when nvcc's banner cannot (here: an empty nvcc).
#[test]
fn conda_cuda_nvcc_toolkit_from_conda_meta() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("opt/conda");
    std::fs::create_dir_all(prefix.join("conda-meta")).unwrap();
    std::fs::create_dir_all(prefix.join("bin")).unwrap();
    std::fs::write(prefix.join("bin/nvcc"), b"").unwrap();
    std::fs::write(
        prefix.join("conda-meta/cuda-nvcc-12.4.131-h02f8bfc_0.json"),
        br#"{"name": "cuda-nvcc", "version": "12.4.131", "build": "h02f8bfc_0", "channel": "https://conda.anaconda.org/nvidia", "files": []}"#,
    )
    .unwrap();
    // Another package's record names no toolkit.
    std::fs::write(
        prefix.join("conda-meta/cuda-cudart-12.4.127-0.json"),
        br#"{"name": "cuda-cudart", "version": "12.4.127", "files": []}"#,
    )
    .unwrap();
    let (tree, errors) = tree_from_dir(dir.path());
    assert!(errors.is_empty(), "{errors:?}");
    let inv = build(&ImageMeta::default(), &tree, Vec::new());
    let got: Vec<(String, Option<String>, Option<String>)> = inv
        .cuda_toolkits
        .iter()
        .map(|t| {
            (
                t.path.to_string(),
                t.version.map(|v| v.to_string()),
                t.version_from.clone(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![(
            "/opt/conda".to_string(),
            Some("12.4.131".to_string()),
            Some("conda cuda-nvcc 12.4.131".to_string())
        )]
    );
}

#[test]
fn cuda_version_of_debian_package_versions() {
    use super::build::cuda_version_of_deb;
    for (deb, want) in [
        ("11.8.89~11.8.0-5~deb12u1", Some("11.8.89")), // Debian 12
        ("11.5.1-1ubuntu1", Some("11.5.1")),           // Ubuntu 22.04
        ("12.0.140~12.0.1-4build4", Some("12.0.140")), // Ubuntu 24.04
        ("12.1.105-1", Some("12.1.105")),              // NVIDIA's cuda-nvcc-12-1
        ("1:11.8.89-1", Some("11.8.89")),
        ("2.36-9+deb12u4", Some("2.36")),
        ("abc-1", None),
        ("12", None),
    ] {
        assert_eq!(cuda_version_of_deb(deb).as_deref(), want, "{deb}");
    }
}

/// Text the inventory keeps for output is read into numbers here, not by the rules.
#[test]
fn glibc_and_ptx_isa_read_as_numbers() {
    let mut image = ImageInfo {
        glibc: Some("2.35".into()),
        ..Default::default()
    };
    assert_eq!(image.glibc_version(), Some((2, 35)));
    image.glibc = Some("2.x".into());
    assert_eq!(image.glibc_version(), None);
    let mut b = Binary::default();
    let t: ArchTarget = "compute_90".parse().unwrap();
    b.ptx_isa.insert(t.to_string(), "8.8".into());
    assert_eq!(b.ptx_isa_version(&t), Some((8, 8)));
    assert_eq!(b.ptx_isa_version(&"compute_80".parse().unwrap()), None);
}

/// A dist-info (METADATA, RECORD) and the ELF files its RECORD lists, read through the
/// dist reader's own parsers; the ELFs as the facts the ELF reader records (its DT_NEEDED
/// reading is tested in `detect::elf`).
/// (dist-info dir, METADATA text, [(file in RECORD, its DT_NEEDED)]).
pub(crate) type SyntheticDist<'a> = (&'a str, &'a str, &'a [(&'a str, &'a [&'a str])]);

pub(crate) fn dist_tree(dists: &[SyntheticDist<'_>]) -> FileTree {
    use crate::detect::python_dist::{parse_metadata, parse_record};
    let site = "usr/lib/python3/dist-packages";
    let mut tree = FileTree::default();
    let file = |facts: Vec<Fact>| Node {
        kind: NodeKind::File {
            size: 10,
            mode: 0o755,
        },
        layer: 0,
        facts,
    };
    for (dir, metadata, elves) in dists {
        let meta = parse_metadata(metadata.as_bytes()).unwrap();
        tree.nodes.insert(
            ImagePath::new(&format!("{site}/{dir}/METADATA")).unwrap(),
            file(vec![Fact::PythonDist(meta)]),
        );
        let record: String = elves
            .iter()
            .map(|(f, _)| format!("{f},sha256=x,1\n"))
            .collect();
        tree.nodes.insert(
            ImagePath::new(&format!("{site}/{dir}/RECORD")).unwrap(),
            file(vec![Fact::DistRecord(parse_record(record.as_bytes()))]),
        );
        for (f, needed) in elves.iter() {
            let elf = ElfFacts {
                cudart_version: None,
                static_cudart_version: None,
                class: 64,
                elf_type: "dyn".into(),
                soname: None,
                rpath: vec![],
                warnings: vec![],
                machine: "x86_64".into(),
                needed: needed.iter().map(|s| s.to_string()).collect(),
                runpath: vec![],
                fatbin: None,
                has_kernels: None,
                cubin: None,
                loose_cubins: vec![],
                loose_ptx: vec![],
            };
            tree.nodes.insert(
                ImagePath::new(&format!("{site}/{f}")).unwrap(),
                file(vec![Fact::Elf(elf)]),
            );
        }
    }
    tree
}

#[test]
fn cuda_need_of_packages_from_their_own_evidence() {
    let tree = dist_tree(&[
        // onnxruntime-gpu 1.18.1's PyPI wheel: nothing in its name, CUDA 11 / cuDNN 8 NEEDed.
        (
            "onnxruntime_gpu-1.18.1.dist-info",
            "Name: onnxruntime-gpu\nVersion: 1.18.1\nRequires-Dist: numpy>=1.21\n",
            &[(
                "onnxruntime/capi/libonnxruntime_providers_cuda.so",
                &[
                    "libcublasLt.so.11",
                    "libcudnn.so.8",
                    "libcudart.so.11.0",
                    "libc.so.6",
                ],
            )],
        ),
        // tensorflow[and-cuda]: the nvidia wheels only under the extra.
        (
            "tensorflow-2.18.0.dist-info",
            "Name: tensorflow\nVersion: 2.18.0\n\
             Requires-Dist: nvidia-cublas-cu12==12.5.3.2; extra == \"and-cuda\"\n\
             Requires-Dist: nvidia-cudnn-cu12==9.3.0.75; extra == \"and-cuda\"\n",
            &[],
        ),
        // A name that says 12.6 and a binary that NEEDs CUDA 11's runtime.
        (
            "spconv_cu126-2.3.8.dist-info",
            "Name: spconv-cu126\nVersion: 2.3.8\nRequires-Dist: cumm-cu126\n",
            &[("spconv/core_cc.so", &["libcudart.so.11.0"])],
        ),
        (
            "nvidia_cublas_cu12-12.5.3.2.dist-info",
            "Name: nvidia-cublas-cu12\nVersion: 12.5.3.2\n",
            &[],
        ),
        (
            "numpy-2.0.0.dist-info",
            "Name: numpy\nVersion: 2.0.0\n",
            &[],
        ),
    ]);
    let inv = build(&ImageMeta::default(), &tree, Vec::new());
    let need = |name: &str| pkg(&inv, name).cuda_need.clone();
    use crate::inventory::cuda_need::EvidenceKind;
    use crate::version::CudaTag;

    let ort = need("onnxruntime-gpu").expect("DT_NEEDED evidence");
    assert_eq!(ort.cuda, Some(CudaTag::major_only(11)));
    assert_eq!(ort.cudnn, Some(8));
    assert_eq!(ort.conflict, None);
    assert!(ort
        .evidence
        .iter()
        .all(|e| e.kind == EvidenceKind::DtNeeded));
    assert_eq!(
        ort.evidence[0].source,
        "onnxruntime/capi/libonnxruntime_providers_cuda.so: libcublasLt.so.11"
    );

    let tf = need("tensorflow").expect("Requires-Dist evidence");
    assert_eq!(tf.cuda, Some(CudaTag::major_only(12)));
    assert_eq!(tf.cudnn, Some(9));
    assert_eq!(tf.evidence[0].extra.as_deref(), Some("and-cuda"));

    let sp = need("spconv-cu126").unwrap();
    assert_eq!(sp.cuda, Some(CudaTag::release(12, 6)));
    let kinds: Vec<EvidenceKind> = sp.evidence.iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        [
            EvidenceKind::DistName,
            EvidenceKind::RequiresDist,
            EvidenceKind::DtNeeded
        ]
    );
    assert!(sp
        .conflict
        .as_deref()
        .unwrap()
        .contains("libcudart.so.11.0 says 11"));

    // Major-only stays major-only in the new field; the old `cuda` field keeps writing 12.0.
    let cublas = pkg(&inv, "nvidia-cublas-cu12");
    assert_eq!(
        cublas.cuda_need.as_ref().unwrap().cuda,
        Some(CudaTag::major_only(12))
    );
    let json = serde_json::to_value(cublas).unwrap();
    assert_eq!(json["cuda_need"]["cuda"], "12");
    assert_eq!(json["cuda_need"]["evidence"][0]["kind"], "dist_name");
    assert_eq!(json["cuda"], "12.0");
    assert!(need("numpy").is_none());
    assert!(serde_json::to_value(pkg(&inv, "numpy"))
        .unwrap()
        .get("cuda_need")
        .is_none());
}
