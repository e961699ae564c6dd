//! Every report format checked by what its consumer reads, on real runs of the binary (an
//! image with in-image findings, a fleet, a Dockerfile and a script with file:line:col
//! findings, a captured host):
//!
//! - `sarif`: the OASIS SARIF 2.1.0 JSON schema (`testdata/schemas/`), formats included, and
//!   GitHub code scanning's ingestion rules ([`github_sarif_errors`]) on every SARIF the tests
//!   produce; image findings name the image's repository file (or `.gpulint/image/…`) at
//!   line 1 and the in-image path as a logical location; every result has
//!   `partialFingerprints`; every `helpUri` is a page in `docs/rules/`.
//! - `gitlab`: GitLab's Code Quality format (transcribed in `testdata/schemas/`), fingerprints
//!   unique per report (GitLab keeps only the first issue of a fingerprint).
//! - `junit`, `checkstyle`: parsed with quick-xml, counts and attributes checked.
//! - `github`: the workflow-command grammar and the runner's escaping.
//! - `concise`: `file:line:col: CODE severity message`.
//! - `json`: `docs/schema/report.schema.json`, the same schema for every command.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl std::fmt::Debug for Out {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// The binary in `dir` with a clean environment (own HOME and cache, no daemon, CI mode).
pub fn run_in(dir: &Path, args: &[&str]) -> Out {
    run_in_env(dir, args, &[])
}

