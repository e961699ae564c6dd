//! Virtual environments: `pyvenv.cfg` (`home = /usr/bin`, `version = 3.12.3`; uv writes
//! `version_info = 3.12.3`).

use super::{text, DetectorSpec, Fact};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PyvenvCfg {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub home: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_system_site_packages: Option<bool>,
}

pub fn parse_pyvenv_cfg(data: &[u8]) -> PyvenvCfg {
    let s = text(data);
    let mut c = PyvenvCfg::default();
    for line in s.lines() {
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().to_string());
        match k.as_str() {
            "version" | "version_info" if c.version.is_none() && !v.is_empty() => {
                c.version = Some(v)
            }
            "home" => c.home = Some(v),
            "include-system-site-packages" => {
                c.include_system_site_packages = Some(v.eq_ignore_ascii_case("true"))
            }
            _ => {}
        }
    }
    c
}

pub const DETECTOR: DetectorSpec = DetectorSpec {
    name: "pyvenv",
    version: 1,
    globs: &["**/pyvenv.cfg"],
    max_bytes: 64 << 10,
    head_only: false,
    accept: None,
    parse: |_, data| Ok(vec![Fact::Pyvenv(parse_pyvenv_cfg(data))]),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::testutil::assert_wants;

    #[test]
    fn venv_and_uv() {
        let c = parse_pyvenv_cfg(
            b"home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.12.3\nexecutable = /usr/bin/python3.12\n",
        );
        assert_eq!(c.version.as_deref(), Some("3.12.3"));
        assert_eq!(c.home.as_deref(), Some("/usr/bin"));
        assert_eq!(c.include_system_site_packages, Some(false));
        let uv = parse_pyvenv_cfg(b"home = /root/.local/share/uv/python/cpython-3.12.8-linux-x86_64-gnu/bin\nimplementation = CPython\nuv = 0.5.11\nversion_info = 3.12.8\ninclude-system-site-packages = false\n");
        assert_eq!(uv.version.as_deref(), Some("3.12.8"));
    }

    #[test]
    fn glob_paths() {
        assert_wants(
            &DETECTOR,
            &["opt/torch/.venv/pyvenv.cfg", "pyvenv.cfg"],
            &["opt/torch/.venv/pyvenv.cfg.bak"],
        );
    }
}
