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

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The read-only commands gpulint may run on a host. Every one is optional.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HostCommand {
    /// `nvidia-smi --query-gpu=<QUERY_GPU_FIELDS> --format=csv`
    NvidiaSmiQueryGpu,
    /// `nvidia-smi -q -x`
    NvidiaSmiQx,
    /// `nvidia-smi -q`
    NvidiaSmiQ,
    /// `nvidia-smi -L`
    NvidiaSmiL,
    /// `nvidia-smi` (the summary table; only scanned for `ERR!` and reset notices)
    NvidiaSmi,
    /// `uname -r`
    UnameR,
    /// `uname -m`
    UnameM,
    /// `nvcc --version` (PATH, then /usr/local/cuda/bin/nvcc)
    NvccVersion,
    /// `id`
    Id,
    /// `dmesg` (kernel log; often needs privileges)
    Dmesg,
    /// `ps -e -o comm=`
    PsComm,
    /// `nvidia-ctk --version`
    NvidiaCtkVersion,
    /// `nvidia-container-cli --version`
    NvidiaContainerCliVersion,
    /// `docker info --format '{{json .}}'`
    DockerInfo,
}

/// The fields asked of `nvidia-smi --query-gpu`, in this order.
pub const QUERY_GPU_FIELDS: &str = "index,name,uuid,pci.bus_id,driver_version,compute_cap,memory.total,persistence_mode,mig.mode.current,ecc.mode.current";

impl HostCommand {
    pub const ALL: [HostCommand; 14] = [
        HostCommand::NvidiaSmiQueryGpu,
        HostCommand::NvidiaSmiQx,
        HostCommand::NvidiaSmiQ,
        HostCommand::NvidiaSmiL,
        HostCommand::NvidiaSmi,
        HostCommand::UnameR,
        HostCommand::UnameM,
        HostCommand::NvccVersion,
        HostCommand::Id,
        HostCommand::Dmesg,
        HostCommand::PsComm,
        HostCommand::NvidiaCtkVersion,
        HostCommand::NvidiaContainerCliVersion,
        HostCommand::DockerInfo,
    ];

    /// Program and arguments.
    pub fn argv(&self) -> Vec<String> {
        let v: Vec<&str> = match self {
            HostCommand::NvidiaSmiQueryGpu => {
                return vec![
                    "nvidia-smi".into(),
                    format!("--query-gpu={QUERY_GPU_FIELDS}"),
                    "--format=csv".into(),
                ]
            }
            HostCommand::NvidiaSmiQx => vec!["nvidia-smi", "-q", "-x"],
            HostCommand::NvidiaSmiQ => vec!["nvidia-smi", "-q"],
            HostCommand::NvidiaSmiL => vec!["nvidia-smi", "-L"],
            HostCommand::NvidiaSmi => vec!["nvidia-smi"],
            HostCommand::UnameR => vec!["uname", "-r"],
            HostCommand::UnameM => vec!["uname", "-m"],
            HostCommand::NvccVersion => vec!["nvcc", "--version"],
            HostCommand::Id => vec!["id"],
            HostCommand::Dmesg => vec!["dmesg"],
            HostCommand::PsComm => vec!["ps", "-e", "-o", "comm="],
            HostCommand::NvidiaCtkVersion => vec!["nvidia-ctk", "--version"],
            HostCommand::NvidiaContainerCliVersion => vec!["nvidia-container-cli", "--version"],
            HostCommand::DockerInfo => vec!["docker", "info", "--format", "{{json .}}"],
        };
        v.into_iter().map(String::from).collect()
    }

    /// The command line as shown in evidence.
    pub fn display(&self) -> String {
        self.argv().join(" ")
    }

