//! What kind of machine the host reader looks at: a Linux host (bare metal or VM) with its own
//! kernel driver, WSL2 (the Windows driver, served through `/dev/dxg` and `/usr/lib/wsl/lib`),
//! or the inside of a container. Checks declare where they apply
//! ([`crate::rules::host::RunsOn`]); this says where we are, with the evidence.

use super::evidence::Evidence;
use super::reader::HostReader;
use serde::Serialize;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct HostEnv {
    /// WSL2: the GPU driver is the Windows host's; there is no Linux nvidia module.
    pub wsl2: bool,
    /// Inside a container: "docker", "podman", "kubernetes", "containerd", "lxc" or
    /// "container" when only the kind of marker is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// The files and lines that said so.
    pub evidence: Vec<Evidence>,
}

impl HostEnv {
    /// "WSL2", "a docker container", "a Linux host".
    pub fn describe(&self) -> String {
        match (&self.container, self.wsl2) {
            (Some(c), true) => format!("a {c} container on WSL2"),
            (Some(c), false) => format!("a {c} container"),
            (None, true) => "WSL2".into(),
            (None, false) => "a Linux host".into(),
        }
    }
}

/// The cgroup path fragments container engines use, with the engine they name.
const CGROUP_MARKERS: &[(&str, &str)] = &[
    ("/kubepods", "kubernetes"),
    ("/docker/", "docker"),
    ("/docker-", "docker"),
    ("/libpod-", "podman"),
    ("/libpod_parent", "podman"),
    ("/containerd/", "containerd"),
    ("/cri-containerd-", "containerd"),
    ("/crio-", "cri-o"),
    ("/lxc/", "lxc"),
    ("/lxc.payload", "lxc"),
];

pub fn detect_env(r: &dyn HostReader) -> HostEnv {
    let mut env = HostEnv::default();
    // WSL2: the paravirtualized GPU device and the Windows driver's libraries.
    let dxg = r.exists("/dev/dxg");
    let wsl_lib = r.list_dir("/usr/lib/wsl/lib");
    if dxg {
        env.evidence.push(Evidence::file(
            "/dev/dxg",
            "present (WSL2 GPU paravirtualization)",
        ));
    }
    if let Some(libs) = &wsl_lib {
        env.evidence.push(Evidence::file(
            "/usr/lib/wsl/lib",
            libs.iter()
                .map(|(n, _)| n.as_str())
                .filter(|n| n.starts_with("lib") || *n == "nvidia-smi")
                .take(6)
                .collect::<Vec<_>>()
                .join(", ")
                .to_string(),
        ));
    }
    let kernel_says_wsl = r
        .read_string("/proc/version")
        .or_else(|| r.read_string("/proc/sys/kernel/osrelease"))
        .map(|v| {
            let l = v.to_ascii_lowercase();
            l.contains("microsoft") && l.contains("wsl")
        })
        .unwrap_or(false);
    if kernel_says_wsl {
        env.evidence
            .push(Evidence::file("/proc/version", "a Microsoft WSL kernel"));
    }
    env.wsl2 = dxg || (wsl_lib.is_some() && kernel_says_wsl);

    // Containers: the engines' marker files, then the cgroup of PID 1.
    if r.exists("/.dockerenv") {
        env.container = Some("docker".into());
        env.evidence.push(Evidence::file("/.dockerenv", "present"));
    } else if r.exists("/run/.containerenv") {
        env.container = Some("podman".into());
        env.evidence
            .push(Evidence::file("/run/.containerenv", "present"));
    }
    for path in ["/proc/1/cgroup", "/proc/self/cgroup"] {
        let Some(text) = r.read_string(path) else {
            continue;
        };
        let hit = text.lines().find_map(|l| {
            CGROUP_MARKERS
                .iter()
                .find(|(m, _)| l.contains(m))
                .map(|(_, engine)| (l.trim().to_string(), *engine))
        });
        if let Some((line, engine)) = hit {
            if env.container.is_none() || engine == "kubernetes" {
                env.container = Some(engine.to_string());
            }
            env.evidence.push(Evidence::file(path, line));
            break;
        }
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::reader::CapturedReader;

    fn env_of(files: &[(&str, &str)]) -> HostEnv {
        let dir = tempfile::tempdir().unwrap();
        for (p, t) in files {
            let f = dir.path().join(p.trim_start_matches('/'));
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, t).unwrap();
        }
        detect_env(&CapturedReader::new(dir.path()).unwrap())
    }

    #[test]
    fn linux_host_wsl2_and_containers() {
        assert_eq!(env_of(&[]).describe(), "a Linux host");
        assert_eq!(
            env_of(&[("/proc/1/cgroup", "0::/init.scope\n")]).container,
            None
        );
        let w = env_of(&[("/dev/dxg", ""), ("/usr/lib/wsl/lib/libcuda.so.1", "")]);
        assert!(w.wsl2 && w.container.is_none(), "{w:?}");
        // The WSL kernel alone (no GPU paravirtualization) is not taken for a GPU-less WSL2 unless
        // the Windows driver's libraries are there too.
        let k = env_of(&[(
            "/proc/version",
            "Linux version 5.15.167.4-microsoft-standard-WSL2 (root@f9c826d3017f)",
        )]);
        assert!(!k.wsl2);
        let d = env_of(&[("/.dockerenv", "")]);
        assert_eq!(d.container.as_deref(), Some("docker"));
        let p = env_of(&[("/run/.containerenv", "engine=\"podman-4.9\"\n")]);
        assert_eq!(p.container.as_deref(), Some("podman"));
        let k8s = env_of(&[(
            "/proc/1/cgroup",
            "12:devices:/kubepods/besteffort/pod1234/abcdef\n",
        )]);
        assert_eq!(k8s.container.as_deref(), Some("kubernetes"));
        assert!(
            k8s.evidence[0].text.contains("kubepods"),
            "{:?}",
            k8s.evidence
        );
    }
}
