//! Packaging run the way CI systems run it, with the locally built binary:
//!
//! - the GitHub Action: `action.yml` wires `action/entrypoint.sh` and the SARIF upload; the
//!   entry script runs with the `INPUT_*` variables and `$GITHUB_OUTPUT` the runner sets;
//! - the GitLab CI template: its job script, read from the YAML, runs under `sh -e` as the
//!   runner would, and writes the Code Quality and JUnit reports it declares;
//! - the container image: an image assembled from the binary (and the loader and libraries
//!   it links, since base images cannot be pulled here) with `docker import`, run by the real
//!   Docker Engine on the example image (`ci/services.sh`; `#[ignore]`d in a plain `cargo test`,
//!   selected by `ci/test.sh`, which fails when the engine cannot start).

use crate::formats::{assert_valid_sarif, repo};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_gpulint")
}

fn read_output(p: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Run the action's entry script in `dir` with these inputs; (exit, stdout, $GITHUB_OUTPUT).
fn action(dir: &Path, inputs: &[(&str, &str)]) -> (i32, String, BTreeMap<String, String>) {
    action_with(dir, Path::new(bin()), inputs)
}

/// [`action`] with `gpulint` as the binary the script runs.
fn action_with(
    dir: &Path,
    gpulint: &Path,
    inputs: &[(&str, &str)],
) -> (i32, String, BTreeMap<String, String>) {
    let tmp = tempfile::tempdir().unwrap();
    let out_file = tmp.path().join("github_output");
    let mut c = Command::new("bash");
    c.arg(repo().join("action/entrypoint.sh"))
        .current_dir(dir)
        .env("GPULINT", gpulint)
        .env("GITHUB_OUTPUT", &out_file)
        .env("HOME", tmp.path())
        .env("XDG_CACHE_HOME", tmp.path().join("cache"))
        .env("CI", "true");
    for (k, v) in inputs {
        c.env(
            format!("INPUT_{}", k.to_ascii_uppercase().replace('-', "_")),
            v,
        );
    }
    let o = c.output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        read_output(&out_file),
    )
}

#[test]
fn action_yml_runs_the_entry_script_and_uploads_its_sarif() {
    let y: yaml_serde::Value =
        yaml_serde::from_str(&std::fs::read_to_string(repo().join("action.yml")).unwrap()).unwrap();
    assert_eq!(y["runs"]["using"].as_str(), Some("composite"));
    let steps = y["runs"]["steps"].as_sequence().unwrap();
    let run = steps
        .iter()
        .find(|s| s["id"].as_str() == Some("run"))
        .expect("a step with id run");
    assert!(run["run"]
        .as_str()
        .unwrap()
        .contains("action/entrypoint.sh"));
    // Every INPUT_* the script reads is passed from an input that exists.
    let inputs = y["inputs"].as_mapping().unwrap();
    for (k, v) in run["env"].as_mapping().unwrap() {
        let k = k.as_str().unwrap();
        let v = v.as_str().unwrap();
        let name = v
            .trim_start_matches("${{ inputs.")
            .trim_end_matches(" }}")
            .to_string();
        assert!(inputs.contains_key(name.as_str()), "{k}: {v}");
    }
    let upload = steps
        .iter()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("github/codeql-action/upload-sarif@"))
        })
        .expect("SARIF upload step");
    assert_eq!(
        upload["with"]["sarif_file"].as_str(),
        Some("${{ steps.run.outputs.sarif-file }}")
    );
    assert!(upload["if"].as_str().unwrap().contains("always()"));
    let last = steps.last().unwrap();
    assert!(last["run"]
        .as_str()
        .unwrap()
        .contains("steps.run.outputs.exit-code"));
}

