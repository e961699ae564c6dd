//! Test support: fixture trees that a script generates (host variants, image-rule cases) must
//! be exactly what the script makes, so the script stays their single source.

use std::collections::BTreeMap;
use std::path::Path;

/// Every file and symlink under a tree, by relative path: a file's bytes, a symlink's target
/// (directories are implied: git keeps no empty ones).
fn tree_listing(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for e in walkdir::WalkDir::new(root).min_depth(1) {
        let e = e.unwrap();
        let rel = e
            .path()
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let ft = e.file_type();
        if ft.is_symlink() {
            let t = std::fs::read_link(e.path()).unwrap();
            out.insert(rel, format!("-> {}", t.display()).into_bytes());
        } else if ft.is_file() {
            out.insert(rel, std::fs::read(e.path()).unwrap());
        }
    }
    out
}

fn run(script: &Path, out: &Path) {
    let st = std::process::Command::new("bash")
        .arg(script)
        .arg(out)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}: {}",
        script.display(),
        String::from_utf8_lossy(&st.stderr)
    );
}

/// `script OUT`, run into a temporary directory, yields exactly the `checked_in` tree (no tree
/// it cannot recreate, no stale file, same bytes and symlinks), and rerunning it over its own
/// output changes nothing.
pub(crate) fn assert_script_makes(script: &Path, checked_in: &Path) {
    let out = tempfile::tempdir().unwrap();
    run(script, out.path());
    let made = tree_listing(out.path());
    let checked_in = tree_listing(checked_in);
    let only = |a: &BTreeMap<String, Vec<u8>>, b: &BTreeMap<String, Vec<u8>>| {
        a.keys()
            .filter(|k| !b.contains_key(*k))
            .cloned()
            .collect::<Vec<_>>()
    };
    assert!(
        only(&checked_in, &made).is_empty(),
        "checked in but not made by {}: {:?}",
        script.display(),
        only(&checked_in, &made)
    );
    assert!(
        only(&made, &checked_in).is_empty(),
        "made by {} but not checked in (rerun it): {:?}",
        script.display(),
        only(&made, &checked_in)
    );
    let differ: Vec<&String> = made
        .iter()
        .filter(|(k, v)| checked_in.get(*k) != Some(*v))
        .map(|(k, _)| k)
        .collect();
    assert!(
        differ.is_empty(),
        "differ from the output of {} (rerun it): {differ:?}",
        script.display()
    );
    run(script, out.path());
    assert_eq!(
        tree_listing(out.path()),
        made,
        "{} is not rerunnable",
        script.display()
    );
}