    /// File name under `.gpulint-host/commands/` in a captured tree.
    pub fn capture_name(&self) -> &'static str {
        match self {
            HostCommand::NvidiaSmiQueryGpu => "nvidia-smi--query-gpu.csv",
            HostCommand::NvidiaSmiQx => "nvidia-smi-q.xml",
            HostCommand::NvidiaSmiQ => "nvidia-smi-q.txt",
            HostCommand::NvidiaSmiL => "nvidia-smi-L.txt",
            HostCommand::NvidiaSmi => "nvidia-smi.txt",
            HostCommand::UnameR => "uname-r.txt",
            HostCommand::UnameM => "uname-m.txt",
            HostCommand::NvccVersion => "nvcc-version.txt",
            HostCommand::Id => "id.txt",
            HostCommand::Dmesg => "dmesg.txt",
            HostCommand::PsComm => "ps-comm.txt",
            HostCommand::NvidiaCtkVersion => "nvidia-ctk-version.txt",
            HostCommand::NvidiaContainerCliVersion => "nvidia-container-cli-version.txt",
            HostCommand::DockerInfo => "docker-info.json",
        }
    }
}

/// What running a command gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandOutput {
    /// Not installed / not captured.
    NotFound,
    /// It ran. `status` is the exit code (None when killed by a signal).
    Ran {
        status: Option<i32>,
        stdout: String,
        stderr: String,
    },
}

impl CommandOutput {
    /// Stdout of a successful run.
    pub fn ok_stdout(&self) -> Option<&str> {
        match self {
            CommandOutput::Ran {
                status: Some(0),
                stdout,
                ..
            } => Some(stdout),
            _ => None,
        }
    }
    /// Stdout and stderr of a run, whatever its status (error messages live there).
    pub fn any_output(&self) -> Option<String> {
        match self {
            CommandOutput::NotFound => None,
            CommandOutput::Ran { stdout, stderr, .. } => Some(format!("{stdout}{stderr}")),
        }
    }
    pub fn failed(&self) -> bool {
        matches!(self, CommandOutput::Ran { status, .. } if *status != Some(0))
    }
}

/// Kind of a directory entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum EntryKind {
    File,
    Dir,
    Symlink,
    Other,
}

/// One `/dev/nvidia*` node as seen by `ls -l` or `stat`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DevNode {
    pub path: String,
    /// `c` char device, `d` directory, `l` symlink, `-` file.
    pub kind: char,
    /// Permission bits (0o777 part).
    pub mode: u32,
    /// Owner and group as numbers when known, names when known.
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub owner: Option<String>,
    pub group: Option<String>,
    pub major: Option<u32>,
    pub minor: Option<u32>,
    /// The evidence line (the `ls -l` line, or one built from `stat`).
    pub line: String,
}

/// The invoking user.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identity {
    pub uid: Option<u32>,
    pub user: Option<String>,
    /// Every group, primary first: (gid, name).
    pub groups: Vec<(Option<u32>, Option<String>)>,
    pub source: String,
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
struct UnreadableLog(RefCell<Vec<Unreadable>>);

impl UnreadableLog {
    fn note<T>(&self, r: Result<T, Unreadable>) -> Result<T, Unreadable> {
        if let Err(u) = &r {
            self.0.borrow_mut().push(u.clone());
        }
        r
    }
    fn all(&self) -> Vec<Unreadable> {
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

/// `dir`'s entries; None when there is no directory there. `shown` is the host path for
/// the error of a directory that exists but cannot be listed.
fn list_local(dir: &Path, shown: &str, log: &UnreadableLog) -> Option<Vec<(String, EntryKind)>> {
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
fn read_local(p: &Path, shown: &str, no_follow: bool) -> Result<Option<Vec<u8>>, Unreadable> {
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

/// The machine gpulint runs on. Commands run with a clean locale; outputs are cached so
/// each command runs at most once.
#[derive(Default)]
pub struct LiveReader {
    cache: RefCell<BTreeMap<HostCommand, CommandOutput>>,
    unreadable: UnreadableLog,
}

impl LiveReader {
    pub fn new() -> Self {
        Self::default()
    }

    fn run_uncached(&self, cmd: HostCommand) -> CommandOutput {
        let argv = cmd.argv();
        let mut candidates = vec![argv[0].clone()];
        if cmd == HostCommand::NvccVersion {
            candidates.push("/usr/local/cuda/bin/nvcc".into());
        }
        for prog in candidates {
            let child = Command::new(&prog)
                .args(&argv[1..])
                .env("LC_ALL", "C")
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn();
            match child {
                Ok(child) => return wait_with_timeout(child, COMMAND_TIMEOUT),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    return CommandOutput::Ran {
                        status: None,
                        stdout: String::new(),
                        stderr: e.to_string(),
                    }
                }
            }
        }
        CommandOutput::NotFound
    }
}

/// nvidia-smi can hang on a GPU in a bad state, `docker info` on a stuck daemon: every
/// command gets this long, then it is killed and reported as timed out.
const COMMAND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

fn wait_with_timeout(mut child: std::process::Child, limit: std::time::Duration) -> CommandOutput {
    use std::io::Read;
    fn drain<R: Read + Send + 'static>(r: Option<R>) -> std::thread::JoinHandle<Vec<u8>> {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut buf);
            }
            buf
        })
    }
    let out = drain(child.stdout.take());
    let err = drain(child.stderr.take());
    let deadline = std::time::Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Ok(st.code()),
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(10))
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                break Err(format!("timed out after {}s", limit.as_secs()));
            }
            Err(e) => break Err(e.to_string()),
        }
    };
    let stdout = String::from_utf8_lossy(&out.join().unwrap_or_default()).into_owned();
    let mut stderr = String::from_utf8_lossy(&err.join().unwrap_or_default()).into_owned();
    let status = match status {
        Ok(code) => code,
        Err(msg) => {
            stderr.push_str(&msg);
            None
        }
    };
    CommandOutput::Ran {
        status,
        stdout,
        stderr,
    }
}

