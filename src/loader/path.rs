//! Paths as the kernel resolves them for ld.so: `.`/`..` lexically, then symlinks in every
//! component (`/usr/local/cuda/lib64` → `/usr/local/cuda-12.1/targets/x86_64-linux/lib`).

use super::LoaderFs;

/// Symlinks followed while resolving one path (Linux's MAXSYMLINKS is 40).
const MAX_LINK_HOPS: usize = 40;

/// Lexically normalise an absolute path (`/a/./b/../c` → `/a/c`; `..` stops at `/`).
pub fn normalize(p: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            x => out.push(x),
        }
    }
    format!("/{}", out.join("/"))
}

/// `path` with every symlink in it resolved (each component, left to right, as
/// path_resolution(7) does), normalised. A loop or a chain longer than 40 links stops where
/// it is: the result then names no file, as the kernel's ELOOP would ([`resolve`] says so).
pub fn canonical(fs: &dyn LoaderFs, path: &str) -> String {
    resolve_links(fs, path).0
}

/// [`canonical`], or None where the links loop or chain more than 40 deep (ELOOP).
pub fn resolve(fs: &dyn LoaderFs, path: &str) -> Option<String> {
    let (p, complete) = resolve_links(fs, path);
    complete.then_some(p)
}

fn resolve_links(fs: &dyn LoaderFs, path: &str) -> (String, bool) {
    let mut done = String::new();
    // `..` is taken after the links before it are resolved, as the kernel does.
    let mut rest: Vec<String> = path
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .rev()
        .map(str::to_string)
        .collect();
    let mut hops = 0;
    let mut complete = true;
    while let Some(c) = rest.pop() {
        if c == ".." {
            done.truncate(done.rfind('/').unwrap_or(0));
            continue;
        }
        let cur = format!("{done}/{c}");
        match fs.read_link(&cur) {
            Some(_) if hops >= MAX_LINK_HOPS => {
                complete = false;
                done = cur;
            }
            Some(target) => {
                hops += 1;
                if target.starts_with('/') {
                    done.clear();
                }
                rest.extend(
                    target
                        .split('/')
                        .filter(|c| !c.is_empty() && *c != ".")
                        .rev()
                        .map(str::to_string),
                );
            }
            None => done = cur,
        }
    }
    let p = if done.is_empty() { "/".into() } else { done };
    (p, complete)
}

/// The parent directory of an absolute path (`/a/b` → `/a`, `/a` → `/`).
pub fn parent(p: &str) -> &str {
    match p.rsplit_once('/') {
        Some(("", _)) | None => "/",
        Some((d, _)) => d,
    }
}

/// `dir/name` without doubling the root's slash.
pub fn join(dir: &str, name: &str) -> String {
    if dir.ends_with('/') {
        format!("{dir}{name}")
    } else {
        format!("{dir}/{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loader::MemFs;

    /// Symlinks only.
    fn links(links: &[(&'static str, &'static str)]) -> MemFs {
        MemFs {
            files: vec![],
            links: links.to_vec(),
        }
    }

    #[test]
    fn every_component_is_resolved() {
        let fs = links(&[
            ("/usr/local/cuda", "/etc/alternatives/cuda"),
            ("/etc/alternatives/cuda", "/usr/local/cuda-12.1"),
            ("/usr/local/cuda-12.1/lib64", "targets/x86_64-linux/lib"),
            ("/lib", "usr/lib"),
        ]);
        assert_eq!(
            canonical(&fs, "/usr/local/cuda/lib64/libcudart.so.12"),
            "/usr/local/cuda-12.1/targets/x86_64-linux/lib/libcudart.so.12"
        );
        assert_eq!(
            canonical(&fs, "/lib/x86_64-linux-gnu"),
            "/usr/lib/x86_64-linux-gnu"
        );
        // `..` after a link walks up from the link's target, not from the link.
        assert_eq!(
            canonical(&fs, "/usr/local/cuda/lib64/../include"),
            "/usr/local/cuda-12.1/targets/x86_64-linux/include"
        );
        assert_eq!(canonical(&fs, "/./a//b/"), "/a/b");
        assert_eq!(canonical(&fs, "/.."), "/");
    }

    #[test]
    fn a_link_loop_ends() {
        let fs = links(&[("/a", "/b"), ("/b", "/a")]);
        let r = canonical(&fs, "/a/x");
        assert!(r.ends_with("/x"), "{r}");
        assert_eq!(resolve(&fs, "/a/x"), None);
        assert_eq!(resolve(&fs, "/c/x").as_deref(), Some("/c/x"));
    }

    #[test]
    fn lexical() {
        assert_eq!(normalize("/a/./b/../c"), "/a/c");
        assert_eq!(normalize("a/b"), "/a/b");
        assert_eq!(parent("/a/b"), "/a");
        assert_eq!(parent("/a"), "/");
        assert_eq!(join("/", "x"), "/x");
    }
}
