//! Evidence that is there but cannot be read (a FIFO, a directory where a file belongs, a
//! mode-000 file) is "could not check", naming the file, and never blocks the doctor.

use super::tests::opts;
use super::testutil::{expect, tree};
use super::{CheckResult, CheckStatus};
use crate::host::reader::{
    CapturedReader, CommandOutput, DevNode, EntryKind, HostCommand, HostReader, Unreadable,
    CAPTURE_DIR,
};
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;
use CheckStatus::CouldNotCheck;

/// Long enough for a debug build on a busy machine; a read blocked on a FIFO never returns.
const TIMEOUT: Duration = Duration::from_secs(60);

/// Profile and checks on the tree at `root`, in a thread: a read that blocks fails the test
/// (naming `what`) instead of hanging it.
fn run_guarded(root: &Path, what: &str) -> Vec<CheckResult> {
    let root = root.to_path_buf();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let reader = CapturedReader::new(&root).unwrap();
        let o = opts();
        let profile = crate::host::detect_host_with(&reader, o.facts).unwrap();
        let _ = tx.send(super::run_checks_with(&reader, &profile, &o));
    });
    match rx.recv_timeout(TIMEOUT) {
        Ok(r) => r,
        Err(_) => panic!("host --check did not finish in {TIMEOUT:?} with {what}"),
    }
}

/// Makes the file `rel` of the tree at `root` present but unreadable: mode 000 where that
/// stops this process, else (root reads mode-000 files) a Unix socket in its place, which
/// no one can open for reading. Says which.
fn make_unreadable(root: &Path, rel: &str) -> &'static str {
    use std::os::unix::fs::PermissionsExt;
    let p = root.join(rel.trim_start_matches('/'));
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::File::open(&p).is_err() {
        return "mode 000";
    }
    std::fs::remove_file(&p).unwrap();
    // A socket's path must fit sockaddr_un (108 bytes): made at the root, then moved.
    let short = root.join(".sock");
    drop(std::os::unix::net::UnixListener::bind(&short).unwrap());
    std::fs::rename(&short, &p).unwrap();
    assert!(std::fs::File::open(&p).is_err());
    "a socket in place of the file"
}

fn make_fifo(p: &Path) {
    let _ = std::fs::remove_file(p);
    let st = std::process::Command::new("mkfifo")
        .arg(p)
        .status()
        .unwrap();
    assert!(st.success(), "mkfifo {}", p.display());
}

/// A result as its check returned it, before problems were folded under their causes (a
/// cause that became "could not check" no longer explains anything).
fn unfolded(r: &CheckResult) -> CheckResult {
    let mut r = r.clone();
    if r.status == CheckStatus::Explained {
        r.status = CheckStatus::Problem;
        r.explained_by = None;
    }
    r.evidence
        .retain(|e| !e.to_string().starts_with("explains "));
    r
}

fn names(r: &CheckResult, path: &str) -> bool {
    r.finding.message.contains(path) || r.evidence.iter().any(|e| e.to_string().contains(path))
}

