//! Pure parsers for host files and command outputs. Nothing here touches the host: each
//! function takes text and returns facts, so every one is tested on strings.

pub mod dmesg;
pub mod smi;
pub mod topo;
pub mod versions;
pub mod xid;
pub mod xml;

use super::evidence::Source;

/// One `/dev/nvidia*` node as seen by `ls -l` or `stat`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DevNode {
    pub path: String,
    /// `c` char device, `d` directory, `l` symlink, `-` file.
    pub kind: char,
    /// Permission bits (0o777 part).
    pub mode: u32,
    /// Owner and group as numbers when known, names when known.
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub owner: Option<String>,
    pub group: Option<String>,
    pub major: Option<u32>,
    pub minor: Option<u32>,
    /// The evidence line (the `ls -l` line, or one built from `stat`).
    pub line: String,
}

/// The invoking user.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identity {
    pub uid: Option<u32>,
    pub user: Option<String>,
    /// Every group, primary first: (gid, name).
    pub groups: Vec<(Option<u32>, Option<String>)>,
    /// What said so: the `id` command or `/proc/self/status`.
    pub source: Source,
}

/// `/proc/driver/nvidia/version`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcVersion {
    pub version: Option<String>,
    /// `version`, typed.
    pub driver: Option<crate::version::DriverVersion>,
    /// True for "Open Kernel Module", false for the proprietary one.
    pub open: bool,
    /// The NVRM line, for evidence.
    pub line: String,
}

pub fn parse_proc_version(text: &str) -> Option<ProcVersion> {
    let line = text.lines().find(|l| l.starts_with("NVRM version:"))?;
    let version = line
        .split_whitespace()
        .find(|t| {
            t.split('.').count() >= 2
                && t.split('.')
                    .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        })
        .map(String::from);
    Some(ProcVersion {
        driver: version.as_deref().and_then(versions::driver_version),
        version,
        open: line.contains("Open Kernel Module"),
        line: line.trim().to_string(),
    })
}

/// `/proc/driver/nvidia/gpus/<bus>/information`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcGpuInfo {
    pub model: Option<String>,
    pub uuid: Option<String>,
    pub bus_location: Option<String>,
    pub device_minor: Option<u32>,
    pub excluded: Option<bool>,
}

pub fn parse_proc_gpu_information(text: &str) -> ProcGpuInfo {
    let mut g = ProcGpuInfo::default();
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let v = v.trim();
        let val = (!v.is_empty() && v != "N/A").then(|| v.to_string());
        match k.trim() {
            "Model" => g.model = val,
            "GPU UUID" => g.uuid = val,
            "Bus Location" => g.bus_location = val,
            "Device Minor" => g.device_minor = val.and_then(|x| x.parse().ok()),
            "GPU Excluded" => g.excluded = val.map(|x| x.eq_ignore_ascii_case("yes")),
            _ => {}
        }
    }
    g
}

/// Module names of `/proc/modules` (or `lsmod` output: the header line is skipped).
pub fn parse_modules(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| *n != "Module")
        .map(String::from)
        .collect()
}

/// Modules a modprobe.d file blacklists (`blacklist X`, `install X /bin/false|/bin/true`).
pub fn parse_modprobe_blacklist(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let t = line.split('#').next().unwrap_or_default().trim();
        let mut w = t.split_whitespace();
        match (w.next(), w.next(), w.next()) {
            (Some("blacklist"), Some(m), _) => out.push(m.replace('-', "_")),
            (Some("install"), Some(m), Some(cmd))
                if cmd.ends_with("/false") || cmd.ends_with("/true") =>
            {
                out.push(m.replace('-', "_"))
            }
            _ => {}
        }
    }
    out
}

/// Modules the kernel command line blacklists (`modprobe.blacklist=a,b`,
/// `module_blacklist=`, `rd.driver.blacklist=`), plus `nouveau.modeset=0`.
pub fn parse_cmdline_blacklist(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for tok in text.split_whitespace() {
        if let Some((k, v)) = tok.split_once('=') {
            if matches!(
                k,
                "modprobe.blacklist" | "module_blacklist" | "rd.driver.blacklist"
            ) {
                out.extend(v.split(',').map(|m| m.replace('-', "_")));
            }
            if k == "nouveau.modeset" && v == "0" {
                out.push("nouveau".into());
            }
        }
    }
    out
}

