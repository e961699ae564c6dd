//! What the walker reads of a regular file: the bytes detectors ask for, and — for files
//! that start with the ELF magic — a streaming ELF scan over the whole content.

use super::issue::{stream_error_kind, IssueKind, ScanIssue};
use super::{ImagePath, WalkOptions};
use crate::detect::{elf, Detector, Fact};
use crate::io_util::read_up_to;
use std::io::{self, Read};

/// ELF files shorter than this are not worth a look (an ELF header alone is 52/64 bytes).
const MIN_ELF_SIZE: u64 = 64;

/// Where a file's facts and problems go.
pub(crate) struct Sink<'a> {
    pub layer: &'a str,
    pub errors: &'a mut Vec<ScanIssue>,
    pub warnings: &'a mut Vec<String>,
}

/// Read what detectors want from `reader` (the file's content, `size` bytes) and scan it if
/// it is an ELF file. Reads only as much as needed; the caller skips the rest.
pub(crate) fn file_facts(
    path: &ImagePath,
    size: u64,
    reader: &mut dyn Read,
    detectors: &[Box<dyn Detector>],
    opts: &WalkOptions,
    sink: &mut Sink<'_>,
) -> Vec<Fact> {
    let mut facts = Vec::new();
    let wanting: Vec<&dyn Detector> = detectors
        .iter()
        .map(|d| d.as_ref())
        .filter(|d| d.wants(path, size))
        .collect();
    let elf_candidate = opts.scan_elf && size >= MIN_ELF_SIZE;
    if wanting.is_empty() && !elf_candidate {
        return facts;
    }

    // The bytes read so far, from the start of the file.
    let mut buf = Vec::new();
    if !wanting.is_empty() {
        let want = wanting
            .iter()
            .map(|d| d.max_bytes())
            .max()
            .unwrap_or(0)
            .min(size);
        if let Err(e) = reader.take(want).read_to_end(&mut buf) {
            sink.errors.push(ScanIssue::at(
                sink.layer,
                path,
                stream_error_kind(&e),
                format!("read failed: {e}"),
            ));
            return facts;
        }
        if (buf.len() as u64) < want {
            sink.errors.push(ScanIssue::at(
                sink.layer,
                path,
                IssueKind::Truncated,
                format!("file content is truncated ({} of {size} bytes)", buf.len()),
            ));
            return facts;
        }
        for d in &wanting {
            let limit = usize::try_from(d.max_bytes()).unwrap_or(usize::MAX);
            let data = &buf[..buf.len().min(limit)];
            if size > d.max_bytes() {
                sink.warnings.push(format!(
                    "layer {}: {path}: {} read only the first {} of {size} bytes",
                    sink.layer,
                    d.name(),
                    d.max_bytes()
                ));
            }
            match d.detect(path, data) {
                Ok(f) => facts.extend(f),
                Err(e) => sink.errors.push(ScanIssue::at(
                    sink.layer,
                    path,
                    IssueKind::MalformedFile,
                    format!("{}: {e}", d.name()),
                )),
            }
        }
    }

    if elf_candidate {
        if buf.len() < 4 {
            let mut head = [0u8; 4];
            let have = buf.len();
            head[..have].copy_from_slice(&buf);
            match read_up_to(reader, &mut head[have..]) {
                Ok(n) => buf = head[..have + n].to_vec(),
                Err(e) => {
                    sink.errors.push(ScanIssue::at(
                        sink.layer,
                        path,
                        stream_error_kind(&e),
                        format!("read failed: {e}"),
                    ));
                    return facts;
                }
            }
        }
        if elf::is_elf(&buf) {
            // The scanner gets the whole file: the bytes already read, then the rest.
            let whole = io::Cursor::new(&buf[..]).chain(reader);
            match elf::scan_elf(whole, size) {
                Ok(f) => facts.push(Fact::Elf(f)),
                Err(e) => {
                    let kind = match &e {
                        elf::ElfError::Io(io) => stream_error_kind(io),
                        _ => IssueKind::MalformedFile,
                    };
                    sink.errors
                        .push(ScanIssue::at(sink.layer, path, kind, format!("ELF: {e}")))
                }
            }
        }
    }
    facts
}
