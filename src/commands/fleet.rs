//! The cluster as the target: `--fleet-from-nodes` (pools from `kubectl get nodes -o json`),
//! `gpulint fleet --from-nodes` (print the pools, pin them with `--write-fleet`), and
//! Kubernetes workloads judged against the pools their scheduling constraints allow.

use super::context::CommandContext;
use super::*;
use crate::cli::FleetArgs;
use crate::gpu_target::nodes::{self, Fleet, Pool};
use crate::rules::runconfig::{
    gl120_gpu_pool_unknown, gl121_workload_on_failing_pool as gl121,
    gl122_workload_fits_no_pool as gl122,
};
use crate::runconfig::loc;
use crate::runconfig::runspec::RunSpec;

/// The pools of `kubectl get nodes -o json` output (`-` = stdin). A list without GPU nodes
/// is an error: judging against no target would print "ok" for anything.
pub(crate) fn read_nodes(matrix: &Matrix, p: &Path) -> anyhow::Result<Fleet> {
    let shown = if p == Path::new("-") {
        "<stdin>".to_string()
    } else {
        p.display().to_string()
    };
    let text = super::context::read(p)?;
    let fleet = nodes::fleet_from_nodes_json(matrix, &text)
        .with_context(|| format!("node list {shown}"))?;
    if fleet.pools.is_empty() {
        anyhow::bail!(
            "node list {shown}: no node offers an NVIDIA GPU (nvidia.com/gpu or MIG resources, \
             GPU Feature Discovery labels); nothing to check against"
        );
    }
    Ok(fleet)
}

/// `gpulint fleet --from-nodes FILE [--write-fleet OUT]`: the derived pools as a report
/// (each pool a target, its GPU, driver and nodes in the details); pools of unknown GPUs
/// are GL120 errors, so the command fails the gate while any exist.
pub(super) fn fleet(a: FleetArgs, color: ColorChoice) -> anyhow::Result<i32> {
    let matrix = matrix_from(a.matrices.as_deref())?;
    let fleet = read_nodes(&matrix, &a.from_nodes)?;
    let mut report = Report::new(format!(
        "fleet from {}",
        if a.from_nodes == Path::new("-") {
            "<stdin>".to_string()
        } else {
            a.from_nodes.display().to_string()
        }
    ));
    // No "ok" lines: this command judges no image, only whether each pool is identified.
    report.checked_rules = vec![gl120_gpu_pool_unknown::META.code.to_string()];
    report.fail_on = Some(Severity::Error);
    report.preamble = fleet.pools.iter().flat_map(describe).collect();
    report.findings = gl120_gpu_pool_unknown::findings(&fleet.pools);
    report.details = serde_json::json!({ "pools": fleet.pools });
    report.normalize();
    if let Some(out) = &a.write_fleet {
        let text = nodes::to_fleet_toml(&fleet, &matrix);
        std::fs::write(out, text).with_context(|| format!("writing {}", out.display()))?;
        let unknown = fleet.pools.iter().filter(|p| p.unknown.is_some()).count();
        if unknown > 0 {
            eprintln!(
                "gpulint: warning: {} of unknown GPUs not pinned in {}",
                crate::vocab::count(unknown, "pool", "pools"),
                report::escape::field(&out.display().to_string())
            );
        }
    }
    emit(&report, a.format, a.output_file.as_deref(), color, false)?;
    Ok(verdict(&report, FailOn::At(Severity::Error)))
}

/// A pool in two lines: what it is, and its nodes with what they offer the scheduler.
fn describe(p: &Pool) -> Vec<String> {
    let t = &p.target;
    let gpu = t
        .gpus
        .iter()
        .map(|g| {
            let mut s = g.name.clone();
            if let Some(cc) = g.cc {
                s.push_str(&format!(" (sm_{})", cc.sm()));
            }
            if let Some(n) = g.count {
                s.push_str(&format!(" x{n}"));
            }
            if let Some(m) = &g.mig_mode {
                s.push_str(&format!(", MIG strategy {m}"));
            }
            s
        })
        .collect::<Vec<_>>()
        .join(", ");
    let driver = match (&t.driver, &t.driver_cuda) {
        (Some(d), Some(c)) => format!("driver {d} (CUDA {c})"),
        (Some(d), None) => format!("driver {d}"),
        (None, _) => "driver unknown".to_string(),
    };
    let mut offers: BTreeMap<&str, u64> = BTreeMap::new();
    for n in &p.nodes {
        for (r, k) in n.resources.iter().filter(|(_, k)| **k > 0) {
            *offers.entry(r.as_str()).or_default() += k;
        }
    }
    let offers = offers
        .iter()
        .map(|(r, n)| format!("{r}={n}"))
        .collect::<Vec<_>>()
        .join(", ");
    vec![
        format!(
            "pool {}: {}, {driver}",
            t.name,
            if gpu.is_empty() { "GPU unknown" } else { &gpu }
        ),
        format!("  nodes: {} (offer {offers})", p.node_names().join(", ")),
    ]
}

use std::collections::BTreeMap;

/// Where a pod may run: each pool with the nodes in it that admit the pod, and the reason
/// each other pool refuses it (its first node's).
struct Placement<'a> {
    pools: Vec<(&'a Pool, Vec<&'a str>)>,
    refused: Vec<(&'a Pool, String)>,
    /// `spec.nodeName`'s pool; None when unbound, or bound to a node that is not a GPU node.
    current: Option<&'a Pool>,
}

