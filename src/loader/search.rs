//! The order in which ld.so looks for a NEEDED library, and the file it opens (ld.so(8)):
//! DT_RPATH (only when there is no DT_RUNPATH), LD_LIBRARY_PATH, DT_RUNPATH, the directories
//! of ld.so.cache (built from ld.so.conf), then the default directories. `$ORIGIN` is the
//! directory of the binary that asks.

use super::path::{canonical, join, normalize};
use super::LoaderFs;
use serde::Serialize;

/// Where a directory of the search order comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum SearchFrom {
    Rpath,
    LdLibraryPath,
    Runpath,
    LdSoConf,
    Default,
}

impl SearchFrom {
    /// Whether the binary itself names this directory (its DT_RPATH / DT_RUNPATH).
    pub fn is_own(self) -> bool {
        matches!(self, SearchFrom::Rpath | SearchFrom::Runpath)
    }
}

impl std::fmt::Display for SearchFrom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SearchFrom::Rpath => "DT_RPATH",
            SearchFrom::LdLibraryPath => "LD_LIBRARY_PATH",
            SearchFrom::Runpath => "DT_RUNPATH",
            SearchFrom::LdSoConf => "ld.so.conf",
            SearchFrom::Default => "default",
        })
    }
}

/// One directory of the search order (absolute, normalised, `$ORIGIN` expanded), and where it
/// came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchDir {
    pub dir: String,
    pub from: SearchFrom,
}

/// What decides one binary's search order.
#[derive(Debug, Clone, Default)]
pub struct LoadRequest<'a> {
    /// The binary's directory (`$ORIGIN`), absolute.
    pub origin: &'a str,
    pub rpath: &'a [String],
    pub runpath: &'a [String],
    /// The process's LD_LIBRARY_PATH (`:`-separated; empty entries are skipped).
    pub ld_library_path: Option<&'a str>,
    /// The ld.so.conf directories, in ldconfig's order ([`super::conf::search_dirs`]).
    pub ld_so_conf: &'a [String],
    /// The ELF machine (`x86_64`, `aarch64`, `ppc64le`): the multiarch default directories.
    pub machine: &'a str,
}

fn expand_origin(dir: &str, origin: &str) -> String {
    normalize(&dir.replace("${ORIGIN}", origin).replace("$ORIGIN", origin))
}

/// The directories ld.so searches, in order.
pub fn search_order(req: &LoadRequest<'_>) -> Vec<SearchDir> {
    let mut v = Vec::new();
    let mut push = |dir: String, from| v.push(SearchDir { dir, from });
    if req.runpath.is_empty() {
        for d in req.rpath {
            push(expand_origin(d, req.origin), SearchFrom::Rpath);
        }
    }
    for d in req.ld_library_path.unwrap_or_default().split(':') {
        if !d.is_empty() {
            push(normalize(d), SearchFrom::LdLibraryPath);
        }
    }
    for d in req.runpath {
        push(expand_origin(d, req.origin), SearchFrom::Runpath);
    }
    for d in req.ld_so_conf {
        push(normalize(d), SearchFrom::LdSoConf);
    }
    let multiarch = match req.machine {
        "aarch64" => "aarch64-linux-gnu",
        "ppc64le" => "powerpc64le-linux-gnu",
        _ => "x86_64-linux-gnu",
    };
    for d in [
        format!("/lib/{multiarch}"),
        format!("/usr/lib/{multiarch}"),
        "/lib64".into(),
        "/usr/lib64".into(),
        "/lib".into(),
        "/usr/lib".into(),
    ] {
        push(d, SearchFrom::Default);
    }
    v
}

/// The file ld.so opens for `needed` (a soname), searching `dirs` in order: its path as
/// named (`/usr/local/cuda/lib64/libcudart.so.12`) and the real file it resolves to, with the
/// directory that gave it.
pub fn find(fs: &dyn LoaderFs, dirs: &[SearchDir], needed: &str) -> Option<Found> {
    dirs.iter().find_map(|d| {
        let named = join(&d.dir, needed);
        let real = canonical(fs, &named);
        fs.is_file(&real).then(|| Found {
            named,
            real,
            dir: d.clone(),
        })
    })
}