/// [`run_in`] with extra environment variables (`GITHUB_WORKSPACE`, …), which the clean
/// environment otherwise removes.
pub fn run_in_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Out {
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_gpulint"))
        .current_dir(dir)
        .env_remove("GITHUB_WORKSPACE")
        .env_remove("CI_PROJECT_DIR")
        .envs(env.iter().copied())
        .env("HOME", home.path())
        .env("XDG_CACHE_HOME", home.path().join("cache"))
        .env(
            "DOCKER_HOST",
            format!("unix://{}/no-docker.sock", home.path().display()),
        )
        .env("CI", "true")
        .env_remove("NO_COLOR")
        .env_remove("FORCE_COLOR")
        .env_remove("DOCKER_CONFIG")
        .env_remove("REGISTRY_AUTH_FILE")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("gpulint {args:?}: {e}"));
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn load_schema(rel: &str) -> Value {
    let p = repo().join(rel);
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Errors of `instance` against the schema file `rel` (formats checked too).
fn schema_errors(rel: &str, instance: &Value) -> Vec<String> {
    let schema = load_schema(rel);
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap_or_else(|e| panic!("{rel} does not compile: {e}"));
    validator
        .iter_errors(instance)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}

/// A SARIF log valid against the OASIS SARIF 2.1.0 schema and accepted by GitHub code
/// scanning. Every test that produces SARIF calls this.
pub fn assert_valid_sarif(v: &Value) {
    let errors = schema_errors("testdata/schemas/sarif-schema-2.1.0.json", v);
    assert!(errors.is_empty(), "SARIF 2.1.0 schema: {errors:#?}\n{v:#}");
    let errors = github_sarif_errors(v);
    assert!(
        errors.is_empty(),
        "GitHub code scanning: {errors:#?}\n{v:#}"
    );
}

/// What GitHub code scanning refuses or cannot place, beyond the schema
/// (docs.github.com, "SARIF support for code scanning"): every result's `ruleId` is a rule of
/// `tool.driver.rules` (and `ruleIndex` points at it); `locations[0].physicalLocation` has an
/// `artifactLocation.uri` relative to the repository (no scheme, not absolute, no `..`, with
/// `uriBaseId` `%SRCROOT%` declared in `originalUriBaseIds` when given) and a
/// `region.startLine` of at least 1; `partialFingerprints` present; at most 25,000 results
/// and 25,000 rules per run, 20 runs per file, 1,000 locations per result; and the file under
/// 10 MB (GitHub's bound is on the gzipped upload: the raw size is a stricter stand-in).
pub fn github_sarif_errors(v: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    let size = serde_json::to_vec(v).map(|b| b.len()).unwrap_or(usize::MAX);
    if size > 10 << 20 {
        errors.push(format!("{size} bytes: over 10 MB"));
    }
    let Some(runs) = v["runs"].as_array() else {
        return vec!["no runs".into()];
    };
    if runs.len() > 20 {
        errors.push(format!("{} runs: over 20", runs.len()));
    }
    for (ri, run) in runs.iter().enumerate() {
        let driver = &run["tool"]["driver"];
        if driver["name"].as_str().is_none_or(str::is_empty) {
            errors.push(format!("run {ri}: no tool.driver.name"));
        }
        let rules: Vec<&str> = driver["rules"]
            .as_array()
            .map(|r| r.iter().filter_map(|x| x["id"].as_str()).collect())
            .unwrap_or_default();
        if rules.len() > 25_000 {
            errors.push(format!("run {ri}: {} rules: over 25,000", rules.len()));
        }
        let bases = run["originalUriBaseIds"].as_object();
        let results = run["results"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        if results.len() > 25_000 {
            errors.push(format!("run {ri}: {} results: over 25,000", results.len()));
        }
        for (i, r) in results.iter().enumerate() {
            let at = format!("run {ri} result {i}");
            let id = r["ruleId"].as_str().unwrap_or("");
            if !rules.contains(&id) {
                errors.push(format!("{at}: ruleId {id:?} is not in tool.driver.rules"));
            }
            if let Some(ix) = r["ruleIndex"].as_u64() {
                if rules.get(ix as usize) != Some(&id) {
                    errors.push(format!("{at}: ruleIndex {ix} is not rule {id:?}"));
                }
            }
            if r["message"]["text"].as_str().is_none_or(str::is_empty) {
                errors.push(format!("{at}: no message.text"));
            }
            let fps = r["partialFingerprints"].as_object();
            if fps.is_none_or(|m| m.is_empty() || m.values().any(|x| !x.is_string())) {
                errors.push(format!("{at}: no partialFingerprints"));
            }
            let locations = r["locations"].as_array().map(Vec::as_slice).unwrap_or(&[]);
            if locations.len() > 1000 {
                errors.push(format!("{at}: over 1,000 locations"));
            }
            let Some(phys) = locations.first().map(|l| &l["physicalLocation"]) else {
                errors.push(format!("{at}: no locations"));
                continue;
            };
            let art = &phys["artifactLocation"];
            let uri = art["uri"].as_str().unwrap_or("");
            let scheme = uri
                .split_once(':')
                .is_some_and(|(s, _)| !s.is_empty() && !s.contains('/'));
            if uri.is_empty()
                || uri.starts_with('/')
                || scheme
                || uri.split('/').any(|seg| seg == "..")
            {
                errors.push(format!(
                    "{at}: uri {uri:?} is not relative to the repository"
                ));
            }
            if let Some(base) = art.get("uriBaseId") {
                let declared = base
                    .as_str()
                    .is_some_and(|b| bases.is_some_and(|m| m.contains_key(b)));
                if base != "%SRCROOT%" || !declared {
                    errors.push(format!(
                        "{at}: uriBaseId {base} is not a declared %SRCROOT%"
                    ));
                }
            }
            let region = &phys["region"];
            match region["startLine"].as_u64() {
                Some(l) if l >= 1 => {
                    if region["endLine"].as_u64().is_some_and(|e| e < l) {
                        errors.push(format!("{at}: endLine before startLine"));
                    }
                }
                _ => errors.push(format!("{at}: no region.startLine >= 1")),
            }
            if region["startColumn"].as_u64() == Some(0) {
                errors.push(format!("{at}: startColumn 0"));
            }
        }
    }
    errors
}

/// A gpulint JSON report valid against `docs/schema/report.schema.json`.
pub fn assert_valid_report(v: &Value) {
    let errors = schema_errors("docs/schema/report.schema.json", v);
    assert!(errors.is_empty(), "report schema: {errors:#?}\n{v:#}");
}

fn fleet_file() -> String {
    repo()
        .join("examples/policy/fleet.toml")
        .to_string_lossy()
        .into_owned()
}

/// (arguments without --format, exit code, what kind of locations its findings have)
fn cases() -> Vec<(Vec<String>, i32, &'static str)> {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    vec![
        (
            s(&[
                "image",
                "testdata/images/example.tar",
                "--gpu",
                "H100",
                "--driver",
                "535.104.05",
            ]),
            1,
            "image",
        ),
        (
            s(&[
                "image",
                "testdata/images/example.tar",
                "--fleet",
                &fleet_file(),
            ]),
            1,
            "image",
        ),
        (
            s(&["dockerfile", "testdata/spec/seed.Dockerfile"]),
            1,
            "file",
        ),
        (
            s(&["run", "--file", "testdata/spec/seed-run.sh"]),
            1,
            "file",
        ),
        (
            s(&[
                "host",
                "--check",
                "--root",
                "testdata/host/variants/gpu-err",
            ]),
            1,
            "host",
        ),
    ]
}

/// Run every case in `format`; the exit code is the same in every format.
fn outputs(format: &str) -> Vec<(Vec<String>, &'static str, Out)> {
    let mut out = Vec::new();
    for (args, code, kind) in cases() {
        let mut a: Vec<&str> = args.iter().map(String::as_str).collect();
        a.extend(["--format", format]);
        let r = run_in(&repo(), &a);
        assert_eq!(r.code, code, "{a:?}: {r:?}");
        out.push((args, kind, r));
    }
    out
}

#[test]
fn sarif_is_valid_sarif_2_1_0_with_image_artifacts_and_fingerprints() {
    let mut kinds_seen = Vec::new();
    for (args, kind, r) in outputs("sarif") {
        let v: Value = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {r:?}"));
        assert_valid_sarif(&v);
        let run = &v["runs"][0];
        let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
        for rule in rules {
            let uri = rule["helpUri"].as_str().unwrap();
            let page = uri
                .split("/blob/main/")
                .nth(1)
                .unwrap_or_else(|| panic!("helpUri {uri} is not a page of the repository"));
            assert!(repo().join(page).is_file(), "{uri}: no {page}");
        }
        let results = run["results"].as_array().unwrap();
        assert!(!results.is_empty(), "{args:?} has findings");
        for res in results {
            let fp = res["partialFingerprints"]["gpulint/v1"].as_str();
            assert!(fp.is_some_and(|f| f.len() == 32), "{res:#}");
            let loc = &res["locations"][0];
            let art = &loc["physicalLocation"]["artifactLocation"];
            let region = &loc["physicalLocation"]["region"];
            assert_eq!(art["uriBaseId"], "%SRCROOT%", "{res:#}");
            match kind {
                "image" => {
                    // The archive as the repository names it, at line 1; the file inside it
                    // is the logical location.
                    assert_eq!(art["uri"], "testdata/images/example.tar", "{res:#}");
                    assert_eq!(region["startLine"], 1, "{res:#}");
                    let fqn = loc["logicalLocations"][0]["fullyQualifiedName"]
                        .as_str()
                        .unwrap_or("");
                    if res["ruleId"] == "GL001" {
                        assert!(fqn.ends_with("/myext/_C.so"), "{res:#}");
                    }
                }
                "file" => {
                    let uri = art["uri"].as_str().unwrap();
                    assert!(uri.starts_with("testdata/spec/seed"), "{res:#}");
                    let line = region["startLine"].as_u64();
                    assert!(line.is_some_and(|l| l >= 1), "{res:#}");
                }
                _ => {
                    assert_eq!(art["uri"], ".gpulint/host", "{res:#}");
                    assert_eq!(region["startLine"], 1, "{res:#}");
                }
            }
        }
        kinds_seen.push(kind);
    }
    assert!(kinds_seen.contains(&"host"));

    // The schema check can fail: a level SARIF does not know is refused.
    let r = run_in(
        &repo(),
        &[
            "dockerfile",
            "testdata/spec/seed.Dockerfile",
            "--format",
            "sarif",
        ],
    );
    let mut v: Value = serde_json::from_str(&r.stdout).unwrap();
    v["runs"][0]["results"][0]["level"] = "fatal".into();
    assert!(!schema_errors("testdata/schemas/sarif-schema-2.1.0.json", &v).is_empty());
}

/// The GitHub checks can fail, each on what gpulint's SARIF used to hold: an absolute
/// `file://` or `docker-archive%3A/…` artifact without a region, an unknown rule.
#[test]
fn github_sarif_rules_refuse_what_code_scanning_refuses() {
    let r = run_in(
        &repo(),
        &[
            "dockerfile",
            "testdata/spec/seed.Dockerfile",
            "--format",
            "sarif",
        ],
    );
    let good: Value = serde_json::from_str(&r.stdout).unwrap();
    assert!(github_sarif_errors(&good).is_empty());
    let broken = |edit: &dyn Fn(&mut Value)| {
        let mut v = good.clone();
        edit(&mut v["runs"][0]["results"][0]);
        github_sarif_errors(&v)
    };
    let image_uri = |r: &mut Value| {
        let phys = &mut r["locations"][0]["physicalLocation"];
        phys["artifactLocation"] = serde_json::json!({"uri": "docker-archive%3A/builds/x/app.tar"});
        phys.as_object_mut().unwrap().remove("region");
    };
    let e = broken(&image_uri);
    assert!(e.iter().any(|e| e.contains("startLine")), "{e:?}");
    let e = broken(&|r| {
        r["locations"][0]["physicalLocation"]["artifactLocation"] =
            serde_json::json!({"uri": "file:///builds/x/app.tar"})
    });
    assert!(e.iter().any(|e| e.contains("not relative")), "{e:?}");
    let e = broken(&|r| {
        r["ruleId"] = "GL999".into();
    });
    assert!(e.iter().any(|e| e.contains("GL999")), "{e:?}");
    let e = broken(&|r| {
        r.as_object_mut().unwrap().remove("partialFingerprints");
    });
    assert!(e.iter().any(|e| e.contains("partialFingerprints")), "{e:?}");
}

/// A repository whose manifest is `deploy/job.yaml`, with an unused `[[ignore]]` in its
/// `.gpulint.toml` (a GL199 naming the config file).
fn deploy_repo() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("deploy")).unwrap();
    std::fs::write(
        d.path().join("deploy/job.yaml"),
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: t}\nspec:\n  template:\n    spec:\n      containers:\n      - name: t\n        image: nvidia/cuda:11.3.1-runtime-ubuntu20.04\n      restartPolicy: Never\n",
    )
    .unwrap();
    std::fs::write(
        d.path().join(".gpulint.toml"),
        "ignore = [{ rule = \"GL112\", paths = [\"deploy/**\"], reason = \"test\" }]\n",
    )
    .unwrap();
    d
}

