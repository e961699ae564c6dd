//! What files are. Detectors are thin glue around pure parsers: each names the paths it wants
//! and turns the bytes of those files into [`Fact`]s. ELF files are found by sniffing the
//! first bytes of every regular file, not by path.

pub mod elf;

use crate::walk::ImagePath;
use serde::{Deserialize, Serialize};

/// A fact about one file's content. Serializable: layer results are cached as JSON.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "fact", rename_all = "snake_case")]
pub enum Fact {
    Elf(elf::ElfFacts),
}

/// A content detector, selected by path.
pub trait Detector: Send + Sync {
    fn name(&self) -> &'static str;
    /// Bumped when the detector's output changes, so cached layer results are recomputed.
    fn version(&self) -> u32;
    /// Whether this detector wants the content of the regular file at `path`.
    fn wants(&self, path: &ImagePath, size: u64) -> bool;
    /// At most this many bytes are read; larger files get the first `max_bytes` and a warning.
    fn max_bytes(&self) -> u64 {
        4 << 20
    }
    fn detect(&self, path: &ImagePath, data: &[u8]) -> Result<Vec<Fact>, String>;
}