fn dev_node_from_meta(path: &str, md: &std::fs::Metadata) -> DevNode {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let ft = md.file_type();
    let kind = if ft.is_char_device() {
        'c'
    } else if ft.is_dir() {
        'd'
    } else if ft.is_symlink() {
        'l'
    } else if ft.is_block_device() {
        'b'
    } else {
        '-'
    };
    let rdev = md.rdev();
    let (major, minor) = if kind == 'c' || kind == 'b' {
        let major = ((rdev >> 8) & 0xfff) | ((rdev >> 32) & !0xfff);
        let minor = (rdev & 0xff) | ((rdev >> 12) & !0xff);
        (Some(major as u32), Some(minor as u32))
    } else {
        (None, None)
    };
    let mode = md.mode() & 0o7777;
    let line = format!(
        "{kind}{} {}:{} {} {path}",
        crate::host::parse::mode_string(mode),
        md.uid(),
        md.gid(),
        match (major, minor) {
            (Some(a), Some(b)) => format!("{a},{b}"),
            _ => String::new(),
        }
    );
    DevNode {
        path: path.to_string(),
        kind,
        mode: mode & 0o777,
        uid: Some(md.uid()),
        gid: Some(md.gid()),
        owner: None,
        group: None,
        major,
        minor,
        line,
    }
}

impl HostReader for LiveReader {
    fn describe(&self) -> String {
        "live host".into()
    }
    fn is_live(&self) -> bool {
        true
    }
    fn read(&self, path: &str) -> Result<Option<Vec<u8>>, Unreadable> {
        self.unreadable
            .note(read_local(Path::new(path), path, false))
    }
    fn list_dir(&self, path: &str) -> Option<Vec<(String, EntryKind)>> {
        list_local(Path::new(path), path, &self.unreadable)
    }
    fn read_link(&self, path: &str) -> Option<String> {
        std::fs::read_link(path)
            .ok()
            .map(|p| p.to_string_lossy().into_owned())
    }
    fn exists(&self, path: &str) -> bool {
        std::fs::symlink_metadata(path).is_ok()
    }
    fn unreadable(&self) -> Vec<Unreadable> {
        self.unreadable.all()
    }
    fn run(&self, cmd: HostCommand) -> CommandOutput {
        if let Some(o) = self.cache.borrow().get(&cmd) {
            return o.clone();
        }
        let o = self.run_uncached(cmd);
        self.cache.borrow_mut().insert(cmd, o.clone());
        o
    }
    fn env(&self, key: &str) -> Option<String> {
        std::env::var(key).ok()
    }
    fn dev_nodes(&self) -> Option<Vec<DevNode>> {
        let entries = list_local(Path::new("/dev"), "/dev", &self.unreadable)?;
        let mut out = Vec::new();
        for (name, _) in entries.iter().filter(|(n, _)| n.starts_with("nvidia")) {
            let p = format!("/dev/{name}");
            if let Ok(md) = std::fs::symlink_metadata(&p) {
                out.push(dev_node_from_meta(&p, &md));
            }
            if name == "nvidia-caps" {
                for (c, _) in list_local(Path::new(&p), &p, &self.unreadable).unwrap_or_default() {
                    let cp = format!("{p}/{c}");
                    if let Ok(md) = std::fs::symlink_metadata(&cp) {
                        out.push(dev_node_from_meta(&cp, &md));
                    }
                }
            }
        }
        Some(out)
    }
    fn local_path(&self, path: &str) -> PathBuf {
        // Resolved, so a reader that refuses a final symlink (the arch scanner) can open it.
        std::fs::canonicalize(path).unwrap_or_else(|_| PathBuf::from(path))
    }
}

