//! GL218: CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES in the invoking environment naming GPUs
//! that do not exist, set empty, or using indices whose order differs from nvidia-smi's.

use super::{CheckResult, HostContext};
use crate::finding::Severity;
use crate::host::evidence::Evidence;
use crate::host::profile::HostGpu;
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

pub(crate) static META: RuleMeta = RuleMeta {
    code: Code::new("GL218"),
    name: "visible-devices-invalid",
    default_severity: Severity::Error,
    other_severities: &[Severity::Info, Severity::Warning],
    summary: "CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES hides GPUs or names GPUs that do not exist",
    doc: RuleDoc {
        what: "Reads CUDA_VISIBLE_DEVICES (and, inside a container, NVIDIA_VISIBLE_DEVICES) of the \
            invoking environment and resolves each entry against the GPUs the driver reports: \
            an index (0, 1, …) or a GPU-/MIG- UUID (a unique prefix is enough). Also reads \
            CUDA_DEVICE_ORDER when indices are used on a host with different GPU models.",
        why: "CUDA stops at the first entry that names no GPU: the devices from there on are \
            hidden, and when it is the first entry CUDA sees none (\"no CUDA-capable device is \
            detected\"). Set but empty hides every GPU. Indices are in CUDA's default \
            FASTEST_FIRST order, while nvidia-smi numbers GPUs by PCI bus id: on a host with \
            different GPU models `CUDA_VISIBLE_DEVICES=1` can be another GPU than nvidia-smi's \
            GPU 1 unless CUDA_DEVICE_ORDER=PCI_BUS_ID.",
        example: "A job script from an 8-GPU node run on a 1-GPU host with \
            `CUDA_VISIBLE_DEVICES=3`: `CUDA_VISIBLE_DEVICES=3 names GPU 3, which does not exist \
            (1 GPU: index 0): CUDA sees no GPU`.",
        fix: "Name GPUs that exist (`nvidia-smi -L` lists indices and UUIDs), prefer UUIDs, unset \
            an empty CUDA_VISIBLE_DEVICES, and set CUDA_DEVICE_ORDER=PCI_BUS_ID when using \
            indices on a mixed-GPU host.",
        sources: &[
            "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#cuda-environment-variables",
            "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/docker-specialized.html#gpu-enumeration",
        ],
    },
};

/// What one entry of a visible-devices list names.
#[derive(Debug, PartialEq)]
enum Entry {
    Gpu(usize),
    Missing(String),
}

/// Resolve a CUDA_VISIBLE_DEVICES-style list against the GPUs (and their MIG devices).
fn resolve(value: &str, gpus: &[HostGpu]) -> Vec<(String, Entry)> {
    value
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| {
            let e = if let Ok(i) = p.parse::<i64>() {
                let pos = gpus.iter().position(|g| g.index.map(i64::from) == Some(i));
                match pos {
                    Some(x) => Entry::Gpu(x),
                    None => Entry::Missing(p.to_string()),
                }
            } else {
                let lower = p.to_ascii_lowercase();
                let pos = gpus.iter().position(|g| {
                    g.uuid
                        .as_deref()
                        .is_some_and(|u| u.to_ascii_lowercase().starts_with(&lower))
                        || g.mig_devices
                            .iter()
                            .any(|m| m.to_ascii_lowercase().contains(&lower))
                });
                match pos {
                    Some(x) => Entry::Gpu(x),
                    None => Entry::Missing(p.to_string()),
                }
            };
            (p.to_string(), e)
        })
        .collect()
}

