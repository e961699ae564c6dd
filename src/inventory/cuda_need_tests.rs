//! `cuda_need` end to end: small synthetic installs (METADATA, RECORD, version modules, real
//! nvcc-built ELF files from `testdata/fatbin/`) scanned as a `dir:` root, one distribution
//! per kind of evidence. The values the torch and PTX ISA tables give are asked of the
//! built-in matrices, not written here.

use super::cuda_need::{CudaNeed, EvidenceKind};
use super::Inventory;
use crate::matrix::{Facts, PtxNeed};
use crate::version::CudaTag;
use std::path::Path;

const SITE: &str = "usr/local/lib/python3.12/site-packages";

fn testdata(rel: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("testdata")
            .join(rel),
    )
    .unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// nvcc's default build of a tiny kernel (libstdc++, libgcc_s, libc NEEDed) with two of its
/// NEEDED names rewritten in place (same length, so every offset stays): a real ELF whose
/// DT_NEEDED the reader reads like any other.
fn elf_needing(stdcxx_as: &str, gcc_as: &str) -> Vec<u8> {
    let mut data = testdata("fatbin/synthetic/fx_default_patchelf.so");
    for (from, to) in [("libstdc++.so.6", stdcxx_as), ("libgcc_s.so.1", gcc_as)] {
        assert_eq!(from.len(), to.len(), "{to}: the rewrite keeps the length");
        let n = replace_all(&mut data, from.as_bytes(), to.as_bytes());
        assert!(n > 0, "{from} not in the fixture");
    }
    data
}

fn replace_all(data: &mut [u8], from: &[u8], to: &[u8]) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i + from.len() <= data.len() {
        if &data[i..i + from.len()] == from {
            data[i..i + from.len()].copy_from_slice(to);
            n += 1;
            i += from.len();
        } else {
            i += 1;
        }
    }
    n
}

/// One installed distribution: its METADATA, and the files its RECORD lists (path in
/// site-packages, content).
struct Wheel<'a> {
    name: &'a str,
    version: &'a str,
    requires: &'a [&'a str],
    files: Vec<(&'a str, Vec<u8>)>,
}

fn wheel<'a>(name: &'a str, version: &'a str) -> Wheel<'a> {
    Wheel {
        name,
        version,
        requires: &[],
        files: Vec::new(),
    }
}

/// The wheels installed into one root and scanned as `dir:` (the walker sniffs the ELFs).
fn scan(wheels: &[Wheel<'_>]) -> Inventory {
    let root = tempfile::tempdir().unwrap();
    let site = root.path().join(SITE);
    for w in wheels {
        let info = site.join(format!(
            "{}-{}.dist-info",
            w.name.replace('-', "_"),
            w.version
        ));
        std::fs::create_dir_all(&info).unwrap();
        let mut meta = format!(
            "Metadata-Version: 2.1\nName: {}\nVersion: {}\n",
            w.name, w.version
        );
        for r in w.requires {
            meta.push_str(&format!("Requires-Dist: {r}\n"));
        }
        std::fs::write(info.join("METADATA"), meta).unwrap();
        let mut record = String::new();
        for (path, data) in &w.files {
            let p = site.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, data).unwrap();
            record.push_str(&format!("{path},sha256=x,{}\n", data.len()));
        }
        std::fs::write(info.join("RECORD"), record).unwrap();
    }
    crate::scan::scan_image(&format!("dir:{}", root.path().display()), None).unwrap()
}

fn need(inv: &Inventory, name: &str) -> CudaNeed {
    inv.python_packages
        .iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("no package {name}"))
        .cuda_need
        .clone()
        .unwrap_or_else(|| panic!("{name}: no cuda_need"))
}

fn kinds(n: &CudaNeed) -> Vec<EvidenceKind> {
    n.evidence.iter().map(|e| e.kind).collect()
}

