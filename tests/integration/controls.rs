//! Controls CI users expect from hadolint / ruff / Trivy: `.gpulint.toml` found beside the
//! linted path as well as in the working directory, several inputs in one call (a missing one
//! is an error for that input, the others are still linted, exit 2 at the end), `-q` keeps
//! only the findings, `--fail-on none`.

use crate::formats::{run_in, Out};
use serde_json::Value;
use std::path::Path;

/// GL108 (unquoted `>=`) on line 2; nothing else at error level.
const UNQUOTED: &str =
    "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN pip install numba>=0.57.1\n";

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn rules(r: &Out) -> Vec<String> {
    let v: Value = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {r:?}"));
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{} {}",
                f["rule"].as_str().unwrap(),
                f["location"]["file"].as_str().unwrap_or("")
            )
        })
        .collect()
}

#[test]
fn config_is_found_beside_the_linted_path_and_in_the_working_directory() {
    let d = tempfile::tempdir().unwrap();
    let repo = d.path().join("repo");
    write(&repo.join("Dockerfile"), UNQUOTED);
    let elsewhere = d.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let repo_s = repo.to_string_lossy().into_owned();
    let df = repo.join("Dockerfile").to_string_lossy().into_owned();

    // No configuration anywhere: GL108 is reported.
    let r = run_in(&elsewhere, &["lint", &repo_s, "--format", "json"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(rules(&r).iter().any(|x| x.starts_with("GL108")), "{r:?}");

    // repo/.gpulint.toml switches it off for `lint repo/` and `dockerfile repo/Dockerfile`,
    // run from another directory.
    write(&repo.join(".gpulint.toml"), "[rules]\nGL108 = \"off\"\n");
    for args in [
        vec!["lint", &repo_s, "--format", "json"],
        vec!["dockerfile", &df, "--format", "json"],
    ] {
        let r = run_in(&elsewhere, &args);
        assert_eq!(r.code, 0, "{args:?}: {r:?}");
        assert!(rules(&r).iter().all(|x| !x.starts_with("GL108")), "{r:?}");
    }

    // The config beside the input wins over the working directory's.
    write(
        &elsewhere.join(".gpulint.toml"),
        "[rules]\nGL108 = \"warning\"\n",
    );
    let r = run_in(&elsewhere, &["lint", &repo_s, "--format", "json"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(rules(&r).iter().all(|x| !x.starts_with("GL108")), "{r:?}");

    // An input with no config of its own uses the working directory's.
    std::fs::remove_file(repo.join(".gpulint.toml")).unwrap();
    let r = run_in(&elsewhere, &["lint", &repo_s, "--format", "json"]);
    assert_eq!(r.code, 0, "downgraded to warning by ./.gpulint.toml: {r:?}");
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["findings"][0]["severity"], "warning", "{v:#}");
}

#[test]
fn a_missing_input_is_an_error_for_it_and_the_others_are_still_linted() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    write(&p.join("a/Dockerfile"), UNQUOTED);
    write(&p.join("b/Dockerfile"), UNQUOTED);
    write(&p.join("empty/Dockerfile"), "# nothing\n");
    write(
        &p.join("a/run.sh"),
        "docker run -v /usr/local/cuda:/usr/local/cuda --gpus all nvidia/cuda:12.4.1-runtime-ubuntu22.04\n",
    );
    let cases: Vec<(Vec<&str>, &[&str], &str)> = vec![
        (
            vec![
                "dockerfile",
                "a/Dockerfile",
                "missing/Dockerfile",
                "empty/Dockerfile",
                "b/Dockerfile",
            ],
            &["a/Dockerfile", "b/Dockerfile"],
            "missing/Dockerfile",
        ),
        (
            vec!["lint", "a", "nope", "b"],
            &["a/Dockerfile", "a/run.sh", "b/Dockerfile"],
            "nope",
        ),
        (
            vec!["run", "--file", "gone.sh", "--file", "a/run.sh"],
            &["a/run.sh"],
            "gone.sh",
        ),
    ];
    for (mut args, linted, missing) in cases {
        args.extend(["--format", "json"]);
        let r = run_in(p, &args);
        assert_eq!(r.code, 2, "exit 2 at the end: {args:?}: {r:?}");
        let files = rules(&r);
        for f in linted {
            assert!(files.iter().any(|x| x.ends_with(f)), "{f} linted: {r:?}");
        }
        assert!(r.stderr.contains(missing), "{missing} named: {r:?}");
        // The report on stdout is still one complete document.
        let v: Value = serde_json::from_str(&r.stdout).unwrap();
        crate::formats::assert_valid_report(&v);
    }
    let r = run_in(
        p,
        &[
            "dockerfile",
            "empty/Dockerfile",
            "a/Dockerfile",
            "--format",
            "json",
        ],
    );
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r
        .stderr
        .contains("empty/Dockerfile: the Dockerfile is empty"));
    assert!(rules(&r).iter().any(|x| x == "GL108 a/Dockerfile"), "{r:?}");

    // With every input present, the usual verdict.
    let r = run_in(p, &["lint", "a", "b", "--format", "json"]);
    assert_eq!(r.code, 1, "{r:?}");
}

#[test]
fn quiet_prints_only_findings() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    write(&p.join("Dockerfile"), UNQUOTED);
    // A Helm chart: `lint` notes that it skips the templates, on stderr.
    write(
        &p.join("chart/Chart.yaml"),
        "apiVersion: v2\nname: c\nversion: 0.1.0\n",
    );
    write(
        &p.join("chart/templates/job.yaml"),
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {{ .Release.Name }}\n",
    );
    let loud = run_in(p, &["lint", "."]);
    assert_eq!(loud.code, 1, "{loud:?}");
    assert!(loud.stdout.contains(" info\n"), "{loud:?}");
    assert!(
        loud.stderr.contains("Helm chart templates skipped"),
        "{loud:?}"
    );

    let quiet = run_in(p, &["lint", ".", "-q"]);
    assert_eq!(quiet.code, 1, "{quiet:?}");
    assert!(quiet.stderr.is_empty(), "{quiet:?}");
    let first = quiet.stdout.lines().next().unwrap_or("");
    assert!(first.starts_with("error[GL108 "), "{quiet:?}");
    assert!(
        quiet
            .stdout
            .lines()
            .all(|l| l.starts_with("error[") || l.starts_with("      ")),
        "{quiet:?}"
    );

    // An image with no target: -q drops the requirements summary; nothing is left.
    let example = crate::formats::repo().join("testdata/images/example.tar");
    let e = example.to_string_lossy();
    let loud = run_in(p, &["image", &e, "--no-local-host"]);
    assert!(loud.stdout.contains("requirements"), "{loud:?}");
    let quiet = run_in(p, &["image", &e, "--no-local-host", "-q"]);
    assert_eq!(quiet.code, 0, "{quiet:?}");
    assert_eq!(quiet.stdout, "", "{quiet:?}");
}

