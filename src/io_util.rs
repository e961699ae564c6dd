//! Small I/O helpers shared by the sources and the walker.

use std::io::{self, Read};

/// Fill `buf` as far as the reader allows (short only at end of stream).
pub(crate) fn read_up_to(r: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Largest configuration file read (Dockerfile, compose, manifest, `.env`, requirements):
/// far above any real one, small enough that `/dev/zero` or a planted huge file costs nothing.
pub(crate) const MAX_CONFIG_FILE: u64 = 16 << 20;

/// Whether `path` (resolved, links included) lies inside `root` (resolved). Either failing to
/// resolve counts as outside.
pub(crate) fn inside(root: &std::path::Path, path: &std::path::Path) -> bool {
    match (root.canonicalize(), path.canonicalize()) {
        (Ok(r), Ok(p)) => p.starts_with(r),
        _ => false,
    }
}

/// Open `path` for reading only when it is a regular file (not through a symlink, never a
/// FIFO, socket or device) of at most `max` bytes. The check is made on the opened handle
/// (`O_NOFOLLOW | O_NONBLOCK`, then fstat), so the file cannot be swapped between check and
/// open, and opening a FIFO does not block. Errors name the path, never its content.
pub(crate) fn open_regular(path: &std::path::Path, max: u64) -> io::Result<std::fs::File> {
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // O_NOFOLLOW | O_NONBLOCK (values from <fcntl.h>; identical on Linux x86-64/arm64).
        opts.custom_flags(NOFOLLOW | NONBLOCK);
    }
    let file = opts.open(path).map_err(|e| {
        // ELOOP: the last component is a symlink.
        if e.raw_os_error() == Some(ELOOP) {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is a symbolic link; refused", path.display()),
            )
        } else {
            io::Error::new(e.kind(), format!("{}: {e}", path.display()))
        }
    })?;
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is not a regular file (a directory, FIFO, socket or device); refused",
                path.display()
            ),
        ));
    }
    if meta.len() > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is {} bytes, more than the {max} accepted",
                path.display(),
                meta.len()
            ),
        ));
    }
    Ok(file)
}

/// Read a whole regular file of at most `max` bytes (see [`open_regular`]).
pub(crate) fn read_regular(path: &std::path::Path, max: u64) -> io::Result<Vec<u8>> {
    let file = open_regular(path, max)?;
    let mut out = Vec::new();
    // The file may grow after the size check: never read past the bound.
    file.take(max.saturating_add(1)).read_to_end(&mut out)?;
    if out.len() as u64 > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} grew past the {max} bytes accepted", path.display()),
        ));
    }
    Ok(out)
}

/// Read a regular file as UTF-8 text (see [`read_regular`]). Invalid UTF-8 is an error that
/// names the file, never echoes its bytes.
pub(crate) fn read_regular_string(path: &std::path::Path, max: u64) -> io::Result<String> {
    String::from_utf8(read_regular(path, max)?).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is not UTF-8 text", path.display()),
        )
    })
}

// O_NOFOLLOW / O_NONBLOCK from <fcntl.h> (the libc crate is not a dependency): opening a
// FIFO with O_NONBLOCK returns at once instead of waiting for a writer; O_NOFOLLOW fails on a
// final symlink. Shared with the host reader.
#[cfg(target_os = "linux")]
pub(crate) const NOFOLLOW: i32 = 0o400000;
#[cfg(target_os = "linux")]
pub(crate) const NONBLOCK: i32 = 0o4000;
#[cfg(target_os = "macos")]
pub(crate) const NOFOLLOW: i32 = 0x100;
#[cfg(target_os = "macos")]
pub(crate) const NONBLOCK: i32 = 0x4;
#[cfg(all(unix, not(any(target_os = "linux", target_os = "macos"))))]
pub(crate) const NOFOLLOW: i32 = 0;
#[cfg(all(unix, not(any(target_os = "linux", target_os = "macos"))))]
pub(crate) const NONBLOCK: i32 = 0;
const ELOOP: i32 = if cfg!(target_os = "macos") { 62 } else { 40 };
