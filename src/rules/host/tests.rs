//! Every check on the real H200 capture and on hand-made broken variants
//! (testdata/host/variants/*, overlaid on testdata/host/h200).

use super::testutil::{expect, run};

use super::{CheckOptions, CheckStatus};
use crate::arch::{ArchTarget, CodeKind};
use crate::finding::{FailOn, Severity};
use crate::host::python::{ArchScanner, BinaryArchs};
use std::path::Path;
use CheckStatus::{CouldNotCheck, Problem};

/// The fatbin reader the CLI uses, on the real nvcc-built ELFs of the torch variants; the
/// h200 capture's libtorch_cuda.so is a documented text stand-in (the real one is 456 MB) that
/// holds the capture's `cuobjdump --list-elf` summary ("  444 sm_90" lines), read as such.
struct FixtureScanner;
impl ArchScanner for FixtureScanner {
    fn scan(&self, p: &Path) -> Result<Option<BinaryArchs>, String> {
        // Regular files only, as the CLI's scanner: a FIFO planted by a test must not block.
        let bytes = crate::io_util::read_regular(p, 64 << 20).map_err(|e| e.to_string())?;
        if bytes.starts_with(b"\x7fELF") {
            return crate::host::ElfArchScanner.scan(p);
        }
        let t = String::from_utf8(bytes).map_err(|e| e.to_string())?;
        let mut a = BinaryArchs::default();
        for l in t.lines() {
            let Some(Ok(x)) = l.split_whitespace().nth(1).map(|t| t.parse::<ArchTarget>()) else {
                continue;
            };
            if x.kind == CodeKind::Ptx {
                a.ptx.push(x);
            } else {
                a.sass.push(x);
            }
        }
        Ok((!a.sass.is_empty() || !a.ptx.is_empty()).then_some(a))
    }
}

/// The matrices gpulint ships (GPU compute capabilities, PTX ISA releases).
fn matrix() -> &'static crate::matrix::Facts {
    static M: std::sync::OnceLock<crate::matrix::Facts> = std::sync::OnceLock::new();
    M.get_or_init(|| crate::matrix::Facts::embedded().unwrap())
}

pub(super) fn opts() -> CheckOptions<'static> {
    CheckOptions {
        facts: matrix(),
        pythons: Vec::new(),
        scanner: Some(&FixtureScanner),
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
        .finding
        .message
        .contains("580.159.04"));
    assert!(expect(&r, "GL215", CheckStatus::Ok)
        .finding
        .message
        .contains("2.11.0+cu130"));
    // No findings but info ones.
    let f = super::check_findings(&r);
    assert!(f.iter().all(|x| x.severity == Severity::Info));
}

#[test]
fn complete_healthy_tree_is_all_ok() {
    let r = run(&["h200", "variants/complete"], &opts());
    let bad: Vec<_> = r
        .iter()
        .filter(|x| x.status != CheckStatus::Ok && x.status != CheckStatus::Skipped)
        .collect();
    assert!(bad.is_empty(), "{bad:#?}");
    // A bare-metal host: the in-container check did not run, which is not "ok".
    assert!(expect(&r, "GL216", CheckStatus::Skipped)
        .finding
        .message
        .contains("not applicable"));
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
    assert!(
        x.finding.message.contains("0000:00:07.0"),
        "{}",
        x.finding.message
    );
    assert!(x
        .evidence
        .iter()
        .any(|e| e.to_string().contains("/sys/bus/pci/devices/0000:00:07.0")));
}

#[test]
fn gl202_nouveau() {
    let r = runv(&["variants/nouveau-loaded"]);
    let x = expect(&r, "GL202", Problem);
    assert_eq!(x.finding.severity, Severity::Error);
    // Consequences of nouveau holding the GPU, folded under it.
    expect(&r, "GL203", CheckStatus::Explained);
    expect(&r, "GL201", CheckStatus::Explained);
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
    assert_eq!(
        expect(&r, "GL202", Problem).finding.severity,
        Severity::Warning
    );
}

/// nouveau loaded although blacklisted: the blacklist is younger than the running kernel's
/// initramfs, so the fix is rebuilding the initramfs and rebooting, not "blacklist it"; the
/// corrected twin (initramfs rebuilt after the blacklist, then booted) is clean.
#[test]
fn gl202_blacklist_newer_than_initramfs() {
    let r = runv(&["variants/nouveau-blacklist-stale"]);
    let x = expect(&r, "GL202", Problem);
    assert_eq!(x.finding.severity, Severity::Error);
    assert!(
        x.finding.message.contains(
            "newer than the initramfs of the running kernel (/boot/initrd.img-6.8.0-85-generic)"
        ),
        "{}",
        x.finding.message
    );
    let fix = x.finding.help.as_deref().unwrap_or_default();
    assert!(
        fix.contains("update-initramfs -u -k 6.8.0-85-generic"),
        "{fix}"
    );
    assert!(!fix.contains("Add /etc/modprobe.d"), "{fix}");
    assert!(x
        .evidence
        .iter()
        .any(|e| e.to_string().contains("built 2026-11-28 21:06 UTC")));
    expect(&r, "GL203", CheckStatus::Explained);

    let fixed = runv(&["variants/nouveau-blacklist-stale-fixed"]);
    let bad: Vec<_> = fixed
        .iter()
        .filter(|x| x.status != CheckStatus::Ok && x.status != CheckStatus::Skipped)
        .collect();
    assert!(bad.is_empty(), "{bad:#?}");

    // Initramfs rebuilt after the blacklist but after the boot too: only the reboot is missing.
    let dir = super::testutil::tree(&[
        "h200",
        "variants/complete",
        "variants/nouveau-blacklist-stale",
    ]);
    std::fs::write(
        dir.path().join(".gpulint-host/mtimes.txt"),
        "1796100000 /etc/modprobe.d/blacklist-nouveau.conf\n1796200000 /boot/initrd.img-6.8.0-85-generic\n",
    )
    .unwrap();
    let reader = crate::host::CapturedReader::new(dir.path()).unwrap();
    let p = crate::host::detect_host(&reader).unwrap();
    let r = super::run_checks_with(&reader, &p, &opts());
    let x = expect(&r, "GL202", Problem);
    assert!(
        x.finding.message.contains("rebuilt after the last boot"),
        "{}",
        x.finding.message
    );
    assert!(x
        .finding
        .help
        .as_deref()
        .unwrap_or_default()
        .starts_with("Reboot"));

    // No recorded ages: still "not in effect", with the rebuild-and-reboot fix.
    std::fs::remove_file(dir.path().join(".gpulint-host/mtimes.txt")).unwrap();
    let reader = crate::host::CapturedReader::new(dir.path()).unwrap();
    let r = super::run_checks_with(&reader, &p, &opts());
    let x = expect(&r, "GL202", Problem);
    assert!(
        x.finding.message.contains("loaded although blacklisted"),
        "{}",
        x.finding.message
    );
    assert!(x
        .finding
        .help
        .as_deref()
        .unwrap_or_default()
        .contains("update-initramfs"));
}

