//! Paths as reports show them: relative to the repository root, the same in every format, so
//! a CI system can link them (`cd deploy && gpulint lint .` reports `deploy/job.yaml`).
//!
//! The root is `GITHUB_WORKSPACE` or `CI_PROJECT_DIR` when set and the working directory is
//! inside it, else the git top level of the working directory, else the working directory.
//! What has no file in the repository (an image, the host, a command line) is named by a
//! placeholder under [`PLACEHOLDER_DIR`] in the formats that need a file and a line.

use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

/// The directory placeholders live under; no file of the repository is expected there.
pub const PLACEHOLDER_DIR: &str = ".gpulint";
/// Longest placeholder name kept from a reference (a registry reference is bounded by the
/// distribution spec at 255 + a digest; this keeps report paths readable and bounded).
const MAX_PLACEHOLDER_NAME: usize = 200;

/// The repository root of this run (found once).
pub fn root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let cwd = std::env::current_dir().unwrap_or_default();
        find_root(&cwd, &|k| std::env::var_os(k))
    })
}

/// The root for `cwd`: a CI workspace variable that contains `cwd`, else git's top level.
pub fn find_root(cwd: &Path, env: &dyn Fn(&str) -> Option<std::ffi::OsString>) -> PathBuf {
    for var in ["GITHUB_WORKSPACE", "CI_PROJECT_DIR"] {
        let Some(v) = env(var).filter(|v| !v.is_empty()) else {
            continue;
        };
        let p = PathBuf::from(v);
        let p = p.canonicalize().unwrap_or(p);
        if cwd.starts_with(&p) {
            return p;
        }
    }
    let git = std::process::Command::new("git")
        .arg("-C")
        .arg(cwd)
        .args(["rev-parse", "--show-toplevel"])
        .stderr(std::process::Stdio::null())
        .output();
    if let Ok(o) = git {
        if o.status.success() {
            let top = PathBuf::from(String::from_utf8_lossy(&o.stdout).trim_end_matches('\n'));
            if !top.as_os_str().is_empty() && cwd.starts_with(&top) {
                return top;
            }
        }
    }
    cwd.to_path_buf()
}

/// `a/./b/../c` → `a/c`, without looking at the file system (a report path, not an open).
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// `p` (as given, relative to `cwd`) relative to `root`; a path outside `root` relative to
/// `cwd` when below it, else as given. Always `/`-separated, never with a leading `./`.
pub fn relative_to(p: &Path, root: &Path, cwd: &Path) -> String {
    let abs = normalize(&cwd.join(p));
    let shown = match abs.strip_prefix(root) {
        Ok(r) if r.as_os_str().is_empty() => PathBuf::from("."),
        Ok(r) => r.to_path_buf(),
        Err(_) => p
            .strip_prefix(cwd)
            .map(Path::to_path_buf)
            .unwrap_or_else(|_| p.to_path_buf()),
    };
    let shown = shown.strip_prefix("./").unwrap_or(&shown);
    shown.to_string_lossy().replace('\\', "/")
}

/// The file a path shown by [`relative_to`] names: inside the root it was shown relative to
/// the root, outside it (`../…`) relative to `cwd`, or absolute.
pub fn absolute(shown: &str, root: &Path, cwd: &Path) -> PathBuf {
    let p = Path::new(shown);
    if p.is_absolute() {
        p.to_path_buf()
    } else if p.starts_with("..") {
        normalize(&cwd.join(p))
    } else {
        normalize(&root.join(p))
    }
}

/// A path as reports show it, relative to this run's repository root.
pub fn shown(p: &Path) -> String {
    relative_to(p, root(), &std::env::current_dir().unwrap_or_default())
}

/// A name safe as one path component: what is not `[A-Za-z0-9._-]` becomes `_`, bounded, and
/// never `.` or `..`.
fn component(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(MAX_PLACEHOLDER_NAME)
        .collect();
    if out.chars().all(|c| c == '.') {
        out = out.replace('.', "_");
    }
    out
}

/// Whether a report file is a placeholder (under `.gpulint/`), not a file of the repository
/// (`.gpulint.toml` is one).
pub fn is_placeholder(file: &str) -> bool {
    file.strip_prefix(PLACEHOLDER_DIR)
        .is_some_and(|rest| rest.starts_with('/'))
}

/// The placeholder file for something outside the repository: `.gpulint/<kind>/<name>`.
pub fn placeholder(kind: &str, name: &str) -> String {
    format!("{PLACEHOLDER_DIR}/{kind}/{}", component(name))
}

