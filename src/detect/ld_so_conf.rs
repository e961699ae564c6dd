//! The detector for the dynamic loader's configuration files (`etc/ld.so.conf`,
//! `etc/ld.so.conf.d/*`): each becomes its directory lines and `include` patterns, parsed by
//! [`crate::loader::conf`]; the inventory expands the includes against the image.

use super::{DetectorSpec, Fact};
pub use crate::loader::conf::{parse_ld_so_conf, LdSoConf};

pub const DETECTOR: DetectorSpec = DetectorSpec {
    name: "ld-so-conf",
    version: 1,
    globs: &["etc/ld.so.conf", "etc/ld.so.conf.d/*"],
    max_bytes: 256 << 10,
    head_only: false,
    accept: None,
    parse: |_, data| Ok(vec![Fact::LdSoConf(parse_ld_so_conf(data))]),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::testutil::assert_wants;

    #[test]
    fn glob_paths() {
        assert_wants(
            &DETECTOR,
            &[
                "etc/ld.so.conf",
                "etc/ld.so.conf.d/000_cuda.conf",
                "etc/ld.so.conf.d/x86_64-linux-gnu.conf",
            ],
            &["etc/ld.so.cache", "etc/ld.so.conf.d/sub/x.conf"],
        );
    }
}
