//! Test helpers: captured trees built from `testdata/host/` layers (a base tree plus
//! overlays), copied into a temporary directory. An overlay may hold `.gpulint-remove`:
//! paths (relative to the root) deleted from the layers below.

use super::{CheckOptions, CheckResult, CheckStatus};
use crate::host::profile::detect_host_with;
use crate::host::reader::CapturedReader;
use std::path::{Path, PathBuf};

pub(crate) fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/host")
        .join(name)
}

fn copy_tree(src: &Path, dst: &Path) {
    for e in walkdir::WalkDir::new(src).min_depth(1) {
        let e = e.unwrap();
        let rel = e.path().strip_prefix(src).unwrap();
        if rel == Path::new(".gpulint-remove") {
            continue;
        }
        let to = dst.join(rel);
        let ft = e.file_type();
        if ft.is_symlink() {
            let t = std::fs::read_link(e.path()).unwrap();
            let _ = std::fs::remove_file(&to);
            let _ = std::fs::remove_dir_all(&to);
            std::os::unix::fs::symlink(t, &to).unwrap();
        } else if ft.is_dir() {
            std::fs::create_dir_all(&to).unwrap();
        } else {
            let _ = std::fs::remove_file(&to);
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
}

/// Layers are names under testdata/host/, bottom first.
pub(crate) fn tree(layers: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for l in layers {
        let src = testdata(l);
        assert!(src.is_dir(), "{} missing", src.display());
        if let Ok(rm) = std::fs::read_to_string(src.join(".gpulint-remove")) {
            for p in rm
                .lines()
                .map(str::trim)
                .filter(|p| !p.is_empty() && !p.starts_with('#'))
            {
                let t = dir.path().join(p.trim_start_matches('/'));
                let _ = std::fs::remove_file(&t);
                let _ = std::fs::remove_dir_all(&t);
            }
        }
        copy_tree(&src, dir.path());
    }
    dir
}

/// Run all checks on a layered tree with the given options.
pub(crate) fn run(layers: &[&str], opts: &CheckOptions) -> Vec<CheckResult> {
    let dir = tree(layers);
    run_dir(dir.path(), opts)
}

/// Run all checks on a tree already built (and changed) by the test.
pub(crate) fn run_dir(dir: &Path, opts: &CheckOptions) -> Vec<CheckResult> {
    let reader = CapturedReader::new(dir).unwrap();
    let profile = detect_host_with(&reader, opts.facts).unwrap();
    super::run_checks_with(&reader, &profile, opts)
}

/// The results of one check.
pub(crate) fn of<'a>(results: &'a [CheckResult], code: &str) -> Vec<&'a CheckResult> {
    results.iter().filter(|r| r.finding.rule == code).collect()
}

/// The single result of a check, asserting its status.
pub(crate) fn expect<'a>(
    results: &'a [CheckResult],
    code: &str,
    status: CheckStatus,
) -> &'a CheckResult {
    let v = of(results, code);
    let hit = v.iter().find(|r| r.status == status);
    match hit {
        Some(r) => r,
        None => panic!("{code}: expected {status:?}, got {:#?}", v),
    }
}
