//! Layers applied bottom-up the way containerd and umoci unpack them, one change at a time
//! in tar order, into the [`FileTree`] a container sees:
//!
//! - The directory part of an entry's path is resolved inside the image first: a symlink in
//!   it (from a lower layer or this one) is followed, so writes and whiteouts land where the
//!   link points (filepath-securejoin: absolute targets start at the image root, `..` stops
//!   there, missing components are taken as written). The last component is never followed.
//! - A new entry replaces what was at its path, a directory with all it holds, except a
//!   directory written over a directory, which keeps its content.
//! - A hard link is a second name of the file its target names *when the link is applied*:
//!   removing or replacing either name later leaves the other with that content.
//! - Whiteouts and opaque markers remove what lower layers left, never what this layer wrote
//!   before them or below those paths (umoci's upper paths).
//! - Where the unpack fails (a hard link to a missing name or a directory, an entry below a
//!   file, a symlink loop), the entry is skipped and a [`IssueKind::BadEntry`] recorded: the
//!   runtime refuses such an image, so it is incomplete input (GL000).

use super::{Change, FileTree, ImagePath, IssueKind, Node, NodeKind, ScanIssue};
use crate::detect::Fact;
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// Symlinks one path's resolution may follow while a layer is applied: filepath-securejoin's
/// bound (containerd's continuity has the same); more fails the unpack as a loop.
const MAX_APPLY_LINKS: usize = 255;

/// Path components one resolution may step through: a bound on the work a crafted chain of
/// long symlink targets can cost (far above any real path; more is refused, not cut).
const MAX_APPLY_STEPS: usize = 1 << 14;

/// Resolved directory parts remembered at once (a bound on memory, not on correctness).
const MAX_LITERAL_DIRS: usize = 4096;

#[derive(Default)]
pub(super) struct Squash {
    nodes: BTreeMap<ImagePath, Node>,
    /// Names of files that have (or had) a second name: name → its link group. A name leaves
    /// its group when it is removed or replaced.
    linked: HashMap<ImagePath, usize>,
    groups: Vec<LinkGroup>,
    /// Paths the current layer wrote, and their ancestors (resolved): whiteouts and opaque
    /// markers of the same layer leave them.
    upper: HashSet<ImagePath>,
    /// Whether the entry being applied is to be recorded in `upper`.
    track_upper: bool,
    /// Directory parts that resolved to themselves (no symlink in them) and passed the
    /// directory check: entries of one directory usually come together, and hard links name
    /// few targets' directories. One holds until a node at it or above it changes.
    literal_dirs: BTreeSet<ImagePath>,
    errors: Vec<ScanIssue>,
}

/// One file's content shared by several names through hard links.
struct LinkGroup {
    /// The name the file was written under.
    first: ImagePath,
    /// The content's facts, held once for every name.
    facts: Vec<Fact>,
}

