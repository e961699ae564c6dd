//! The squashed tree against a real unpacker (issue 24): random layer sequences of files,
//! directories, symlinks, hard links, whiteouts and opaque directories, unpacked by
//! `umoci unpack --rootless` and squashed by gpulint, must give the same tree; where umoci
//! refuses the image, gpulint must report it incomplete (GL000). A fixed seed runs in every
//! `cargo test`; `GPULINT_SQUASH_CASES` (and `GPULINT_SQUASH_SEED`) run longer
//! (`ci/squash-fuzz.sh`); `GPULINT_SQUASH_VERBOSE=1` prints why each refused case was
//! refused. Below it, one test per defect the comparison found.

use crate::common::*;
use gpulint::detect::Detectors;
use gpulint::source::{open_image, SourceOptions};
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
    /// A hard link gpulint cannot resolve to a file.
    Unresolved,
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
            NodeKind::Hardlink { .. } => match tree.resolve(p).map(|(_, t)| &t.kind) {
                Some(NodeKind::File { size, .. }) => Seen::File(*size),
                _ => Seen::Unresolved,
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
    let image = open_image(
        &format!("oci:{}:v1", layout.display()),
        None,
        &SourceOptions::default(),
    )
    .unwrap();
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

// --- One test per defect (each failed before the squash was redone as an unpack). ---

fn gpulint_cli(args: &[&str], cwd: &Path) -> (Option<i32>, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_gpulint"))
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.code(), text)
}

/// An OCI layout of plain layers made of `layers`, tagged v1; returns its reference.
fn layout_of(dir: &Path, layers: &[Vec<E>]) -> String {
    let layout = dir.join("layout");
    let img = TestImage {
        layers: layers.iter().map(|l| (layer_tar(l), Comp::Plain)).collect(),
        cfg: Cfg::default(),
    };
    write_oci_layout(&layout, &img, "v1");
    format!("oci:{}:v1", layout.display())
}

/// The squashed tree gpulint builds for `reference`, with the real detectors.
fn squash_of(reference: &str) -> gpulint::scan::WalkResult {
    let image = open_image(reference, None, &SourceOptions::default()).unwrap();
    walk_image(
        &image,
        &gpulint::detect::detectors(),
        &WalkOptions::default(),
    )
}

/// Whether the tree has the fixture ELF's facts at `path` (through a hard link or not).
fn has_elf_at(r: &gpulint::scan::WalkResult, path: &str) -> bool {
    let p = gpulint::walk::ImagePath::new(path).unwrap();
    r.tree.get(&p).is_some()
        && r.tree.resolve(&p).is_some_and(|(_, n)| {
            n.facts
                .iter()
                .any(|f| matches!(f, gpulint::detect::Fact::Elf(_)))
        })
}