fn place<'a>(sched: &crate::gpu_target::schedule::Scheduling, fleet: &'a Fleet) -> Placement<'a> {
    let mut out = Placement {
        pools: Vec::new(),
        refused: Vec::new(),
        current: sched
            .node_name
            .as_deref()
            .and_then(|n| fleet.pool_of_node(n)),
    };
    for p in &fleet.pools {
        let mut admitting = Vec::new();
        let mut first_reason = None;
        for n in &p.nodes {
            match sched.rejects(n) {
                None => admitting.push(n.name.as_str()),
                Some(why) => {
                    first_reason.get_or_insert(why);
                }
            }
        }
        let bound_here = out.current.is_some_and(|c| std::ptr::eq(c, p));
        if admitting.is_empty() && bound_here {
            // It runs there now, whatever its constraints say of a rescheduling.
            admitting.extend(
                p.nodes
                    .iter()
                    .filter(|n| sched.node_name.as_deref() == Some(n.name.as_str()))
                    .map(|n| n.name.as_str()),
            );
        }
        if admitting.is_empty() {
            out.refused
                .push((p, first_reason.unwrap_or_else(|| "no nodes".into())));
        } else {
            out.pools.push((p, admitting));
        }
    }
    out
}

/// The workload a container belongs to, as findings name it (`train` of `train/worker`).
fn workload(rs: &RunSpec) -> &str {
    rs.name
        .rsplit_once('/')
        .map_or(rs.name.as_str(), |(w, _)| w)
}

/// The checks on some run specs against some targets.
pub(crate) type RunChecks<'a> = dyn Fn(&[RunSpec], &[Target]) -> Vec<Finding> + 'a;

/// The GL1xx checks (and `--scan-images` image checks) with each Kubernetes container judged
/// against the pools its pod can be scheduled onto (and the pool of the node it is bound
/// to); GL121 for each such pool where an error-level check fails, GL122 for a GPU workload
/// that fits no pool. Other run specs are judged against every pool. `check` runs the checks
/// on some specs against some targets.
pub(crate) fn matched_runs_checks(
    specs: &[RunSpec],
    fleet: &Fleet,
    ctx: &CommandContext,
    check: &RunChecks<'_>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut said: Vec<(crate::rules::Code, String)> = Vec::new();
    let mut once = |f: Finding, out: &mut Vec<Finding>| {
        let key = (f.rule, f.message.clone());
        if !said.contains(&key) {
            said.push(key);
            out.push(f);
        }
    };
    // Compose services and run lines have no scheduling: every pool, together as before.
    let unscheduled: Vec<RunSpec> = specs
        .iter()
        .filter(|r| r.scheduling.is_none())
        .cloned()
        .collect();
    if !unscheduled.is_empty() {
        out.extend(check(&unscheduled, &ctx.targets));
    }
    let mut placed: Vec<Placement> = Vec::new();
    let mut index: std::collections::HashMap<String, usize> = Default::default();
    for rs in specs {
        let one = std::slice::from_ref(rs);
        let Some(sched) = &rs.scheduling else {
            continue;
        };
        // The pods of one workload share their constraints: placed once.
        let key = serde_json::to_string(sched).unwrap_or_default();
        let i = *index.entry(key).or_insert_with(|| {
            placed.push(place(sched, fleet));
            placed.len() - 1
        });
        let placement = &placed[i];
        let targets: Vec<Target> = placement
            .pools
            .iter()
            .map(|(p, _)| p.target.clone())
            .collect();
        // With no pool, only the target-independent checks report.
        let found = check(one, &targets);
        let at = loc(&rs.file, rs.pos);
        for (p, nodes) in &placement.pools {
            let mut failing: Vec<String> = found
                .iter()
                .filter(|f| {
                    f.severity == Severity::Error
                        && f.target.as_deref() == Some(p.target.name.as_str())
                })
                .map(|f| f.rule.to_string())
                .collect();
            failing.sort();
            failing.dedup();
            if failing.is_empty() {
                continue;
            }
            let now = if placement.current.is_some_and(|c| std::ptr::eq(c, *p)) {
                format!(
                    " (it runs there now, on {})",
                    sched.node_name.as_deref().unwrap_or_default()
                )
            } else {
                String::new()
            };
            let mut f = gl121::META
                .finding(format!(
                    "`{}` can be scheduled onto pool {} (nodes: {}){now}, where {} fail{}",
                    workload(rs),
                    p.target.name,
                    nodes.join(", "),
                    failing.join(", "),
                    if failing.len() == 1 { "s" } else { "" }
                ))
                .with_location(at.clone())
                .with_help(
                    "Constrain the workload to pools it runs on (nodeSelector or required \
                     affinity on nvidia.com/gpu.product, nvidia.com/gpu.compute.major or the \
                     driver labels), or fix the image for this pool.",
                );
            f.target = Some(p.target.name.clone());
            once(f, &mut out);
        }
        let unbound = sched.node_name.is_some() && placement.current.is_none();
        if sched.requests_gpu() && (placement.pools.is_empty() || unbound) {
            let wanted = sched
                .resources
                .iter()
                .map(|(r, n)| format!("{r}: {n}"))
                .collect::<Vec<_>>()
                .join(", ");
            let why = placement
                .refused
                .iter()
                .map(|(p, why)| format!("pool {}: {why}", p.target.name))
                .collect::<Vec<_>>()
                .join("; ");
            let message = if unbound {
                format!(
                    "`{}` requests {wanted} and is bound to node {}, which is not a GPU node of \
                     the node list",
                    workload(rs),
                    sched.node_name.as_deref().unwrap_or_default()
                )
            } else {
                format!(
                    "`{}` requests {wanted} but no GPU pool admits it ({why})",
                    workload(rs)
                )
            };
            let f = gl122::META
                .finding(message)
                .with_location(at.clone())
                .with_help(
                    "Request a resource the pools offer, tolerate their taints, or correct the \
                     node selector (GFD values such as nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3).",
                );
            once(f, &mut out);
        }
        out.extend(found);
    }
    out
}
