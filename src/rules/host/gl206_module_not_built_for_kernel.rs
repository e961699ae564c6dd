//! GL206: the nvidia module is built only for another kernel than the running one.

use super::{natural_cmp, CheckResult, HostContext};
use crate::finding::Severity;
use crate::host::evidence::Evidence;
use crate::host::query::{loaded_modules, proc_version};
use crate::host::reader::{EntryKind, HostCommand, HostReader};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

pub(crate) static META: RuleMeta = RuleMeta {
    code: Code::new("GL206"),
    name: "module-not-built-for-kernel",
    default_severity: Severity::Error,
    other_severities: &[Severity::Info, Severity::Warning],
    summary: "The nvidia kernel module is not built for the running (or newest installed) kernel",
    doc: RuleDoc {
        what: "Finds which kernels have an nvidia module (/lib/modules/<kernel>/…/nvidia.ko*, via \
            modules.dep or the usual directories, and the DKMS tree \
            /var/lib/dkms/nvidia/<version>/<kernel>/) and compares them with the running kernel \
            (`uname -r`) and the newest installed one (/lib/modules/*, /boot/vmlinuz-*). For a \
            kernel without the module it names what stops DKMS: no headers \
            (/lib/modules/<kernel>/build) or an error in DKMS's last build log \
            (/var/lib/dkms/nvidia/<version>/build/make.log) for that kernel.",
        why:
            "After a kernel update, DKMS must rebuild the nvidia module. When it did not (missing \
            headers, compiler mismatch, DKMS failure), the new kernel boots without the driver: \
            \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver\". A \
            newer installed kernel without the module is the same failure waiting for the next \
            reboot.",
        example:
            "`apt-get upgrade` installed kernel 6.8.0-49 but the driver has no DKMS build for it, \
            and the host rebooted into it: `the nvidia module is built for 6.8.0-45-generic but \
            not for the running kernel 6.8.0-49-generic (kernel updated, driver not rebuilt)`.",
        fix: "Install the headers of that kernel and run `sudo dkms autoinstall -k <kernel>` (or \
            reinstall the driver packages for it), or boot the kernel the module was built for.",
        sources: &[
            "https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/index.html",
            "https://github.com/dell/dkms",
        ],
    },
};

/// Each kernel with whether nvidia is built for it, and the evidence: the module file (named
/// bare, as a finding quotes no line of it), the tree without one, or the DKMS build.
fn kernels_with_module(r: &dyn HostReader) -> Vec<(String, bool, Evidence)> {
    let mut out = Vec::new();
    for (k, kind) in r.list_dir("/lib/modules").unwrap_or_default() {
        if kind == EntryKind::File {
            continue;
        }
        let base = format!("/lib/modules/{k}");
        let mut hit = None;
        if let Some(dep) = r.read_string(&format!("{base}/modules.dep")) {
            hit = dep
                .lines()
                .filter_map(|l| l.split(':').next())
                .find(|p| {
                    let name = p.rsplit('/').next().unwrap_or_default();
                    name.starts_with("nvidia.ko")
                })
                .map(|p| Evidence::file(format!("{base}/modules.dep"), p));
        }
        if hit.is_none() {
            for sub in [
                "updates/dkms",
                "updates",
                "extra",
                "kernel/drivers/video",
                "kernel/drivers/gpu/drm/nvidia",
                "misc",
                "video",
            ] {
                let d = format!("{base}/{sub}");
                if let Some(f) = r
                    .list_dir(&d)
                    .unwrap_or_default()
                    .into_iter()
                    .find(|(n, _)| n.starts_with("nvidia.ko"))
                {
                    hit = Some(Evidence::note(format!("{d}/{}", f.0)));
                    break;
                }
            }
        }
        match hit {
            Some(h) => out.push((k, true, h)),
            None => out.push((k.clone(), false, Evidence::file(&base, "no nvidia.ko"))),
        }
    }
    // Kernels installed in /boot without a /lib/modules tree have no module either.
    for (name, kind) in r.list_dir("/boot").unwrap_or_default() {
        let Some(k) = name.strip_prefix("vmlinuz-") else {
            continue;
        };
        if kind == EntryKind::Dir || out.iter().any(|(kk, _, _)| kk == k) {
            continue;
        }
        out.push((
            k.to_string(),
            false,
            Evidence::file(format!("/boot/{name}"), format!("no /lib/modules/{k}")),
        ));
    }
    // DKMS builds.
    for (ver, _) in r.list_dir("/var/lib/dkms/nvidia").unwrap_or_default() {
        let vdir = format!("/var/lib/dkms/nvidia/{ver}");
        for (k, kind) in r.list_dir(&vdir).unwrap_or_default() {
            if kind == EntryKind::File || k == "source" || k == "build" {
                continue;
            }
            let ev = Evidence::file(format!("{vdir}/{k}"), format!("DKMS build of nvidia {ver}"));
            match out.iter_mut().find(|(kk, _, _)| *kk == k) {
                Some(e) if !e.1 => {
                    e.1 = true;
                    e.2 = ev;
                }
                Some(_) => {}
                None => out.push((k, true, ev)),
            }
        }
    }
    out.sort_by(|a, b| natural_cmp(&a.0, &b.0));
    out
}

