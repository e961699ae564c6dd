//! Compatibility facts kept as data (`matrices/*.toml`), parsed into typed lookups.
pub mod torch;
