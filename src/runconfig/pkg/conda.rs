//! `conda install` (`mamba`, `micromamba`): packages and channels.

use super::*;

/// conda / mamba / micromamba install or create.
pub fn conda_install(c: &LCmd) -> Option<CondaInstall> {
    let name = c.name();
    if !matches!(name, "conda" | "mamba" | "micromamba") {
        return None;
    }
    let sub = c.words.get(1)?.text.as_str();
    if !matches!(sub, "install" | "create") {
        return None;
    }
    let mut ci = CondaInstall {
        tool: name.to_string(),
        pos: c.pos,
        pkgs: Vec::new(),
        channels: Vec::new(),
    };
    let mut i = 2;
    while i < c.words.len() {
        let t = c.words[i].text.as_str();
        if t == "-c" || t == "--channel" {
            if let Some(v) = c.words.get(i + 1) {
                ci.channels.push(v.text.clone());
            }
            i += 2;
            continue;
        }
        if matches!(t, "-n" | "--name" | "-p" | "--prefix" | "--file" | "-f") {
            i += 2;
            continue;
        }
        if t.starts_with('-') {
            i += 1;
            continue;
        }
        let t = t.split("::").last().unwrap_or(t);
        let end = t.find(['=', '<', '>', '!', ' ']).unwrap_or(t.len());
        let (n, v) = t.split_at(end);
        let spec = v.trim_start_matches(['=', '>', '<']).to_string();
        ci.pkgs.push(CondaPkg {
            name: n.to_ascii_lowercase(),
            cuda: spec.trim_start_matches(['=', '>', '<', '~']).parse().ok(),
            spec,
            pos: c.words[i].pos,
        });
        i += 1;
    }
    Some(ci)
}