pub(crate) fn check(cx: &HostContext<'_>, out: &mut Vec<CheckResult>) {
    let r = cx.reader;
    let running = cx.profile.kernel.clone().or_else(|| {
        r.run(HostCommand::UnameR)
            .ok_stdout()
            .map(|s| s.trim().to_string())
    });
    let loaded = proc_version(r).is_some()
        || loaded_modules(r)
            .map(|(m, _)| m.iter().any(|x| x == "nvidia"))
            .unwrap_or(false);
    let kernels = kernels_with_module(r);
    let mut evidence: Vec<Evidence> = kernels.iter().map(|(_, _, e)| e.clone()).collect();
    let Some(running) = running else {
        if loaded {
            out.push(
                CheckResult::ok(
                    &META,
                    "the nvidia module is loaded (running kernel unknown: no `uname -r`)",
                )
                .evidence(evidence),
            );
            return;
        }
        out.push(
            CheckResult::could_not(
                &META,
                "running kernel unknown (no `uname -r`) and no module loaded",
            )
            .evidence(evidence),
        );
        return;
    };
    evidence.insert(0, Evidence::command("uname -r", running.as_str()));
    if loaded {
        evidence.push(Evidence::file(
            "/proc/driver/nvidia/version",
            "module loaded",
        ));
    }
    let built_for_running = kernels.iter().any(|(k, has, _)| *k == running && *has);
    let with: Vec<&str> = kernels
        .iter()
        .filter(|(_, h, _)| *h)
        .map(|(k, _, _)| k.as_str())
        .collect();
    if !loaded && !built_for_running {
        if with.is_empty() {
            if kernels.is_empty() {
                out.push(CheckResult::could_not(&META, format!("no /lib/modules or DKMS tree to tell whether nvidia is built for {running}")).evidence(evidence));
                return;
            }
            out.push(
                CheckResult::problem(
                    &META,
                    format!(
                        "no nvidia kernel module is installed for any kernel (running {running})"
                    ),
                )
                .evidence(evidence)
                .fix("Install the NVIDIA driver (with DKMS or prebuilt modules for this kernel)."),
            );
            return;
        }
        let mut message = format!("the nvidia module is built for {} but not for the running kernel {running} (kernel updated, driver not rebuilt)", with.join(", "));
        let mut fix = format!("Install linux-headers-{running} and run `sudo dkms autoinstall -k {running}` (or reinstall the driver), or boot one of: {}.", with.join(", "));
        if let Some(b) = build_blocker(r, &running) {
            message = format!("{message}: {}", b.cause);
            fix = format!("{} Or boot one of: {}.", b.fix, with.join(", "));
            evidence.push(b.evidence);
        }
        out.push(
            CheckResult::problem(&META, message)
                .evidence(evidence)
                .fix(fix),
        );
        return;
    }
    // Running kernel is fine; a newer installed kernel without the module breaks the next boot.
    let newer_without: Vec<&str> = kernels
        .iter()
        .filter(|(k, has, _)| !has && natural_cmp(k, &running) == std::cmp::Ordering::Greater)
        .map(|(k, _, _)| k.as_str())
        .collect();
    if !newer_without.is_empty() {
        let mut message = format!("newer installed kernel(s) {} have no nvidia module: the next boot will have no GPU driver", newer_without.join(", "));
        let mut fix = format!(
            "Run `sudo dkms autoinstall -k {}` with its headers installed before rebooting.",
            newer_without[0]
        );
        // What keeps DKMS from building it, so the failure is known before the reboot.
        if let Some(b) = newer_without.iter().find_map(|k| build_blocker(r, k)) {
            message = format!("{message}, and DKMS cannot build it: {}", b.cause);
            fix = format!("Before rebooting: {}", b.fix);
            evidence.push(b.evidence);
        }
        out.push(
            CheckResult::problem(&META, message)
                .severity(Severity::Warning)
                .evidence(evidence)
                .fix(fix),
        );
        return;
    }
    if !loaded {
        out.push(
            CheckResult::problem(
                &META,
                format!("the nvidia module is built for {running} but not loaded"),
            )
            .severity(Severity::Warning)
            .evidence(evidence)
            .fix("`sudo modprobe nvidia` and read `dmesg | grep -i nvrm` if it fails."),
        );
        return;
    }
    out.push(
        CheckResult::ok(
            &META,
            format!("the nvidia module is loaded in the running kernel {running}"),
        )
        .evidence(evidence),
    );
}

