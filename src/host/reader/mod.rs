//! Where host facts come from: the live machine ([`LiveReader`]) or a captured tree on disk
//! ([`CapturedReader`], `--root DIR`). Both only read: files, directory listings, symlink
//! targets, and the output of a fixed list of read-only commands ([`HostCommand`]).
//!
//! Captured layout (documented in `testdata/host/README.md`): every file at its real path
//! under DIR (`DIR/proc/driver/nvidia/version`, `DIR/etc/docker/daemon.json`, …), plus
//! `DIR/.gpulint-host/` with what cannot live at a real path:
//!
//! - `commands/<capture name>`: stdout of a command (see [`HostCommand::capture_name`]);
//!   optional `<capture name>.rc` (exit status, default 0) and `<capture name>.stderr`.
//!   A missing file means "command not available".
//! - `env.txt`: the invoking environment, `KEY=VALUE` per line (PATH, LD_LIBRARY_PATH, …).
//! - `dev-nvidia.txt`: `ls -l /dev/nvidia* /dev/nvidia-caps` (device nodes cannot be
//!   stored in git).
//! - `mtimes.txt`: `stat -c '%Y %n'` of the files whose age matters (git keeps no mtimes):
//!   seconds since the epoch, a space, the host path, one file per line.

mod captured;
mod live;
mod local;

pub use super::command::{CommandOutput, HostCommand, QUERY_GPU_FIELDS};
pub use super::parse::{DevNode, Identity};
pub use captured::{CapturedReader, CAPTURE_DIR};
pub use live::LiveReader;
pub use local::MAX_READ;

use std::cell::RefCell;
use std::path::PathBuf;

/// Kind of a directory entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum EntryKind {
    File,
    Dir,
    Symlink,
    Other,
}

/// Read-only access to a host. Paths are absolute host paths (`/proc/modules`).
pub trait HostReader {
    /// Human name for messages: "live host" or "captured tree /x".
    fn describe(&self) -> String;
    /// True when reading the machine gpulint runs on: only then do process-relative files
    /// (`/proc/self/status`) describe the invoking user.
    fn is_live(&self) -> bool;
    /// The file's bytes: Ok(None) when nothing is there, Err when something is there that
    /// could not be read (permission, a FIFO, socket, device or directory where a file was
    /// expected, a file past [`MAX_READ`]). The one path every host file read takes: it
    /// never blocks on a FIFO, and every Err is also kept in [`Self::unreadable`].
    fn read(&self, path: &str) -> Result<Option<Vec<u8>>, Unreadable>;
    /// Directory entries sorted by name; None if not a directory (a directory that exists
    /// but cannot be listed is also kept in [`Self::unreadable`]).
    fn list_dir(&self, path: &str) -> Option<Vec<(String, EntryKind)>>;
    /// Target text of a symlink.
    fn read_link(&self, path: &str) -> Option<String>;
    /// Whether anything (a file of any kind, a directory, a link, even a dangling one) is at
    /// `path`, readable or not.
    fn exists(&self, path: &str) -> bool;
    /// Everything found present but unreadable so far, oldest first (repeats included): what
    /// turns a check's verdict into "could not check" (`crate::rules::host::run_checks_with`).
    fn unreadable(&self) -> Vec<Unreadable>;
    /// Runs (or looks up the capture of) a read-only command.
    fn run(&self, cmd: HostCommand) -> CommandOutput;
    /// An environment variable of the invoking environment.
    fn env(&self, key: &str) -> Option<String>;
    /// `/dev/nvidia*` and `/dev/nvidia-caps/*`; None when that cannot be seen at all.
    fn dev_nodes(&self) -> Option<Vec<DevNode>>;
    /// Where the file of this host path lies on this machine (for readers that need to
    /// stream big files themselves, e.g. the fatbin scanner).
    fn local_path(&self, path: &str) -> PathBuf;
    /// When the file at `path` was last modified, in seconds since the Unix epoch; None when
    /// unknown (absent, or a captured tree that did not record it).
    fn modified(&self, path: &str) -> Option<i64>;

    /// The file's text; None when absent *or unreadable*: an unreadable file is recorded in
    /// [`Self::unreadable`], so a check that reads through this cannot turn it into a verdict.
    fn read_string(&self, path: &str) -> Option<String> {
        self.read(path)
            .ok()
            .flatten()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    }
}

/// Evidence that is there but could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    /// The host path (`/proc/modules`) or, for a captured command, the capture's path in
    /// the tree (`/.gpulint-host/commands/dmesg.txt`).
    pub path: String,
    pub error: String,
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.error)
    }
}

/// Appends to a reader's log of unreadable evidence.
#[derive(Default)]
pub(super) struct UnreadableLog(RefCell<Vec<Unreadable>>);

impl UnreadableLog {
    pub(super) fn note<T>(&self, r: Result<T, Unreadable>) -> Result<T, Unreadable> {
        if let Err(u) = &r {
            self.0.borrow_mut().push(u.clone());
        }
        r
    }
    pub(super) fn all(&self) -> Vec<Unreadable> {
        self.0.borrow().clone()
    }
}

/// `path` with the symlinks in every component resolved inside the reader (the one loader
/// model's [`crate::loader::canonical`]): `/usr/local/cuda/lib64` →
/// `/usr/local/cuda-12.1/targets/x86_64-linux/lib`.
pub fn resolve_link(reader: &dyn HostReader, path: &str) -> String {
    crate::loader::canonical(&HostFs(reader), path)
}

pub use crate::loader::normalize;

/// A host (live or captured) as the dynamic loader model sees it.
pub struct HostFs<'a>(pub &'a dyn HostReader);

impl crate::loader::LoaderFs for HostFs<'_> {
    fn read_link(&self, path: &str) -> Option<String> {
        self.0.read_link(path)
    }
    fn is_file(&self, path: &str) -> bool {
        let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
        let dir = if dir.is_empty() { "/" } else { dir };
        self.0
            .list_dir(dir)
            .unwrap_or_default()
            .iter()
            .any(|(n, k)| n == name && *k == EntryKind::File)
    }
    fn list_dir(&self, dir: &str) -> Vec<String> {
        let entries = self.0.list_dir(dir).unwrap_or_default();
        entries.into_iter().map(|(n, _)| n).collect()
    }
    fn ld_conf(&self, path: &str) -> Option<crate::loader::LdSoConf> {
        Some(crate::loader::parse_ld_so_conf(&self.0.read(path).ok()??))
    }
}