/// actionlint checks workflows, not action metadata: the structure GitHub requires of
/// `action.yml` (a composite action), and that every expression names what exists.
#[test]
fn action_yml_is_a_well_formed_composite_action() {
    let text = std::fs::read_to_string(repo().join("action.yml")).unwrap();
    let y: yaml_serde::Value = yaml_serde::from_str(&text).unwrap();
    let top = y.as_mapping().unwrap();
    for k in top.keys() {
        let k = k.as_str().unwrap();
        assert!(
            [
                "name",
                "author",
                "description",
                "inputs",
                "outputs",
                "runs",
                "branding"
            ]
            .contains(&k),
            "unknown top-level key {k}"
        );
    }
    for k in ["name", "description"] {
        assert!(y[k].as_str().is_some_and(|s| !s.is_empty()), "{k}");
    }
    assert!([
        "white",
        "yellow",
        "blue",
        "green",
        "orange",
        "red",
        "purple",
        "gray-dark"
    ]
    .contains(&y["branding"]["color"].as_str().unwrap()));
    let inputs = y["inputs"].as_mapping().unwrap();
    for (name, spec) in inputs {
        let name = name.as_str().unwrap();
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
            "{name}"
        );
        assert!(
            spec["description"].as_str().is_some(),
            "input {name} has no description"
        );
        assert!(
            spec.get("default").is_none_or(|d| d.is_string()),
            "input {name}: a default is a string"
        );
    }
    for (name, spec) in y["outputs"].as_mapping().unwrap() {
        assert!(spec["description"].as_str().is_some(), "{name:?}");
        assert!(
            spec["value"].as_str().is_some(),
            "a composite output needs a value: {name:?}"
        );
    }
    assert_eq!(y["runs"]["using"].as_str(), Some("composite"));
    let steps = y["runs"]["steps"].as_sequence().unwrap();
    let ids: Vec<&str> = steps.iter().filter_map(|s| s["id"].as_str()).collect();
    for s in steps {
        let (run, uses) = (s.get("run"), s.get("uses"));
        assert!(run.is_some() != uses.is_some(), "one of run/uses: {s:?}");
        if let Some(run) = run {
            assert_eq!(
                s["shell"].as_str(),
                Some("bash"),
                "a run step names its shell: {s:?}"
            );
            // Scripts of the action exist.
            for part in run.as_str().unwrap().split('"') {
                if let Some(rel) = part.strip_prefix("$GITHUB_ACTION_PATH/") {
                    assert!(repo().join(rel).is_file(), "{rel} does not exist");
                }
            }
        }
    }
    // Every expression names an input, a step or a context that exists.
    for expr in text.split("${{").skip(1) {
        let expr = expr.split("}}").next().unwrap();
        for word in expr.split(|c: char| !(c.is_ascii_alphanumeric() || "._-".contains(c))) {
            if let Some(name) = word.strip_prefix("inputs.") {
                assert!(
                    inputs.contains_key(name),
                    "no input {name}: ${{{{{expr}}}}}"
                );
            } else if let Some(rest) = word.strip_prefix("steps.") {
                let id = rest.split('.').next().unwrap();
                assert!(ids.contains(&id), "no step {id}: ${{{{{expr}}}}}");
            }
        }
    }
}

#[test]
fn action_entry_script_writes_sarif_annotations_and_the_exit_code() {
    let d = tempfile::tempdir().unwrap();
    let sarif = d.path().join("out.sarif");
    let sarif_s = sarif.to_string_lossy().into_owned();

    // An image that cannot run on an H100: exit code 1 recorded, the step itself succeeds so
    // the upload runs; SARIF valid; annotations printed.
    let (code, stdout, out) = action(
        &repo(),
        &[
            ("command", "image"),
            ("target", "testdata/images/example.tar"),
            ("args", "--gpu H100 --driver 535.104.05"),
            ("sarif-file", &sarif_s),
        ],
    );
    assert_eq!(code, 0, "{stdout}");
    assert_eq!(out["exit-code"], "1", "{stdout}");
    assert_eq!(out["sarif-file"], sarif_s);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&sarif).unwrap()).unwrap();
    assert_valid_sarif(&v);
    assert_eq!(v["runs"][0]["results"][0]["ruleId"], "GL001");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("::error title=GL001 no-kernel-image::")),
        "{stdout}"
    );

    // The same image on a T4: clean.
    let (code, stdout, out) = action(
        &repo(),
        &[
            ("command", "image"),
            ("target", "testdata/images/example.tar"),
            ("args", "--gpu T4 --driver 535.104.05"),
            ("sarif-file", &sarif_s),
        ],
    );
    assert_eq!((code, out["exit-code"].as_str()), (0, "0"), "{stdout}");

    // `lint` on a repository, with fail-on from the inputs.
    let r = tempfile::tempdir().unwrap();
    std::fs::write(
        r.path().join("Dockerfile"),
        "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN pip install numba>=0.57.1\n",
    )
    .unwrap();
    let (_, stdout, out) = action(r.path(), &[("sarif-file", "gpulint.sarif")]);
    assert_eq!(out["exit-code"], "1", "{stdout}");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("::error file=Dockerfile,line=2,")),
        "{stdout}"
    );
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(r.path().join("gpulint.sarif")).unwrap())
            .unwrap();
    assert_valid_sarif(&v);
    let (_, _, out) = action(r.path(), &[("fail-on", "none")]);
    assert_eq!(out["exit-code"], "0");

    // Unusable input: exit 2, and still a SARIF to upload, with GL000 in it; an unknown
    // command is refused.
    let (code, stdout, out) = action(r.path(), &[("command", "image"), ("target", "nope.tar")]);
    assert_eq!((code, out["exit-code"].as_str()), (0, "2"), "{stdout}");
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(r.path().join("gpulint.sarif")).unwrap())
            .unwrap();
    assert_valid_sarif(&v);
    assert_eq!(v["runs"][0]["results"][0]["ruleId"], "GL000", "{v:#}");
    assert_eq!(out["sarif-file"], "gpulint.sarif", "{stdout}");
    assert!(stdout.contains("::error title=gpulint::"), "{stdout}");
    let (_, _, out) = action(r.path(), &[("command", "rm -rf")]);
    assert_eq!(out["exit-code"], "2");
}

