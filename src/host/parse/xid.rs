//! NVRM Xid lines of the kernel log, graded by code after NVIDIA's Xid catalogue
//! (https://docs.nvidia.com/deploy/xid-errors/): a GPU that fell off the bus or lost data to
//! an uncorrectable ECC error needs a reset or service, while an application's own fault
//! (an illegal address, a killed context) leaves the GPU healthy.

/// How bad an Xid is for the GPU, by the catalogue's cause and action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XidClass {
    /// Hardware, firmware or driver failure: the GPU needs a reset, a reboot or service.
    Fatal,
    /// Usually the application's own fault; the GPU stays usable.
    Application,
    /// Neither of the above, or a code gpulint does not know: worth a look.
    Other,
}

/// Codes the catalogue resolves with a GPU reset, a node reboot or hardware service:
/// 48 double-bit ECC, 61/62 internal micro-controller breakpoint/halt, 64 ECC page retirement
/// or row-remapper recording failure, 74 NVLink error, 79 fallen off the bus, 94 contained /
/// 95 uncontained ECC error, 119/120 GSP RPC timeout / GSP error, 121 C2C link error,
/// 140 unrecovered ECC error.
const FATAL: &[u32] = &[48, 61, 62, 64, 74, 79, 94, 95, 119, 120, 121, 140];

/// Codes the catalogue attributes first to the application: 13 graphics engine exception,
/// 31 GPU memory page fault, 43 GPU stopped processing, 45 preemptive cleanup (a context
/// killed by the user or after an earlier error).
const APPLICATION: &[u32] = &[13, 31, 43, 45];

pub fn class(code: u32) -> XidClass {
    if FATAL.contains(&code) {
        XidClass::Fatal
    } else if APPLICATION.contains(&code) {
        XidClass::Application
    } else {
        XidClass::Other
    }
}

/// One Xid line: its text from `NVRM: Xid` on, its code and the PCI address it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Xid {
    pub line: String,
    pub code: u32,
    /// (domain, bus, device) of `(PCI:0000:3b:00)`; the function is not part of it.
    pub pci: Option<(u32, u32, u32)>,
}

pub fn xids(log: &str) -> Vec<Xid> {
    log.lines()
        .filter_map(|l| {
            let rest = l[l.find("NVRM: Xid")?..].trim();
            let (head, after) = rest.split_once("):")?;
            let code = after.trim().split([',', ' ']).next()?.parse().ok()?;
            let pci = head
                .split_once("PCI:")
                .and_then(|(_, a)| pci_address(a.trim()));
            Some(Xid {
                line: rest.to_string(),
                code,
                pci,
            })
        })
        .collect()
}

/// `0000:3b:00`, `0000:3b:00.0` or nvidia-smi's `00000000:3B:00.0` as (domain, bus, device).
pub fn pci_address(s: &str) -> Option<(u32, u32, u32)> {
    let mut parts = s.trim().split(':');
    let domain = u32::from_str_radix(parts.next()?, 16).ok()?;
    let bus = u32::from_str_radix(parts.next()?, 16).ok()?;
    let dev = parts.next()?;
    let dev = dev.split('.').next()?;
    let dev = u32::from_str_radix(dev, 16).ok()?;
    if parts.next().is_some() {
        return None;
    }
    Some((domain, bus, dev))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grades_by_catalogue_code() {
        for c in [48, 79, 94, 95, 119, 120] {
            assert_eq!(class(c), XidClass::Fatal, "Xid {c}");
        }
        for c in [13, 31, 43, 45] {
            assert_eq!(class(c), XidClass::Application, "Xid {c}");
        }
        assert_eq!(class(92), XidClass::Other);
    }

    #[test]
    fn reads_code_and_pci_address() {
        let x = xids("[81234.5] NVRM: Xid (PCI:0000:3b:00): 48, pid=1234, name=python, DBE (double bit error) ECC error\n\
[ 12.3] NVRM: Xid (PCI:0000:00:06.0): 79, pid=0, GPU has fallen off the bus.\n\
[ 1.0] NVRM: loading NVIDIA UNIX Open Kernel Module\n");
        assert_eq!(x.len(), 2);
        assert_eq!((x[0].code, x[0].pci), (48, Some((0, 0x3b, 0))));
        assert!(x[0].line.starts_with("NVRM: Xid (PCI:0000:3b:00): 48"));
        assert_eq!((x[1].code, x[1].pci), (79, Some((0, 0, 6))));
        assert_eq!(pci_address("00000000:3B:00.0"), Some((0, 0x3b, 0)));
        assert_eq!(pci_address("garbage"), None);
    }
}
