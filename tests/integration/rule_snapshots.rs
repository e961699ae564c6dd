//! Per-rule fixtures in, rendered findings out (ruff's snapshot pattern; see
//! `testdata/rules/README.md`). Each case runs the real `gpulint` binary (or, for image rules,
//! the same rule engine on a real install's inventory) and its concise output and exit code
//! must equal the accepted insta snapshot. Besides the snapshot, every case must report its
//! folder's rule (or, for `ok-` cases, must not), so accepting a snapshot cannot hide a rule
//! that went quiet.

use gpulint::finding::Finding;
use gpulint::gpu_target::cli::targets_from_flags;
use gpulint::inventory::Inventory;
use gpulint::matrix::Facts;
use gpulint::report::{Format, Report, Style};
use gpulint::rules::check_image;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The `# args:` line of a fixture, split on whitespace; quotes group words (`"RTX 5090"`).
pub(crate) fn fixture_args(text: &str) -> Vec<String> {
    let Some(line) = text.lines().find_map(|l| l.strip_prefix("# args:")) else {
        return Vec::new();
    };
    let (mut out, mut cur, mut quoted) = (Vec::new(), String::new(), false);
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            c if c.is_whitespace() && !quoted => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The subcommand a fixture's suffix selects.
pub(crate) fn command_for(name: &str) -> Vec<&'static str> {
    if name.ends_with(".Dockerfile") {
        vec!["dockerfile"]
    } else if name.ends_with(".compose.yaml") {
        vec!["compose", "-f"]
    } else if name.ends_with(".k8s.yaml") {
        vec!["k8s"]
    } else if name.ends_with(".run.sh") {
        vec!["run", "--file"]
    } else {
        panic!("{name}: unknown fixture suffix (see testdata/rules/README.md)")
    }
}

/// `gpulint ARGS` run from `cwd` with an empty configuration and its own HOME and cache, no
/// daemon and no colour variables; `cwd` is the repository root reports name paths from
/// (`CI_PROJECT_DIR`), so they stay as short as the fixture's own name.
fn run_isolated(cwd: &Path, args: &[String]) -> std::process::Output {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("empty.toml");
    std::fs::write(&config, "").unwrap();
    Command::new(env!("CARGO_BIN_EXE_gpulint"))
        .current_dir(cwd)
        .args(args)
        .arg("--config")
        .arg(&config)
        .env("HOME", home.path())
        .env("XDG_CACHE_HOME", home.path())
        .env_remove("GITHUB_WORKSPACE")
        .env("CI_PROJECT_DIR", cwd.canonicalize().unwrap())
        .env_remove("DOCKER_HOST")
        .env_remove("NO_COLOR")
        .env_remove("FORCE_COLOR")
        .output()
        .unwrap()
}

/// Runs one fixture from its own folder (so paths in the output are relative and stable)
/// with an empty configuration and no local host.
fn run_fixture(path: &Path) -> (i32, String) {
    let name = path.file_name().unwrap().to_str().unwrap();
    let text = std::fs::read_to_string(path).unwrap();
    let mut args: Vec<String> = command_for(name).iter().map(|a| a.to_string()).collect();
    args.push(name.to_string());
    args.extend(fixture_args(&text));
    args.extend(["--no-local-host", "--format", "concise", "--color", "never"].map(String::from));
    let out = run_isolated(path.parent().unwrap(), &args);
    let mut shown = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !stderr.trim().is_empty() {
        shown.push_str("--- stderr\n");
        shown.push_str(&stderr);
    }
    (out.status.code().unwrap_or(-1), shown)
}

/// The rule code a fixture belongs to: its folder's name.
fn folder_code(path: &Path) -> String {
    let dir = path
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_str()
        .unwrap();
    assert!(
        dir.len() == 5 && dir.starts_with("GL"),
        "{}: fixtures live in a folder named by their rule code",
        path.display()
    );
    assert!(
        gpulint::rules::find(dir).is_some(),
        "{}: {dir} is not a rule",
        path.display()
    );
    dir.to_string()
}

fn reports(output: &str, code: &str) -> bool {
    output
        .lines()
        .any(|l| l.split_whitespace().any(|w| w == code))
}

#[test]
fn config_rule_fixtures() {
    let mut seen = 0;
    insta::glob!("../../testdata/rules", "GL1*/*", |path| {
        // A folder holds what a case reads from its build context (a project's pyproject).
        if path.is_dir() {
            return;
        }
        seen += 1;
        let code = folder_code(path);
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let (status, output) = run_fixture(path);
        if name.starts_with("ok-") {
            assert!(
                !reports(&output, &code),
                "{name} must not report {code}:\n{output}"
            );
        } else {
            assert!(
                reports(&output, &code),
                "{name} must report {code}:\n{output}"
            );
        }
        insta::assert_snapshot!(format!("exit {status}\n{output}"));
    });
    assert!(
        seen >= 20,
        "only {seen} fixtures found under testdata/rules"
    );
}

#[derive(serde::Deserialize)]
struct ImageCases {
    case: Vec<ImageCase>,
}

/// One image-rule case: either a real install's `inventory` JSON judged by the rule engine,
/// or an `image` (`dir:` tree made by `testdata/rules/image/make-cases.sh`) run through the
/// real `gpulint image` command with `args`.
#[derive(serde::Deserialize)]
struct ImageCase {
    name: String,
    #[serde(default)]
    inventory: Option<String>,
    #[serde(default)]
    image: Option<String>,
    args: Vec<String>,
    expect: Vec<String>,
}

