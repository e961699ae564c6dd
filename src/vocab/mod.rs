//! The vocabulary every layer shares, on the bottom floor: types that sources, the walker,
//! detectors, the inventory and the rules all speak, and that depend on nothing of gpulint's.
//!
//! - [`ImagePath`]: a normalized path inside an image that cannot escape it;
//! - [`Compression`]: a layer blob's compression, sniffed from its magic bytes;
//! - [`escape`]: how text taken from input is made inert before any output shows it;
//! - [`Reference`]: a Docker image reference, in the one grammar every reader uses.

mod compression;
pub mod escape;
pub mod image_path;
pub mod reference;

pub use compression::Compression;
pub use image_path::{name_from_bytes, ImagePath};
pub use reference::Reference;
