//! One line a host verdict rests on, typed by where it came from when it is made: a host file,
//! a command's output, the invoking environment, or gpulint's own note. Reports show it as one
//! `source: text` line; a finding's location is its first file, never recovered from the text.

use serde::{Serialize, Serializer};
use std::fmt;

/// Where an evidence line came from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Source {
    /// A host file, directory, link or device node at this absolute path.
    File(String),
    /// A command's output, the command as shown (`dmesg`, `nvidia-smi -q`).
    Command(String),
    /// The invoking environment.
    Env,
    /// What gpulint looked at or concluded, with no one file or command behind it.
    #[default]
    Note,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evidence {
    pub source: Source,
    pub text: String,
}

impl Evidence {
    pub fn file(path: impl Into<String>, text: impl Into<String>) -> Self {
        Evidence {
            source: Source::File(path.into()),
            text: text.into(),
        }
    }
    pub fn command(command: impl Into<String>, text: impl Into<String>) -> Self {
        Evidence {
            source: Source::Command(command.into()),
            text: text.into(),
        }
    }
    pub fn env(text: impl Into<String>) -> Self {
        Evidence {
            source: Source::Env,
            text: text.into(),
        }
    }
    pub fn note(text: impl Into<String>) -> Self {
        Evidence {
            source: Source::Note,
            text: text.into(),
        }
    }
    /// The host file this line quotes, if it quotes one.
    pub fn file_path(&self) -> Option<&str> {
        match &self.source {
            Source::File(p) => Some(p),
            _ => None,
        }
    }
}

impl fmt::Display for Evidence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.source {
            Source::File(p) => write!(f, "{p}: {}", self.text),
            Source::Command(c) => write!(f, "{c}: {}", self.text),
            Source::Env => write!(f, "env: {}", self.text),
            Source::Note => f.write_str(&self.text),
        }
    }
}

/// As the line reports show (JSON keeps evidence as strings).
impl Serialize for Evidence {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}
