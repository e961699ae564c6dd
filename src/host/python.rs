//! Python environments on the host and the torch installed in them, read from the installed
//! files (never by importing torch): `torch/version.py` for the version and CUDA, and the
//! fatbin of `torch/lib/libtorch_cuda.so` for the architectures, through an [`ArchScanner`]
//! the integrator wires to the ELF/fatbin reader (`crate::detect::elf`).

use super::evidence::Evidence;
use super::reader::{resolve_link, EntryKind, HostReader};
use crate::version::CudaVersion;
use crate::vocab::ImagePath;
use std::path::Path;

/// Device-code targets of one binary: the inventory's record (SASS, PTX, the fatbins the library
/// loads itself, PTX ISA versions), so the host check judges it as the image rules do.
pub type BinaryArchs = crate::inventory::Binary;

/// Reads the fatbin arch sets of a binary on this machine's disk.
pub trait ArchScanner {
    /// Ok(None): the file has no device code.
    fn scan(&self, local_path: &Path) -> Result<Option<BinaryArchs>, String>;
}

/// One torch install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TorchInstall {
    /// The interpreter it was found through.
    pub python: String,
    pub site_packages: String,
    /// `__version__` from torch/version.py ("2.11.0+cu130").
    pub version: String,
    /// `cuda` from torch/version.py; None for CPU / ROCm builds.
    pub cuda: Option<String>,
    /// `cuda`, typed; None also when it is no version.
    pub cuda_version: Option<CudaVersion>,
    /// `hip` from torch/version.py.
    pub hip: Option<String>,
    /// torch/lib/libtorch_cuda.so when present (host path).
    pub cuda_lib: Option<String>,
    pub evidence: Vec<Evidence>,
}

/// `__version__ = '2.11.0+cu130'`, `cuda: Optional[str] = '13.0'`, `hip = None`.
pub fn parse_version_py(text: &str) -> (Option<String>, Option<String>, Option<String>) {
    let get = |key: &str| -> Option<String> {
        text.lines().find_map(|l| {
            let t = l.trim();
            let rest = t.strip_prefix(key)?;
            let rest = rest.trim_start();
            if !(rest.starts_with('=') || rest.starts_with(':')) {
                return None;
            }
            let v = rest.rsplit('=').next()?.trim();
            if v == "None" {
                return None;
            }
            let v = v.trim_matches(|c| c == '\'' || c == '"');
            (!v.is_empty()).then(|| v.to_string())
        })
    };
    (get("__version__"), get("cuda"), get("hip"))
}

fn parent(p: &str) -> String {
    Path::new(p)
        .parent()
        .map(|x| x.to_string_lossy().into_owned())
        .unwrap_or_else(|| "/".into())
}

/// Interpreters to look at: the given ones, else `python3` / `python` in each PATH dir.
pub fn python_candidates(reader: &dyn HostReader, given: &[String]) -> Vec<String> {
    if !given.is_empty() {
        return given.to_vec();
    }
    let path = reader.env("PATH").unwrap_or_default();
    let mut out = Vec::new();
    for dir in path.split(':').filter(|d| d.starts_with('/')) {
        for name in ["python3", "python"] {
            let p = format!("{}/{name}", dir.trim_end_matches('/'));
            if reader.exists(&p) && !out.contains(&p) {
                out.push(p);
                break;
            }
        }
    }
    out
}

/// Site directories of an interpreter: `<prefix>/lib/python3*/{site,dist}-packages`,
/// `<prefix>/local/lib/python3*/dist-packages`, `<prefix>/lib/python3/dist-packages`, for the
/// prefix of the path as given (virtual environments) and of its resolved target.
pub fn site_dirs(reader: &dyn HostReader, python: &str) -> Vec<String> {
    let mut prefixes = vec![parent(&parent(python))];
    let resolved = resolve_link(reader, python);
    let rp = parent(&parent(&resolved));
    if !prefixes.contains(&rp) {
        prefixes.push(rp);
    }
    let mut out = Vec::new();
    for prefix in prefixes {
        let prefix = prefix.trim_end_matches('/').to_string();
        for libdir in [
            format!("{prefix}/lib"),
            format!("{prefix}/lib64"),
            format!("{prefix}/local/lib"),
        ] {
            // venvs have lib64 -> lib: look at each real directory once.
            let libdir = resolve_link(reader, &libdir);
            for (e, kind) in reader.list_dir(&libdir).unwrap_or_default() {
                if !e.starts_with("python3") || kind == EntryKind::File {
                    continue;
                }
                for sub in ["site-packages", "dist-packages"] {
                    let d = format!("{libdir}/{e}/{sub}");
                    if reader.list_dir(&d).is_some() && !out.contains(&d) {
                        out.push(d);
                    }
                }
            }
        }
    }
    out
}

