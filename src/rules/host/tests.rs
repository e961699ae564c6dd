//! Every check on the real H200 capture and on hand-made broken variants
//! (testdata/host/variants/*, overlaid on testdata/host/h200).

use super::testutil::{expect, run};

use super::{CheckOptions, CheckStatus};
use crate::arch::{ArchTarget, CodeKind, ComputeCapability};
use crate::finding::{FailOn, Severity};
use crate::host::knowledge::Knowledge;
use crate::host::python::{ArchScanner, BinaryArchs};
use crate::version::CudaVersion;
use std::path::Path;
use CheckStatus::{CouldNotCheck, Problem};

/// Test scanner: the libtorch_cuda.so placeholders in testdata hold the real capture's
/// `cuobjdump --list-elf` summary ("  444 sm_90" lines) instead of a binary.
struct SummaryScanner;
impl ArchScanner for SummaryScanner {
    fn scan(&self, p: &Path) -> Result<Option<BinaryArchs>, String> {
        let t = std::fs::read_to_string(p).map_err(|e| e.to_string())?;
        let mut a = BinaryArchs::default();
        for l in t.lines() {
            // "  444 sm_90", or "  1 compute_80 isa=8.8" for PTX with its ISA version.
            let mut toks = l.split_whitespace().skip(1);
            let Some(Ok(x)) = toks.next().map(|t| t.parse::<ArchTarget>()) else {
                continue;
            };
            if x.kind == CodeKind::Ptx {
                a.ptx.push(x);
                if let Some(isa) = toks.next().and_then(|t| t.strip_prefix("isa=")) {
                    a.ptx_isa.insert(x.to_string(), isa.to_string());
                }
            } else {
                a.sass.push(x);
            }
        }
        Ok((!a.sass.is_empty() || !a.ptx.is_empty()).then_some(a))
    }
}

/// Test knowledge: just the facts these fixtures need.
struct TestKnowledge;
impl Knowledge for TestKnowledge {
    fn gpu_cc(&self, name: &str) -> Option<ComputeCapability> {
        (name == "NVIDIA H200").then(|| ComputeCapability::new(9, 0))
    }
    fn ptx_isa_min_cuda(&self, isa: (u16, u16)) -> Option<CudaVersion> {
        match isa {
            (8, 8) => Some(CudaVersion::new(12, 9)),
            (9, 1) => Some(CudaVersion::new(13, 1)),
            _ => None,
        }
    }
}

fn opts() -> CheckOptions<'static> {
    CheckOptions {
        knowledge: &TestKnowledge,
        pythons: Vec::new(),
        scanner: Some(&SummaryScanner),
    }
}

fn runv(v: &[&str]) -> Vec<super::CheckResult> {
    let mut layers = vec!["h200", "variants/complete"];
    layers.extend(v.iter().copied());
    run(&layers, &opts())
}

#[test]
fn real_h200_capture() {
    let r = run(&["h200"], &opts());
    let text = super::render_checks_text(&r);
    // What the capture holds is judged; what it lacks is "could not check", never guessed.
    assert!(r.iter().all(|x| x.status != Problem), "{text}");
    for code in [
        "GL203", "GL204", "GL205", "GL206", "GL207", "GL208", "GL209", "GL210", "GL211", "GL212",
        "GL215",
    ] {
        expect(&r, code, CheckStatus::Ok);
    }
    expect(&r, "GL201", CouldNotCheck);
    expect(&r, "GL202", CouldNotCheck);
    assert!(expect(&r, "GL204", CheckStatus::Ok)
        .message
        .contains("580.159.04"));
    assert!(expect(&r, "GL215", CheckStatus::Ok)
        .message
        .contains("2.11.0+cu130"));
    // No findings but info ones.
    let f = super::check_findings(&r);
    assert!(f.iter().all(|x| x.severity == Severity::Info));
}

#[test]
fn complete_healthy_tree_is_all_ok() {
    let r = run(&["h200", "variants/complete"], &opts());
    let bad: Vec<_> = r.iter().filter(|x| x.status != CheckStatus::Ok).collect();
    assert!(bad.is_empty(), "{bad:#?}");
    let host_rules = crate::rules::RULES
        .iter()
        .filter(|r| matches!(r.check, crate::rules::Check::Host { .. }))
        .count();
    assert_eq!(r.len(), host_rules);
}

