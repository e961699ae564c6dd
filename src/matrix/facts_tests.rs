//! One test per question [`Facts`] answers, each checking the answer's source and basis, and
//! that the three rule families get the same answer object.

use super::*;

/// Where cuda_driver.toml's release rows were read.
const DRIVER_DOC: &str =
    "https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html#cuda-driver";

fn facts() -> Facts {
    Facts::embedded().unwrap()
}

fn cuda(s: &str) -> CudaVersion {
    s.parse().unwrap()
}

fn driver(s: &str) -> DriverVersion {
    s.parse().unwrap()
}

/// A cited answer: its source is an https URL.
fn assert_cited<T>(s: &Sourced<T>) {
    assert!(s.source.starts_with("https://"), "{}", s.source);
    assert_eq!(s.basis, Basis::Cited, "{}", s.source);
}

#[test]
fn cuda_min_driver_answers_from_the_ga_row_whatever_the_patch() {
    let f = facts();
    // 12.4 GA needs 550.54.14; its Update 1 row says 550.54.15, which a 12.4.1 runtime does
    // not need (the driver checks major.minor only).
    for v in ["12.4", "12.4.0", "12.4.1", "12.4.131"] {
        let s = f.cuda_min_driver(cuda(v)).unwrap();
        assert_eq!(s.value, driver("550.54.14"), "{v}");
        assert_eq!(s.source, DRIVER_DOC);
        assert_eq!(s.basis, Basis::Cited);
    }
    assert_eq!(f.cuda_min_driver(cuda("12.7")), None);
}

#[test]
fn minor_compat_floor_is_sourced() {
    let f = facts();
    let s = f.minor_compat_floor(12).unwrap();
    assert_eq!(s.value, driver("525.60.13"));
    assert_cited(&s);
    assert_eq!(f.minor_compat_floor(10), None);
}

#[test]
fn driver_cuda_and_max_cuda_cite_the_release_row() {
    let f = facts();
    let d = f.driver_cuda(&driver("535.104.05")).unwrap();
    assert_eq!(d.value.at_least, cuda("12.2"));
    assert!(!d.value.open);
    assert_eq!(d.source, DRIVER_DOC);
    let m = f.max_cuda_for_driver(&driver("580.159.04")).unwrap();
    assert_eq!(m.value, cuda("13.0"));
    assert_eq!(m.source, DRIVER_DOC);
    // A branch newer than every row: supported CUDA is open above, so no exact answer.
    assert!(f.driver_cuda(&driver("999.1")).unwrap().value.open);
    assert_eq!(f.max_cuda_for_driver(&driver("999.1")), None);
}

#[test]
fn forward_compat_cites_the_table() {
    let f = facts();
    let s = f.forward_compat(&driver("535.104.05"), &cuda("12.8"));
    assert_eq!(
        s.value,
        f.matrix()
            .forward_compat(&driver("535.104.05"), &cuda("12.8"))
    );
    assert_cited(&s);
}

#[test]
fn ptx_isa_need_cites_the_isa_row() {
    let f = facts();
    let s = f.ptx_isa_need((8, 4)).unwrap();
    assert_eq!(s.value, PtxNeed::Known(cuda("12.4")));
    assert_eq!(s.value.known(), Some(cuda("12.4")));
    // Measured from the 12.4 wheels' ptxas (ci/nvcc-ptx-isa.py); 8.6 ("12.7") is cited.
    assert_measured_on_pypi(&s);
    assert_cited(&f.ptx_isa_need((8, 6)).unwrap());
    // Above every row: the newest row answers, and no release is known.
    let s = f.ptx_isa_need((99, 0)).unwrap();
    assert!(matches!(s.value, PtxNeed::NewerThanKnown { .. }));
    assert_eq!(s.value.known(), None);
    assert_measured_on_pypi(&s);
}

#[test]
fn gpu_questions_are_sourced() {
    let f = facts();
    let g = f.gpu("NVIDIA H200").unwrap();
    assert_eq!(g.value.cc, ComputeCapability::new(9, 0));
    assert!(g.value.datacenter);
    assert_cited(&g);
    let ccs = f.known_capabilities();
    assert!(ccs.windows(2).all(|w| w[0] < w[1]), "ascending, each once");
    assert!(ccs.contains(&ComputeCapability::new(9, 0)));
    let floor = f.gpu_driver_floor(100).unwrap();
    assert_eq!(floor.value.first_release, cuda("12.8"));
    assert_eq!(floor.value.driver, driver("570.26"));
    // 12.8's arch row is measured from its nvcc wheels (ci/nvcc-arch-lists.py).
    assert_measured_on_pypi(&floor);
}

/// A measured answer: its source is the PyPI page of the wheel it was read from.
fn assert_measured_on_pypi<T>(s: &Sourced<T>) {
    assert!(
        s.source.starts_with("https://pypi.org/project/"),
        "{}",
        s.source
    );
    assert_eq!(s.basis, Basis::Measured, "{}", s.source);
}

