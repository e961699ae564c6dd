//! What files are. Detectors are thin glue around pure parsers: each names the paths it wants
//! and turns the bytes of those files into [`Fact`]s. ELF files are found by sniffing the
//! first bytes of every regular file, not by path.
//!
//! One file per detector: the pure parser (bytes → facts, unit-tested on real file texts) sits
//! next to its `Detector` glue (path globs + a version). [`detectors`] is the one list.
//! Facts are attached to the node they were read from; `inventory` joins them up (a
//! dist-info's METADATA with its sibling WHEEL and RECORD, a library file with the RECORD
//! that owns it, …).

pub mod conda;
pub mod cuda_toolkit;
pub mod dpkg;
pub mod elf;
pub mod glibc;
pub mod ld_so_conf;
pub mod nvidia_tool;
pub mod ptx_file;
pub mod python_dist;
pub mod pyvenv;
pub mod rpmdb;
pub mod torch_version;

use crate::vocab::ImagePath;
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};

/// A fact about one file's content. Serializable: layer results are cached as JSON.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "fact", rename_all = "snake_case")]
pub enum Fact {
    Elf(elf::ElfFacts),
    /// A `*.dist-info/METADATA` or `*.egg-info/PKG-INFO` (or a bare `*.egg-info` file).
    PythonDist(python_dist::DistMetadata),
    /// A `*.dist-info/WHEEL`: its `Tag:` lines.
    WheelTags(python_dist::WheelInfo),
    /// A `*.dist-info/RECORD`: the shared objects it installed, relative to
    /// the site-packages directory (as written in RECORD, `..` included).
    DistRecord(python_dist::DistRecord),
    /// `torch/version.py` and friends: the version and the CUDA/HIP a build targets.
    ModuleVersion(torch_version::ModuleVersion),
    /// `conda-meta/<name>-<version>-<build>.json`.
    CondaMeta(conda::CondaMeta),
    /// `var/lib/dpkg/status` or one `var/lib/dpkg/status.d/<pkg>` file.
    DpkgStatus(dpkg::DpkgStatus),
    /// `cuda-X.Y/version.json` or `version.txt`.
    CudaToolkitVersion(cuda_toolkit::ToolkitVersion),
    /// The glibc release read from `libc.so.6`.
    Glibc(glibc::GlibcInfo),
    /// A virtual environment's `pyvenv.cfg`.
    Pyvenv(pyvenv::PyvenvCfg),
    /// `etc/ld.so.conf` or one `etc/ld.so.conf.d/*.conf`: directories and includes, in order.
    LdSoConf(ld_so_conf::LdSoConf),
    /// `rpmdb.sqlite`: the installed rpm packages.
    RpmDb(rpmdb::RpmDb),
    /// A standalone `*.ptx` file: its module header.
    PtxFile(elf::PtxHeader),
    /// triton's bundled `ptxas` / `ptxas-blackwell`: the CUDA release of its banner. Read by
    /// the walker (like ELF files), streaming the whole file: see `nvidia_tool`.
    NvidiaTool(nvidia_tool::ToolVersion),
}

/// A content detector, selected by path.
pub trait Detector: Send + Sync {
    fn name(&self) -> &'static str;
    /// Bumped when the detector's output changes, so cached layer results are recomputed.
    fn version(&self) -> u32;
    /// In-image paths it reads (`*` never crosses a `/`, `**/` is any number of leading
    /// directories). All detectors' globs are matched at once by [`Detectors`].
    fn globs(&self) -> &[&'static str];
    /// A further test on a path the globs matched.
    fn accept(&self, _path: &ImagePath) -> bool {
        true
    }
    /// At most this many bytes are read; larger files get the first `max_bytes` and a warning.
    fn max_bytes(&self) -> u64 {
        4 << 20
    }
    /// Reads only the head of a file by design: a larger file is no reason to warn.
    fn head_only(&self) -> bool {
        false
    }
    fn detect(&self, path: &ImagePath, data: &[u8]) -> Result<Vec<Fact>, String>;
}

/// The detectors of one walk, their globs compiled into one [`GlobSet`] so each path in a
/// layer is matched once (syft's `WithParserByGlobs` selection, Trivy's analyzer group).
pub struct Detectors {
    list: Vec<Box<dyn Detector>>,
    globs: GlobSet,
    /// For each glob of `globs`, the index of its detector in `list`.
    owner: Vec<usize>,
}

impl Detectors {
    pub fn new(list: Vec<Box<dyn Detector>>) -> Detectors {
        let mut b = GlobSetBuilder::new();
        let mut owner = Vec::new();
        for (i, d) in list.iter().enumerate() {
            for p in d.globs() {
                // The patterns are constants of the detector; a bad one is a bug caught by
                // its glob test, so it is skipped here rather than panicking at run time.
                if let Ok(g) = GlobBuilder::new(p).literal_separator(true).build() {
                    b.add(g);
                    owner.push(i);
                }
            }
        }
        let globs = b.build().unwrap_or_else(|_| GlobSet::empty());
        Detectors { list, globs, owner }
    }

