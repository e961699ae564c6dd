//! The integration-test binary (one binary, modules per area).

#[path = "../support/listing.rs"]
mod listing;
mod live;
