//! Host ELF files (shared libraries, executables, objects): dynamic-linking facts and the
//! CUDA device code (fatbins) they carry, read in one forward pass with bounded memory — or,
//! where the file can be read at any offset, by reading only the headers (`seek`).
//!
//! Format reference: `shared/notes/fatbin-format.md` (fatbin container/entry layout) and the
//! System V gABI (ELF). Only little-endian ELF is supported (every CUDA host is).

mod cudart;
pub mod deep;
pub mod fatbin;
pub mod kernels;
mod ptx_text;
mod seek;
mod stream;

pub use cudart::format_version as format_cudart_version;
pub use deep::deep_check;
pub use fatbin::{
    is_fatbin_section_name, scan_fatbin_bytes, scan_fatbin_bytes_detailed, FatbinContainer,
    FatbinEntry, FatbinError, FatbinSection, FatbinSummary,
};
pub use ptx_text::PtxHeader;
pub use ptx_text::{parse_header as parse_ptx_header, PTX_WINDOW};
#[cfg(test)]
use seek::SeekReader;
pub(crate) use seek::{ReadAt, SeekScan};

use crate::arch::{ArchTarget, CodeKind};
use serde::{Deserialize, Serialize};

/// Facts about one host ELF file. Cached as JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ElfFacts {
    /// 32 or 64.
    pub class: u8,
    /// "x86_64", "aarch64", "ppc64le", "x86", "arm", "riscv", "cuda", or "unknown(N)".
    pub machine: String,
    /// "exec", "dyn", "rel", "core" or "unknown(N)".
    pub elf_type: String,
    pub soname: Option<String>,
    /// DT_NEEDED in order.
    pub needed: Vec<String>,
    /// DT_RPATH split on ':'.
    pub rpath: Vec<String>,
    /// DT_RUNPATH split on ':'.
    pub runpath: Vec<String>,
    /// For a CUDA runtime (`libcudart*`): the value its `cudaRuntimeGetVersion` reports
    /// (11070 = CUDA 11.7), read from its code; None when not a runtime or not readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cudart_version: Option<u32>,
    /// For any other binary: the same, of a runtime linked into it (nvcc's default `-cudart
    /// static`), found through `.symtab`, so only while the binary is not stripped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub static_cudart_version: Option<u32>,
    /// None if the file has no device code.
    pub fatbin: Option<FatbinSummary>,
    /// Whether the SASS/PTX it is judged on ([`Self::judged_entries`]) defines any kernel:
    /// Some(false) only when every such payload was read and none has one (libnppc, nvcc's
    /// `__nvcc_device_query`), None when unknown (not read, unreadable, over the bounds of
    /// `kernels`) or without device code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_kernels: Option<bool>,
    /// For a cubin file (a standalone `.cubin`: an EM_CUDA ELF image a program loads with
    /// `cuModuleLoad`): its SASS target, from its header's e_flags (notes §5.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cubin: Option<ArchTarget>,
    /// Cubins stored outside any fatbin container, in the data sections (CUPTI, nvperf and
    /// compute-sanitizer keep them as byte arrays and load them themselves). Listed, not judged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loose_cubins: Vec<LooseCubin>,
    /// PTX text stored outside any fatbin container in the same data sections (nvperf's
    /// compute_70, the raw PTX jax and TensorFlow load themselves). Listed, not judged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loose_ptx: Vec<LoosePtx>,
    /// Malformed or unreadable parts.
    pub warnings: Vec<String>,
}

impl ElfFacts {
    /// The sections the CUDA runtime loads and cuobjdump lists by default: every `.nv_fatbin`
    /// if there is one, else every `__nv_relfatbin`.
    pub fn loadable_sections(&self) -> Vec<&FatbinSection> {
        let Some(fb) = &self.fatbin else {
            return Vec::new();
        };
        let pick = |n: &str| -> Vec<&FatbinSection> {
            fb.sections.iter().filter(|s| s.name == n).collect()
        };
        let nv = pick(".nv_fatbin");
        if !nv.is_empty() {
            return nv;
        }
        pick("__nv_relfatbin")
    }

    /// The entries a binary is judged on: those of the loadable sections and of the data
    /// sections (fatbins the library loads itself).
    pub fn judged_entries(&self) -> impl Iterator<Item = &FatbinEntry> {
        let data = self
            .fatbin
            .iter()
            .flat_map(|fb| fb.sections.iter())
            .filter(|s| !is_fatbin_section_name(&s.name));
        self.loadable_sections()
            .into_iter()
            .chain(data)
            .flat_map(|s| s.containers.iter())
            .flat_map(|c| c.entries.iter())
    }

    /// Every entry of every section with containers, in file order.
    pub(crate) fn all_entries(&self) -> impl Iterator<Item = &FatbinEntry> {
        self.fatbin
            .iter()
            .flat_map(|fb| fb.sections.iter())
            .flat_map(|s| s.containers.iter())
            .flat_map(|c| c.entries.iter())
    }

