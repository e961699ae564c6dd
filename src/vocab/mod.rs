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

/// A count with its noun in the right number: `1 problem`, `2 problems`, `0 problems`.
pub fn count<N: std::fmt::Display + PartialEq + From<u8>>(n: N, one: &str, many: &str) -> String {
    let noun = if n == N::from(1) { one } else { many };
    format!("{n} {noun}")
}

#[cfg(test)]
mod count_tests {
    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(super::count(1, "problem", "problems"), "1 problem");
        assert_eq!(super::count(0, "problem", "problems"), "0 problems");
        assert_eq!(super::count(2, "entry", "entries"), "2 entries");
    }
}