#[test]
fn gl201_pci_gpu_not_seen() {
    let r = runv(&["variants/pci-extra"]);
    let x = expect(&r, "GL201", Problem);
    assert!(x.message.contains("0000:00:07.0"), "{}", x.message);
    assert!(x
        .evidence
        .iter()
        .any(|e| e.contains("/sys/bus/pci/devices/0000:00:07.0")));
}

#[test]
fn gl202_nouveau() {
    let r = runv(&["variants/nouveau-loaded"]);
    let x = expect(&r, "GL202", Problem);
    assert_eq!(x.severity, Severity::Error);
    expect(&r, "GL203", Problem);
    expect(&r, "GL201", Problem);
    // Not loaded but not blacklisted: a warning.
    let dir = super::testutil::tree(&["h200", "variants/complete"]);
    std::fs::remove_file(dir.path().join("etc/modprobe.d/blacklist-nouveau.conf")).unwrap();
    let dep = dir.path().join("lib/modules/6.8.0-85-generic/modules.dep");
    let mut t = std::fs::read_to_string(&dep).unwrap();
    t.push_str(
        "kernel/drivers/gpu/drm/nouveau/nouveau.ko.zst: kernel/drivers/gpu/drm/drm.ko.zst\n",
    );
    std::fs::write(&dep, t).unwrap();
    let reader = crate::host::CapturedReader::new(dir.path()).unwrap();
    let p = crate::host::detect_host(&reader).unwrap();
    let r = super::run_checks_with(&reader, &p, &opts());
    assert_eq!(expect(&r, "GL202", Problem).severity, Severity::Warning);
}

#[test]
fn gl203_and_gl207_missing_uvm() {
    let r = runv(&["variants/no-uvm"]);
    assert!(expect(&r, "GL203", Problem).message.contains("nvidia_uvm"));
    assert!(expect(&r, "GL207", Problem)
        .message
        .contains("/dev/nvidia-uvm is missing"));
}

#[test]
fn gl204_api_mismatch() {
    let r = runv(&["variants/api-mismatch"]);
    let x = expect(&r, "GL204", Problem);
    assert!(x
        .evidence
        .iter()
        .any(|e| e.contains("Driver/library version mismatch")));
    assert!(x
        .evidence
        .iter()
        .any(|e| e.contains("libnvidia-ml.so.580.105.08")));
    // Without nvidia-smi's message, the library versions alone show it.
    let dir = super::testutil::tree(&["h200", "variants/complete", "variants/api-mismatch"]);
    for f in std::fs::read_dir(dir.path().join(".gpulint-host/commands")).unwrap() {
        let f = f.unwrap().path();
        if f.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("nvidia-smi")
        {
            std::fs::remove_file(f).unwrap();
        }
    }
    let reader = crate::host::CapturedReader::new(dir.path()).unwrap();
    let p = crate::host::detect_host(&reader).unwrap();
    let r = super::run_checks_with(&reader, &p, &opts());
    let x = expect(&r, "GL204", Problem);
    assert!(
        x.message.contains("580.159.04") && x.message.contains("580.105.08"),
        "{}",
        x.message
    );
}

/// nvidia-smi works (host libraries match the module) but the kernel logged a client of another
/// version: a second user-space driver, e.g. baked into a container image.
#[test]
fn gl204_api_mismatch_from_dmesg_while_nvidia_smi_works() {
    let dir = super::testutil::tree(&["h200", "variants/complete"]);
    let dmesg = dir.path().join(".gpulint-host/commands/dmesg.txt");
    let mut text = std::fs::read_to_string(&dmesg).unwrap_or_default();
    let healthy = {
        let reader = crate::host::CapturedReader::new(dir.path()).unwrap();
        let p = crate::host::detect_host(&reader).unwrap();
        super::run_checks_with(&reader, &p, &opts())
    };
    expect(&healthy, "GL204", CheckStatus::Ok);
    text.push_str("[ 4711.2] NVRM: API mismatch: the client has the version 550.54.15, but\n[ 4711.2] NVRM: this kernel module has the version 580.159.04.  Please\n[ 4711.2] NVRM: make sure that this kernel module and all NVIDIA driver\n[ 4711.2] NVRM: components have the same version.\n");
    std::fs::write(&dmesg, text).unwrap();
    let reader = crate::host::CapturedReader::new(dir.path()).unwrap();
    let p = crate::host::detect_host(&reader).unwrap();
    let r = super::run_checks_with(&reader, &p, &opts());
    let x = expect(&r, "GL204", Problem);
    assert!(
        x.message.contains("550.54.15") && x.message.contains("580.159.04"),
        "{}",
        x.message
    );
    assert!(
        x.evidence[0].starts_with("dmesg: NVRM: API mismatch"),
        "{:?}",
        x.evidence
    );
}

