//! Host checks (GL2xx), one file each: the field guides' GPU troubleshooting checklist, layer
//! by layer (hardware → driver → device nodes → CUDA toolkit → container wiring → Python
//! frameworks). Each check reads through the [`HostContext`]'s [`HostReader`], never changes
//! the host, and pushes [`CheckResult`]s: ok, problem (with a severity) or could-not-check,
//! each with the evidence lines it saw and the fix. What several checks read alike (loaded
//! modules, nvidia-smi's report, the loader setting) is read in [`crate::host::query`].

mod gl201_driver_predates_gpu;
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
pub mod gl216_container_without_gpus;
pub mod gl217_gpu_throttled;
pub mod gl218_visible_devices_invalid;
pub mod gl219_cuda_libs_shadow_torch;
pub mod gl220_gpu_bar_unassigned;
pub mod gl230_driver_install_mixed;
pub mod gl240_ld_library_path_export_shadows_torch;
pub mod gl241_torch_companion_mismatch;
pub mod gl242_gpus_across_numa_nodes;
pub mod gl243_gpu_bar1_small;

use crate::finding::{Finding, Location, Severity};
use crate::host::env::{detect_env, HostEnv};
use crate::host::evidence::Evidence;
use crate::host::profile::HostProfile;
use crate::host::python::ArchScanner;
use crate::host::query::LoaderSetting;
use crate::host::reader::HostReader;
use crate::matrix::Facts;
use crate::rule_meta::{Code, RuleMeta};
use serde::Serialize;

/// Outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CheckStatus {
    Ok,
    Problem,
    CouldNotCheck,
    /// A problem whose cause another check reported (`explained_by`): shown as evidence under
    /// that cause, never as an error of its own.
    Explained,
    /// The check does not apply here (no GPU, inside a container, WSL2): it did not run, so
    /// it is not "ok" either.
    Skipped,
}

/// One check's answer: its status, and what it reports as the one type every rule family
/// reports a problem with ([`Finding`]: rule, name, severity, message, the fix as `help`, the
/// host as target, the first file its evidence quotes as location), with that evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckResult {
    pub status: CheckStatus,
    /// For problems the severity is how bad; ok and could-not-check results are `info`.
    pub finding: Finding,
    /// File lines or command output lines that the verdict rests on, each with where it
    /// came from (shown as its prefix).
    pub evidence: Vec<Evidence>,
    /// For `explained` results: the check whose problem is the cause.
    pub explained_by: Option<Code>,
    /// Could not check because evidence that is there could not be read (not because it is
    /// absent): the input is incomplete ([`unreadable_input_findings`]).
    pub unreadable_evidence: bool,
}

/// JSON `details.checks[]`: the finding's fields flat, with the status, the evidence lines and
/// the fix as `fix`.
impl Serialize for CheckResult {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let f = &self.finding;
        let mut st = s.serialize_struct("CheckResult", 9)?;
        st.serialize_field("rule", &f.rule)?;
        st.serialize_field("name", &f.name)?;
        st.serialize_field("status", &self.status)?;
        st.serialize_field("severity", &f.severity)?;
        st.serialize_field("message", &f.message)?;
        st.serialize_field("evidence", &self.evidence)?;
        match &f.help {
            Some(fix) => st.serialize_field("fix", fix)?,
            None => st.skip_field("fix")?,
        }
        match &self.explained_by {
            Some(c) => st.serialize_field("explained_by", c)?,
            None => st.skip_field("explained_by")?,
        }
        if self.unreadable_evidence {
            st.serialize_field("unreadable_evidence", &true)?;
        } else {
            st.skip_field("unreadable_evidence")?;
        }
        st.end()
    }
}

