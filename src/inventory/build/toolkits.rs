//! CUDA toolkits: `/usr/local/cuda-X.Y` trees and their version files, what `/usr/local/cuda`
//! points at.

use super::*;

pub(super) fn is_toolkit_dir_name(name: &str) -> bool {
    let Some(v) = name.strip_prefix("cuda-") else {
        return false;
    };
    !v.is_empty()
        && v.split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

pub(super) fn cuda_toolkits(tree: &FileTree) -> Vec<CudaToolkit> {
    let mut dirs: BTreeMap<ImagePath, Option<usize>> = BTreeMap::new();
    let Ok(local) = ImagePath::new("usr/local") else {
        return vec![];
    };
    // Real `usr/local/cuda-X.Y` directories, explicit or implicit (links are aliases).
    for (p, n) in &tree.nodes {
        if !p.starts_with(&local) || p == &local {
            continue;
        }
        let Some(first) = p.as_str().get(local.as_str().len() + 1..) else {
            continue;
        };
        let top = first.split('/').next().unwrap_or("");
        if !is_toolkit_dir_name(top) {
            continue;
        }
        let Ok(dir) = local.join(top) else { continue };
        if matches!(
            tree.get(&dir).map(|n| &n.kind),
            Some(NodeKind::Symlink { .. }) | Some(NodeKind::File { .. })
        ) {
            continue;
        }
        let layer = tree.get(&dir).map(|n| n.layer).or(Some(n.layer));
        dirs.entry(dir).or_insert(layer);
    }
    // Any directory holding a version file (`/usr/local/cuda` as a real dir, /usr/lib/cuda).
    let mut versions: BTreeMap<ImagePath, String> = BTreeMap::new();
    for (p, n, v) in facts(tree, |f| match f {
        Fact::CudaToolkitVersion(v) => Some(v),
        _ => None,
    }) {
        let Some(dir) = p.parent() else { continue };
        // version.json wins over version.txt when both exist.
        let better = v.source == "version.json" || !versions.contains_key(&dir);
        if better {
            versions.insert(dir.clone(), v.version.clone());
        }
        dirs.entry(dir).or_insert(Some(n.layer));
    }
    let default = ImagePath::new("usr/local/cuda")
        .ok()
        .and_then(|p| tree.resolve_dir(&p));
    dirs.into_iter()
        .map(|(dir, layer)| CudaToolkit {
            path: dir.clone(),
            version: versions.get(&dir).and_then(|v| v.parse().ok()),
            default: default.as_ref() == Some(&dir),
            layer,
        })
        .collect()
}
