//! Host checks (GL2xx), one file each: the field guides' GPU troubleshooting checklist, layer
//! by layer (hardware → driver → device nodes → CUDA toolkit → container wiring → Python
//! frameworks). Each check reads through a [`HostReader`], never changes the host, and
//! returns [`CheckResult`]s: ok, problem (with a severity) or could-not-check, each with
//! the evidence lines it saw and the fix.

pub mod gl201_gpu_not_visible;
pub mod gl202_nouveau_loaded;
pub mod gl203_nvidia_module_not_loaded;
pub mod gl204_driver_version_mismatch;
pub mod gl205_kernel_module_flavor_unsupported;
pub mod gl206_module_not_built_for_kernel;
pub mod gl207_device_nodes_unusable;
pub mod gl208_persistence_mode_off;
pub mod gl209_mig_misconfigured;
pub mod gl210_gpu_unhealthy;
pub mod gl211_cuda_toolkit_conflict;
pub mod gl212_driver_older_than_toolkit;
pub mod gl213_container_toolkit_missing;
pub mod gl214_nvml_unknown_error_risk;
pub mod gl215_torch_mismatch;

use crate::finding::{Finding, Location, Severity};
use crate::host::knowledge::{Knowledge, NoKnowledge};
use crate::host::parse::{self, smi};
use crate::host::profile::HostProfile;
use crate::host::python::ArchScanner;
use crate::host::reader::{HostCommand, HostReader};
use crate::rule_meta::{Code, RuleMeta};
use serde::Serialize;

/// Outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CheckStatus {
    Ok,
    Problem,
    CouldNotCheck,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckResult {
    /// GL2xx code; `rule` in JSON, as in every finding.
    #[serde(rename = "rule")]
    pub id: Code,
    /// Kebab-case rule name.
    pub name: String,
    pub status: CheckStatus,
    /// For problems: how bad. Ok and could-not-check results are `info`.
    pub severity: Severity,
    pub message: String,
    /// File lines or command output lines that the verdict rests on, each prefixed with
    /// where it came from.
    pub evidence: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl CheckResult {
    fn new(meta: &RuleMeta, status: CheckStatus, message: impl Into<String>) -> Self {
        CheckResult {
            id: meta.code,
            name: meta.name.into(),
            status,
            severity: if status == CheckStatus::Problem {
                meta.default_severity
            } else {
                Severity::Info
            },
            message: message.into(),
            evidence: Vec::new(),
            fix: None,
        }
    }
    pub(crate) fn ok(meta: &RuleMeta, message: impl Into<String>) -> Self {
        Self::new(meta, CheckStatus::Ok, message)
    }
    pub(crate) fn problem(meta: &RuleMeta, message: impl Into<String>) -> Self {
        Self::new(meta, CheckStatus::Problem, message)
    }
    pub(crate) fn could_not(meta: &RuleMeta, message: impl Into<String>) -> Self {
        Self::new(meta, CheckStatus::CouldNotCheck, message)
    }
    pub(crate) fn severity(mut self, s: Severity) -> Self {
        self.severity = s;
        self
    }
    pub(crate) fn evidence(mut self, e: impl IntoIterator<Item = String>) -> Self {
        self.evidence.extend(e);
        self
    }
    pub(crate) fn fix(mut self, f: impl Into<String>) -> Self {
        self.fix = Some(f.into());
        self
    }
}

/// What the checks may use beyond the reader and the profile.
pub struct CheckOptions<'a> {
    pub knowledge: &'a dyn Knowledge,
    /// `--python PATH` values; empty = the interpreters on PATH.
    pub pythons: Vec<String>,
    /// The fatbin reader for torch's arch list; None = arch lists cannot be read.
    pub scanner: Option<&'a dyn ArchScanner>,
}

impl Default for CheckOptions<'_> {
    fn default() -> Self {
        CheckOptions {
            knowledge: &NoKnowledge,
            pythons: Vec::new(),
            scanner: None,
        }
    }
}

pub struct Ctx<'a> {
    pub reader: &'a dyn HostReader,
    pub profile: &'a HostProfile,
    pub opts: &'a CheckOptions<'a>,
}

