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
use crate::detect::ld_so_conf::{search_dirs, ConfFiles, LdSoConf};
use crate::detect::python_dist::{normalize_name, DistMetadata, DistRecord};
use crate::detect::torch_version::ModuleVersion;
use crate::detect::Fact;
use crate::source::{Image, ImageConfigFacts};
use crate::walk::{FileTree, ImagePath, Node, NodeKind, ScanIssue};
use globset::GlobBuilder;
use std::collections::{BTreeMap, BTreeSet};

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
/// layer and path); any makes the result `partial`.
pub fn build(image: &ImageMeta, tree: &FileTree, errors: Vec<ScanIssue>) -> Inventory {
    let pip = PipIndex::new(tree);
    let conda = CondaIndex::new(tree);
    let mut inv = Inventory {
        image: image_info(image, tree),
        cuda_toolkits: cuda_toolkits(tree),
        python_packages: python_packages(tree, &pip),
        conda_packages: conda.packages(),
        os_packages: os_packages(tree),
        binaries: binaries(tree),
        loader: LoaderConfig {
            ld_so_conf: ld_so_conf(tree),
            dir_links: dir_links(tree),
        },
        partial: !errors.is_empty(),
        errors,
        ..Default::default()
    };
    let (cuda, driver) = libraries(tree, &pip, &conda);
    inv.cuda_libraries = cuda;
    inv.driver_libraries = driver;
    inv
}

// ---------------------------------------------------------------------------------------
// image

const ENV_KEYS: &[&str] = &[
    "CUDA_VERSION",
    "NVIDIA_REQUIRE_CUDA",
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
    "LD_LIBRARY_PATH",
    "PATH",
];

fn image_info(image: &ImageMeta, tree: &FileTree) -> ImageInfo {
    let mut env = BTreeMap::new();
    for kv in &image.config.env {
        let Some((k, v)) = kv.split_once('=') else {
            continue;
        };
        let keep = ENV_KEYS.contains(&k)
            || k.starts_with("NVIDIA_")
            || k.starts_with("CUDA_")
            || k.starts_with("NV_");
        if keep {
            // Later entries win, as in Docker.
            env.insert(k.to_string(), v.to_string());
        }
    }
    ImageInfo {
        reference: image.reference.clone(),
        digest: image.digest.clone(),
        platform: image.platform.clone(),
        env,
        entrypoint: image.config.entrypoint.clone(),
        cmd: image.config.cmd.clone(),
        labels: image.config.labels.clone(),
        layers: image.layers.clone(),
        glibc: glibc(tree),
        python: python_interpreters(tree),
    }
}

fn glibc(tree: &FileTree) -> Option<String> {
    let from_content = facts(tree, |f| match f {
        Fact::Glibc(g) => Some(g),
        _ => None,
    })
    .map(|(_, _, g)| g.version.clone())
    .next();
    from_content.or_else(|| {
        tree.nodes.keys().find_map(|p| {
            let dir = p.parent()?;
            let d = dir.as_str();
            let std_dir = matches!(d, "lib" | "lib64" | "usr/lib" | "usr/lib64")
                || ((d.starts_with("lib/") || d.starts_with("usr/lib/"))
                    && d.ends_with("-linux-gnu"));
            if std_dir {
                crate::detect::glibc::version_from_file_name(p.file_name())
            } else {
                None
            }
        })
    })
}

fn interpreter_version(name: &str) -> Option<String> {
    let v = name.strip_prefix("python")?;
    let (a, b) = v.split_once('.')?;
    let ok = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (ok(a) && ok(b)).then(|| v.to_string())
}

