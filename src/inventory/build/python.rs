//! Python: interpreters, virtual environments, dist-infos joined with their WHEEL, RECORD and
//! the framework's version module, and which CUDA each package was built for.

use super::*;
use crate::version::CudaTag;

/// Who owns which file, from pip metadata.
pub(super) struct Dist<'a> {
    pub(super) dir: ImagePath,
    pub(super) site: ImagePath,
    pub(super) meta: &'a DistMetadata,
    pub(super) name: String,
    pub(super) layer: usize,
}

pub(super) struct PipIndex<'a> {
    pub(super) dists: Vec<Dist<'a>>,
    /// File path → index into `dists`, from RECORDs.
    pub(super) owner: BTreeMap<ImagePath, usize>,
}

impl<'a> PipIndex<'a> {
    pub(super) fn new(tree: &'a FileTree) -> Self {
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

    pub(super) fn record<'t>(&self, tree: &'t FileTree, d: &Dist<'_>) -> Option<&'t DistRecord> {
        node_fact(tree, &d.dir.join("RECORD").ok()?, |f| match f {
            Fact::DistRecord(r) => Some(r),
            _ => None,
        })
    }

    /// The dist that installed `path`: from RECORD, else by the nvidia wheel layout.
    pub(super) fn owner_of(&self, path: &ImagePath, family: &str) -> Option<&Dist<'a>> {
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
                    d.name == want || without_cu_suffix(&d.name) == want
                })
        })
    }
}

/// The module whose version file describes a dist.
pub(super) fn module_of(dist: &str) -> Option<&'static str> {
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
pub(super) fn toolkit_versioned(stem: &str) -> bool {
    stem.starts_with("nvidia-cuda-")
        || matches!(
            stem,
            "nvidia-nvjitlink" | "nvidia-nvtx" | "nvidia-nvfatbin" | "nvidia-nvvm" | "cuda-toolkit"
        )
}

/// A dist name without its trailing CUDA tag: `nvidia-cudnn-cu13` → `nvidia-cudnn`.
pub(super) fn without_cu_suffix(name: &str) -> &str {
    match name.rsplit_once('-') {
        Some((stem, tail)) if CudaTag::parse(tail).is_some() => stem,
        _ => name,
    }
}

/// The CUDA a distribution was built for, when its name, version, version module or file
/// layout says; major-only when that is all it says (`nvidia-cudnn-cu12`, `cupy-cuda12x`).
pub(super) fn python_cuda(
    name: &str,
    version: &str,
    module: Option<&ModuleVersion>,
    record: Option<&DistRecord>,
) -> Option<CudaTag> {
    // The version module has the last word, even when it says nothing readable.
    if let Some(c) = module.and_then(|m| m.cuda.as_deref()) {
        return CudaTag::from_release_text(c);
    }
    if let Some(c) = CudaTag::from_local_version(version) {
        return Some(c);
    }
    if let Some(c) = module
        .and_then(|m| m.version.as_deref())
        .and_then(CudaTag::from_local_version)
    {
        return Some(c);
    }
    let stem = without_cu_suffix(name);
    if toolkit_versioned(stem) {
        if let Some(c) = CudaTag::from_release_text(version).filter(|c| c.minor.is_some()) {
            return Some(c);
        }
    }
    // spconv-cu126, cupy-cuda12x, cupy-cuda102, jax-cuda12-plugin, nvidia-cudnn-cu12.
    if let Some(c) = CudaTag::from_dist_name(name) {
        return Some(c);
    }
    if matches!(name, "cuda-bindings" | "cuda-python") {
        return CudaTag::from_release_text(version.split('.').next()?);
    }
    // The CUDA 13 wheel layout: files under nvidia/cu13/.
    if name.starts_with("nvidia-") {
        for f in record.map(|r| r.files.as_slice()).unwrap_or_default() {
            let mut it = f.split('/');
            if it.next() == Some("nvidia") {
                if let Some(c) = it.next().and_then(CudaTag::parse) {
                    return Some(c);
                }
            }
        }
    }
    None
}