/// The file every finding of a report names, per format.
fn files_named(format: &str, stdout: &str) -> Vec<String> {
    let json =
        || -> Value { serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}")) };
    match format {
        "json" => json()["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["location"]["file"].as_str().unwrap().to_string())
            .collect(),
        "sarif" => {
            let v = json();
            assert_valid_sarif(&v);
            v["runs"][0]["results"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| {
                    r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                        .as_str()
                        .unwrap()
                        .to_string()
                })
                .collect()
        }
        "gitlab" => json()
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["location"]["path"].as_str().unwrap().to_string())
            .collect(),
        "concise" => stdout
            .lines()
            .map(|l| l.split(':').next().unwrap().to_string())
            .collect(),
        "github" => stdout
            .lines()
            .map(|l| {
                let file = l.split("file=").nth(1).unwrap();
                file.split([',', ':']).next().unwrap().to_string()
            })
            .collect(),
        "checkstyle" => stdout
            .lines()
            .filter_map(|l| l.trim().strip_prefix("<file name=\""))
            .map(|l| l.split('"').next().unwrap().to_string())
            .collect(),
        other => panic!("{other}"),
    }
}

/// `cd deploy && gpulint lint .` names `deploy/job.yaml` (and `.gpulint.toml` for GL199), in
/// every format: relative to the git top level, or to `CI_PROJECT_DIR` / `GITHUB_WORKSPACE`.
#[test]
fn paths_are_relative_to_the_repository_root_in_every_format() {
    const FORMATS: &[&str] = &["json", "sarif", "gitlab", "concise", "github", "checkstyle"];
    let check = |dir: &Path, env: &[(&str, &str)]| {
        for format in FORMATS {
            let r = run_in_env(dir, &["lint", ".", "--format", format], env);
            assert!(r.code <= 1, "{format}: {r:?}");
            let mut files = files_named(format, &r.stdout);
            files.sort();
            files.dedup();
            assert_eq!(
                files,
                [".gpulint.toml", "deploy/job.yaml"],
                "{format}: {r:?}"
            );
        }
    };
    // A git work tree.
    let d = deploy_repo();
    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(d.path())
        .status();
    if git.is_ok_and(|s| s.success()) {
        check(&d.path().join("deploy"), &[]);
    }
    // No git, a CI workspace variable: GitLab's, then GitHub's.
    let d = deploy_repo();
    let ws = d.path().canonicalize().unwrap();
    let ws = ws.to_str().unwrap();
    check(&d.path().join("deploy"), &[("CI_PROJECT_DIR", ws)]);
    check(&d.path().join("deploy"), &[("GITHUB_WORKSPACE", ws)]);
}

