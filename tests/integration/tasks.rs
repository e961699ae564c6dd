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

/// Data flows one way: no module of src/ reaches back to one that reaches it
/// (`ci/modgraph.py` prints the graph and fails on a cycle).
#[test]
fn module_graph_has_no_cycles() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new("python3")
        .arg(root.join("ci/modgraph.py"))
        .current_dir(root)
        .output()
        .expect("python3 runs ci/modgraph.py");
    assert!(
        out.status.success(),
        "module cycles:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
