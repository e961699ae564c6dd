//! The dynamic loader's configuration: `/etc/ld.so.conf` and the files it includes (usually
//! `/etc/ld.so.conf.d/*.conf`), parsed and expanded as glibc's ldconfig does.

use super::path::{canonical, join, parent};
use super::LoaderFs;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum LdConfEntry {
    Dir(String),
    Include(String),
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LdSoConf {
    pub entries: Vec<LdConfEntry>,
}

/// Parse one config file as glibc's `parse_conf` does: `#` starts a comment; `include` takes
/// whitespace-separated patterns; `hwcap` lines are ignored; anything else is one directory
/// (a trailing `=TYPE` of libc5 days is dropped).
pub fn parse_ld_so_conf(data: &[u8]) -> LdSoConf {
    let s = String::from_utf8_lossy(data);
    let mut entries = Vec::new();
    for line in s.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut words = line.split_whitespace();
        match words.next() {
            Some("include") => {
                entries.extend(words.map(|w| LdConfEntry::Include(w.to_string())));
            }
            Some("hwcap") => {}
            _ => {
                let dir = line.split('=').next().unwrap_or(line).trim();
                let dir = dir.trim_end_matches('/');
                if !dir.is_empty() {
                    entries.push(LdConfEntry::Dir(dir.to_string()));
                } else if line.starts_with('/') {
                    entries.push(LdConfEntry::Dir("/".to_string()));
                }
            }
        }
    }
    LdSoConf { entries }
}

/// Includes nest at most this deep (ldconfig has no limit; a cycle is cut by the seen set).
pub const MAX_INCLUDE_DEPTH: usize = 8;

/// Paths matching an absolute glob pattern, sorted as glob(3) returns them: each component
/// with a wildcard is matched against the names of the directory before it (`*` never
/// crosses a `/`).
pub fn glob(fs: &dyn LoaderFs, pattern: &str) -> Vec<String> {
    let mut found = vec![String::from("/")];
    for comp in pattern.split('/').filter(|c| !c.is_empty()) {
        let wild = comp.contains(['*', '?', '[']);
        let matcher = wild
            .then(|| globset::Glob::new(comp).ok().map(|g| g.compile_matcher()))
            .flatten();
        let mut next = Vec::new();
        for dir in &found {
            match &matcher {
                Some(m) => {
                    let mut names = fs.list_dir(&canonical(fs, dir));
                    // glob(3): a leading `.` is matched only by a pattern that starts with one.
                    let hidden_ok = comp.starts_with('.');
                    names.retain(|n| (hidden_ok || !n.starts_with('.')) && m.is_match(n));
                    next.extend(names.into_iter().map(|n| join(dir, &n)));
                }
                None if wild => {}
                None => next.push(join(dir, comp)),
            }
        }
        found = next;
    }
    found.sort();
    found.dedup();
    found
}

/// The directories the loader's cache is built from, in ldconfig's order: `root`'s lines in
/// order, each `include` pattern's matches sorted (relative patterns against the including
/// file's directory), each file read once; with the file that named each directory,
/// duplicates dropped after their first appearance.
pub fn search_dirs(fs: &dyn LoaderFs, root: &str) -> Vec<(String, String)> {
    fn visit(
        fs: &dyn LoaderFs,
        file: &str,
        depth: usize,
        seen_files: &mut std::collections::BTreeSet<String>,
        out: &mut Vec<(String, String)>,
    ) {
        if depth > MAX_INCLUDE_DEPTH {
            return;
        }
        let real = canonical(fs, file);
        let Some(conf) = fs.ld_conf(&real) else {
            return;
        };
        if !seen_files.insert(real) {
            return;
        }
        for e in &conf.entries {
            match e {
                LdConfEntry::Dir(d) => out.push((d.clone(), file.to_string())),
                LdConfEntry::Include(pat) => {
                    let full = if pat.starts_with('/') {
                        pat.clone()
                    } else {
                        join(parent(file), pat)
                    };
                    for m in glob(fs, &full) {
                        visit(fs, &m, depth + 1, seen_files, out);
                    }
                }
            }
        }
    }
    let mut out = Vec::new();
    visit(fs, root, 0, &mut Default::default(), &mut out);
    let mut seen = std::collections::BTreeSet::new();
    out.retain(|(d, _)| seen.insert(d.clone()));
    out
}

