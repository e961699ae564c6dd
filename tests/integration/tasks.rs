//! The justfile lists the project's tasks; every script a recipe runs must exist, and every
//! entry point in ci/ must be reachable from a recipe (or be a helper another script calls).

use std::path::Path;

#[test]
fn justfile_recipes_name_real_scripts_and_cover_ci() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("justfile")).unwrap();
    let mut named = Vec::new();
    // Recipe lines only (indented), not the comments.
    let recipes = text.lines().filter(|l| l.starts_with("    "));
    for word in recipes.flat_map(str::split_whitespace) {
        if word.starts_with("ci/") {
            assert!(
                root.join(word).is_file(),
                "justfile runs {word}, which does not exist"
            );
            named.push(word.to_string());
        }
    }
    assert!(
        named.len() >= 10,
        "only {} scripts in the justfile",
        named.len()
    );
    // Scripts that other scripts call, not tasks of their own.
    let helpers = [
        "ci/install-tools.sh",
        "ci/services.sh",
        "ci/corpus_labels.py",
        "ci/corpus_figures.py",
        "ci/buildkit_conformance.py",
        "ci/today-build.sh",
        "ci/actionlint.cjs",
    ];
    for e in std::fs::read_dir(root.join("ci")).unwrap() {
        let p = format!("ci/{}", e.unwrap().file_name().to_string_lossy());
        if p.ends_with(".pyc") || p.contains("__pycache__") || p == "ci/gitlab" {
            continue;
        }
        // A folder (a cargo project of its own) is named through a file in it.
        let run = named
            .iter()
            .any(|n| *n == p || n.starts_with(&format!("{p}/")));
        assert!(
            run || helpers.contains(&p.as_str()),
            "{p} is neither a justfile task nor a known helper"
        );
    }
}

