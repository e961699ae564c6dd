//! CUDA toolkits: `/usr/local/cuda-X.Y` trees and their version files, what `/usr/local/cuda`
//! points at; toolkits distributions install elsewhere and without a version file (Debian and
//! Ubuntu's `nvidia-cuda-toolkit` in `/usr/lib/nvidia-cuda-toolkit`, conda's `cuda-nvcc`),
//! versioned by their nvcc binary or by the dpkg or rpm package that installed them.

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
    // Any directory holding a version file (`/usr/local/cuda` as a real dir, /usr/lib/cuda),
    // or `bin/nvcc` (its banner names the toolkit version).
    let rank = |source: &str| match source {
        "version.json" => 0,
        "version.txt" => 1,
        _ => 2,
    };
    let mut versions: BTreeMap<ImagePath, (String, String)> = BTreeMap::new();
    for (p, n, v) in facts(tree, |f| match f {
        Fact::CudaToolkitVersion(v) => Some(v),
        _ => None,
    }) {
        let Some(mut dir) = p.parent() else { continue };
        if v.source == "nvcc" {
            match dir.parent() {
                Some(top) if dir.file_name() == "bin" => dir = top,
                _ => continue,
            }
        }
        let better = versions
            .get(&dir)
            .is_none_or(|(_, s)| rank(&v.source) < rank(s));
        if better {
            versions.insert(dir.clone(), (v.version.clone(), v.source.clone()));
        }
        dirs.entry(dir).or_insert(Some(n.layer));
    }
    // The package database: what installed a toolkit that says nothing itself.
    for (dir, version, from) in packaged_toolkits(tree) {
        // Explicit or implicit (only files beneath it listed): the package's files are there.
        let Some(node) = tree.get(&dir).or_else(|| {
            tree.nodes
                .iter()
                .find(|(p, _)| p.starts_with(&dir))
                .map(|(_, n)| n)
        }) else {
            continue;
        };
        let layer = Some(node.layer);
        versions.entry(dir.clone()).or_insert((version, from));
        dirs.entry(dir).or_insert(layer);
    }
    // conda's `cuda-nvcc` (nvidia and conda-forge channels): the environment prefix is the
    // toolkit (`<prefix>/bin/nvcc`); its conda-meta record gives the version when nvcc's
    // banner did not.
    for (meta_path, meta_node, m) in facts(tree, |f| match f {
        Fact::CondaMeta(m) if m.name == "cuda-nvcc" => Some(m),
        _ => None,
    }) {
        let Some(prefix) = meta_path.parent().and_then(|d| d.parent()) else {
            continue;
        };
        if m.version.parse::<crate::version::CudaVersion>().is_err() {
            continue;
        }
        let layer = tree.get(&prefix).map(|n| n.layer).or(Some(meta_node.layer));
        versions
            .entry(prefix.clone())
            .or_insert((m.version.clone(), format!("conda cuda-nvcc {}", m.version)));
        dirs.entry(prefix).or_insert(layer);
    }
    let default = ImagePath::new("usr/local/cuda")
        .ok()
        .and_then(|p| tree.resolve_dir(&p));
    dirs.into_iter()
        .map(|(dir, layer)| {
            let v = versions.get(&dir);
            CudaToolkit {
                path: dir.clone(),
                version: v.and_then(|(v, _)| v.parse().ok()),
                version_from: v.map(|(_, s)| s.clone()),
                default: default.as_ref() == Some(&dir),
                layer,
            }
        })
        .collect()
}

/// Toolkit directories named by installed dpkg packages (the rules shared with the host
/// checks: [`crate::detect::cuda_toolkit::packaged_toolkits`]).
fn packaged_toolkits(tree: &FileTree) -> Vec<(ImagePath, String, String)> {
    let mut out = Vec::new();
    let dpkg = facts(tree, |f| match f {
        Fact::DpkgStatus(s) => Some(s),
        _ => None,
    })
    .flat_map(|(_, _, s)| crate::detect::cuda_toolkit::packaged_toolkits(s));
    let rpm = facts(tree, |f| match f {
        Fact::RpmDb(db) => Some(db),
        _ => None,
    })
    .flat_map(|(_, _, db)| crate::detect::cuda_toolkit::rpm_packaged_toolkits(db));
    for t in dpkg.chain(rpm) {
        if let Ok(dir) = ImagePath::new(&t.dir) {
            out.push((dir, t.version, t.from));
        }
    }
    // Across status.d files and databases too: cuda-toolkit-X-Y before cuda-nvcc-X-Y for the
    // same dir.
    out.sort_by_key(|(d, _, from)| {
        (
            d.clone(),
            !crate::detect::cuda_toolkit::names_whole_release(from),
        )
    });
    out
}