/// Every torch install reachable from the interpreters.
pub fn find_torch(reader: &dyn HostReader, pythons: &[String]) -> Vec<TorchInstall> {
    let mut out: Vec<TorchInstall> = Vec::new();
    for py in python_candidates(reader, pythons) {
        for site in site_dirs(reader, &py) {
            if out.iter().any(|t| t.site_packages == site) {
                continue;
            }
            let vp = format!("{site}/torch/version.py");
            let Some(text) = reader.read_string(&vp) else {
                continue;
            };
            let (version, cuda, hip) = parse_version_py(&text);
            let lib = format!("{site}/torch/lib/libtorch_cuda.so");
            let mut evidence = vec![Evidence::file(
                &vp,
                format!("__version__ = {:?}", version.clone().unwrap_or_default()),
            )];
            evidence.push(Evidence::file(
                &vp,
                format!(
                    "cuda = {}",
                    cuda.as_deref()
                        .map(|c| format!("{c:?}"))
                        .unwrap_or_else(|| "None".into())
                ),
            ));
            out.push(TorchInstall {
                python: py.clone(),
                site_packages: site,
                version: version.unwrap_or_else(|| "unknown".into()),
                cuda_version: cuda.as_deref().and_then(|c| c.parse().ok()),
                cuda,
                hip,
                cuda_lib: reader.exists(&lib).then_some(lib),
                evidence,
            });
        }
    }
    out
}

/// Most conda environments looked at: bounds the work a hostile tree can ask for.
const MAX_CONDA_ENVS: usize = 256;

/// Directory names the conda installers use by default (`~/miniconda3`, `/opt/conda`).
const CONDA_ROOT_NAMES: &[&str] = &[
    "conda",
    "miniconda3",
    "miniconda",
    "anaconda3",
    "anaconda",
    "miniforge3",
    "mambaforge",
];

/// The invoking user's home (`HOME`): the one whose startup files and conda installs set up
/// that user's shells. Other users' homes are not read: they are usually closed to the invoking
/// user, and a file there that cannot be read would make the whole run incomplete.
pub fn home_dirs(reader: &dyn HostReader) -> Vec<String> {
    reader
        .env("HOME")
        .map(|h| h.trim_end_matches('/').to_string())
        .filter(|h| h.starts_with('/') && h.len() > 1)
        .into_iter()
        .collect()
}

/// Conda environments on the host (prefixes holding `conda-meta/`): the base environment of
/// each conda installation at its installers' default places (`/opt/conda`,
/// `~/miniconda3`, …) and its `envs/*`, `~/.conda/envs/*`, the prefixes listed in
/// `~/.conda/environments.txt`, and `CONDA_PREFIX`.
pub fn conda_envs(reader: &dyn HostReader) -> Vec<String> {
    let homes = home_dirs(reader);
    let mut roots: Vec<String> = Vec::new();
    for name in CONDA_ROOT_NAMES {
        roots.push(format!("/opt/{name}"));
        roots.push(format!("/usr/local/{name}"));
        for h in &homes {
            roots.push(format!("{h}/{name}"));
        }
    }
    for h in &homes {
        roots.push(format!("{h}/.conda"));
    }
    let mut candidates: Vec<String> = Vec::new();
    for root in &roots {
        if reader.list_dir(root).is_none() {
            continue;
        }
        candidates.push(root.clone());
        let envs = format!("{root}/envs");
        let listed = reader.list_dir(&envs).unwrap_or_default();
        for (name, kind) in listed.into_iter().take(MAX_CONDA_ENVS) {
            if kind != EntryKind::File {
                candidates.push(format!("{envs}/{name}"));
            }
        }
    }
    for h in &homes {
        if let Some(t) = reader.read_string(&format!("{h}/.conda/environments.txt")) {
            candidates.extend(
                t.lines()
                    .map(str::trim)
                    .filter(|l| l.starts_with('/'))
                    .take(MAX_CONDA_ENVS)
                    .map(|l| l.trim_end_matches('/').to_string()),
            );
        }
    }
    candidates.extend(reader.env("CONDA_PREFIX").filter(|p| p.starts_with('/')));
    let mut out: Vec<String> = Vec::new();
    for c in candidates {
        if out.len() >= MAX_CONDA_ENVS {
            break;
        }
        if !out.contains(&c) && reader.list_dir(&format!("{c}/conda-meta")).is_some() {
            out.push(c);
        }
    }
    out
}

