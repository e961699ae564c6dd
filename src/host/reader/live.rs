//! The machine gpulint runs on: its files, `/dev/nvidia*` nodes and the read-only commands,
//! each run once with a time limit.

use super::local::{list_local, read_local};
use super::{
    CommandOutput, DevNode, EntryKind, HostCommand, HostReader, Unreadable, UnreadableLog,
};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

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
    fn modified(&self, path: &str) -> Option<i64> {
        let t = std::fs::metadata(path).ok()?.modified().ok()?;
        let secs = t.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs();
        i64::try_from(secs).ok()
    }
    fn local_path(&self, path: &str) -> PathBuf {
        // Resolved, so a reader that refuses a final symlink (the arch scanner) can open it.
        std::fs::canonicalize(path).unwrap_or_else(|_| PathBuf::from(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(super::super::normalize("/a/./b/../../../c"), "/c");
    }
}