#[test]
fn each_kind_of_evidence_from_a_synthetic_install() {
    let facts = Facts::embedded().unwrap();
    let torch_cuda = facts.torch_pypi_default("2.5.1").expect("torch 2.5 row");
    let ptx_95 = facts.ptx_isa_need((9, 5)).expect("ISA 9.5 row");
    let PtxNeed::Known(by_nvcc) = ptx_95.value else {
        panic!("ISA 9.5 is a known row")
    };
    let static_lib = testdata("fatbin/cuda-binaries/v03_ptx75_only/libv03_ptx75_only.so");
    let ptx_only = testdata("fatbin/nvcc-13.5/libv20_ptx90_nvcc135.so");

    let mut local = wheel("flash-attn", "2.5.8+cu122torch2.3cxx11abiFALSE");
    local.files.push(("flash_attn_2_cuda.so", ptx_only.clone()));
    let mut requires = wheel("needs-cublas", "1.0");
    requires.requires = &["nvidia-cublas-cu12>=12.1", "numpy"];
    let mut torch_pin = wheel("xformers", "0.0.28.post3");
    torch_pin.requires = &["numpy", "torch==2.5.1"];
    let mut torch_local = wheel("torch-ext", "1.0");
    torch_local.requires = &["torch==2.5.1+cu121"];
    let mut torch_unknown = wheel("future-ext", "1.0");
    torch_unknown.requires = &["torch==99.1.0"];
    // A name no GPU list knows: its RECORD is read all the same.
    let mut needed = wheel("plainname", "3.0");
    needed.files.push((
        "plainname/_C.so",
        elf_needing("libnvrtc.so.12", "libcudnn.so.9"),
    ));
    let mut module = wheel("paddlepaddle-gpu", "2.6.2");
    module.files.push((
        "paddle/version/__init__.py",
        b"full_version     = '2.6.2'\ncuda_version     = '11.8'\ncudnn_version    = '8.6.0'\n"
            .to_vec(),
    ));
    let mut tf = wheel("tensorflow", "2.21.0");
    tf.requires = &["nvidia-cudnn-cu12<10.0,>=9.3.0.75; extra == \"and-cuda\""];
    tf.files.push((
        "tensorflow/python/platform/build_info.py",
        b"build_info = collections.OrderedDict([('cuda_version', '12.5.1'), ('cudnn_version', '9')])\n"
            .to_vec(),
    ));
    let mut cupy = wheel("cupy-cuda12x", "14.2.0");
    cupy.files
        .push(("cupy/.data/_wheel.json", br#"{"cuda": "12.x"}"#.to_vec()));
    let mut static_rt = wheel("staticpkg", "1.0");
    static_rt.files.push(("staticpkg/libk.so", static_lib));
    let mut ptx = wheel("ptxpkg", "1.0");
    ptx.files.push(("ptxpkg/libk.so", ptx_only));
    let inv = scan(&[
        wheel("spconv-cu126", "2.3.8"),
        local,
        requires,
        torch_pin,
        torch_local,
        torch_unknown,
        needed,
        module,
        tf,
        cupy,
        static_rt,
        ptx,
    ]);

    let n = need(&inv, "spconv-cu126");
    assert_eq!(
        (n.cuda, n.cuda_from),
        (Some(CudaTag::release(12, 6)), Some(EvidenceKind::DistName))
    );

    // The local version decides; the PTX ISA 9.5 of its binary is a later lower bound
    // above 12.2: built by a newer nvcc than the tag says, noted.
    let n = need(&inv, "flash-attn");
    assert_eq!(
        (n.cuda, n.cuda_from, n.cuda_lower_bound),
        (
            Some(CudaTag::release(12, 2)),
            Some(EvidenceKind::LocalVersion),
            false
        )
    );
    let c = n.conflict.expect("a lower bound above the tag");
    assert!(c.contains("PTX ISA 9.5 says at least"), "{c}");

    let n = need(&inv, "needs-cublas");
    assert_eq!(
        (n.cuda, n.cuda_from),
        (
            Some(CudaTag::major_only(12)),
            Some(EvidenceKind::RequiresDist)
        )
    );

    // torch==2.5.1: the CUDA of torch 2.5's PyPI wheel, citing its row.
    let n = need(&inv, "xformers");
    let want = CudaTag::release(torch_cuda.value.major, torch_cuda.value.minor);
    assert_eq!(
        (n.cuda, n.cuda_from),
        (Some(want), Some(EvidenceKind::RequiresTorch))
    );
    assert_eq!(n.evidence[0].source, "torch==2.5.1");
    assert_eq!(
        n.evidence[0].cited.as_deref(),
        Some(torch_cuda.source.as_str())
    );
    // A pin with its own CUDA tag needs no table.
    let n = need(&inv, "torch-ext");
    assert_eq!(n.cuda, Some(CudaTag::release(12, 1)));
    assert_eq!(n.evidence[0].cited, None);
    // A release the table does not hold: unknown, and said so.
    let n = need(&inv, "future-ext");
    assert_eq!(n.cuda, None);
    assert_eq!(kinds(&n), [EvidenceKind::RequiresTorch]);
    let note = n.evidence[0].note.as_deref().unwrap();
    assert!(
        note.contains("torch 99.1.0 is not in gpulint's torch table"),
        "{note}"
    );

    let n = need(&inv, "plainname");
    assert_eq!(
        (n.cuda, n.cudnn, n.cuda_from, n.cudnn_from),
        (
            Some(CudaTag::major_only(12)),
            Some(9),
            Some(EvidenceKind::DtNeeded),
            Some(EvidenceKind::DtNeeded)
        )
    );
    assert!(n
        .evidence
        .iter()
        .any(|e| e.source == "plainname/_C.so: libnvrtc.so.12"));

    let n = need(&inv, "paddlepaddle-gpu");
    assert_eq!(
        (n.cuda, n.cudnn, n.cuda_from),
        (
            Some(CudaTag::release(11, 8)),
            Some(8),
            Some(EvidenceKind::VersionModule)
        )
    );
    assert_eq!(
        n.evidence[0].source,
        "paddle/version/__init__.py: cuda 11.8, cudnn 8.6.0"
    );
    // Requires-Dist names the major (under the one extra) and the cuDNN; the version module
    // adds the minor.
    let n = need(&inv, "tensorflow");
    assert_eq!(
        (n.cuda, n.cudnn, n.cuda_from, n.conflict),
        (
            Some(CudaTag::release(12, 5)),
            Some(9),
            Some(EvidenceKind::VersionModule),
            None
        )
    );
    let n = need(&inv, "cupy-cuda12x");
    assert_eq!(n.cuda, Some(CudaTag::major_only(12)));
    assert!(n
        .evidence
        .iter()
        .any(|e| e.kind == EvidenceKind::VersionModule
            && e.source == "cupy/.data/_wheel.json: cuda 12.x"
            && e.cuda == Some(CudaTag::major_only(12))));

    // nvcc 13.0's default `-cudart static`: the runtime in the binary decides, exactly.
    let n = need(&inv, "staticpkg");
    assert_eq!(
        (n.cuda, n.cuda_from, n.cuda_lower_bound),
        (
            Some(CudaTag::release(13, 0)),
            Some(EvidenceKind::StaticCudart),
            false
        )
    );
    assert_eq!(
        kinds(&n),
        [EvidenceKind::StaticCudart, EvidenceKind::PtxIsa]
    );

    // PTX only (nvcc 13.5, `-cudart none`): the ISA's release, as a lower bound.
    let n = need(&inv, "ptxpkg");
    assert_eq!(
        (n.cuda, n.cuda_from, n.cuda_lower_bound),
        (
            Some(CudaTag::release(by_nvcc.major, by_nvcc.minor)),
            Some(EvidenceKind::PtxIsa),
            true
        )
    );
    assert_eq!(n.evidence[0].source, "ptxpkg/libk.so: PTX ISA 9.5");
    assert_eq!(n.evidence[0].cited.as_deref(), Some(ptx_95.source.as_str()));
    let text = super::render_text(&inv);
    assert!(
        text.contains(&format!("needs: CUDA >={by_nvcc} (PTX ISA ptxpkg/libk.so")),
        "{text}"
    );
    let json = serde_json::to_value(&inv).unwrap();
    let ptxpkg = json["python_packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "ptxpkg")
        .unwrap();
    assert_eq!(ptxpkg["cuda_need"]["cuda_from"], "ptx_isa");
    assert_eq!(ptxpkg["cuda_need"]["cuda_lower_bound"], true);
    assert_eq!(ptxpkg["cuda_need"]["evidence"][0]["lower_bound"], true);
    assert_documented(&json);
}

/// The inventory JSON against `docs/schema/inventory.schema.json`, whose package and
/// `cuda_need` parts are closed: a field the schema does not document fails here.
fn assert_documented(json: &serde_json::Value) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/schema/inventory.schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let validator = jsonschema::options().build(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(json)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    // It can fail: an undocumented field is refused.
    let mut bad = json.clone();
    bad["python_packages"][0]["cuda_need"]["undocumented"] = serde_json::json!(1);
    assert!(validator.iter_errors(&bad).next().is_some());
}

/// bitsandbytes ships one library per CUDA release and loads the one matching torch's: the
/// builds are alternatives, so nothing is decided and nothing conflicts. One build alone
/// decides like any binary.
#[test]
fn per_cuda_builds_are_alternatives() {
    let mut bnb = wheel("bitsandbytes", "0.50.2");
    bnb.files.push((
        "bitsandbytes/libbitsandbytes_cuda118.so",
        elf_needing("libnvrtc.so.11", "libcudnn.so.8"),
    ));
    bnb.files.push((
        "bitsandbytes/libbitsandbytes_cuda121.so",
        elf_needing("libnvrtc.so.12", "libcudnn.so.9"),
    ));
    let mut one = wheel("onebuild", "1.0");
    one.files.push((
        "onebuild/libonebuild_cuda121.so",
        elf_needing("libnvrtc.so.12", "libcudnn.so.9"),
    ));
    let inv = scan(&[bnb, one]);
    let n = need(&inv, "bitsandbytes");
    assert_eq!((n.cuda, n.cudnn, &n.conflict), (None, None, &None));
    let variants: Vec<&str> = n
        .evidence
        .iter()
        .filter_map(|e| e.variant.as_deref())
        .collect();
    assert!(
        variants.contains(&"cuda118") && variants.contains(&"cuda121"),
        "{variants:?}"
    );
    let n = need(&inv, "onebuild");
    assert_eq!((n.cuda, n.cudnn), (Some(CudaTag::major_only(12)), Some(9)));
    assert!(n.evidence.iter().all(|e| e.variant.is_none()));
    assert_documented(&serde_json::to_value(&inv).unwrap());
}