/// A newer installed kernel without the module: GL206 names what will keep DKMS from building
/// it before the reboot (no headers, a failed build in make.log); the corrected twins (headers
/// installed / the build succeeded, module built) are clean.
#[test]
fn gl206_predicts_the_dkms_failure() {
    let r = runv(&["variants/dkms-no-headers"]);
    let x = expect(&r, "GL206", Problem);
    assert_eq!(x.finding.severity, Severity::Warning);
    assert!(
        x.finding.message.contains(
            "DKMS cannot build it: the headers of 6.8.0-90-generic are not installed \
             (no /lib/modules/6.8.0-90-generic/build)"
        ),
        "{}",
        x.finding.message
    );
    let fix = x.finding.help.as_deref().unwrap_or_default();
    assert!(fix.contains("linux-headers-6.8.0-90-generic"), "{fix}");

    let r = runv(&["variants/dkms-build-failed"]);
    let x = expect(&r, "GL206", Problem);
    assert!(
        x.finding.message.contains(
            "DKMS's last build of nvidia 580.159.04 for it failed \
             (`cc: error: unrecognized command-line option '-fmin-function-alignment=16'`)"
        ),
        "{}",
        x.finding.message
    );
    assert!(x.evidence.iter().any(|e| e
        .to_string()
        .contains("/var/lib/dkms/nvidia/580.159.04/build/make.log")));

    for twin in ["dkms-no-headers-fixed", "dkms-build-failed-fixed"] {
        let r = runv(&[&format!("variants/{twin}")]);
        let bad: Vec<_> = r
            .iter()
            .filter(|x| x.status != CheckStatus::Ok && x.status != CheckStatus::Skipped)
            .collect();
        assert!(bad.is_empty(), "{twin}: {bad:#?}");
    }

    // A kernel installed in /boot only (no /lib/modules tree) has no module either; nothing
    // is claimed about its headers.
    let dir = super::testutil::tree(&["h200", "variants/complete"]);
    std::fs::create_dir_all(dir.path().join("boot")).unwrap();
    std::fs::write(dir.path().join("boot/vmlinuz-6.8.0-100-generic"), "").unwrap();
    let reader = crate::host::CapturedReader::new(dir.path()).unwrap();
    let p = crate::host::detect_host(&reader).unwrap();
    let r = super::run_checks_with(&reader, &p, &opts());
    let x = expect(&r, "GL206", Problem);
    assert!(
        x.finding.message.contains("6.8.0-100-generic"),
        "{}",
        x.finding.message
    );
    assert!(
        !x.finding.message.contains("headers"),
        "{}",
        x.finding.message
    );
}

/// The .run installer's driver under distribution packages: one must go; the twin without the
/// .run install is clean, and two nvidia.ko alone (no installer log) still say so.
#[test]
fn gl230_runfile_and_packages() {
    let r = runv(&["variants/driver-mixed"]);
    let x = expect(&r, "GL230", Problem);
    assert_eq!(x.finding.severity, Severity::Warning);
    assert!(
        x.finding.message.contains(
            "installed both by the .run installer (/var/log/nvidia-installer.log, \
             /usr/bin/nvidia-uninstall) and by distribution packages (nvidia-dkms-580, \
             nvidia-driver-580)"
        ),
        "{}",
        x.finding.message
    );
    let fixed = runv(&["variants/driver-mixed-fixed"]);
    assert!(expect(&fixed, "GL230", CheckStatus::Ok)
        .finding
        .message
        .contains("distribution packages only"));
    let bad: Vec<_> = fixed
        .iter()
        .filter(|x| x.status != CheckStatus::Ok && x.status != CheckStatus::Skipped)
        .collect();
    assert!(bad.is_empty(), "{bad:#?}");

    let dir = super::testutil::tree(&["h200", "variants/complete"]);
    let video = dir
        .path()
        .join("lib/modules/6.8.0-85-generic/kernel/drivers/video");
    std::fs::create_dir_all(&video).unwrap();
    std::fs::write(video.join("nvidia.ko"), "").unwrap();
    let reader = crate::host::CapturedReader::new(dir.path()).unwrap();
    let p = crate::host::detect_host(&reader).unwrap();
    let r = super::run_checks_with(&reader, &p, &opts());
    let x = expect(&r, "GL230", Problem);
    assert!(
        x.finding.message.contains(
            "(/lib/modules/6.8.0-85-generic/updates/dkms/nvidia.ko.zst, \
             /lib/modules/6.8.0-85-generic/kernel/drivers/video/nvidia.ko)"
        ),
        "{}",
        x.finding.message
    );
}

#[test]
fn gl203_and_gl207_missing_uvm() {
    let r = runv(&["variants/no-uvm"]);
    let cause = expect(&r, "GL203", Problem);
    assert!(cause.finding.message.contains("nvidia_uvm"));
    // The missing /dev/nvidia-uvm is the consequence, shown under the cause.
    assert!(expect(&r, "GL207", CheckStatus::Explained)
        .finding
        .message
        .contains("/dev/nvidia-uvm is missing"));
    assert!(cause
        .evidence
        .iter()
        .any(|e| e.to_string().contains("explains GL207")
            && e.to_string().contains("/dev/nvidia-uvm is missing")));
}

#[test]
fn gl204_api_mismatch() {
    let r = runv(&["variants/api-mismatch"]);
    let x = expect(&r, "GL204", Problem);
    assert!(x
        .evidence
        .iter()
        .any(|e| e.to_string().contains("Driver/library version mismatch")));
    assert!(x
        .evidence
        .iter()
        .any(|e| e.to_string().contains("libnvidia-ml.so.580.105.08")));
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
        x.finding.message.contains("580.159.04") && x.finding.message.contains("580.105.08"),
        "{}",
        x.finding.message
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
        x.finding.message.contains("550.54.15") && x.finding.message.contains("580.159.04"),
        "{}",
        x.finding.message
    );
    assert!(
        x.evidence[0]
            .to_string()
            .starts_with("dmesg: NVRM: API mismatch"),
        "{:?}",
        x.evidence
    );
}

#[test]
fn gl205_open_module_refuses_gpu() {
    let r = runv(&["variants/open-refused"]);
    let x = expect(&r, "GL205", Problem);
    assert!(x.finding.message.contains("open"));
    assert!(x.finding.help.as_deref().unwrap().contains("proprietary"));
}

#[test]
fn gl206_kernel_updated_driver_not_rebuilt() {
    let r = runv(&["variants/other-kernel"]);
    let x = expect(&r, "GL206", Problem);
    assert!(
        x.finding.message.contains("6.8.0-85-generic")
            && x.finding.message.contains("6.8.0-90-generic")
    );
    assert_eq!(x.finding.severity, Severity::Error);
    let r = runv(&["variants/newer-kernel"]);
    assert_eq!(
        expect(&r, "GL206", Problem).finding.severity,
        Severity::Warning
    );
}

#[test]
fn gl207_permissions() {
    let r = runv(&["variants/dev-perm"]);
    let x = expect(&r, "GL207", Problem);
    assert!(
        x.finding.message.contains("/dev/nvidia0 is not read-write"),
        "{}",
        x.finding.message
    );
    // The fix names the group found on the nodes, and nothing about creating nodes.
    let fix = x.finding.help.as_deref().unwrap();
    assert!(fix.contains("`sudo usermod -aG video $USER`"), "{fix}");
    assert!(!fix.contains("nvidia-modprobe"), "{fix}");
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
    assert_eq!(
        expect(&r, "GL208", Problem).finding.severity,
        Severity::Warning
    );
}

#[test]
fn gl209_mig() {
    let r = runv(&["variants/mig-on"]);
    let x = expect(&r, "GL209", Problem);
    assert_eq!(x.finding.severity, Severity::Error);
    assert!(x.finding.message.contains("no MIG devices"));
    let r = runv(&["variants/mig-on", "variants/mig-instances"]);
    let x = expect(&r, "GL209", Problem);
    assert_eq!(x.finding.severity, Severity::Info);
    assert!(
        x.finding.message.contains("2 MIG device"),
        "{}",
        x.finding.message
    );
    expect(&r, "GL207", CheckStatus::Ok);
}

#[test]
fn gl210_gpu_errors() {
    let r = runv(&["variants/gpu-err"]);
    let x = expect(&r, "GL210", Problem);
    assert_eq!(x.finding.severity, Severity::Error);
    assert!(x.evidence.iter().any(|e| e.to_string().contains("ERR!")));
    assert!(x
        .evidence
        .iter()
        .any(|e| e.to_string().contains("Xid") && e.to_string().contains("79")));
    assert!(x
        .evidence
        .iter()
        .any(|e| e.to_string().contains("remapped_row_pending")));
}