/// `umoci unpack --rootless` of a layout reference; the rootfs, or umoci's error.
fn umoci_unpack(reference: &str, dir: &Path) -> Result<std::path::PathBuf, String> {
    require("umoci");
    let bundle = dir.join("bundle");
    let out = Command::new("umoci")
        .args(["unpack", "--rootless", "--image"])
        .arg(reference.trim_start_matches("oci:"))
        .arg(&bundle)
        .output()
        .unwrap();
    if out.status.success() {
        Ok(bundle.join("rootfs"))
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

const SITE: &str = "usr/lib/python3/site-packages/pkg/libv01.so";
const CACHED: &str = "opt/cache/uv/archive-v0/ab/pkg/libv01.so";

/// uv and pip caches: the wheel's file is a hard link into the cache, then the cache is
/// removed (`rm -rf`, a whiteout; or an opaque directory). The installed name keeps the
/// content, as in the unpacked image.
#[test]
fn a_hard_link_keeps_its_content_when_the_cache_it_came_from_is_removed() {
    let removals: [Vec<E>; 2] = [
        vec![E::File("opt/cache/.wh.uv", vec![])],
        vec![
            E::Dir("opt/cache"),
            E::File("opt/cache/.wh..wh..opq", vec![]),
        ],
    ];
    for removal in removals {
        let d = tmp();
        let r = layout_of(
            d.path(),
            &[
                vec![E::Exec(CACHED, elf_bytes()), E::Hardlink(SITE, CACHED)],
                removal,
            ],
        );
        let w = squash_of(&r);
        assert!(w.errors.is_empty(), "{:?}", w.errors);
        assert!(has_elf_at(&w, SITE), "{:?}", w.tree.nodes.keys());
        assert!(w
            .tree
            .get(&gpulint::walk::ImagePath::new(CACHED).unwrap())
            .is_none());
        let rootfs = umoci_unpack(&r, d.path()).unwrap();
        assert_eq!(std::fs::read(rootfs.join(SITE)).unwrap(), elf_bytes());
        // And the verdict sees the binary.
        let inv = gpulint::scan::scan_image(&r, None).unwrap();
        assert!(
            inv.binaries.iter().any(|b| b.path.as_str() == SITE),
            "{:?}",
            inv.binaries.iter().map(|b| &b.path).collect::<Vec<_>>()
        );
    }
}

/// A chain of hard links (each to the one before) is one file with many names, however
/// long: the last name has the content, and nothing is cut.
#[test]
fn a_hard_link_chain_longer_than_forty_is_one_file() {
    let names: Vec<&'static str> = (0..100)
        .map(|i| &*Box::leak(format!("opt/l{i}.so").into_boxed_str()))
        .collect();
    let mut layer = vec![E::Exec("opt/base.so", elf_bytes())];
    let mut prev = "opt/base.so";
    for n in &names {
        layer.push(E::Hardlink(n, prev));
        prev = n;
    }
    let d = tmp();
    let r = layout_of(d.path(), &[layer]);
    let w = squash_of(&r);
    assert!(!w.partial && w.errors.is_empty(), "{:?}", w.errors);
    assert!(has_elf_at(&w, "opt/l99.so"));
    let rootfs = umoci_unpack(&r, d.path()).unwrap();
    assert_eq!(
        std::fs::read(rootfs.join("opt/l99.so")).unwrap(),
        elf_bytes()
    );
}

/// A hard link shares its target's content as it is when the link is applied: a rewrite of
/// the target after it (in a later entry of the same layer, or the same name twice in one
/// layer) leaves the link with the old content.
#[test]
fn a_hard_link_keeps_the_content_its_target_had_when_it_was_made() {
    let d = tmp();
    let r = layout_of(
        d.path(),
        &[
            vec![E::Exec("usr/lib/libv01.so", elf_bytes())],
            vec![
                E::Hardlink("opt/keep.so", "usr/lib/libv01.so"),
                E::File("usr/lib/libv01.so", b"replaced\n".to_vec()),
            ],
        ],
    );
    let w = squash_of(&r);
    assert!(w.errors.is_empty(), "{:?}", w.errors);
    assert!(has_elf_at(&w, "opt/keep.so"));
    assert!(!has_elf_at(&w, "usr/lib/libv01.so"));
    let rootfs = umoci_unpack(&r, d.path()).unwrap();
    assert_eq!(
        std::fs::read(rootfs.join("opt/keep.so")).unwrap(),
        elf_bytes()
    );

    let d = tmp();
    let r = layout_of(
        d.path(),
        &[vec![
            E::Exec("a.so", elf_bytes()),
            E::Hardlink("b.so", "a.so"),
            E::File("a.so", b"replaced\n".to_vec()),
        ]],
    );
    let w = squash_of(&r);
    assert!(w.errors.is_empty(), "{:?}", w.errors);
    assert!(has_elf_at(&w, "b.so"));
    assert!(!has_elf_at(&w, "a.so"));
}

/// Writes and whiteouts below a lower layer's directory symlink land where it points
/// (`usr/local/cuda` → `cuda-12.1`), and the symlink stays a symlink.
#[test]
fn writes_and_whiteouts_go_through_a_lower_directory_symlink() {
    let d = tmp();
    let r = layout_of(
        d.path(),
        &[
            vec![
                E::Dir("usr/local/cuda-12.1/lib64"),
                E::Symlink("usr/local/cuda", "cuda-12.1"),
                E::File("usr/local/cuda-12.1/lib64/old.so", b"old\n".to_vec()),
            ],
            vec![
                E::Exec("usr/local/cuda/lib64/libv01.so", elf_bytes()),
                E::File("usr/local/cuda/lib64/.wh.old.so", vec![]),
            ],
        ],
    );
    let w = squash_of(&r);
    assert!(w.errors.is_empty(), "{:?}", w.errors);
    let p = |s: &str| gpulint::walk::ImagePath::new(s).unwrap();
    assert!(has_elf_at(&w, "usr/local/cuda-12.1/lib64/libv01.so"));
    assert!(w.tree.get(&p("usr/local/cuda/lib64/libv01.so")).is_none());
    assert!(matches!(
        w.tree.get(&p("usr/local/cuda")).map(|n| &n.kind),
        Some(NodeKind::Symlink { .. })
    ));
    assert!(w.tree.get(&p("usr/local/cuda-12.1/lib64/old.so")).is_none());
    let rootfs = umoci_unpack(&r, d.path()).unwrap();
    assert!(rootfs.join("usr/local/cuda-12.1/lib64/libv01.so").is_file());
    assert!(!rootfs.join("usr/local/cuda-12.1/lib64/old.so").exists());
}

/// A hard link to a name an earlier layer removed: umoci's unpack fails, so gpulint reports
/// the image incomplete (GL000, exit 2; a warning with --allow-partial).
#[test]
fn a_hard_link_to_a_removed_name_is_gl000() {
    let d = tmp();
    let r = layout_of(
        d.path(),
        &[
            vec![E::Exec("opt/a.so", elf_bytes())],
            vec![E::File("opt/.wh.a.so", vec![])],
            vec![E::Hardlink("opt/b.so", "opt/a.so")],
        ],
    );
    assert!(umoci_unpack(&r, d.path()).is_err());
    let base = ["--gpu", "H100", "--driver", "550.54.15", "--no-cache", "-q"];
    let mut args = vec!["image", r.as_str()];
    args.extend(base);
    let (code, out) = gpulint_cli(&args, d.path());
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("error[GL000"), "{out}");
    assert!(out.contains("/opt/b.so"), "{out}");
    args.push("--allow-partial");
    let (code, out) = gpulint_cli(&args, d.path());
    assert_ne!(code, Some(2), "{out}");
    assert!(out.contains("warning[GL000"), "{out}");
}

/// A config whose diff_ids do not pair one to one with the manifest's layers: podman
/// refuses it; so does gpulint (exit 2), rather than walk a layer unverified.
#[test]
fn a_config_whose_diff_ids_miss_a_layer_is_refused() {
    let d = tmp();
    let layers = [
        layer_tar(&[E::Exec("usr/lib/libv01.so", elf_bytes())]),
        layer_tar(&[file("etc/extra", "x")]),
    ];
    // OCI layout: two layers, one diff_id.
    let layout = d.path().join("layout");
    let config = put_blob(
        &layout,
        &config_json(&Cfg::default(), &[digest(&layers[0])]),
        "application/vnd.oci.image.config.v1+json",
    );
    let descs: Vec<serde_json::Value> = layers
        .iter()
        .map(|t| put_blob(&layout, t, Comp::Plain.media_type()))
        .collect();
    let manifest = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": config,
        "layers": descs,
    }))
    .unwrap();
    let m = put_blob(
        &layout,
        &manifest,
        "application/vnd.oci.image.manifest.v1+json",
    );
    write_index(&layout, vec![tagged(m, "v1")]);
    let oci = format!("oci:{}:v1", layout.display());
    // docker-archive: the same, written by the helper with one diff_id cut from the config.
    let archive = d.path().join("img.tar");
    {
        let img = TestImage {
            layers: layers.iter().map(|t| (t.clone(), Comp::Plain)).collect(),
            cfg: Cfg::default(),
        };
        write_docker_archive(&archive, &[(vec!["x/y:1"], &img)]);
        let bytes = std::fs::read(&archive).unwrap();
        let cut = String::from_utf8_lossy(&config_json(&Cfg::default(), &img.diff_ids()[..1]))
            .into_owned();
        // Rewrite the archive with the cut config under its own digest.
        let mut b = tar::Builder::new(Vec::new());
        let mut rd = tar::Archive::new(&bytes[..]);
        let config_name = format!("{}.json", sha256_hex(img.config().as_slice()));
        let cut_name = format!("{}.json", sha256_hex(cut.as_bytes()));
        for e in rd.entries().unwrap() {
            let mut e = e.unwrap();
            let name = e.path().unwrap().to_str().unwrap().to_string();
            let mut data = Vec::new();
            std::io::Read::read_to_end(&mut e, &mut data).unwrap();
            let (name, data) = if name == config_name {
                (cut_name.clone(), cut.as_bytes().to_vec())
            } else if name == "manifest.json" {
                let m = String::from_utf8(data)
                    .unwrap()
                    .replace(&config_name, &cut_name);
                (name, m.into_bytes())
            } else {
                (name, data)
            };
            let mut h = tar::Header::new_gnu();
            h.set_mode(0o644);
            h.set_size(data.len() as u64);
            b.append_data(&mut h, &name, &data[..]).unwrap();
        }
        std::fs::write(&archive, b.into_inner().unwrap()).unwrap();
    }
    let da = format!("docker-archive:{}", archive.display());
    for r in [oci, da] {
        let (code, out) = gpulint_cli(
            &["image", &r, "--gpu", "H100", "--no-cache", "-q"],
            d.path(),
        );
        assert_eq!(code, Some(2), "{r}: {out}");
        assert!(
            out.contains("2 layers but the config's rootfs.diff_ids has 1"),
            "{r}: {out}"
        );
    }
}

