//! Placeholder: the ELF + fatbin reader lands from the `fatbin` branch.
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ElfFacts {
    pub needed: Vec<String>,
}

// PLACEHOLDER (branch `walk`): stand-ins with the real signatures from branch `fatbin`, so
// the walker compiles and its tests can see that ELF files reach the scanner. The integrator
// replaces this whole file with the real reader.

/// Why an ELF file could not be scanned.
#[derive(Debug, thiserror::Error)]
pub enum ElfError {
    #[error("not an ELF file")]
    NotElf,
    #[error("read error: {0}")]
    Io(#[from] std::io::Error),
}

/// Quick check on the first bytes of a file.
pub fn is_elf(head: &[u8]) -> bool {
    head.len() >= 4 && head[0..4] == *b"\x7fELF"
}

/// PLACEHOLDER: checks the magic and drains the reader (as the streaming scanner would),
/// returning empty facts.
pub fn scan_elf<R: std::io::Read>(mut reader: R, size: u64) -> Result<ElfFacts, ElfError> {
    let mut head = [0u8; 4];
    reader.read_exact(&mut head)?;
    if !is_elf(&head) {
        return Err(ElfError::NotElf);
    }
    let rest = std::io::copy(&mut reader, &mut std::io::sink())?;
    if rest + 4 != size {
        return Err(ElfError::Io(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("read {} of {size} bytes", rest + 4),
        )));
    }
    Ok(ElfFacts::default())
}
