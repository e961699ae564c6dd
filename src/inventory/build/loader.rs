//! The dynamic loader's configuration as the image's file tree gives it (`ld.so.conf` and its
//! includes), through the one implementation in `detect::ld_so_conf`.

use super::*;

/// An image's file tree as the loader configuration sees it.
pub(super) struct TreeConf<'a>(&'a FileTree);

impl ConfFiles for TreeConf<'_> {
    fn conf(&self, path: &str) -> Option<(String, LdSoConf)> {
        let file = ImagePath::new(path.trim_start_matches('/')).ok()?;
        let (real, node) = self.0.resolve(&file)?;
        let conf = node.facts.iter().find_map(|f| match f {
            Fact::LdSoConf(c) => Some(c.clone()),
            _ => None,
        })?;
        Some((display(&real), conf))
    }
    fn glob(&self, pattern: &str) -> Vec<String> {
        glob_in_tree(self.0, pattern).iter().map(display).collect()
    }
}

/// The directories of `etc/ld.so.conf`, includes expanded in ldconfig's order
/// ([`crate::detect::ld_so_conf::search_dirs`]).
pub(super) fn ld_so_conf(tree: &FileTree) -> Vec<String> {
    search_dirs(&TreeConf(tree), "/etc/ld.so.conf")
        .into_iter()
        .map(|(d, _)| d)
        .collect()
}

/// Paths in the tree matching an absolute glob, sorted (as glob(3) returns them).
pub(super) fn glob_in_tree(tree: &FileTree, pattern: &str) -> Vec<ImagePath> {
    let rel = pattern.trim_start_matches('/');
    let Ok(g) = GlobBuilder::new(rel).literal_separator(true).build() else {
        return vec![];
    };
    let m = g.compile_matcher();
    // Only look below the pattern's literal directory prefix.
    let lit_end = rel.find(['*', '?', '[', '{']).unwrap_or(rel.len());
    let base = rel[..lit_end].rsplit_once('/').map_or("", |(d, _)| d);
    let base = ImagePath::new(base).unwrap_or_else(|_| ImagePath::root());
    tree.nodes
        .range(base.clone()..)
        .take_while(|(k, _)| k.as_str().starts_with(base.as_str()))
        .filter(|(k, n)| {
            k.starts_with(&base)
                && matches!(
                    n.kind,
                    NodeKind::File { .. } | NodeKind::Symlink { .. } | NodeKind::Hardlink { .. }
                )
                && m.is_match(k.as_str())
        })
        .map(|(k, _)| k.clone())
        .collect()
}