pub(super) fn python_packages(tree: &FileTree, pip: &PipIndex<'_>) -> Vec<PythonPackage> {
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
                location: d.site.clone(),
                // A major-only tag has always been written as x.0 here (the JSON contract).
                cuda: python_cuda(&d.name, &d.meta.version, module, pip.record(tree, d))
                    .map(|c| c.floor()),
                requires: d.meta.requires.clone(),
                layer: Some(d.layer),
                // Filled in by `attach_cuda_needs` once the binaries are known.
                cuda_need: None,
            }
        })
        .collect();
    out.sort_by(|a, b| (&a.location, &a.name, &a.version).cmp(&(&b.location, &b.name, &b.version)));
    out
}

/// The version modules a dist ships, for its `cuda_need` (cupy's `_wheel.json` besides
/// `_version.py`; paddle's `paddle/version`), else the one [`module_of`] names.
fn need_modules(dist: &str) -> &'static [&'static str] {
    use crate::detect::torch_version::CUPY_WHEEL;
    match dist {
        d if d.starts_with("cupy") => &[CUPY_WHEEL, "cupy"],
        "paddlepaddle" | "paddlepaddle-gpu" => &["paddle"],
        "torch" => &["torch"],
        "torchvision" => &["torchvision"],
        "torchaudio" => &["torchaudio"],
        "jaxlib" => &["jaxlib"],
        "xformers" => &["xformers"],
        "vllm" => &["vllm"],
        "onnxruntime" | "onnxruntime-gpu" => &["onnxruntime"],
        "tensorflow" | "tensorflow-gpu" | "tensorflow-cpu" | "tf-nightly" => &["tensorflow"],
        _ => &[],
    }
}

/// Each package's [`CudaNeed`](crate::inventory::cuda_need::CudaNeed): its name and
/// Requires-Dist (CUDA-tagged wheels, a pinned torch), the DT_NEEDED, statically linked
/// runtime and PTX ISA of the binaries its RECORD lists, and its version module. `facts`
/// gives the torch and PTX ISA tables.
pub(super) fn attach_cuda_needs(
    packages: &mut [PythonPackage],
    tree: &FileTree,
    binaries: &[Binary],
    pip: &PipIndex<'_>,
    facts: &crate::matrix::Facts,
) {
    use crate::inventory::cuda_need;
    // (site, dist name) → evidence from its files; the newest PTX ISA per dist, with its file.
    // A dist: (site, name).
    type DistKey<'k> = (&'k ImagePath, &'k str);
    let mut found: BTreeMap<DistKey, Vec<cuda_need::CudaEvidence>> = BTreeMap::new();
    let mut newest_isa: BTreeMap<DistKey, ((u16, u16), &str)> = BTreeMap::new();
    // Dists shipping one build per CUDA release (bitsandbytes' `libbitsandbytes_cudaXYZ.so`):
    // the file-name tags each dist's binaries carry.
    let mut name_tags: BTreeMap<DistKey, BTreeSet<&str>> = BTreeMap::new();
    for b in binaries {
        let Some(d) = pip.owner.get(&b.path).and_then(|i| pip.dists.get(*i)) else {
            continue;
        };
        if let Some((tag, _)) = cuda_need::file_name_tag(b.path.file_name()) {
            name_tags
                .entry((&d.site, d.name.as_str()))
                .or_default()
                .insert(tag);
        }
    }
    for b in binaries {
        let Some(d) = pip.owner.get(&b.path).and_then(|i| pip.dists.get(*i)) else {
            continue;
        };
        let rel = b
            .path
            .as_str()
            .strip_prefix(d.site.as_str())
            .map_or(b.path.as_str(), |r| r.trim_start_matches('/'));
        let key = (&d.site, d.name.as_str());
        let variant = cuda_need::file_name_tag(b.path.file_name())
            .map(|(tag, _)| tag)
            .filter(|_| name_tags.get(&key).is_some_and(|t| t.len() > 1));
        let mut ev: Vec<cuda_need::CudaEvidence> = b
            .needed
            .iter()
            .filter_map(|n| cuda_need::from_needed(rel, n))
            .collect();
        if let Some(v) = b.static_cuda_runtime {
            ev.push(cuda_need::from_static_cudart(rel, v));
        }
        for e in &mut ev {
            e.variant = variant.map(str::to_string);
        }
        found.entry(key).or_default().extend(ev);
        if variant.is_some() {
            // One build of several: its PTX bounds only itself.
            continue;
        }
        let isa = b
            .ptx_isa
            .keys()
            .filter_map(|t| t.parse().ok())
            .filter_map(|t| b.ptx_isa_version(&t))
            .max();
        if let Some(isa) = isa {
            let best = newest_isa.entry(key).or_insert((isa, rel));
            if isa > best.0 {
                *best = (isa, rel);
            }
        }
    }
    for (key, (isa, rel)) in newest_isa {
        found
            .entry(key)
            .or_default()
            .push(cuda_need::from_ptx_isa(rel, isa, facts));
    }
    // (site, module) → (path in site-packages, its facts).
    let mut modules: BTreeMap<(ImagePath, &str), (String, &ModuleVersion)> = BTreeMap::new();
    for (p, _, m) in facts_of_modules(tree) {
        let comps: Vec<&str> = p.components().collect();
        // cupy's `_wheel.json` lies in `cupy/.data/`.
        let top = match m.module.as_str() {
            crate::detect::torch_version::CUPY_WHEEL => "cupy",
            other => other,
        };
        if let Some(i) = comps.iter().rposition(|c| *c == top) {
            if let Ok(site) = ImagePath::new(&comps[..i].join("/")) {
                modules
                    .entry((site, m.module.as_str()))
                    .or_insert((comps[i..].join("/"), m));
            }
        }
    }
    for p in packages {
        let mut ev = cuda_need::from_name_and_version(&p.name, &p.version);
        ev.extend(cuda_need::from_requires(&p.requires));
        ev.extend(cuda_need::from_torch_pins(&p.requires, facts));
        if let Some(n) = found.remove(&(&p.location, p.name.as_str())) {
            ev.extend(n);
        }
        for m in need_modules(&p.name) {
            if let Some((file, v)) = modules.get(&(p.location.clone(), *m)) {
                ev.extend(cuda_need::from_version_module(
                    file,
                    v.cuda.as_deref(),
                    v.cudnn.as_deref(),
                ));
            }
        }
        p.cuda_need = cuda_need::decide(ev);
    }
}

