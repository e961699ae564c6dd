//! GL207: /dev/nvidia* nodes missing or not usable by the invoking user.

use super::{CheckResult, HostContext};
use crate::finding::Severity;
use crate::host::evidence::Evidence;
use crate::host::query::identity;
use crate::host::reader::{DevNode, Identity};
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

pub(crate) static META: RuleMeta = RuleMeta {
    code: Code::new("GL207"),
    name: "device-nodes-unusable",
    default_severity: Severity::Error,
    other_severities: &[Severity::Info, Severity::Warning],
    summary: "A /dev/nvidia* device node is missing or not read-write for the invoking user",
    doc: RuleDoc {
        what: "Checks /dev/nvidiactl, /dev/nvidia<minor> for each GPU, /dev/nvidia-uvm, \
            /dev/nvidia-uvm-tools and (with MIG) /dev/nvidia-caps: present, character devices, \
            and read-write for the invoking user (owner, group membership from /proc/self/status \
            or `id`, or the world bits).",
        why: "CUDA opens these nodes read-write. A missing /dev/nvidia-uvm gives \"CUDA unknown \
            error\"; a node owned by a group the user is not in (e.g. `video` with mode 0660) \
            gives \"no CUDA-capable device is detected\" or \"Failed to initialize NVML: \
            Insufficient Permissions\".",
        example:
            "A container host where /dev/nvidia-uvm was never created (nvidia_uvm loaded late, no \
            udev rule): `/dev/nvidia-uvm is missing`; or a user not in the group that owns \
            /dev/nvidia0 with NVreg_DeviceFileMode=0660.",
        fix:
            "Run `sudo nvidia-modprobe -u -c=0` to create missing nodes; add the user to the group \
            owning the nodes (`usermod -aG video USER`, then log in again), or set \
            NVreg_DeviceFileMode / NVreg_DeviceFileGID in /etc/modprobe.d.",
        sources: &["https://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html"],
    },
};

/// The fix for what was found: create missing nodes; join the group that owns the nodes.
fn fix_for(missing: bool, groups: &[String]) -> String {
    let mut parts = Vec::new();
    if missing {
        parts.push("Create the missing nodes with `sudo nvidia-modprobe -u -c=0`".to_string());
    }
    match groups {
        [] => {}
        [g] => parts.push(format!(
            "add the user to the group `{g}` that owns the nodes (`sudo usermod -aG {g} $USER`, then log in again), or set NVreg_DeviceFileMode/NVreg_DeviceFileGID in /etc/modprobe.d"
        )),
        gs => parts.push(format!(
            "add the user to the groups that own the nodes ({}: `sudo usermod -aG {} $USER`, then log in again), or set NVreg_DeviceFileMode/NVreg_DeviceFileGID in /etc/modprobe.d",
            gs.join(", "),
            gs.join(",")
        )),
    }
    if parts.is_empty() {
        parts.push("Give the invoking user read-write access to the nodes (NVreg_DeviceFileMode/NVreg_DeviceFileUID/NVreg_DeviceFileGID in /etc/modprobe.d)".into());
    }
    let mut s = parts.join("; ");
    s.push('.');
    s
}

fn can_rw(n: &DevNode, id: Option<&Identity>) -> Option<bool> {
    let bits = |shift: u32| (n.mode >> shift) & 6 == 6;
    if bits(0) {
        return Some(true);
    }
    let id = id?;
    if id.uid == Some(0) {
        return Some(true);
    }
    let owner_match =
        (n.uid.is_some() && n.uid == id.uid) || (n.owner.is_some() && n.owner == id.user);
    if owner_match {
        return Some(bits(6));
    }
    let group_match = id.groups.iter().any(|(g, name)| {
        (n.gid.is_some() && *g == n.gid)
            || (n.group.is_some() && name.is_some() && *name == n.group)
    });
    Some(group_match && bits(3))
}

