//! GL202: the nouveau driver is loaded, or not blacklisted.

use super::{CheckResult, HostContext};
use crate::finding::Severity;
use crate::host::evidence::Evidence;
use crate::host::parse;
use crate::host::query::{loaded_modules, modprobe_files};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

pub(crate) static META: RuleMeta = RuleMeta {
    code: Code::new("GL202"),
    name: "nouveau-loaded",
    default_severity: Severity::Error,
    other_severities: &[Severity::Info, Severity::Warning],
    summary: "The open-source nouveau driver is loaded or may load instead of nvidia",
    doc: RuleDoc {
        what: "Looks for `nouveau` in /proc/modules and for a blacklist in /etc/modprobe.d, \
            /usr/lib/modprobe.d, /lib/modprobe.d and the kernel command line; when nouveau is \
            loaded although blacklisted, compares the blacklist files' modification times with \
            the running kernel's initramfs (/boot/initrd.img-K, initramfs-K.img, initrd-K) and \
            the boot time (`btime` in /proc/stat).",
        why: "Nouveau and nvidia cannot drive the same GPU. When nouveau binds first, the nvidia \
            module fails to load (\"NVRM: The NVIDIA probe routine failed\") and CUDA sees no \
            device. Without a blacklist, nouveau can win the race on the next boot or after a \
            driver reinstall.",
        example:
            "A freshly installed Ubuntu server before the NVIDIA driver: `the nouveau driver is \
            loaded`; a host where the driver works but nothing blacklists nouveau (seen on a live \
            H200 node): `nouveau is not loaded but not blacklisted either` (warning).",
        fix: "Add `blacklist nouveau` and `options nouveau modeset=0` to \
            /etc/modprobe.d/blacklist-nouveau.conf, rebuild the initramfs (`update-initramfs -u` \
            or `dracut -f`) and reboot. When nouveau is loaded although blacklisted, the \
            blacklist is not in effect yet: a blacklist newer than the running kernel's \
            initramfs needs the initramfs rebuilt, an initramfs rebuilt after the last boot \
            needs the reboot.",
        sources: &[
            "https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/index.html",
            "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html",
        ],
    },
};

pub(crate) fn check(cx: &HostContext<'_>, out: &mut Vec<CheckResult>) {
    let r = cx.reader;
    let mut evidence = Vec::new();
    let mut blacklisted = false;
    let mut blacklist_files = Vec::new();
    for (p, t) in modprobe_files(r) {
        if parse::parse_modprobe_blacklist(&t)
            .iter()
            .any(|m| m == "nouveau")
        {
            blacklisted = true;
            evidence.push(Evidence::file(&p, "blacklists nouveau"));
            blacklist_files.push(p);
        }
    }
    if let Some(c) = r.read_string("/proc/cmdline") {
        if parse::parse_cmdline_blacklist(&c)
            .iter()
            .any(|m| m == "nouveau")
        {
            blacklisted = true;
            evidence.push(Evidence::file("/proc/cmdline", c.trim()));
        }
    }
    let Some((mods, src)) = loaded_modules(r) else {
        out.push(
            CheckResult::could_not(&META, "neither /proc/modules nor /sys/module is readable")
                .evidence(evidence),
        );
        return;
    };
    if mods.iter().any(|m| m == "nouveau") {
        evidence.insert(0, Evidence::file(src, "nouveau"));
        if blacklisted {
            let kernel = cx.profile.kernel.as_deref().unwrap_or_default();
            let (message, fix) =
                blacklist_not_in_effect(r, kernel, &blacklist_files, &mut evidence);
            out.push(
                CheckResult::problem(&META, message)
                    .evidence(evidence)
                    .fix(fix),
            );
            return;
        }
        out.push(CheckResult::problem(&META, "the nouveau driver is loaded")
            .evidence(evidence)
            .fix("Blacklist nouveau (`blacklist nouveau` + `options nouveau modeset=0` in /etc/modprobe.d/blacklist-nouveau.conf), rebuild the initramfs and reboot."));
        return;
    }
    if !blacklisted {
        evidence.push(Evidence::file(src, "nouveau not loaded"));
        // It only matters if the running kernel can load nouveau at all.
        let kernel = cx.profile.kernel.clone().unwrap_or_default();
        let dep = r.read_string(&format!("/lib/modules/{kernel}/modules.dep"));
        let available = dep.as_deref().map(|d| d.contains("/nouveau.ko"));
        let sev = match available {
            Some(true) => {
                evidence.push(Evidence::file(
                    format!("/lib/modules/{kernel}/modules.dep"),
                    "nouveau.ko available",
                ));
                Severity::Warning
            }
            Some(false) => {
                out.push(
                    CheckResult::ok(
                        &META,
                        "nouveau is not loaded, and the running kernel has no nouveau module",
                    )
                    .evidence(evidence),
                );
                return;
            }
            None => Severity::Info,
        };
        out.push(CheckResult::problem(&META, "nouveau is not loaded but not blacklisted either")
            .severity(sev)
            .evidence(evidence)
            .fix("Add /etc/modprobe.d/blacklist-nouveau.conf with `blacklist nouveau` and `options nouveau modeset=0`, then rebuild the initramfs."));
        return;
    }
    out.push(CheckResult::ok(&META, "nouveau is not loaded and is blacklisted").evidence(evidence));
}