/// The three guesses: an unreadable libtorch_cuda.so was "missing" (with an install
/// fix), an unreadable PCI `vendor` made GL201 "ok", an unreadable ld.so.conf changed nothing.
#[test]
fn unreadable_evidence_is_could_not_check_never_a_verdict() {
    let lib = "/opt/torch/.venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so";
    let dir = tree(&["h200", "variants/complete"]);
    let how = make_unreadable(dir.path(), lib);
    let r = run_guarded(dir.path(), "an unreadable libtorch_cuda.so");
    let x = expect(&r, "GL215", CouldNotCheck);
    assert!(names(x, lib), "{how}: {x:#?}");
    assert!(!x.finding.message.contains("missing"), "{how}: {x:#?}");

    // The extra GPU of pci-extra, its vendor unreadable: GL201 must not say "all seen".
    let vendor = "/sys/bus/pci/devices/0000:00:07.0/vendor";
    let dir = tree(&["h200", "variants/complete", "variants/pci-extra"]);
    let how = make_unreadable(dir.path(), vendor);
    let r = run_guarded(dir.path(), "an unreadable PCI vendor");
    let x = expect(&r, "GL201", CouldNotCheck);
    assert!(names(x, vendor), "{how}: {x:#?}");

    // ld.so.conf decides the loader's order: unreadable, the loader checks cannot judge.
    for (variant, file) in [
        ("variants/complete", "/etc/ld.so.conf"),
        (
            "variants/ld-conflict",
            "/etc/ld.so.conf.d/000_cuda-12-4.conf",
        ),
    ] {
        let dir = tree(&["h200", "variants/complete", variant]);
        let how = make_unreadable(dir.path(), file);
        let r = run_guarded(dir.path(), file);
        for code in ["GL204", "GL211", "GL219"] {
            let x = expect(&r, code, CouldNotCheck);
            assert!(names(x, file), "{how}: {x:#?}");
        }
        // Could-not-check never fails the run, and the finding points at the file.
        let f = super::check_findings(&r);
        let gl211 = f.iter().find(|f| f.rule == "GL211").unwrap();
        assert_eq!(
            gl211.location.as_ref().and_then(|l| l.file.as_deref()),
            Some(file)
        );
    }
}

/// A FIFO where a command's capture belongs (the kernel log), and where daemon.json and
/// /proc/modules belong: the doctor finishes, and says what it could not read.
#[test]
fn fifos_do_not_block_and_are_named() {
    for (file, code) in [
        ("/.gpulint-host/commands/dmesg.txt", "GL201"),
        ("/etc/docker/daemon.json", "GL213"),
        ("/proc/modules", "GL203"),
    ] {
        let dir = tree(&["h200", "variants/complete", "variants/pci-extra"]);
        make_fifo(&dir.path().join(file.trim_start_matches('/')));
        let r = run_guarded(dir.path(), &format!("a FIFO at {file}"));
        let x = expect(&r, code, CouldNotCheck);
        assert!(names(x, file), "{x:#?}");
        assert!(x.finding.message.contains("FIFO"), "{x:#?}");
    }
}

/// A reader that notes every file the checks read whole (files, command captures, the
/// device listing) and every binary handed to the arch scanner, as paths in the tree.
struct Recording<'a> {
    inner: &'a CapturedReader,
    root: &'a Path,
    files: RefCell<BTreeSet<String>>,
}

impl Recording<'_> {
    fn note_capture(&self, rel: &str) {
        if self.root.join(CAPTURE_DIR).join(rel).is_file() {
            self.files
                .borrow_mut()
                .insert(format!("/{CAPTURE_DIR}/{rel}"));
        }
    }
}

impl HostReader for Recording<'_> {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn is_live(&self) -> bool {
        false
    }
    fn read(&self, path: &str) -> Result<Option<Vec<u8>>, Unreadable> {
        let r = self.inner.read(path);
        if let Ok(Some(_)) = r {
            self.files.borrow_mut().insert(path.to_string());
        }
        r
    }
    fn list_dir(&self, path: &str) -> Option<Vec<(String, EntryKind)>> {
        self.inner.list_dir(path)
    }
    fn read_link(&self, path: &str) -> Option<String> {
        self.inner.read_link(path)
    }
    fn exists(&self, path: &str) -> bool {
        self.inner.exists(path)
    }
    fn unreadable(&self) -> Vec<Unreadable> {
        self.inner.unreadable()
    }
    fn run(&self, cmd: HostCommand) -> CommandOutput {
        let name = cmd.capture_name();
        for rel in [
            format!("commands/{name}"),
            format!("commands/{name}.rc"),
            format!("commands/{name}.stderr"),
        ] {
            self.note_capture(&rel);
        }
        self.inner.run(cmd)
    }
    fn modified(&self, path: &str) -> Option<i64> {
        self.note_capture("mtimes.txt");
        self.inner.modified(path)
    }
    fn env(&self, key: &str) -> Option<String> {
        self.inner.env(key)
    }
    fn dev_nodes(&self) -> Option<Vec<DevNode>> {
        self.note_capture("dev-nvidia.txt");
        self.inner.dev_nodes()
    }
    fn local_path(&self, path: &str) -> PathBuf {
        let p = self.inner.local_path(path);
        if p.is_file() {
            self.files.borrow_mut().insert(path.to_string());
        }
        p
    }
}