/// The interpreter of an environment prefix (`<env>/bin/python3`, else `bin/python`; the
/// first when neither is there, so its site directories are still looked at).
pub fn env_python(reader: &dyn HostReader, prefix: &str) -> String {
    let p3 = format!("{prefix}/bin/python3");
    let p = format!("{prefix}/bin/python");
    if !reader.exists(&p3) && reader.exists(&p) {
        p
    } else {
        p3
    }
}

/// Every torch install: those of the interpreters ([`find_torch`]) and those of every conda
/// environment, each site directory once.
pub fn find_torch_everywhere(reader: &dyn HostReader, pythons: &[String]) -> Vec<TorchInstall> {
    let mut out = find_torch(reader, pythons);
    let conda: Vec<String> = conda_envs(reader)
        .iter()
        .map(|e| env_python(reader, e))
        .collect();
    for t in find_torch(reader, &conda) {
        if !out.iter().any(|o| o.site_packages == t.site_packages) {
            out.push(t);
        }
    }
    out
}

/// A torch companion package (torchvision, torchaudio) installed next to torch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Companion {
    pub name: String,
    /// `0.21.0+cu124`: the package's `version.py`, else its dist-info directory's name.
    pub version: String,
    /// The CUDA of the `+cuXYZ` local version; None for a version without one.
    pub cuda: Option<CudaVersion>,
    pub evidence: Evidence,
}

/// The companions whose builds pair with one torch release and CUDA variant.
pub const COMPANION_PACKAGES: [&str; 2] = ["torchvision", "torchaudio"];

/// The torch companions installed in a site directory.
pub fn find_companions(reader: &dyn HostReader, site: &str) -> Vec<Companion> {
    let mut out = Vec::new();
    let mut listing: Option<Vec<(String, EntryKind)>> = None;
    for name in COMPANION_PACKAGES {
        let vp = format!("{site}/{name}/version.py");
        let from_py = reader
            .read_string(&vp)
            .and_then(|t| parse_version_py(&t).0)
            .map(|v| {
                (
                    v.clone(),
                    Evidence::file(&vp, format!("__version__ = {v:?}")),
                )
            });
        let found = from_py.or_else(|| {
            let entries = listing.get_or_insert_with(|| reader.list_dir(site).unwrap_or_default());
            entries.iter().find_map(|(e, _)| {
                let v = e
                    .strip_prefix(name)?
                    .strip_prefix('-')?
                    .strip_suffix(".dist-info")?;
                Some((
                    v.to_string(),
                    Evidence::file(format!("{site}/{e}"), format!("{name} {v}")),
                ))
            })
        });
        let Some((version, evidence)) = found else {
            continue;
        };
        let cuda = version
            .split_once('+')
            .and_then(|(_, local)| CudaVersion::from_cu_tag(local));
        out.push(Companion {
            name: name.to_string(),
            version,
            cuda,
            evidence,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_py() {
        let t = "__version__ = '2.11.0+cu130'\ndebug = False\ncuda: Optional[str] = '13.0'\nhip: Optional[str] = None\n";
        let (v, c, h) = parse_version_py(t);
        assert_eq!(v.as_deref(), Some("2.11.0+cu130"));
        assert_eq!(c.as_deref(), Some("13.0"));
        assert_eq!(h, None);
        let (_, c, _) = parse_version_py("__version__ = '2.1.0'\ncuda = None\n");
        assert_eq!(c, None);
    }
}

/// The ELF/fatbin reader of `crate::detect::elf`, seeking to the headers it needs
/// (libtorch_cuda.so is a GB, its fatbin entry headers a few MB).
#[derive(Debug, Default, Clone, Copy)]
pub struct ElfArchScanner;

/// Largest binary the scanner opens (libtorch_cuda.so is about 1 GB).
const MAX_BINARY_BYTES: u64 = 64 << 30;

impl ArchScanner for ElfArchScanner {
    fn scan(&self, local_path: &Path) -> Result<Option<BinaryArchs>, String> {
        // A regular file only: a FIFO planted as libtorch_cuda.so must not block the doctor.
        // Only headers are read, so the size bound is about sanity, not memory.
        let f = crate::io_util::open_regular(local_path, MAX_BINARY_BYTES)
            .map_err(|e| e.to_string())?;
        let size = f.metadata().map_err(|e| e.to_string())?.len();
        let facts = crate::detect::elf::scan_elf_at(&f, size)
            .map_err(|e| e.to_string())?
            .facts;
        Ok(crate::inventory::binary_from_elf(
            // A host path, shown like an in-image one (absolute, normalized).
            ImagePath::new(&local_path.to_string_lossy()).map_err(|e| e.to_string())?,
            None,
            &facts,
        )
        .filter(|b| b.has_device_code))
    }
}
