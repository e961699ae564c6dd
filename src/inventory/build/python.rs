//! Python: interpreters, virtual environments, dist-infos joined with their WHEEL, RECORD and
//! the framework's version module, and which CUDA each package was built for.

use super::*;

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

/// A trailing `-cuNN` of a dist name ("nvidia-cudnn-cu13" → ("nvidia-cudnn", "13")).
pub(super) fn cu_suffix(name: &str) -> Option<(&str, &str)> {
    let (stem, tail) = name.rsplit_once("-cu")?;
    (!tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit())).then_some((stem, tail))
}

/// The CUDA a distribution was built for, when its name, version, version module or file
/// layout says.
pub(super) fn python_cuda(
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
                cuda: python_cuda(&d.name, &d.meta.version, module, pip.record(tree, d))
                    .and_then(|v| v.parse().ok()),
                requires: d.meta.requires.clone(),
                layer: Some(d.layer),
            }
        })
        .collect();
    out.sort_by(|a, b| (&a.location, &a.name, &a.version).cmp(&(&b.location, &b.name, &b.version)));
    out
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
