//! `gpulint host`: the host profile, or with `--check` the GL2xx checks through the shared
//! post-pass and reporters.

use super::*;

pub(super) fn host(a: HostCmdArgs, color: ColorChoice) -> anyhow::Result<i32> {
    let facts = crate::matrix::Facts::new(matrix_from(a.host.matrices.as_deref())?);
    let matrix = facts.matrix();
    let reader = a.host.reader()?;
    let profile = crate::host::detect_host_with(reader.as_ref(), &facts)?;
    if !a.host.check {
        // The profile leaves out what it could not read; say so rather than pass it off as
        // absent (`--check` turns the same into "could not check").
        for u in reader.unreadable() {
            eprintln!(
                "gpulint: warning: {}: could not be read ({}); left out of the host profile",
                report::escape::field(&u.path),
                report::escape::field(&u.error)
            );
        }
        let text = match a.host.format {
            Format::Json => format!("{}\n", profile.to_json()),
            Format::Text => {
                let t = complete_target(matrix, profile.into_target());
                let mut s = String::from("host\n");
                s.push_str(&format!(
                    "  driver: {}\n  CUDA (driver API): {}\n",
                    t.driver
                        .as_ref()
                        .map(|d| d.to_string())
                        .unwrap_or_else(|| "unknown".into()),
                    t.driver_cuda
                        .map(|c| c.to_string())
                        .unwrap_or_else(|| "unknown".into()),
                ));
                for g in &t.gpus {
                    s.push_str(&format!(
                        "  GPU: {} (compute capability {}){}{}\n",
                        g.name,
                        g.cc.map(|c| c.to_string())
                            .unwrap_or_else(|| "unknown".into()),
                        g.uuid
                            .as_deref()
                            .map(|u| format!(" {u}"))
                            .unwrap_or_default(),
                        g.mig_mode
                            .as_deref()
                            .map(|m| format!(", MIG {m}"))
                            .unwrap_or_default(),
                    ));
                }
                if t.gpus.is_empty() {
                    s.push_str("  GPUs: none found\n");
                }
                report::escape::block(&s).into_owned()
            }
            other => anyhow::bail!(
                "--format {} needs --check (the host profile is text or json)",
                clap::ValueEnum::to_possible_value(&other)
                    .map(|v| v.get_name().to_string())
                    .unwrap_or_default()
            ),
        };
        match &a.output_file {
            Some(p) => {
                std::fs::write(p, text).with_context(|| format!("writing {}", p.display()))?
            }
            None => print(&text)?,
        }
        return Ok(exit::OK);
    }
    let scanner = crate::host::ElfArchScanner;
    let opts = rules::host::CheckOptions {
        facts: &facts,
        pythons: a.host.python.clone(),
        scanner: Some(&scanner),
    };
    let config = load_config(a.config.as_deref(), &a.rules)?;
    let fail_on = a
        .fail_on
        .or(config.fail_on)
        .unwrap_or(FailOn::At(Severity::Error));
    let results = crate::suppress::apply_config(
        rules::host::run_checks_with(reader.as_ref(), &profile, &opts),
        &config,
    );
    let mut findings = rules::host::check_findings(&results);
    // Fail closed: evidence that is there but could not be read leaves the verdict
    // incomplete (absent evidence does not); each such file is a GL000 finding.
    let unreadable = crate::suppress::apply_config(
        rules::host::unreadable_input_findings(&results, &reader.unreadable(), a.allow_partial),
        &config,
    );
    let incomplete = results.iter().any(|r| r.unreadable_evidence);
    let fails = rules::host::fails(&results, fail_on)
        || unreadable
            .iter()
            .any(|f| fail_on.threshold().is_some_and(|t| f.severity >= t));
    findings.extend(unreadable.iter().cloned());
    let mut r = Report::new("host");
    r.targets = vec!["host".into()];
    // The host has no file in the repository: its findings (and the host files they name)
    // go under this placeholder in the formats that need one.
    r.artifact_file = Some(format!("{}/host", report::paths::PLACEHOLDER_DIR));
    r.fail_on = fail_on.threshold();
    r.skipped_rules = results
        .iter()
        .filter(|c| c.status == rules::host::CheckStatus::Skipped)
        .map(|c| (c.finding.rule.to_string(), c.finding.message.clone()))
        .collect();
    r.checked_rules = rules::host_checks()
        .map(|(meta, _, _)| meta.code.to_string())
        .filter(|c| config.rule_enabled(c))
        .collect();
    r.findings = findings;
    r.normalize();
    if a.host.format == Format::Text && !a.quiet {
        let mut text = rules::host::render_checks_text(&results);
        for f in &unreadable {
            text.push_str(&format!(
                "[{}] {} {}: {}\n",
                f.severity,
                f.rule,
                f.name,
                report::escape::field(&f.message)
            ));
        }
        let text = report::escape::block(&text).into_owned();
        match &a.output_file {
            Some(p) => {
                std::fs::write(p, text).with_context(|| format!("writing {}", p.display()))?
            }
            None => print(&text)?,
        }
    } else {
        r.details = serde_json::json!({
            "profile": serde_json::from_str::<serde_json::Value>(&profile.to_json()).unwrap_or_default(),
            "checks": results,
            "partial": incomplete,
        });
        emit(&r, a.host.format, a.output_file.as_deref(), color, a.quiet)?;
    }
    if incomplete && !a.allow_partial {
        let first = reader
            .unreadable()
            .first()
            .map(|u| {
                format!(
                    ", first {}: {}",
                    report::escape::field(&u.path),
                    report::escape::field(&u.error)
                )
            })
            .unwrap_or_default();
        eprintln!(
            "gpulint: error: host: files that are there could not be read (see GL000{first}); \
             the checks that need them could not check, the verdict would be incomplete. Use \
             --allow-partial for a best-effort result."
        );
        return Ok(exit::USAGE_OR_INPUT);
    }
    Ok(if fails { exit::FINDINGS } else { exit::OK })
}
