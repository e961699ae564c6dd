//! nvidia-smi outputs: `--query-gpu` CSV, `-q -x` XML, `-q` text, `-L`, and the summary
//! table. Each parser is a pure function from text to [`SmiReport`] / lines.

use super::xml::{self, Element};
use crate::host::command::QUERY_GPU_FIELDS;

/// What nvidia-smi said about one GPU. Every field is optional: old drivers lack some.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SmiGpu {
    pub index: Option<u32>,
    pub name: Option<String>,
    pub uuid: Option<String>,
    pub pci_bus_id: Option<String>,
    pub driver_version: Option<String>,
    /// `compute_cap` ("9.0"): only the `--query-gpu` CSV has it.
    pub compute_cap: Option<String>,
    pub memory_total_mib: Option<u64>,
    /// `BAR1 Memory Usage` Total: the window the CPU and PCIe peers map GPU memory through
    /// (`-q` and `-q -x` only).
    pub bar1_total_mib: Option<u64>,
    pub persistence_mode: Option<String>,
    pub mig_current: Option<String>,
    pub mig_pending: Option<String>,
    pub ecc_current: Option<String>,
    pub minor_number: Option<u32>,
    /// MIG devices (`GI x CI y` or the `-L` line).
    pub mig_devices: Vec<String>,
    /// Health problems seen (uncorrectable ECC counts, pending retirement/remap, recovery
    /// action), each one line of evidence.
    pub health: Vec<String>,
    /// Thermal / power slowdown seen (an active slowdown reason, a temperature at or past the
    /// slowdown threshold), each one line of evidence.
    pub throttle: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SmiReport {
    pub driver_version: Option<String>,
    pub cuda_version: Option<String>,
    pub gpus: Vec<SmiGpu>,
}

fn na(v: &str) -> Option<String> {
    let t = v.trim();
    let bad = t.is_empty()
        || t == "N/A"
        || t.starts_with("[N/A")
        || t.starts_with("[Not Supported")
        || t.starts_with("[Unknown")
        || t.starts_with("[Insufficient");
    (!bad).then(|| t.to_string())
}

fn mib(v: &str) -> Option<u64> {
    v.split_whitespace().next()?.parse().ok()
}

/// `nvidia-smi --query-gpu=… --format=csv[,noheader][,nounits]`. Without a header the
/// columns are taken to be [`QUERY_GPU_FIELDS`] in order.
pub fn parse_query_csv(text: &str) -> Vec<SmiGpu> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty()).peekable();
    let default: Vec<String> = QUERY_GPU_FIELDS.split(',').map(String::from).collect();
    let header: Vec<String> = match lines.peek() {
        Some(first) if first.trim_start().starts_with("index") || first.contains("uuid") => {
            let h = first
                .split(',')
                .map(|c| {
                    c.trim()
                        .split(" [")
                        .next()
                        .unwrap_or_default()
                        .trim()
                        .to_string()
                })
                .collect();
            lines.next();
            h
        }
        _ => default,
    };
    let mut out = Vec::new();
    for line in lines {
        let cols: Vec<&str> = line.split(',').map(str::trim).collect();
        if cols.len() < 2 {
            continue;
        }
        let mut g = SmiGpu::default();
        for (k, v) in header.iter().zip(cols.iter()) {
            let v = na(v);
            match k.as_str() {
                "index" => g.index = v.and_then(|x| x.parse().ok()),
                "name" => g.name = v,
                "uuid" => g.uuid = v,
                "pci.bus_id" => g.pci_bus_id = v,
                "driver_version" => g.driver_version = v,
                "compute_cap" => g.compute_cap = v,
                "memory.total" => g.memory_total_mib = v.and_then(|x| mib(&x)),
                "persistence_mode" => g.persistence_mode = v,
                "mig.mode.current" => g.mig_current = v,
                "mig.mode.pending" => g.mig_pending = v,
                "ecc.mode.current" => g.ecc_current = v,
                _ => {}
            }
        }
        out.push(g);
    }
    out
}

