//! The layer walker on an arbitrary layer stream (plain, gzip or zstd tar): the one tar
//! parser in `format::tar`, whiteouts, links, every path-selected detector and the ELF scan.
#![no_main]
use gpulint::source::{Layer, LayerBlob, LayerContent};
use gpulint::walk::{walk_layer, FileTree, WalkOptions};
use libfuzzer_sys::fuzz_target;
use std::io::Read;
use std::sync::OnceLock;

struct Bytes(Vec<u8>);

impl LayerBlob for Bytes {
    fn open(&self) -> anyhow::Result<Box<dyn Read + Send>> {
        Ok(Box::new(std::io::Cursor::new(self.0.clone())))
    }
}

fuzz_target!(|data: &[u8]| {
    static DETECTORS: OnceLock<gpulint::detect::Detectors> = OnceLock::new();
    let detectors = DETECTORS.get_or_init(gpulint::detect::detectors);
    let layer = Layer {
        digest: None,
        diff_id: None,
        media_type: None,
        size: Some(data.len() as u64),
        content: LayerContent::Tar(Box::new(Bytes(data.to_vec()))),
    };
    let opts = WalkOptions {
        // Bounded so a decompression bomb costs a bounded time per input.
        max_layer_bytes: 64 << 20,
        scan_elf: true,
        threads: Some(1),
        ..WalkOptions::default()
    };
    let tree = walk_layer(&layer, 0, detectors, &opts);
    let fs = FileTree::squash([tree]);
    // Follow every link the layer made (loops, links out of the tree).
    for (p, _) in fs.files() {
        let _ = fs.resolve(p);
    }
});
