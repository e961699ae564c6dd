//! The dynamic loader's configuration as the image's file tree gives it (`ld.so.conf` and its
//! includes), through the one loader model in [`crate::loader`].

use super::*;
use crate::loader::{system_search_dirs, LdSoConf, LoaderFs};

/// An image's file tree as the loader sees it (paths absolute, resolved inside the image).
pub(crate) struct TreeFs<'a>(pub &'a FileTree);

/// The in-image path of an absolute loader path.
fn image_path(path: &str) -> Option<ImagePath> {
    ImagePath::new(path.trim_start_matches('/')).ok()
}

impl TreeFs<'_> {
    fn node(&self, path: &str) -> Option<&Node> {
        self.0.get(&image_path(path)?)
    }
}

impl LoaderFs for TreeFs<'_> {
    fn read_link(&self, path: &str) -> Option<String> {
        match &self.node(path)?.kind {
            NodeKind::Symlink { target } => Some(target.clone()),
            _ => None,
        }
    }
    fn is_file(&self, path: &str) -> bool {
        let Some(p) = image_path(path) else {
            return false;
        };
        matches!(self.0.resolve(&p), Some((_, n)) if matches!(n.kind, NodeKind::File { .. }))
    }
    fn list_dir(&self, dir: &str) -> Vec<String> {
        let Some(d) = image_path(dir) else {
            return vec![];
        };
        let prefix = if d.is_root() {
            String::new()
        } else {
            format!("{}/", d.as_str())
        };
        let mut names: Vec<String> = self
            .0
            .nodes
            .range(d.clone()..)
            .take_while(|(k, _)| k.as_str().starts_with(d.as_str()))
            .filter_map(|(k, _)| k.as_str().strip_prefix(prefix.as_str()))
            .filter_map(|rest| rest.split('/').next())
            .filter(|n| !n.is_empty())
            .map(str::to_string)
            .collect();
        names.sort();
        names.dedup();
        names
    }
    fn ld_conf(&self, path: &str) -> Option<LdSoConf> {
        let (_, node) = self.0.resolve(&image_path(path)?)?;
        node.facts.iter().find_map(|f| match f {
            Fact::LdSoConf(c) => Some(c.clone()),
            _ => None,
        })
    }
}

/// The directories of `etc/ld.so.conf`, includes expanded in ldconfig's order.
pub(super) fn ld_so_conf(tree: &FileTree) -> Vec<String> {
    system_search_dirs(&TreeFs(tree))
        .into_iter()
        .map(|(d, _)| d)
        .collect()
}
