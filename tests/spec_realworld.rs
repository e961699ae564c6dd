//! Robustness: every file of ../shared/realworld/ goes through the spec parsers and rules
//! without a panic (the corpus is read in place, never copied).

use gpulint::spec::{self, CommandContext, FileKind};
use std::path::Path;

#[test]
fn realworld_corpus_never_panics() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/realworld");
    if !root.is_dir() {
        eprintln!("skipping: {} not present", root.display());
        return;
    }
    let ctx = CommandContext::new(Vec::new(), Default::default()).unwrap();
    let mut n = 0;
    for e in walkdir::WalkDir::new(&root).into_iter().flatten() {
        if !e.file_type().is_file() {
            continue;
        }
        let p = e.path();
        let name = p.to_string_lossy().to_string();
        if name.ends_with(".tsv") {
            continue;
        }
        // Every kind, whatever the file is: parsers must survive wrong input too.
        for kind in [FileKind::Dockerfile, FileKind::Compose, FileKind::K8s, FileKind::Script, FileKind::Markdown] {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| spec::lint_file(p, &name, kind, &ctx)));
            assert!(r.is_ok(), "panic on {name} as {kind:?}");
        }
        n += 1;
    }
    assert!(n > 50, "only {n} files");
}
