//! What would make a finding go away: a concrete change computed from the tables (a torch
//! build, a base image, a driver, an architecture list) and, where the change is an edit of the
//! linted file, the edit itself. Rules attach fixes to findings; reporters show them (`help:`,
//! JSON `fixes`, SARIF `fixes`), and `--fix` applies the safe edits.

use crate::version::{CudaVersion, DriverVersion};
use serde::{Deserialize, Serialize};

pub mod apply;
pub mod plan;
pub mod runconfig_edit;
pub mod suggest;

/// One suggested change for one finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fix {
    pub kind: FixKind,
    /// The change as the user would type or read it: an install line, an image tag, a driver
    /// version, an architecture list.
    pub replacement: String,
    /// Why the change works, in one sentence, from the rows in `basis`.
    pub rationale: String,
    /// The table rows the suggestion rests on, each with its source.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub basis: Vec<FixBasis>,
    /// Edits of the linted file that carry the change out; empty when the change is not a file
    /// edit (a driver upgrade, a different node pool).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub edits: Vec<TextEdit>,
    pub applicability: Applicability,
    /// The change as data, for tools and for the fleet summaries that combine fixes: what
    /// `replacement` says in words. `None` for advice that names no one concrete change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<Change>,
}

/// What a fix changes, structured (`type` names the variant in JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Change {
    /// Install host driver `min` or newer, of branch `branch` or newer.
    Driver { min: DriverVersion, branch: u32 },
    /// Install NVIDIA's forward-compatibility package in the image; the driver stays.
    CudaCompat { package: String, cuda: CudaVersion },
    /// Install torch `version` built for `variant` (`cu128`), from `index_url`.
    TorchBuild {
        version: String,
        variant: String,
        cuda: CudaVersion,
        index_url: String,
    },
    /// Build the CUDA code for `list`, written in `syntax`.
    ArchList {
        syntax: suggest::arch_list::Syntax,
        list: String,
    },
    /// Base the image on `image:to` instead of `image:from`; `cuda` is the new tag's CUDA.
    BaseImage {
        image: String,
        from: String,
        to: String,
        cuda: CudaVersion,
        /// Where the Dockerfile writes the tag, for the edit (not reported).
        #[serde(skip)]
        sites: Vec<TagSite>,
    },
}

/// Where a Dockerfile writes (part of) a base image tag: on 1-based `line`, the text `old`
/// (the whole tag in a FROM, or what an ARG default holds of it) that becomes `new`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TagSite {
    pub line: u32,
    pub old: String,
    pub new: String,
}

/// What a fix changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FixKind {
    /// Install another build of a package (torch release and CUDA variant, companions).
    Package,
    /// Use another base image / image tag.
    BaseImage,
    /// Install a newer host driver (or cuda-compat where it helps).
    Driver,
    /// Build for other GPU architectures (`TORCH_CUDA_ARCH_LIST`, `-gencode`, CMake).
    ArchList,
    /// Use another package index (`--index-url`).
    IndexUrl,
    /// Change how the container is run (GPU request, shm, runtime flag, mounts).
    RunConfig,
    /// Schedule the workload on other GPUs / pools.
    Placement,
}

/// Whether `--fix` may apply the edits, in ruff's sense: a safe fix changes only what the
/// finding is about; an unsafe one may change meaning beyond it and needs `--unsafe-fixes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Applicability {
    Safe,
    Unsafe,
    /// Advice only: nothing to apply automatically.
    Manual,
}

/// One table row a suggestion rests on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FixBasis {
    /// The table, e.g. `torch_arch`, `cuda_driver`.
    pub table: String,
    /// The row, as the table names it, e.g. `2.8.0 cu128`.
    pub row: String,
    /// The row's public source (URL or measured artifact digest).
    pub source: String,
}

/// Replace the bytes `start..end` of `file` with `new_text`. Lines and columns (1-based,
/// columns in characters) are kept beside the byte range for SARIF's `artifactChanges`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextEdit {
    pub file: String,
    pub start: usize,
    pub end: usize,
    pub start_line: u32,
    pub start_column: u32,
    pub end_line: u32,
    pub end_column: u32,
    pub new_text: String,
}

impl TextEdit {
    /// An edit of `text` (the content of `file`); `None` when the range is not on character
    /// boundaries of `text`.
    pub fn new(file: &str, text: &str, start: usize, end: usize, new_text: &str) -> Option<Self> {
        let starts: Vec<usize> = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Self::with_line_starts(file, text, &starts, start, end, new_text)
    }

    /// [`TextEdit::new`] with the line starts of `text` (`0` and each byte after a `\n`) at
    /// hand, for callers that place many edits in one text.
    pub fn with_line_starts(
        file: &str,
        text: &str,
        starts: &[usize],
        start: usize,
        end: usize,
        new_text: &str,
    ) -> Option<Self> {
        if start > end
            || end > text.len()
            || !text.is_char_boundary(start)
            || !text.is_char_boundary(end)
        {
            return None;
        }
        let place = |at: usize| {
            let i = starts.partition_point(|&s| s <= at).saturating_sub(1);
            let line_start = starts.get(i).copied().unwrap_or(0);
            (
                i as u32 + 1,
                text[line_start..at].chars().count() as u32 + 1,
            )
        };
        let ((start_line, start_column), (end_line, end_column)) = (place(start), place(end));
        Some(TextEdit {
            file: file.to_string(),
            start,
            end,
            start_line,
            start_column,
            end_line,
            end_column,
            new_text: new_text.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_positions_count_lines_and_characters() {
        let text = "FROM a\nRUN pip install töрch\n";
        let start = text.find("töрch").unwrap();
        let e = TextEdit::new("Dockerfile", text, start, text.len() - 1, "torch==2.8.0").unwrap();
        assert_eq!((e.start_line, e.start_column), (2, 17));
        assert_eq!((e.end_line, e.end_column), (2, 22));
    }

    #[test]
    fn edit_off_a_character_boundary_is_refused() {
        let text = "ö";
        assert!(TextEdit::new("f", text, 1, 2, "x").is_none());
        assert!(TextEdit::new("f", text, 0, 3, "x").is_none());
    }
}