fn python_interpreters(tree: &FileTree) -> Vec<PythonInterpreter> {
    let mut found: BTreeMap<String, String> = BTreeMap::new();
    for (p, n) in &tree.nodes {
        let in_bin = p.parent().is_some_and(|d| d.file_name() == "bin");
        if !in_bin || !matches!(n.kind, NodeKind::File { .. } | NodeKind::Symlink { .. }) {
            continue;
        }
        let Some(v) = interpreter_version(p.file_name()) else {
            continue;
        };
        let resolves = matches!(
            tree.resolve(p).map(|(_, n)| &n.kind),
            Some(NodeKind::File { .. })
        );
        if resolves {
            found.insert(display(p), v);
        }
    }
    // Virtual environments: pyvenv.cfg knows the full version of the base interpreter.
    for (cfg_path, _, cfg) in facts(tree, |f| match f {
        Fact::Pyvenv(c) => Some(c),
        _ => None,
    }) {
        let (Some(venv), Some(version)) = (cfg_path.parent(), cfg.version.clone()) else {
            continue;
        };
        let bin = format!(
            "{}/",
            display(&venv.join("bin").unwrap_or_else(|_| venv.clone()))
        );
        let mut any = false;
        for (path, v) in found.iter_mut() {
            if path.starts_with(&bin) && version.starts_with(v.as_str()) {
                *v = version.clone();
                any = true;
            }
        }
        if !any {
            found.insert(format!("{bin}python"), version);
        }
    }
    // Nothing runnable found (a distroless or copied-in env): the lib/pythonX.Y dirs that
    // hold packages still say which Python they were built for.
    if found.is_empty() {
        for p in tree.nodes.keys() {
            let comps: Vec<&str> = p.components().collect();
            if let Some(i) = comps
                .iter()
                .position(|c| *c == "site-packages" || *c == "dist-packages")
            {
                if let Some(lib) = i.checked_sub(1).and_then(|j| comps.get(j)) {
                    if let Some(v) = interpreter_version(lib) {
                        let dir = format!("/{}", comps[..i].join("/"));
                        found.entry(dir).or_insert(v);
                    }
                }
            }
        }
    }
    found
        .into_iter()
        .map(|(path, version)| PythonInterpreter { path, version })
        .collect()
}

// ---------------------------------------------------------------------------------------
// toolkits