/// Xids are graded by the catalogue: a double-bit ECC error in the kernel log alone is an
/// error (it was a warning: exit 0), an application's own MMU fault is info; the corrected
/// twin (`complete`, no Xid) is ok.
#[test]
fn gl210_xids_graded_by_code() {
    let r = runv(&["variants/xid-fatal"]);
    let x = expect(&r, "GL210", Problem);
    assert_eq!(x.finding.severity, Severity::Error);
    assert!(
        x.finding.message.contains("Xid 48 on GPU 0 (GPU-1e22f56e"),
        "{}",
        x.finding.message
    );
    let r = runv(&["variants/xid-app"]);
    let x = expect(&r, "GL210", Problem);
    assert_eq!(x.finding.severity, Severity::Info);
    assert_eq!(x.evidence.len(), 2, "{:?}", x.evidence);
    expect(&runv(&[]), "GL210", CheckStatus::Ok);
}

/// A GPU the driver lists with an unassigned BAR1: each source alone (kernel log, sysfs
/// resource, nvidia-smi -q) names it; the corrected twin (`complete`) is ok.
#[test]
fn gl220_bar1_unassigned_on_a_listed_gpu() {
    let r = runv(&["variants/bar-listed"]);
    let x = expect(&r, "GL220", Problem);
    assert_eq!(x.finding.severity, Severity::Error);
    assert!(x
        .finding
        .help
        .as_deref()
        .unwrap_or_default()
        .contains("Above 4G Decoding"));
    for needle in ["can't assign; no space", "/resource", "Total: 0 MiB"] {
        assert!(
            x.evidence.iter().any(|e| e.to_string().contains(needle)),
            "{needle}: {:?}",
            x.evidence
        );
    }
    expect(&runv(&[]), "GL220", CheckStatus::Ok);
    // GL201 stays ok: the driver does list the GPU.
    expect(&r, "GL201", CheckStatus::Ok);
}

#[test]
fn gl211_loader_picks_other_cuda() {
    let r = runv(&["variants/ld-conflict"]);
    let x = expect(&r, "GL211", Problem);
    assert!(
        x.finding.message.contains("12.4") && x.finding.message.contains("13.0"),
        "{}",
        x.finding.message
    );
}

/// Debian's `nvidia-cuda-toolkit` has no version file and lives outside /usr/local: found
/// from nvcc's banner (the real binary, not the /usr/bin/nvcc wrapper) and the dpkg
/// database, like the image inventory finds it; judged against an old driver's CUDA 12.2.
#[test]
fn gl211_gl212_debian_toolkit_without_version_file() {
    let r = runv(&["variants/old-driver", "variants/debian-toolkit"]);
    let x = expect(&r, "GL212", Problem);
    assert!(
        x.evidence.iter().any(|e| e.to_string()
            == "/usr/lib/nvidia-cuda-toolkit/bin/nvcc: Cuda compilation tools 12.4.131"),
        "{:?}",
        x.evidence
    );
    let tks = crate::host::toolkits::toolkits(
        &crate::host::reader::CapturedReader::new(super::testutil::testdata(
            "variants/debian-toolkit",
        ))
        .unwrap(),
    );
    let debian: Vec<_> = tks
        .iter()
        .filter(|t| t.dir == "/usr/lib/nvidia-cuda-toolkit")
        .map(|t| t.version.as_deref())
        .collect();
    assert_eq!(debian, vec![Some("12.4.131")]);
}

#[test]
fn gl212_and_gl215_driver_older_than_toolkit_and_torch() {
    let r = runv(&["variants/old-driver"]);
    let x = expect(&r, "GL212", Problem);
    assert!(x.finding.message.contains("12.2"), "{}", x.finding.message);
    assert_eq!(x.finding.severity, Severity::Error);
    // torch cu130 brings its own CUDA runtime: it fails because the driver is too old for
    // torch's CUDA, not because of the toolkit, so GL212 does not explain it.
    let t = expect(&r, "GL215", Problem);
    assert_eq!(t.finding.severity, Severity::Error);
    assert!(
        t.finding
            .message
            .contains("driver 535.104.05 (CUDA 12.2) is too old for torch's CUDA 13.0"),
        "{}",
        t.finding.message
    );
    assert!(t.explained_by.is_none());
}

/// The driver a CUDA release needs, named in GL212's message, says so when its row is
/// inferred (13.5 -> R620) and not when a document states it (13.0).
#[test]
fn gl212_marks_a_driver_floor_from_an_inferred_row() {
    let r = runv(&["variants/old-driver"]);
    let x = expect(&r, "GL212", Problem);
    assert!(
        !x.finding.message.contains("inferred"),
        "{}",
        x.finding.message
    );
    let dir = super::testutil::tree(&["h200", "variants/complete", "variants/old-driver"]);
    let tk = dir.path().join("usr/local/cuda-13.5");
    std::fs::create_dir_all(&tk).unwrap();
    std::fs::write(
        tk.join("version.json"),
        r#"{"cuda": {"version": "13.5.0"}}"#,
    )
    .unwrap();
    let r = super::testutil::run_dir(dir.path(), &opts());
    let m = &super::testutil::of(&r, "GL212")
        .into_iter()
        .map(|x| x.finding.message.clone())
        .find(|m| m.contains("toolkit 13.5"))
        .expect("a GL212 finding for the 13.5 toolkit");
    assert!(m.contains("CUDA 13.5 needs driver >= 620"), "{m}");
    assert!(
        m.contains("rests on an inferred row") && m.contains("gpulint explain GL212"),
        "{m}"
    );
}

/// Without nvidia-smi and /proc/driver/nvidia/version, the installed libnvidia-ml.so.<ver>
/// still names the driver: GL212 and GL215 judge with it instead of "could not check".
#[test]
fn gl212_and_gl215_driver_from_the_nvml_library() {
    let r = runv(&["variants/lib-only-old-driver"]);
    for code in ["GL212", "GL215"] {
        let x = expect(&r, code, Problem);
        assert_eq!(x.finding.severity, Severity::Error);
        assert!(x.finding.message.contains("12.2"), "{}", x.finding.message);
        assert!(
            x.evidence
                .iter()
                .any(|e| e.to_string().contains("libnvidia-ml.so.535.104.05")
                    || e.to_string().contains("libcuda.so.535.104.05")),
            "{code}: {:?}",
            x.evidence
        );
    }
}

#[test]
fn gl213_no_container_toolkit() {
    let r = runv(&["variants/no-ctk"]);
    let x = expect(&r, "GL213", Problem);
    assert!(x.finding.message.contains("not installed"));
}

#[test]
fn gl214_nvml_unknown_error_config() {
    let r = runv(&["variants/nvml-cgroup"]);
    let x = expect(&r, "GL214", Problem);
    assert!(
        x.finding.message.contains("no-cgroups") && x.finding.message.contains("daemon-reload"),
        "{}",
        x.finding.message
    );
}