/// A PAX sparse file (GNU tar `--sparse --format=posix`, 0.1 and 1.0) is read at its real
/// name with its holes: the ELF in it is found, not left at `GNUSparseFile.NNN/…`.
#[test]
fn an_elf_in_a_pax_sparse_file_is_found_at_its_name() {
    for version in ["0.1", "1.0"] {
        let d = tmp();
        let root = d.path().join("root");
        std::fs::create_dir_all(root.join("usr/lib")).unwrap();
        let lib = root.join("usr/lib/libv01.so");
        std::fs::write(&lib, elf_bytes()).unwrap();
        // A hole after the ELF makes GNU tar store it sparse.
        let f = std::fs::OpenOptions::new().write(true).open(&lib).unwrap();
        f.set_len(elf_bytes().len() as u64 + (4 << 20)).unwrap();
        let tarball = d.path().join("layer.tar");
        let out = Command::new("tar")
            .args(["--format=posix", "--sparse", "--sparse-version", version])
            .args(["--owner=0", "--group=0", "-C"])
            .arg(&root)
            .arg("-cf")
            .arg(&tarball)
            .arg("usr")
            .output()
            .expect("GNU tar (ci/install-tools.sh installs it)");
        assert!(out.status.success(), "{out:?}");
        let layer = std::fs::read(&tarball).unwrap();
        assert!(
            layer.windows(14).any(|w| w == b"GNUSparseFile."),
            "{version}: GNU tar wrote no PAX sparse entry"
        );
        let layout = d.path().join("layout");
        let img = TestImage {
            layers: vec![(layer, Comp::Gzip)],
            cfg: Cfg::default(),
        };
        write_oci_layout(&layout, &img, "v1");
        let w = squash_of(&format!("oci:{}:v1", layout.display()));
        assert!(w.errors.is_empty(), "{version}: {:?}", w.errors);
        assert!(
            has_elf_at(&w, "usr/lib/libv01.so"),
            "{version}: {:?}",
            w.tree.nodes.keys()
        );
    }
}

