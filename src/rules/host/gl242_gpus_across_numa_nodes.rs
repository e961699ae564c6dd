//! GL242: GPUs that reach each other only across the CPU sockets (`SYS` in `nvidia-smi topo
//! -m`, no NVLink), or sit on different NUMA nodes: reported for placement, not as a fault.

use super::{CheckResult, HostContext};
use crate::finding::Severity;
use crate::host::evidence::Evidence;
use crate::host::parse::topo::{crosses_sockets, parse_topo_matrix, TopoGpu};
use crate::host::parse::xid::pci_address;
use crate::host::reader::HostCommand;
use crate::rule_meta::{Code, RuleDoc, RuleMeta};
use std::collections::BTreeMap;

pub(crate) static META: RuleMeta = RuleMeta {
    code: Code::new("GL242"),
    name: "gpus-across-numa-nodes",
    default_severity: Severity::Info,
    other_severities: &[],
    summary: "GPUs reach each other only across CPU sockets (SYS, no NVLink)",
    doc: RuleDoc {
        what: "Reads the GPU link matrix of `nvidia-smi topo -m`: a pair of GPUs whose link is \
            `SYS` (`SOC` on old drivers) and not `NV#` connects through PCIe and the CPUs' \
            inter-socket link. Each GPU's NUMA node comes from the matrix's `NUMA Affinity`, \
            else from /sys/bus/pci/devices/<bus>/numa_node (then NVLink is unknown). Info: the \
            host works, a job that spans such GPUs or runs its process on the other socket is \
            slower.",
        why: "Peer-to-peer copies and NCCL collectives between `SYS` GPUs cross the socket \
            interconnect (QPI/UPI, Infinity Fabric) instead of a PCIe switch or NVLink, and a \
            process whose CPU threads and host memory sit on the other NUMA node pays that hop \
            on every host-device copy.",
        example: "Four GPUs, two per socket: `GPU0 and GPU2 connect through SYS (across NUMA \
            nodes 0 and 1, no NVLink)`.",
        fix: "Run a multi-GPU job on the GPUs of one NUMA node (`CUDA_VISIBLE_DEVICES=0,1`) and \
            bind each process to its GPU's node: `numactl --cpunodebind=0 --membind=0 python \
            train.py`.",
        sources: &[
            "https://docs.nvidia.com/deploy/nvidia-smi/index.html",
            "https://man7.org/linux/man-pages/man8/numactl.8.html",
        ],
    },
};

/// NUMA node of each GPU the driver lists, from sysfs (`-1`: the platform has no NUMA).
fn sysfs_numa(cx: &HostContext<'_>) -> Vec<(u32, u32, String)> {
    let mut out = Vec::new();
    for g in &cx.profile.gpus {
        let (Some(index), Some((d, bus, dev))) =
            (g.index, g.pci_bus_id.as_deref().and_then(pci_address))
        else {
            continue;
        };
        let path = format!("/sys/bus/pci/devices/{d:04x}:{bus:02x}:{dev:02x}.0/numa_node");
        if let Some(node) = cx
            .reader
            .read_string(&path)
            .and_then(|t| t.trim().parse::<u32>().ok())
        {
            out.push((index, node, path));
        }
    }
    out
}