/// [`search_dirs`] from `/etc/ld.so.conf`; where that file is missing (some minimal systems),
/// the `/etc/ld.so.conf.d/*.conf` files in order.
pub fn system_search_dirs(fs: &dyn LoaderFs) -> Vec<(String, String)> {
    const ROOT: &str = "/etc/ld.so.conf";
    if fs.ld_conf(&canonical(fs, ROOT)).is_some() {
        return search_dirs(fs, ROOT);
    }
    let mut out: Vec<(String, String)> = Vec::new();
    for f in glob(fs, "/etc/ld.so.conf.d/*.conf") {
        for d in search_dirs(fs, &f) {
            if !out.iter().any(|(x, _)| *x == d.0) {
                out.push(d);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loader::MemFs as Mem;

    #[test]
    fn debian_style() {
        let c = parse_ld_so_conf(b"include /etc/ld.so.conf.d/*.conf\n\n");
        assert_eq!(
            c.entries,
            vec![LdConfEntry::Include("/etc/ld.so.conf.d/*.conf".into())]
        );
        // nvidia/cuda images' etc/ld.so.conf.d/000_cuda.conf and a comment-laden file.
        let c = parse_ld_so_conf(
            b"/usr/local/cuda/targets/x86_64-linux/lib\n# libc default configuration\n/usr/local/lib # trailing\nhwcap 0 nosegneg\n/usr/lib64/=ELF\n",
        );
        assert_eq!(
            c.entries,
            vec![
                LdConfEntry::Dir("/usr/local/cuda/targets/x86_64-linux/lib".into()),
                LdConfEntry::Dir("/usr/local/lib".into()),
                LdConfEntry::Dir("/usr/lib64".into()),
            ]
        );
    }

    #[test]
    fn includes_expand_in_order_once() {
        let fs = Mem {
            files: vec![
                (
                    "/etc/ld.so.conf",
                    "/first\ninclude /etc/ld.so.conf.d/*.conf\n/last\n",
                ),
                ("/etc/ld.so.conf.d/b.conf", "/b\ninclude ../ld.so.conf\n"),
                ("/etc/ld.so.conf.d/a.conf", "/a\n/first\n"),
                ("/etc/ld.so.conf.d/.hidden.conf", "/hidden\n"),
            ],
            links: vec![],
        };
        let dirs: Vec<String> = search_dirs(&fs, "/etc/ld.so.conf")
            .into_iter()
            .map(|(d, _)| d)
            .collect();
        assert_eq!(dirs, ["/first", "/a", "/b", "/last"]);
    }

    #[test]
    fn includes_through_links_and_wildcard_directories() {
        let fs = Mem {
            files: vec![
                ("/etc/ld.so.conf", "include ld.so.conf.d/*/*.conf\n"),
                ("/opt/conf/x/cuda.conf", "/usr/local/cuda/lib64\n"),
                ("/etc/ld.so.conf.d/y/nccl.conf", "/opt/nccl/lib\n"),
            ],
            // A conf.d subdirectory that is a link elsewhere (alternatives-style).
            links: vec![("/etc/ld.so.conf.d/x", "/opt/conf/x")],
        };
        let dirs: Vec<String> = system_search_dirs(&fs)
            .into_iter()
            .map(|(d, _)| d)
            .collect();
        assert_eq!(dirs, ["/usr/local/cuda/lib64", "/opt/nccl/lib"]);
    }

    #[test]
    fn only_the_conf_d_directory() {
        let fs = Mem {
            files: vec![
                ("/etc/ld.so.conf.d/b.conf", "/b\n"),
                ("/etc/ld.so.conf.d/a.conf", "/a\n/b\n"),
            ],
            links: vec![],
        };
        let dirs: Vec<String> = system_search_dirs(&fs)
            .into_iter()
            .map(|(d, _)| d)
            .collect();
        assert_eq!(dirs, ["/a", "/b"]);
    }
}
