//! `nvidia-smi topo -m`: the GPU-to-GPU link matrix and each GPU's NUMA affinity.
//!
//! The real output is a header row of device labels (`GPU0  GPU1  NIC0  CPU Affinity  NUMA
//! Affinity  GPU NUMA ID`, underlined with ANSI escapes on a terminal), one row per device with
//! a link code per column (`X`, `NV12`, `SYS`, `NODE`, `PHB`, `PXB`, `PIX`; `SOC` on old
//! drivers), the GPU's CPU and NUMA affinity, then a legend. Cells are tab-separated, but copies
//! pasted from a terminal have spaces, so rows are split on whitespace; the CPU affinity can be
//! empty, so the NUMA affinity is counted from the row's end.

/// One GPU row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopoGpu {
    /// `GPU0` → 0.
    pub index: u32,
    /// Link code to each GPU column, by that GPU's index (its own cell is `X`).
    pub links: Vec<(u32, String)>,
    /// `NUMA Affinity` when a number (not `N/A`).
    pub numa: Option<u32>,
    /// The row as printed, for evidence.
    pub line: String,
}

/// Most GPU rows read (a node has at most a few dozen GPUs).
const MAX_GPUS: usize = 256;

/// Removes ANSI escape sequences (`ESC [ … letter`).
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for n in chars.by_ref() {
                    if n.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

fn gpu_label(s: &str) -> Option<u32> {
    s.strip_prefix("GPU")?.parse().ok()
}

/// The GPU rows of the matrix; empty when the text is not a `topo -m` matrix.
pub fn parse_topo_matrix(text: &str) -> Vec<TopoGpu> {
    let lines: Vec<String> = text.lines().map(strip_ansi).collect();
    // The header: the first line whose first word is GPU0 and that names the affinity columns.
    let Some(h) = lines
        .iter()
        .position(|l| l.split_whitespace().next() == Some("GPU0") && l.contains("Affinity"))
    else {
        return Vec::new();
    };
    let header = &lines[h];
    let labels: Vec<&str> = header
        .split_whitespace()
        .take_while(|w| *w != "CPU" && *w != "NUMA")
        .collect();
    let gpu_numa_id_column = header.contains("GPU NUMA ID");
    let mut out = Vec::new();
    for line in &lines[h + 1..] {
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(first) = words.first() else {
            // The blank line before the legend ends the matrix.
            break;
        };
        let Some(index) = gpu_label(first) else {
            continue;
        };
        let cells = &words[1..];
        if cells.len() < labels.len() || out.len() >= MAX_GPUS {
            continue;
        }
        let links = labels
            .iter()
            .zip(cells)
            .filter_map(|(label, cell)| Some((gpu_label(label)?, cell.to_string())))
            .collect();
        let rest = &cells[labels.len()..];
        let numa_at = if gpu_numa_id_column {
            rest.len().checked_sub(2)
        } else {
            rest.len().checked_sub(1)
        };
        let numa = numa_at
            .and_then(|i| rest.get(i))
            .and_then(|w| w.parse().ok());
        out.push(TopoGpu {
            index,
            links,
            numa,
            line: words.join(" "),
        });
    }
    out
}

/// Whether a link code means the path crosses the CPUs' interconnect between NUMA nodes (the
/// legend's `SYS`; `SOC` on drivers before 384).
pub fn crosses_sockets(code: &str) -> bool {
    code == "SYS" || code == "SOC"
}

/// Whether a link code is NVLink (`NV#`: a bonded set of # NVLinks).
pub fn is_nvlink(code: &str) -> bool {
    code.strip_prefix("NV")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real 4-GPU, 2-socket output (tab-separated, two NICs), as posted by its owner.
    const TWO_SOCKETS: &str = "\tGPU0\tGPU1\tGPU2\tGPU3\tmlx4_0\tmlx4_1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tPHB\tSYS\tSYS\tPHB\tSYS\t0-5\t0\nGPU1\tPHB\t X \tSYS\tSYS\tPHB\tSYS\t0-5\t0\nGPU2\tSYS\tSYS\t X \tPHB\tSYS\tPHB\t6-11\t1\nGPU3\tSYS\tSYS\tPHB\t X \tSYS\tPHB\t6-11\t1\nmlx4_0\tPHB\tPHB\tSYS\tSYS\t X \tSYS\t\t\nmlx4_1\tSYS\tSYS\tPHB\tPHB\tSYS\t X \t\t\n\nLegend:\n\n  X    = Self\n  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)\n  NV#  = Connection traversing a bonded set of # NVLinks\n";

    #[test]
    fn reads_links_and_numa_of_a_two_socket_host() {
        let g = parse_topo_matrix(TWO_SOCKETS);
        assert_eq!(g.len(), 4);
        assert_eq!(g[0].numa, Some(0));
        assert_eq!(g[2].numa, Some(1));
        assert_eq!(
            g[0].links,
            vec![
                (0, "X".to_string()),
                (1, "PHB".into()),
                (2, "SYS".into()),
                (3, "SYS".into())
            ]
        );
    }

    #[test]
    fn newer_layout_with_ansi_header_empty_cpu_affinity_and_gpu_numa_id() {
        // Newer drivers add `GPU NUMA ID`; the header is underlined on a terminal; a GPU row
        // can have no CPU affinity (seen on a real 8-GPU node).
        let t = "\x1b[4m\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\nGPU0\t X \tNV18\tPIX\t\t0\t\tN/A\nGPU1\tNV18\t X \tNODE\t56-111\t1\t\tN/A\nNIC0\tPIX\tNODE\t X \n";
        let g = parse_topo_matrix(t);
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].numa, Some(0));
        assert_eq!(g[1].numa, Some(1));
        assert!(is_nvlink(&g[0].links[1].1));
        assert!(!crosses_sockets(&g[0].links[1].1));
    }

    #[test]
    fn space_separated_copy_and_not_a_matrix() {
        let t = "        GPU0    GPU1    CPU Affinity    NUMA Affinity\nGPU0     X      SYS     0-23            0\nGPU1    SYS      X      24-47           1\n";
        let g = parse_topo_matrix(t);
        assert_eq!(g.len(), 2);
        assert!(crosses_sockets(&g[0].links[1].1));
        assert_eq!(g[1].numa, Some(1));
        assert!(parse_topo_matrix("No devices were found\n").is_empty());
        assert!(!is_nvlink("NODE") && is_nvlink("NV4") && !is_nvlink("NV"));
    }
}