/// A host check: reads through the context's reader, returns one or more results.
pub type HostCheck = fn(&Ctx) -> Vec<CheckResult>;

fn no_gpu_host(cx: &Ctx) -> bool {
    if !cx.profile.gpus.is_empty() || cx.profile.driver.is_some() {
        return false;
    }
    let r = cx.reader;
    let Some(devs) = r.list_dir("/sys/bus/pci/devices") else {
        return false;
    };
    !devs.iter().any(|(bus, _)| {
        let base = format!("/sys/bus/pci/devices/{bus}");
        r.read_string(&format!("{base}/vendor"))
            .map(|v| v.trim() == "0x10de")
            .unwrap_or(false)
    })
}

/// Run every check, in code order.
pub fn run_checks_with(
    reader: &dyn HostReader,
    profile: &HostProfile,
    opts: &CheckOptions,
) -> Vec<CheckResult> {
    let cx = Ctx {
        reader,
        profile,
        opts,
    };
    let no_gpu = no_gpu_host(&cx);
    crate::rules::host_checks()
        .flat_map(|(meta, check, needs_gpu)| {
            if no_gpu && needs_gpu {
                return vec![CheckResult::ok(
                    meta,
                    "not applicable: no NVIDIA device on the PCI bus and no NVIDIA driver",
                )];
            }
            check(&cx)
        })
        .collect()
}

/// Problems become findings at their severity; could-not-check results become `info`
/// findings; ok results are dropped.
/// The configuration post-pass for host checks, by the policy every command shares
/// ([`crate::suppress::config_verdict`]): a disabled or ignored rule's results are dropped, and
/// a problem takes the configured severity.
pub fn apply_config(results: Vec<CheckResult>, config: &crate::config::Config) -> Vec<CheckResult> {
    use crate::suppress::{config_verdict, ConfigVerdict};
    results
        .into_iter()
        .filter_map(
            |mut r| match config_verdict(config, &r.id, r.severity, None) {
                ConfigVerdict::Keep(s) => {
                    if r.status == CheckStatus::Problem {
                        r.severity = s;
                    }
                    Some(r)
                }
                ConfigVerdict::Disabled | ConfigVerdict::Ignored(_) => None,
            },
        )
        .collect()
}

/// Whether a check found a problem of at least `fail_on`: a check that could not run says
/// nothing about the host, so it never fails the run.
pub fn fails(results: &[CheckResult], fail_on: crate::finding::FailOn) -> bool {
    let Some(threshold) = fail_on.threshold() else {
        return false;
    };
    results
        .iter()
        .any(|r| r.status == CheckStatus::Problem && r.severity >= threshold)
}

pub fn check_findings(results: &[CheckResult]) -> Vec<Finding> {
    let mut out = Vec::new();
    for r in results {
        let Some(meta) = crate::rules::find_code(r.id) else {
            continue;
        };
        let (sev, msg) = match r.status {
            CheckStatus::Ok => continue,
            CheckStatus::Problem => (r.severity, r.message.clone()),
            CheckStatus::CouldNotCheck => {
                (Severity::Info, format!("could not check: {}", r.message))
            }
        };
        let mut f = meta.finding(msg).with_severity(sev).with_target("host");
        if let Some(fix) = &r.fix {
            f = f.with_help(fix.clone());
        }
        // The first evidence line that names a file becomes the location.
        if let Some(file) = r.evidence.iter().find_map(|e| {
            e.split_once(": ")
                .map(|(a, _)| a)
                .filter(|a| a.starts_with('/'))
        }) {
            f = f.with_location(Location {
                file: Some(file.to_string()),
                ..Default::default()
            });
        }
        out.push(f);
    }
    out.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    out
}

