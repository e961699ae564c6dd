//! GL217: a GPU slowed down by heat or power: thermal / power-brake slowdown active, or the
//! temperature at or past the slowdown threshold.

use super::{CheckResult, HostContext};
use crate::finding::Severity;
use crate::host::evidence::Evidence;
use crate::host::query::smi_report;
use crate::rule_meta::{Code, RuleDoc, RuleMeta};

pub(crate) static META: RuleMeta = RuleMeta {
    code: Code::new("GL217"),
    name: "gpu-thermal-or-power-slowdown",
    default_severity: Severity::Warning,
    other_severities: &[Severity::Info],
    summary: "A GPU is being slowed down by heat or power (thermal slowdown, power brake)",
    doc: RuleDoc {
        what: "Reads `nvidia-smi -q -x` (else `-q`): the clocks event reasons (older drivers: \
            clocks throttle reasons) HW Slowdown, HW Thermal Slowdown, HW Power Brake Slowdown and \
            SW Thermal Slowdown, and the temperature against its slowdown threshold (GPU Current \
            Temp vs GPU Slowdown Temp, or on newer drivers the T.Limit margin vs GPU Slowdown \
            T.Limit Temp).",
        why: "A GPU in thermal or power-brake slowdown runs at a fraction of its clocks: jobs are \
            mysteriously slow, multi-GPU jobs wait on the slowest GPU, and a GPU that keeps \
            overheating eventually shuts down or falls off the bus. The software power cap alone \
            is normal at full load and is not reported.",
        example:
            "`GPU 0 NVIDIA H200: clocks_event_reasons/clocks_event_reason_hw_thermal_slowdown: \
            Active`: the GPU is past its thermal limit (blocked airflow, failed fan, hot inlet).",
        fix: "Check cooling (inlet temperature, fans, airflow, dust) for thermal slowdown and the \
            power supply / power brake signal for HW Power Brake Slowdown; watch it with \
            `nvidia-smi -q -d PERFORMANCE,TEMPERATURE`.",
        sources: &[
            "https://docs.nvidia.com/deploy/nvidia-smi/index.html",
            "https://docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html",
        ],
    },
};

pub(crate) fn check(cx: &HostContext<'_>, out: &mut Vec<CheckResult>) {
    let Some((rep, src)) = smi_report(cx.reader) else {
        out.push(CheckResult::could_not(
            &META,
            "no `nvidia-smi -q` report to read clocks event reasons and temperatures from",
        ));
        return;
    };
    let mut evidence = Vec::new();
    let mut gpus = Vec::new();
    for g in &rep.gpus {
        if g.throttle.is_empty() {
            continue;
        }
        let label = format!(
            "GPU {} {}",
            g.pci_bus_id.clone().unwrap_or_default(),
            g.name.clone().unwrap_or_default()
        );
        for t in &g.throttle {
            evidence.push(Evidence::command(&src, format!("{label}: {t}")));
        }
        let what = if g
            .throttle
            .iter()
            .any(|t| t.contains("power_brake") || t.contains("Power Brake"))
        {
            "power-brake slowdown"
        } else {
            "thermal slowdown"
        };
        gpus.push(format!("{label} is in {what}"));
    }
    if gpus.is_empty() {
        out.push(CheckResult::ok(
            &META,
            format!(
                "no thermal or power slowdown on {} GPU(s) ({src})",
                rep.gpus.len()
            ),
        ));
        return;
    }
    out.push(CheckResult::problem(
        &META,
        format!("{}: it runs at reduced clocks", gpus.join("; ")),
    )
    .evidence(evidence)
    .fix("Check the cooling (inlet temperature, fans, airflow) for thermal slowdown and the power supply for a power brake; watch `nvidia-smi -q -d PERFORMANCE,TEMPERATURE` under load."));
}