#[test]
fn gl215_torch_builds() {
    let r = runv(&["variants/torch-cpu"]);
    assert!(expect(&r, "GL215", Problem)
        .finding
        .message
        .contains("CPU-only"));
    let r = runv(&["variants/torch-old-arch"]);
    let x = expect(&r, "GL215", Problem);
    assert!(
        x.finding.message.contains("no kernel image"),
        "{}",
        x.finding.message
    );
    // Only PTX for the H200: JIT works when the driver (CUDA 13.0) knows the PTX ISA (compute_75
    // by nvcc 13.0: ISA 9.0 = CUDA 13.0), and fails when the ISA is newer (compute_90 by nvcc
    // 13.5: ISA 9.5 = CUDA 13.5), as GL003.
    let r = runv(&["variants/torch-ptx-jit"]);
    let x = expect(&r, "GL215", Problem);
    assert_eq!(x.finding.severity, Severity::Warning);
    assert!(
        x.finding.message.contains("JIT-compiles"),
        "{}",
        x.finding.message
    );
    let r = runv(&["variants/torch-ptx-too-new"]);
    let x = expect(&r, "GL215", Problem);
    assert_eq!(x.finding.severity, Severity::Error);
    assert!(
        x.finding.message.contains("cannot JIT")
            && x.finding.message.contains("PTX ISA 9.5 (CUDA 13.5)"),
        "{}",
        x.finding.message
    );
    // Without a fatbin reader the arch list is "could not check", not a guess.
    let r = run(
        &["h200"],
        &CheckOptions {
            facts: matrix(),
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

    let off = crate::suppress::apply_config(results.clone(), &config("[rules]\nGL204 = \"off\"\n"));
    assert!(off.iter().all(|r| r.finding.rule != "GL204"));
    assert_eq!(
        off.len(),
        results.len() - super::testutil::of(&results, "GL204").len()
    );
    assert!(!super::fails(&off, FailOn::At(Severity::Error)));

    let warn =
        crate::suppress::apply_config(results.clone(), &config("[rules]\nGL204 = \"warning\"\n"));
    let gl204 = expect(&warn, "GL204", Problem);
    assert_eq!(gl204.finding.severity, Severity::Warning);
    assert!(!super::fails(&warn, FailOn::At(Severity::Error)));
    assert!(super::fails(&warn, FailOn::At(Severity::Warning)));

    // The H200 capture has checks that could not run (info) and no problem.
    let clean = run(&["h200"], &opts());
    assert!(clean.iter().any(|r| r.status == CouldNotCheck));
    assert!(!super::fails(&clean, FailOn::At(Severity::Info)));
    // `--fail-on none` never fails, even on a problem.
    assert!(!super::fails(&results, FailOn::Never));
}

/// `make-variants.sh` is the single source of every variant.
#[test]
fn variants_are_generated_by_the_script() {
    crate::rules::generated_fixtures::assert_script_makes(
        &super::testutil::testdata("make-variants.sh"),
        &super::testutil::testdata("variants"),
    );
}

/// Single-cause broken trees (overlays on `h200` + `variants/complete`): the check that must
/// report the cause, and words its message must hold. README's host section lists the same.
pub(super) const SCENARIOS: &[(&str, &str, &[&str])] = &[
    ("api-mismatch", "GL204", &["mismatch"]),
    ("nouveau-loaded", "GL202", &["nouveau"]),
    (
        "nouveau-blacklist-stale",
        "GL202",
        &["although /etc/modprobe.d/blacklist-nouveau.conf blacklists it"],
    ),
    ("no-uvm", "GL203", &["nvidia_uvm"]),
    ("mig-on", "GL209", &["no MIG devices"]),
    ("old-driver", "GL212", &["12.2"]),
    ("lib-only-old-driver", "GL212", &["12.2"]),
    ("other-kernel", "GL206", &["6.8.0-90-generic"]),
    ("newer-kernel", "GL206", &["next boot"]),
    ("driver-mixed", "GL230", &["one must go"]),
    (
        "dkms-no-headers",
        "GL206",
        &["next boot", "headers of 6.8.0-90-generic are not installed"],
    ),
    (
        "dkms-build-failed",
        "GL206",
        &["next boot", "unrecognized command-line option"],
    ),
    ("dev-perm", "GL207", &["not read-write"]),
    ("nvml-cgroup", "GL214", &["no-cgroups"]),
    ("no-ctk", "GL213", &["not installed"]),
    ("gpu-err", "GL210", &["error indication"]),
    (
        "xid-fatal",
        "GL210",
        &[
            "Xid 48 on GPU 0 (GPU-1e22f56e-bc1a-5762-a390-38b2e823715b",
            "fatal",
        ],
    ),
    (
        "xid-app",
        "GL210",
        &["Xid 31 on GPU 0", "Xid 13 on GPU 0", "application"],
    ),
    ("persistence-off", "GL208", &["persistence"]),
    ("ld-conflict", "GL211", &["12.4"]),
    ("pci-extra", "GL201", &["0000:00:07.0"]),
    ("open-refused", "GL205", &["open"]),
    ("torch-cpu", "GL215", &["CPU-only"]),
    ("torch-old-arch", "GL215", &["no kernel image"]),
    ("torch-ptx-jit", "GL215", &["JIT-compiles"]),
    ("torch-ptx-too-new", "GL215", &["cannot JIT"]),
    ("container-no-gpus", "GL216", &["started without GPUs"]),
    (
        "gpu-unsupported",
        "GL201",
        &["580.159.04 driver release does not support", "10de:3182"],
    ),
    ("rm-init-failed", "GL201", &["RmInitAdapter failed"]),
    ("bar-unassigned", "GL201", &["BAR"]),
    ("gpu-excluded", "GL201", &["excluded", "NVreg_ExcludedGpus"]),
    ("vfio-bound", "GL201", &["vfio-pci"]),
    (
        "link-degraded",
        "GL201",
        &[
            "PCIe link is degraded",
            "3 fatal AER error(s)",
            "link width x4 of x16",
        ],
    ),
    (
        "gpu-gone",
        "GL201",
        &[
            "although an NVIDIA driver is installed",
            "PCIe link failing",
        ],
    ),
    ("bar-listed", "GL220", &["BAR1", "00000000:00:06.0"]),
    (
        "cvd-missing",
        "GL218",
        &["names GPU 1, which does not exist", "CUDA sees no GPU"],
    ),
    ("cvd-empty", "GL218", &["set but empty"]),
    ("cvd-order", "GL218", &["CUDA_DEVICE_ORDER=PCI_BUS_ID"]),
    (
        "torch-cu124-ldpath",
        "GL219",
        &["/usr/local/cuda-12.1/lib64", "__nvJitLinkAddData_12_4"],
    ),
    (
        "torch-conda-ldpath",
        "GL219",
        &["conda environment", "libnvJitLink.so.12 is CUDA 12.1"],
    ),
    (
        "wsl2-linux-driver",
        "GL204",
        &["Linux NVIDIA driver (550.54.15)", "inside WSL2"],
    ),
    ("gpu-hot", "GL217", &["thermal slowdown"]),
    ("power-brake", "GL217", &["power-brake slowdown"]),
    (
        "ldpath-profile",
        "GL240",
        &[
            "/etc/profile.d/cuda.sh:3",
            "every new login shell",
            "/usr/local/cuda-12.1/lib64",
            "__nvJitLinkAddData_12_4",
        ],
    ),
    (
        "conda-activate-ldpath",
        "GL240",
        &[
            "activate.d/env_vars.sh:3",
            "`conda activate /opt/conda/envs/ml`",
            "a conda environment's",
            "libnvJitLink.so.12 is CUDA 12.1",
        ],
    ),
    (
        "companion-mismatch",
        "GL241",
        &["torchvision 0.25.0+cu128 pairs with torch 2.10, but torch 2.11.0+cu130"],
    ),
    (
        "companion-conda",
        "GL241",
        &[
            "/opt/conda/envs/ml",
            "torchaudio 2.6.0+cu118 is built for CUDA 11.8 but torch 2.6.0+cu124 is built for CUDA 12.4",
        ],
    ),
    (
        "topo-cross-socket",
        "GL242",
        &[
            "GPU0 and GPU2 connect through SYS (across NUMA nodes 0 and 1, no NVLink)",
            "GPU1 and GPU3",
            "node 0: GPU0, GPU1; node 1: GPU2, GPU3",
        ],
    ),
    (
        "bar1-small",
        "GL243",
        &["BAR1 of GPU 0 (00000000:00:06.0) is 256 MiB, smaller than its 143771 MiB"],
    ),
];

/// The remaining causes of issue 33, each next to its corrected twin: the twin is all ok, and
/// the check that reported the cause says so.
#[test]
fn issue33_twins_are_clean() {
    for (twin, code) in [
        ("ldpath-profile-fixed", "GL240"),
        ("conda-activate-ldpath-fixed", "GL240"),
        ("companion-mismatch-fixed", "GL241"),
        ("companion-conda-fixed", "GL241"),
        ("topo-nvlink", "GL242"),
        ("bar1-small-fixed", "GL243"),
    ] {
        let r = runv(&[&format!("variants/{twin}")]);
        let bad: Vec<_> = r
            .iter()
            .filter(|x| x.status != CheckStatus::Ok && x.status != CheckStatus::Skipped)
            .collect();
        assert!(bad.is_empty(), "{twin}: {bad:#?}");
        expect(&r, code, CheckStatus::Ok);
    }
    // The twins were judged, not skipped for want of input.
    let r = runv(&["variants/companion-mismatch-fixed"]);
    assert!(expect(&r, "GL241", CheckStatus::Ok)
        .finding
        .message
        .contains("torchvision 0.26.0+cu130 match it"));
    let r = runv(&["variants/topo-nvlink"]);
    assert!(expect(&r, "GL242", CheckStatus::Ok)
        .finding
        .message
        .contains("4 GPUs"));
    let r = runv(&["variants/bar1-small-fixed"]);
    assert!(expect(&r, "GL243", CheckStatus::Ok)
        .finding
        .message
        .contains("covers its memory (1 GPU)"));
    let r = runv(&["variants/ldpath-profile-fixed"]);
    assert!(expect(&r, "GL240", CheckStatus::Ok)
        .finding
        .message
        .contains("no shell startup file"));
}

/// GL240 points at the file and line that sets LD_LIBRARY_PATH; the invoking environment is
/// clean, so GL219 (which judges only it) is ok: the export would go unseen without GL240.
#[test]
fn gl240_names_the_file_and_line() {
    let r = runv(&["variants/ldpath-profile"]);
    expect(&r, "GL219", CheckStatus::Ok);
    let x = expect(&r, "GL240", Problem);
    let loc = x.finding.location.as_ref().unwrap();
    assert_eq!(loc.file.as_deref(), Some("/etc/profile.d/cuda.sh"));
    assert_eq!(loc.line, Some(3));
    assert!(x.evidence[0]
        .to_string()
        .contains("line 3: export LD_LIBRARY_PATH=/usr/local/cuda-12.1/lib64${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}"));
    let fix = x.finding.help.as_deref().unwrap();
    assert!(
        fix.starts_with("Remove /usr/local/cuda-12.1/lib64 from"),
        "{fix}"
    );
    // With the same export also in the invoking environment, GL219's error is folded under
    // the file that set it: one root cause, one error.
    let dir = super::testutil::tree(&["h200", "variants/complete", "variants/ldpath-profile"]);
    let env = dir.path().join(".gpulint-host/env.txt");
    let text = std::fs::read_to_string(&env).unwrap().replace(
        "LD_LIBRARY_PATH=",
        "LD_LIBRARY_PATH=/usr/local/cuda-12.1/lib64:",
    );
    std::fs::write(&env, text).unwrap();
    let reader = crate::host::CapturedReader::new(dir.path()).unwrap();
    let p = crate::host::detect_host_with(&reader, matrix()).unwrap();
    let r = super::run_checks_with(&reader, &p, &opts());
    expect(&r, "GL240", Problem);
    expect(&r, "GL219", CheckStatus::Explained);
    assert_eq!(errors(&r).len(), 1, "{}", super::render_checks_text(&r));
}

/// GL240 reads the invoking user's startup files ($HOME) and no other user's: another home is
/// usually closed to the invoking user, and its unreadable files would fail the whole run.
#[test]
fn gl240_reads_the_invoking_users_rc_files_only() {
    let dir =
        super::testutil::tree(&["h200", "variants/complete", "variants/ldpath-profile-fixed"]);
    let rc = "# CUDA\nexport LD_LIBRARY_PATH=~/cuda-12.1/lib64:/usr/local/cuda-12.1/lib64:$LD_LIBRARY_PATH\n";
    for user in ["alice", "bob"] {
        let home = dir.path().join(format!("home/{user}"));
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join(".bashrc"), rc).unwrap();
    }
    let env = dir.path().join(".gpulint-host/env.txt");
    let with_home = |user: &str| {
        let text = std::fs::read_to_string(&env).unwrap();
        let kept: Vec<&str> = text.lines().filter(|l| !l.starts_with("HOME=")).collect();
        std::fs::write(&env, format!("{}\nHOME=/home/{user}\n", kept.join("\n"))).unwrap();
        let reader = crate::host::CapturedReader::new(dir.path()).unwrap();
        let p = crate::host::detect_host_with(&reader, matrix()).unwrap();
        super::run_checks_with(&reader, &p, &opts())
    };
    let r = with_home("alice");
    let x = expect(&r, "GL240", Problem);
    assert!(
        x.finding.message.starts_with(
            "/home/alice/.bashrc:2 sets LD_LIBRARY_PATH=/home/alice/cuda-12.1/lib64:/usr/local/cuda-12.1/lib64 for this user's new shells"
        ),
        "{}",
        x.finding.message
    );
    assert!(!r.iter().any(|x| x.finding.message.contains("/home/bob")));
    // carol's own startup files are clean; alice's and bob's are not read.
    std::fs::create_dir_all(dir.path().join("home/carol")).unwrap();
    let r = with_home("carol");
    expect(&r, "GL240", CheckStatus::Ok);
}

/// Without `nvidia-smi topo -m`, the GPUs' NUMA nodes come from sysfs, NVLink stays unknown.
#[test]
fn gl242_numa_nodes_from_sysfs() {
    let dir = super::testutil::tree(&["h200", "variants/complete"]);
    let reader = crate::host::CapturedReader::new(dir.path()).unwrap();
    let mut p = crate::host::detect_host_with(&reader, matrix()).unwrap();
    let mut second = p.gpus[0].clone();
    second.index = Some(1);
    second.pci_bus_id = Some("00000000:00:07.0".into());
    p.gpus.push(second);
    let node = |bus: &str, n: &str| {
        let d = dir.path().join(format!("sys/bus/pci/devices/{bus}"));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("numa_node"), n).unwrap();
    };
    node("0000:00:06.0", "0\n");
    node("0000:00:07.0", "0\n");
    let r = super::run_checks_with(&reader, &p, &opts());
    assert!(expect(&r, "GL242", CheckStatus::Ok)
        .finding
        .message
        .contains("every GPU is on NUMA node 0"));
    node("0000:00:07.0", "1\n");
    let r = super::run_checks_with(&reader, &p, &opts());
    let x = expect(&r, "GL242", Problem);
    assert_eq!(x.finding.severity, Severity::Info);
    assert!(
        x.finding
            .message
            .contains("2 NUMA nodes (node 0: GPU0; node 1: GPU1)")
            && x.finding
                .message
                .contains("unknown without `nvidia-smi topo -m`"),
        "{}",
        x.finding.message
    );
    assert!(x
        .finding
        .help
        .as_deref()
        .unwrap()
        .contains("numactl --cpunodebind=0 --membind=0"));
}

