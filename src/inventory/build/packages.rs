//! OS and conda packages: conda environments and the files their metas own; the GPU-related
//! dpkg packages.

use super::*;

pub(super) struct CondaIndex<'a> {
    /// Environment prefixes (the parents of `conda-meta`).
    pub(super) prefixes: BTreeSet<ImagePath>,
    pub(super) metas: Vec<(ImagePath, &'a CondaMeta)>,
    pub(super) owner: BTreeMap<ImagePath, usize>,
}

impl<'a> CondaIndex<'a> {
    pub(super) fn new(tree: &'a FileTree) -> Self {
        let mut prefixes = BTreeSet::new();
        let mut metas = Vec::new();
        let mut owner = BTreeMap::new();
        for (p, _, m) in facts(tree, |f| match f {
            Fact::CondaMeta(m) => Some(m),
            _ => None,
        }) {
            let Some(prefix) = p.parent().and_then(|d| d.parent()) else {
                continue;
            };
            prefixes.insert(prefix.clone());
            let i = metas.len();
            for f in &m.so_files {
                if let Ok(fp) = ImagePath::new(&format!("{}/{}", prefix.as_str(), f)) {
                    owner.entry(fp).or_insert(i);
                }
            }
            metas.push((prefix, m));
        }
        // A prefix with a conda-meta dir but no parsed package still counts.
        for p in tree.nodes.keys() {
            if p.file_name() == "conda-meta" {
                if let Some(prefix) = p.parent() {
                    prefixes.insert(prefix);
                }
            }
        }
        CondaIndex {
            prefixes,
            metas,
            owner,
        }
    }

    pub(super) fn in_prefix(&self, p: &ImagePath) -> bool {
        self.prefixes.iter().any(|x| p.starts_with(x))
    }

    pub(super) fn owner_of(&self, p: &ImagePath) -> Option<&'a CondaMeta> {
        self.owner
            .get(p)
            .and_then(|i| self.metas.get(*i))
            .map(|(_, m)| *m)
    }

    pub(super) fn packages(&self) -> Vec<CondaPackage> {
        let mut out: Vec<CondaPackage> = self
            .metas
            .iter()
            .map(|(prefix, m)| CondaPackage {
                name: m.name.clone(),
                version: m.version.clone(),
                build: m.build.clone(),
                channel: m.channel.clone(),
                prefix: display(prefix),
            })
            .collect();
        out.sort_by(|a, b| {
            (&a.prefix, &a.name, &a.version, &a.build)
                .cmp(&(&b.prefix, &b.name, &b.version, &b.build))
        });
        out
    }
}

pub(super) fn os_packages(tree: &FileTree) -> Vec<OsPackage> {
    let mut seen: BTreeSet<(&str, String, String)> = BTreeSet::new();
    for (_, _, s) in facts(tree, |f| match f {
        Fact::DpkgStatus(s) => Some(s),
        _ => None,
    }) {
        for DpkgPackage { name, version, .. } in &s.packages {
            if super::names::is_gpu_os_package(name) {
                seen.insert(("dpkg", name.clone(), version.clone()));
            }
        }
    }
    for (_, _, db) in facts(tree, |f| match f {
        Fact::RpmDb(db) => Some(db),
        _ => None,
    }) {
        for p in &db.packages {
            if super::names::is_gpu_os_package(&p.name) {
                seen.insert(("rpm", p.name.clone(), p.version.clone()));
            }
        }
    }
    seen.into_iter()
        .map(|(manager, name, version)| OsPackage {
            name,
            version,
            manager: manager.into(),
        })
        .collect()
}