/// The file that stands for an image in reports: the archive, layout or root directory when
/// it is a local path in the repository (`testdata/images/example.tar`), else
/// `.gpulint/image/<reference with every character but [A-Za-z0-9._-] as _>`.
pub fn image_file(reference: &str) -> String {
    image_file_in(
        reference,
        root(),
        &std::env::current_dir().unwrap_or_default(),
    )
}

pub fn image_file_in(reference: &str, root: &Path, cwd: &Path) -> String {
    if let Some(p) = local_path(reference) {
        let abs = normalize(&cwd.join(&p));
        if abs.starts_with(root) && abs.exists() {
            return relative_to(&abs, root, cwd);
        }
    }
    placeholder("image", reference)
}

/// The local path of a reference with a local transport (or none: a bare existing path).
fn local_path(reference: &str) -> Option<PathBuf> {
    use crate::source::reference::{parse_reference, Transport};
    match parse_reference(reference).ok()? {
        Transport::DockerArchive { path, .. }
        | Transport::Oci { path, .. }
        | Transport::OciArchive { path, .. }
        | Transport::Dir { path }
        | Transport::Auto { path } => Some(path),
        Transport::DockerDaemon { .. } | Transport::Registry { .. } => None,
    }
}

/// A reference as the text and JSON reports name it: a local path in the repository relative
/// to the root (`docker-archive:testdata/images/example.tar`), anything else as given.
pub fn shown_reference(reference: &str) -> String {
    let Some(p) = local_path(reference) else {
        return reference.to_string();
    };
    let file = image_file(reference);
    if is_placeholder(&file) {
        return reference.to_string();
    }
    let given = p.to_string_lossy();
    match reference.find(given.as_ref()) {
        Some(i) => format!("{}{file}{}", &reference[..i], &reference[i + given.len()..]),
        None => reference.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_relative_to_the_root_not_the_working_directory() {
        let root = Path::new("/repo");
        let cwd = Path::new("/repo/deploy");
        assert_eq!(
            relative_to(Path::new("job.yaml"), root, cwd),
            "deploy/job.yaml"
        );
        assert_eq!(
            relative_to(Path::new("./k8s/../job.yaml"), root, cwd),
            "deploy/job.yaml"
        );
        assert_eq!(
            relative_to(Path::new("../Dockerfile"), root, cwd),
            "Dockerfile"
        );
        assert_eq!(
            relative_to(Path::new("/repo/deploy/job.yaml"), root, cwd),
            "deploy/job.yaml"
        );
        // Outside the repository: as given.
        assert_eq!(
            relative_to(Path::new("/etc/x.yaml"), root, cwd),
            "/etc/x.yaml"
        );
    }

    #[test]
    fn ci_workspace_variables_name_the_root_when_they_contain_the_working_directory() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().canonicalize().unwrap();
        let sub = ws.join("deploy");
        std::fs::create_dir_all(&sub).unwrap();
        let env = |k: &str| (k == "CI_PROJECT_DIR").then(|| ws.clone().into_os_string());
        assert_eq!(find_root(&sub, &env), ws);
        // A workspace elsewhere is not this run's root.
        let other = |k: &str| (k == "GITHUB_WORKSPACE").then(|| "/nonexistent/ws".into());
        assert_ne!(find_root(&sub, &other), PathBuf::from("/nonexistent/ws"));
    }

    #[test]
    fn placeholders_are_one_safe_component() {
        assert_eq!(
            placeholder("image", "pytorch/pytorch:2.3.0"),
            ".gpulint/image/pytorch_pytorch_2.3.0"
        );
        assert_eq!(placeholder("image", ".."), ".gpulint/image/__");
        assert_eq!(
            placeholder("image", "../../etc"),
            ".gpulint/image/.._.._etc"
        );
        assert!(is_placeholder(".gpulint/image/x") && !is_placeholder(".gpulint.toml"));
        let long = "a".repeat(1000);
        assert!(placeholder("image", &long).len() < 250);
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("build")).unwrap();
        std::fs::write(root.join("build/app.tar"), b"").unwrap();
        let abs = format!("docker-archive:{}", root.join("build/app.tar").display());
        assert_eq!(image_file_in(&abs, &root, &root), "build/app.tar");
        assert_eq!(
            image_file_in("docker-archive:build/app.tar", &root, &root),
            "build/app.tar"
        );
        assert_eq!(
            image_file_in("docker://ghcr.io/a/b:1", &root, &root),
            ".gpulint/image/docker___ghcr.io_a_b_1"
        );
    }
}
