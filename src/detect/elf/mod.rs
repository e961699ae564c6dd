//! PLACEHOLDER: the ELF + fatbin reader lands from the `fatbin` branch.
//!
//! This stub only mirrors the field and method names that branch exposes (class, machine,
//! elf_type, soname, needed, rpath, runpath, fatbin, warnings; `sass()` / `ptx()`; per-entry
//! `target`, `code_version`, `compression`) so inventory assembly compiles and can be tested
//! against hand-built facts. Replace the whole file when merging; keep no logic here.
use crate::arch::{ArchTarget, CodeKind};
use serde::{Deserialize, Serialize};

/// PLACEHOLDER (see module docs).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ElfFacts {
    pub class: u8,
    pub machine: String,
    pub elf_type: String,
    pub soname: Option<String>,
    pub needed: Vec<String>,
    pub rpath: Vec<String>,
    pub runpath: Vec<String>,
    pub fatbin: Option<FatbinSummary>,
    pub warnings: Vec<String>,
}

/// PLACEHOLDER (see module docs).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FatbinSummary {
    pub entries: Vec<FatbinEntry>,
}

/// PLACEHOLDER (see module docs).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FatbinEntry {
    pub target: ArchTarget,
    /// PTX ISA version for PTX entries (8.8), the cubin's code version for SASS.
    pub code_version: (u16, u16),
    /// "lz4" / "zstd" when the entry is compressed.
    pub compression: Option<String>,
}

impl ElfFacts {
    fn targets(&self, kind: CodeKind) -> Vec<ArchTarget> {
        let mut v: Vec<ArchTarget> = self
            .fatbin
            .iter()
            .flat_map(|f| f.entries.iter())
            .map(|e| e.target)
            .filter(|t| t.kind == kind)
            .collect();
        v.sort();
        v.dedup();
        v
    }
    /// SASS targets, sorted and deduplicated.
    pub fn sass(&self) -> Vec<ArchTarget> {
        self.targets(CodeKind::Sass)
    }
    /// PTX targets, sorted and deduplicated.
    pub fn ptx(&self) -> Vec<ArchTarget> {
        self.targets(CodeKind::Ptx)
    }
}