#[test]
fn gl205_open_module_refuses_gpu() {
    let r = runv(&["variants/open-refused"]);
    let x = expect(&r, "GL205", Problem);
    assert!(x.message.contains("open"));
    assert!(x.fix.as_deref().unwrap().contains("proprietary"));
}

#[test]
fn gl206_kernel_updated_driver_not_rebuilt() {
    let r = runv(&["variants/other-kernel"]);
    let x = expect(&r, "GL206", Problem);
    assert!(x.message.contains("6.8.0-85-generic") && x.message.contains("6.8.0-90-generic"));
    assert_eq!(x.severity, Severity::Error);
    let r = runv(&["variants/newer-kernel"]);
    assert_eq!(expect(&r, "GL206", Problem).severity, Severity::Warning);
}

#[test]
fn gl207_permissions() {
    let r = runv(&["variants/dev-perm"]);
    let x = expect(&r, "GL207", Problem);
    assert!(
        x.message.contains("/dev/nvidia0 is not read-write"),
        "{}",
        x.message
    );
    // The complete tree's user is in `video`: same nodes are fine for her.
    let dir = super::testutil::tree(&["h200", "variants/complete", "variants/dev-perm"]);
    std::fs::write(
        dir.path().join(".gpulint-host/commands/id.txt"),
        "uid=1000(alice) gid=1000(alice) groups=1000(alice),44(video)\n",
    )
    .unwrap();
    let reader = crate::host::CapturedReader::new(dir.path()).unwrap();
    let p = crate::host::detect_host(&reader).unwrap();
    let r = super::run_checks_with(&reader, &p, &opts());
    expect(&r, "GL207", CheckStatus::Ok);
}

#[test]
fn gl208_persistence_off() {
    let r = runv(&["variants/persistence-off"]);
    assert_eq!(expect(&r, "GL208", Problem).severity, Severity::Warning);
}

#[test]
fn gl209_mig() {
    let r = runv(&["variants/mig-on"]);
    let x = expect(&r, "GL209", Problem);
    assert_eq!(x.severity, Severity::Error);
    assert!(x.message.contains("no MIG devices"));
    let r = runv(&["variants/mig-on", "variants/mig-instances"]);
    let x = expect(&r, "GL209", Problem);
    assert_eq!(x.severity, Severity::Info);
    assert!(x.message.contains("2 MIG device"), "{}", x.message);
    expect(&r, "GL207", CheckStatus::Ok);
}

#[test]
fn gl210_gpu_errors() {
    let r = runv(&["variants/gpu-err"]);
    let x = expect(&r, "GL210", Problem);
    assert_eq!(x.severity, Severity::Error);
    assert!(x.evidence.iter().any(|e| e.contains("ERR!")));
    assert!(x
        .evidence
        .iter()
        .any(|e| e.contains("Xid") && e.contains("79")));
    assert!(x
        .evidence
        .iter()
        .any(|e| e.contains("remapped_row_pending")));
}

#[test]
fn gl211_loader_picks_other_cuda() {
    let r = runv(&["variants/ld-conflict"]);
    let x = expect(&r, "GL211", Problem);
    assert!(
        x.message.contains("12.4") && x.message.contains("13.0"),
        "{}",
        x.message
    );
}

#[test]
fn gl212_and_gl215_driver_older_than_toolkit_and_torch() {
    let r = runv(&["variants/old-driver"]);
    let x = expect(&r, "GL212", Problem);
    assert!(x.message.contains("12.2"), "{}", x.message);
    assert_eq!(x.severity, Severity::Error);
    let t = expect(&r, "GL215", Problem);
    assert!(t.message.contains("too old"), "{}", t.message);
}

#[test]
fn gl213_no_container_toolkit() {
    let r = runv(&["variants/no-ctk"]);
    let x = expect(&r, "GL213", Problem);
    assert!(x.message.contains("not installed"));
}

#[test]
fn gl214_nvml_unknown_error_config() {
    let r = runv(&["variants/nvml-cgroup"]);
    let x = expect(&r, "GL214", Problem);
    assert!(
        x.message.contains("no-cgroups") && x.message.contains("daemon-reload"),
        "{}",
        x.message
    );
}

