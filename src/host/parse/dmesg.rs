//! The kernel log's driver messages (dmesg), read into facts.

use crate::version::DriverVersion;

/// The kernel's own report of a client (user-space driver) of another version.
#[derive(Debug, PartialEq)]
pub(crate) struct ApiMismatch {
    pub client: String,
    pub kernel: String,
    pub line: String,
}

/// `NVRM: API mismatch: the client has the version X, but\nNVRM: this kernel module has the
/// version Y.  Please ...` — the message spans several `NVRM:` lines, so they are joined first.
pub(crate) fn parse_api_mismatch(dmesg: &str) -> Option<ApiMismatch> {
    const CLIENT: &str = "API mismatch: the client has the version ";
    const KERNEL: &str = "this kernel module has the version ";
    let joined: String = dmesg
        .lines()
        .filter_map(|l| l.split_once("NVRM:").map(|(_, rest)| rest.trim()))
        .collect::<Vec<_>>()
        .join(" ");
    // The newest report counts: older ones may predate a fix.
    let at = joined.rfind(CLIENT)?;
    let rest = &joined[at + CLIENT.len()..];
    let version = |s: &str| -> Option<String> {
        let v: String = s
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let v = v.trim_end_matches('.').to_string();
        v.parse::<DriverVersion>().ok().map(|_| v)
    };
    let client = version(rest)?;
    let k_at = rest.find(KERNEL)?;
    let kernel = version(&rest[k_at + KERNEL.len()..])?;
    let end = rest[k_at..].find("  ").map_or(rest.len(), |e| k_at + e);
    Some(ApiMismatch {
        line: format!("NVRM: {CLIENT}{}", &rest[..end]),
        client,
        kernel,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_mismatch_is_read_across_nvrm_lines() {
        let dmesg = "[   12.1] nvidia-uvm: Loaded the UVM driver, major device number 510.\n\
[  301.7] NVRM: API mismatch: the client has the version 535.54.03, but\n\
[  301.7] NVRM: this kernel module has the version 530.41.03.  Please\n\
[  301.7] NVRM: make sure that this kernel module and all NVIDIA driver\n\
[  301.7] NVRM: components have the same version.\n";
        let m = parse_api_mismatch(dmesg).expect("mismatch found");
        assert_eq!(m.client, "535.54.03");
        assert_eq!(m.kernel, "530.41.03");
        assert!(m.line.contains("530.41.03"), "{}", m.line);
        assert_eq!(
            parse_api_mismatch("NVRM: loading NVIDIA UNIX x86_64 Kernel Module  580.159.04"),
            None
        );
        assert_eq!(
            parse_api_mismatch("NVRM: API mismatch: the client has the version garbage"),
            None
        );
    }
}