#[test]
fn gitlab_code_quality_matches_gitlabs_format() {
    for (args, kind, r) in outputs("gitlab") {
        let v: Value = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {r:?}"));
        let errors = schema_errors("testdata/schemas/gitlab-codequality.schema.json", &v);
        assert!(errors.is_empty(), "{args:?}: {errors:#?}\n{v:#}");
        let issues = v.as_array().unwrap();
        assert!(!issues.is_empty(), "{args:?}");
        let mut fps: Vec<&str> = issues
            .iter()
            .map(|i| i["fingerprint"].as_str().unwrap())
            .collect();
        fps.sort_unstable();
        let n = fps.len();
        fps.dedup();
        assert_eq!(fps.len(), n, "fingerprints repeat: {v:#}");
        if kind == "image" {
            // The local archive, relative to the repository, not an absolute CI path.
            for i in issues {
                assert_eq!(
                    i["location"]["path"], "testdata/images/example.tar",
                    "{i:#}"
                );
            }
        }
        if kind == "file" {
            for i in issues {
                let p = i["location"]["path"].as_str().unwrap();
                assert!(!p.starts_with('/') && !p.starts_with("./"), "{i:#}");
                assert!(i["location"]["lines"]["begin"].as_u64().unwrap() >= 1);
            }
        }
    }
    let bad = serde_json::json!([{"description": "x", "check_name": "GL001", "fingerprint": "f",
        "severity": "error", "location": {"path": "./Dockerfile", "lines": {"begin": 1}}}]);
    assert_eq!(
        schema_errors("testdata/schemas/gitlab-codequality.schema.json", &bad).len(),
        2,
        "`error` is no GitLab severity and `./` paths are refused"
    );
}

