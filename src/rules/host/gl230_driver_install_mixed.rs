//! GL230: the driver was installed both by NVIDIA's .run installer and by distribution
//! packages, or two nvidia.ko exist for the running kernel.

use super::{CheckResult, HostContext};
use crate::finding::Severity;
use crate::host::evidence::Evidence;
use crate::host::reader::HostReader;
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

pub(crate) static META: RuleMeta = RuleMeta {
    code: Code::new("GL230"),
    name: "driver-install-mixed",
    default_severity: Severity::Warning,
    other_severities: &[Severity::Info],
    summary: "The NVIDIA driver is installed twice: by the .run installer and by packages",
    doc: RuleDoc {
        what: "Looks for the traces of NVIDIA's .run installer (/var/log/nvidia-installer.log, \
            /usr/bin/nvidia-uninstall), for installed driver packages in dpkg's status \
            (nvidia-driver-*, nvidia-dkms-*, libnvidia-compute-*, cuda-drivers*, nvidia-open*), \
            and for nvidia.ko in more than one directory of the running kernel's module tree \
            (kernel/drivers/video from the .run installer, updates/dkms from DKMS packages).",
        why: "The two installers overwrite each other's libraries and modules without knowing \
            it: after a package upgrade or a kernel update the loaded module and the user-space \
            libraries come from different installs (\"Driver/library version mismatch\"), and \
            which nvidia.ko modprobe loads depends on depmod's search order.",
        example: "A host set up with `NVIDIA-Linux-x86_64-580.run`, later `apt install \
            nvidia-driver-580`: `the NVIDIA driver is installed both by the .run installer \
            (/usr/bin/nvidia-uninstall) and by distribution packages (nvidia-driver-580)`.",
        fix: "Keep one install: remove the .run one (`sudo nvidia-uninstall`) and keep the \
            packages, or purge the packages and keep the .run install; then `sudo depmod -a`, \
            rebuild the initramfs and reboot.",
        sources: &[
            "https://download.nvidia.com/XFree86/Linux-x86_64/580.95.05/README/installdriver.html",
            "https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/index.html",
        ],
    },
};

/// Files only NVIDIA's .run installer leaves.
const RUNFILE_TRACES: [&str; 2] = ["/var/log/nvidia-installer.log", "/usr/bin/nvidia-uninstall"];

/// Debian/Ubuntu packages (name prefixes) that install the driver itself.
const DRIVER_PACKAGES: [&str; 6] = [
    "nvidia-driver-",
    "nvidia-dkms-",
    "libnvidia-compute-",
    "cuda-drivers",
    "nvidia-open",
    "nvidia-kernel-common-",
];

/// Directories of a kernel's module tree where installers put nvidia.ko.
const MODULE_DIRS: [&str; 6] = [
    "kernel/drivers/video",
    "updates/dkms",
    "updates",
    "extra",
    "kernel/drivers/gpu/drm/nvidia",
    "misc",
];

pub(crate) fn check(cx: &HostContext<'_>, out: &mut Vec<CheckResult>) {
    let r = cx.reader;
    let runfile: Vec<&str> = RUNFILE_TRACES.into_iter().filter(|p| r.exists(p)).collect();
    let packages = driver_packages(r);
    let copies = cx
        .profile
        .kernel
        .as_deref()
        .map(|k| module_copies(r, k))
        .unwrap_or_default();
    let mut evidence: Vec<Evidence> = runfile
        .iter()
        .map(|p| Evidence::file(*p, "left by the .run installer"))
        .collect();
    if !packages.is_empty() {
        evidence.push(Evidence::file("/var/lib/dpkg/status", packages.join(", ")));
    }
    evidence.extend(copies.iter().map(|p| Evidence::note(p.as_str())));
    let fix = "Keep one install: remove the .run one (`sudo nvidia-uninstall`) and keep the \
               packages, or purge the packages (`sudo apt-get purge '*nvidia*'`) and keep the \
               .run install; then `sudo depmod -a`, rebuild the initramfs and reboot.";
    if !runfile.is_empty() && !packages.is_empty() {
        out.push(
            CheckResult::problem(
                &META,
                format!(
                    "the NVIDIA driver is installed both by the .run installer ({}) and by \
                     distribution packages ({}): one must go",
                    runfile.join(", "),
                    packages.join(", ")
                ),
            )
            .evidence(evidence)
            .fix(fix),
        );
        return;
    }
    if copies.len() > 1 {
        out.push(
            CheckResult::problem(
                &META,
                format!(
                    "two installs left an nvidia.ko for the running kernel ({}): modprobe loads \
                     the one depmod ranks first, whatever the libraries are",
                    copies.join(", ")
                ),
            )
            .evidence(evidence)
            .fix(fix),
        );
        return;
    }
    let how = match (runfile.is_empty(), packages.is_empty()) {
        (false, _) => "the driver comes from the .run installer only",
        (true, false) => "the driver comes from distribution packages only",
        (true, true) => "no sign of a second driver install",
    };
    out.push(CheckResult::ok(&META, how).evidence(evidence));
}

/// Installed driver packages in dpkg's status, by name.
fn driver_packages(r: &dyn HostReader) -> Vec<String> {
    let Ok(Some(status)) = r.read("/var/lib/dpkg/status") else {
        return Vec::new();
    };
    let mut names: Vec<String> = crate::detect::dpkg::parse_status(&status)
        .packages
        .into_iter()
        .map(|p| p.name)
        .filter(|n| DRIVER_PACKAGES.iter().any(|pre| n.starts_with(pre)))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Every nvidia.ko of `kernel`, one per directory, from modules.dep and the usual directories.
fn module_copies(r: &dyn HostReader, kernel: &str) -> Vec<String> {
    let base = format!("/lib/modules/{kernel}");
    let mut dirs: Vec<String> = Vec::new();
    let mut add = |path: String| {
        let dir = path
            .rsplit_once('/')
            .map(|(d, _)| d.to_string())
            .unwrap_or_default();
        if !dirs
            .iter()
            .any(|p| p.rsplit_once('/').map(|(d, _)| d) == Some(dir.as_str()))
        {
            dirs.push(path);
        }
    };
    if let Some(dep) = r.read_string(&format!("{base}/modules.dep")) {
        for p in dep.lines().filter_map(|l| l.split(':').next()) {
            if p.rsplit('/')
                .next()
                .unwrap_or_default()
                .starts_with("nvidia.ko")
            {
                add(format!("{base}/{p}"));
            }
        }
    }
    for sub in MODULE_DIRS {
        let d = format!("{base}/{sub}");
        for (name, _) in r.list_dir(&d).unwrap_or_default() {
            if name.starts_with("nvidia.ko") {
                add(format!("{d}/{name}"));
            }
        }
    }
    dirs
}
