//! The squashed tree against a real unpacker (issue 24): random layer sequences of files,
//! directories, symlinks, hard links, whiteouts and opaque directories, unpacked by
//! `umoci unpack --rootless` and squashed by gpulint, must give the same tree; where umoci
//! refuses the image, gpulint must report it incomplete (GL000). A fixed seed runs in every
//! `cargo test`; `GPULINT_SQUASH_CASES` (and `GPULINT_SQUASH_SEED`) run longer
//! (`ci/squash-fuzz.sh`). Below it, one test per defect the comparison found.

use crate::common::*;
use gpulint::detect::Detectors;
use gpulint::source::open_image;
use gpulint::walk::{FileTree, NodeKind, WalkOptions};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

/// One change of a generated layer.
#[derive(Debug, Clone)]
enum Op {
    /// A regular file whose size names the write (each write has its own size).
    File(String, usize),
    Dir(String),
    Symlink(String, String),
    Hardlink(String, String),
    Whiteout(String),
    Opaque(String),
}

/// xorshift64*: small, seeded, the same sequence everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Names of directories, of symlinks and of files, kept apart so that most generated images
/// unpack (an entry below a file fails, a link over a directory removes what later links
/// name), while paths through symlinks, hard links, and kinds written over each other still
/// meet.
const DIRS: &[&str] = &["a", "b"];
const LINKS: &[&str] = &["l", "m"];
const FILES: &[&str] = &["f", "g"];

fn pick<'a>(rng: &mut Rng, from: &[&'a str]) -> &'a str {
    from[rng.below(from.len())]
}

/// Paths used so far, by what they were first used for.
#[derive(Default)]
struct Pool {
    dirs: Vec<String>,
    files: Vec<String>,
}