#[test]
fn gl215_torch_builds() {
    let r = runv(&["variants/torch-cpu"]);
    assert!(expect(&r, "GL215", Problem).message.contains("CPU-only"));
    let r = runv(&["variants/torch-old-arch"]);
    let x = expect(&r, "GL215", Problem);
    assert!(x.message.contains("no kernel image"), "{}", x.message);
    // Only PTX for the H200 (compute_80): JIT works when the driver (CUDA 13.0) knows the PTX
    // ISA (8.8 = CUDA 12.9), and fails when the ISA is newer (9.1 = CUDA 13.1), as GL003.
    let r = runv(&["variants/torch-ptx-jit"]);
    let x = expect(&r, "GL215", Problem);
    assert_eq!(x.severity, Severity::Warning);
    assert!(x.message.contains("JIT-compiles"), "{}", x.message);
    let r = runv(&["variants/torch-ptx-too-new"]);
    let x = expect(&r, "GL215", Problem);
    assert_eq!(x.severity, Severity::Error);
    assert!(
        x.message.contains("cannot JIT") && x.message.contains("PTX ISA 9.1 (CUDA 13.1)"),
        "{}",
        x.message
    );
    // Without a fatbin reader the arch list is "could not check", not a guess.
    let r = run(
        &["h200"],
        &CheckOptions {
            knowledge: &TestKnowledge,
            pythons: vec!["/opt/torch/.venv/bin/python".into()],
            scanner: None,
        },
    );
    expect(&r, "GL215", CouldNotCheck);
}

#[test]
fn findings_and_text() {
    let r = runv(&["variants/nouveau-loaded"]);
    let f = super::check_findings(&r);
    assert!(f
        .iter()
        .any(|x| x.rule == "GL202" && x.severity == Severity::Error));
    assert!(f
        .iter()
        .any(|x| x.severity == Severity::Info && x.message.starts_with("could not check")));
    let t = super::render_checks_text(&r);
    assert!(t.contains("[error] GL202 nouveau-loaded"));
    assert!(t.contains("fix: "));
}

/// `host --check` follows the configuration like every other command, and only a problem
/// (never a check that could not run) decides the exit code.
#[test]
fn config_and_fail_on_apply_to_host_checks() {
    let results = runv(&["variants/api-mismatch"]);
    assert!(super::fails(&results, FailOn::At(Severity::Error)));
    let known = |c: &str| c.starts_with("GL2");
    let config = |t: &str| crate::config::Config::parse("c.toml", t, &known).unwrap();

    let off = super::apply_config(results.clone(), &config("[rules]\nGL204 = \"off\"\n"));
    assert!(off.iter().all(|r| r.id != "GL204"));
    assert_eq!(
        off.len(),
        results.len() - super::testutil::of(&results, "GL204").len()
    );
    assert!(!super::fails(&off, FailOn::At(Severity::Error)));

    let warn = super::apply_config(results.clone(), &config("[rules]\nGL204 = \"warning\"\n"));
    let gl204 = expect(&warn, "GL204", Problem);
    assert_eq!(gl204.severity, Severity::Warning);
    assert!(!super::fails(&warn, FailOn::At(Severity::Error)));
    assert!(super::fails(&warn, FailOn::At(Severity::Warning)));

    // The H200 capture has checks that could not run (info) and no problem.
    let clean = run(&["h200"], &opts());
    assert!(clean.iter().any(|r| r.status == CouldNotCheck));
    assert!(!super::fails(&clean, FailOn::At(Severity::Info)));
    // `--fail-on none` never fails, even on a problem.
    assert!(!super::fails(&results, FailOn::Never));
}

/// Host files and command output reach the text report: none of it can forge a result line.
#[test]
fn host_text_escapes_what_it_quotes() {
    let mut r = runv(&["variants/nouveau-loaded"]);
    r[0].message = "x\n[ok] GL999 forged: fine\x1b[2J".into();
    r[0].evidence.push("e\n[ok] GL998 forged: fine".into());
    let t = super::render_checks_text(&r);
    assert!(!t.contains('\x1b'), "{t:?}");
    assert!(
        !t.lines().any(|l| l.starts_with("[ok] GL99")),
        "a forged line: {t}"
    );
    assert!(t.contains("x\\x0a[ok] GL999 forged"), "{t}");
}
