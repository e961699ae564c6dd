//! Test helpers: small inventories and targets built in code, for rule unit tests.

use crate::arch::ArchTarget;
use crate::gpu_target::Target;
use crate::inventory::{
    Binary, CudaLibrary, Inventory, LibFamily, LibVersion, LibraryProvider, PythonPackage,
};
use crate::matrix::Facts;
pub(crate) use crate::vocab::ImagePath;

pub(crate) fn matrix() -> Facts {
    Facts::embedded().expect("embedded matrices parse")
}

pub(crate) fn target(m: &Facts, gpu: &str, driver: &str) -> Target {
    crate::gpu_target::cli::targets_from_flags(m.matrix(), &[gpu.to_string()], Some(driver), None)
        .expect("target")
        .remove(0)
}

pub(crate) fn binary(path: &str, sass: &[&str], ptx: &[(&str, &str)]) -> Binary {
    Binary {
        path: ImagePath::new(path).unwrap(),
        layer: Some(0),
        machine: "x86_64".into(),
        needed: vec![],
        runpath: vec![],
        rpath: vec![],
        sass: sass
            .iter()
            .map(|s| s.parse::<ArchTarget>().unwrap())
            .collect(),
        ptx: ptx
            .iter()
            .map(|(s, _)| s.parse::<ArchTarget>().unwrap())
            .collect(),
        ptx_isa: ptx
            .iter()
            .map(|(s, isa)| (s.to_string(), isa.to_string()))
            .collect(),
        compression: vec![],
        has_device_code: !(sass.is_empty() && ptx.is_empty()),
        warnings: vec![],
        ..Default::default()
    }
}

pub(crate) fn lib(path: &str, name: &str, version: &str, provider: LibraryProvider) -> CudaLibrary {
    let family = LibFamily::from_name(name);
    CudaLibrary {
        path: ImagePath::new(path).unwrap(),
        version: Some(LibVersion::read(&family, version.into())),
        family,
        soname: None,
        provider,
        aliases: vec![],
        package: None,
        layer: Some(0),
    }
}

pub(crate) fn pkg(name: &str, version: &str, cuda: Option<&str>, location: &str) -> PythonPackage {
    PythonPackage {
        name: name.into(),
        version: version.into(),
        tags: vec![],
        location: ImagePath::new(location).unwrap(),
        cuda: cuda.map(|c| c.parse().unwrap()),
        requires: vec![],
        layer: Some(0),
        cuda_need: None,
    }
}

/// A torch 2.11.0+cu130 pip install like the real one on the H200 host.
pub(crate) fn torch_cu130_inventory() -> Inventory {
    let site = "opt/venv/lib/python3.12/site-packages";
    let mut inv = Inventory::default();
    inv.python_packages
        .push(pkg("torch", "2.11.0", Some("13.0"), site));
    inv.cuda_libraries.push(lib(
        &format!("{site}/nvidia/cu13/lib/libcudart.so.13"),
        "cudart",
        "13.0.96",
        LibraryProvider::PipWheel,
    ));
    inv.binaries.push(binary(
        &format!("{site}/torch/lib/libtorch_cuda.so"),
        &["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"],
        &[],
    ));
    inv
}

pub(crate) fn codes(findings: &[crate::finding::Finding]) -> Vec<String> {
    let mut v: Vec<String> = findings
        .iter()
        .filter(|f| f.severity >= crate::finding::Severity::Warning)
        .map(|f| f.rule.to_string())
        .collect();
    v.sort();
    v.dedup();
    v
}