pub(crate) fn check(cx: &HostContext<'_>, out: &mut Vec<CheckResult>) {
    let r = cx.reader;
    let Some(nodes) = r.dev_nodes() else {
        out.push(CheckResult::could_not(
            &META,
            format!("/dev/nvidia* is not visible on the {}", r.describe()),
        ));
        return;
    };
    let id = identity(r);
    let mut evidence: Vec<Evidence> = nodes
        .iter()
        .map(|n| Evidence::file("/dev", &n.line))
        .collect();
    match &id {
        Some(i) => evidence.push(Evidence {
            source: i.source.clone(),
            text: format!(
                "uid {} groups {}",
                i.uid.map(|u| u.to_string()).unwrap_or_else(|| "?".into()),
                i.groups
                    .iter()
                    .map(|(g, n)| match (g, n) {
                        (Some(g), Some(n)) => format!("{g}({n})"),
                        (Some(g), None) => g.to_string(),
                        (None, Some(n)) => n.clone(),
                        _ => "?".into(),
                    })
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        }),
        None => evidence.push(Evidence::note(
            "invoking user unknown (no /proc/self/status, no `id` capture)",
        )),
    }
    let mut required: Vec<(String, Severity)> = vec![
        ("/dev/nvidiactl".into(), Severity::Error),
        ("/dev/nvidia-uvm".into(), Severity::Error),
        ("/dev/nvidia-uvm-tools".into(), Severity::Warning),
    ];
    let mut minors: Vec<u32> = cx
        .profile
        .gpus
        .iter()
        .filter_map(|g| g.minor.or(g.index))
        .collect();
    minors.sort();
    minors.dedup();
    for m in minors {
        required.push((format!("/dev/nvidia{m}"), Severity::Error));
    }
    if cx
        .profile
        .gpus
        .iter()
        .any(|g| g.mig_mode.as_deref() == Some("Enabled"))
    {
        required.push(("/dev/nvidia-caps".into(), Severity::Error));
    }
    let mut problems: Vec<(String, Severity)> = Vec::new();
    let mut unknown = Vec::new();
    // Groups that would grant access (group bits rw) to a node the user cannot open.
    let mut groups: Vec<String> = Vec::new();
    let mut missing = false;
    for (path, sev) in &required {
        match nodes.iter().find(|n| &n.path == path) {
            None => {
                missing = true;
                problems.push((format!("{path} is missing"), *sev))
            }
            Some(n) if path == "/dev/nvidia-caps" => {
                if n.kind != 'd' {
                    problems.push((format!("{path} is not a directory"), *sev));
                }
            }
            Some(n) if n.kind != 'c' => {
                problems.push((format!("{path} is not a character device"), *sev))
            }
            Some(n) => match can_rw(n, id.as_ref()) {
                Some(true) => {}
                Some(false) => {
                    if (n.mode >> 3) & 6 == 6 {
                        if let Some(g) = n.group.clone().or(n.gid.map(|g| g.to_string())) {
                            if !groups.contains(&g) {
                                groups.push(g);
                            }
                        }
                    }
                    problems.push((
                    format!(
                        "{path} is not read-write for the invoking user (mode {:o}, owner {}, group {})",
                        n.mode,
                        n.owner.clone().or(n.uid.map(|u| u.to_string())).unwrap_or_default(),
                        n.group.clone().or(n.gid.map(|g| g.to_string())).unwrap_or_default()
                    ),
                    *sev,
                ))
                }
                None => unknown.push(path.clone()),
            },
        }
    }
    if !problems.is_empty() {
        out.push(
            CheckResult::problems(&META, "", &problems)
                .evidence(evidence)
                .fix(fix_for(missing, &groups)),
        );
        return;
    }
    if !unknown.is_empty() {
        out.push(
            CheckResult::could_not(
                &META,
                format!(
                    "invoking user unknown; cannot judge access to {}",
                    unknown.join(", ")
                ),
            )
            .evidence(evidence),
        );
        return;
    }
    out.push(
        CheckResult::ok(
            &META,
            format!(
                "{} required device nodes present and read-write for the invoking user",
                required.len()
            ),
        )
        .evidence(evidence),
    );
}
