//! Policy before deploy: `examples/policy/gpulint.rego` evaluated by a real Rego engine
//! (regorus, OPA's language) on gpulint's real JSON report for the example image and the
//! example fleet.

use crate::formats::{repo, run_in};
use serde_json::Value;

fn eval(report: &str, rule: &str) -> Value {
    let mut engine = regorus::Engine::new();
    engine
        .add_policy_from_file(repo().join("examples/policy/gpulint.rego"))
        .expect("the policy compiles");
    engine.set_input_json(report).expect("report is JSON");
    let v = engine
        .eval_rule(format!("data.gpulint.deploy.{rule}"))
        .unwrap_or_else(|e| panic!("{rule}: {e}"));
    serde_json::from_str(&v.to_json_str().unwrap()).unwrap()
}

fn report(fleet: &str) -> String {
    let r = run_in(
        &repo(),
        &[
            "image",
            "testdata/images/example.tar",
            "--fleet",
            fleet,
            "--format",
            "json",
            "--fail-on",
            "none",
        ],
    );
    assert_eq!(r.code, 0, "{r:?}");
    r.stdout
}

#[test]
fn deny_deploy_when_any_fleet_pool_fails() {
    let fleet = repo().join("examples/policy/fleet.toml");
    let json = report(&fleet.to_string_lossy());
    // The H100 pool cannot run the sm_75-only extension (GL001); the T4 pool can.
    assert_eq!(
        eval(&json, "failing_pools"),
        serde_json::json!(["train-h100"])
    );
    assert_eq!(
        eval(&json, "deployable_pools"),
        serde_json::json!(["inference-t4"])
    );
    let deny = eval(&json, "deny");
    let msgs: Vec<&str> = deny
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert!(
        msgs[0].contains("train-h100") && msgs[0].contains("GL001"),
        "{msgs:?}"
    );
    assert_eq!(eval(&json, "allow"), Value::Bool(false));

    // A fleet where every pool runs it: nothing denied, the deploy is allowed.
    let d = tempfile::tempdir().unwrap();
    let ok = d.path().join("fleet.toml");
    std::fs::write(
        &ok,
        "[[pool]]\nname = \"a\"\ndriver = \"535.104.05\"\ngpus = [\"T4\"]\n\n\
         [[pool]]\nname = \"b\"\ndriver = \"550.54.15\"\ngpus = [\"T4\"]\n",
    )
    .unwrap();
    let json = report(&ok.to_string_lossy());
    assert_eq!(eval(&json, "deny"), serde_json::json!([]), "{json}");
    assert_eq!(eval(&json, "allow"), Value::Bool(true));
    assert_eq!(
        eval(&json, "deployable_pools"),
        serde_json::json!(["a", "b"])
    );
}

#[test]
fn no_verdict_is_not_a_pass() {
    // No target at all: the report lists requirements only, which clears nothing.
    let r = run_in(
        &repo(),
        &[
            "image",
            "testdata/images/example.tar",
            "--no-local-host",
            "--format",
            "json",
        ],
    );
    assert_eq!(r.code, 0, "{r:?}");
    let deny = eval(&r.stdout, "deny");
    assert!(
        deny.as_array()
            .unwrap()
            .iter()
            .any(|m| m.as_str().unwrap().contains("judged no target")),
        "{deny}"
    );
    // A partial read and another schema version are refused too.
    let fleet = repo().join("examples/policy/fleet.toml");
    let mut v: Value = serde_json::from_str(&report(&fleet.to_string_lossy())).unwrap();
    v["details"]["partial"] = Value::Bool(true);
    v["schema_version"] = 3.into();
    let deny = eval(&v.to_string(), "deny");
    let text = deny.to_string();
    assert!(text.contains("verdict is partial"), "{text}");
    assert!(text.contains("schema_version 3"), "{text}");
}