#[test]
fn nvcc_questions_cite_the_arch_row() {
    let f = facts();
    let t = f.nvcc_targets(&cuda("12.8")).unwrap();
    assert!(t.value.contains(&100));
    assert_measured_on_pypi(&t);
    let s = f
        .nvcc_supports(&cuda("12.9"), &"sm_100f".parse().unwrap())
        .unwrap();
    assert!(s.value);
    assert_measured_on_pypi(&s);
    // 11.1 has no wheel: its row is cited from the release notes.
    let t = f.nvcc_targets(&cuda("11.1")).unwrap();
    assert!(t.value.contains(&86));
    assert_cited(&t);
    // 13.1's row was measured from NVIDIA's nvcc wheel (its note says so).
    assert_eq!(
        f.nvcc_targets(&cuda("13.1")).unwrap().basis,
        Basis::Measured
    );
    assert_eq!(
        f.nvcc_supports(&cuda("9.9"), &"sm_90".parse().unwrap()),
        None
    );
}

#[test]
fn component_release_is_measured() {
    let f = facts();
    let s = f
        .component_release("nvidia-cufft-cu12", "11.3.3.83")
        .unwrap();
    assert_eq!(s.value, cuda("12.8"));
    assert!(
        s.source
            .starts_with("https://pypi.org/project/cuda-toolkit/12.8"),
        "{}",
        s.source
    );
    assert_eq!(s.basis, Basis::Measured);
}

#[test]
fn torch_questions_are_sourced() {
    let f = facts();
    let r = f.torch_release("2.3.1").unwrap();
    assert_eq!(r.value.version, "2.3");
    assert_cited(&r);
    let newest = f.torch_newest_release().unwrap();
    assert_eq!(
        Some(newest.value),
        f.matrix().torch().releases().last(),
        "the newest line"
    );
    let v = f.torch_newest_with_variant("cu121").unwrap();
    assert_eq!(v.value.1.tag, "cu121");
    assert_eq!(v.source, v.value.1.source);
    assert_cited(&v);
    let d = f.torch_pypi_default("2.3.0").unwrap();
    assert_eq!(d.value, cuda("12.1"));
    assert_cited(&d);
    let c = f.torch_companion("torchvision", "0.18.1").unwrap();
    assert_eq!(c.value, "2.3");
    assert_eq!(c.source, "https://pypi.org/project/torchvision/0.18.1/");
    let p = f.torch_pinned_by("vllm", "0.33.0").unwrap();
    assert_eq!(p.value, "2.14.0");
    assert_eq!(p.basis, Basis::Measured);
    assert!(p.source.ends_with(".whl"));
}

#[test]
fn image_and_run_config_questions_are_sourced() {
    let f = facts();
    let n = f.ngc_pytorch_cuda("23.10-py3").unwrap();
    assert_eq!(n.value, cuda("12.2.2"));
    assert_cited(&n);
    // 24.05's CUDA was read from other frameworks' notes of that month: inferred.
    let n = f.ngc_pytorch_cuda("24.05-py3").unwrap();
    assert_eq!(n.value, cuda("12.4.1"));
    assert_eq!(n.basis, Basis::Inferred);
    // A month known by its PyTorch only, and one without a release, have no CUDA answer.
    assert_eq!(f.ngc_pytorch_cuda("24.07-py3"), None);
    assert_eq!(f.ngc_pytorch_cuda("25.07-py3"), None);
    let e = f.cuda_eol(cuda("10.1")).unwrap();
    assert_cited(&e);
    assert_eq!(f.cuda_eol(cuda("11.8")), None);
    assert_cited(&f.os_eol("Ubuntu18.04").unwrap());
    let devices = f.required_devices();
    assert!(devices.iter().any(|d| d.value == "/dev/nvidiactl"));
    devices.iter().for_each(assert_cited);
    let a = f.arch_list_named("Ampere").unwrap();
    assert_eq!(a.value, "8.0;8.6+PTX");
    assert_cited(&a);
    assert_eq!(
        f.has_no_latest_tag("nvidia/cuda").unwrap().source,
        "https://hub.docker.com/r/nvidia/cuda"
    );
    let i = f.image_cuda("k8s.gcr.io/cuda-vector-add", "v0.1").unwrap();
    assert_eq!(i.value, cuda("8.0"));
    assert_cited(&i);
    let t = f.tensorflow_cuda(1, 1).unwrap();
    assert_eq!(t.value, cuda("8.0"));
    assert_eq!(t.source, "https://www.tensorflow.org/install/source#gpu");
}

#[test]
fn a_row_without_a_url_is_inferred() {
    assert_eq!(Basis::of_source("https://example.com/x"), Basis::Cited);
    assert_eq!(
        Basis::of_source("read off the 24.05 notes"),
        Basis::Inferred
    );
}