fn errors(r: &[super::CheckResult]) -> Vec<String> {
    r.iter()
        .filter(|x| x.status == Problem && x.finding.severity == Severity::Error)
        .map(|x| format!("{} {}", x.finding.rule, x.finding.message))
        .collect()
}

/// One root cause, one error: on every single-cause broken tree the intended check reports the
/// cause, and the checks whose symptoms it explains are folded under it. The average number of
/// errors per tree whose cause is an error is printed and must stay ≤ 1.3; a tree whose cause
/// is only a warning has no error at all.
#[test]
fn one_root_cause_one_error() {
    let (mut trees, mut total) = (0usize, 0usize);
    let mut report = String::new();
    for (variant, code, words) in SCENARIOS {
        let r = runv(&[&format!("variants/{variant}")]);
        let cause = super::testutil::of(&r, code)
            .into_iter()
            .find(|x| x.status == Problem)
            .unwrap_or_else(|| {
                panic!(
                    "{variant}: {code} does not report the cause:\n{}",
                    super::render_checks_text(&r)
                )
            });
        for w in *words {
            assert!(
                cause.finding.message.contains(w),
                "{variant}: {code} message lacks {w:?}: {}",
                cause.finding.message
            );
        }
        let errs = errors(&r);
        report.push_str(&format!(
            "{variant:>18}: {} error(s) {errs:?}\n",
            errs.len()
        ));
        if cause.finding.severity == Severity::Error {
            trees += 1;
            total += errs.len();
        } else {
            assert!(
                errs.is_empty(),
                "{variant}: the cause is a {} but errors are reported: {errs:#?}",
                cause.finding.severity
            );
        }
    }
    let avg = total as f64 / trees as f64;
    println!("{report}errors per single-cause broken tree: {avg:.2} ({total} over {trees} trees)");
    assert!(avg <= 1.3, "{report}average {avg:.2} > 1.3");
}

