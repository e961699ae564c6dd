//! A model of the glibc dynamic loader's search for a binary's NEEDED libraries, over the
//! inventory: DT_RPATH (only when there is no DT_RUNPATH), LD_LIBRARY_PATH from the image
//! config, DT_RUNPATH, the ld.so.conf directories (what ld.so.cache is built from), then the
//! default directories. `$ORIGIN` expands to the binary's directory. (ld.so(8).)

use crate::inventory::{Binary, CudaLibrary, Inventory};

/// Normalize an in-image path: no leading '/', no '.', '..' resolved (clamped at root).
pub fn norm(p: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    parts.join("/")
}

fn expand(dir: &str, origin: &str) -> String {
    let d = dir
        .replace("${ORIGIN}", &format!("/{origin}"))
        .replace("$ORIGIN", &format!("/{origin}"));
    norm(&d)
}

/// One directory of the search order, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchDir {
    pub dir: String,
    pub from: &'static str,
}

/// The loader's search order for `b` in an image with this inventory.
pub fn search_order(inv: &Inventory, b: &Binary) -> Vec<SearchDir> {
    let origin = b.path.parent().unwrap_or_default();
    let origin = origin.as_str();
    let mut v = Vec::new();
    if b.runpath.is_empty() {
        for d in &b.rpath {
            v.push(SearchDir {
                dir: expand(d, origin),
                from: "DT_RPATH",
            });
        }
    }
    if let Some(lp) = inv.image.env.get("LD_LIBRARY_PATH") {
        for d in lp.split(':').filter(|d| !d.is_empty()) {
            v.push(SearchDir {
                dir: norm(d),
                from: "LD_LIBRARY_PATH",
            });
        }
    }
    for d in &b.runpath {
        v.push(SearchDir {
            dir: expand(d, origin),
            from: "DT_RUNPATH",
        });
    }
    for d in &inv.loader.ld_so_conf {
        v.push(SearchDir {
            dir: norm(d),
            from: "ld.so.conf",
        });
    }
    let multiarch = match b.machine.as_str() {
        "aarch64" => "aarch64-linux-gnu",
        "ppc64le" => "powerpc64le-linux-gnu",
        _ => "x86_64-linux-gnu",
    };
    for d in [
        format!("lib/{multiarch}"),
        format!("usr/lib/{multiarch}"),
        "lib64".into(),
        "usr/lib64".into(),
        "lib".into(),
        "usr/lib".into(),
    ] {
        v.push(SearchDir {
            dir: d,
            from: "default",
        });
    }
    v
}

/// Resolve symlinked directory prefixes (`usr/local/cuda/lib64` → `usr/local/cuda-12.1/lib64`).
pub fn canonical_dir(inv: &Inventory, dir: &str) -> String {
    let mut cur = norm(dir);
    for _ in 0..40 {
        let comps: Vec<&str> = cur.split('/').collect();
        let mut replaced = None;
        for i in (1..=comps.len()).rev() {
            let prefix = comps[..i].join("/");
            if let Some(real) = inv.loader.dir_links.get(&prefix) {
                let rest = comps[i..].join("/");
                replaced = Some(if rest.is_empty() {
                    real.clone()
                } else {
                    format!("{real}/{rest}")
                });
                break;
            }
        }
        match replaced {
            Some(r) if r != cur => cur = norm(&r),
            _ => break,
        }
    }
    cur
}

/// The CUDA library a NEEDED name resolves to, searching `dirs` in order.
pub fn resolve<'a>(
    inv: &'a Inventory,
    dirs: &[SearchDir],
    needed: &str,
) -> Option<(&'a CudaLibrary, SearchDir)> {
    for d in dirs {
        let dir = canonical_dir(inv, &d.dir);
        let cand = if dir.is_empty() {
            needed.to_string()
        } else {
            format!("{dir}/{needed}")
        };
        for lib in &inv.cuda_libraries {
            if lib.path.as_str() == cand || lib.aliases.iter().any(|a| a.as_str() == cand) {
                return Some((lib, d.clone()));
            }
        }
    }
    None
}