/// `node 0: GPU0, GPU1; node 1: GPU2, GPU3`.
fn by_node(numa: &BTreeMap<u32, u32>) -> String {
    let mut nodes: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for (gpu, node) in numa {
        nodes.entry(*node).or_default().push(format!("GPU{gpu}"));
    }
    nodes
        .iter()
        .map(|(n, g)| format!("node {n}: {}", g.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

fn fix(numa: &BTreeMap<u32, u32>) -> String {
    let mut nodes: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for (gpu, node) in numa {
        nodes.entry(*node).or_default().push(*gpu);
    }
    let example = nodes.iter().next().map(|(n, g)| {
        format!(
            " (here: `CUDA_VISIBLE_DEVICES={} numactl --cpunodebind={n} --membind={n} python train.py`)",
            g.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
        )
    });
    format!(
        "Run a job that uses several GPUs on GPUs of one NUMA node, and bind each process to its GPU's node with `numactl --cpunodebind=N --membind=N`{}; where GPUs of both sockets must work together, expect peer copies to cross the socket link (NVLink-bridged GPUs do not).",
        example.unwrap_or_default()
    )
}

pub(crate) fn check(cx: &HostContext<'_>, out: &mut Vec<CheckResult>) {
    let topo_cmd = HostCommand::NvidiaSmiTopoM;
    let matrix: Vec<TopoGpu> = cx
        .reader
        .run(topo_cmd)
        .ok_stdout()
        .map(parse_topo_matrix)
        .unwrap_or_default();
    let gpus = cx.profile.gpus.len().max(matrix.len());
    if gpus < 2 {
        out.push(CheckResult::ok(
            &META,
            "fewer than two GPUs: no GPU pair to place",
        ));
        return;
    }
    if matrix.len() >= 2 {
        let numa: BTreeMap<u32, u32> = matrix
            .iter()
            .filter_map(|g| Some((g.index, g.numa?)))
            .collect();
        let mut pairs = Vec::new();
        let mut evidence = Vec::new();
        for g in &matrix {
            let mut crossing = false;
            for (peer, code) in &g.links {
                // SYS is the pair's one link: NVLink-bridged pairs read NV#.
                if *peer > g.index && crosses_sockets(code) {
                    crossing = true;
                    let nodes = match (numa.get(&g.index), numa.get(peer)) {
                        (Some(a), Some(b)) if a != b => format!("across NUMA nodes {a} and {b}, "),
                        _ => String::new(),
                    };
                    pairs.push(format!(
                        "GPU{} and GPU{peer} connect through {code} ({nodes}no NVLink)",
                        g.index
                    ));
                }
            }
            if crossing {
                evidence.push(Evidence::command(topo_cmd.display(), g.line.clone()));
            }
        }
        if pairs.is_empty() {
            out.push(CheckResult::ok(
                &META,
                format!(
                    "no GPU pair crosses the CPU sockets without NVLink ({})",
                    crate::vocab::count(matrix.len(), "GPU", "GPUs")
                ),
            ));
            return;
        }
        let nodes = if numa.is_empty() {
            String::new()
        } else {
            format!(" (GPUs by NUMA node: {})", by_node(&numa))
        };
        out.push(
            CheckResult::problem(
                &META,
                format!(
                    "{}: a job using both sides copies between them over the CPUs' inter-socket link{nodes}",
                    pairs.join("; ")
                ),
            )
            .evidence(evidence)
            .fix(fix(&numa)),
        );
        return;
    }
    // No link matrix: the NUMA nodes sysfs gives, with NVLink unknown.
    let sys = sysfs_numa(cx);
    if sys.len() < 2 {
        out.push(CheckResult::could_not(
            &META,
            "no `nvidia-smi topo -m` output and no NUMA node in sysfs for the GPUs",
        ));
        return;
    }
    let numa: BTreeMap<u32, u32> = sys.iter().map(|(g, n, _)| (*g, *n)).collect();
    let evidence: Vec<Evidence> = sys
        .iter()
        .map(|(g, n, path)| Evidence::file(path, format!("GPU{g}: NUMA node {n}")))
        .collect();
    let distinct: std::collections::BTreeSet<u32> = numa.values().copied().collect();
    if distinct.len() < 2 {
        out.push(
            CheckResult::ok(
                &META,
                format!(
                    "every GPU is on NUMA node {}",
                    distinct.iter().next().copied().unwrap_or_default()
                ),
            )
            .evidence(evidence),
        );
        return;
    }
    out.push(
        CheckResult::problem(
            &META,
            format!(
                "the GPUs sit on {} NUMA nodes ({}); whether NVLink joins them is unknown without `nvidia-smi topo -m`",
                distinct.len(),
                by_node(&numa)
            ),
        )
        .evidence(evidence)
        .fix(fix(&numa)),
    );
}