fn is_toolkit_dir_name(name: &str) -> bool {
    let Some(v) = name.strip_prefix("cuda-") else {
        return false;
    };
    !v.is_empty()
        && v.split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// Follow a path that names a directory to the directory it ends at (tar images often have
/// no entry for the target directory itself, which `FileTree::resolve` needs).
fn resolve_dir(tree: &FileTree, p: &ImagePath) -> Option<ImagePath> {
    if let Some((rp, n)) = tree.resolve(p) {
        return matches!(n.kind, NodeKind::Dir { .. }).then_some(rp);
    }
    let mut cur = p.clone();
    for _ in 0..40 {
        match tree.get(&cur).map(|n| &n.kind) {
            Some(NodeKind::Symlink { target }) => cur = cur.resolve_link(target),
            Some(NodeKind::Dir { .. }) => return Some(cur),
            None if tree.is_implicit_dir(&cur) => return Some(cur),
            _ => return None,
        }
    }
    None
}

fn cuda_toolkits(tree: &FileTree) -> Vec<CudaToolkit> {
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
        .and_then(|p| resolve_dir(tree, &p));
    dirs.into_iter()
        .map(|(dir, layer)| CudaToolkit {
            path: display(&dir),
            version: versions.get(&dir).cloned(),
            default: default.as_ref() == Some(&dir),
            layer,
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// python

/// Who owns which file, from pip metadata.
struct Dist<'a> {
    dir: ImagePath,
    site: ImagePath,
    meta: &'a DistMetadata,
    name: String,
    layer: usize,
}

struct PipIndex<'a> {
    dists: Vec<Dist<'a>>,
    /// File path → index into `dists`, from RECORDs.
    owner: BTreeMap<ImagePath, usize>,
}

impl<'a> PipIndex<'a> {
    fn new(tree: &'a FileTree) -> Self {
        let mut dists = Vec::new();
        for (p, n, meta) in facts(tree, |f| match f {
            Fact::PythonDist(m) => Some(m),
            _ => None,
        }) {
            // `x.dist-info/METADATA`, `x.egg-info/PKG-INFO`, or an `x.egg-info` file.
            let dir = if p.file_name().ends_with(".egg-info") {
                p.clone()
            } else {
                match p.parent() {
                    Some(d) => d,
                    None => continue,
                }
            };
            let Some(site) = dir.parent() else { continue };
            dists.push(Dist {
                name: normalize_name(&meta.name),
                dir,
                site,
                meta,
                layer: n.layer,
            });
        }
        let mut owner = BTreeMap::new();
        for (i, d) in dists.iter().enumerate() {
            let Ok(rec) = d.dir.join("RECORD") else {
                continue;
            };
            let Some(record) = node_fact(tree, &rec, |f| match f {
                Fact::DistRecord(r) => Some(r),
                _ => None,
            }) else {
                continue;
            };
            for f in &record.files {
                if let Ok(p) = ImagePath::new(&format!("{}/{}", d.site.as_str(), f)) {
                    owner.entry(p).or_insert(i);
                }
            }
        }
        PipIndex { dists, owner }
    }

    fn record<'t>(&self, tree: &'t FileTree, d: &Dist<'_>) -> Option<&'t DistRecord> {
        node_fact(tree, &d.dir.join("RECORD").ok()?, |f| match f {
            Fact::DistRecord(r) => Some(r),
            _ => None,
        })
    }

    /// The dist that installed `path`: from RECORD, else by the nvidia wheel layout.
    fn owner_of(&self, path: &ImagePath, family: &str) -> Option<&Dist<'a>> {
        if let Some(i) = self.owner.get(path) {
            return self.dists.get(*i);
        }
        let comps: Vec<&str> = path.components().collect();
        let i = comps
            .iter()
            .position(|c| *c == "site-packages" || *c == "dist-packages")?;
        let site = ImagePath::new(&comps[..=i].join("/")).ok()?;
        let top = comps.get(i + 1)?;
        if *top != "nvidia" {
            // `torchvision.libs/…` (auditwheel's copies) or `jaxlib/…`: the dist of that name.
            let want = normalize_name(top.strip_suffix(".libs").unwrap_or(top));
            return self.dists.iter().find(|d| d.site == site && d.name == want);
        }
        let dir = comps.get(i + 2)?;
        let stems = libs::nvidia_dist_stems(dir, family);
        self.dists.iter().find(|d| {
            d.site == site
                && stems.iter().any(|s| {
                    let want = format!("nvidia-{s}");
                    d.name == want
                        || d.name
                            .strip_prefix(&want)
                            .and_then(|r| r.strip_prefix("-cu"))
                            .is_some_and(|v| v.bytes().all(|b| b.is_ascii_digit()))
                })
        })
    }
}

/// The module whose version file describes a dist.
fn module_of(dist: &str) -> Option<&'static str> {
    Some(match dist {
        "torch" => "torch",
        "torchvision" => "torchvision",
        "torchaudio" => "torchaudio",
        "jaxlib" => "jaxlib",
        "xformers" => "xformers",
        "vllm" => "vllm",
        "onnxruntime" | "onnxruntime-gpu" => "onnxruntime",
        "tensorflow" | "tensorflow-gpu" | "tensorflow-cpu" | "tf-nightly" => "tensorflow",
        d if d.starts_with("cupy") => "cupy",
        _ => return None,
    })
}

/// NVIDIA wheels versioned like the toolkit itself (nvidia-cuda-runtime 13.0.96 is CUDA 13.0).
fn toolkit_versioned(stem: &str) -> bool {
    stem.starts_with("nvidia-cuda-")
        || matches!(
            stem,
            "nvidia-nvjitlink" | "nvidia-nvtx" | "nvidia-nvfatbin" | "nvidia-nvvm" | "cuda-toolkit"
        )
}

/// A trailing `-cuNN` of a dist name ("nvidia-cudnn-cu13" → ("nvidia-cudnn", "13")).
fn cu_suffix(name: &str) -> Option<(&str, &str)> {
    let (stem, tail) = name.rsplit_once("-cu")?;
    (!tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit())).then_some((stem, tail))
}

