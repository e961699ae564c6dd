//! The dynamic loader's configuration: `etc/ld.so.conf` and the files it includes (usually
//! `etc/ld.so.conf.d/*.conf`). Each file becomes its directory lines and `include` patterns
//! in order; the inventory expands includes against the image the way ldconfig does (glob,
//! sorted, relative patterns against the including file's directory).

use super::{text, DetectorSpec, Fact};
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
    let s = text(data);
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

/// What include expansion needs from a filesystem: an image's file tree (the inventory) or a
/// host (`gpulint host`). Paths are absolute (`/etc/ld.so.conf.d/cuda.conf`).
pub trait ConfFiles {
    /// The parsed configuration file at `path`, with a key naming the real file (symlinks
    /// resolved) so include cycles end; None when it is missing or not a file.
    fn conf(&self, path: &str) -> Option<(String, LdSoConf)>;
    /// Files matching an absolute glob pattern, sorted as glob(3) returns them.
    fn glob(&self, pattern: &str) -> Vec<String>;
}

/// Includes nest at most this deep (ldconfig has no limit; a cycle is cut by the seen set).
pub const MAX_INCLUDE_DEPTH: usize = 8;

/// The directories the loader's cache is built from, in ldconfig's order: `/etc/ld.so.conf`'s
/// lines in order, each `include` pattern's matches sorted (relative patterns against the
/// including file's directory), each file read once; with the file that named each directory,
/// duplicates dropped after their first appearance. The one implementation behind the image
/// rules' loader model and the host checks.
pub fn search_dirs(files: &dyn ConfFiles, root: &str) -> Vec<(String, String)> {
    fn visit(
        files: &dyn ConfFiles,
        file: &str,
        depth: usize,
        seen_files: &mut std::collections::BTreeSet<String>,
        out: &mut Vec<(String, String)>,
    ) {
        if depth > MAX_INCLUDE_DEPTH {
            return;
        }
        let Some((real, conf)) = files.conf(file) else {
            return;
        };
        if !seen_files.insert(real) {
            return;
        }
        let dir = file.rsplit_once('/').map_or("", |(d, _)| d);
        for e in &conf.entries {
            match e {
                LdConfEntry::Dir(d) => out.push((d.clone(), file.to_string())),
                LdConfEntry::Include(pat) => {
                    let full = if pat.starts_with('/') {
                        pat.clone()
                    } else {
                        format!("{dir}/{pat}")
                    };
                    for m in files.glob(&full) {
                        visit(files, &m, depth + 1, seen_files, out);
                    }
                }
            }
        }
    }
    let mut out = Vec::new();
    visit(files, root, 0, &mut Default::default(), &mut out);
    let mut seen = std::collections::BTreeSet::new();
    out.retain(|(d, _)| seen.insert(d.clone()));
    out
}

pub const DETECTOR: DetectorSpec = DetectorSpec {
    name: "ld-so-conf",
    version: 1,
    globs: &["etc/ld.so.conf", "etc/ld.so.conf.d/*"],
    max_bytes: 256 << 10,
    accept: None,
    parse: |_, data| Ok(vec![Fact::LdSoConf(parse_ld_so_conf(data))]),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::testutil::assert_wants;

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

    struct Mem(Vec<(&'static str, &'static str)>);
    impl ConfFiles for Mem {
        fn conf(&self, path: &str) -> Option<(String, LdSoConf)> {
            let (_, t) = self.0.iter().find(|(p, _)| *p == path)?;
            Some((path.to_string(), parse_ld_so_conf(t.as_bytes())))
        }
        fn glob(&self, pattern: &str) -> Vec<String> {
            let g = globset::Glob::new(pattern).unwrap().compile_matcher();
            let mut v: Vec<String> = self
                .0
                .iter()
                .map(|(p, _)| p.to_string())
                .filter(|p| g.is_match(p))
                .collect();
            v.sort();
            v
        }
    }

    #[test]
    fn includes_expand_in_order_once() {
        let files = Mem(vec![
            (
                "/etc/ld.so.conf",
                "/first\ninclude /etc/ld.so.conf.d/*.conf\n/last\n",
            ),
            ("/etc/ld.so.conf.d/b.conf", "/b\ninclude ../ld.so.conf\n"),
            ("/etc/ld.so.conf.d/a.conf", "/a\n/first\n"),
        ]);
        let dirs: Vec<String> = search_dirs(&files, "/etc/ld.so.conf")
            .into_iter()
            .map(|(d, _)| d)
            .collect();
        assert_eq!(dirs, ["/first", "/a", "/b", "/last"]);
    }

    #[test]
    fn glob_paths() {
        assert_wants(
            &crate::detect::TableDetector::new(&DETECTOR),
            &[
                "etc/ld.so.conf",
                "etc/ld.so.conf.d/000_cuda.conf",
                "etc/ld.so.conf.d/x86_64-linux-gnu.conf",
            ],
            &["etc/ld.so.cache", "etc/ld.so.conf.d/sub/x.conf"],
        );
    }
}
