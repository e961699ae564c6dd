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
            (`uname -r`).",
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
        out.push(CheckResult::problem(
            &META,
            format!("the nvidia module is built for {} but not for the running kernel {running} (kernel updated, driver not rebuilt)", with.join(", ")),
        )
        .evidence(evidence)
        .fix(format!("Install linux-headers-{running} and run `sudo dkms autoinstall -k {running}` (or reinstall the driver), or boot one of: {}.", with.join(", "))));
        return;
    }
    // Running kernel is fine; a newer installed kernel without the module breaks the next boot.
    let newer_without: Vec<&str> = kernels
        .iter()
        .filter(|(k, has, _)| !has && natural_cmp(k, &running) == std::cmp::Ordering::Greater)
        .map(|(k, _, _)| k.as_str())
        .collect();
    if !newer_without.is_empty() {
        out.push(CheckResult::problem(
            &META,
            format!("newer installed kernel(s) {} have no nvidia module: the next boot will have no GPU driver", newer_without.join(", ")),
        )
        .severity(Severity::Warning)
        .evidence(evidence)
        .fix(format!("Run `sudo dkms autoinstall -k {}` with its headers installed before rebooting.", newer_without[0])));
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