impl Pool {
    /// A directory path: one used before, or a new one up to two deep (or the root).
    fn dir(&self, rng: &mut Rng) -> String {
        if !self.dirs.is_empty() && rng.below(2) == 0 {
            return self.dirs[rng.below(self.dirs.len())].clone();
        }
        (0..rng.below(3))
            .map(|_| {
                if rng.below(3) == 0 {
                    pick(rng, LINKS)
                } else {
                    pick(rng, DIRS)
                }
            })
            .collect::<Vec<_>>()
            .join("/")
    }
    /// A file path: one used before, or a new name in a directory path.
    fn file(&self, rng: &mut Rng) -> String {
        if !self.files.is_empty() && rng.below(2) == 0 {
            return self.files[rng.below(self.files.len())].clone();
        }
        join(&self.dir(rng), pick(rng, FILES))
    }
    /// A path that names a directory (not the root).
    fn subdir(&self, rng: &mut Rng) -> String {
        join(&self.dir(rng), pick(rng, DIRS))
    }
    /// Any path used before, or a new one.
    fn any(&self, rng: &mut Rng) -> String {
        if rng.below(2) == 0 {
            self.file(rng)
        } else {
            self.subdir(rng)
        }
    }
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

fn symlink_target(rng: &mut Rng, pool: &Pool) -> String {
    let p = if rng.below(5) < 3 {
        pool.subdir(rng)
    } else {
        pool.file(rng)
    };
    match rng.below(8) {
        0..=2 => format!("/{p}"),
        3 => format!("../{p}"),
        4 => pick(rng, DIRS).to_string(),
        _ => p,
    }
}

/// Up to four layers of up to six changes each; file sizes count up from `next_size`.
fn generate(rng: &mut Rng, next_size: &mut usize) -> Vec<Vec<Op>> {
    let mut pool = Pool::default();
    let layers = 1 + rng.below(4);
    (0..layers)
        .map(|_| {
            let n = 1 + rng.below(6);
            (0..n)
                .map(|_| match rng.below(100) {
                    // A file; a hard link once there is a file to link to, mostly.
                    k @ (0..=29 | 60..=79) if pool.files.is_empty() || k < 30 => {
                        let p = pool.file(rng);
                        pool.files.push(p.clone());
                        *next_size += 1;
                        Op::File(p, *next_size)
                    }
                    30..=39 => {
                        let p = pool.subdir(rng);
                        pool.dirs.push(p.clone());
                        Op::Dir(p)
                    }
                    40..=59 => {
                        // Mostly a link other entries' paths go through.
                        let p = if rng.below(4) == 0 {
                            pool.file(rng)
                        } else {
                            join(&pool.dir(rng), pick(rng, LINKS))
                        };
                        let mut target = symlink_target(rng, &pool);
                        // A link into itself is a loop every time: rarely kept.
                        let plain = target.trim_start_matches("../").trim_start_matches('/');
                        if plain.starts_with(&p) && rng.below(8) != 0 {
                            target = format!("/{}", pick(rng, DIRS));
                        }
                        pool.dirs.push(p.clone());
                        Op::Symlink(p, target)
                    }
                    60..=79 => {
                        let target = if rng.below(8) != 0 {
                            pool.files[rng.below(pool.files.len())].clone()
                        } else {
                            pool.any(rng)
                        };
                        let mut p = pool.file(rng);
                        if p == target {
                            p = join(&pool.dir(rng), pick(rng, FILES));
                        }
                        pool.files.push(p.clone());
                        Op::Hardlink(p, target)
                    }
                    80..=91 => Op::Whiteout(pool.any(rng)),
                    _ => Op::Opaque(pool.subdir(rng)),
                })
                .collect()
        })
        .collect()
}

/// The `.wh.<name>` entry that deletes `p`.
fn whiteout_name(p: &str) -> String {
    match p.rsplit_once('/') {
        Some((dir, last)) => format!("{dir}/.wh.{last}"),
        None => format!(".wh.{p}"),
    }
}

fn layer_of(ops: &[Op]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for op in ops {
        let mut h = tar::Header::new_gnu();
        h.set_mtime(1_700_000_000);
        h.set_size(0);
        match op {
            Op::File(p, size) => {
                h.set_entry_type(tar::EntryType::Regular);
                h.set_mode(0o644);
                h.set_size(*size as u64);
                let data = vec![b'a' + (size % 26) as u8; *size];
                b.append_data(&mut h, p, &data[..]).unwrap();
            }
            Op::Dir(p) => {
                h.set_entry_type(tar::EntryType::Directory);
                h.set_mode(0o755);
                b.append_data(&mut h, p, &[][..]).unwrap();
            }
            Op::Symlink(p, t) | Op::Hardlink(p, t) => {
                let kind = if matches!(op, Op::Symlink(..)) {
                    tar::EntryType::Symlink
                } else {
                    tar::EntryType::Link
                };
                h.set_entry_type(kind);
                h.set_mode(0o777);
                b.append_link(&mut h, p, t).unwrap();
            }
            Op::Whiteout(p) | Op::Opaque(p) => {
                let name = if matches!(op, Op::Opaque(_)) {
                    format!("{p}/.wh..wh..opq")
                } else {
                    whiteout_name(p)
                };
                h.set_entry_type(tar::EntryType::Regular);
                h.set_mode(0o644);
                b.append_data(&mut h, name, &[][..]).unwrap();
            }
        }
    }
    b.into_inner().unwrap()
}

/// What is at a path: what both trees are compared on.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    /// A regular file, by its size (every generated write has its own).
    File(u64),
    Dir,
    Symlink(String),
    Other,
}

/// The unpacked rootfs, walked without following links.
fn unpacked(root: &Path) -> BTreeMap<String, Seen> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Seen>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_str().unwrap().to_string();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let seen = if m.file_type().is_symlink() {
                Seen::Symlink(std::fs::read_link(&p).unwrap().to_str().unwrap().into())
            } else if m.is_dir() {
                walk(root, &p, out);
                Seen::Dir
            } else if m.is_file() {
                Seen::File(m.len())
            } else {
                Seen::Other
            };
            out.insert(rel, seen);
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// gpulint's squashed tree in the same terms, directories without entries of their own
/// included.
fn squashed(tree: &FileTree) -> BTreeMap<String, Seen> {
    let mut out = BTreeMap::new();
    for (p, n) in &tree.nodes {
        let seen = match &n.kind {
            NodeKind::File { size, .. } => Seen::File(*size),
            NodeKind::Hardlink { target } => match tree.get(target).map(|t| &t.kind) {
                Some(NodeKind::File { size, .. }) => Seen::File(*size),
                other => panic!("{p}: a hard link to {target}, which is {other:?}"),
            },
            NodeKind::Dir { .. } => Seen::Dir,
            NodeKind::Symlink { target } => Seen::Symlink(target.clone()),
            NodeKind::Other => Seen::Other,
        };
        let mut parent = p.parent();
        while let Some(d) = parent.filter(|d| !d.is_root()) {
            out.entry(d.as_str().to_string()).or_insert(Seen::Dir);
            parent = d.parent();
        }
        out.insert(p.as_str().to_string(), seen);
    }
    out
}