/// `rwxr-xr-x` for permission bits.
pub fn mode_string(mode: u32) -> String {
    let mut s = String::new();
    for shift in [6, 3, 0] {
        let b = (mode >> shift) & 7;
        s.push(if b & 4 != 0 { 'r' } else { '-' });
        s.push(if b & 2 != 0 { 'w' } else { '-' });
        s.push(if b & 1 != 0 { 'x' } else { '-' });
    }
    s
}

fn parse_perm(p: &str) -> Option<u32> {
    let b = p.as_bytes();
    if b.len() < 10 {
        return None;
    }
    let mut m = 0;
    for (i, c) in b[1..10].iter().enumerate() {
        if *c != b'-' {
            m |= 1 << (8 - i);
        }
    }
    Some(m)
}

/// `ls -l /dev/nvidia* /dev/nvidia-caps` (names or numbers for owner/group).
pub fn parse_ls_l(text: &str) -> Vec<DevNode> {
    let mut out = Vec::new();
    let mut dir: Option<String> = None;
    for line in text.lines() {
        let t = line.trim();
        if t.is_empty() {
            dir = None;
            continue;
        }
        if let Some(d) = t.strip_suffix(':') {
            if !d.contains(' ') {
                // `ls -l a b dir` prints a directory's entries under a `dir:` header; the
                // header itself shows the directory exists.
                if !out.iter().any(|n: &DevNode| n.path == d) {
                    out.push(DevNode {
                        path: d.to_string(),
                        kind: 'd',
                        mode: 0o755,
                        uid: None,
                        gid: None,
                        owner: None,
                        group: None,
                        major: None,
                        minor: None,
                        line: t.to_string(),
                    });
                }
                dir = Some(d.to_string());
                continue;
            }
        }
        if t.starts_with("total ") {
            continue;
        }
        let tok: Vec<&str> = t.split_whitespace().collect();
        if tok.len() < 7 {
            continue;
        }
        let Some(mode) = parse_perm(tok[0]) else {
            continue;
        };
        let kind = tok[0].chars().next().unwrap_or('-');
        let (major, minor, date_at) = if let Some(m) = tok[4].strip_suffix(',') {
            (m.parse().ok(), tok.get(5).and_then(|x| x.parse().ok()), 6)
        } else if let Some((a, b)) = tok[4].split_once(',') {
            (a.parse().ok(), b.parse().ok(), 5)
        } else {
            (None, None, 5)
        };
        // Three date tokens, then the name (maybe "name -> target").
        let name_tokens = tok.get(date_at + 3..).unwrap_or_default();
        let Some(name) = name_tokens.first() else {
            continue;
        };
        let path = match &dir {
            Some(d) if !name.starts_with('/') => format!("{}/{}", d.trim_end_matches('/'), name),
            _ => name.to_string(),
        };
        // `ls -l /dev/nvidia* /dev/nvidia-caps` lists nvidia-caps twice (the glob matches it).
        if out.iter().any(|n| n.path == path) {
            continue;
        }
        let (uid, owner) = match tok[2].parse::<u32>() {
            Ok(n) => (Some(n), None),
            Err(_) => (None, Some(tok[2].to_string())),
        };
        let (gid, group) = match tok[3].parse::<u32>() {
            Ok(n) => (Some(n), None),
            Err(_) => (None, Some(tok[3].to_string())),
        };
        out.push(DevNode {
            path,
            kind,
            mode,
            uid,
            gid,
            owner,
            group,
            major,
            minor,
            line: t.to_string(),
        });
    }
    out
}