/// The module built for another kernel: one error (GL206) with the consequences under it, and
/// no advice (nvidia-modprobe) that cannot help.
#[test]
fn module_for_other_kernel_is_one_error_with_its_consequences() {
    let r = runv(&["variants/other-kernel"]);
    assert_eq!(errors(&r).len(), 1, "{}", super::render_checks_text(&r));
    let cause = expect(&r, "GL206", Problem);
    for c in ["GL203", "GL207"] {
        let x = expect(&r, c, CheckStatus::Explained);
        assert_eq!(
            x.explained_by.map(|c| c.to_string()).as_deref(),
            Some("GL206")
        );
        assert!(
            cause
                .evidence
                .iter()
                .any(|e| e.to_string().starts_with(&format!("explains {c}"))),
            "{:?}",
            cause.evidence
        );
    }
    let text = super::render_checks_text(&r);
    assert!(!text.contains("nvidia-modprobe"), "{text}");
    assert!(text.contains("[explained by GL206] GL207"), "{text}");
    // Findings carry the cause only.
    let f = super::check_findings(&r);
    assert!(
        f.iter().all(|x| x.rule != "GL203" && x.rule != "GL207"),
        "{f:#?}"
    );
    // Turning the cause off in the configuration brings the consequences back.
    let known = |c: &str| c.starts_with("GL2");
    let config =
        crate::config::Config::parse("c.toml", "[rules]\nGL206 = \"off\"\n", &known).unwrap();
    let off = crate::suppress::apply_config(r.clone(), &config);
    expect(&off, "GL203", Problem);
}

fn problems(r: &[super::CheckResult]) -> Vec<String> {
    r.iter()
        .filter(|x| x.status == Problem)
        .map(|x| {
            format!(
                "{} [{}] {}",
                x.finding.rule, x.finding.severity, x.finding.message
            )
        })
        .collect()
}

/// WSL2 is a working GPU host: the Windows driver through /dev/dxg and /usr/lib/wsl/lib, no
/// Linux module. Detected; the kernel-module checks do not apply; nothing is reported.
#[test]
fn wsl2_is_a_working_gpu_host() {
    let r = runv(&["variants/wsl2"]);
    assert!(problems(&r).is_empty(), "{}", super::render_checks_text(&r));
    for code in [
        "GL201", "GL202", "GL203", "GL205", "GL206", "GL207", "GL208",
    ] {
        let x = expect(&r, code, CheckStatus::Skipped);
        assert!(
            x.finding.message.contains("not applicable on WSL2"),
            "{code}: {}",
            x.finding.message
        );
    }
    // The driver libraries are the Windows driver's.
    assert!(expect(&r, "GL204", CheckStatus::Ok)
        .finding
        .message
        .contains("/usr/lib/wsl/lib"));
    // The checks that apply there still judge: driver and torch from nvidia-smi.
    assert!(expect(&r, "GL215", CheckStatus::Ok)
        .finding
        .message
        .contains("runs on this host"));
    expect(&r, "GL212", CheckStatus::Ok);
    // The same tree without its WSL2 markers is a broken Linux host: the module checks fire.
    let dir = super::testutil::tree(&["h200", "variants/complete", "variants/wsl2"]);
    std::fs::remove_file(dir.path().join("dev/dxg")).unwrap();
    std::fs::remove_dir_all(dir.path().join("usr/lib/wsl")).unwrap();
    let reader = crate::host::CapturedReader::new(dir.path()).unwrap();
    let p = crate::host::detect_host_with(&reader, matrix()).unwrap();
    let r = super::run_checks_with(&reader, &p, &opts());
    assert!(!problems(&r).is_empty());
}

/// Inside a container started with GPUs: host-side checks do not apply, nothing is reported.
#[test]
fn gpu_container_is_healthy() {
    let r = runv(&["variants/gpu-container"]);
    assert!(problems(&r).is_empty(), "{}", super::render_checks_text(&r));
    assert!(expect(&r, "GL216", CheckStatus::Ok)
        .finding
        .message
        .contains("/dev/nvidia0"));
    for code in ["GL201", "GL202", "GL206", "GL208", "GL213", "GL214"] {
        let x = expect(&r, code, CheckStatus::Skipped);
        assert!(
            x.finding.message.contains("inside a docker container"),
            "{code}: {}",
            x.finding.message
        );
    }
}

/// The same container started without `--gpus`: one error that says so, with the `docker run`
/// fix, and no host fix (drivers, modules, nouveau) anywhere.
#[test]
fn container_without_gpus_says_how_to_start_it() {
    let r = runv(&["variants/container-no-gpus"]);
    assert_eq!(errors(&r).len(), 1, "{}", super::render_checks_text(&r));
    let x = expect(&r, "GL216", Problem);
    assert!(
        x.finding
            .message
            .contains("docker container was started without GPUs"),
        "{}",
        x.finding.message
    );
    assert!(x
        .finding
        .help
        .as_deref()
        .unwrap()
        .contains("docker run --gpus all"));
    let text = super::render_checks_text(&r);
    for host_fix in ["modprobe", "nouveau", "dkms", "reboot", "Reboot"] {
        assert!(
            r.iter().filter(|x| x.status == Problem).all(|x| !x
                .finding
                .help
                .as_deref()
                .unwrap_or_default()
                .contains(host_fix)),
            "{host_fix}: {text}"
        );
    }
    expect(&r, "GL207", CheckStatus::Explained);
}

/// Thermal and power slowdown from the real XML report, and from the `-q` text parsed the same
/// way (the capture's own text: nothing active).
#[test]
fn gl217_thermal_and_power_slowdown() {
    let r = runv(&["variants/gpu-hot"]);
    let x = expect(&r, "GL217", Problem);
    assert_eq!(x.finding.severity, Severity::Warning);
    assert!(
        x.evidence
            .iter()
            .any(|e| e.to_string().contains("hw_thermal_slowdown: Active")),
        "{:?}",
        x.evidence
    );
    assert!(
        x.evidence
            .iter()
            .any(|e| e.to_string().contains("gpu_temp_tlimit -4 C")),
        "{:?}",
        x.evidence
    );
    let r = runv(&["variants/power-brake"]);
    assert!(expect(&r, "GL217", Problem)
        .finding
        .message
        .contains("power-brake"));
    let r = runv(&["variants/text-only"]);
    assert!(expect(&r, "GL217", CheckStatus::Ok)
        .finding
        .message
        .contains("nvidia-smi -q"));
    let text = std::fs::read_to_string(super::testutil::testdata(
        "h200/.gpulint-host/commands/nvidia-smi-q.txt",
    ))
    .unwrap();
    let hot = text
        .replace(
            "            HW Thermal Slowdown                        : Not Active",
            "            HW Thermal Slowdown                        : Active",
        )
        .replace(
            "        GPU T.Limit Temp                               : 47 C",
            "        GPU T.Limit Temp                               : -2 C",
        );
    let g = &crate::host::parse::smi::parse_q_text(&hot).gpus[0];
    assert_eq!(g.throttle.len(), 2, "{:?}", g.throttle);
    assert!(crate::host::parse::smi::parse_q_text(&text).gpus[0]
        .throttle
        .is_empty());
}

