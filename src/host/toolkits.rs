//! The CUDA toolkits installed on a host: /usr/local/cuda-X.Y trees (version.json,
//! version.txt or the directory name), Debian/Ubuntu's nvidia-cuda-toolkit (its nvcc's
//! banner) and directories the dpkg database names; and `nvcc --version`. Read once here
//! for the checks that compare releases (GL211, GL212), typed where the version is read.

use crate::host::evidence::Evidence;
use crate::host::parse;
use crate::host::parse::versions::toolkit_release;
use crate::host::reader::{HostCommand, HostReader};
use crate::version::CudaVersion;

/// An installed toolkit: dir, version (version.json / version.txt / the dir name).
#[derive(Debug, Clone)]
pub struct Toolkit {
    pub dir: String,
    pub version: Option<String>,
    /// `version`, typed.
    pub cuda: Option<CudaVersion>,
    pub evidence: Evidence,
}

pub fn toolkits(r: &dyn HostReader) -> Vec<Toolkit> {
    let mut out = Vec::new();
    for (name, _) in r.list_dir("/usr/local").unwrap_or_default() {
        let Some(v) = name.strip_prefix("cuda-") else {
            continue;
        };
        let dir = format!("/usr/local/{name}");
        // cuda-13 -> /etc/alternatives/cuda-13 style aliases are not installs.
        if r.read_link(&dir).is_some() {
            continue;
        }
        let (version, ev) = if let Some(j) = r
            .read_string(&format!("{dir}/version.json"))
            .as_deref()
            .and_then(parse::parse_cuda_version_json)
        {
            (
                Some(j.clone()),
                Evidence::file(format!("{dir}/version.json"), format!("cuda {j}")),
            )
        } else if let Some(t) = r
            .read_string(&format!("{dir}/version.txt"))
            .as_deref()
            .and_then(parse::parse_cuda_version_txt)
        {
            (
                Some(t.clone()),
                Evidence::file(format!("{dir}/version.txt"), t),
            )
        } else if v.split('.').all(|p| p.parse::<u32>().is_ok()) {
            (
                Some(v.to_string()),
                Evidence::file(&dir, "installed (version from the directory name)"),
            )
        } else {
            (None, Evidence::file(&dir, "installed, version unknown"))
        };
        out.push(Toolkit {
            dir,
            version,
            cuda: None,
            evidence: ev,
        });
    }
    distribution_toolkits(r, &mut out);
    // Typed once, where the version is read, for the checks that compare releases.
    for t in &mut out {
        t.cuda = t.version.as_deref().and_then(toolkit_release);
    }
    out
}

/// Toolkits distributions install without a version file, the same way the image inventory
/// finds them: Debian/Ubuntu's `nvidia-cuda-toolkit` in /usr/lib/nvidia-cuda-toolkit
/// (versioned by its nvcc's banner), and directories the dpkg database names
/// (`nvidia-cuda-toolkit`, `cuda-toolkit-X-Y`) whose version the tree did not give.
fn distribution_toolkits(r: &dyn HostReader, out: &mut Vec<Toolkit>) {
    use crate::detect::cuda_toolkit::{packaged_toolkits, scan_nvcc_banner};
    const DEBIAN_DIR: &str = "/usr/lib/nvidia-cuda-toolkit";
    // nvcc 13.5 is 35 MB with its banner near 30 MB: read it streamed, never whole.
    const NVCC_MAX_BYTES: u64 = 64 << 20;
    if r.list_dir(DEBIAN_DIR).is_some() {
        let nvcc = format!("{DEBIAN_DIR}/bin/nvcc");
        // Opened without following a final link and without blocking on a FIFO, through the
        // tree-resolved path, like the fatbin scanner's reads; its size is the scan's bound.
        let banner = crate::io_util::open_regular(&r.local_path(&nvcc), u64::MAX)
            .ok()
            .and_then(|f| scan_nvcc_banner(f, NVCC_MAX_BYTES));
        let (version, evidence) = match banner {
            Some(v) => (
                Some(v.version.clone()),
                Evidence::file(&nvcc, format!("Cuda compilation tools {}", v.version)),
            ),
            None => (
                None,
                Evidence::file(DEBIAN_DIR, "installed, version unknown"),
            ),
        };
        out.push(Toolkit {
            dir: DEBIAN_DIR.to_string(),
            version,
            cuda: None,
            evidence,
        });
    }
    let Some(status) = r.read("/var/lib/dpkg/status").ok().flatten() else {
        return;
    };
    let status = crate::detect::dpkg::parse_status(&status);
    for p in packaged_toolkits(&status) {
        let dir = format!("/{}", p.dir);
        match out.iter_mut().find(|t| t.dir == dir) {
            Some(t) if t.version.is_some() => {}
            Some(t) => {
                t.version = Some(p.version.clone());
                t.evidence = Evidence::file(&dir, &p.from);
            }
            // The package is installed but its directory is gone (removed by hand): nothing
            // there to load or run.
            None if !r.exists(&dir) => {}
            None => out.push(Toolkit {
                dir: dir.clone(),
                version: Some(p.version.clone()),
                cuda: None,
                evidence: Evidence::file(&dir, &p.from),
            }),
        }
    }
}

pub fn nvcc_version(r: &dyn HostReader) -> Option<String> {
    parse::parse_nvcc_version(r.run(HostCommand::NvccVersion).ok_stdout()?)
}

/// `nvcc --version`'s release as printed, and typed.
pub fn nvcc_release(r: &dyn HostReader) -> Option<(String, Option<CudaVersion>)> {
    let n = nvcc_version(r)?;
    let cuda = toolkit_release(&n);
    Some((n, cuda))
}
