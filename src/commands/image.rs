//! `gpulint inventory` and `gpulint image`: scan an image (fail closed on what cannot be
//! read), judge it against the targets or print its requirements, report.

use super::images::{image_run, images, is_many, ImageRun};
use super::*;
use crate::report::sweep::{ImageEntry, Sweep};

pub(super) fn inventory(a: InventoryArgs) -> anyhow::Result<i32> {
    let opts = crate::scan::ScanOptions::from_args(&a.source.source)?;
    let started = std::time::Instant::now();
    let inv = crate::scan::scan(&a.source.image, &opts)?;
    if a.stats {
        eprintln!("{}", crate::walk::read_stats().line(started.elapsed()));
    }
    match a.format {
        InventoryFormat::Json => print(&report::escape::json_text(format!(
            "{}\n",
            serde_json::to_string_pretty(&inv)?
        )))?,
        InventoryFormat::Text => {
            print(&report::escape::block(&crate::inventory::render_text(&inv)))?
        }
    }
    Ok(partial_exit(&inv, &opts).unwrap_or(exit::OK))
}

/// Fail closed: an image that could not be read whole is unusable input (exit 2) unless the
/// user asked for best effort with `--allow-partial`. None when the scan was complete or
/// partial results were allowed.
pub(super) fn partial_exit(
    inv: &crate::inventory::Inventory,
    opts: &crate::scan::ScanOptions,
) -> Option<i32> {
    if !inv.partial || opts.allow_partial {
        return None;
    }
    eprintln!(
        "error: {}: the image could not be read completely ({}, see GL000); \
         the verdict would be incomplete. Use --allow-partial for a best-effort result.",
        crate::report::escape::field(&inv.image.reference),
        crate::vocab::count(inv.errors.len().max(1), "problem", "problems")
    );
    Some(exit::USAGE_OR_INPUT)
}

pub(super) fn image(a: ImageArgs, color: ColorChoice) -> anyhow::Result<i32> {
    if is_many(&a) {
        let run = image_run(&a)?;
        return images(a, run, color);
    }
    let ImageRun {
        facts,
        config,
        targets,
        node_fleet,
        opts,
        fail_on,
    } = image_run(&a)?;
    let reference = &a.images[0];
    let mut report = Report::new(format!(
        "image {}",
        report::paths::shown_reference(reference)
    ));
    report.artifact = Some(report::paths::shown_reference(reference));
    report.artifact_file = Some(report::paths::image_file(reference));
    report.fail_on = fail_on.threshold();
    report.targets = targets.iter().map(|t| t.name.clone()).collect();
    // Fail closed, and say so in the report: an image that cannot be opened, or holds no
    // file at all, is a GL000 error in every format, and exit 2.
    let inv = match crate::scan::scan(reference, &opts) {
        Ok(inv) => inv,
        Err(e) => {
            let why = format!("{e:#}");
            report.findings = vec![rules::image::gl000_unreadable_input::image_unreadable(&why)];
            report.details = serde_json::json!({"targets": targets, "partial": true});
            // No target was judged: none may read "ok".
            report.targets.clear();
            report.checked_rules = vec!["GL000".into()];
            emit(
                &report,
                a.output.format,
                a.output.output_file.as_deref(),
                color,
                a.source.quiet,
            )?;
            eprintln!("gpulint: error: {}", report::escape::block(&why));
            return Ok(exit::USAGE_OR_INPUT);
        }
    };
    let ctx = rules::context::ImageContext {
        inventory: &inv,
        facts: &facts,
        target: None,
    };
    let reqs = rules::requirements::compute(&ctx);
    report.checked_rules = rules::image_rules()
        .map(|(meta, _, _)| meta.code.to_string())
        .filter(|c| config.rule_enabled(c))
        .collect();
    let mut findings = rules::check_image(&inv, &facts, &targets);
    for e in &inv.errors {
        findings.push(
            rules::image::gl000_unreadable_input::image_partly_unreadable(e, opts.allow_partial),
        );
    }
    // Pools of unknown GPUs (`--fleet-from-nodes`) fail the gate: nothing was judged there.
    if let Some(fleet) = &node_fleet {
        findings.extend(rules::runconfig::gl120_gpu_pool_unknown::findings(
            &fleet.pools,
        ));
    }
    report.findings = crate::suppress::apply_config(findings, &config);
    report.details = serde_json::json!({
        "requirements": reqs,
        "targets": targets,
        "partial": inv.partial,
    });
    if targets.is_empty() {
        report.preamble = reqs.lines();
    }
    report.normalize();
    if let Some(file) = &a.output.baseline {
        // Entries of other images are not this run's to call stale.
        let this = report.artifact.clone().unwrap_or_default();
        apply_baseline(&mut report, file, &config, &|e, code| {
            code.number() < 100 && e.path == this
        })?;
    }
    add_remedies(&mut report, reference, &inv, &facts, &targets);
    emit(
        &report,
        a.output.format,
        a.output.output_file.as_deref(),
        color,
        a.source.quiet,
    )?;
    if let Some(code) = partial_exit(&inv, &opts) {
        if a.output.write_baseline.is_some() {
            eprintln!("gpulint: error: the baseline was not written: the image scan is incomplete");
        }
        return Ok(code);
    }
    if let Some(file) = &a.output.write_baseline {
        return write_baseline(file, &report);
    }
    Ok(verdict(&report, fail_on))
}

/// The closing block a report over many images has, for one image judged against several
/// targets (a `--fleet`'s pools): per failing target the one change that makes it run
/// there, and the one change that makes it run on every target (`details.remedies`, the
/// text's "What would make it work", SARIF's run properties). Nothing when it fails no
/// target, or for a single target, where the findings' own help says it all.
fn add_remedies(
    report: &mut Report,
    reference: &str,
    inv: &crate::inventory::Inventory,
    facts: &crate::matrix::Facts,
    targets: &[crate::gpu_target::Target],
) {
    if report.targets.len() < 2 {
        return;
    }
    let mut entry = ImageEntry::new(reference.to_string(), inv.image.digest.clone(), inv.partial);
    entry.findings = report.findings.clone();
    entry.remedy = super::images::remedy(&entry, inv, facts, targets);
    let one = Sweep::new(report.targets.clone(), vec![entry]);
    if one.remedies.is_empty() {
        return;
    }
    report.details["remedies"] = serde_json::json!(one.remedies);
    report.epilogue = one.remedies.text(true);
}