    fn targets(&self, kind: CodeKind) -> Vec<ArchTarget> {
        let mut v: Vec<ArchTarget> = self
            .loadable_sections()
            .into_iter()
            .flat_map(|s| s.containers.iter())
            .flat_map(|c| c.entries.iter())
            .filter(|e| e.target.kind == kind)
            .map(|e| e.target)
            .collect();
        v.sort();
        v.dedup();
        v
    }

    /// SASS targets the runtime can load (what `cuobjdump --list-elf` lists; cuobjdump drops
    /// the `f` suffix in those names, we keep it). Deduplicated, sorted.
    pub fn sass(&self) -> Vec<ArchTarget> {
        self.targets(CodeKind::Sass)
    }

    /// PTX targets (what `cuobjdump --list-ptx` lists). Deduplicated, sorted.
    pub fn ptx(&self) -> Vec<ArchTarget> {
        self.targets(CodeKind::Ptx)
    }

    /// LTO-IR targets of the loadable sections (never loaded by the driver directly).
    pub fn lto(&self) -> Vec<ArchTarget> {
        self.targets(CodeKind::Lto)
    }
}

/// A cubin outside any fatbin container.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LooseCubin {
    pub section: String,
    /// File offset of its ELF header.
    pub offset: u64,
    /// SASS target from its e_flags.
    pub target: ArchTarget,
}

/// A PTX module outside any fatbin container.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoosePtx {
    pub section: String,
    /// File offset of its `.version` directive.
    pub offset: u64,
    /// `compute_NN` from its `.target`, and the ISA version of its `.version`.
    #[serde(flatten)]
    pub header: PtxHeader,
}

#[derive(Debug, thiserror::Error)]
pub enum ElfError {
    #[error("not an ELF file")]
    NotElf,
    #[error("truncated ELF header ({0} bytes)")]
    Truncated(u64),
    #[error("big-endian ELF is not supported")]
    BigEndian,
    #[error("invalid ELF class {0}")]
    BadClass(u8),
    #[error("invalid ELF data encoding {0}")]
    BadEncoding(u8),
    /// The header names tables beyond the end of the file: the file was cut short (a broken
    /// copy or download), so what it holds cannot be known.
    #[error("{0} (file truncated?)")]
    BeyondEnd(String),
    #[error("read error: {0}")]
    Io(#[from] std::io::Error),
}

/// Memory bounds of a scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanOptions {
    /// Bytes kept from the start of the file (program headers, dynamic string table).
    pub head_max: usize,
    /// Bytes kept before the section header table (for `.shstrtab`).
    pub tail_max: usize,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            head_max: 16 << 20,
            tail_max: 2 << 20,
        }
    }
}

/// Quick check on the first bytes of a file.
pub fn is_elf(head: &[u8]) -> bool {
    head.len() >= 4 && head[0..4] == *b"\x7fELF"
}

/// Scans an ELF file from a forward-only reader of known total `size`, with bounded memory.
/// Returns `Err` only when it is not a parsable ELF at all (or the reader fails).
pub fn scan_elf<R: std::io::Read>(reader: R, size: u64) -> Result<ElfFacts, ElfError> {
    stream::scan(reader, size, &ScanOptions::default())
}

/// [`scan_elf`] with explicit memory bounds.
pub fn scan_elf_with<R: std::io::Read>(
    reader: R,
    size: u64,
    opts: &ScanOptions,
) -> Result<ElfFacts, ElfError> {
    stream::scan(reader, size, opts)
}

/// Scans an ELF file that can be read at any offset, reading only the headers, tables and
/// fatbin entry headers the facts come from: the same facts as [`scan_elf`] on its bytes
/// (see `seek` for the one exception), plus how many bytes were read.
pub(crate) fn scan_elf_at(file: &dyn ReadAt, size: u64) -> Result<SeekScan, ElfError> {
    seek::scan_at(file, size, &ScanOptions::default())
}

/// [`scan_elf_at`] with explicit memory bounds (they decide what a stream would still have).
#[cfg(test)]
pub(crate) fn scan_elf_at_with(
    file: &dyn ReadAt,
    size: u64,
    opts: &ScanOptions,
) -> Result<SeekScan, ElfError> {
    seek::scan_at(file, size, opts)
}

/// Convenience over a byte slice.
pub fn scan_elf_bytes(data: &[u8]) -> Result<ElfFacts, ElfError> {
    stream::scan(data, data.len() as u64, &ScanOptions::default())
}

pub(crate) fn machine_name(m: u16) -> String {
    match m {
        62 => "x86_64".into(),
        183 => "aarch64".into(),
        21 => "ppc64le".into(),
        3 => "x86".into(),
        40 => "arm".into(),
        243 => "riscv".into(),
        190 => "cuda".into(),
        n => format!("unknown({n})"),
    }
}

pub(crate) fn type_name(t: u16) -> String {
    match t {
        1 => "rel".into(),
        2 => "exec".into(),
        3 => "dyn".into(),
        4 => "core".into(),
        n => format!("unknown({n})"),
    }
}

#[cfg(test)]
mod tests;
