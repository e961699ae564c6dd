//! Reading this machine's files safely: the one path every host file read takes (regular
//! files only, a FIFO never blocks, bounded), for the live host and a captured tree alike.

use super::{EntryKind, Unreadable, UnreadableLog};
use std::path::Path;

/// `dir`'s entries; None when there is no directory there. `shown` is the host path for
/// the error of a directory that exists but cannot be listed.
pub(super) fn list_local(
    dir: &Path,
    shown: &str,
    log: &UnreadableLog,
) -> Option<Vec<(String, EntryKind)>> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if is_absent(&e) => return None,
        Err(e) => {
            let _ = log.note::<()>(Err(Unreadable {
                path: shown.to_string(),
                error: format!("cannot list the directory: {e}"),
            }));
            return None;
        }
    };
    let mut v: Vec<(String, EntryKind)> = rd
        .filter_map(|e| e.ok())
        .map(|e| {
            let kind = match e.file_type() {
                Ok(t) if t.is_symlink() => EntryKind::Symlink,
                Ok(t) if t.is_dir() => EntryKind::Dir,
                Ok(t) if t.is_file() => EntryKind::File,
                _ => EntryKind::Other,
            };
            (e.file_name().to_string_lossy().into_owned(), kind)
        })
        .collect();
    v.sort();
    Some(v)
}

/// Nothing at the path: no such entry, or a component on the way is not a directory.
fn is_absent(e: &std::io::Error) -> bool {
    // ENOTDIR (20 on Linux and macOS): `/etc/x/y` where `/etc/x` is a file.
    e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(20)
}

/// Reads at most this much of any one file (sysfs/proc files are small; logs may not be).
/// A file past it is unreadable evidence, never silently cut.
pub const MAX_READ: u64 = 16 << 20;

/// A host file's bytes, opened so that a FIFO cannot block (`O_NONBLOCK`) and checked on
/// the open handle (no swap between check and read): only a regular file is read.
/// `no_follow` refuses a symlink in the last component (a captured tree's paths are
/// resolved inside the tree first, so one left there would lead out of it). `shown` is the
/// host path errors name.
pub(super) fn read_local(
    p: &Path,
    shown: &str,
    no_follow: bool,
) -> Result<Option<Vec<u8>>, Unreadable> {
    use crate::io_util::{NOFOLLOW, NONBLOCK};
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let unreadable = |error: String| Unreadable {
        path: shown.to_string(),
        error,
    };
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true)
        .custom_flags(NONBLOCK | if no_follow { NOFOLLOW } else { 0 });
    let f = match opts.open(p) {
        Ok(f) => f,
        Err(e) if is_absent(&e) => return Ok(None),
        Err(e) => return Err(unreadable(e.to_string())),
    };
    let md = f.metadata().map_err(|e| unreadable(e.to_string()))?;
    if !md.is_file() {
        return Err(unreadable(format!(
            "not a regular file (a {})",
            kind_name(&md.file_type())
        )));
    }
    let mut buf = Vec::new();
    f.take(MAX_READ + 1)
        .read_to_end(&mut buf)
        .map_err(|e| unreadable(e.to_string()))?;
    if buf.len() as u64 > MAX_READ {
        return Err(unreadable(format!("larger than {MAX_READ} bytes")));
    }
    Ok(Some(buf))
}

fn kind_name(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_dir() {
        "directory"
    } else if t.is_fifo() {
        "FIFO"
    } else if t.is_socket() {
        "socket"
    } else if t.is_char_device() || t.is_block_device() {
        "device"
    } else if t.is_symlink() {
        "symbolic link"
    } else {
        "special file"
    }
}