/// What [`find`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The search directory joined with the soname.
    pub named: String,
    /// The same with every symlink resolved: the file that is mapped.
    pub real: String,
    pub dir: SearchDir,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loader::MemFs;

    fn order(rpath: &[&str], runpath: &[&str], lp: Option<&str>) -> Vec<(String, SearchFrom)> {
        let rpath: Vec<String> = rpath.iter().map(|s| s.to_string()).collect();
        let runpath: Vec<String> = runpath.iter().map(|s| s.to_string()).collect();
        let conf = vec!["/usr/local/cuda/lib64".to_string()];
        search_order(&LoadRequest {
            origin: "/opt/app/lib",
            rpath: &rpath,
            runpath: &runpath,
            ld_library_path: lp,
            ld_so_conf: &conf,
            machine: "x86_64",
        })
        .into_iter()
        .map(|d| (d.dir, d.from))
        .collect()
    }

    #[test]
    fn rpath_only_without_runpath() {
        use SearchFrom::*;
        let o = order(&["$ORIGIN/../rp"], &[], Some("/lp::/lp2/"));
        assert_eq!(
            o[..4],
            [
                ("/opt/app/rp".into(), Rpath),
                ("/lp".into(), LdLibraryPath),
                ("/lp2".into(), LdLibraryPath),
                ("/usr/local/cuda/lib64".into(), LdSoConf),
            ]
        );
        assert_eq!(o[4], ("/lib/x86_64-linux-gnu".into(), Default));
        // DT_RUNPATH present: DT_RPATH is ignored, and LD_LIBRARY_PATH comes first.
        let o = order(
            &["/rp"],
            &["${ORIGIN}/../../nvidia/cublas/lib"],
            Some("/lp"),
        );
        assert_eq!(
            o[..2],
            [
                ("/lp".into(), LdLibraryPath),
                ("/opt/nvidia/cublas/lib".into(), Runpath),
            ]
        );
    }

    #[test]
    fn finds_the_first_directory_that_has_it_through_links() {
        let fs = MemFs {
            files: vec![
                (
                    "/usr/local/cuda-12.1/targets/x86_64-linux/lib/libcudart.so.12.1.105",
                    "",
                ),
                ("/opt/nvidia/cuda_runtime/lib/libcudart.so.12", ""),
            ],
            links: vec![
                ("/usr/local/cuda", "cuda-12.1"),
                ("/usr/local/cuda-12.1/lib64", "targets/x86_64-linux/lib"),
                (
                    "/usr/local/cuda-12.1/targets/x86_64-linux/lib/libcudart.so.12",
                    "libcudart.so.12.1.105",
                ),
            ],
        };
        let dirs = vec![
            SearchDir {
                dir: "/nowhere".into(),
                from: SearchFrom::LdLibraryPath,
            },
            SearchDir {
                dir: "/usr/local/cuda/lib64".into(),
                from: SearchFrom::LdLibraryPath,
            },
            SearchDir {
                dir: "/opt/nvidia/cuda_runtime/lib".into(),
                from: SearchFrom::Runpath,
            },
        ];
        let f = find(&fs, &dirs, "libcudart.so.12").expect("found");
        assert_eq!(f.named, "/usr/local/cuda/lib64/libcudart.so.12");
        assert_eq!(
            f.real,
            "/usr/local/cuda-12.1/targets/x86_64-linux/lib/libcudart.so.12.1.105"
        );
        assert_eq!(f.dir.from, SearchFrom::LdLibraryPath);
        assert_eq!(
            find(&fs, &dirs[2..], "libcudart.so.12").unwrap().dir.from,
            SearchFrom::Runpath
        );
        assert!(find(&fs, &dirs, "libcublas.so.12").is_none());
    }
}
