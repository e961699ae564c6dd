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
