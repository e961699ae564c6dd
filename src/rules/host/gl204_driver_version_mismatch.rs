//! GL204: kernel module and user-space driver versions differ ("API mismatch").

use super::{ld_so_conf_dirs, proc_version, CheckResult, Ctx};
use crate::finding::Severity;
use crate::host::reader::{HostCommand, HostReader};
use crate::rule_meta::{Code, RuleMeta};
use crate::version::DriverVersion;

pub(crate) static META: RuleMeta = RuleMeta {
    code: Code::new("GL204"),
    name: "driver-version-mismatch",
    default_severity: Severity::Error,
    summary: "The loaded kernel module and the user-space driver libraries have different versions",
    explanation: "What: compares the version in /proc/driver/nvidia/version (the loaded kernel \
module) with the user-space driver: libnvidia-ml.so.<version> / libcuda.so.<version> in the \
library directories, and the version nvidia-smi reports; also looks for nvidia-smi's \
\"Driver/library version mismatch\".\n\
Why: the kernel module and the user-space libraries talk through a private ABI that changes \
with every release. After a driver upgrade without a reboot (or a partial package upgrade), \
NVML fails with \"Failed to initialize NVML: Driver/library version mismatch\" and CUDA with \
\"API mismatch\" in dmesg.\n\
Fix: reboot (or unload and reload the nvidia modules) so the module matches the installed \
libraries; if old library versions linger, remove the stale driver packages.",
};

const LIB_DIRS: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/lib/x86_64-linux-gnu",
    "/lib64",
    "/usr/local/nvidia/lib64",
];

/// `libnvidia-ml.so.<ver>` / `libcuda.so.<ver>` regular files in the library directories
/// (not stubs, not the cuda-compat package).
pub(crate) fn user_space_versions(r: &dyn HostReader) -> Vec<(String, DriverVersion)> {
    let mut dirs: Vec<String> = LIB_DIRS.iter().map(|s| s.to_string()).collect();
    for (d, _) in ld_so_conf_dirs(r) {
        if !dirs.contains(&d) {
            dirs.push(d);
        }
    }
    let mut out = Vec::new();
    for d in dirs {
        if d.contains("/compat") || d.contains("/stubs") {
            continue;
        }
        for (name, _) in r.list_dir(&d).unwrap_or_default() {
            for prefix in ["libnvidia-ml.so.", "libcuda.so."] {
                if let Some(v) = name.strip_prefix(prefix) {
                    if v.contains('.') {
                        if let Ok(dv) = v.parse::<DriverVersion>() {
                            out.push((format!("{d}/{name}"), dv));
                        }
                    }
                }
            }
        }
    }
    out
}

pub(crate) fn check(cx: &Ctx) -> Vec<CheckResult> {
    let r = cx.reader;
    let mut evidence = Vec::new();
    let kernel = proc_version(r).and_then(|p| {
        evidence.push(format!("/proc/driver/nvidia/version: {}", p.line));
        p.version.and_then(|v| v.parse::<DriverVersion>().ok())
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
                smi_mismatch = Some(format!("{}: {}", cmd.display(), l.trim()));
                break;
            }
        }
    }
    let libs = user_space_versions(r);
    let smi_driver = r
        .run(HostCommand::NvidiaSmiQueryGpu)
        .ok_stdout()
        .and_then(|o| {
            crate::host::parse::smi::parse_query_csv(o)
                .into_iter()
                .find_map(|g| g.driver_version)
        })
        .or_else(|| {
            r.run(HostCommand::NvidiaSmiQx)
                .ok_stdout()
                .and_then(|o| crate::host::parse::smi::parse_xml(o).driver_version)
        })
        .and_then(|v| v.parse::<DriverVersion>().ok());
    if let Some(v) = &smi_driver {
        evidence.push(format!("nvidia-smi: driver_version {v}"));
    }
    for (p, v) in &libs {
        evidence.push(format!("{p}: user-space driver {v}"));
    }
    if let Some(m) = smi_mismatch {
        evidence.insert(0, m);
        return vec![CheckResult::problem(&META, "nvidia-smi reports a driver/library version mismatch")
            .evidence(evidence)
            .fix("Reboot so the loaded kernel module matches the installed driver libraries (or unload and reload the nvidia modules).")];
    }
    let Some(k) = kernel else {
        return vec![CheckResult::could_not(
            &META,
            "the loaded kernel module's version is unknown (no /proc/driver/nvidia/version)",
        )
        .evidence(evidence)];
    };
    let mut user: Vec<&DriverVersion> = libs.iter().map(|(_, v)| v).collect();
    user.extend(smi_driver.iter());
    if user.is_empty() {
        return vec![CheckResult::could_not(
            &META,
            format!("kernel module {k} loaded, but no user-space driver library or nvidia-smi version found"),
        )
        .evidence(evidence)];
    }
    let mut other: Vec<String> = user
        .iter()
        .filter(|v| ***v != k)
        .map(|v| v.to_string())
        .collect();
    other.sort();
    other.dedup();
    if !other.is_empty() {
        return vec![CheckResult::problem(
            &META,
            format!(
                "kernel module {k} but user-space driver {}: NVML/CUDA fail with \"Driver/library version mismatch\"",
                other.join(", ")
            ),
        )
        .evidence(evidence)
        .fix("Reboot (or reload the nvidia modules) so the kernel module matches the installed libraries; remove stale driver packages if an old version lingers.")];
    }
    vec![CheckResult::ok(
        &META,
        format!("kernel module and user-space driver are both {k}"),
    )
    .evidence(evidence)]
}
