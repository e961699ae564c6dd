//! Dockerfile parser, then the build analysis (stages, ARG/ENV scoping, variable expansion,
//! RUN scripts through the shell reader, heredocs) over the embedded facts.
#![no_main]
use gpulint::matrix::Facts;
use gpulint::runconfig::build::{analyze_parsed, BuildOptions};
use gpulint::runconfig::{dockerfile, dump_dockerfile_json};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

fuzz_target!(|data: &[u8]| {
    static FACTS: OnceLock<Facts> = OnceLock::new();
    let facts = FACTS.get_or_init(|| Facts::embedded().expect("embedded facts"));
    let text = String::from_utf8_lossy(data);
    let _ = dump_dockerfile_json(&text);
    let df = dockerfile::parse(&text);
    for i in &df.instructions {
        let _ = dockerfile::split_args(&i.rest, df.escape);
    }
    // No build context: the target must not read the fuzzing machine's files.
    let opts = BuildOptions::default();
    let _ = analyze_parsed("Dockerfile", df, &opts, facts);
});