/// Where the two trees differ. Directories umoci made that hold nothing else are not a
/// difference: the unpackers create the parents of every entry (and of a whiteout's target
/// path), and gpulint does not keep directories that only existed to hold removed content.
fn differences(want: &BTreeMap<String, Seen>, got: &BTreeMap<String, Seen>) -> String {
    let mut out = String::new();
    for (p, w) in want {
        match got.get(p) {
            Some(g) if g == w => {}
            None if *w == Seen::Dir
                && !want
                    .range(format!("{p}/")..)
                    .take_while(|(k, _)| k.starts_with(&format!("{p}/")))
                    .any(|(_, s)| *s != Seen::Dir) => {}
            g => writeln!(out, "  /{p}: umoci {w:?}, gpulint {g:?}").unwrap(),
        }
    }
    for (p, g) in got {
        if !want.contains_key(p) {
            writeln!(out, "  /{p}: umoci nothing, gpulint {g:?}").unwrap();
        }
    }
    out
}

/// How one case went.
enum Outcome {
    /// Both unpacked it to the same tree.
    SameTree,
    /// Both refused it.
    BothRefused,
    /// They differ: how.
    Differ(String),
}

fn compare(layers: &[Vec<Op>], dir: &Path) -> Outcome {
    let layout = dir.join("layout");
    let img = TestImage {
        layers: layers
            .iter()
            .map(|ops| (layer_of(ops), Comp::Plain))
            .collect(),
        cfg: Cfg::default(),
    };
    write_oci_layout(&layout, &img, "v1");
    let bundle = dir.join("bundle");
    let out = Command::new("umoci")
        .args(["unpack", "--rootless", "--image"])
        .arg(format!("{}:v1", layout.display()))
        .arg(&bundle)
        .output()
        .expect("umoci runs");
    let image = open_image(&format!("oci:{}:v1", layout.display()), None).unwrap();
    let r = walk_image(&image, &Detectors::none(), &WalkOptions::default());
    let refused = r.partial || !r.errors.is_empty();
    match (out.status.success(), refused) {
        (true, false) => {
            let diff = differences(&unpacked(&bundle.join("rootfs")), &squashed(&r.tree));
            if diff.is_empty() {
                Outcome::SameTree
            } else {
                Outcome::Differ(diff)
            }
        }
        (false, true) => {
            if std::env::var_os("GPULINT_SQUASH_VERBOSE").is_some() {
                eprintln!("both refuse: {}\n{layers:?}", r.errors[0]);
            }
            Outcome::BothRefused
        }
        (true, true) => Outcome::Differ(format!(
            "  umoci unpacks it; gpulint refuses it: {:?}\n",
            r.errors
        )),
        (false, false) => Outcome::Differ(format!(
            "  umoci refuses it ({}); gpulint reports it complete\n",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
    }
}

fn env_number(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    let v = v.trim();
    let parsed = match v.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => v.parse(),
    };
    Some(parsed.unwrap_or_else(|_| panic!("{name}={v:?} is not a number")))
}

#[test]
fn squashed_tree_matches_umoci_on_random_layer_sequences() {
    require("umoci");
    let cases = env_number("GPULINT_SQUASH_CASES").unwrap_or(40);
    let seed = env_number("GPULINT_SQUASH_SEED").unwrap_or(0x5eed_2024);
    let mut rng = Rng(seed | 1);
    let mut failures = Vec::new();
    let (mut same, mut refused) = (0u64, 0u64);
    for case in 0..cases {
        // Sizes name the writes of one case.
        let layers = generate(&mut rng, &mut 0);
        let d = tmp();
        let diff = match compare(&layers, d.path()) {
            Outcome::SameTree => {
                same += 1;
                continue;
            }
            Outcome::BothRefused => {
                refused += 1;
                continue;
            }
            Outcome::Differ(diff) => diff,
        };
        {
            failures.push(format!(
                "case {case} (seed {seed:#x}):\n{}{diff}",
                layers
                    .iter()
                    .enumerate()
                    .map(|(i, ops)| format!("  layer {i}: {ops:?}\n"))
                    .collect::<String>()
            ));
            if failures.len() >= 5 {
                break;
            }
        }
    }
    eprintln!("{cases} cases (seed {seed:#x}): {same} the same tree, {refused} refused by both");
    assert!(
        failures.is_empty(),
        "{} of {cases} cases differ from umoci:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // The generator must mostly make images that unpack, or the trees are never compared.
    assert!(
        same * 2 >= cases,
        "only {same} of {cases} cases unpacked: the generator makes too many broken images"
    );
}