/// `id` output: `uid=1000(alice) gid=1000(alice) groups=1000(alice),44(video)`.
pub fn parse_id(text: &str) -> Option<Identity> {
    fn num_name(s: &str) -> (Option<u32>, Option<String>) {
        match s.split_once('(') {
            Some((n, rest)) => (n.parse().ok(), Some(rest.trim_end_matches(')').to_string())),
            None => (s.parse().ok(), None),
        }
    }
    let mut id = Identity {
        source: Source::Command("id".into()),
        ..Default::default()
    };
    let mut seen = false;
    for part in text.split_whitespace() {
        if let Some(v) = part.strip_prefix("uid=") {
            let (n, name) = num_name(v);
            id.uid = n;
            id.user = name;
            seen = true;
        } else if let Some(v) = part.strip_prefix("gid=") {
            id.groups.insert(0, num_name(v));
        } else if let Some(v) = part.strip_prefix("groups=") {
            for g in v.split(',') {
                let g = num_name(g);
                if !id.groups.contains(&g) {
                    id.groups.push(g);
                }
            }
        }
    }
    seen.then_some(id)
}

/// `/proc/self/status`: Uid (real), Gid and Groups.
pub fn parse_proc_status(text: &str) -> Option<Identity> {
    let mut id = Identity {
        source: Source::File("/proc/self/status".into()),
        ..Default::default()
    };
    let mut seen = false;
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let first = v
            .split_whitespace()
            .next()
            .and_then(|x| x.parse::<u32>().ok());
        match k {
            "Uid" => {
                // The effective uid decides access: the second field.
                id.uid = v
                    .split_whitespace()
                    .nth(1)
                    .and_then(|x| x.parse().ok())
                    .or(first);
                seen = true;
            }
            "Gid" => {
                let g = v
                    .split_whitespace()
                    .nth(1)
                    .and_then(|x| x.parse().ok())
                    .or(first);
                id.groups.insert(0, (g, None));
            }
            "Groups" => {
                for g in v.split_whitespace().filter_map(|x| x.parse().ok()) {
                    if !id.groups.contains(&(Some(g), None)) {
                        id.groups.push((Some(g), None));
                    }
                }
            }
            _ => {}
        }
    }
    seen.then_some(id)
}

/// `nvcc --version` → "13.0.88" (the `V` version), else the `release X.Y` one.
pub fn parse_nvcc_version(text: &str) -> Option<String> {
    let line = text.lines().find(|l| l.contains("release"))?;
    if let Some(v) = line.split_whitespace().find_map(|t| t.strip_prefix('V')) {
        if v.split('.').all(|p| p.parse::<u32>().is_ok()) {
            return Some(v.to_string());
        }
    }
    let after = line.split("release").nth(1)?;
    Some(
        after
            .trim()
            .trim_end_matches(',')
            .split(',')
            .next()?
            .trim()
            .to_string(),
    )
}

/// The CUDA toolkit version a library directory belongs to, from its path
/// (`/usr/local/cuda-12.1/lib64` → "12.1"); "default" for `/usr/local/cuda/...`.
pub fn cuda_dir_version(dir: &str) -> Option<String> {
    for comp in dir.split('/') {
        if let Some(v) = comp.strip_prefix("cuda-") {
            if v.split('.').all(|p| p.parse::<u32>().is_ok()) {
                return Some(v.to_string());
            }
        }
        if comp == "cuda" {
            return Some("default".into());
        }
    }
    None
}

/// The version of a toolkit from its `version.json` (`{"cuda": {"version": "13.0.2"}}`).
pub fn parse_cuda_version_json(text: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    v.get("cuda")
        .and_then(|c| c.get("version"))
        .or_else(|| v.get("cuda_cudart").and_then(|c| c.get("version")))
        .and_then(|x| x.as_str())
        .map(toolkit_version)
}

/// `version.txt` of old toolkits: `CUDA Version 10.2.89`.
pub fn parse_cuda_version_txt(text: &str) -> Option<String> {
    text.split_whitespace()
        .find(|t| t.contains('.') && t.split('.').all(|p| p.parse::<u32>().is_ok()))
        .map(toolkit_version)
}