/// A captured host tree (`--root DIR`).
pub struct CapturedReader {
    root: PathBuf,
    env: BTreeMap<String, String>,
    unreadable: UnreadableLog,
}

/// The folder inside a captured tree that holds command outputs and other captures.
pub const CAPTURE_DIR: &str = ".gpulint-host";

/// The captured tree's own links, read as the OS stores them: what [`CapturedReader`]
/// resolves paths with (component by component, each prefix already inside the tree).
struct TreeLinks<'a>(&'a CapturedReader);

impl crate::loader::LoaderFs for TreeLinks<'_> {
    fn read_link(&self, path: &str) -> Option<String> {
        std::fs::read_link(self.0.host(path))
            .ok()
            .map(|p| p.to_string_lossy().into_owned())
    }
    fn is_file(&self, _: &str) -> bool {
        false
    }
    fn list_dir(&self, _: &str) -> Vec<String> {
        Vec::new()
    }
    fn ld_conf(&self, _: &str) -> Option<crate::loader::LdSoConf> {
        None
    }
}

impl CapturedReader {
    pub fn new(root: impl Into<PathBuf>) -> anyhow::Result<Self> {
        let root: PathBuf = root.into();
        if !root.is_dir() {
            anyhow::bail!("--root {}: not a directory", root.display());
        }
        let mut reader = CapturedReader {
            root,
            env: BTreeMap::new(),
            unreadable: UnreadableLog::default(),
        };
        if let Ok(Some(b)) = reader.read_capture("env.txt") {
            for line in String::from_utf8_lossy(&b).lines() {
                if let Some((k, v)) = line.split_once('=') {
                    reader.env.insert(k.trim().to_string(), v.to_string());
                }
            }
        }
        Ok(reader)
    }

    fn host(&self, path: &str) -> PathBuf {
        // Never leave the root: normalize first, then join without the leading slash.
        let n = normalize(path);
        self.root.join(n.trim_start_matches('/'))
    }

    /// The file under the root that `path` names, symlinks in every component resolved inside
    /// the captured tree (an absolute link means the captured host's path, never this
    /// machine's); None where they loop or the result is still a link.
    fn inside(&self, path: &str) -> Option<PathBuf> {
        let real = crate::loader::resolve(&TreeLinks(self), path)?;
        let p = self.host(&real);
        let is_link = std::fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_symlink());
        (!is_link).then_some(p)
    }

    /// `path`'s last component under its parent resolved inside the tree (the entry itself
    /// may be a link; it is not followed).
    fn entry(&self, path: &str) -> Option<PathBuf> {
        let n = normalize(path);
        let (dir, name) = n.rsplit_once('/')?;
        if name.is_empty() {
            return Some(self.root.clone());
        }
        Some(
            self.inside(if dir.is_empty() { "/" } else { dir })?
                .join(name),
        )
    }

    /// A file of `.gpulint-host/` (command outputs, env, the device listing), through the
    /// one read path: regular files only, no link followed.
    fn read_capture(&self, rel: &str) -> Result<Option<Vec<u8>>, Unreadable> {
        let shown = format!("/{CAPTURE_DIR}/{rel}");
        self.unreadable.note(read_local(
            &self.root.join(CAPTURE_DIR).join(rel),
            &shown,
            true,
        ))
    }
}