fn facts_of_modules(tree: &FileTree) -> impl Iterator<Item = (&ImagePath, &Node, &ModuleVersion)> {
    facts(tree, |f| match f {
        Fact::ModuleVersion(m) => Some(m),
        _ => None,
    })
}

pub(super) fn interpreter_version(name: &str) -> Option<String> {
    let v = name.strip_prefix("python")?;
    let (a, b) = v.split_once('.')?;
    let ok = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (ok(a) && ok(b)).then(|| v.to_string())
}

pub(super) fn python_interpreters(tree: &FileTree) -> Vec<PythonInterpreter> {
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
        .filter_map(|(path, version)| {
            Some(PythonInterpreter {
                path: ImagePath::new(&path).ok()?,
                version,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_of_distributions() {
        // The old `-cuNN` reader took every digit: `spconv-cu126` was CUDA 126.0.
        assert_eq!(
            python_cuda("spconv-cu126", "2.3.6", None, None),
            Some(CudaTag::release(12, 6))
        );
        assert_eq!(
            python_cuda("cupy-cuda12x", "13.3.0", None, None),
            Some(CudaTag::major_only(12))
        );
        assert_eq!(
            python_cuda("nvidia-cuda-runtime-cu12", "12.4.127", None, None),
            Some(CudaTag::release(12, 4))
        );
        assert_eq!(
            python_cuda("nvidia-cudnn-cu12", "9.1.0.70", None, None),
            Some(CudaTag::major_only(12))
        );
        assert_eq!(
            python_cuda("torch", "2.5.1+cu121", None, None),
            Some(CudaTag::release(12, 1))
        );
        assert_eq!(
            python_cuda("torch-scatter", "2.1.2+pt23cu118", None, None),
            Some(CudaTag::release(11, 8))
        );
        assert_eq!(python_cuda("numpy", "2.0.0", None, None), None);
        assert_eq!(without_cu_suffix("nvidia-cudnn-cu12"), "nvidia-cudnn");
        assert_eq!(
            without_cu_suffix("nvidia-cuda-runtime"),
            "nvidia-cuda-runtime"
        );
    }
}