/// The template's job script as the GitLab runner runs it: its lines in one `sh -e` script,
/// with the job's variables (overridden by `vars`) in the environment.
fn gitlab_job(dir: &Path, vars: &[(&str, &str)]) -> std::process::Output {
    gitlab_job_with(dir, Path::new(bin()), vars)
}

/// [`gitlab_job`] with `gpulint` as the binary on PATH.
fn gitlab_job_with(dir: &Path, gpulint: &Path, vars: &[(&str, &str)]) -> std::process::Output {
    let y: yaml_serde::Value = yaml_serde::from_str(
        &std::fs::read_to_string(repo().join("ci/gitlab/gpulint.gitlab-ci.yml")).unwrap(),
    )
    .unwrap();
    let job = &y["gpulint"];
    let script: Vec<&str> = job["script"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    let bindir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(gpulint, bindir.path().join("gpulint")).unwrap();
    let home = tempfile::tempdir().unwrap();
    let mut c = Command::new("sh");
    c.arg("-e")
        .arg("-c")
        .arg(script.join("\n"))
        .current_dir(dir)
        .env(
            "PATH",
            format!(
                "{}:{}",
                bindir.path().display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .env("HOME", home.path())
        .env("XDG_CACHE_HOME", home.path().join("cache"))
        .env("CI", "true");
    for (k, v) in job["variables"].as_mapping().unwrap() {
        c.env(k.as_str().unwrap(), v.as_str().unwrap());
    }
    for (k, v) in vars {
        c.env(k, v);
    }
    let o = c.output().unwrap();
    // The reports the job declares as artifacts.
    let reports = &job["artifacts"]["reports"];
    assert_eq!(
        reports["codequality"].as_str(),
        Some("gl-code-quality-report.json")
    );
    assert_eq!(reports["junit"].as_str(), Some("gpulint-junit.xml"));
    o
}

#[test]
fn gitlab_template_job_writes_its_reports_and_fails_on_findings() {
    let r = tempfile::tempdir().unwrap();
    std::fs::write(
        r.path().join("Dockerfile"),
        "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN pip install numba>=0.57.1\n",
    )
    .unwrap();
    let o = gitlab_job(r.path(), &[]);
    let log = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(1), "{log}");
    assert!(
        log.contains("Dockerfile:2:"),
        "concise findings in the job log: {log}"
    );
    let cq: Value = serde_json::from_str(
        &std::fs::read_to_string(r.path().join("gl-code-quality-report.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(cq[0]["check_name"], "GL108", "{cq:#}");
    assert_eq!(cq[0]["location"]["path"], "Dockerfile");
    let junit = std::fs::read_to_string(r.path().join("gpulint-junit.xml")).unwrap();
    assert!(
        junit.contains("<testsuites") && junit.contains("<failure"),
        "{junit}"
    );

    // An image job with a fleet: the H100 pool fails it.
    let fleet = repo().join("examples/policy/fleet.toml");
    let args = format!("--fleet {}", fleet.display());
    let example = repo().join("testdata/images/example.tar");
    let o = gitlab_job(
        r.path(),
        &[
            ("GPULINT_COMMAND", "image"),
            ("GPULINT_TARGET", &example.to_string_lossy()),
            ("GPULINT_ARGS", &args),
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let cq = std::fs::read_to_string(r.path().join("gl-code-quality-report.json")).unwrap();
    assert!(cq.contains("GL001") && cq.contains("train-h100"), "{cq}");

    // Clean, and a missing input (exit 2, and both reports name it: GL000).
    std::fs::write(
        r.path().join("Dockerfile"),
        "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN pip install 'numba>=0.57.1'\n",
    )
    .unwrap();
    assert_eq!(gitlab_job(r.path(), &[]).status.code(), Some(0));
    let o = gitlab_job(r.path(), &[("GPULINT_TARGET", "missing-dir")]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let cq: Value = serde_json::from_str(
        &std::fs::read_to_string(r.path().join("gl-code-quality-report.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(cq[0]["check_name"], "GL000", "{cq:#}");
    assert_eq!(cq[0]["location"]["path"], "missing-dir", "{cq:#}");
    let junit = std::fs::read_to_string(r.path().join("gpulint-junit.xml")).unwrap();
    assert!(
        junit.contains("GL000") && junit.contains("<failure"),
        "{junit}"
    );
}

// ---------- argument splitting, several targets, the install step ----------

/// A stand-in for gpulint that records each command line it is given (NUL-separated words,
/// one invocation per line of the record) and succeeds; `--version` answers like gpulint.
fn recorder(dir: &Path) -> (PathBuf, PathBuf) {
    let script = dir.join("gpulint-recorder");
    let record = dir.join("record");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\n[ \"$1\" = --version ] && {{ echo 'gpulint 0.1.0'; exit 0; }}\n\
             for a in \"$@\"; do printf '%s\\0' \"$a\"; done >>'{rec}'\nprintf '\\n' >>'{rec}'\n\
             o=; for a in \"$@\"; do [ \"$o\" = 1 ] && echo '{{}}' >\"$a\"; o=; [ \"$a\" = -o ] && o=1; done\nexit 0\n",
            rec = record.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    (script, record)
}

/// The command lines the recorder saw, each as its words.
fn recorded(record: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(record)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            l.split('\0')
                .filter(|w| !w.is_empty())
                .map(str::to_string)
                .collect()
        })
        .collect()
}

fn words(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// action/split-words.sh run by `shell` on `input`: the words, or the error.
fn split_with(shell: &str, input: &str) -> Result<Vec<String>, String> {
    let script = format!(
        ". '{}'\nif gpulint_split_words \"$1\"; then IFS=$gpulint_us; set -f; for w in $gpulint_words; do printf '%s\\0' \"$w\"; done; else echo \"$gpulint_split_error\" >&2; exit 1; fi\n",
        repo().join("action/split-words.sh").display()
    );
    let o = Command::new(shell)
        .args(["-c", &script, "split", input])
        .output()
        .unwrap();
    if !o.status.success() {
        return Err(String::from_utf8_lossy(&o.stderr).trim().to_string());
    }
    let out = String::from_utf8(o.stdout).unwrap();
    let mut w: Vec<String> = out.split('\0').map(str::to_string).collect();
    assert_eq!(
        w.pop().as_deref(),
        Some(""),
        "each word ends with NUL: {out:?}"
    );
    Ok(w)
}

#[test]
fn split_words_reads_a_command_line_like_a_shell_without_evaluating_it() {
    let cases: &[(&str, &[&str])] = &[
        (
            r#"--gpu "RTX 4090" --driver 550.54.15"#,
            &["--gpu", "RTX 4090", "--driver", "550.54.15"],
        ),
        (
            "--gpu 'RTX 4090'\n\t--fleet  a\\ b.toml",
            &["--gpu", "RTX 4090", "--fleet", "a b.toml"],
        ),
        (r#"'' x"#, &["", "x"]),
        ("", &[]),
        (" \n\t ", &[]),
        // Nothing is evaluated: expansions, substitutions and globs stay text (and a blank
        // inside an unquoted `$(…)` separates words, as there is no substitution).
        (
            "$HOME $(touch pwned) `id` * ~",
            &["$HOME", "$(touch", "pwned)", "`id`", "*", "~"],
        ),
        (r#""a\"b\\c\$d\x" 'it'\''s'"#, &[r#"a"b\c$d\x"#, "it's"]),
        ("a\\\nb \"c\\\nd\"", &["ab", "cd"]),
        ("naïve 'été d’or'", &["naïve", "été d’or"]),
    ];
    for shell in ["sh", "bash"] {
        for (input, want) in cases {
            assert_eq!(
                split_with(shell, input).as_deref(),
                Ok(words(want).as_slice()),
                "{shell}: {input:?}"
            );
        }
        for (input, why) in [
            ("a 'b", "unterminated single quote"),
            ("a \"b", "unterminated double quote"),
            ("a\\", "ends with a backslash"),
            ("a\u{1f}b", "control character"),
        ] {
            let e = split_with(shell, input).unwrap_err();
            assert!(e.contains(why), "{shell}: {input:?}: {e}");
        }
    }
    assert!(!repo().join("pwned").exists());
}

#[test]
fn action_passes_quoted_arguments_and_several_targets_as_words() {
    let tmp = tempfile::tempdir().unwrap();
    let (fake, record) = recorder(tmp.path());
    let (_, stdout, out) = action_with(
        tmp.path(),
        &fake,
        &[
            ("command", "lint"),
            ("target", "'dir one'\nsrc  \"deploy/k8s manifests\""),
            (
                "args",
                r#"--gpu "RTX 4090" --driver 550.54.15 --select '$(touch pwned)'"#,
            ),
            ("sarif-file", "out.sarif"),
        ],
    );
    assert_eq!(out["exit-code"], "0", "{stdout}");
    let lines = recorded(&record);
    assert_eq!(lines.len(), 2, "SARIF run and annotation run: {lines:?}");
    assert_eq!(
        lines[0],
        words(&[
            "lint",
            "dir one",
            "src",
            "deploy/k8s manifests",
            "--gpu",
            "RTX 4090",
            "--driver",
            "550.54.15",
            "--select",
            "$(touch pwned)",
            "--fail-on",
            "error",
            "--format",
            "sarif",
            "-o",
            "out.sarif",
        ])
    );
    assert_eq!(lines[1][..12], lines[0][..12]);
    assert!(!tmp.path().join("pwned").exists());

    // `run` with the default target: the repository (a directory); several files each get
    // their own --file.
    std::fs::remove_file(&record).unwrap();
    action_with(
        tmp.path(),
        &fake,
        &[("command", "run"), ("annotations", "false")],
    );
    assert_eq!(recorded(&record)[0][..3], words(&["run", "--file", "."]));
    std::fs::remove_file(&record).unwrap();
    action_with(
        tmp.path(),
        &fake,
        &[
            ("command", "run"),
            ("target", "a.sh 'b c.md'"),
            ("annotations", "false"),
        ],
    );
    assert_eq!(
        recorded(&record)[0][..5],
        words(&["run", "--file", "a.sh", "--file", "b c.md"])
    );

    // Refused before gpulint runs: an unterminated quote, an image command with two images.
    std::fs::remove_file(&record).unwrap();
    let (_, stdout, out) = action_with(tmp.path(), &fake, &[("args", "--gpu 'RTX 4090")]);
    assert_eq!(out["exit-code"], "2");
    assert!(
        stdout.contains("::error title=gpulint::args: unterminated single quote"),
        "{stdout}"
    );
    let (_, stdout, out) = action_with(
        tmp.path(),
        &fake,
        &[("command", "image"), ("target", "a.tar b.tar")],
    );
    assert_eq!(out["exit-code"], "2");
    assert!(stdout.contains("one image"), "{stdout}");
    assert!(!record.exists(), "{:?}", recorded(&record));
}

#[test]
fn action_with_the_real_binary_checks_several_targets_and_a_multi_word_gpu() {
    let r = tempfile::tempdir().unwrap();
    for d in ["dir one", "two"] {
        std::fs::create_dir(r.path().join(d)).unwrap();
        std::fs::write(
            r.path().join(d).join("Dockerfile"),
            "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN pip install numba>=0.57.1\n",
        )
        .unwrap();
    }
    let (_, stdout, out) = action(
        r.path(),
        &[("target", "'dir one' two"), ("sarif-file", "g.sarif")],
    );
    assert_eq!(out["exit-code"], "1", "{stdout}");
    for f in ["dir one/Dockerfile", "two/Dockerfile"] {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with(&format!("::error file={f},line=2,"))),
            "{f}: {stdout}"
        );
    }

    // "RTX 4090" is one GPU name (it used to reach gpulint as `--gpu RTX` and `4090`).
    let (_, stdout, out) = action(
        &repo(),
        &[
            ("command", "image"),
            ("target", "testdata/images/example.tar"),
            ("args", r#"--gpu "RTX 4090" --driver 535.104.05"#),
            ("sarif-file", &r.path().join("i.sarif").to_string_lossy()),
        ],
    );
    assert_eq!(out["exit-code"], "1", "{stdout}");
    assert!(stdout.contains("RTX 4090"), "{stdout}");

    // `run` on the default target finds the scripts of the repository.
    std::fs::write(
        r.path().join("two/start.sh"),
        "docker run --rm nvidia/cuda:12.4.1-runtime-ubuntu22.04 nvidia-smi\n",
    )
    .unwrap();
    let (_, stdout, out) = action(
        r.path(),
        &[
            ("command", "run"),
            ("fail-on", "warning"),
            ("sarif-file", "r.sarif"),
        ],
    );
    assert_eq!(out["exit-code"], "1", "{stdout}");
    assert!(stdout.contains("file=two/start.sh,line=1"), "{stdout}");
}

#[test]
fn gitlab_template_splits_variables_like_the_action() {
    // The template carries the Action's splitter verbatim (it cannot source a file).
    let y: yaml_serde::Value = yaml_serde::from_str(
        &std::fs::read_to_string(repo().join("ci/gitlab/gpulint.gitlab-ci.yml")).unwrap(),
    )
    .unwrap();
    let script = y["gpulint"]["script"][1].as_str().unwrap();
    let file = std::fs::read_to_string(repo().join("action/split-words.sh")).unwrap();
    let func = &file[file.find("gpulint_split_words() {").unwrap()..];
    assert!(
        script.contains(func),
        "the template's splitter differs from action/split-words.sh"
    );

    let tmp = tempfile::tempdir().unwrap();
    let (fake, record) = recorder(tmp.path());
    let o = gitlab_job_with(
        tmp.path(),
        &fake,
        &[
            ("GPULINT_TARGET", "'dir one' two"),
            (
                "GPULINT_ARGS",
                r#"--gpu "RTX 4090" --select "$(touch pwned)""#,
            ),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let lines = recorded(&record);
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(
        lines[0],
        words(&[
            "lint",
            "dir one",
            "two",
            "--gpu",
            "RTX 4090",
            "--select",
            "$(touch pwned)",
            "--fail-on",
            "error",
            "--format",
            "gitlab",
            "-o",
            "gl-code-quality-report.json",
        ])
    );
    assert!(!tmp.path().join("pwned").exists());

    std::fs::remove_file(&record).unwrap();
    gitlab_job_with(tmp.path(), &fake, &[("GPULINT_COMMAND", "run")]);
    assert_eq!(recorded(&record)[0][..3], words(&["run", "--file", "."]));
    std::fs::remove_file(&record).unwrap();
    let o = gitlab_job_with(tmp.path(), &fake, &[("GPULINT_ARGS", "--gpu \"RTX")]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stderr).contains("unterminated double quote"));
    let o = gitlab_job_with(tmp.path(), &fake, &[("GPULINT_COMMAND", "image")]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(!record.exists());

    // With the real binary: a multi-word GPU and two directories, one with a blank.
    let r = tempfile::tempdir().unwrap();
    for d in ["dir one", "two"] {
        std::fs::create_dir(r.path().join(d)).unwrap();
        std::fs::write(
            r.path().join(d).join("Dockerfile"),
            "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN pip install numba>=0.57.1\n",
        )
        .unwrap();
    }
    let o = gitlab_job(
        r.path(),
        &[
            ("GPULINT_TARGET", "'dir one' two"),
            ("GPULINT_ARGS", "--gpu \"RTX 4090\""),
        ],
    );
    let log = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(
        log.contains("dir one/Dockerfile:2:") && log.contains("two/Dockerfile:2:"),
        "{log}"
    );
}

/// A release directory as GitHub serves it (`download/<tag>/<asset>`), holding a stand-in
/// binary for this machine.
fn fake_release(dir: &Path, tag: &str, corrupt: bool) {
    let target = match std::env::consts::ARCH {
        "aarch64" => "aarch64-unknown-linux-musl",
        _ => "x86_64-unknown-linux-musl",
    };
    let name = format!("gpulint-{tag}-{target}");
    let mut b = tar::Builder::new(Vec::new());
    let body = format!(
        "#!/bin/sh\necho 'gpulint {}'\n",
        tag.trim_start_matches('v')
    );
    let mut h = tar::Header::new_ustar();
    h.set_mode(0o755);
    h.set_size(body.len() as u64);
    b.append_data(&mut h, format!("{name}/gpulint"), body.as_bytes())
        .unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &b.into_inner().unwrap()).unwrap();
    let archive = gz.finish().unwrap();
    let d = dir.join("download").join(tag);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join(format!("{name}.tar.gz")), &archive).unwrap();
    let mut sum = hex_sha256(&archive);
    if corrupt {
        sum = sum.replacen(&sum[..1], if &sum[..1] == "0" { "1" } else { "0" }, 1);
    }
    std::fs::write(
        d.join(format!("{name}.tar.gz.sha256")),
        format!("{sum}  {name}.tar.gz\n"),
    )
    .unwrap();
}

fn hex_sha256(data: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(data))
}

/// action/install.sh with a `file://` release directory and a `cargo` stand-in that records
/// the fallback build; (stdout, the lines it added to $GITHUB_PATH, cargo's arguments).
fn install(releases: &Path, env: &[(&str, &str)]) -> (String, String, String) {
    let tmp = tempfile::tempdir().unwrap();
    let bindir = tmp.path().join("bin");
    std::fs::create_dir(&bindir).unwrap();
    let cargo_log = tmp.path().join("cargo-args");
    std::fs::write(
        bindir.join("cargo"),
        format!("#!/bin/sh\necho \"$@\" >'{}'\n", cargo_log.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(bindir.join("cargo"), std::fs::Permissions::from_mode(0o755)).unwrap();
    // No gpulint on this PATH: the system's tools, then the stand-in cargo.
    let path = format!("{}:/usr/bin:/bin", bindir.display());
    let gh_path = tmp.path().join("github_path");
    let o = Command::new("bash")
        .arg(repo().join("action/install.sh"))
        .env_clear()
        .env("PATH", path)
        .env("HOME", tmp.path())
        .env("RUNNER_TEMP", tmp.path())
        .env("GITHUB_PATH", &gh_path)
        .env("GITHUB_ACTION_PATH", repo())
        .env("GPULINT_RELEASES", format!("file://{}", releases.display()))
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{o:?}");
    (
        stdout,
        std::fs::read_to_string(&gh_path).unwrap_or_default(),
        std::fs::read_to_string(&cargo_log).unwrap_or_default(),
    )
}

#[test]
fn action_installs_the_released_binary_after_checking_its_sha256() {
    let releases = tempfile::tempdir().unwrap();
    fake_release(releases.path(), "v0.1.0", false);
    fake_release(releases.path(), "v0.2.0", true);

    // The version input, and the action's own ref when it is a version tag.
    for env in [
        vec![("INPUT_VERSION", "v0.1.0")],
        vec![("INPUT_VERSION", "0.1.0")],
        vec![("ACTION_REF", "v0.1.0")],
    ] {
        let (stdout, gh_path, cargo) = install(releases.path(), &env);
        assert!(
            stdout.contains("installed gpulint 0.1.0 from file://")
                && stdout.contains("gpulint-v0.1.0-"),
            "{env:?}: {stdout}"
        );
        assert!(gh_path.trim_end().ends_with("/gpulint/bin"), "{gh_path}");
        assert!(
            cargo.is_empty(),
            "no build when the download works: {cargo}"
        );
    }

    // A checksum that does not match: nothing installed from the archive, built from source.
    let (stdout, gh_path, cargo) = install(releases.path(), &[("INPUT_VERSION", "v0.2.0")]);
    assert!(
        stdout.contains("building from source instead of downloading: checksum mismatch"),
        "{stdout}"
    );
    assert!(cargo.starts_with("install --locked --path "), "{cargo}");
    assert!(gh_path.trim_end().ends_with("/gpulint/bin"));

    // No such release, and a ref that is no version (no latest release here either).
    let (stdout, _, cargo) = install(releases.path(), &[("INPUT_VERSION", "v9.9.9")]);
    assert!(
        stdout.contains("cannot download gpulint-v9.9.9-"),
        "{stdout}"
    );
    assert!(!cargo.is_empty());
    let (stdout, _, cargo) = install(releases.path(), &[("ACTION_REF", "main")]);
    assert!(
        stdout.contains("cannot find the latest release"),
        "{stdout}"
    );
    assert!(!cargo.is_empty());
    let (stdout, _, _) = install(releases.path(), &[("INPUT_VERSION", "v1;rm")]);
    assert!(stdout.contains("is not a release version"), "{stdout}");
}

/// The release workflow publishes, for every target the Action's install step downloads, the
/// archive and checksum names it asks for, on a `v*` tag.
#[test]
fn release_workflow_publishes_what_the_action_downloads() {
    let text = std::fs::read_to_string(repo().join(".github/workflows/release.yml")).unwrap();
    let y: yaml_serde::Value = yaml_serde::from_str(&text).unwrap();
    // `on` reads as a YAML 1.1 boolean to some parsers: look it up either way.
    let on = y
        .get("on")
        .or_else(|| y.get(yaml_serde::Value::Bool(true)))
        .expect("on:");
    assert_eq!(on["push"]["tags"][0].as_str(), Some("v*"));
    let targets: Vec<&str> = y["jobs"]["binaries"]["strategy"]["matrix"]["include"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|m| m["target"].as_str().unwrap())
        .collect();
    let install = std::fs::read_to_string(repo().join("action/install.sh")).unwrap();
    for t in ["x86_64-unknown-linux-musl", "aarch64-unknown-linux-musl"] {
        assert!(targets.contains(&t), "release builds {targets:?}, not {t}");
        assert!(
            install.contains(&format!("target={t}")),
            "install.sh never asks for {t}"
        );
    }
    for name in [r#"name="gpulint-$TAG-$TARGET""#, r#""$name.tar.gz.sha256""#] {
        assert!(text.contains(name), "release.yml: {name}");
    }
    assert!(install.contains(r#"name="gpulint-$tag-$target""#));
    assert!(install.contains(r#""$releases/download/$tag/$name.tar.gz.sha256""#));
}

/// The README's command table lists every command `gpulint --help` shows.
#[test]
fn readme_command_table_lists_every_command() {
    use clap::CommandFactory;
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let table = readme
        .split("\n## Commands\n")
        .nth(1)
        .and_then(|s| s.split("\n\n").next())
        .expect("README has a command table under ## Commands");
    for c in gpulint::cli::Cli::command().get_subcommands() {
        let name = c.get_name();
        if name == "help" {
            continue;
        }
        // `gpulint dockerfile\|compose\|…` rows name several commands.
        let listed = table.lines().any(|row| {
            row.split('`').nth(1).is_some_and(|cmd| {
                cmd.strip_prefix("gpulint ").is_some_and(|rest| {
                    rest.split_whitespace()
                        .next()
                        .is_some_and(|first| first.split("\\|").any(|n| n == name))
                })
            })
        });
        assert!(listed, "README's command table lacks `gpulint {name}`");
    }
}

// ---------- the container image ----------

/// Regular files the binary needs at run time: itself and what `ldd` resolves (the loader and
/// shared libraries; none for a static build).
fn runtime_closure(binary: &Path) -> Vec<PathBuf> {
    let mut files = vec![];
    let out = Command::new("ldd").arg(binary).output();
    if let Ok(o) = out {
        for line in String::from_utf8_lossy(&o.stdout).lines() {
            let path = match line.split_once("=>") {
                Some((_, rhs)) => rhs.split_whitespace().next(),
                None => line.split_whitespace().next(),
            };
            if let Some(p) = path.filter(|p| p.starts_with('/')) {
                files.push(PathBuf::from(p));
            }
        }
    }
    files
}

/// A root filesystem tar: the binary at /usr/local/bin/gpulint, its libraries at their paths,
/// an empty /tmp.
fn rootfs_tar(binary: &Path) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    let mut dirs = std::collections::BTreeSet::new();
    let mut add_dirs = |b: &mut tar::Builder<Vec<u8>>, p: &Path| {
        let mut anc: Vec<&Path> = p.ancestors().skip(1).collect();
        anc.reverse();
        for a in anc {
            let rel = a.strip_prefix("/").unwrap();
            if rel.as_os_str().is_empty() || !dirs.insert(rel.to_path_buf()) {
                continue;
            }
            let mut h = tar::Header::new_ustar();
            h.set_entry_type(tar::EntryType::Directory);
            h.set_mode(0o755);
            h.set_size(0);
            b.append_data(&mut h, rel, std::io::empty()).unwrap();
        }
    };
    // Plain regular-file entries (the tar crate may write a debug binary's holes as a GNU
    // sparse entry, which dockerd's layer extraction refuses).
    let add_file = |b: &mut tar::Builder<Vec<u8>>, from: &Path, to: &Path| {
        let data = std::fs::read(from).unwrap();
        let mut h = tar::Header::new_ustar();
        h.set_entry_type(tar::EntryType::Regular);
        h.set_mode(0o755);
        h.set_size(data.len() as u64);
        b.append_data(&mut h, to.strip_prefix("/").unwrap(), data.as_slice())
            .unwrap();
    };
    let target = Path::new("/usr/local/bin/gpulint");
    add_dirs(&mut b, target);
    add_file(&mut b, binary, target);
    for lib in runtime_closure(binary) {
        add_dirs(&mut b, &lib);
        add_file(&mut b, &lib, &lib);
    }
    let mut h = tar::Header::new_ustar();
    h.set_entry_type(tar::EntryType::Directory);
    h.set_mode(0o1777);
    h.set_size(0);
    b.append_data(&mut h, "tmp", std::io::empty()).unwrap();
    b.into_inner().unwrap()
}

#[test]
#[ignore = "needs the Docker Engine: ci/test.sh starts it and runs this with --ignored"]
fn container_image_of_the_binary_scans_the_example_image() {
    let engine = crate::common::start_services();
    let docker = engine
        .env
        .get("DOCKER_CLI")
        .cloned()
        .unwrap_or_else(|| "docker".into());
    let host = engine.env["GPULINT_DOCKER_HOST"].clone();
    let dk = || {
        let mut c = Command::new(&docker);
        c.arg("-H").arg(&host);
        c
    };
    let tar = rootfs_tar(Path::new(bin()));
    let tag = format!("gpulint-test/gpulint:{}", std::process::id());
    let mut import = dk()
        .args([
            "import",
            "--change",
            "ENTRYPOINT [\"/usr/local/bin/gpulint\"]",
            "--change",
            "ENV CI=true XDG_CACHE_HOME=/tmp/gpulint-cache",
            "-",
            &tag,
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        import.stdin.take().unwrap().write_all(&tar).unwrap();
    }
    let o = import.wait_with_output().unwrap();
    assert!(o.status.success(), "docker import: {o:?}");

    let images = repo().join("testdata/images");
    let run = |gpu: &str| {
        dk().args(["run", "--rm", "--network", "none", "-v"])
            .arg(format!("{}:/images:ro", images.display()))
            .args([
                &tag,
                "image",
                "/images/example.tar",
                "--gpu",
                gpu,
                "--driver",
                "535.104.05",
                "--format",
                "json",
            ])
            .output()
            .unwrap()
    };
    let o = run("H100");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    crate::formats::assert_valid_report(&v);
    assert_eq!(v["findings"][0]["rule"], "GL001", "{v:#}");
    assert_eq!(
        v["findings"][0]["location"]["path"],
        "/opt/venv/lib/python3.11/site-packages/myext/_C.so"
    );
    let o = run("T4");
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let _ = dk().args(["rmi", "-f", &tag]).output();
}

#[test]
fn dockerfile_is_multi_stage_pinned_by_digest_and_lints_clean() {
    // The Dockerfile users build, read and linted by gpulint itself (it must not be mistaken
    // for a GPU image); nothing is built: the release workflow builds it.
    let text = std::fs::read_to_string(repo().join("Dockerfile")).unwrap();
    let froms: Vec<&str> = text.lines().filter(|l| l.starts_with("FROM ")).collect();
    assert!(froms.len() >= 2, "multi-stage: {froms:?}");
    assert!(froms[0].contains("alpine") && froms[0].ends_with("AS build"));
    // Every base pinned by digest (tag kept for readers): a rebuild uses the tested bases.
    for f in &froms {
        let image = f.split_whitespace().nth(1).unwrap();
        let digest = image.split_once("@sha256:").map(|(_, d)| d);
        assert!(
            digest.is_some_and(|d| d.len() == 64 && d.bytes().all(|b| b.is_ascii_hexdigit())),
            "{f} is not pinned by digest"
        );
        assert!(
            image.split('@').next().unwrap().contains(':'),
            "{f}: keep the tag"
        );
    }
    assert!(
        froms.last().unwrap().contains("distroless/static"),
        "the default target is the minimal static base: {froms:?}"
    );
    assert!(text.contains("ENTRYPOINT [\"/usr/local/bin/gpulint\"]"));
    let o = Command::new(bin())
        .args(["dockerfile", "Dockerfile", "--format", "json"])
        .current_dir(repo())
        .env("HOME", tempfile::tempdir().unwrap().path())
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["findings"], serde_json::json!([]), "{v:#}");
}