#[test]
fn fail_on_none_never_fails_and_bad_values_are_usage_errors() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    write(&p.join("Dockerfile"), UNQUOTED);
    assert_eq!(run_in(p, &["dockerfile"]).code, 1);
    let r = run_in(p, &["dockerfile", "--fail-on", "none"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("GL108"), "still reported: {r:?}");
    write(&p.join(".gpulint.toml"), "fail-on = \"none\"\n");
    assert_eq!(run_in(p, &["dockerfile"]).code, 0);
    // The command line wins over the config.
    assert_eq!(run_in(p, &["dockerfile", "--fail-on", "error"]).code, 1);
    let r = run_in(p, &["dockerfile", "--fail-on", "fatal"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("fatal"), "{r:?}");
}

#[test]
fn readme_documents_every_config_key_and_its_example_config_loads() {
    let readme = std::fs::read_to_string(crate::formats::repo().join("README.md")).unwrap();
    let section = readme
        .split("### Configuration: `.gpulint.toml`")
        .nth(1)
        .expect("README has the configuration section");
    // Every key the parser accepts (RawConfig's fields, kebab-case) is in the key table.
    let src = std::fs::read_to_string(crate::formats::repo().join("src/config.rs")).unwrap();
    let body = src
        .split("struct RawConfig {")
        .nth(1)
        .unwrap()
        .split("\n}")
        .next()
        .unwrap();
    let keys: Vec<String> = body
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("//") && !l.starts_with('#') && l.contains(':'))
        .map(|l| l.split(':').next().unwrap().trim().replace('_', "-"))
        .collect();
    assert!(keys.len() >= 8, "{keys:?}");
    for k in &keys {
        assert!(
            section.contains(&format!("| `{k}` |"))
                || section.contains(&format!("| `[{k}]` |"))
                || section.contains(&format!("| `[[{k}]]` |")),
            "README's config table lacks `{k}`"
        );
    }
    // The example configuration is accepted as written, with every key in it.
    let example = section
        .split("```toml\n")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    let d = tempfile::tempdir().unwrap();
    write(
        &d.path().join("deploy/fleet.toml"),
        "[[pool]]\nname = \"a\"\ndriver = \"535.104.05\"\ngpus = [\"T4\"]\n",
    );
    write(&d.path().join(".gpulint.toml"), example);
    write(&d.path().join("Dockerfile"), UNQUOTED);
    let r = run_in(d.path(), &["dockerfile", "--format", "json"]);
    assert!(r.code <= 1, "the README example config is rejected: {r:?}");
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(
        v["targets"],
        serde_json::json!(["a"]),
        "fleet from the config"
    );
    // fail-on = "warning": the GL108 error fails the run.
    assert_eq!(r.code, 1, "{r:?}");
}
