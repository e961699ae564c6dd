//! OS package installs: apt / yum / dnf / microdnf / zypper / apk.

use super::*;

/// apt-get / apt / yum / dnf / microdnf / zypper / apk install.
pub fn os_install(c: &LCmd) -> Option<OsInstall> {
    let w: Vec<&str> = c.words.iter().map(|w| w.text.as_str()).collect();
    let mut i = 0;
    while w
        .get(i)
        .map(|s| *s == "sudo" || *s == "DEBIAN_FRONTEND=noninteractive")
        .unwrap_or(false)
    {
        i += 1;
    }
    let tool = w.get(i)?.rsplit('/').next()?;
    let subs: &[&str] = match tool {
        "apt-get" | "apt" | "aptitude" => &["install"],
        "yum" | "dnf" | "microdnf" | "tdnf" => &["install"],
        "zypper" => &["install", "in"],
        "apk" => &["add"],
        _ => return None,
    };
    let mut j = i + 1;
    while let Some(s) = w.get(j) {
        if subs.contains(s) {
            break;
        }
        if s.starts_with('-') {
            j += 1;
            continue;
        }
        return None;
    }
    if j >= w.len() {
        return None;
    }
    let mut oi = OsInstall {
        tool: tool.to_string(),
        pos: c.pos,
        pkgs: Vec::new(),
    };
    let mut k = j + 1;
    while k < c.words.len() {
        let t = c.words[k].text.as_str();
        if t.starts_with('-') {
            if matches!(t, "-o" | "--option" | "-t" | "--target-release") {
                k += 1;
            }
            k += 1;
            continue;
        }
        let (n, v) = match t.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (t, None),
        };
        oi.pkgs.push(OsPkg {
            name: n.to_string(),
            cuda: name_cuda(&n.to_ascii_lowercase()),
            built_for_cuda: v
                .as_deref()
                .and_then(|v| v.split("+cuda").nth(1))
                .and_then(|c| c.parse().ok()),
            version: v,
            pos: c.words[k].pos,
        });
        k += 1;
    }
    Some(oi)
}

/// The CUDA release a package name states: `cuda-toolkit-12-1` → 12.1.
fn name_cuda(n: &str) -> Option<CudaVersion> {
    let mut parts = n.rsplitn(3, '-');
    let minor = parts.next()?;
    let major = parts.next()?;
    if !minor.bytes().all(|b| b.is_ascii_digit())
        || !major.bytes().all(|b| b.is_ascii_digit())
        || minor.is_empty()
        || major.is_empty()
    {
        return None;
    }
    format!("{major}.{minor}").parse().ok()
}