/// "The driver sees no GPU": the cause the kernel log or sysfs states, with its own fix.
#[test]
fn gl201_names_the_cause_and_its_fix() {
    for (variant, fix) in [
        ("gpu-unsupported", "lists PCI ID 10de:3182"),
        ("rm-init-failed", "cold boot"),
        ("bar-unassigned", "Above 4G Decoding"),
        ("gpu-excluded", "/etc/modprobe.d/nvidia-exclude.conf"),
        ("vfio-bound", "vfio-pci `ids=`"),
    ] {
        let r = runv(&[&format!("variants/{variant}")]);
        let x = expect(&r, "GL201", Problem);
        assert!(
            x.finding.message.contains("0000:00:07.0"),
            "{variant}: {}",
            x.finding.message
        );
        let f = x.finding.help.as_deref().unwrap_or_default();
        assert!(f.contains(fix), "{variant}: {f}");
        assert!(!f.contains("dmesg | grep"), "{variant}: a generic fix: {f}");
        // The excluded GPU is configuration (a warning), not a health problem.
        if variant == "gpu-excluded" {
            assert_eq!(x.finding.severity, Severity::Warning);
            expect(&r, "GL210", CheckStatus::Ok);
        } else {
            assert_eq!(x.finding.severity, Severity::Error, "{variant}");
        }
    }
}

/// No kernel-log line, but the tables: an RTX 5090 (first listed in 570.86.16 by NVIDIA's PCI
/// device-ID table) on a 535.104.05 driver is a GPU the driver is older than; on 580.159.04 the
/// same unseen GPU gets no such cause, and an H200 (sm_90, CUDA 11.8's floor) none on 535.
#[test]
fn gl201_driver_older_than_the_gpu_from_the_tables() {
    let r = runv(&["variants/old-driver", "variants/gpu-newer-than-driver"]);
    let x = expect(&r, "GL201", Problem);
    assert_eq!(x.finding.severity, Severity::Error);
    let m = &x.finding.message;
    assert!(
        m.contains("driver 535.104.05 is older than GPU 0000:00:07.0")
            && m.contains("GeForce RTX 5090")
            && m.contains("570.86.16"),
        "{m}"
    );
    let help = x.finding.help.as_deref().unwrap_or_default();
    assert!(help.contains("Install driver 570.86.16 or newer"), "{help}");
    // The fixed twin: the capture's own driver is newer than the 5090's floor.
    let r = runv(&["variants/gpu-newer-than-driver"]);
    let x = expect(&r, "GL201", Problem);
    assert!(
        !x.finding.message.contains("is older than"),
        "{}",
        x.finding.message
    );
    // A GPU the old driver does support is not blamed on the driver.
    let r = runv(&["variants/old-driver", "variants/rm-init-failed"]);
    let x = expect(&r, "GL201", Problem);
    assert!(
        !x.finding.message.contains("is older than"),
        "{}",
        x.finding.message
    );
    let dir = super::testutil::tree(&[
        "h200",
        "variants/complete",
        "variants/old-driver",
        "variants/rm-init-failed",
    ]);
    std::fs::remove_file(dir.path().join(".gpulint-host/commands/dmesg.txt")).unwrap();
    let r = super::testutil::run_dir(dir.path(), &opts());
    let x = expect(&r, "GL201", Problem);
    assert!(
        !x.finding.message.contains("is older than"),
        "{}",
        x.finding.message
    );
}

/// CUDA_VISIBLE_DEVICES naming a GPU that does not exist, set empty, or indices on a mixed host;
/// CUDA_DEVICE_ORDER=PCI_BUS_ID or UUIDs settle the order.
#[test]
fn gl218_visible_devices() {
    let r = runv(&["variants/cvd-missing"]);
    assert_eq!(
        expect(&r, "GL218", Problem).finding.severity,
        Severity::Error
    );
    let r = runv(&["variants/cvd-empty"]);
    assert_eq!(
        expect(&r, "GL218", Problem).finding.severity,
        Severity::Error
    );
    let r = runv(&["variants/cvd-order"]);
    assert_eq!(
        expect(&r, "GL218", Problem).finding.severity,
        Severity::Warning
    );
    expect(&r, "GL201", CheckStatus::Ok);
    let dir = super::testutil::tree(&["h200", "variants/complete", "variants/cvd-order"]);
    let env = dir.path().join(".gpulint-host/env.txt");
    let base = std::fs::read_to_string(&env).unwrap();
    for (extra, ok) in [
        ("CUDA_DEVICE_ORDER=PCI_BUS_ID\n", true),
        ("CUDA_VISIBLE_DEVICES=GPU-1e22f56e\n", true),
        ("CUDA_VISIBLE_DEVICES=0,7,1\n", false),
    ] {
        std::fs::write(&env, format!("{base}{extra}")).unwrap();
        let reader = crate::host::CapturedReader::new(dir.path()).unwrap();
        let p = crate::host::detect_host_with(&reader, matrix()).unwrap();
        let r = super::run_checks_with(&reader, &p, &opts());
        let x = super::testutil::of(&r, "GL218");
        assert_eq!(x[0].status == CheckStatus::Ok, ok, "{extra}: {x:#?}");
        if extra.contains("0,7,1") {
            assert!(
                x[0].finding.message.contains("sees only 0"),
                "{}",
                x[0].finding.message
            );
        }
    }
    // Unset: every GPU.
    expect(&runv(&[]), "GL218", CheckStatus::Ok);
}

/// torch cu124's wheels vs an older CUDA 12.1 on LD_LIBRARY_PATH (toolkit or conda env): the
/// loader takes LD_LIBRARY_PATH first. Without LD_LIBRARY_PATH, or with a toolkit at least as
/// new, nothing is reported.
#[test]
fn gl219_ld_library_path_shadows_torch_wheels() {
    let r = runv(&["variants/torch-cu124-ldpath"]);
    let x = expect(&r, "GL219", Problem);
    assert!(
        x.finding.message.contains("libcusparse.so.12 is CUDA 12.1"),
        "{}",
        x.finding.message
    );
    assert!(x
        .finding
        .help
        .as_deref()
        .unwrap()
        .contains("Remove /usr/local/cuda-12.1/lib64"));
    // GL211's "LD_LIBRARY_PATH puts cuda-12.1 first" is the same cause.
    expect(&r, "GL211", CheckStatus::Explained);
    let dir = super::testutil::tree(&["h200", "variants/complete", "variants/torch-cu124-ldpath"]);
    let env = dir.path().join(".gpulint-host/env.txt");
    let base = std::fs::read_to_string(&env).unwrap();
    std::fs::write(
        &env,
        base.replace(
            "LD_LIBRARY_PATH=/usr/local/cuda-12.1/lib64:",
            "LD_LIBRARY_PATH=",
        ),
    )
    .unwrap();
    let reader = crate::host::CapturedReader::new(dir.path()).unwrap();
    let p = crate::host::detect_host_with(&reader, matrix()).unwrap();
    let r = super::run_checks_with(&reader, &p, &opts());
    expect(&r, "GL219", CheckStatus::Ok);
    // A newer copy earlier on LD_LIBRARY_PATH is what the loader opens: the older toolkit
    // behind it shadows nothing (the one loader model, not "any directory has one").
    let newer = dir.path().join("opt/cuda-12.6/lib");
    std::fs::create_dir_all(&newer).unwrap();
    for (link, file) in [
        ("libnvJitLink.so.12", "libnvJitLink.so.12.6.77"),
        ("libcusparse.so.12", "libcusparse.so.12.6.3.3"),
    ] {
        std::fs::write(newer.join(file), "x").unwrap();
        std::os::unix::fs::symlink(file, newer.join(link)).unwrap();
    }
    std::fs::write(
        &env,
        base.replace(
            "LD_LIBRARY_PATH=/usr/local/cuda-12.1/lib64:",
            "LD_LIBRARY_PATH=/opt/cuda-12.6/lib:/usr/local/cuda-12.1/lib64:",
        ),
    )
    .unwrap();
    let reader = crate::host::CapturedReader::new(dir.path()).unwrap();
    let p = crate::host::detect_host_with(&reader, matrix()).unwrap();
    let r = super::run_checks_with(&reader, &p, &opts());
    let ok = expect(&r, "GL219", CheckStatus::Ok);
    assert!(
        ok.evidence
            .iter()
            .any(|e| e.to_string().contains("libnvJitLink.so.12 is CUDA 12.6")),
        "{:?}",
        ok.evidence
    );
    // The healthy tree (torch cu130 without nvidia/ wheels listed) is fine too.
    expect(&runv(&[]), "GL219", CheckStatus::Ok);
}

