//! gpulint: static checks for GPU container images.
//!
//! Data flows one way: `source` (where an image comes from) → `walk` (one pass over each
//! layer) → `detect` (what each file is) → `inventory` (the squashed result) → `rules`
//! (checked against `target` using `matrix` facts) → `report`. `spec` parses Dockerfiles and
//! run configurations into facts the rules also read.
pub mod arch;
pub mod detect;
pub mod exit;
pub mod finding;
pub mod host;
pub mod inventory;
pub mod rules;
pub mod source;
pub mod target;
pub mod version;
pub mod walk;

pub fn run(_args: Vec<std::ffi::OsString>) -> i32 {
    0
}
