//! The integration-test binary (one binary, modules per area).

mod cli;
mod live;
