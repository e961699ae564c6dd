//! A captured host tree (`--root DIR`): files at their real paths under DIR, links resolved
//! inside the tree, command outputs under `DIR/.gpulint-host/` (layout in [`super`]).

use super::local::{list_local, read_local};
use super::{
    normalize, CommandOutput, DevNode, EntryKind, HostCommand, HostReader, Unreadable,
    UnreadableLog,
};
use std::collections::BTreeMap;
use std::path::PathBuf;

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
    fn modified(&self, path: &str) -> Option<i64> {
        // Read at each call, through the one read path, so an unreadable list is charged to
        // the check that asked.
        let b = self.read_capture("mtimes.txt").ok()??;
        let want = normalize(path);
        String::from_utf8_lossy(&b).lines().find_map(|l| {
            let (secs, p) = l.trim_end().split_once(' ')?;
            (normalize(p) == want).then(|| secs.parse::<i64>().ok())?
        })
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
}