impl CheckResult {
    fn new(meta: &'static RuleMeta, status: CheckStatus, message: impl Into<String>) -> Self {
        let severity = if status == CheckStatus::Problem {
            meta.default_severity
        } else {
            Severity::Info
        };
        CheckResult {
            status,
            finding: meta
                .finding(message)
                .with_severity(severity)
                .with_target("host"),
            evidence: Vec::new(),
            explained_by: None,
            unreadable_evidence: false,
        }
    }
    pub(crate) fn ok(meta: &'static RuleMeta, message: impl Into<String>) -> Self {
        Self::new(meta, CheckStatus::Ok, message)
    }
    pub(crate) fn problem(meta: &'static RuleMeta, message: impl Into<String>) -> Self {
        Self::new(meta, CheckStatus::Problem, message)
    }
    /// One problem result for several problems found by one check: their messages joined
    /// with `; ` (after `prefix: ` when there is one), at the worst of their severities.
    /// `problems` must not be empty.
    pub(crate) fn problems(
        meta: &'static RuleMeta,
        prefix: &str,
        problems: &[(String, Severity)],
    ) -> Self {
        let joined = problems
            .iter()
            .map(|(m, _)| m.as_str())
            .collect::<Vec<_>>()
            .join("; ");
        let message = if prefix.is_empty() {
            joined
        } else {
            format!("{prefix}: {joined}")
        };
        let worst = problems.iter().map(|(_, s)| *s).max();
        Self::problem(meta, message).severity(worst.unwrap_or(meta.default_severity))
    }
    pub(crate) fn skipped(meta: &'static RuleMeta, why: impl Into<String>) -> Self {
        Self::new(meta, CheckStatus::Skipped, why)
    }
    pub(crate) fn could_not(meta: &'static RuleMeta, message: impl Into<String>) -> Self {
        Self::new(meta, CheckStatus::CouldNotCheck, message)
    }
    pub(crate) fn severity(mut self, s: Severity) -> Self {
        self.finding.severity = s;
        self
    }
    pub(crate) fn evidence(mut self, e: impl IntoIterator<Item = Evidence>) -> Self {
        self.evidence.extend(e);
        // The first file the verdict quotes is where the finding points.
        if self.finding.location.is_none() {
            if let Some(file) = self.evidence.iter().find_map(Evidence::file_path) {
                self.finding.location = Some(Location {
                    file: Some(file.to_string()),
                    ..Default::default()
                });
            }
        }
        self
    }
    pub(crate) fn fix(mut self, f: impl Into<String>) -> Self {
        self.finding.help = Some(f.into());
        self
    }
    fn unreadable(mut self, on: bool) -> Self {
        self.unreadable_evidence = on;
        self
    }
}

/// What the checks may use beyond the reader and the profile.
pub struct CheckOptions<'a> {
    pub facts: &'a Facts,
    /// `--python PATH` values; empty = the interpreters on PATH.
    pub pythons: Vec<String>,
    /// The fatbin reader for torch's arch list; None = arch lists cannot be read.
    pub scanner: Option<&'a dyn ArchScanner>,
}

impl Default for CheckOptions<'_> {
    fn default() -> Self {
        CheckOptions {
            facts: Facts::unknown(),
            pythons: Vec::new(),
            scanner: None,
        }
    }
}

/// What a host check judges, and with what: the shape every rule family's context has (the
/// subject, then the knowledge under `facts`).
pub struct HostContext<'a> {
    pub reader: &'a dyn HostReader,
    pub profile: &'a HostProfile,
    /// Linux host, WSL2 or container.
    pub env: &'a HostEnv,
    pub options: &'a CheckOptions<'a>,
    pub facts: &'a Facts,
    /// Where this host's loader looks for libraries (its platform, LD_LIBRARY_PATH): built
    /// once from the profile for every check that asks where a library loads from.
    pub loader: LoaderSetting,
    /// [`HostContext::driver_cuda`], worked out once: GL212 and GL215 (per torch install) ask,
    /// and without nvidia-smi the answer lists the library directories.
    pub(crate) driver_cuda_once: std::cell::OnceCell<Option<DriverCuda>>,
}

/// The CUDA version the driver supports, and what says so.
pub(crate) struct DriverCuda {
    pub cuda: crate::version::CudaVersion,
    pub driver: Option<crate::version::DriverVersion>,
    /// Where the driver version came from when the profile lacked it (the user-space library).
    pub evidence: Option<Evidence>,
}

