//! The registry's `WWW-Authenticate` challenge parser.
#![no_main]
use gpulint::source::registry::parse_challenge;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = parse_challenge(&String::from_utf8_lossy(data));
});