/// Attributes of one XML start/empty tag.
fn attrs(e: &quick_xml::events::BytesStart) -> std::collections::BTreeMap<String, String> {
    e.attributes()
        .map(|a| {
            let a = a.unwrap();
            (
                a.key.as_ref().to_string(),
                a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                    .unwrap()
                    .into_owned(),
            )
        })
        .collect()
}

#[derive(Debug, Default)]
pub struct Suite {
    pub attrs: std::collections::BTreeMap<String, String>,
    pub cases: usize,
    pub failures: usize,
    pub skipped: usize,
}

#[test]
fn junit_parses_with_consistent_counts() {
    for (args, _, r) in outputs("junit") {
        let (root, suites) = parse_junit_simple(&r.stdout);
        assert!(!suites.is_empty(), "{args:?}");
        let (mut tests, mut failures) = (0, 0);
        for s in &suites {
            assert_eq!(
                s.attrs["tests"].parse::<usize>().unwrap(),
                s.cases,
                "{args:?}"
            );
            assert_eq!(s.attrs["failures"].parse::<usize>().unwrap(), s.failures);
            assert_eq!(s.attrs["skipped"].parse::<usize>().unwrap(), s.skipped);
            tests += s.cases;
            failures += s.failures;
        }
        assert_eq!(root["tests"].parse::<usize>().unwrap(), tests);
        assert_eq!(root["failures"].parse::<usize>().unwrap(), failures);
        assert!(failures >= 1, "{args:?} has findings: {}", r.stdout);
    }
}

