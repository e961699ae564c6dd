//! The glibc dynamic loader, modelled once for every reader: an image's file tree while the
//! inventory is built, the inventory when image rules run, and a host (`gpulint host`).
//!
//! - [`conf`]: `/etc/ld.so.conf` and its includes, in ldconfig's order;
//! - [`path`]: lexical normalisation and symlink resolution of every path component, the way
//!   the kernel resolves what ld.so opens;
//! - [`search`]: the search order for one binary's NEEDED libraries (ld.so(8): DT_RPATH,
//!   LD_LIBRARY_PATH, DT_RUNPATH, the ld.so.conf directories, the default directories) and
//!   which file it opens.
//!
//! Everything reads through [`LoaderFs`], a small read-only view of a filesystem, so `image`
//! and `host --check` resolve the same libraries the same way.

pub mod conf;
pub mod path;
pub mod search;

pub use conf::{parse_ld_so_conf, search_dirs, system_search_dirs, LdConfEntry, LdSoConf};
pub use path::{canonical, normalize, resolve};
pub use search::{find, search_order, LoadRequest, SearchDir, SearchFrom};

/// What the loader model needs from a filesystem. Paths are absolute (`/usr/local/cuda`).
pub trait LoaderFs {
    /// The target of the symlink at `path` as written (relative or absolute); None when
    /// `path` is not a symlink. Only the last component is looked at.
    fn read_link(&self, path: &str) -> Option<String>;
    /// Whether `path` (symlinks in it already resolved) is a file the loader could open.
    fn is_file(&self, path: &str) -> bool;
    /// The names in the directory `dir` (resolved), in any order; empty when there is none.
    fn list_dir(&self, dir: &str) -> Vec<String>;
    /// The loader configuration file at `path`, parsed; None when missing or not a file.
    fn ld_conf(&self, path: &str) -> Option<LdSoConf>;
}

/// An in-memory filesystem for the loader's tests: files with their text, and symlinks.
#[cfg(test)]
pub(crate) struct MemFs {
    pub files: Vec<(&'static str, &'static str)>,
    pub links: Vec<(&'static str, &'static str)>,
}

#[cfg(test)]
impl LoaderFs for MemFs {
    fn read_link(&self, p: &str) -> Option<String> {
        let (_, t) = self.links.iter().find(|(l, _)| *l == p)?;
        Some(t.to_string())
    }
    fn is_file(&self, p: &str) -> bool {
        self.files.iter().any(|(f, _)| *f == p)
    }
    fn list_dir(&self, dir: &str) -> Vec<String> {
        let pre = path::join(dir, "");
        let names = self.files.iter().map(|(f, _)| *f);
        let names = names.chain(self.links.iter().map(|(l, _)| *l));
        names
            .filter_map(|f| f.strip_prefix(pre.as_str()))
            .filter_map(|r| r.split('/').next())
            .map(str::to_string)
            .collect()
    }
    fn ld_conf(&self, p: &str) -> Option<LdSoConf> {
        let (_, t) = self.files.iter().find(|(f, _)| *f == p)?;
        Some(parse_ld_so_conf(t.as_bytes()))
    }
}