impl HostContext<'_> {
    /// nvidia-smi's "CUDA Version", else the driver matrix for the driver version of the
    /// profile, else for the version in the name of the installed `libnvidia-ml.so.<ver>` /
    /// `libcuda.so.<ver>` (nvidia-smi missing and /proc/driver/nvidia unreadable, as in a
    /// container or with the module unloaded: the library still pins the driver).
    pub(crate) fn driver_cuda(&self) -> Option<&DriverCuda> {
        self.driver_cuda_once
            .get_or_init(|| self.read_driver_cuda())
            .as_ref()
    }

    fn read_driver_cuda(&self) -> Option<DriverCuda> {
        let driver = self.profile.driver.clone();
        if let Some(cuda) = self.profile.driver_cuda.or_else(|| {
            driver
                .as_ref()
                .and_then(|d| self.facts.max_cuda_for_driver(d).map(|c| c.value))
        }) {
            return Some(DriverCuda {
                cuda,
                driver,
                evidence: None,
            });
        }
        if driver.is_some() {
            return None;
        }
        let libs = crate::host::query::user_space_versions(self.reader);
        // Only when every installed user-space library names the same driver: two versions
        // leave it unknown which one a program loads.
        let (path, v) = libs.first()?;
        if libs.iter().any(|(_, o)| o != v) {
            return None;
        }
        let cuda = self.facts.max_cuda_for_driver(v)?.value;
        Some(DriverCuda {
            cuda,
            driver: Some(v.clone()),
            evidence: Some(Evidence::file(
                path,
                format!("user-space driver {v} (no nvidia-smi, no /proc/driver/nvidia/version)"),
            )),
        })
    }
}

/// Where a host check applies; elsewhere it reports "not applicable" (ok) instead of judging
/// what it cannot see or offering fixes that cannot help there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunsOn {
    /// On a machine without an NVIDIA GPU or driver.
    pub without_gpu: bool,
    /// On WSL2 (the Windows driver; no Linux nvidia module, no /dev/nvidia*).
    pub wsl2: bool,
    /// Inside a container (the host's kernel, boot and engine configuration are out of reach).
    pub container: bool,
}

impl RunsOn {
    pub const ANYWHERE: RunsOn = RunsOn {
        without_gpu: true,
        wsl2: true,
        container: true,
    };
    /// Needs an NVIDIA GPU; anywhere one is.
    pub const GPU: RunsOn = RunsOn {
        without_gpu: false,
        wsl2: true,
        container: true,
    };
    /// Needs the Linux kernel driver (modules, /dev/nvidia* nodes): not on WSL2.
    pub const GPU_LINUX_DRIVER: RunsOn = RunsOn {
        without_gpu: false,
        wsl2: false,
        container: true,
    };
    /// The host's own kernel and boot setup: neither WSL2 nor inside a container.
    pub const GPU_HOST_KERNEL: RunsOn = RunsOn {
        without_gpu: false,
        wsl2: false,
        container: false,
    };
    /// Host-side container engine setup: not inside a container.
    pub const GPU_NOT_IN_CONTAINER: RunsOn = RunsOn {
        without_gpu: true,
        wsl2: true,
        container: false,
    };
    /// The PCI bus vs the kernel driver: a bare-metal host or VM only.
    pub const BARE_METAL_OR_VM: RunsOn = RunsOn {
        without_gpu: true,
        wsl2: false,
        container: false,
    };

    /// For the rule docs.
    pub fn describe(&self) -> String {
        let mut not = Vec::new();
        if !self.without_gpu {
            not.push("on a machine without an NVIDIA GPU");
        }
        if !self.wsl2 {
            not.push("on WSL2");
        }
        if !self.container {
            not.push("inside a container");
        }
        if not.is_empty() {
            "runs everywhere".into()
        } else {
            format!("not applicable {}", not.join(", "))
        }
    }

    /// Why the check does not apply in `env`, if it does not.
    fn skip_reason(&self, no_gpu: bool, env: &HostEnv) -> Option<String> {
        if no_gpu && !self.without_gpu {
            return Some(
                "not applicable: no NVIDIA device on the PCI bus and no NVIDIA driver".into(),
            );
        }
        if let Some(engine) = &env.container {
            if !self.container {
                return Some(format!(
                    "not applicable inside a {engine} container: this is the host's setup; run \
                     `gpulint host --check` on the host"
                ));
            }
        }
        if env.wsl2 && !self.wsl2 {
            return Some(
                "not applicable on WSL2: the GPU driver is the Windows host's (no Linux nvidia \
                 module, no /dev/nvidia* nodes)"
                    .into(),
            );
        }
        None
    }
}