/// Walks the ECC / retirement / remap sections of one GPU, generic over XML and text trees
/// (names normalized to lower_snake_case).
fn health_of(gpu: &Element, out: &mut Vec<String>) {
    fn walk(e: &Element, path: &mut Vec<String>, in_unc: bool, out: &mut Vec<String>) {
        let n = norm(&e.name);
        let unc = in_unc || n.contains("uncorrectable") || n.contains("double_bit");
        path.push(e.name.clone());
        if e.children.is_empty() {
            if unc {
                if let Ok(c) = e.text.trim().parse::<u64>() {
                    if c > 0 {
                        out.push(format!("{}: {c}", path[1..].join("/")));
                    }
                }
            }
        } else {
            for c in &e.children {
                walk(c, path, unc, out);
            }
        }
        path.pop();
    }
    for sec in &gpu.children {
        let n = norm(&sec.name);
        if n == "ecc_errors" {
            walk(sec, &mut Vec::new(), false, out);
        }
        if n == "retired_pages" {
            for c in &sec.children {
                let cn = norm(&c.name);
                if cn.contains("pending") && c.text.trim().eq_ignore_ascii_case("yes") {
                    out.push(format!("{}/{}: Yes", sec.name, c.name));
                }
            }
        }
        if n == "remapped_rows" {
            for c in &sec.children {
                let cn = norm(&c.name);
                if (cn.contains("pending") || cn.contains("failure"))
                    && c.text.trim().eq_ignore_ascii_case("yes")
                {
                    out.push(format!("{}/{}: Yes", sec.name, c.name));
                }
            }
        }
        if n == "gpu_recovery_action" {
            let t = sec.text.trim();
            if !t.is_empty() && t != "None" && t != "N/A" {
                out.push(format!("{}: {t}", sec.name));
            }
        }
    }
}

/// Clock event (throttle) reasons that mean the GPU is being slowed down against the
/// workload's will. Idle, application clocks, sync boost, display clocks and the software power
/// cap (normal at full load) are not.
const SLOWDOWN_REASONS: &[&str] = &[
    "hw_slowdown",
    "hw_thermal_slowdown",
    "hw_power_brake_slowdown",
    "sw_thermal_slowdown",
];

/// Active slowdown reasons and temperatures at/over the slowdown threshold of one GPU, generic
/// over XML (`clocks_event_reasons` / older `clocks_throttle_reasons`, `temperature`) and text
/// trees (`Clocks Event Reasons` / `Clocks Throttle Reasons`, `Temperature`).
fn throttle_of(gpu: &Element, out: &mut Vec<String>) {
    fn walk(e: &Element, section: &str, out: &mut Vec<String>) {
        for c in &e.children {
            let n = norm(&c.name);
            let n = n
                .trim_start_matches("clocks_event_reason_")
                .trim_start_matches("clocks_throttle_reason_");
            if SLOWDOWN_REASONS.contains(&n) && c.text.trim().eq_ignore_ascii_case("active") {
                out.push(format!("{section}/{}: Active", c.name));
            }
            walk(c, section, out);
        }
    }
    for sec in &gpu.children {
        let n = norm(&sec.name);
        if n == "clocks_event_reasons" || n == "clocks_throttle_reasons" {
            walk(sec, &sec.name, out);
        }
        if n == "temperature" {
            let temp = |names: &[&str]| -> Option<(String, i64)> {
                sec.children.iter().find_map(|c| {
                    let cn = norm(&c.name);
                    if !names.contains(&cn.as_str()) {
                        return None;
                    }
                    let v = c.text.split_whitespace().next()?.parse::<i64>().ok()?;
                    Some((c.name.clone(), v))
                })
            };
            // Absolute temperatures (older drivers): current >= slowdown threshold.
            if let (Some((cur_n, cur)), Some((thr_n, thr))) = (
                temp(&["gpu_temp", "gpu_current_temp"]),
                temp(&["gpu_temp_slow_threshold", "gpu_slowdown_temp"]),
            ) {
                if cur >= thr {
                    out.push(format!(
                        "{}: {cur_n} {cur} C is at or over {thr_n} {thr} C",
                        sec.name
                    ));
                }
            }
            // T.Limit (newer drivers): the margin to T.Limit, slowdown at or below its threshold.
            if let (Some((cur_n, cur)), Some((thr_n, thr))) = (
                temp(&["gpu_temp_tlimit", "gpu_t_limit_temp"]),
                temp(&[
                    "gpu_temp_slow_tlimit_threshold",
                    "gpu_slowdown_t_limit_temp",
                ]),
            ) {
                if cur <= thr {
                    out.push(format!(
                        "{}: {cur_n} {cur} C (margin to T.Limit) is at or past {thr_n} {thr} C",
                        sec.name
                    ));
                }
            }
        }
    }
}

fn norm(s: &str) -> String {
    s.trim().to_ascii_lowercase().replace([' ', '-', '.'], "_")
}

