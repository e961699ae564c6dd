//! Placeholder: the ELF + fatbin reader lands from the `fatbin` branch.
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ElfFacts {
    pub needed: Vec<String>,
}