/// A host check: reads through the context's reader and pushes one or more results.
pub type HostCheck = fn(&HostContext<'_>, &mut Vec<CheckResult>);

fn no_gpu_host(cx: &HostContext<'_>) -> bool {
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
    let env = detect_env(reader);
    let cx = HostContext {
        reader,
        profile,
        env: &env,
        options: opts,
        facts: opts.facts,
        loader: LoaderSetting::new(reader, profile),
        driver_cuda_once: Default::default(),
    };
    let no_gpu = no_gpu_host(&cx);
    // What the profile, the environment and the GPU-less test could not read: every check
    // (and whether it applies at all) rests on those.
    let shared = reader.unreadable();
    let mut results: Vec<CheckResult> = crate::rules::host_checks()
        .flat_map(|(meta, check, runs_on)| {
            let before = reader.unreadable().len();
            let mut results = Vec::new();
            match runs_on.skip_reason(no_gpu, &env) {
                Some(why) => results.push(CheckResult::skipped(meta, why)),
                None => check(&cx, &mut results),
            }
            let mut unread = shared.clone();
            unread.extend(reader.unreadable().into_iter().skip(before));
            if unread.is_empty() {
                results
            } else {
                vec![could_not_read(meta, &unread)]
            }
        })
        .collect();
    fold_consequences(&mut results);
    results
}

/// The one answer of a check whose evidence was there but could not be read: whatever it
/// concluded rested on a guess (an unreadable `vendor` is no GPU, an unreadable
/// `libtorch_cuda.so` a missing one), so it is "could not check", naming each file and why.
fn could_not_read(
    meta: &'static RuleMeta,
    unread: &[crate::host::reader::Unreadable],
) -> CheckResult {
    let seen = distinct(unread);
    let first = seen[0];
    let more = match seen.len() {
        1 => String::new(),
        n => format!(" (and {} more)", n - 1),
    };
    CheckResult::could_not(
        meta,
        format!(
            "{} is there but could not be read ({}){more}",
            first.path, first.error
        ),
    )
    .evidence(
        seen.iter()
            .map(|u| Evidence::file(&u.path, format!("could not be read: {}", u.error))),
    )
    .fix("Make the file readable by the user gpulint runs as (a regular file, not a FIFO, device or directory), or capture it again; then rerun.")
    .unreadable(true)
}

/// Each unreadable file once, in the order first met (the reader logs every attempt).
fn distinct(unread: &[crate::host::reader::Unreadable]) -> Vec<&crate::host::reader::Unreadable> {
    let mut seen = Vec::new();
    for u in unread {
        if !seen.contains(&u) {
            seen.push(u);
        }
    }
    seen
}

/// Fail closed, as for an image: when a check (one the configuration kept) could not read
/// evidence that is there, the input was incomplete, and each file that could not be read
/// is a GL000 finding naming it: an error (the run exits 2), or with `--allow-partial` a
/// warning that `--fail-on` judges. Empty when the input was complete (absent files are
/// evidence, not incomplete input).
pub fn unreadable_input_findings(
    results: &[CheckResult],
    unread: &[crate::host::reader::Unreadable],
    allow_partial: bool,
) -> Vec<Finding> {
    if !results.iter().any(|r| r.unreadable_evidence) {
        return Vec::new();
    }
    distinct(unread)
        .into_iter()
        .map(|u| {
            crate::rules::image::gl000_unreadable_input::META
                .finding(format!(
                    "part of the host could not be read, the result is partial: {}: {}",
                    u.path, u.error
                ))
                .with_severity(if allow_partial {
                    Severity::Warning
                } else {
                    Severity::Error
                })
                .with_help(if allow_partial {
                    "Best effort (--allow-partial): the checks that needed this file could not check."
                } else {
                    "Make the file readable (a regular file under 16 MiB) or capture it again; pass --allow-partial to judge what could be read."
                })
                .with_target("host")
                .with_location(Location {
                    file: Some(u.path.clone()),
                    ..Default::default()
                })
        })
        .collect()
}

/// One root cause, one error. A problem that another problem explains (the rule table's
/// `explains`, with a severity at least as high) becomes `explained`: its message moves under
/// the root cause as evidence, and its own fix, which would treat a symptom, is not shown.
/// Chains resolve to the root (nouveau → module not loaded → device nodes missing).
pub fn fold_consequences(results: &mut [CheckResult]) {
    let direct_cause = |results: &[CheckResult], i: usize| -> Option<usize> {
        let r = &results[i];
        if r.status != CheckStatus::Problem {
            return None;
        }
        results.iter().position(|c| {
            c.status == CheckStatus::Problem
                && c.finding.rule != r.finding.rule
                && c.finding.severity >= r.finding.severity
                && crate::rules::host_explains(c.finding.rule).contains(&r.finding.rule)
        })
    };
    let causes: Vec<Option<usize>> = (0..results.len())
        .map(|i| direct_cause(results, i))
        .collect();
    let mut moves = Vec::new();
    for (i, cause) in causes.iter().enumerate() {
        let Some(mut root) = *cause else { continue };
        let mut hops = 0;
        while let Some(up) = causes[root] {
            if up == i || hops > results.len() {
                break;
            }
            root = up;
            hops += 1;
        }
        moves.push((i, root));
    }
    for (i, root) in moves {
        let line = format!(
            "explains {} {}: {}",
            results[i].finding.rule, results[i].finding.name, results[i].finding.message
        );
        let root_code = results[root].finding.rule;
        results[root].evidence.push(Evidence::note(line));
        let r = &mut results[i];
        r.status = CheckStatus::Explained;
        r.explained_by = Some(root_code);
    }
}

/// After the configuration dropped results: a consequence ([`fold_consequences`]) whose cause
/// is no longer reported stands on its own again.
pub fn unfold_dropped_causes(results: &mut [CheckResult]) {
    let present: Vec<Code> = results.iter().map(|r| r.finding.rule).collect();
    for r in results {
        if r.status == CheckStatus::Explained
            && r.explained_by.is_some_and(|c| !present.contains(&c))
        {
            r.status = CheckStatus::Problem;
            r.explained_by = None;
        }
    }
}

/// Whether a check found a problem of at least `fail_on`: a check that could not run says
/// nothing about the host, so it never fails the run (what it could not read is judged as
/// GL000: [`unreadable_input_findings`]).
pub fn fails(results: &[CheckResult], fail_on: crate::finding::FailOn) -> bool {
    let Some(threshold) = fail_on.threshold() else {
        return false;
    };
    results
        .iter()
        .any(|r| r.status == CheckStatus::Problem && r.finding.severity >= threshold)
}

/// Problems become findings at their severity; could-not-check results become `info`
/// findings; ok and explained results are dropped.
pub fn check_findings(results: &[CheckResult]) -> Vec<Finding> {
    let mut out = Vec::new();
    for r in results {
        match r.status {
            CheckStatus::Ok | CheckStatus::Explained | CheckStatus::Skipped => {}
            CheckStatus::Problem => out.push(r.finding.clone()),
            CheckStatus::CouldNotCheck => {
                let mut f = r.finding.clone();
                f.severity = Severity::Info;
                f.message = format!("could not check: {}", f.message);
                out.push(f);
            }
        }
    }
    // In check order: the report sorts every finding once (`Report::normalize`).
    out
}

/// Readable report: one block per result.
pub fn render_checks_text(results: &[CheckResult]) -> String {
    // Messages, evidence and fixes quote host files and command output: each stays one
    // line, its control characters escaped, so none can forge an "[ok]" line.
    use crate::vocab::escape::field;
    let mut s = String::new();
    let (mut ok, mut prob, mut cnc, mut expl, mut skipped) = (0, 0, 0, 0, 0);
    for r in results {
        let tag = match r.status {
            CheckStatus::Explained => {
                expl += 1;
                let by = r.explained_by.map(|c| c.to_string()).unwrap_or_default();
                s.push_str(&format!(
                    "[explained by {by}] {} {}: {}\n",
                    r.finding.rule,
                    r.finding.name,
                    field(&r.finding.message)
                ));
                continue;
            }
            CheckStatus::Ok => {
                ok += 1;
                "ok".to_string()
            }
            CheckStatus::Skipped => {
                skipped += 1;
                "skipped".to_string()
            }
            CheckStatus::Problem => {
                prob += 1;
                r.finding.severity.to_string()
            }
            CheckStatus::CouldNotCheck => {
                cnc += 1;
                "could not check".to_string()
            }
        };
        s.push_str(&format!(
            "[{tag}] {} {}: {}\n",
            r.finding.rule,
            r.finding.name,
            field(&r.finding.message)
        ));
        for e in &r.evidence {
            s.push_str(&format!("    | {}\n", field(&e.to_string())));
        }
        if !matches!(r.status, CheckStatus::Ok | CheckStatus::Skipped) {
            if let Some(f) = &r.finding.help {
                s.push_str(&format!("    fix: {}\n", field(f)));
            }
        }
    }
    s.push_str(&format!(
        "\n{}: {ok} ok, {}, {cnc} could not check{}{}\n",
        crate::vocab::count(results.len(), "result", "results"),
        crate::vocab::count(prob, "problem", "problems"),
        if skipped > 0 {
            format!(", {skipped} skipped (not applicable)")
        } else {
            String::new()
        },
        if expl > 0 {
            format!(", {expl} explained by another problem")
        } else {
            String::new()
        }
    ));
    s
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

#[cfg(test)]
mod unreadable_tests;
