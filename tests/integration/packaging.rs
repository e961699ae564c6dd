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
    let tmp = tempfile::tempdir().unwrap();
    let out_file = tmp.path().join("github_output");
    let mut c = Command::new("bash");
    c.arg(repo().join("action/entrypoint.sh"))
        .current_dir(dir)
        .env("GPULINT", bin())
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
    let y: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(repo().join("action.yml")).unwrap()).unwrap();
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
    let y: serde_yaml::Value = serde_yaml::from_str(
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
    std::os::unix::fs::symlink(bin(), bindir.path().join("gpulint")).unwrap();
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
fn dockerfile_builds_a_static_binary_on_a_minimal_base() {
    // The Dockerfile users build (base images cannot be pulled here, so it is read, and
    // linted by gpulint itself: it must not be mistaken for a GPU image).
    let text = std::fs::read_to_string(repo().join("Dockerfile")).unwrap();
    let froms: Vec<&str> = text.lines().filter(|l| l.starts_with("FROM ")).collect();
    assert!(froms.len() >= 2, "multi-stage: {froms:?}");
    assert!(froms[0].contains("alpine") && froms[0].ends_with("AS build"));
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