/// What keeps DKMS from building the nvidia module for a kernel, and how to clear it.
struct BuildBlocker {
    cause: String,
    evidence: Evidence,
    fix: String,
}

/// Longest build-log line quoted in a finding.
const MAX_LOG_LINE: usize = 200;

/// Why DKMS cannot build nvidia for `kernel`: the kernel's headers are not installed
/// (`/lib/modules/K/build`, a link to them, leads nowhere), or DKMS's last build log of
/// nvidia, written for this kernel, shows an error. None when neither is seen.
fn build_blocker(r: &dyn HostReader, kernel: &str) -> Option<BuildBlocker> {
    let tree = format!("/lib/modules/{kernel}");
    let build = format!("{tree}/build");
    // Only where the kernel's module tree is there to look in: otherwise nothing says
    // whether the headers are missing or merely not captured.
    if r.list_dir(&tree).is_some() && r.list_dir(&build).is_none() {
        return Some(BuildBlocker {
            cause: format!("the headers of {kernel} are not installed (no {build})"),
            evidence: Evidence::file(tree, "no build (kernel headers)"),
            fix: format!(
                "Install the headers of {kernel} (`linux-headers-{kernel}` on Debian/Ubuntu, \
                 `kernel-devel-{kernel}` on Fedora/RHEL), then run `sudo dkms autoinstall -k \
                 {kernel}`."
            ),
        });
    }
    for (ver, _) in r.list_dir("/var/lib/dkms/nvidia").unwrap_or_default() {
        let log_path = format!("/var/lib/dkms/nvidia/{ver}/build/make.log");
        let Some(log) = r.read_string(&log_path) else {
            continue;
        };
        if make_log_kernel(&log) != Some(kernel) {
            continue;
        }
        let Some(line) = make_log_error(&log) else {
            continue;
        };
        let shown: String = line.chars().take(MAX_LOG_LINE).collect();
        return Some(BuildBlocker {
            cause: format!("DKMS's last build of nvidia {ver} for it failed (`{shown}`)"),
            evidence: Evidence::file(log_path.clone(), shown),
            fix: format!(
                "Read {log_path}: a compiler other than the one the kernel was built with, or a \
                 kernel newer than driver {ver} supports, are the usual causes; install that \
                 compiler or a driver branch that supports {kernel}, then run `sudo dkms \
                 autoinstall -k {kernel}`."
            ),
        });
    }
    None
}

/// The kernel a DKMS make.log was written for (its first line: `DKMS make.log for
/// nvidia-550.54.15 for kernel 6.8.0-90-generic (x86_64)`).
fn make_log_kernel(log: &str) -> Option<&str> {
    let first = log.lines().next()?;
    let rest = first.split_once(" for kernel ")?.1;
    rest.split_whitespace().next()
}

/// The first line of a make.log that reports a failure: a compiler `error:` or make's
/// `*** … Error N`.
fn make_log_error(log: &str) -> Option<&str> {
    log.lines()
        .map(str::trim)
        .find(|l| l.contains("error:") || (l.contains("***") && l.contains("Error")))
}

#[cfg(test)]
mod tests {
    use super::{make_log_error, make_log_kernel};

    #[test]
    fn make_log_header_and_first_error() {
        let log = "DKMS make.log for nvidia-550.54.15 for kernel 6.8.0-90-generic (x86_64)\n\
                   make[1]: Entering directory '/usr/src/linux-headers-6.8.0-90-generic'\n\
                   warning: the compiler differs from the one used to build the kernel\n\
                   /var/lib/dkms/nvidia/550.54.15/build/nvidia/nv.c:42:10: error: implicit declaration of function 'foo'\n\
                   make[2]: *** [scripts/Makefile.build:243: nvidia/nv.o] Error 1\n";
        assert_eq!(make_log_kernel(log), Some("6.8.0-90-generic"));
        assert!(make_log_error(log)
            .unwrap()
            .ends_with("error: implicit declaration of function 'foo'"));
        assert_eq!(make_log_error("DKMS make.log for nvidia-550 for kernel 6.8.0-90-generic (x86_64)\nmake[1]: Leaving directory\n"), None);
        assert_eq!(make_log_kernel("no header\n"), None);
    }
}
