//! Assembly: the squashed [`FileTree`] with its detector facts → [`Inventory`].
//!
//! Facts sit on the node they were read from; here they are joined: a dist-info's METADATA
//! with its WHEEL, RECORD and the framework's version module; library files with the RECORD /
//! conda-meta that installed them; `/usr/local/cuda` with the toolkit it points at. Every list
//! is sorted by path (or name) so the output is deterministic.

use super::libs::{self, LibKind, SoName};
use super::*;
use crate::detect::conda::CondaMeta;
use crate::detect::dpkg::DpkgPackage;
use crate::detect::elf::ElfFacts;
use crate::detect::python_dist::{normalize_name, DistMetadata, DistRecord};
use crate::detect::torch_version::ModuleVersion;
use crate::detect::Fact;
use crate::source::{Image, ImageConfigFacts};
use crate::version::DriverVersion;
use crate::walk::{FileTree, ImagePath, Node, NodeKind, ScanIssue};
use std::collections::{BTreeMap, BTreeSet};

mod binaries;
mod image;
mod libraries;
mod loader;
mod packages;
mod python;
mod toolkits;

#[cfg(test)]
pub(crate) use crate::detect::cuda_toolkit::cuda_version_of_deb;
pub(crate) use binaries::binary_from_elf;
use binaries::*;
use image::*;
use libraries::*;
#[cfg(test)]
pub(crate) use loader::TreeFs;
use loader::*;
use packages::*;
use python::*;
use toolkits::*;

/// What the inventory needs to know about an image besides its files.
#[derive(Debug, Clone, Default)]
pub struct ImageMeta {
    pub reference: String,
    pub digest: Option<String>,
    pub platform: Option<Platform>,
    pub config: ImageConfigFacts,
    pub layers: Vec<LayerInfo>,
}

impl From<&Image> for ImageMeta {
    fn from(img: &Image) -> Self {
        ImageMeta {
            reference: img.reference.clone(),
            digest: img.digest.clone(),
            platform: Some(img.platform.clone()),
            config: img.config.clone(),
            layers: img
                .layers
                .iter()
                .enumerate()
                .map(|(index, l)| LayerInfo {
                    index,
                    digest: l.digest.clone(),
                    diff_id: l.diff_id.clone(),
                    media_type: l.media_type.clone(),
                    size: l.size,
                })
                .collect(),
        }
    }
}

/// A file whose content the inventory looks at: its path, the node holding its facts (the
/// hardlink target for hardlinks) and the layer that wrote the path.
struct FileRef<'a> {
    path: &'a ImagePath,
    node: &'a Node,
    layer: usize,
}

fn files(tree: &FileTree) -> Vec<FileRef<'_>> {
    let mut out = Vec::new();
    for (path, node) in &tree.nodes {
        match &node.kind {
            NodeKind::File { .. } => out.push(FileRef {
                path,
                node,
                layer: node.layer,
            }),
            NodeKind::Hardlink { .. } => {
                if let Some((_, target)) = tree.resolve(path) {
                    if matches!(target.kind, NodeKind::File { .. }) {
                        out.push(FileRef {
                            path,
                            node: target,
                            layer: node.layer,
                        });
                    }
                }
            }
            _ => {}
        }
    }
    out
}

fn display(p: &ImagePath) -> String {
    p.to_string()
}

fn facts<'a, T: 'a>(
    tree: &'a FileTree,
    pick: impl Fn(&'a Fact) -> Option<&'a T> + Copy + 'a,
) -> impl Iterator<Item = (&'a ImagePath, &'a Node, &'a T)> + 'a {
    tree.nodes
        .iter()
        .flat_map(move |(p, n)| n.facts.iter().filter_map(pick).map(move |f| (p, n, f)))
}

fn node_fact<'a, T>(
    tree: &'a FileTree,
    p: &ImagePath,
    pick: impl Fn(&'a Fact) -> Option<&'a T>,
) -> Option<&'a T> {
    tree.nodes.get(p)?.facts.iter().find_map(pick)
}

/// Build the inventory. `errors` are the problems met while reading the image (each names a
/// layer and path); any makes the result `partial`. The torch and PTX ISA tables packages'
/// `cuda_need` is read through are the built-in ones.
pub fn build(image: &ImageMeta, tree: &FileTree, errors: Vec<ScanIssue>) -> Inventory {
    build_with(image, tree, errors, built_in_facts())
}

/// The built-in matrices, parsed once per process.
fn built_in_facts() -> &'static crate::matrix::Facts {
    static FACTS: std::sync::OnceLock<crate::matrix::Facts> = std::sync::OnceLock::new();
    // The embedded tables are checked by the matrix tests; should they ever fail to parse,
    // the lookups answer unknown rather than panic.
    FACTS.get_or_init(|| {
        crate::matrix::Facts::embedded().unwrap_or_else(|_| crate::matrix::Facts::unknown().clone())
    })
}

/// [`build`] with the tables `facts` holds.
pub fn build_with(
    image: &ImageMeta,
    tree: &FileTree,
    errors: Vec<ScanIssue>,
    facts: &crate::matrix::Facts,
) -> Inventory {
    let pip = PipIndex::new(tree);
    let conda = CondaIndex::new(tree);
    let mut inv = Inventory {
        image: image_info(image, tree),
        cuda_toolkits: cuda_toolkits(tree),
        python_packages: python_packages(tree, &pip),
        conda_packages: conda.packages(),
        os_packages: os_packages(tree),
        binaries: binaries(tree),
        ptx_files: ptx_files(tree),
        device_code_files: device_code_files(tree, &pip),
        triton_ptxas: triton_ptxas(tree),
        loader: LoaderConfig {
            ld_so_conf: ld_so_conf(tree),
            dir_links: dir_links(tree),
        },
        partial: !errors.is_empty(),
        errors,
        ..Default::default()
    };
    attach_cuda_needs(&mut inv.python_packages, tree, &inv.binaries, &pip, facts);
    let (cuda, driver) = libraries(tree, &pip, &conda);
    inv.cuda_libraries = cuda;
    inv.driver_libraries = driver;
    inv
}