/// JUnit XML with its nesting checked: testsuites > testsuite > testcase > failure.
pub fn parse_junit_simple(xml: &str) -> (std::collections::BTreeMap<String, String>, Vec<Suite>) {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut root = None;
    let mut suites: Vec<Suite> = Vec::new();
    let mut stack: Vec<String> = Vec::new();
    loop {
        let ev = reader
            .read_event()
            .unwrap_or_else(|e| panic!("{e}:\n{xml}"));
        let (e, empty) = match &ev {
            Event::Start(e) => (e, false),
            Event::Empty(e) => (e, true),
            Event::End(_) => {
                stack.pop();
                continue;
            }
            Event::Eof => break,
            _ => continue,
        };
        let name = e.name().as_ref().to_string();
        let parent = stack.last().map(String::as_str);
        match (parent, name.as_str()) {
            (None, "testsuites") => root = Some(attrs(e)),
            (Some("testsuites"), "testsuite") => suites.push(Suite {
                attrs: attrs(e),
                ..Default::default()
            }),
            (Some("testsuite"), "testcase") => {
                let a = attrs(e);
                assert!(
                    a.contains_key("name") && a.contains_key("classname"),
                    "{a:?}"
                );
                suites.last_mut().unwrap().cases += 1;
            }
            (Some("testcase"), "failure") => {
                let a = attrs(e);
                assert!(a.contains_key("message") && a.contains_key("type"), "{a:?}");
                suites.last_mut().unwrap().failures += 1;
            }
            (Some("testcase"), "skipped") => suites.last_mut().unwrap().skipped += 1,
            (Some("testcase"), "system-out") => {}
            other => panic!("unexpected element {other:?} in JUnit XML:\n{xml}"),
        }
        if !empty {
            stack.push(name);
        }
    }
    assert!(stack.is_empty(), "unclosed elements {stack:?}");
    (root.expect("<testsuites> root"), suites)
}