/// Every file the doctor reads on these trees, replaced one at a time by a FIFO: the run
/// finishes, some check says it could not read that file, and every result that changed
/// became "could not check" (no new verdict rests on the FIFO).
#[test]
fn a_fifo_at_any_file_the_doctor_reads_is_could_not_check() {
    let stacks: &[&[&str]] = &[
        &["h200", "variants/complete"],
        &["h200", "variants/complete", "variants/pci-extra"],
        &["h200", "variants/complete", "variants/gpu-excluded"],
        &["h200", "variants/complete", "variants/nvml-cgroup"],
        &["h200", "variants/complete", "variants/torch-cu124-ldpath"],
        &["h200", "variants/complete", "variants/ld-conflict"],
        &["h200", "variants/complete", "variants/container-no-gpus"],
        &["h200", "variants/complete", "variants/wsl2"],
        &["h200", "variants/complete", "variants/other-kernel"],
    ];
    let mut tested: BTreeSet<String> = BTreeSet::new();
    for layers in stacks {
        let base = tree(layers);
        let reader = CapturedReader::new(base.path()).unwrap();
        let rec = Recording {
            inner: &reader,
            root: base.path(),
            files: RefCell::new(BTreeSet::new()),
        };
        let o = opts();
        let profile = crate::host::detect_host_with(&rec, o.facts).unwrap();
        let baseline = super::run_checks_with(&rec, &profile, &o);
        assert!(reader.unreadable().is_empty(), "{:?}", reader.unreadable());
        let mut files = rec.files.into_inner();
        // Read when the reader is made, before any check.
        files.insert(format!("/{CAPTURE_DIR}/env.txt"));
        for file in files {
            if !tested.insert(file.clone()) {
                continue;
            }
            let dir = tree(layers);
            let local = if file.starts_with(&format!("/{CAPTURE_DIR}/")) {
                dir.path().join(file.trim_start_matches('/'))
            } else {
                CapturedReader::new(dir.path()).unwrap().local_path(&file)
            };
            assert!(
                local.is_file(),
                "{layers:?}: {file} is not a file in the tree"
            );
            make_fifo(&local);
            let what = format!("a FIFO at {file} on {layers:?}");
            let r = run_guarded(dir.path(), &what);
            let codes =
                |v: &[CheckResult]| v.iter().map(|x| x.finding.rule).collect::<BTreeSet<_>>();
            assert_eq!(codes(&r), codes(&baseline), "{what}");
            assert!(
                r.iter()
                    .any(|x| x.status == CouldNotCheck && names(x, &file)),
                "{what}: no check names it\n{}",
                super::render_checks_text(&r)
            );
            for code in codes(&r) {
                let now: Vec<CheckResult> = r
                    .iter()
                    .filter(|x| x.finding.rule == code)
                    .map(unfolded)
                    .collect();
                let was: Vec<CheckResult> = baseline
                    .iter()
                    .filter(|x| x.finding.rule == code)
                    .map(unfolded)
                    .collect();
                let could_not = now.len() == 1 && now[0].status == CouldNotCheck;
                assert!(
                    now == was || could_not,
                    "{what}: {code} changed to a verdict: {now:#?}\nwas {was:#?}"
                );
            }
        }
    }
    // The issue counted 37 files the doctor reads on a host; these trees hold most of them.
    assert!(
        tested.len() >= 40,
        "only {} files read: {tested:?}",
        tested.len()
    );
}