#[test]
fn unknown_facts_answer_nothing() {
    let f = Facts::unknown();
    assert_eq!(f.cuda_min_driver(cuda("12.4")), None);
    assert_eq!(f.max_cuda_for_driver(&driver("580.159.04")), None);
    assert!(f.gpu("NVIDIA H200").is_none());
    assert_eq!(f.ptx_isa_need((8, 4)), None);
    assert_eq!(
        f.forward_compat(&driver("535.104.05"), &cuda("12.8")).value,
        ForwardCompat::Unknown
    );
    assert!(f.known_capabilities().is_empty());
}

/// The image rules (`ImageContext`), the run-configuration rules (`RuleCtx`) and the host
/// checks (`CheckOptions`) hold the same `Facts` and get the same answer object, source
/// included: CUDA 12.4.1 needs the 12.4 GA row's driver in every family. (The host view used
/// to answer 12.4.1 from the Update 1 row, 550.54.15.)
#[test]
fn every_family_gets_the_same_min_driver_for_cuda_12_4_1() {
    use crate::rules::image::context::ImageContext;
    let f = facts();
    let mut inv = crate::inventory::Inventory::default();
    inv.image.env.insert("CUDA_VERSION".into(), "12.4.1".into());
    let image = ImageContext {
        inventory: &inv,
        facts: &f,
        target: None,
    };
    let runs: [crate::runconfig::runspec::RunSpec; 0] = [];
    let spec = crate::runconfig::SpecContext {
        subject: crate::runconfig::Subject::Runs(&runs),
        targets: &[],
        facts: &f,
    };
    let host = crate::rules::host::CheckOptions {
        facts: &f,
        ..Default::default()
    };
    let v = cuda("12.4.1");
    let want = Sourced {
        value: driver("550.54.14"),
        source: DRIVER_DOC.to_string(),
        basis: Basis::Cited,
    };
    assert_eq!(image.facts.cuda_min_driver(v).as_ref(), Some(&want));
    assert_eq!(spec.facts.cuda_min_driver(v).as_ref(), Some(&want));
    assert_eq!(host.facts.cuda_min_driver(v).as_ref(), Some(&want));
    // What the host view answered before: the row lookup without GA truncation.
    assert_eq!(
        f.matrix().cuda_min_driver(&v).unwrap().linux,
        Some(driver("550.54.15"))
    );
    // And the image requirements (what `gpulint image` reports) state that answer.
    let reqs = crate::rules::requirements::compute(&image);
    assert_eq!(reqs.cuda_runtimes.len(), 1);
    assert_eq!(reqs.cuda_runtimes[0].min_driver, "550.54.14");
}

/// A row that states its basis keeps it; a row that does not gets the one its source gives.
#[test]
fn a_row_that_states_its_basis_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(crate::matrix::CUDA_IMAGES),
        r#"cuda_eol = []
required_device = [
  { path = "/dev/nvidiactl", source = "https://example.com/devices", basis = "measured" },
]
os_eol = [{ os = "ubuntu18.04", eol = "2023-05-31", source = "https://example.com/eol" }]
arch_name = [{ name = "ampere", archs = "8.0;8.6+PTX", source = "by hand", basis = "inferred" }]
no_latest_tag = []
"#,
    )
    .unwrap();
    let f = Facts::new(Matrix::with_overrides(dir.path()).unwrap());
    let d = f.required_devices();
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].basis, Basis::Measured);
    assert_eq!(d[0].source, "https://example.com/devices");
    assert_eq!(f.os_eol("ubuntu18.04").unwrap().basis, Basis::Cited);
    assert_eq!(f.arch_list_named("Ampere").unwrap().basis, Basis::Inferred);
    // An unknown basis is an error, as every unknown key or value in the data files is.
    std::fs::write(
        dir.path().join(crate::matrix::CUDA_IMAGES),
        "cuda_eol = [{ series = \"10.1\", source = \"https://example.com\", basis = \"guessed\" }]\nos_eol = []\nrequired_device = []\narch_name = []\nno_latest_tag = []\n",
    )
    .unwrap();
    assert!(Matrix::with_overrides(dir.path()).is_err());
}

#[test]
fn every_eol_row_cites_a_url() {
    let f = facts();
    let images = &f.matrix().images;
    let eol = images.cuda_eol.iter().map(|r| &r.source);
    for s in eol.chain(images.os_eol.iter().map(|r| &r.source)) {
        assert!(s.starts_with("https://"), "{s}");
    }
}

/// Issue 27's consistency check: every GPU model has a driver that drives it, from the first
/// CUDA release whose architecture row targets its compute capability. (For GPUs older than
/// the tables' first release, CUDA 10.0, that driver is an upper bound of the first one.)
#[test]
fn every_gpu_has_a_supporting_driver_from_the_tables() {
    let f = facts();
    let missing: Vec<String> = f
        .matrix()
        .gpus()
        .iter()
        .filter(|g| f.gpu_driver_floor(g.cc.sm()).is_none())
        .map(|g| format!("{} ({})", g.name, g.cc))
        .collect();
    assert!(
        missing.is_empty(),
        "GPUs with no supporting driver: {missing:?}"
    );
}