fn listing(gpus: &[HostGpu]) -> String {
    gpus.iter()
        .map(|g| {
            format!(
                "{} {}",
                g.index.map(|i| i.to_string()).unwrap_or_else(|| "?".into()),
                g.uuid.as_deref().unwrap_or(&g.name)
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

pub(crate) fn check(cx: &HostContext<'_>, out: &mut Vec<CheckResult>) {
    // `out` may hold other checks' results: only this check's own count.
    let before = out.len();
    let r = cx.reader;
    let gpus = &cx.profile.gpus;
    let mut looked = Vec::new();
    if let Some(v) = r.env("CUDA_VISIBLE_DEVICES") {
        looked.push(format!("CUDA_VISIBLE_DEVICES={v}"));
        let mut evidence = vec![
            Evidence::env(format!("CUDA_VISIBLE_DEVICES={v}")),
            Evidence::note(format!("driver: {} GPU(s): {}", gpus.len(), listing(gpus))),
        ];
        let entries = resolve(&v, gpus);
        if entries.is_empty() {
            out.push(
                CheckResult::problem(
                    &META,
                    "CUDA_VISIBLE_DEVICES is set but empty: CUDA sees no GPU",
                )
                .evidence(evidence.clone())
                .fix("Unset CUDA_VISIBLE_DEVICES (`unset CUDA_VISIBLE_DEVICES`) or list the GPUs to use (`nvidia-smi -L`)."),
            );
        } else if !gpus.is_empty() {
            if let Some(bad) = entries
                .iter()
                .position(|(_, e)| matches!(e, Entry::Missing(_)))
            {
                let name = &entries[bad].0;
                let (msg, sev) = if bad == 0 {
                    (
                        format!(
                            "CUDA_VISIBLE_DEVICES={v} names GPU {name}, which does not exist ({} GPU(s): {}): CUDA sees no GPU",
                            gpus.len(),
                            listing(gpus)
                        ),
                        Severity::Error,
                    )
                } else {
                    (
                        format!(
                            "CUDA_VISIBLE_DEVICES={v} names GPU {name}, which does not exist: CUDA stops there and sees only {}",
                            entries[..bad]
                                .iter()
                                .map(|(n, _)| n.as_str())
                                .collect::<Vec<_>>()
                                .join(",")
                        ),
                        Severity::Warning,
                    )
                };
                out.push(
                    CheckResult::problem(&META, msg)
                        .severity(sev)
                        .evidence(evidence.clone())
                        .fix("Name GPUs that exist (`nvidia-smi -L` lists indices and UUIDs), preferably by UUID."),
                );
            } else {
                // Indices on a host with different models: CUDA's FASTEST_FIRST order is not
                // nvidia-smi's PCI order unless CUDA_DEVICE_ORDER=PCI_BUS_ID.
                let uses_index = entries.iter().any(|(n, _)| n.parse::<i64>().is_ok());
                let mut models: Vec<&str> = gpus.iter().map(|g| g.name.as_str()).collect();
                models.sort();
                models.dedup();
                let order = r.env("CUDA_DEVICE_ORDER");
                if let Some(o) = &order {
                    evidence.push(Evidence::env(format!("CUDA_DEVICE_ORDER={o}")));
                }
                if uses_index && models.len() > 1 && order.as_deref() != Some("PCI_BUS_ID") {
                    out.push(
                        CheckResult::problem(
                            &META,
                            format!(
                                "CUDA_VISIBLE_DEVICES={v} uses indices on a host with different GPU models ({}) without CUDA_DEVICE_ORDER=PCI_BUS_ID: CUDA numbers GPUs fastest first, nvidia-smi by PCI bus, so the index may select another GPU than nvidia-smi shows",
                                models.join(", ")
                            ),
                        )
                        .severity(Severity::Warning)
                        .evidence(evidence.clone())
                        .fix("Set CUDA_DEVICE_ORDER=PCI_BUS_ID, or name the GPUs by UUID (`nvidia-smi -L`)."),
                    );
                }
            }
        }
    }
    // Inside a container NVIDIA_VISIBLE_DEVICES names the GPUs the toolkit injected; UUIDs can
    // be matched against what the container sees (indices are the host's and cannot).
    if cx.env.container.is_some() {
        if let Some(v) = r.env("NVIDIA_VISIBLE_DEVICES") {
            looked.push(format!("NVIDIA_VISIBLE_DEVICES={v}"));
            let t = v.trim();
            if !["all", "none", "void", ""].contains(&t) && !gpus.is_empty() {
                let missing: Vec<String> = resolve(t, gpus)
                    .into_iter()
                    .filter(|(n, e)| {
                        matches!(e, Entry::Missing(_))
                            && (n.starts_with("GPU-") || n.starts_with("MIG-"))
                    })
                    .map(|(n, _)| n)
                    .collect();
                if !missing.is_empty() {
                    out.push(
                        CheckResult::problem(
                            &META,
                            format!(
                                "NVIDIA_VISIBLE_DEVICES={v} names {} that this container does not see",
                                missing.join(", ")
                            ),
                        )
                        .severity(Severity::Warning)
                        .evidence([
                            Evidence::env(format!("NVIDIA_VISIBLE_DEVICES={v}")),
                            Evidence::note(format!("driver: {} GPU(s): {}", gpus.len(), listing(gpus))),
                        ])
                        .fix("Start the container with the GPUs it should use (`--gpus '\"device=UUID\"'`); the variable is read when the container is created."),
                    );
                }
            }
        }
    }
    if out.len() == before {
        out.push(CheckResult::ok(
            &META,
            if looked.is_empty() {
                "CUDA_VISIBLE_DEVICES is not set: CUDA sees every GPU".to_string()
            } else {
                format!("{} name GPUs that exist", looked.join(", "))
            },
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(index: u32, name: &str, uuid: &str) -> HostGpu {
        HostGpu {
            index: Some(index),
            name: name.into(),
            uuid: Some(uuid.into()),
            pci_bus_id: None,
            cc: None,
            datacenter: None,
            mig_mode: None,
            mig_pending: None,
            mig_devices: vec![format!("  MIG 3g.71gb Device 0: (UUID: MIG-5c89e0a2-1111)")],
            memory_mib: None,
            persistence_mode: None,
            ecc_mode: None,
            minor: None,
        }
    }

    #[test]
    fn entries_resolve_by_index_uuid_prefix_and_mig() {
        let g = vec![gpu(0, "NVIDIA H200", "GPU-1e22f56e-bc1a")];
        assert_eq!(resolve("0", &g), vec![("0".into(), Entry::Gpu(0))]);
        assert_eq!(resolve("GPU-1e22", &g)[0].1, Entry::Gpu(0));
        assert_eq!(resolve("MIG-5c89e0a2-1111", &g)[0].1, Entry::Gpu(0));
        assert_eq!(resolve("1", &g)[0].1, Entry::Missing("1".into()));
        assert_eq!(resolve("-1", &g)[0].1, Entry::Missing("-1".into()));
        assert!(resolve(" , ", &g).is_empty());
    }
}