/// Readable report: one block per result.
pub fn render_checks_text(results: &[CheckResult]) -> String {
    let mut s = String::new();
    let (mut ok, mut prob, mut cnc) = (0, 0, 0);
    for r in results {
        let tag = match r.status {
            CheckStatus::Ok => {
                ok += 1;
                "ok".to_string()
            }
            CheckStatus::Problem => {
                prob += 1;
                r.severity.to_string()
            }
            CheckStatus::CouldNotCheck => {
                cnc += 1;
                "could not check".to_string()
            }
        };
        // Messages, evidence and fixes quote host files and command output: each stays one
        // line, its control characters escaped, so none can forge an "[ok]" line.
        use crate::report::escape::field;
        s.push_str(&format!(
            "[{tag}] {} {}: {}\n",
            r.id,
            r.name,
            field(&r.message)
        ));
        for e in &r.evidence {
            s.push_str(&format!("    | {}\n", field(e)));
        }
        if r.status != CheckStatus::Ok {
            if let Some(f) = &r.fix {
                s.push_str(&format!("    fix: {}\n", field(f)));
            }
        }
    }
    s.push_str(&format!(
        "\n{} results: {ok} ok, {prob} problems, {cnc} could not check\n",
        results.len()
    ));
    s
}

// ---- shared readers for the checks ----

/// Loaded module names: /proc/modules, else /sys/module entries. With the source path.
pub(crate) fn loaded_modules(r: &dyn HostReader) -> Option<(Vec<String>, &'static str)> {
    if let Some(t) = r.read_string("/proc/modules") {
        return Some((parse::parse_modules(&t), "/proc/modules"));
    }
    let v = r.list_dir("/sys/module")?;
    Some((v.into_iter().map(|(n, _)| n).collect(), "/sys/module"))
}

pub(crate) fn proc_version(r: &dyn HostReader) -> Option<parse::ProcVersion> {
    parse::parse_proc_version(&r.read_string("/proc/driver/nvidia/version")?)
}

/// nvidia-smi's detailed report: `-q -x`, else `-q`. With the command shown.
pub(crate) fn smi_report(r: &dyn HostReader) -> Option<(smi::SmiReport, String)> {
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
pub(crate) fn identity(r: &dyn HostReader) -> Option<crate::host::reader::Identity> {
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

/// Directories the dynamic loader searches, from /etc/ld.so.conf (+ includes), in order,
/// each with the file that named it.
pub(crate) fn ld_so_conf_dirs(r: &dyn HostReader) -> Vec<(String, String)> {
    let mut out = Vec::new();
    fn visit(r: &dyn HostReader, file: &str, out: &mut Vec<(String, String)>, depth: u32) {
        if depth > 4 {
            return;
        }
        let Some(t) = r.read_string(file) else {
            return;
        };
        let (dirs, includes) = parse::parse_ld_so_conf(&t);
        for inc in includes {
            // Only `dir/*.conf`-style globs, which is what distributions use.
            let (dir, pat) = match inc.rsplit_once('/') {
                Some((d, p)) => (d.to_string(), p.to_string()),
                None => ("/etc".to_string(), inc.clone()),
            };
            let suffix = pat.trim_start_matches('*').to_string();
            for (name, _) in r.list_dir(&dir).unwrap_or_default() {
                if (pat.contains('*') && name.ends_with(&suffix)) || name == pat {
                    visit(r, &format!("{dir}/{name}"), out, depth + 1);
                }
            }
        }
        for d in dirs {
            out.push((d, file.to_string()));
        }
    }
    visit(r, "/etc/ld.so.conf", &mut out, 0);
    if out.is_empty() {
        // Some systems have only the .d directory.
        for (name, _) in r.list_dir("/etc/ld.so.conf.d").unwrap_or_default() {
            if name.ends_with(".conf") {
                visit(r, &format!("/etc/ld.so.conf.d/{name}"), &mut out, 1);
            }
        }
    }
    out
}

/// First line of the output for messages.
pub(crate) fn first_line(s: &str) -> String {
    s.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Natural order of version-like strings ("6.8.0-45" < "6.8.0-100").
pub(crate) fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    let split = |s: &str| -> Vec<(u64, String)> {
        s.split(|c: char| !c.is_ascii_alphanumeric())
            .map(|p| (p.parse::<u64>().unwrap_or(0), p.to_string()))
            .collect()
    };
    split(a).cmp(&split(b))
}

#[cfg(test)]
pub(crate) mod testutil;

#[cfg(test)]
mod tests;