/// `gpulint image IMAGE ARGS` from the repository root, as a user runs it, with an empty
/// configuration, no cache and no local host: (exit code, stdout [+ stderr]).
fn run_image_case(image: &str, args: &[String], format: &str) -> (i32, String) {
    let mut all: Vec<String> = [
        "image",
        image,
        "--no-cache",
        "--no-local-host",
        "--color",
        "never",
    ]
    .map(String::from)
    .to_vec();
    all.extend(["--format".to_string(), format.to_string()]);
    all.extend_from_slice(args);
    let out = run_isolated(&repo(), &all);
    let mut shown = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if format != "json" && !stderr.trim().is_empty() {
        shown.push_str("--- stderr\n");
        shown.push_str(&stderr);
    }
    // Messages may name the case by its absolute path: show it relative to the checkout.
    let shown = shown.replace(&format!("{}/", repo().display()), "");
    (out.status.code().unwrap_or(-1), shown)
}

/// Rules reported at warning or above in a `--format json` report.
fn rules_in_json_report(json: &str) -> Vec<String> {
    let v: serde_json::Value =
        serde_json::from_str(json).unwrap_or_else(|e| panic!("not a JSON report ({e}):\n{json}"));
    let mut rules: Vec<String> = v["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| matches!(f["severity"].as_str(), Some("warning" | "error")))
        .map(|f| f["rule"].as_str().unwrap().to_string())
        .collect();
    rules.sort();
    rules.dedup();
    rules
}

/// `--gpu G --driver V` out of a case's args.
fn gpus_and_driver(args: &[String]) -> (Vec<String>, Option<String>) {
    let (mut gpus, mut driver) = (Vec::new(), None);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--gpu" => gpus.push(it.next().expect("--gpu needs a value").clone()),
            "--driver" => driver = Some(it.next().expect("--driver needs a value").clone()),
            other => panic!("image case: unsupported argument {other}"),
        }
    }
    (gpus, driver)
}

#[test]
fn image_rule_cases() {
    let text = std::fs::read_to_string(repo().join("testdata/rules/image-cases.toml")).unwrap();
    let cases: ImageCases = toml::from_str(&text).unwrap();
    let facts = Facts::embedded().unwrap();
    assert!(!cases.case.is_empty());
    let mut images = 0;
    for case in cases.case {
        if let Some(image) = &case.image {
            images += 1;
            let (_, json) = run_image_case(image, &case.args, "json");
            assert_eq!(
                rules_in_json_report(&json),
                case.expect,
                "{}: rules at warning or above",
                case.name
            );
            let (status, shown) = run_image_case(image, &case.args, "concise");
            insta::assert_snapshot!(
                format!("image_{}", case.name),
                format!("exit {status}\n{shown}")
            );
            continue;
        }
        let inventory = case
            .inventory
            .clone()
            .expect("a case names an inventory or an image");
        let inv_text = std::fs::read_to_string(repo().join(&inventory)).unwrap();
        let inv: Inventory = serde_json::from_str(&inv_text).unwrap();
        let (gpus, driver) = gpus_and_driver(&case.args);
        let targets = targets_from_flags(facts.matrix(), &gpus, driver.as_deref(), None).unwrap();
        let findings: Vec<Finding> = check_image(&inv, &facts, &targets);
        let mut report = Report::new(inventory.clone());
        report.artifact = Some(inventory.clone());
        report.targets = targets.iter().map(|t| t.name.clone()).collect();
        report.findings = findings;
        report.normalize();
        let mut rules: Vec<String> = report
            .findings
            .iter()
            .filter(|f| f.severity >= gpulint::finding::Severity::Warning)
            .map(|f| f.rule.to_string())
            .collect();
        rules.sort();
        rules.dedup();
        assert_eq!(
            rules, case.expect,
            "{}: rules at warning or above",
            case.name
        );
        let rendered = report.render(
            Format::Concise,
            Style {
                color: false,
                quiet: false,
            },
        );
        insta::assert_snapshot!(format!("image_{}", case.name), rendered);
    }
    assert!(
        images >= 8,
        "only {images} image cases run through `gpulint image`"
    );
}

#[test]
fn host_variant_fixtures() {
    // Not insta's glob: captured trees hold dangling links (`/dev/char/*`) it would follow.
    let root = repo().join("testdata/host/variants");
    let mut variants: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    variants.sort();
    assert!(
        variants.len() >= 10,
        "only {} host variants found",
        variants.len()
    );
    for name in variants {
        let home = tempfile::tempdir().unwrap();
        let config = home.path().join("empty.toml");
        std::fs::write(&config, "").unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_gpulint"))
            .current_dir(repo())
            .args(["host", "--check", "--format", "concise", "--color", "never"])
            .arg("--root")
            .arg(format!("testdata/host/variants/{name}"))
            .arg("--config")
            .arg(&config)
            .env("HOME", home.path())
            .output()
            .unwrap();
        let mut shown = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !stderr.trim().is_empty() {
            shown.push_str("--- stderr\n");
            shown.push_str(&stderr);
        }
        insta::assert_snapshot!(
            format!("host_{name}"),
            format!("exit {}\n{shown}", out.status.code().unwrap_or(-1))
        );
    }
}