/// `nvidia-smi -q -x`.
pub fn parse_xml(text: &str) -> SmiReport {
    let root = xml::parse(text);
    let Some(log) = root.child("nvidia_smi_log") else {
        return SmiReport::default();
    };
    let mut r = SmiReport {
        driver_version: log.text_at(&["driver_version"]),
        cuda_version: log.text_at(&["cuda_version"]),
        gpus: Vec::new(),
    };
    for (i, g) in log.children_named("gpu").enumerate() {
        let mut s = SmiGpu {
            index: Some(i as u32),
            name: g.text_at(&["product_name"]),
            uuid: g.text_at(&["uuid"]),
            pci_bus_id: g
                .attr("id")
                .map(String::from)
                .or_else(|| g.text_at(&["pci", "pci_bus_id"])),
            driver_version: r.driver_version.clone(),
            persistence_mode: g.text_at(&["persistence_mode"]),
            mig_current: g.text_at(&["mig_mode", "current_mig"]),
            mig_pending: g.text_at(&["mig_mode", "pending_mig"]),
            ecc_current: g.text_at(&["ecc_mode", "current_ecc"]),
            minor_number: g.text_at(&["minor_number"]).and_then(|x| x.parse().ok()),
            bar1_total_mib: g
                .text_at(&["bar1_memory_usage", "total"])
                .and_then(|x| mib(&x)),
            memory_total_mib: g
                .text_at(&["fb_memory_usage", "total"])
                .and_then(|x| mib(&x)),
            ..Default::default()
        };
        if let Some(md) = g.child("mig_devices") {
            for d in md.children_named("mig_device") {
                let gi = d.text_at(&["gpu_instance_id"]).unwrap_or_default();
                let ci = d.text_at(&["compute_instance_id"]).unwrap_or_default();
                let idx = d.text_at(&["index"]).unwrap_or_default();
                s.mig_devices
                    .push(format!("MIG device {idx} (GI {gi}, CI {ci})"));
            }
        }
        health_of(g, &mut s.health);
        throttle_of(g, &mut s.throttle);
        r.gpus.push(s);
    }
    r
}

/// `nvidia-smi -q` text, turned into the same kind of tree as the XML (by indentation).
pub fn text_tree(text: &str) -> Element {
    let mut root = Element::default();
    // Stack of (indent, path of child indices from root).
    let mut stack: Vec<(usize, Vec<usize>)> = vec![(0, vec![])];
    fn node_at<'a>(root: &'a mut Element, path: &[usize]) -> &'a mut Element {
        let mut e = root;
        for &i in path {
            e = &mut e.children[i];
        }
        e
    }
    for line in text.lines() {
        if line.trim().is_empty() || line.trim_start().starts_with("===") {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let (key, val) = match line.split_once(" : ").or_else(|| {
            line.trim_end()
                .strip_suffix(':')
                .map(|k| (k, ""))
                .or_else(|| line.split_once(':').filter(|(k, _)| k.trim_end() != *k))
        }) {
            Some((k, v)) => (k.trim().to_string(), v.trim().to_string()),
            None => (line.trim().to_string(), String::new()),
        };
        // Indentation 0 starts at the root; deeper lines attach to the last shallower one.
        while stack.len() > 1 && stack.last().map(|s| s.0).unwrap_or(0) > indent {
            stack.pop();
        }
        let parent_path = stack.last().map(|s| s.1.clone()).unwrap_or_default();
        let parent = node_at(&mut root, &parent_path);
        parent.children.push(Element {
            name: key,
            text: val,
            ..Default::default()
        });
        let mut p = parent_path;
        p.push(parent.children.len() - 1);
        stack.push((indent + 1, p));
    }
    root
}

/// `nvidia-smi -q` text.
pub fn parse_q_text(text: &str) -> SmiReport {
    let root = text_tree(text);
    let mut r = SmiReport {
        driver_version: root.text_at(&["Driver Version"]),
        cuda_version: root.text_at(&["CUDA Version"]),
        gpus: Vec::new(),
    };
    let gpus = root
        .children
        .iter()
        .filter(|c| c.name.starts_with("GPU ") && !c.children.is_empty());
    for (i, g) in gpus.enumerate() {
        let mut s = SmiGpu {
            index: Some(i as u32),
            name: g.text_at(&["Product Name"]),
            uuid: g.text_at(&["GPU UUID"]),
            pci_bus_id: g
                .name
                .strip_prefix("GPU ")
                .map(|x| x.trim().to_string())
                .or_else(|| g.text_at(&["PCI", "Bus Id"])),
            driver_version: r.driver_version.clone(),
            persistence_mode: g.text_at(&["Persistence Mode"]),
            mig_current: g.text_at(&["MIG Mode", "Current"]),
            mig_pending: g.text_at(&["MIG Mode", "Pending"]),
            ecc_current: g.text_at(&["ECC Mode", "Current"]),
            minor_number: g.text_at(&["Minor Number"]).and_then(|x| x.parse().ok()),
            bar1_total_mib: g
                .text_at(&["BAR1 Memory Usage", "Total"])
                .and_then(|x| mib(&x)),
            memory_total_mib: g
                .text_at(&["FB Memory Usage", "Total"])
                .and_then(|x| mib(&x)),
            ..Default::default()
        };
        health_of(g, &mut s.health);
        throttle_of(g, &mut s.throttle);
        r.gpus.push(s);
    }
    r
}