impl HostReader for CapturedReader {
    fn describe(&self) -> String {
        format!("captured tree {}", self.root.display())
    }
    fn is_live(&self) -> bool {
        false
    }
    fn read(&self, path: &str) -> Result<Option<Vec<u8>>, Unreadable> {
        let Some(p) = self.inside(path) else {
            return Ok(None);
        };
        self.unreadable.note(read_local(&p, path, true))
    }
    fn list_dir(&self, path: &str) -> Option<Vec<(String, EntryKind)>> {
        list_local(&self.inside(path)?, path, &self.unreadable)
    }
    fn read_link(&self, path: &str) -> Option<String> {
        std::fs::read_link(self.entry(path)?)
            .ok()
            .map(|p| p.to_string_lossy().into_owned())
    }
    fn exists(&self, path: &str) -> bool {
        self.entry(path)
            .is_some_and(|p| std::fs::symlink_metadata(p).is_ok())
    }
    fn unreadable(&self) -> Vec<Unreadable> {
        self.unreadable.all()
    }
    fn run(&self, cmd: HostCommand) -> CommandOutput {
        let name = cmd.capture_name();
        let Ok(Some(stdout)) = self.read_capture(&format!("commands/{name}")) else {
            return CommandOutput::NotFound;
        };
        let status = self
            .read_capture(&format!("commands/{name}.rc"))
            .ok()
            .flatten()
            .and_then(|b| String::from_utf8_lossy(&b).trim().parse::<i32>().ok())
            .unwrap_or(0);
        let stderr = self
            .read_capture(&format!("commands/{name}.stderr"))
            .ok()
            .flatten()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        CommandOutput::Ran {
            status: Some(status),
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr,
        }
    }
    fn env(&self, key: &str) -> Option<String> {
        self.env.get(key).cloned()
    }
    fn dev_nodes(&self) -> Option<Vec<DevNode>> {
        let b = self.read_capture("dev-nvidia.txt").ok()??;
        Some(crate::host::parse::parse_ls_l(&String::from_utf8_lossy(&b)))
    }
    fn local_path(&self, path: &str) -> PathBuf {
        self.inside(path).unwrap_or_else(|| self.host(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A captured tree's links mean the captured host's paths: an absolute link in a middle
    /// component resolves inside the tree, never on this machine.
    #[test]
    fn captured_links_resolve_inside_the_tree_in_every_component() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("usr/local/cuda-12.1")).unwrap();
        std::fs::write(
            root.join("usr/local/cuda-12.1/version.txt"),
            "CUDA Version 12.1.1\n",
        )
        .unwrap();
        symlink("/usr/local/cuda-12.1", root.join("usr/local/cuda")).unwrap();
        // `/x` is this machine's `/etc` if followed by the OS, an empty spot in the tree here.
        symlink("/etc", root.join("x")).unwrap();
        let r = CapturedReader::new(root).unwrap();
        assert_eq!(
            r.read_string("/usr/local/cuda/version.txt").as_deref(),
            Some("CUDA Version 12.1.1\n")
        );
        assert!(r.list_dir("/usr/local/cuda").is_some());
        assert_eq!(r.read("/x/hostname"), Ok(None));
        assert!(!r.exists("/x/hostname"));
        assert_eq!(r.read_link("/x/localtime"), None);
        assert_eq!(r.list_dir("/x"), None);
        assert!(r.local_path("/x/hostname").starts_with(root));
    }

    #[test]
    fn commands_time_out_and_missing_ones_are_not_found() {
        let c = Command::new("sleep")
            .arg("5")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        match wait_with_timeout(c, std::time::Duration::from_millis(200)) {
            CommandOutput::Ran { status, stderr, .. } => {
                assert_eq!(status, None);
                assert!(stderr.contains("timed out"));
            }
            o => panic!("{o:?}"),
        }
        let c = Command::new("echo")
            .arg("hi")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let o = wait_with_timeout(c, std::time::Duration::from_secs(5));
        assert_eq!(o.ok_stdout(), Some("hi\n"));
        assert_eq!(normalize("/a/./b/../../../c"), "/c");
    }
}