/// A toolkit version as users name it: CUDA 11.x's version.json puts the build date where the
/// patch goes (`11.8.20220929`), which is `11.8`; a real patch (`12.4.1`) stays.
pub fn toolkit_version(v: &str) -> String {
    let parts: Vec<&str> = v.trim().split('.').collect();
    match parts.as_slice() {
        [major, minor, patch, ..] if patch.len() >= 8 => format!("{major}.{minor}"),
        _ => v.trim().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toolkit_versions_drop_a_build_date() {
        // CUDA 11.8's version.json, as shipped.
        let j = r#"{ "cuda" : { "name" : "CUDA SDK", "version" : "11.8.20220929" } }"#;
        assert_eq!(parse_cuda_version_json(j).as_deref(), Some("11.8"));
        let j = r#"{ "cuda" : { "name" : "CUDA SDK", "version" : "12.4.1" } }"#;
        assert_eq!(parse_cuda_version_json(j).as_deref(), Some("12.4.1"));
        assert_eq!(
            parse_cuda_version_txt("CUDA Version 10.2.89\n").as_deref(),
            Some("10.2.89")
        );
    }

    #[test]
    fn proc_version_open_and_proprietary() {
        let o = parse_proc_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (nixbld@)  \nGCC version:  gcc version 15.3.0 (GCC)\n").unwrap();
        assert!(o.open);
        assert_eq!(o.version.as_deref(), Some("580.159.04"));
        let p = parse_proc_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n").unwrap();
        assert!(!p.open);
        assert_eq!(p.version.as_deref(), Some("535.104.05"));
        assert!(parse_proc_version("garbage").is_none());
    }

    #[test]
    fn ls_l_devices_and_dirs() {
        let t = "crw-rw-rw- 1 root root 195,   0 Nov 30 14:41 /dev/nvidia0\ncrw-rw---- 1 0 44 195,255 Nov 30 14:41 /dev/nvidiactl\n\n/dev/nvidia-caps:\ntotal 0\ncr-------- 1 root root 241, 1 Nov 30 14:41 nvidia-cap1\n\n/dev/nvidia-caps:\ntotal 0\ncr-------- 1 root root 241, 1 Nov 30 14:41 nvidia-cap1\n";
        let n = parse_ls_l(t);
        assert_eq!(n.len(), 4);
        assert_eq!(n[0].path, "/dev/nvidia0");
        assert_eq!(n[0].mode, 0o666);
        assert_eq!((n[0].major, n[0].minor), (Some(195), Some(0)));
        assert_eq!(n[1].gid, Some(44));
        assert_eq!(n[1].mode, 0o660);
        assert_eq!((n[2].path.as_str(), n[2].kind), ("/dev/nvidia-caps", 'd'));
        assert_eq!(n[3].path, "/dev/nvidia-caps/nvidia-cap1");
        assert_eq!(n[3].mode, 0o400);
    }

    #[test]
    fn id_and_status() {
        let i = parse_id("uid=1000(alice) gid=1000(alice) groups=1000(alice),44(video)\n").unwrap();
        assert_eq!(i.uid, Some(1000));
        assert_eq!(i.groups.len(), 2);
        assert_eq!(i.groups[1], (Some(44), Some("video".into())));
        let s = parse_proc_status(
            "Uid:\t1000\t1000\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\nGroups:\t44 1000 \n",
        )
        .unwrap();
        assert_eq!(s.uid, Some(1000));
        assert_eq!(s.groups, vec![(Some(1000), None), (Some(44), None)]);
    }

    #[test]
    fn blacklists_nvcc_ld_xid() {
        assert_eq!(
            parse_modprobe_blacklist("# x\nblacklist nouveau\noptions nouveau modeset=0\ninstall lbm-nouveau /bin/false\n"),
            vec!["nouveau", "lbm_nouveau"]
        );
        assert_eq!(
            parse_cmdline_blacklist("ro modprobe.blacklist=nouveau,x quiet"),
            vec!["nouveau", "x"]
        );
        assert_eq!(
            parse_nvcc_version("Cuda compilation tools, release 13.0, V13.0.88\n").as_deref(),
            Some("13.0.88")
        );
        assert_eq!(
            cuda_dir_version("/usr/local/cuda-12.1/lib64").as_deref(),
            Some("12.1")
        );
        assert_eq!(
            cuda_dir_version("/usr/local/cuda/lib64").as_deref(),
            Some("default")
        );
        assert_eq!(
            parse_cuda_version_json(r#"{"cuda":{"name":"CUDA SDK","version":"13.0.2"}}"#)
                .as_deref(),
            Some("13.0.2")
        );
    }
}