/// Runs a ci/ script on the real tree; (success, stdout).
fn run_on_src(script: &str, args: &[&str]) -> (bool, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new("python3")
        .arg(root.join(script))
        .args(args)
        .current_dir(root)
        .output()
        .unwrap_or_else(|e| panic!("python3 runs {script}: {e}"));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// Data flows one way: no module of src/ reaches back to one that reaches it, counted at
/// depth two (`source::daemon`, `source::live`) and through `super::` paths, as CI runs
/// `ci/modgraph.py`.
#[test]
fn module_graph_has_no_cycles() {
    let (ok, out) = run_on_src("ci/modgraph.py", &["2"]);
    assert!(ok, "module cycles:\n{out}");
}

/// No source file holds more than 700 lines of non-test code (`ci/file-sizes.py`).
#[test]
fn no_source_file_is_over_the_size_limit() {
    let (ok, out) = run_on_src("ci/file-sizes.py", &[]);
    assert!(ok, "files over the limit:\n{out}");
}

/// Runs a ci/ script on a small src/ tree written from `files`, returns (success, stdout).
fn run_on_tree(script: &str, args: &[&str], files: &[(&str, String)]) -> (bool, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let d = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let p = d.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let out = std::process::Command::new("python3")
        .arg(root.join(script))
        .args(args)
        .current_dir(d.path())
        .output()
        .unwrap_or_else(|e| panic!("python3 runs {script}: {e}"));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// A cycle two levels down made of `super::` paths (a `use` tree and an inline call) is a
/// cycle, and a `#[cfg(test)]` on a statement does not hide the code after it.
#[test]
fn module_graph_counts_super_paths_at_depth_two() {
    let files = [
        ("src/lib.rs", "pub mod a;\npub mod b;\n".to_string()),
        ("src/a/mod.rs", "pub mod x;\npub mod y;\n".to_string()),
        (
            "src/a/x.rs",
            "use super::{y::{self, Y as Why}};\npub struct X;\n".to_string(),
        ),
        (
            "src/a/y.rs",
            "pub struct Y;\nfn f() {\n    #[cfg(test)]\n    let _ = 1;\n    super::x::X;\n}\n"
                .to_string(),
        ),
        // Names in strings and comments are no references.
        (
            "src/b.rs",
            "// crate::a::x\nconst S: &str = \"crate::a::y\";\n".to_string(),
        ),
    ];
    let (ok, out) = run_on_tree("ci/modgraph.py", &["2"], &files);
    assert!(!ok, "the cycle is found:\n{out}");
    assert!(out.contains("cycle: ['a::x', 'a::y']"), "{out}");
    assert!(!out.contains("b"), "{out}");
    // At depth one both are inside `a`: no cycle.
    let (ok, out) = run_on_tree("ci/modgraph.py", &["1"], &files);
    assert!(ok, "{out}");
}

/// Non-test lines are counted outside test modules only, wherever a `#[cfg(test)]` sits;
/// files named tests*.rs are exempt.
#[test]
fn file_sizes_counts_non_test_lines() {
    let code = |n: usize| "fn f() {}\n".repeat(n);
    let test_mod = |n: usize| format!("#[cfg(test)]\nmod tests {{\n{}}}\n", code(n));
    let files = [
        // Over: a cfg(test) statement near the top does not end the count.
        (
            "src/big.rs",
            format!(
                "fn g() {{\n    #[cfg(test)]\n    let _ = 1;\n}}\n{}",
                code(700)
            ),
        ),
        // Under: most of it is a test module, a declared test module too.
        (
            "src/small.rs",
            format!("#[cfg(test)]\nmod t;\n{}{}", code(600), test_mod(900)),
        ),
        // Braces in strings do not end the test module early.
        (
            "src/strings.rs",
            format!(
                "#[cfg(test)]\nmod tests {{\n    const S: &str = \"}}\";\n{}}}\n{}",
                code(800),
                code(10)
            ),
        ),
        ("src/tests_big.rs", code(900)),
    ];
    let (ok, out) = run_on_tree("ci/file-sizes.py", &[], &files);
    assert!(!ok, "{out}");
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        ["src/big.rs: 704 non-test lines (limit 700)"],
        "{out}"
    );
}

/// The PyPI survey's offline parts: which wheel it reads of a release's files, and that
/// unpacking keeps every member inside site-packages (as pip lays out `*.data/purelib`).
#[test]
fn pypi_survey_picks_the_linux_wheel_and_unpacks_inside_site_packages() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let d = tempfile::tempdir().unwrap();
    let code = r#"
import importlib.util, sys, zipfile
from pathlib import Path
spec = importlib.util.spec_from_file_location("survey", sys.argv[1])
s = importlib.util.module_from_spec(spec); spec.loader.exec_module(s)
f = lambda n: {"filename": n}
files = [f("x-1-cp312-cp312-macosx_11_0_x86_64.whl"), f("x-1-cp311-cp311-manylinux_2_28_x86_64.whl"),
         f("x-1-cp312-cp312-manylinux_2_28_aarch64.whl"), f("x-1-cp312-cp312-manylinux_2_28_x86_64.whl"),
         f("x-1.tar.gz")]
print(s.pick_wheel(files)["filename"])
print(s.pick_wheel([f("v-1-cp38-abi3-manylinux_2_28_x86_64.whl"), f("v-1-cp310-cp310-manylinux_2_28_x86_64.whl")])["filename"])
print(s.pick_wheel([f("m-1-cp312-cp312-macosx_11_0_arm64.whl")]))
tmp = Path(sys.argv[2])
whl = tmp / "x.whl"
with zipfile.ZipFile(whl, "w") as z:
    for n in ["x/a.py", "x-1.data/purelib/y.py", "x-1.data/scripts/s", "../evil", "/abs", "x/./b", "x-1.dist-info/RECORD"]:
        z.writestr(n, "1")
s.unpack(whl, tmp / "root")
print(sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*") if p.is_file() and p != whl))
"#;
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(code)
        .arg(root.join("ci/pypi-cuda-survey.py"))
        .arg(d.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let site = "root/usr/local/lib/python3.12/site-packages";
    assert_eq!(
        stdout,
        format!(
            "x-1-cp312-cp312-manylinux_2_28_x86_64.whl\nv-1-cp38-abi3-manylinux_2_28_x86_64.whl\nNone\n\
             ['{site}/x-1.dist-info/RECORD', '{site}/x/a.py', '{site}/y.py']\n"
        )
    );
}
