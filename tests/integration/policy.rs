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

/// `examples/policy/admission.rego` on a real sweep report (a failing and a passing image
/// over the example fleet): a workload is admitted only when each of its images was scanned
/// and passes on every pool it can land on.
#[test]
fn admission_gate_over_a_sweep_report() {
    let d = tempfile::tempdir().unwrap();
    let plain = crate::many_images::plain_image(d.path());
    let fleet = repo().join("examples/policy/fleet.toml");
    let r = run_in(
        &repo(),
        &[
            "image",
            "testdata/images/example.tar",
            &plain,
            "--fleet",
            &fleet.to_string_lossy(),
            "--format",
            "json",
            "--fail-on",
            "none",
        ],
    );
    assert_eq!(r.code, 0, "{r:?}");
    let report: Value = serde_json::from_str(&r.stdout).unwrap();
    let admit = |pod: Value| -> (bool, Vec<String>) {
        let mut engine = regorus::Engine::new();
        engine
            .add_policy_from_file(repo().join("examples/policy/admission.rego"))
            .expect("the policy compiles");
        engine
            .add_data_json(&serde_json::json!({"gpulint": {"report": report}}).to_string())
            .unwrap();
        // As OPA's kube-mgmt hands it over: an AdmissionReview.
        engine
            .set_input_json(&serde_json::json!({"request": {"object": pod}}).to_string())
            .unwrap();
        let get = |engine: &mut regorus::Engine, rule: &str| -> Value {
            let v = engine
                .eval_rule(format!("data.gpulint.admission.{rule}"))
                .unwrap_or_else(|e| panic!("{rule}: {e}"));
            serde_json::from_str(&v.to_json_str().unwrap()).unwrap()
        };
        let deny = get(&mut engine, "deny");
        let allow = get(&mut engine, "allow");
        let msgs = deny
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.as_str().unwrap().to_string())
            .collect();
        (allow == Value::Bool(true), msgs)
    };
    let pod = |image: &str, pool: Option<&str>| {
        let mut spec = serde_json::json!({"containers": [{"name": "app", "image": image}]});
        if let Some(p) = pool {
            spec["nodeSelector"] = serde_json::json!({"gpulint.dev/pool": p});
        }
        serde_json::json!({"kind": "Pod", "metadata": {"name": "p"}, "spec": spec})
    };
    let failing = "testdata/images/example.tar";

    // The image fails the H100 pool: a pod that can land there is refused, with the rule.
    let (ok, msgs) = admit(pod(failing, None));
    assert!(!ok);
    assert_eq!(
        msgs,
        vec![format!("image {failing}: error on pool train-h100 (GL001)")]
    );
    let (ok, _) = admit(pod(failing, Some("train-h100")));
    assert!(!ok);
    // Pinned to the pool where it runs, it is admitted.
    let (ok, msgs) = admit(pod(failing, Some("inference-t4")));
    assert!(ok, "{msgs:?}");
    // The image without GPU code passes everywhere, also in a Deployment's pod template.
    let (ok, msgs) = admit(pod(&plain, None));
    assert!(ok, "{msgs:?}");
    let deployment = serde_json::json!({"kind": "Deployment", "spec": {"template": {"spec": {
        "initContainers": [{"name": "init", "image": failing}],
        "containers": [{"name": "app", "image": plain}],
    }}}});
    let (ok, msgs) = admit(deployment);
    assert!(!ok && msgs[0].contains("train-h100"), "{msgs:?}");
    // An image the sweep did not scan, or a pool it did not judge, is no pass.
    let (ok, msgs) = admit(pod("registry.example/other:1", None));
    assert!(!ok);
    assert_eq!(
        msgs,
        vec!["image registry.example/other:1 was not scanned by the gpulint sweep".to_string()]
    );
    let (ok, msgs) = admit(pod(&plain, Some("train-a100")));
    assert!(
        !ok && msgs[0].contains("not judged on pool train-a100"),
        "{msgs:?}"
    );
}
