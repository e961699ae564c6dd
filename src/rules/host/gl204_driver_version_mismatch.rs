//! GL204: kernel module and user-space driver versions differ ("API mismatch").

use super::{CheckResult, HostContext};
use crate::finding::Severity;
use crate::host::evidence::Evidence;
use crate::host::parse::dmesg::{parse_api_mismatch, ApiMismatch};
use crate::host::query::{proc_version, smi_driver_version, user_space_versions};
use crate::host::reader::{HostCommand, HostReader};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};
use crate::version::DriverVersion;

pub(crate) static META: RuleMeta = RuleMeta {
    code: Code::new("GL204"),
    name: "driver-version-mismatch",
    default_severity: Severity::Error,
    other_severities: &[Severity::Info],
    summary: "The loaded kernel module and the user-space driver libraries have different versions",
    doc: RuleDoc {
        what:
            "Compares the version in /proc/driver/nvidia/version (the loaded kernel module) with \
            the user-space driver: libnvidia-ml.so.<version> / libcuda.so.<version> in the \
            library directories, and the version nvidia-smi reports; also looks for nvidia-smi's \
            \"Driver/library version mismatch\" and for the kernel's own `NVRM: API mismatch: the \
            client has the version X, but this kernel module has the version Y` in dmesg, which \
            names a second user-space driver (bundled in a container image, a venv or a copied \
            libcuda) even while nvidia-smi works.",
        why: "The kernel module and the user-space libraries talk through a private ABI that \
            changes with every release. After a driver upgrade without a reboot (or a partial \
            package upgrade), NVML fails with \"Failed to initialize NVML: Driver/library version \
            mismatch\" and CUDA with \"API mismatch\" in dmesg.",
        example:
            "`apt-get upgrade` moved the driver libraries from 550.54.15 to 550.127.05 without a \
            reboot, so the old kernel module is still loaded: nvidia-smi prints `Failed to \
            initialize NVML: Driver/library version mismatch` and gpulint reports `nvidia-smi \
            reports a driver/library version mismatch`.",
        fix:
            "Reboot (or unload and reload the nvidia modules) so the module matches the installed \
            libraries; if old library versions linger, remove the stale driver packages.",
        sources: &[
            "https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/index.html",
            "https://docs.nvidia.com/deploy/nvml-api/index.html",
            "https://docs.nvidia.com/cuda/wsl-user-guide/index.html",
        ],
    },
};

/// WSL2: the driver is the Windows host's, served from /usr/lib/wsl/lib. A Linux driver
/// installed inside the distribution puts its own libcuda / libnvidia-ml in front of it.
fn check_wsl2(cx: &HostContext<'_>, out: &mut Vec<CheckResult>) {
    let linux: Vec<(String, DriverVersion)> = user_space_versions(cx.reader)
        .into_iter()
        .filter(|(p, _)| !p.starts_with("/usr/lib/wsl/"))
        .collect();
    let mut evidence: Vec<Evidence> = cx.env.evidence.clone();
    if linux.is_empty() {
        let drv = cx
            .profile
            .driver
            .as_ref()
            .map(|d| format!(" (Windows driver {d})"))
            .unwrap_or_default();
        out.push(CheckResult::ok(
            &META,
            format!("WSL2: the driver libraries are the Windows driver's in /usr/lib/wsl/lib{drv}; no Linux driver installed"),
        )
        .evidence(evidence));
        return;
    }
    evidence.extend(
        linux
            .iter()
            .map(|(p, v)| Evidence::file(p, format!("Linux user-space driver {v}"))),
    );
    out.push(CheckResult::problem(
        &META,
        format!(
            "a Linux NVIDIA driver ({}) is installed inside WSL2: its libcuda/libnvidia-ml come before the Windows driver's in /usr/lib/wsl/lib and cannot talk to the WSL2 GPU",
            {
                let mut v: Vec<String> = linux.iter().map(|(_, v)| v.to_string()).collect();
                v.sort();
                v.dedup();
                v.join(", ")
            }
        ),
    )
    .evidence(evidence)
    .fix("Remove the Linux driver packages inside WSL2 (e.g. `sudo apt-get remove --purge 'libnvidia-*' 'nvidia-driver-*'`) and keep only the Windows driver; install only the CUDA toolkit (the `cuda-toolkit-*` / WSL-Ubuntu packages), never a driver, inside WSL2."));
}

