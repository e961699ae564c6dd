//! The integration-test binary: one binary, one module per area (as cargo-deny and just keep
//! theirs), so the suite links once.
//!
//! `live` needs real services (dockerd, a registry, podman): it is `#[ignore]`d in a plain
//! `cargo test` and run by `ci/test.sh`, which starts them first (`ci/services.sh`).

// A test binary has no API: `pub` in its modules only shares helpers between them.
#![allow(unreachable_pub)]

mod baseline;
mod cache;
mod cli;
mod cmd_cases;
mod common;
mod config_files;
mod controls;
mod fail_closed;
mod fix_apply;
mod fleet;
mod formats;
mod host_inputs;
mod hostile;
mod image;
mod live;
mod many_images;
mod matrices;
mod packaging;
mod policy;
mod rule_snapshots;
mod spec_cli;
mod spec_realworld;
mod squash;
mod tasks;
mod verdicts;