    /// The detectors that read the file at `path`, in their list order.
    pub fn wanting(&self, path: &ImagePath) -> Vec<&dyn Detector> {
        let mut hits: Vec<usize> = self
            .globs
            .matches(path.as_str())
            .into_iter()
            .map(|g| self.owner[g])
            .collect();
        hits.sort_unstable();
        hits.dedup();
        hits.into_iter()
            .map(|i| self.list[i].as_ref())
            .filter(|d| d.accept(path))
            .collect()
    }

    /// No detector: a walk that records entries only.
    pub fn none() -> Detectors {
        Detectors::new(Vec::new())
    }

    pub fn iter(&self) -> impl Iterator<Item = &dyn Detector> {
        self.list.iter().map(|d| d.as_ref())
    }
}

/// A path-selected detector as data (syft's `WithParserByGlobs`, Trivy's analyzers): the paths
/// it reads, how much of each, and the glue into its pure parser. Each detector module
/// declares one `DETECTOR`; [`TABLE`] lists them.
pub struct DetectorSpec {
    pub name: &'static str,
    /// Bumped when the detector's output changes, so cached layer results are recomputed.
    pub version: u32,
    /// In-image paths it reads (`*` never crosses a `/`, `**/` is any number of leading
    /// directories).
    pub globs: &'static [&'static str],
    /// At most this many bytes are read; larger files get the first `max_bytes` and a warning.
    pub max_bytes: u64,
    /// What it needs is always in the first `max_bytes`: larger files are read without a
    /// warning.
    pub head_only: bool,
    /// A further test on a path the globs matched; None: the globs decide.
    pub accept: Option<fn(&ImagePath) -> bool>,
    /// Bytes of one file → facts.
    pub parse: fn(&ImagePath, &[u8]) -> Result<Vec<Fact>, String>,
}

/// Every path-selected detector, in a fixed order. ELF/fatbin files are not selected by path:
/// the walker sniffs content and calls `detect::elf` (walk/content.rs).
pub const TABLE: &[&DetectorSpec] = &[
    &python_dist::DETECTOR,
    &torch_version::DETECTOR,
    &conda::DETECTOR,
    &dpkg::DETECTOR,
    &rpmdb::DETECTOR,
    &cuda_toolkit::DETECTOR,
    &glibc::DETECTOR,
    &pyvenv::DETECTOR,
    &ld_so_conf::DETECTOR,
    &ptx_file::DETECTOR,
];

/// A [`DetectorSpec`] as a [`Detector`].
pub struct TableDetector(&'static DetectorSpec);

impl TableDetector {
    pub fn new(spec: &'static DetectorSpec) -> TableDetector {
        TableDetector(spec)
    }
}

impl Detector for TableDetector {
    fn name(&self) -> &'static str {
        self.0.name
    }
    fn version(&self) -> u32 {
        self.0.version
    }
    fn globs(&self) -> &[&'static str] {
        self.0.globs
    }
    fn accept(&self, path: &ImagePath) -> bool {
        self.0.accept.is_none_or(|ok| ok(path))
    }
    fn max_bytes(&self) -> u64 {
        self.0.max_bytes
    }
    fn head_only(&self) -> bool {
        self.0.head_only
    }
    fn detect(&self, path: &ImagePath, data: &[u8]) -> Result<Vec<Fact>, String> {
        (self.0.parse)(path, data)
    }
}

