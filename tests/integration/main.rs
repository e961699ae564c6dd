//! The integration-test binary (one binary, modules per area).

mod cli;
#[path = "../support/listing.rs"]
mod listing;
mod live;