/// The CUDA a distribution was built for, when its name, version, version module or file
/// layout says.
fn python_cuda(
    name: &str,
    version: &str,
    module: Option<&ModuleVersion>,
    record: Option<&DistRecord>,
) -> Option<String> {
    if let Some(c) = module.and_then(|m| m.cuda.clone()) {
        return Some(c);
    }
    if let Some(c) = libs::cuda_from_local_version(version) {
        return Some(c);
    }
    if let Some(c) = module
        .and_then(|m| m.version.as_deref())
        .and_then(libs::cuda_from_local_version)
    {
        return Some(c);
    }
    // cupy-cuda12x → 12, cupy-cuda118 → 11.8
    if let Some(t) = name.strip_prefix("cupy-cuda") {
        let d = t.trim_end_matches('x');
        if t.ends_with('x') {
            return Some(d.to_string());
        }
        return libs::cuda_from_cu_tag(&format!("cu{d}"));
    }
    // jax-cuda12-plugin, jax-cuda12-pjrt
    if let Some(t) = name.strip_prefix("jax-cuda") {
        let d: String = t.chars().take_while(|c| c.is_ascii_digit()).collect();
        return (!d.is_empty()).then_some(d);
    }
    let stem = cu_suffix(name).map_or(name, |(s, _)| s);
    if toolkit_versioned(stem) {
        if let Some(mm) = libs::major_minor(version) {
            return Some(mm);
        }
    }
    if let Some((_, cu)) = cu_suffix(name) {
        return Some(cu.to_string());
    }
    if matches!(name, "cuda-bindings" | "cuda-python") {
        return version.split('.').next().map(str::to_string);
    }
    // The CUDA 13 wheel layout: files under nvidia/cu13/.
    if name.starts_with("nvidia-") {
        for f in record.map(|r| r.files.as_slice()).unwrap_or_default() {
            let mut it = f.split('/');
            if it.next() == Some("nvidia") {
                if let Some(cu) = it.next().and_then(|d| d.strip_prefix("cu")) {
                    if !cu.is_empty() && cu.bytes().all(|b| b.is_ascii_digit()) {
                        return Some(cu.to_string());
                    }
                }
            }
        }
    }
    None
}

fn python_packages(tree: &FileTree, pip: &PipIndex<'_>) -> Vec<PythonPackage> {
    // (site-packages dir, module) → version module facts.
    let mut modules: BTreeMap<(ImagePath, &str), &ModuleVersion> = BTreeMap::new();
    for (p, _, m) in facts(tree, |f| match f {
        Fact::ModuleVersion(m) => Some(m),
        _ => None,
    }) {
        let comps: Vec<&str> = p.components().collect();
        if let Some(i) = comps.iter().rposition(|c| *c == m.module) {
            if let Ok(site) = ImagePath::new(&comps[..i].join("/")) {
                modules.entry((site, m.module.as_str())).or_insert(m);
            }
        }
    }
    let mut out: Vec<PythonPackage> = pip
        .dists
        .iter()
        .map(|d| {
            let tags = d
                .dir
                .join("WHEEL")
                .ok()
                .and_then(|w| {
                    node_fact(tree, &w, |f| match f {
                        Fact::WheelTags(t) => Some(t),
                        _ => None,
                    })
                })
                .map(|t| t.tags.clone())
                .unwrap_or_default();
            let module =
                module_of(&d.name).and_then(|m| modules.get(&(d.site.clone(), m)).copied());
            PythonPackage {
                name: d.name.clone(),
                version: d.meta.version.clone(),
                tags,
                location: display(&d.site),
                cuda: python_cuda(&d.name, &d.meta.version, module, pip.record(tree, d)),
                requires: d.meta.requires.clone(),
                layer: Some(d.layer),
            }
        })
        .collect();
    out.sort_by(|a, b| (&a.location, &a.name, &a.version).cmp(&(&b.location, &b.name, &b.version)));
    out
}

// ---------------------------------------------------------------------------------------
// conda / dpkg

struct CondaIndex<'a> {
    /// Environment prefixes (the parents of `conda-meta`).
    prefixes: BTreeSet<ImagePath>,
    metas: Vec<(ImagePath, &'a CondaMeta)>,
    owner: BTreeMap<ImagePath, usize>,
}

impl<'a> CondaIndex<'a> {
    fn new(tree: &'a FileTree) -> Self {
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

    fn in_prefix(&self, p: &ImagePath) -> bool {
        self.prefixes.iter().any(|x| p.starts_with(x))
    }

    fn owner_of(&self, p: &ImagePath) -> Option<&'a CondaMeta> {
        self.owner
            .get(p)
            .and_then(|i| self.metas.get(*i))
            .map(|(_, m)| *m)
    }

