//! The integration-test binary (one binary, modules per area).

mod cli;
mod controls;
mod formats;
mod live;
mod packaging;
mod policy;
