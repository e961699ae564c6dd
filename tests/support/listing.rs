//! A stand-in walker for the live-source tests and the benchmark until `walk_layer` lands:
//! it lists a layer's tar entries (kind, size, mode, link target) and its whiteouts into a
//! `LayerTree`, with no detectors. It reads every blob to its end, as the real walker must,
//! so the sources can check the digest of what they served.

use gpulint::source::{Layer, LayerContent};
use gpulint::walk::{ImagePath, LayerTree, Node, NodeKind};
use std::io::{BufRead, BufReader, Read};

pub fn list_layer(layer: &Layer, index: usize) -> LayerTree {
    let mut tree = LayerTree::default();
    let name = layer.display_name(index);
    if let Err(e) = list_into(layer, index, &mut tree) {
        tree.errors.push(format!("{name}: {e:#}"));
    }
    tree
}

fn list_into(layer: &Layer, index: usize, tree: &mut LayerTree) -> anyhow::Result<()> {
    let LayerContent::Tar(blob) = &layer.content else {
        anyhow::bail!("directory layers are not listed here");
    };
    let mut raw = BufReader::with_capacity(256 * 1024, blob.open()?);
    let gzip = raw.fill_buf()?.starts_with(&[0x1f, 0x8b]);
    let listed = if gzip {
        let mut dec = flate2::read::MultiGzDecoder::new(&mut raw);
        list_tar(&mut dec, index, tree)
            .and_then(|()| Ok(std::io::copy(&mut dec, &mut std::io::sink()).map(drop)?))
    } else {
        list_tar(&mut raw, index, tree)
    };
    // Read what follows (the tar's end marker, or the rest after a failure) so the source
    // checks the digest: a digest mismatch is the root cause of any decode error before it.
    let drained = std::io::copy(&mut raw, &mut std::io::sink());
    match (listed, drained) {
        (_, Err(e)) => Err(e.into()),
        (r, Ok(_)) => r,
    }
}

fn list_tar(r: &mut dyn Read, index: usize, tree: &mut LayerTree) -> anyhow::Result<()> {
    let mut ar = tar::Archive::new(r);
    for entry in ar.entries()? {
        let entry = entry?;
        let h = entry.header();
        let raw_path = entry.path()?.to_string_lossy().into_owned();
        let path = match ImagePath::new(&raw_path) {
            Ok(p) => p,
            Err(e) => {
                tree.errors.push(format!("{raw_path}: {e}"));
                continue;
            }
        };
        let file_name = raw_path
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or("");
        if file_name == ".wh..wh..opq" {
            if let Some(parent) = path.parent() {
                tree.opaque_dirs.push(parent);
            }
            continue;
        }
        if let Some(hidden) = file_name.strip_prefix(".wh.") {
            if let Some(parent) = path.parent() {
                if let Ok(p) = parent.join(hidden) {
                    tree.whiteouts.push(p);
                }
            }
            continue;
        }
        let mode = h.mode().unwrap_or(0) & 0o7777;
        let kind = match h.entry_type() {
            tar::EntryType::Regular | tar::EntryType::Continuous => NodeKind::File {
                size: h.size().unwrap_or(0),
                mode,
            },
            tar::EntryType::Directory => NodeKind::Dir { mode },
            tar::EntryType::Symlink => NodeKind::Symlink {
                target: entry
                    .link_name()?
                    .map(|l| l.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            },
            tar::EntryType::Link => {
                let target = entry
                    .link_name()?
                    .map(|l| l.to_string_lossy().into_owned())
                    .unwrap_or_default();
                match ImagePath::new(&target) {
                    Ok(t) => NodeKind::Hardlink { target: t },
                    Err(_) => NodeKind::Other,
                }
            }
            _ => NodeKind::Other,
        };
        tree.entries.insert(
            path,
            Node {
                kind,
                layer: index,
                facts: vec![],
            },
        );
    }
    Ok(())
}