    fn packages(&self) -> Vec<CondaPackage> {
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

fn os_packages(tree: &FileTree) -> Vec<OsPackage> {
    let mut seen: BTreeSet<(String, String)> = BTreeSet::new();
    for (_, _, s) in facts(tree, |f| match f {
        Fact::DpkgStatus(s) => Some(s),
        _ => None,
    }) {
        for DpkgPackage { name, version, .. } in &s.packages {
            if super::names::is_gpu_os_package(name) {
                seen.insert((name.clone(), version.clone()));
            }
        }
    }
    seen.into_iter()
        .map(|(name, version)| OsPackage {
            name,
            version,
            manager: "dpkg".into(),
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// libraries

/// Package names whose version is the version of the libraries they ship (not a framework
/// that happens to bundle them).
fn is_library_package(name: &str) -> bool {
    name.starts_with("nvidia-")
        || name.starts_with("cuda-")
        || name.starts_with("libcu")
        || name.starts_with("libnv")
        || name.starts_with("libnccl")
        || name.starts_with("cudnn")
        || name.starts_with("nccl")
        || name.starts_with("cutensor")
        || name == "cudatoolkit"
}

fn elf_of(node: &Node) -> Option<&ElfFacts> {
    node.facts.iter().find_map(|f| match f {
        Fact::Elf(e) => Some(e),
        _ => None,
    })
}

/// Symlinks beside a library that point at it: `libcudart.so.12 → libcudart.so.12.1.105`.
/// The one with the shortest version suffix is the soname ldconfig made the link for.
struct SonameLinks {
    by_target: BTreeMap<ImagePath, Vec<String>>,
}

impl SonameLinks {
    fn new(tree: &FileTree) -> Self {
        let mut by_target: BTreeMap<ImagePath, Vec<String>> = BTreeMap::new();
        for (p, n) in &tree.nodes {
            if !matches!(n.kind, NodeKind::Symlink { .. }) {
                continue;
            }
            let name = p.file_name();
            if libs::parse_so_name(name).is_none_or(|so| so.suffix.is_none()) {
                continue;
            }
            if let Some((target, _)) = tree.resolve(p) {
                if target.parent() == p.parent() {
                    by_target.entry(target).or_default().push(name.to_string());
                }
            }
        }
        SonameLinks { by_target }
    }

    fn soname(&self, file: &ImagePath) -> Option<String> {
        self.by_target
            .get(file)?
            .iter()
            .filter_map(|n| Some((libs::parse_so_name(n)?.suffix_parts(), n)))
            .min()
            .map(|(_, n)| n.clone())
    }
}

fn libraries(
    tree: &FileTree,
    pip: &PipIndex<'_>,
    conda: &CondaIndex<'_>,
) -> (Vec<CudaLibrary>, Vec<DriverLibrary>) {
    let links = SonameLinks::new(tree);
    let mut cuda = Vec::new();
    let mut driver: Vec<(DriverLibrary, Option<SoName>)> = Vec::new();
    for f in files(tree) {
        let file = f.path.file_name();
        let Some(so) = libs::parse_so_name(file) else {
            continue;
        };
        let Some(kind) = libs::classify_stem(&so) else {
            continue;
        };
        let comps: Vec<&str> = f.path.components().collect();
        let provider = libs::provider_from_path(&comps, conda.in_prefix(f.path));
        let mut driver_name = None;
        let in_stub_or_compat = matches!(
            provider,
            LibraryProvider::Stub | LibraryProvider::ForwardCompat
        );
        let family = match kind {
            LibKind::Cuda(fam) => fam,
            LibKind::Driver(name) if !in_stub_or_compat => {
                driver.push((
                    DriverLibrary {
                        path: display(f.path),
                        name,
                        version: libs::file_name_version(&so),
                        provider,
                        layer: Some(f.layer),
                    },
                    Some(so),
                ));
                continue;
            }
            // libcuda.so in stubs/, compat/libcuda.so.X: CUDA-side, named without `lib`.
            LibKind::Driver(name) => {
                let family = name.strip_prefix("lib").unwrap_or(&name).to_string();
                driver_name = Some(name);
                family
            }
        };
        let mut provider = provider;
        let mut package = None;
        let mut owner_version = None;
        if let Some(d) = pip.owner_of(f.path, &family) {
            package = Some(d.name.clone());
            if d.name.starts_with("nvidia-") {
                provider = LibraryProvider::PipWheel;
                owner_version = Some(d.meta.version.clone());
            } else if provider == LibraryProvider::PipWheel {
                provider = LibraryProvider::Bundled;
            }
        } else if let Some(m) = conda.owner_of(f.path) {
            package = Some(m.name.clone());
            if is_library_package(&m.name) {
                owner_version = Some(m.version.clone());
            }
        }
        // A runtime's file name names only its soname (`libcudart-<hash>.so.11.0` bundled by
        // torch is CUDA 11.7): its code says which release it is.
        let code_version = elf_of(f.node)
            .and_then(|e| e.cudart_version)
            .map(crate::detect::elf::format_cudart_version);
        let version = if libs::has_full_version(&so) {
            so.suffix.clone()
        } else {
            owner_version
                .or(code_version)
                .or_else(|| libs::file_name_version(&so))
        };
        let soname = elf_of(f.node)
            .and_then(|e| e.soname.clone())
            .or_else(|| links.soname(f.path))
            .or_else(|| match &driver_name {
                Some(n) if libs::has_full_version(&so) => libs::driver_soname(n),
                _ => libs::derived_soname(file, &so),
            });
        cuda.push(CudaLibrary {
            path: display(f.path),
            name: family,
            soname,
            version,
            provider,
            aliases: Vec::new(),
            package,
            layer: Some(f.layer),
        });
    }
    fill_aliases(tree, &mut cuda);
    // A driver file named only by its soname (a copied `libcuda.so.1`): the driver files
    // beside it share one version.
    let mut dir_versions: BTreeMap<String, String> = BTreeMap::new();
    for (d, so) in &driver {
        if let (Some(v), Some(so)) = (&d.version, so) {
            if libs::has_full_version(so) {
                if let Some((dir, _)) = d.path.rsplit_once('/') {
                    dir_versions
                        .entry(dir.to_string())
                        .or_insert_with(|| v.clone());
                }
            }
        }
    }
    let mut driver: Vec<DriverLibrary> = driver
        .into_iter()
        .map(|(mut d, so)| {
            let full = so.as_ref().is_some_and(libs::has_full_version);
            if !full {
                if let Some(v) = d
                    .path
                    .rsplit_once('/')
                    .and_then(|(dir, _)| dir_versions.get(dir))
                {
                    d.version = Some(v.clone());
                }
            }
            d
        })
        .collect();
    cuda.sort_by(|a: &CudaLibrary, b| a.path.cmp(&b.path));
    driver.sort_by(|a, b| a.path.cmp(&b.path));
    (cuda, driver)
}

/// Every link in the image that ends at a CUDA library, so the loader emulation can match
/// NEEDED names (usually soname symlinks) against them.
fn fill_aliases(tree: &FileTree, cuda: &mut [CudaLibrary]) {
    let mut by_real: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (p, n) in &tree.nodes {
        if matches!(n.kind, NodeKind::Symlink { .. } | NodeKind::Hardlink { .. }) {
            if let Some((real, node)) = tree.resolve(p) {
                if matches!(node.kind, NodeKind::File { .. }) {
                    by_real.entry(display(&real)).or_default().push(display(p));
                }
            }
        }
    }
    for lib in cuda {
        if let Some(a) = by_real.remove(&lib.path) {
            lib.aliases = a;
        }
    }
}

/// Directory symlinks (`usr/local/cuda` → `usr/local/cuda-12.1`), resolved, for the loader.
pub(crate) fn dir_links(tree: &FileTree) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (p, n) in &tree.nodes {
        if let NodeKind::Symlink { .. } = n.kind {
            if let Some((real, node)) = tree.resolve(p) {
                if matches!(node.kind, NodeKind::Dir { .. }) {
                    out.insert(p.as_str().to_string(), real.as_str().to_string());
                }
            } else if let Some(real) = resolve_implicit_dir(tree, p) {
                out.insert(p.as_str().to_string(), real);
            }
        }
    }
    out
}

/// A symlink to a directory that has no entry of its own (only entries below it).
fn resolve_implicit_dir(tree: &FileTree, p: &ImagePath) -> Option<String> {
    let NodeKind::Symlink { target } = &tree.get(p)?.kind else {
        return None;
    };
    let t = p.resolve_link(target);
    tree.is_implicit_dir(&t).then(|| t.as_str().to_string())
}

// ---------------------------------------------------------------------------------------
// binaries

fn links_cuda(needed: &str) -> bool {
    libs::parse_so_name(needed)
        .and_then(|so| libs::classify_stem(&so))
        .is_some()
}

/// The device code and CUDA links of one ELF, as the inventory records it; None when the file
/// has no device code and links no CUDA library. Also used by `host --check` (GL215) on files
/// read from the host's disk.
pub(crate) fn binary_from_elf(path: String, layer: Option<usize>, e: &ElfFacts) -> Option<Binary> {
    use crate::arch::CodeKind;
    let loadable = e.loadable_sections();
    let entries: Vec<&crate::detect::elf::FatbinEntry> = loadable
        .iter()
        .flat_map(|s| s.containers.iter())
        .flat_map(|c| c.entries.iter())
        .collect();
    // Fatbins in ordinary data sections (`.data`, `.ldata`, `.rodata`): the library hands
    // them to cuModuleLoadData itself (cuFFT, cuRAND do). Strictly validated by the reader.
    let embedded: Vec<&crate::detect::elf::FatbinEntry> = e
        .fatbin
        .iter()
        .flat_map(|fb| fb.sections.iter())
        .filter(|s| !crate::detect::elf::is_fatbin_section_name(&s.name))
        .flat_map(|s| s.containers.iter())
        .flat_map(|c| c.entries.iter())
        .collect();
    let has_device_code = !entries.is_empty() || !embedded.is_empty();
    if !has_device_code && !e.needed.iter().any(|n| links_cuda(n)) {
        return None;
    }
    let mut ptx_isa: BTreeMap<String, (u16, u16)> = BTreeMap::new();
    let mut compression = BTreeSet::new();
    for entry in entries.iter().chain(embedded.iter()) {
        if entry.target.kind == CodeKind::Ptx {
            // Several entries for one target: the oldest ISA is the one any driver that
            // can JIT the target at all will accept.
            let v = ptx_isa
                .entry(entry.target.to_string())
                .or_insert(entry.code_version);
            if entry.code_version < *v {
                *v = entry.code_version;
            }
        }
        if let Some(c) = &entry.compression {
            compression.insert(c.clone());
        }
    }
    let targets = |list: &[&crate::detect::elf::FatbinEntry], kind: CodeKind| {
        let mut v: Vec<crate::arch::ArchTarget> = list
            .iter()
            .filter(|e| e.target.kind == kind)
            .map(|e| e.target)
            .collect();
        v.sort();
        v.dedup();
        v
    };
    Some(Binary {
        path,
        layer,
        machine: e.machine.to_string(),
        needed: e.needed.clone(),
        runpath: e.runpath.clone(),
        rpath: e.rpath.clone(),
        sass: e.sass(),
        ptx: e.ptx(),
        embedded_sass: targets(&embedded, CodeKind::Sass),
        embedded_ptx: targets(&embedded, CodeKind::Ptx),
        ptx_isa: ptx_isa
            .into_iter()
            .map(|(k, (a, b))| (k, format!("{a}.{b}")))
            .collect(),
        compression: compression.into_iter().collect(),
        has_device_code,
        warnings: e.warnings.clone(),
    })
}

fn binaries(tree: &FileTree) -> Vec<Binary> {
    let mut out = Vec::new();
    for f in files(tree) {
        let Some(e) = elf_of(f.node) else { continue };
        if let Some(b) = binary_from_elf(display(f.path), Some(f.layer), e) {
            out.push(b);
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

// ---------------------------------------------------------------------------------------
// loader

/// An image's file tree as the loader configuration sees it.
struct TreeConf<'a>(&'a FileTree);

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
fn ld_so_conf(tree: &FileTree) -> Vec<String> {
    search_dirs(&TreeConf(tree), "/etc/ld.so.conf")
        .into_iter()
        .map(|(d, _)| d)
        .collect()
}

/// Paths in the tree matching an absolute glob, sorted (as glob(3) returns them).
fn glob_in_tree(tree: &FileTree, pattern: &str) -> Vec<ImagePath> {
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
