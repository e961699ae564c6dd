//! `docker-bake.hcl` / `.json` files (`runconfig::bake::parse`): blocks, strings and heredocs,
//! `inherits`, `matrix` expansion, variable interpolation. The first byte picks the form.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&form, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let targets = gpulint::runconfig::bake::parse(&text, form & 1 == 1);
    assert!(targets.targets.len() <= gpulint::runconfig::bake::MAX_TARGETS);
});
