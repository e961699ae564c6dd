//! Compose files (YAML, merge keys, interpolation, `extends`, services → run specs) and
//! Kubernetes manifests (multi-document split, pods/deployments/jobs → run specs).
#![no_main]
use gpulint::runconfig::{compose, k8s, shell::Vars};
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = k8s::split_docs(&text);
    let _ = k8s::parse("pod.yaml", &text);
    // A project directory that does not exist: `extends.file` and `.env` read nothing.
    let dir = Path::new("/nonexistent/gpulint-fuzz");
    let vars = Vars::new();
    if let Ok(cf) = compose::parse_file("compose.yaml", &dir.join("compose.yaml"), &text, &vars) {
        let _ = compose::specs_from(&[cf], dir, &vars, &|_, _| None);
    }
});
