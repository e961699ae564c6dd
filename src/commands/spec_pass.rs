//! One lint of a spec command's inputs into a report, before output: run once, and again after
//! `--fix` to report what the edited files still hold.

use super::settings::{ConfigSet, LintInputs};
use super::{apply_baseline, config_targets, input_error_finding, runconfig, SpecFn};
use crate::baseline;
use crate::cli::SpecCmd;
use crate::finding::{FailOn, Severity};
use crate::gpu_target::Target;
use crate::report::Report;
use crate::rules;

/// The fail-on each finding's file is judged by (its configuration's, or --fail-on).
pub(super) type FailOnByFile = std::collections::HashMap<Option<String>, Option<Severity>>;

/// One lint of every input group into a report: run again after `--fix` to report what the
/// edited files still hold.
pub(super) fn lint_pass<A: clap::Args + LintInputs>(
    c: &SpecCmd<A>,
    what: &str,
    run: SpecFn<A>,
    groups: &[(usize, A)],
    configs: &ConfigSet,
    cli_targets: &[Target],
    ctx: &mut runconfig::CommandContext,
) -> anyhow::Result<(Report, FailOnByFile)> {
    let mut report = Report::new(what.to_string());
    // The fail-on each finding's file is judged by (its configuration's, or --fail-on).
    let mut file_fail_on: std::collections::HashMap<Option<String>, Option<Severity>> =
        Default::default();
    let mut used_configs: Vec<String> = Vec::new();
    let mut first_fail_on: Option<FailOn> = None;
    for (i, args) in groups {
        let i = *i;
        let config = configs.get(i).clone();
        let targets = if cli_targets.is_empty() {
            config_targets(&config, ctx.matrix())?
        } else {
            cli_targets.to_vec()
        };
        let fail_on = c
            .output
            .fail_on
            .or(config.fail_on)
            .unwrap_or(FailOn::At(Severity::Error));
        first_fail_on.get_or_insert(fail_on);
        for code in rules::spec_checks().map(|(meta, _)| meta.code.to_string()) {
            if config.rule_enabled(&code) && !report.checked_rules.contains(&code) {
                report.checked_rules.push(code);
            }
        }
        for t in &targets {
            if !report.targets.contains(&t.name) {
                report.targets.push(t.name.clone());
            }
        }
        ctx.targets = targets;
        ctx.config = config;
        let before = ctx.checked.get();
        let findings = run(args, ctx)?;
        if ctx.checked.get() > before {
            used_configs.push(configs.name(i));
        }
        for f in &findings {
            let file = f.location.as_ref().and_then(|l| l.file.clone());
            file_fail_on.entry(file).or_insert(fail_on.threshold());
        }
        report.findings.extend(findings);
    }
    if let Some(fleet) = &ctx.fleet {
        let unknown = rules::runconfig::gl120_gpu_pool_unknown::findings(&fleet.pools);
        report
            .findings
            .extend(crate::suppress::apply_config(unknown, &ctx.config));
    }
    report.checked_rules.sort();
    // JUnit fails a test case at this severity: the command line's, else the first
    // configuration's (each finding's own file still decides the exit code above).
    report.fail_on = first_fail_on
        .unwrap_or(FailOn::At(Severity::Error))
        .threshold();
    // An input that could not be read is an error for that input only: the others were
    // linted; it is a GL000 error in the report (every format) and the run exits 2.
    report
        .findings
        .extend(ctx.input_errors.borrow().iter().map(input_error_finding));
    report.normalize();
    if let Some(file) = &c.output.baseline {
        let inputs: Vec<String> = c.args.inputs().iter().map(|p| ctx.display(p)).collect();
        let scan_images = c.scan_images;
        apply_baseline(&mut report, file, &ctx.config, &|e, code| {
            (code.number() >= 100 || scan_images) && baseline::path_in_inputs(&e.path, &inputs)
        })?;
    }
    let checked = ctx.checked.get();
    report.scope = Some(if checked == 0 {
        "no files found".to_string()
    } else {
        format!(
            "checked {checked} file{} with {}",
            if checked == 1 { "" } else { "s" },
            used_configs.join(", ")
        )
    });
    Ok((report, file_fail_on))
}