impl Squash {
    pub(super) fn apply_layer<'a>(
        &mut self,
        layer: &str,
        changes: impl Iterator<Item = Cow<'a, Change>>,
    ) {
        self.upper.clear();
        let changes: Vec<Cow<'a, Change>> = changes.collect();
        // Upper paths matter only to the whiteouts and opaque markers after them: entries
        // after the last one are not recorded (a large layer usually has few or none).
        let last_marker = changes
            .iter()
            .rposition(|c| !matches!(c.as_ref(), Change::Entry { .. }));
        for (i, change) in changes.into_iter().enumerate() {
            self.track_upper = last_marker.is_some_and(|last| i < last);
            let result = match change {
                Cow::Borrowed(Change::Entry { path, node }) => {
                    self.apply_entry(path, Cow::Borrowed(node))
                }
                Cow::Owned(Change::Entry { path, node }) => {
                    self.apply_entry(&path, Cow::Owned(node))
                }
                Cow::Borrowed(Change::Whiteout { path }) => self.whiteout(path),
                Cow::Owned(Change::Whiteout { path }) => self.whiteout(&path),
                Cow::Borrowed(Change::Opaque { path }) => self.opaque(path),
                Cow::Owned(Change::Opaque { path }) => self.opaque(&path),
            };
            if let Err((path, why)) = result {
                self.errors.push(ScanIssue::at(
                    layer,
                    path,
                    IssueKind::BadEntry,
                    format!("{why}: a container runtime fails to unpack this entry; skipped"),
                ));
            }
        }
    }

    /// The tree, with every surviving name of a hard-linked file but one (the name it was
    /// written under while that survives) a [`NodeKind::Hardlink`] to that one.
    pub(super) fn finish(mut self) -> FileTree {
        let mut names: Vec<Vec<ImagePath>> = vec![Vec::new(); self.groups.len()];
        for (p, g) in std::mem::take(&mut self.linked) {
            names[g].push(p);
        }
        for (group, mut names) in self.groups.into_iter().zip(names) {
            if names.is_empty() {
                continue;
            }
            names.sort();
            let primary = if names.binary_search(&group.first).is_ok() {
                group.first
            } else {
                names[0].clone()
            };
            for name in names {
                let Some(node) = self.nodes.get_mut(&name) else {
                    continue;
                };
                if name != primary {
                    node.kind = NodeKind::Hardlink {
                        target: primary.clone(),
                    };
                }
            }
            if let Some(node) = self.nodes.get_mut(&primary) {
                node.facts = group.facts;
            }
        }
        FileTree {
            nodes: self.nodes,
            errors: self.errors,
        }
    }

    fn apply_entry(&mut self, path: &ImagePath, node: Cow<'_, Node>) -> Result<(), Refused> {
        let Some(parent) = path.parent() else {
            // The root's own entry changes nothing a scan reads.
            return Ok(());
        };
        let dir = self
            .resolve_dir_part(&parent, true)
            .map_err(|why| (path.clone(), why))?;
        let real = dir
            .join(path.file_name())
            .map_err(|why| (path.clone(), why))?;
        let writes_dir = matches!(node.kind, NodeKind::Dir { .. });
        // What is there now: a node (a directory or not), or a directory without one.
        let (exists, is_dir) = match self.nodes.get(&real) {
            Some(n) => (true, matches!(n.kind, NodeKind::Dir { .. })),
            None => {
                let implicit = self.is_implicit_dir(&real);
                (implicit, implicit)
            }
        };
        if exists && !(writes_dir && is_dir) {
            self.remove(&real, true, false);
        }
        let mut node = node.into_owned();
        let mut group = None;
        if let NodeKind::Hardlink { target } = &node.kind {
            // As the unpackers do: the target's directory part resolved in the image, its last
            // component not followed (link(2) on a symlink links the symlink).
            let (kind, g) = self
                .link_to(target)
                .map_err(|why| (path.clone(), format!("hard link to {target}: {why}")))?;
            node.kind = kind;
            group = g;
        }
        self.changed(&real);
        self.nodes.insert(real.clone(), node);
        if let Some(g) = group {
            self.linked.insert(real.clone(), g);
        }
        if self.track_upper {
            self.mark_upper(real);
        }
        Ok(())
    }

    /// What a hard link to `target` is: a copy of the target's kind, and for a regular file
    /// the link group both names are in.
    fn link_to(&mut self, target: &ImagePath) -> Result<(NodeKind, Option<usize>), String> {
        let parent = target
            .parent()
            .ok_or_else(|| "the root is a directory".to_string())?;
        let real = self
            .resolve_dir_part(&parent, false)?
            .join(target.file_name())?;
        let Some(node) = self.nodes.get_mut(&real) else {
            return Err(if self.is_implicit_dir(&real) {
                "a directory".to_string()
            } else {
                "no such file (not written, or removed before the link)".to_string()
            });
        };
        match &node.kind {
            NodeKind::File { .. } => {
                let g = match self.linked.get(&real) {
                    Some(g) => *g,
                    None => {
                        self.groups.push(LinkGroup {
                            first: real.clone(),
                            facts: std::mem::take(&mut node.facts),
                        });
                        self.linked.insert(real, self.groups.len() - 1);
                        self.groups.len() - 1
                    }
                };
                Ok((node.kind.clone(), Some(g)))
            }
            NodeKind::Symlink { .. } | NodeKind::Other => Ok((node.kind.clone(), None)),
            NodeKind::Dir { .. } => Err("a directory".to_string()),
            // Names are applied as copies: no hard-link node is in the tree while squashing.
            NodeKind::Hardlink { .. } => Err("an unresolved hard link".to_string()),
        }
    }

    /// `.wh.<name>`: removes what lower layers left at the resolved path.
    fn whiteout(&mut self, path: &ImagePath) -> Result<(), Refused> {
        let Some(parent) = path.parent() else {
            return Ok(());
        };
        let dir = self
            .secure_join(&parent)
            .map_err(|why| (path.clone(), why))?;
        let real = dir
            .join(path.file_name())
            .map_err(|why| (path.clone(), why))?;
        self.remove(&real, true, true);
        Ok(())
    }

    /// `.wh..wh..opq`: removes what lower layers left below the resolved directory.
    fn opaque(&mut self, dir: &ImagePath) -> Result<(), Refused> {
        let real = self.secure_join(dir).map_err(|why| (dir.clone(), why))?;
        self.remove(&real, false, true);
        Ok(())
    }

    /// Remove what is below `root` (and `root` itself when `inclusive`), keeping this layer's
    /// upper paths when `keep_upper`.
    fn remove(&mut self, root: &ImagePath, inclusive: bool, keep_upper: bool) {
        self.changed(root);
        let keys: Vec<ImagePath> = self
            .nodes
            .range(root.clone()..)
            .take_while(|(k, _)| k.as_str().starts_with(root.as_str()))
            .filter(|(k, _)| k.starts_with(root) && (inclusive || *k != root))
            .filter(|(k, _)| !(keep_upper && self.upper.contains(*k)))
            .map(|(k, _)| k.clone())
            .collect();
        for k in keys {
            self.nodes.remove(&k);
            self.linked.remove(&k);
        }
    }

    /// Nodes at or below `path` are about to change: a resolved directory at or below it
    /// may resolve differently now.
    fn changed(&mut self, path: &ImagePath) {
        let stale: Vec<ImagePath> = self
            .literal_dirs
            .range(path.clone()..)
            .take_while(|d| d.as_str().starts_with(path.as_str()))
            .filter(|d| d.starts_with(path))
            .cloned()
            .collect();
        for d in stale {
            self.literal_dirs.remove(&d);
        }
    }

    /// An entry's directory part resolved in the image ([`Squash::secure_join`]), checked to
    /// be a directory at every existing component when `check`.
    fn resolve_dir_part(&mut self, dir: &ImagePath, check: bool) -> Result<ImagePath, String> {
        if self.literal_dirs.contains(dir) {
            return Ok(dir.clone());
        }
        let real = self.secure_join(dir)?;
        let dirs_ok = self.check_dirs(&real);
        if check {
            dirs_ok.clone()?;
        }
        if real == *dir && dirs_ok.is_ok() {
            if self.literal_dirs.len() >= MAX_LITERAL_DIRS {
                self.literal_dirs.clear();
            }
            self.literal_dirs.insert(real.clone());
        }
        Ok(real)
    }

    /// Record `path` and its ancestors as written by the current layer.
    fn mark_upper(&mut self, path: ImagePath) {
        let mut cur = Some(path);
        while let Some(p) = cur {
            if self.upper.contains(&p) {
                // Its ancestors went in with it.
                break;
            }
            cur = p.parent();
            self.upper.insert(p);
        }
    }

    /// `dir` with every symlink in it followed inside the image, as filepath-securejoin
    /// resolves a tar entry's directory part.
    fn secure_join(&self, dir: &ImagePath) -> Result<ImagePath, String> {
        // Components still to resolve, the next one last.
        let mut pending: Vec<String> = dir.as_str().rsplit('/').map(str::to_string).collect();
        let mut done = ImagePath::root();
        let (mut links, mut steps) = (0usize, 0usize);
        while let Some(c) = pending.pop() {
            steps += 1;
            if steps > MAX_APPLY_STEPS {
                return Err(format!(
                    "resolving {dir} takes more than {MAX_APPLY_STEPS} steps through symlinks"
                ));
            }
            match c.as_str() {
                "" | "." => continue,
                ".." => {
                    done = done.parent().unwrap_or_else(ImagePath::root);
                    continue;
                }
                _ => {}
            }
            let next = done.join(&c)?;
            match self.nodes.get(&next).map(|n| &n.kind) {
                Some(NodeKind::Symlink { target }) => {
                    links += 1;
                    if links > MAX_APPLY_LINKS {
                        return Err(format!(
                            "resolving {dir} follows more than {MAX_APPLY_LINKS} symlinks (a loop)"
                        ));
                    }
                    if target.starts_with('/') {
                        done = ImagePath::root();
                    }
                    pending.extend(target.split('/').rev().map(str::to_string));
                }
                _ => done = next,
            }
        }
        Ok(done)
    }

    /// Every existing component of `dir` must be a directory for an entry to be written in
    /// it (the unpackers' MkdirAll fails with ENOTDIR otherwise).
    fn check_dirs(&self, dir: &ImagePath) -> Result<(), String> {
        let mut cur = ImagePath::root();
        for c in dir.components() {
            cur = cur.join(c)?;
            match self.nodes.get(&cur).map(|n| &n.kind) {
                None | Some(NodeKind::Dir { .. }) => {}
                Some(_) => return Err(format!("{cur} is not a directory")),
            }
        }
        Ok(())
    }

    fn is_implicit_dir(&self, p: &ImagePath) -> bool {
        if p.is_root() {
            return true;
        }
        let prefix = format!("{}/", p.as_str());
        self.nodes
            .range(p.clone()..)
            .take_while(|(k, _)| k.as_str().starts_with(p.as_str()))
            .any(|(k, _)| k.as_str().starts_with(&prefix))
    }
}

/// An entry the unpack fails on: its path, and why.
type Refused = (ImagePath, String);