/// 100k names of one cached file: removing the cache leaves every name its content, and
/// four times the links take about four times as long to squash (fastest of three runs).
#[test]
fn a_hundred_thousand_hard_links_squash_in_linear_time() {
    use gpulint::walk::{Change, ImagePath, LayerTree, Node};
    let d = tmp();
    let r = layout_of(d.path(), &[vec![E::Exec(CACHED, elf_bytes())]]);
    let base = squash_of(&r).layers;
    let layers = |links: usize| {
        let mut with_links = LayerTree::default();
        for i in 0..links {
            with_links.push_entry(
                ImagePath::new(&format!(
                    "usr/lib/python3/site-packages/p{}/m{i}.so",
                    i % 97
                ))
                .unwrap(),
                Node {
                    kind: NodeKind::Hardlink {
                        target: ImagePath::new(CACHED).unwrap(),
                    },
                    layer: 1,
                    facts: vec![],
                },
            );
        }
        let mut rm = LayerTree::default();
        rm.changes.push(Change::Whiteout {
            path: ImagePath::new("opt/cache").unwrap(),
        });
        let mut all = base.clone();
        all.extend([with_links, rm]);
        all
    };
    let seconds = |links: usize| {
        (0..3)
            .map(|_| {
                let l = layers(links);
                let t = std::time::Instant::now();
                let tree = FileTree::squash(l);
                let took = t.elapsed().as_secs_f64();
                assert!(tree.errors.is_empty(), "{:?}", &tree.errors[..1]);
                let files = tree
                    .nodes
                    .iter()
                    .filter(|(p, _)| {
                        tree.resolve(p).is_some_and(|(_, n)| {
                            n.facts
                                .iter()
                                .any(|f| matches!(f, gpulint::detect::Fact::Elf(_)))
                        })
                    })
                    .count();
                assert_eq!(files, links, "every name keeps the content");
                took
            })
            .fold(f64::INFINITY, f64::min)
    };
    let small = seconds(25_000);
    let big = seconds(100_000);
    eprintln!("hard links: {small:.3} s -> {big:.3} s for 4x the links");
    assert!(
        big < 8.0 * small.max(0.01),
        "hard links: {small:.3} s -> {big:.3} s for 4x the links"
    );
}