/// Every path-selected detector of [`TABLE`], ready to run.
pub fn detectors() -> Detectors {
    Detectors::new(
        TABLE
            .iter()
            .map(|s| Box::new(TableDetector::new(s)) as Box<dyn Detector>)
            .collect(),
    )
}

/// Build a glob set over in-image paths (relative, `/`-separated), as [`Detectors`] does.
pub(crate) fn glob_set(patterns: &[&str]) -> GlobSet {
    let mut b = GlobSetBuilder::new();
    for p in patterns {
        if let Ok(g) = GlobBuilder::new(p).literal_separator(true).build() {
            b.add(g);
        }
    }
    b.build().unwrap_or_else(|_| GlobSet::empty())
}

/// Text of a file, lossily decoded (dist metadata and conf files are UTF-8 in practice; a
/// stray byte must not lose the whole file).
pub(crate) fn text(data: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(data)
}

#[cfg(test)]
pub(crate) mod testutil {
    use super::*;

    pub(crate) fn p(s: &str) -> ImagePath {
        ImagePath::new(s).expect("test path")
    }

    /// Assert which of `paths` a detector asks for.
    pub(crate) fn assert_wants(spec: &'static DetectorSpec, yes: &[&str], no: &[&str]) {
        let set = Detectors::new(vec![Box::new(TableDetector::new(spec))]);
        let wants = |path: &str| !set.wanting(&p(path)).is_empty();
        for y in yes {
            assert!(wants(y), "{} should want {y}", spec.name);
        }
        for n in no {
            assert!(!wants(n), "{} should not want {n}", spec.name);
        }
    }

    /// Untrusted bytes: every detector, on garbage and on every prefix of real files it
    /// wants, returns facts or an error and never panics.
    #[test]
    fn detectors_never_panic_on_bad_input() {
        let real: &[(&str, &[u8])] = &[
            (
                "x/site-packages/torch-2.11.0.dist-info/METADATA",
                include_bytes!("../../testdata/python/torch-2.11.0.METADATA"),
            ),
            (
                "x/site-packages/torch/version.py",
                include_bytes!("../../testdata/python/torch-2.11.0+cu130.version.py"),
            ),
            (
                "usr/local/cuda-12.1/version.json",
                br#"{"cuda":{"version":"12.1.1"},"cuda_cudart":{"version":"12.1.105"}}"#,
            ),
            (
                "opt/conda/conda-meta/x-1-0.json",
                br#"{"name":"x","version":"1","files":["lib/libx.so.1"]}"#,
            ),
            (
                "usr/lib/x86_64-linux-gnu/libc.so.6",
                b"\0GLIBC_2.35\0release version 2.35.\0",
            ),
            (
                "var/lib/dpkg/status",
                b"Package: a\nVersion: 1\nStatus: install ok installed\n\n",
            ),
            (
                "etc/ld.so.conf",
                b"include /etc/ld.so.conf.d/*.conf\n/usr/lib\n",
            ),
            ("x/pyvenv.cfg", b"version = 3.12.3\n"),
            (
                "x/site-packages/cupy/.data/_wheel.json",
                br#"{"cuda": "12.x", "packaging": "pip", "nccl": {"version": "2.25.1"}}"#,
            ),
            (
                "x/site-packages/paddle/version/__init__.py",
                b"full_version = '2.6.2'\ncuda_version = '11.8'\ncudnn_version = '8.6.0'\n",
            ),
        ];
        // A small deterministic byte soup (xorshift).
        let mut x: u32 = 0x9e37_79b9;
        let soup: Vec<u8> = (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                (x & 0xff) as u8
            })
            .collect();
        let ds = detectors();
        for (path, data) in real {
            let path = p(path);
            let d = *ds
                .wanting(&path)
                .first()
                .unwrap_or_else(|| panic!("no detector wants {path}"));
            for n in 0..=data.len() {
                let _ = d.detect(&path, &data[..n]);
            }
            let _ = d.detect(&path, &soup);
            let _ = d.detect(&path, b"\xff\xfe\x00'\"=:");
        }
    }

    #[test]
    fn every_detector_has_a_unique_name() {
        let ds = detectors();
        let mut names: Vec<&str> = ds.iter().map(|d| d.name()).collect();
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(n, names.len());
    }
}
