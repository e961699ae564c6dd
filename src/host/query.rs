//! What several host checks ask of a host, read one way for all of them: the loaded modules,
//! the driver's version file, nvidia-smi's report, the invoking user, the loader and modprobe
//! configuration, and the loader setting every library lookup starts from.

use super::parse::versions::driver_lib_version;
use super::parse::{self, smi, Identity};
use super::profile::HostProfile;
use super::reader::{EntryKind, HostCommand, HostFs, HostReader};
use crate::loader::LoadRequest;
use crate::version::DriverVersion;

/// Loaded module names: /proc/modules, else /sys/module entries. With the source path.
pub fn loaded_modules(r: &dyn HostReader) -> Option<(Vec<String>, &'static str)> {
    if let Some(t) = r.read_string("/proc/modules") {
        return Some((parse::parse_modules(&t), "/proc/modules"));
    }
    let v = r.list_dir("/sys/module")?;
    Some((v.into_iter().map(|(n, _)| n).collect(), "/sys/module"))
}

pub fn proc_version(r: &dyn HostReader) -> Option<parse::ProcVersion> {
    parse::parse_proc_version(&r.read_string("/proc/driver/nvidia/version")?)
}

/// The driver version nvidia-smi reports: the `--query-gpu` CSV, else the `-q -x` report.
pub fn smi_driver_version(r: &dyn HostReader) -> Option<crate::version::DriverVersion> {
    r.run(HostCommand::NvidiaSmiQueryGpu)
        .ok_stdout()
        .and_then(|o| {
            smi::parse_query_csv(o)
                .into_iter()
                .find_map(|g| g.driver_version)
        })
        .or_else(|| {
            r.run(HostCommand::NvidiaSmiQx)
                .ok_stdout()
                .and_then(|o| smi::parse_xml(o).driver_version)
        })
        .and_then(|v| parse::versions::driver_version(&v))
}

/// nvidia-smi's detailed report: `-q -x`, else `-q`. With the command shown.
pub fn smi_report(r: &dyn HostReader) -> Option<(smi::SmiReport, String)> {
    if let Some(o) = r.run(HostCommand::NvidiaSmiQx).ok_stdout() {
        let rep = smi::parse_xml(o);
        if rep.driver_version.is_some() || !rep.gpus.is_empty() {
            return Some((rep, HostCommand::NvidiaSmiQx.display()));
        }
    }
    let o = r.run(HostCommand::NvidiaSmiQ);
    let rep = smi::parse_q_text(o.ok_stdout()?);
    Some((rep, HostCommand::NvidiaSmiQ.display()))
}

/// The invoking user: live `/proc/self/status`, else the `id` capture/command.
pub fn identity(r: &dyn HostReader) -> Option<Identity> {
    if r.is_live() {
        if let Some(i) = r
            .read_string("/proc/self/status")
            .as_deref()
            .and_then(parse::parse_proc_status)
        {
            return Some(i);
        }
    }
    parse::parse_id(r.run(HostCommand::Id).ok_stdout()?)
}

/// Directories the dynamic loader searches, from /etc/ld.so.conf (+ includes; only the .d
/// directory where the file is missing), in order, each with the file that named it: the one
/// loader model ([`crate::loader::system_search_dirs`]) over the host reader.
pub fn ld_so_conf_dirs(r: &dyn HostReader) -> Vec<(String, String)> {
    crate::loader::system_search_dirs(&HostFs(r))
}

/// The modprobe configuration files (`*.conf` and the rest modprobe reads) with their text,
/// from every directory modprobe.d(5) names, in that order.
pub fn modprobe_files(r: &dyn HostReader) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for dir in [
        "/etc/modprobe.d",
        "/usr/lib/modprobe.d",
        "/lib/modprobe.d",
        "/run/modprobe.d",
    ] {
        // modprobe skips subdirectories; every other entry it reads.
        for (name, kind) in r.list_dir(dir).unwrap_or_default() {
            if kind == EntryKind::Dir {
                continue;
            }
            let p = format!("{dir}/{name}");
            if let Some(t) = r.read_string(&p) {
                out.push((p, t));
            }
        }
    }
    out
}

/// What decides where the host's dynamic loader finds a library, beyond the binary's own
/// DT_RPATH/DT_RUNPATH: built once per run from the profile and the invoking environment, so
/// every check searches the way this host's ld.so does. ld.so.conf is not held here: each check
/// reads it when it asks (through the reader), so a check that needed an unreadable one is the
/// one that could not check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoaderSetting {
    /// LD_LIBRARY_PATH of the invoking environment.
    pub ld_library_path: Option<String>,
    /// The host's ELF machine (`x86_64`, `aarch64`): its multiarch default directories.
    pub machine: String,
}

impl LoaderSetting {
    pub fn new(reader: &dyn HostReader, profile: &HostProfile) -> Self {
        LoaderSetting {
            ld_library_path: reader.env("LD_LIBRARY_PATH"),
            machine: host_machine(reader, profile),
        }
    }

    /// The request for a binary in `origin` with these DT_RUNPATH entries, under this host's
    /// loader setting and the ld.so.conf directories `ld_so_conf`.
    pub fn request<'a>(
        &'a self,
        origin: &'a str,
        runpath: &'a [String],
        ld_so_conf: &'a [String],
    ) -> LoadRequest<'a> {
        LoadRequest {
            origin,
            rpath: &[],
            runpath,
            ld_library_path: self.ld_library_path.as_deref(),
            ld_so_conf,
            machine: &self.machine,
        }
    }
}

/// The ELF machine name of the host the profile describes (its `uname -m`, kept in OCI naming
/// in the profile): never the machine gpulint was built for, which judges a captured aarch64
/// host by x86_64's directories. Unknown (no `uname -m`) on a live host is this machine; in a
/// captured tree it stays empty (the loader model's default).
fn host_machine(reader: &dyn HostReader, profile: &HostProfile) -> String {
    match profile.platform.as_ref().map(|p| p.architecture.as_str()) {
        Some("amd64") => "x86_64".into(),
        Some("arm64") => "aarch64".into(),
        Some(other) => other.into(),
        None if reader.is_live() => std::env::consts::ARCH.into(),
        None => String::new(),
    }
}

/// Where driver user-space libraries are installed (besides ld.so.conf's directories).
const LIB_DIRS: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/lib/x86_64-linux-gnu",
    "/lib64",
    "/usr/local/nvidia/lib64",
];

/// `libnvidia-ml.so.<ver>` / `libcuda.so.<ver>` regular files in the library directories
/// (not stubs, not the cuda-compat package).
pub fn user_space_versions(r: &dyn HostReader) -> Vec<(String, DriverVersion)> {
    let mut dirs: Vec<String> = LIB_DIRS.iter().map(|s| s.to_string()).collect();
    for (d, _) in ld_so_conf_dirs(r) {
        if !dirs.contains(&d) {
            dirs.push(d);
        }
    }
    let mut out = Vec::new();
    for d in dirs {
        if d.contains("/compat") || d.contains("/stubs") {
            continue;
        }
        for (name, _) in r.list_dir(&d).unwrap_or_default() {
            if let Some(dv) = driver_lib_version(&name) {
                out.push((format!("{d}/{name}"), dv));
            }
        }
    }
    out
}