#[test]
fn checkstyle_parses_with_located_errors() {
    use quick_xml::events::Event;
    for (args, kind, r) in outputs("checkstyle") {
        let mut reader = quick_xml::Reader::from_str(&r.stdout);
        let mut stack: Vec<String> = Vec::new();
        let mut errors = 0;
        loop {
            let ev = reader.read_event().unwrap_or_else(|e| panic!("{e}: {r:?}"));
            let (e, empty) = match &ev {
                Event::Start(e) => (e, false),
                Event::Empty(e) => (e, true),
                Event::End(_) => {
                    stack.pop();
                    continue;
                }
                Event::Eof => break,
                _ => continue,
            };
            let name = e.name().as_ref().to_string();
            let a = attrs(e);
            match (stack.last().map(String::as_str), name.as_str()) {
                (None, "checkstyle") => {}
                (Some("checkstyle"), "file") => assert!(!a["name"].is_empty()),
                (Some("file"), "error") => {
                    errors += 1;
                    assert!(["error", "warning", "info"].contains(&a["severity"].as_str()));
                    assert!(a["source"].starts_with("gpulint.GL"), "{a:?}");
                    assert!(!a["message"].is_empty());
                    if kind == "file" {
                        assert!(a["line"].parse::<u32>().unwrap() >= 1, "{a:?}");
                    }
                }
                other => panic!("unexpected element {other:?}: {r:?}"),
            }
            if !empty {
                stack.push(name);
            }
        }
        assert!(errors >= 1, "{args:?}: {r:?}");
    }
}