/// One `nvidia-smi -L` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedGpu {
    pub index: u32,
    pub name: String,
    pub uuid: Option<String>,
    /// MIG devices listed under it (the whole line).
    pub mig: Vec<String>,
}

/// `nvidia-smi -L`: `GPU 0: NVIDIA H200 (UUID: GPU-…)` and indented `MIG …` lines.
pub fn parse_list(text: &str) -> Vec<ListedGpu> {
    let mut out: Vec<ListedGpu> = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("GPU ") {
            let Some((idx, rest)) = rest.split_once(':') else {
                continue;
            };
            let Ok(index) = idx.trim().parse() else {
                continue;
            };
            let (name, uuid) = match rest.rsplit_once("(UUID:") {
                Some((n, u)) => (
                    n.trim().to_string(),
                    Some(u.trim().trim_end_matches(')').trim().to_string()),
                ),
                None => (rest.trim().to_string(), None),
            };
            out.push(ListedGpu {
                index,
                name,
                uuid,
                mig: Vec::new(),
            });
        } else if t.starts_with("MIG ") {
            if let Some(last) = out.last_mut() {
                last.mig.push(t.to_string());
            }
        }
    }
    out
}

/// Lines of any nvidia-smi output that show a GPU in trouble: `ERR!`, `GPU requires reset`,
/// `Unable to determine the device handle`, `GPU is lost`.
pub fn error_lines(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| {
            l.contains("ERR!")
                || l.contains("requires reset")
                || l.contains("Unable to determine the device handle")
                || l.contains("GPU is lost")
                || l.contains("Unknown Error")
        })
        .map(|l| l.trim().to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_with_and_without_header() {
        let with = "index, name, uuid, pci.bus_id, driver_version, compute_cap, memory.total [MiB], persistence_mode, mig.mode.current, ecc.mode.current\n0, NVIDIA H200, GPU-1, 00000000:00:06.0, 580.159.04, 9.0, 143771 MiB, Enabled, Disabled, Enabled\n";
        let g = &parse_query_csv(with)[0];
        assert_eq!(g.name.as_deref(), Some("NVIDIA H200"));
        assert_eq!(g.compute_cap.as_deref(), Some("9.0"));
        assert_eq!(g.memory_total_mib, Some(143771));
        assert_eq!(g.bar1_total_mib, None);
        assert_eq!(g.mig_current.as_deref(), Some("Disabled"));
        let without = "0, Tesla T4, GPU-2, 00000000:00:1E.0, 535.104.05, 7.5, 15360, Disabled, [N/A], Enabled\n";
        let g = &parse_query_csv(without)[0];
        assert_eq!(g.name.as_deref(), Some("Tesla T4"));
        assert_eq!(g.mig_current, None);
        assert_eq!(g.memory_total_mib, Some(15360));
    }

    #[test]
    fn list_with_mig() {
        let l = parse_list("GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-aa)\n  MIG 1g.5gb      Device  0: (UUID: MIG-bb)\nGPU 1: NVIDIA A100-SXM4-40GB (UUID: GPU-cc)\n");
        assert_eq!(l.len(), 2);
        assert_eq!(l[0].uuid.as_deref(), Some("GPU-aa"));
        assert_eq!(l[0].mig.len(), 1);
    }

    #[test]
    fn q_text_tree_nests_by_indent() {
        let t = "Driver Version : 1.2\nGPU 0000:01:00.0\n    Product Name : X\n    MIG Mode\n        Current : Enabled\n        Pending : Disabled\n    Persistence Mode : Enabled\n";
        let r = parse_q_text(t);
        assert_eq!(r.driver_version.as_deref(), Some("1.2"));
        let g = &r.gpus[0];
        assert_eq!(g.name.as_deref(), Some("X"));
        assert_eq!(g.mig_current.as_deref(), Some("Enabled"));
        assert_eq!(g.mig_pending.as_deref(), Some("Disabled"));
        assert_eq!(g.persistence_mode.as_deref(), Some("Enabled"));
    }

    /// The real H200 capture's BAR1 and framebuffer sizes, from both detailed reports.
    #[test]
    fn bar1_and_fb_totals_of_the_h200_capture() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/testdata/host/h200/.gpulint-host/commands"
        );
        let text = std::fs::read_to_string(format!("{dir}/nvidia-smi-q.txt")).unwrap();
        let xml = std::fs::read_to_string(format!("{dir}/nvidia-smi-q.xml")).unwrap();
        for g in [&parse_q_text(&text).gpus[0], &parse_xml(&xml).gpus[0]] {
            assert_eq!(g.bar1_total_mib, Some(262144));
            assert_eq!(g.memory_total_mib, Some(143771));
        }
    }
}