pub(crate) fn check(cx: &HostContext<'_>, out: &mut Vec<CheckResult>) {
    if cx.env.wsl2 {
        check_wsl2(cx, out);
        return;
    }
    let r = cx.reader;
    let mut evidence = Vec::new();
    let kernel = proc_version(r).and_then(|p| {
        evidence.push(Evidence::file(
            "/proc/driver/nvidia/version",
            p.line.to_string(),
        ));
        p.driver
    });
    // nvidia-smi says so itself.
    let mut smi_mismatch = None;
    for cmd in [
        HostCommand::NvidiaSmiQueryGpu,
        HostCommand::NvidiaSmiQx,
        HostCommand::NvidiaSmi,
    ] {
        if let Some(out) = r.run(cmd).any_output() {
            if let Some(l) = out.lines().find(|l| l.contains("version mismatch")) {
                smi_mismatch = Some(Evidence::command(cmd.display(), l.trim()));
                break;
            }
        }
    }
    let libs = user_space_versions(r);
    let smi_driver = smi_driver_version(r);
    if let Some(v) = &smi_driver {
        evidence.push(Evidence::command(
            "nvidia-smi",
            format!("driver_version {v}"),
        ));
    }
    for (p, v) in &libs {
        evidence.push(Evidence::file(p, format!("user-space driver {v}")));
    }
    if let Some(m) = smi_mismatch {
        evidence.insert(0, m);
        out.push(CheckResult::problem(&META, "nvidia-smi reports a driver/library version mismatch")
            .evidence(evidence)
            .fix("Reboot so the loaded kernel module matches the installed driver libraries (or unload and reload the nvidia modules)."));
        return;
    }
    if let Some(m) = dmesg_api_mismatch(r) {
        evidence.insert(0, Evidence::command("dmesg", &m.line));
        out.push(
            CheckResult::problem(
                &META,
                format!(
                "a user-space driver {} talked to kernel module {} (NVRM: API mismatch in dmesg): \
                 a second driver library, e.g. a libcuda.so baked into a container image or a \
                 Python environment, is loaded instead of the host's",
                m.client, m.kernel
            ),
            )
            .evidence(evidence)
            .fix(format!(
            "Find the libcuda.so.{0} / libnvidia-*.so.{0} that the failing program loads (`ldd`, \
             `LD_DEBUG=libs`, or `gpulint image` on its container image: GL004) and remove it so \
             the host's {1} libraries are used; in containers let the NVIDIA Container Toolkit \
             mount the driver.",
            m.client, m.kernel
        )),
        );
        return;
    }
    let Some(k) = kernel else {
        out.push(
            CheckResult::could_not(
                &META,
                "the loaded kernel module's version is unknown (no /proc/driver/nvidia/version)",
            )
            .evidence(evidence),
        );
        return;
    };
    let mut user: Vec<&DriverVersion> = libs.iter().map(|(_, v)| v).collect();
    user.extend(smi_driver.iter());
    if user.is_empty() {
        out.push(CheckResult::could_not(
            &META,
            format!("kernel module {k} loaded, but no user-space driver library or nvidia-smi version found"),
        )
        .evidence(evidence));
        return;
    }
    let mut other: Vec<String> = user
        .iter()
        .filter(|v| ***v != k)
        .map(|v| v.to_string())
        .collect();
    other.sort();
    other.dedup();
    if !other.is_empty() {
        out.push(CheckResult::problem(
            &META,
            format!(
                "kernel module {k} but user-space driver {}: NVML/CUDA fail with \"Driver/library version mismatch\"",
                other.join(", ")
            ),
        )
        .evidence(evidence)
        .fix("Reboot (or reload the nvidia modules) so the kernel module matches the installed libraries; remove stale driver packages if an old version lingers."));
        return;
    }
    out.push(
        CheckResult::ok(
            &META,
            format!("kernel module and user-space driver are both {k}"),
        )
        .evidence(evidence),
    );
}

fn dmesg_api_mismatch(r: &dyn HostReader) -> Option<ApiMismatch> {
    parse_api_mismatch(&r.run(HostCommand::Dmesg).any_output()?)
}