/// Undo the Actions runner's escaping (actions/toolkit `escapeData` / `escapeProperty`),
/// refusing what the runner would misread: a raw `%` not starting an escape, raw CR/LF, and
/// in properties a raw `,` or `:`.
fn unescape_workflow(s: &str, property: bool) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find(['%', '\r', '\n', ',', ':']) {
        out.push_str(&rest[..i]);
        let c = rest.as_bytes()[i];
        if c == b'%' {
            let esc = rest.get(i..i + 3).ok_or("truncated escape")?;
            let ch = match esc {
                "%25" => '%',
                "%0D" => '\r',
                "%0A" => '\n',
                "%3A" if property => ':',
                "%2C" if property => ',',
                other => return Err(format!("bad escape {other}")),
            };
            out.push(ch);
            rest = &rest[i + 3..];
        } else if c == b'\r' || c == b'\n' || property {
            return Err(format!("raw {:?} in {s:?}", c as char));
        } else {
            out.push(c as char);
            rest = &rest[i + 1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[test]
fn github_annotations_follow_the_workflow_command_grammar() {
    // https://docs.github.com/actions/reference/workflow-commands-for-github-actions
    const PROPS: &[&str] = &["file", "line", "endLine", "col", "endColumn", "title"];
    for (args, kind, r) in outputs("github") {
        let json = run_in(&repo(), &{
            let mut a: Vec<&str> = args.iter().map(String::as_str).collect();
            a.extend(["--format", "json"]);
            a
        });
        let findings = json_findings(&json.stdout);
        let lines: Vec<&str> = r.stdout.lines().collect();
        assert_eq!(lines.len(), findings.len(), "one line per finding: {r:?}");
        for (line, f) in lines.iter().zip(&findings) {
            let rest = line.strip_prefix("::").unwrap_or_else(|| panic!("{line}"));
            let (cmd, rest) = rest.split_once([' ', ':']).unwrap();
            let expected = match f["severity"].as_str().unwrap() {
                "error" => "error",
                "warning" => "warning",
                _ => "notice",
            };
            assert_eq!(cmd, expected, "{line}");
            let (props, message) = rest.split_once("::").unwrap_or(("", rest));
            let mut seen = std::collections::BTreeMap::new();
            for p in props.split(',').filter(|p| !p.is_empty()) {
                let (k, v) = p.split_once('=').unwrap_or_else(|| panic!("{p} in {line}"));
                assert!(PROPS.contains(&k), "unknown property {k}: {line}");
                let v = unescape_workflow(v, true).unwrap_or_else(|e| panic!("{e}: {line}"));
                seen.insert(k.to_string(), v);
            }
            let message = unescape_workflow(message, false).unwrap_or_else(|e| panic!("{e}"));
            assert!(
                message.contains(f["message"].as_str().unwrap()),
                "{message} / {f:#}"
            );
            assert!(seen["title"].starts_with(f["rule"].as_str().unwrap()));
            if kind == "file" {
                assert_eq!(
                    seen["file"],
                    f["location"]["file"].as_str().unwrap(),
                    "{line}"
                );
                assert_eq!(seen["line"], f["location"]["line"].to_string());
            } else {
                assert!(!seen.contains_key("line"), "no invented line: {line}");
            }
        }
    }
    // The unescaper can fail: a raw comma in a property is refused.
    assert!(unescape_workflow("a,b", true).is_err());
    assert_eq!(unescape_workflow("50%25%0Aok", false).unwrap(), "50%\nok");
}

fn json_findings(stdout: &str) -> Vec<Value> {
    let v: Value = serde_json::from_str(stdout).unwrap();
    v["findings"].as_array().unwrap().clone()
}

#[test]
fn concise_is_one_clickable_line_per_finding() {
    for (args, kind, r) in outputs("concise") {
        let mut a: Vec<&str> = args.iter().map(String::as_str).collect();
        a.extend(["--format", "json"]);
        let findings = json_findings(&run_in(&repo(), &a).stdout);
        let lines: Vec<&str> = r.stdout.lines().collect();
        assert_eq!(lines.len(), findings.len(), "{r:?}");
        for (line, f) in lines.iter().zip(&findings) {
            let code = f["rule"].as_str().unwrap();
            if kind == "file" {
                let loc = &f["location"];
                let prefix = format!(
                    "{}:{}:{}: {code} ",
                    loc["file"].as_str().unwrap(),
                    loc["line"],
                    loc["column"]
                );
                assert!(line.starts_with(&prefix), "{line} / {prefix}");
            } else {
                assert!(line.contains(&format!(": {code} ")), "{line}");
            }
            assert!(!line.contains('\x1b'));
        }
    }
}

#[test]
fn every_command_writes_the_same_json_schema() {
    let mut subjects = Vec::new();
    for (args, _, r) in outputs("json") {
        let v: Value = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {r:?}"));
        assert_valid_report(&v);
        assert_eq!(v["schema_version"], 2);
        let f = &v["findings"];
        assert_eq!(
            v["summary"]["error"].as_u64().unwrap() as usize,
            f.as_array()
                .unwrap()
                .iter()
                .filter(|f| f["severity"] == "error")
                .count(),
            "{args:?}"
        );
        subjects.push(v["subject"].as_str().unwrap().to_string());
    }
    // `lint`, `k8s` and `compose` too, on a small repository.
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("job.yaml"),
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: t}\nspec:\n  template:\n    spec:\n      containers:\n      - name: t\n        image: nvidia/cuda:12.4.1-runtime-ubuntu22.04\n      restartPolicy: Never\n",
    )
    .unwrap();
    std::fs::write(
        d.path().join("compose.yaml"),
        "services:\n  app:\n    image: nvidia/cuda:12.4.1-runtime-ubuntu22.04\n    runtime: nvidia\n",
    )
    .unwrap();
    for args in [
        vec!["lint", ".", "--format", "json"],
        vec!["k8s", "job.yaml", "--format", "json"],
        vec!["compose", "compose.yaml", "--format", "json"],
    ] {
        let r = run_in(d.path(), &args);
        assert!(r.code <= 1, "{args:?}: {r:?}");
        let v: Value = serde_json::from_str(&r.stdout).unwrap();
        assert_valid_report(&v);
        assert!(
            !v["findings"].as_array().unwrap().is_empty(),
            "{args:?}: {v:#}"
        );
    }
    assert!(subjects.contains(&"host".to_string()), "{subjects:?}");

    // The schema check can fail: host --check's old key `id` is refused.
    let bad = serde_json::json!({"schema_version": 2, "tool": {"name": "gpulint", "version": "0"},
        "subject": "host", "targets": [], "details": {}, "summary": {"error": 0, "warning": 0, "info": 0},
        "findings": [{"id": "GL201", "name": "x", "severity": "info", "message": "m"}]});
    assert!(!schema_errors("docs/schema/report.schema.json", &bad).is_empty());
}