/// Why nouveau is loaded although something blacklists it, and the fix, from the ages of the
/// blacklist files, the running kernel's initramfs and the boot: the blacklist only acts at
/// boot through the initramfs, so a blacklist written after the initramfs was built does
/// nothing until the initramfs is rebuilt, and a rebuilt initramfs nothing until a reboot.
fn blacklist_not_in_effect(
    r: &dyn crate::host::HostReader,
    kernel: &str,
    blacklist_files: &[String],
    evidence: &mut Vec<Evidence>,
) -> (String, String) {
    let rebuild = if kernel.is_empty() {
        "`update-initramfs -u` (Debian/Ubuntu) or `dracut -f` (Fedora/RHEL/SUSE)".to_string()
    } else {
        format!(
            "`update-initramfs -u -k {kernel}` (Debian/Ubuntu) or `dracut -f --kver {kernel}` \
             (Fedora/RHEL/SUSE)"
        )
    };
    let newest_blacklist = blacklist_files
        .iter()
        .filter_map(|p| r.modified(p).map(|t| (t, p)))
        .max();
    let initramfs = initramfs_of(r, kernel).and_then(|p| r.modified(&p).map(|t| (t, p)));
    let booted = boot_time(r);
    if let (Some((tb, b)), Some((ti, i))) = (&newest_blacklist, &initramfs) {
        if tb > ti {
            evidence.push(Evidence::file(b.as_str(), format!("modified {}", utc(*tb))));
            evidence.push(Evidence::file(
                i.as_str(),
                format!("initramfs of the running kernel, built {}", utc(*ti)),
            ));
            return (
                format!(
                    "the nouveau driver is loaded although {b} blacklists it: the blacklist is \
                     newer than the initramfs of the running kernel ({i}), which still loads \
                     nouveau at boot"
                ),
                format!(
                    "The blacklist is already in place; rebuild the initramfs with {rebuild} \
                     and reboot."
                ),
            );
        }
    }
    if let (Some((ti, i)), Some(tboot)) = (&initramfs, booted) {
        if *ti > tboot {
            evidence.push(Evidence::file(
                i.as_str(),
                format!("initramfs of the running kernel, built {}", utc(*ti)),
            ));
            evidence.push(Evidence::file(
                "/proc/stat",
                format!("booted {}", utc(tboot)),
            ));
            return (
                format!(
                    "the nouveau driver is loaded although blacklisted: the initramfs ({i}) \
                     was rebuilt after the last boot, which has not used it yet"
                ),
                "Reboot: the blacklist and the rebuilt initramfs are in place.".into(),
            );
        }
    }
    (
        "the nouveau driver is loaded although blacklisted: the blacklist was not in effect \
         when this kernel booted"
            .into(),
        format!(
            "Rebuild the initramfs with {rebuild} so it carries the blacklist, and reboot; if \
             nouveau still loads, look for what loads it by name (/etc/modules, \
             /etc/modules-load.d, an `install` line)."
        ),
    )
}

/// The running kernel's initramfs, by the names Debian/Ubuntu (`initrd.img-K`),
/// dracut (`initramfs-K.img`) and SUSE (`initrd-K`) give it.
fn initramfs_of(r: &dyn crate::host::HostReader, kernel: &str) -> Option<String> {
    if kernel.is_empty() {
        return None;
    }
    [
        format!("/boot/initrd.img-{kernel}"),
        format!("/boot/initramfs-{kernel}.img"),
        format!("/boot/initrd-{kernel}"),
    ]
    .into_iter()
    .find(|p| r.exists(p))
}

/// When the host booted: `btime` of /proc/stat, seconds since the epoch.
fn boot_time(r: &dyn crate::host::HostReader) -> Option<i64> {
    r.read_string("/proc/stat")?.lines().find_map(|l| {
        let v = l.strip_prefix("btime ")?;
        v.trim().parse().ok()
    })
}

/// Seconds since the epoch as `YYYY-MM-DD HH:MM UTC` (proleptic Gregorian, days → civil date
/// after Howard Hinnant's algorithm).
fn utc(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60
    )
}

#[cfg(test)]
mod tests {
    use super::utc;

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        // 2024-02-29 12:34 UTC (a leap day) and 2026-12-03 00:00 UTC.
        assert_eq!(utc(1_709_210_040), "2024-02-29 12:34 UTC");
        assert_eq!(utc(1_796_256_000), "2026-12-03 00:00 UTC");
    }
}