/// A finding's location is typed when its evidence is made: on the capture and every variant it
/// is the file the shown evidence quotes first, the file findings pointed at when the location
/// was read back out of the text (`path: line`), so no report moves.
#[test]
fn locations_are_the_first_file_the_evidence_quotes() {
    use crate::host::evidence::Evidence;
    let from_text = |r: &super::CheckResult| {
        r.evidence.iter().find_map(|e| {
            e.to_string()
                .split_once(": ")
                .map(|(a, _)| a.to_string())
                .filter(|a| a.starts_with('/'))
        })
    };
    let mut variants: Vec<String> = std::fs::read_dir(super::testutil::testdata("variants"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    variants.sort();
    let mut scenarios = vec![run(&["h200"], &opts())];
    scenarios.extend(variants.iter().map(|v| runv(&[&format!("variants/{v}")])));
    let mut located = 0;
    for (results, name) in scenarios
        .iter()
        .zip(["h200".to_string()].iter().chain(&variants))
    {
        for r in results {
            let typed = r.finding.location.as_ref().and_then(|l| l.file.as_deref());
            assert_eq!(typed, r.evidence.iter().find_map(Evidence::file_path));
            assert_eq!(
                typed,
                from_text(r).as_deref(),
                "{name} {}: {:?}",
                r.finding.rule,
                r.evidence
            );
            located += usize::from(typed.is_some());
        }
    }
    assert!(located > 100, "{located}");
}

/// `details.checks` in JSON keeps its layout now that a result holds its finding: the fields
/// of the former flat result, in its order, with its omissions, on the capture and every
/// variant.
#[test]
fn check_results_serialize_as_the_flat_layout() {
    use crate::rule_meta::Code;
    #[derive(serde::Serialize)]
    struct Flat<'a> {
        rule: Code,
        name: &'a str,
        status: CheckStatus,
        severity: Severity,
        message: &'a str,
        evidence: Vec<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        fix: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        explained_by: Option<Code>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        unreadable_evidence: bool,
    }
    let mut variants: Vec<String> = std::fs::read_dir(super::testutil::testdata("variants"))
        .unwrap()
        .map(|e| format!("variants/{}", e.unwrap().file_name().to_string_lossy()))
        .collect();
    variants.sort();
    let mut checked = 0;
    for v in &variants {
        for r in runv(&[v]) {
            let flat = Flat {
                rule: r.finding.rule,
                name: &r.finding.name,
                status: r.status,
                severity: r.finding.severity,
                message: &r.finding.message,
                evidence: r.evidence.iter().map(|e| e.to_string()).collect(),
                fix: r.finding.help.as_deref(),
                explained_by: r.explained_by,
                unreadable_evidence: r.unreadable_evidence,
            };
            assert_eq!(
                serde_json::to_string(&r).unwrap(),
                serde_json::to_string(&flat).unwrap(),
                "{v}"
            );
            checked += 1;
        }
    }
    assert!(checked > 500, "{checked}");
}

/// A captured aarch64 host judged on this (x86_64) machine: GL219 searches torch's libraries the
/// way the captured host's ld.so does, its multiarch directories from the profile's platform,
/// never from the machine gpulint was built for.
#[test]
fn gl219_searches_the_captured_hosts_platform_not_this_machines() {
    let dir = super::testutil::tree(&["h200", "variants/complete", "variants/torch-cu124-ldpath"]);
    std::fs::write(
        dir.path().join(".gpulint-host/commands/uname-m.txt"),
        "aarch64\n",
    )
    .unwrap();
    let reader = crate::host::CapturedReader::new(dir.path()).unwrap();
    let profile = crate::host::detect_host_with(&reader, matrix()).unwrap();
    assert_eq!(
        profile.platform.as_ref().map(|p| p.architecture.as_str()),
        Some("arm64")
    );
    let options = opts();
    let env = crate::host::env::detect_env(&reader);
    let cx = super::HostContext {
        reader: &reader,
        profile: &profile,
        env: &env,
        options: &options,
        facts: options.facts,
        loader: crate::host::query::LoaderSetting::new(&reader, &profile),
        driver_cuda_once: Default::default(),
    };
    let torch_lib = "/usr/lib/python3/dist-packages/torch/lib".to_string();
    let order = super::gl219_cuda_libs_shadow_torch::torch_search_order(
        &cx.loader,
        &torch_lib,
        std::slice::from_ref(&torch_lib),
        &[],
    );
    let defaults: Vec<&str> = order
        .iter()
        .filter(|d| d.from == crate::loader::SearchFrom::Default)
        .map(|d| d.dir.as_str())
        .collect();
    assert!(
        defaults.contains(&"/usr/lib/aarch64-linux-gnu"),
        "{defaults:?}"
    );
    assert!(
        !defaults.iter().any(|d| d.contains("x86_64")),
        "{defaults:?}"
    );
    // The same host captured as x86_64 searches x86_64's directories.
    std::fs::write(
        dir.path().join(".gpulint-host/commands/uname-m.txt"),
        "x86_64\n",
    )
    .unwrap();
    let reader = crate::host::CapturedReader::new(dir.path()).unwrap();
    let profile = crate::host::detect_host_with(&reader, matrix()).unwrap();
    let loader = crate::host::query::LoaderSetting::new(&reader, &profile);
    assert_eq!(loader.machine, "x86_64");
}

/// Both READMEs list every captured tree with the check that covers it.
#[test]
fn readmes_list_every_host_scenario() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for readme in ["README.md", "testdata/host/README.md"] {
        let text = std::fs::read_to_string(root.join(readme)).unwrap();
        let row = |variant: &str| {
            text.lines()
                .find(|l| {
                    l.trim_start().starts_with('|') && l.contains(&format!("| `{variant}` |"))
                })
                .map(str::to_string)
        };
        for (variant, code, _) in SCENARIOS {
            let line = row(variant).unwrap_or_else(|| panic!("{readme} has no row for {variant}"));
            assert!(
                line.contains(code),
                "{readme}: {variant} row does not name {code}: {line}"
            );
        }
        for e in std::fs::read_dir(super::testutil::testdata("variants")).unwrap() {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            if ["proc-only", "xml-only", "text-only"].contains(&name.as_str()) {
                continue;
            }
            assert!(
                row(&name).is_some(),
                "{readme} has no row for variants/{name}"
            );
        }
    }
}

/// Host files and command output reach the text report: none of it can forge a result line.
#[test]
fn host_text_escapes_what_it_quotes() {
    let mut r = runv(&["variants/nouveau-loaded"]);
    r[0].finding.message = "x\n[ok] GL999 forged: fine\x1b[2J".into();
    r[0].evidence.push(crate::host::evidence::Evidence::note(
        "e\n[ok] GL998 forged: fine",
    ));
    let t = super::render_checks_text(&r);
    assert!(!t.contains('\x1b'), "{t:?}");
    assert!(
        !t.lines().any(|l| l.starts_with("[ok] GL99")),
        "a forged line: {t}"
    );
    assert!(t.contains("x\\x0a[ok] GL999 forged"), "{t}");
}

#[test]
fn the_summary_line_counts_in_the_right_number() {
    use super::gl214_nvml_unknown_error_risk::META as GL214;
    use super::CheckResult;
    let one = [CheckResult::problem(&GL214, "x")];
    let text = super::render_checks_text(&one);
    assert!(
        text.ends_with("\n1 result: 0 ok, 1 problem, 0 could not check\n"),
        "{text}"
    );
    let two = [
        CheckResult::problem(&GL214, "x"),
        CheckResult::ok(&GL214, "y"),
    ];
    let text = super::render_checks_text(&two);
    assert!(
        text.ends_with("\n2 results: 1 ok, 1 problem, 0 could not check\n"),
        "{text}"
    );
}
