//! What the walker reads of a regular file: the bytes detectors ask for, and — for files
//! that start with the ELF magic — an ELF scan: streaming over the whole content, or, for a
//! file that can be read at any offset, of its headers only.

use super::issue::{stream_error_kind, IssueKind, ScanIssue};
use super::{ImagePath, WalkOptions};
use crate::detect::{elf, Detector, Detectors, Fact};
use crate::io_util::read_up_to;
use std::io::{self, Read};
use std::sync::atomic::{AtomicU64, Ordering};

/// ELF files shorter than this are not worth a look (an ELF header alone is 52/64 bytes).
const MIN_ELF_SIZE: u64 = 64;

/// Where a file's facts and problems go.
pub(crate) struct Sink<'a> {
    pub layer: &'a str,
    pub errors: &'a mut Vec<ScanIssue>,
    pub warnings: &'a mut Vec<String>,
}

impl Sink<'_> {
    /// A read of the file's content failed (the stream broke or ended early).
    fn read_failed(&mut self, path: &ImagePath, e: &io::Error) {
        self.errors.push(ScanIssue::at(
            self.layer,
            path,
            stream_error_kind(e),
            format!("read failed: {e}"),
        ));
    }
}

/// Bytes of regular files the walker read, and the sizes of those files, this process.
static READ: ReadCounts = ReadCounts {
    files: AtomicU64::new(0),
    file_bytes: AtomicU64::new(0),
    bytes_read: AtomicU64::new(0),
};

struct ReadCounts {
    files: AtomicU64,
    file_bytes: AtomicU64,
    bytes_read: AtomicU64,
}

/// What the walker has read of the files it looked into (`--stats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Files read at all (detector heads, ELF scans).
    pub files: u64,
    /// Their sizes, summed.
    pub file_bytes: u64,
    /// Bytes actually read from them.
    pub bytes_read: u64,
}

/// The counts so far in this process.
pub fn read_stats() -> ReadStats {
    ReadStats {
        files: READ.files.load(Ordering::Relaxed),
        file_bytes: READ.file_bytes.load(Ordering::Relaxed),
        bytes_read: READ.bytes_read.load(Ordering::Relaxed),
    }
}

impl ReadStats {
    /// `gpulint: read 12.3 MB of 7012.0 MB (0.18%) in 1234 files, 0.87 s`
    pub fn line(&self, took: std::time::Duration) -> String {
        let mb = |b: u64| b as f64 / 1e6;
        let pct = if self.file_bytes == 0 {
            0.0
        } else {
            100.0 * self.bytes_read as f64 / self.file_bytes as f64
        };
        format!(
            "gpulint: read {:.1} MB of {:.1} MB ({pct:.2}%) in {} files, {:.2} s",
            mb(self.bytes_read),
            mb(self.file_bytes),
            self.files,
            took.as_secs_f64()
        )
    }
}

fn count_read(size: u64, bytes_read: u64) {
    READ.files.fetch_add(1, Ordering::Relaxed);
    READ.file_bytes.fetch_add(size, Ordering::Relaxed);
    READ.bytes_read.fetch_add(bytes_read, Ordering::Relaxed);
}

/// Read what detectors want from `reader` (the file's content, `size` bytes) and scan it if
/// it is an ELF file. Reads only as much as needed; the caller skips the rest.
pub(crate) fn file_facts(
    path: &ImagePath,
    size: u64,
    reader: &mut dyn Read,
    detectors: &Detectors,
    opts: &WalkOptions,
    sink: &mut Sink<'_>,
) -> Vec<Fact> {
    facts_of(path, size, reader, None, detectors, opts, sink)
}

/// [`file_facts`] for a file opened on disk: an ELF file is scanned by seeking to its
/// headers instead of reading it whole.
pub(crate) fn file_facts_seekable(
    path: &ImagePath,
    size: u64,
    file: &std::fs::File,
    detectors: &Detectors,
    opts: &WalkOptions,
    sink: &mut Sink<'_>,
) -> Vec<Fact> {
    let mut from_start = file;
    facts_of(
        path,
        size,
        &mut from_start,
        Some(file),
        detectors,
        opts,
        sink,
    )
}

/// `reader` gives the file from its start; `seekable`, when there, the same file at any
/// offset, for the ELF scan.
fn facts_of(
    path: &ImagePath,
    size: u64,
    reader: &mut dyn Read,
    seekable: Option<&std::fs::File>,
    detectors: &Detectors,
    opts: &WalkOptions,
    sink: &mut Sink<'_>,
) -> Vec<Fact> {
    let mut counted = Counted {
        inner: reader,
        n: 0,
    };
    let facts = facts_with(path, size, &mut counted, seekable, detectors, opts, sink);
    if counted.n > 0 {
        count_read(size, counted.n);
    }
    facts
}

/// A reader that counts what passes through it (the ELF scan's own reads are added to `n`).
struct Counted<'a> {
    inner: &'a mut dyn Read,
    n: u64,
}

impl Read for Counted<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let k = self.inner.read(buf)?;
        self.n += k as u64;
        Ok(k)
    }
}

fn facts_with(
    path: &ImagePath,
    size: u64,
    reader: &mut Counted<'_>,
    seekable: Option<&std::fs::File>,
    detectors: &Detectors,
    opts: &WalkOptions,
    sink: &mut Sink<'_>,
) -> Vec<Fact> {
    let mut facts = Vec::new();
    let wanting: Vec<&dyn Detector> = detectors.wanting(path);
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
            sink.read_failed(path, &e);
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
            if size > d.max_bytes() && !d.head_only() {
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
                    sink.read_failed(path, &e);
                    return facts;
                }
            }
        }
        if crate::detect::nvidia_tool::is_triton_ptxas(path.as_str()) {
            // An assembler has no device code and links no CUDA library: what matters is
            // the CUDA release of its banner, deep in `.rodata`, so the file is streamed.
            match crate::detect::nvidia_tool::read_tool(path.file_name(), &buf, reader) {
                Ok(t) => facts.push(Fact::NvidiaTool(t)),
                Err(e) => sink.read_failed(path, &e),
            }
            return facts;
        }
        if elf::is_elf(&buf) {
            let scanned = match seekable {
                Some(file) => elf::scan_elf_at(file, size).map(|s| {
                    reader.n += s.bytes_read;
                    s.facts
                }),
                // The scanner gets the whole file: the bytes already read, then the rest.
                None => elf::scan_elf(io::Cursor::new(&buf[..]).chain(&mut *reader), size),
            };
            match scanned {
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
