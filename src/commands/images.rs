//! `gpulint image` over many images (several references, `--images-from`, `--shard`) and
//! `gpulint report merge`: each image scanned once, up to `--jobs` at a time, over one run's
//! layers ([`crate::cache::SharedLayers`]: a base layer several images share is read once),
//! judged against the run's targets, one report with a verdict per image and image × target.
//!
//! Fail closed per image: an image that cannot be opened is a GL000 error for that image
//! (its verdict `unknown`), the other images are still scanned, and the run exits 2 unless
//! `--allow-partial`.

use super::*;
use crate::cli::{ManyImagesArgs, MergeArgs, MergeFormat, Shard};
use crate::report::sweep::{ImageEntry, Sweep};
use std::io::Read;
use std::sync::Arc;

/// The most bytes `--images-from` and a merged report may hold: far above a registry's
/// worth of references or of a sweep's findings, bounded against a runaway input.
const MAX_LIST_BYTES: u64 = 64 << 20;
/// The most references one run takes.
const MAX_IMAGES: usize = 100_000;
/// The longest reference accepted from a list (a path or registry reference is far shorter).
const MAX_REFERENCE_LEN: usize = 4096;
/// `--jobs` when not given: two images at a time, each reading its layers in parallel.
const DEFAULT_JOBS: usize = 2;

/// What `image` judges against and how: the same for one image and for many.
pub(super) struct ImageRun {
    pub facts: crate::matrix::Facts,
    pub config: crate::config::Config,
    pub targets: Vec<Target>,
    /// The pools read from `--fleet-from-nodes`, whose unknown pools fail the gate (GL120).
    pub node_fleet: Option<crate::gpu_target::nodes::Fleet>,
    pub opts: crate::scan::ScanOptions,
    pub fail_on: FailOn,
}

pub(super) fn image_run(a: &ImageArgs) -> anyhow::Result<ImageRun> {
    let facts = crate::matrix::Facts::new(load_matrix(&a.targets)?);
    let matrix = facts.matrix();
    let config = load_config(a.output.config.as_deref(), &a.output.rules)?;
    let (mut targets, node_fleet) = targets_and_fleet(&a.targets, matrix)?;
    if targets.is_empty() {
        targets = config_targets(&config, matrix)?;
    }
    if targets.is_empty() && !a.targets.no_local_host {
        if let Some(t) = local_host_target(&facts) {
            targets.push(t);
        }
    }
    let opts = crate::scan::ScanOptions::from_args(&a.source)?;
    let fail_on = a
        .output
        .fail_on
        .or(config.fail_on)
        .unwrap_or(FailOn::At(Severity::Error));
    Ok(ImageRun {
        facts,
        config,
        targets,
        node_fleet,
        opts,
        fail_on,
    })
}

/// Whether the command line asks for the many-images report rather than one image's.
pub(super) fn is_many(a: &ImageArgs) -> bool {
    let m = &a.many;
    a.images.len() != 1 || m.images_from.is_some() || m.shard.is_some() || m.shard_count.is_some()
}

/// References from a list: one a line, blank lines and `#` comments skipped, surrounding
/// whitespace trimmed. A line with control characters or past [`MAX_REFERENCE_LEN`] is an
/// error naming its line number.
pub(crate) fn parse_list(text: &str, name: &str) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line.len() > MAX_REFERENCE_LEN || line.chars().any(char::is_control) {
            anyhow::bail!(
                "{name}:{}: not an image reference (control characters, or longer than {} bytes)",
                n + 1,
                MAX_REFERENCE_LEN
            );
        }
        out.push(line.to_string());
    }
    Ok(out)
}

fn read_list(path: &Path) -> anyhow::Result<Vec<String>> {
    let (text, name) = if path == Path::new("-") {
        let mut bytes = Vec::new();
        std::io::stdin()
            .lock()
            .take(MAX_LIST_BYTES + 1)
            .read_to_end(&mut bytes)
            .context("reading the image list from stdin")?;
        if bytes.len() as u64 > MAX_LIST_BYTES {
            anyhow::bail!("the image list on stdin is larger than {MAX_LIST_BYTES} bytes");
        }
        let text = String::from_utf8(bytes).context("the image list on stdin is not UTF-8")?;
        (text, "<stdin>".to_string())
    } else {
        let text = crate::io_util::read_regular_string(path, MAX_LIST_BYTES)
            .with_context(|| format!("reading image list {}", path.display()))?;
        (text, path.display().to_string())
    };
    parse_list(&text, &report::escape::field(&name))
}

/// The run's share of the image list: the command line's references, then the list's,
/// without repeats, every `count`-th from `index` when sharded.
pub(crate) fn select(all: Vec<String>, shard: Option<Shard>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    all.into_iter()
        .filter(|r| seen.insert(r.clone()))
        .enumerate()
        .filter(|(i, _)| shard.is_none_or(|s| s.holds(*i)))
        .map(|(_, r)| r)
        .collect()
}

/// `--shard`, or `--shard-count` with the index from `JOB_COMPLETION_INDEX`.
fn shard_of(m: &ManyImagesArgs) -> anyhow::Result<Option<Shard>> {
    let Some(count) = m.shard_count else {
        return Ok(m.shard);
    };
    let index = std::env::var("JOB_COMPLETION_INDEX").map_err(|_| {
        anyhow::anyhow!(
            "--shard-count needs JOB_COMPLETION_INDEX (set in a Kubernetes Indexed Job's pods)"
        )
    })?;
    format!("{}/{count}", index.trim())
        .parse::<Shard>()
        .map(Some)
        .map_err(|e| anyhow::anyhow!("JOB_COMPLETION_INDEX: {e}"))
}

pub(super) fn images(a: ImageArgs, run: ImageRun, color: ColorChoice) -> anyhow::Result<i32> {
    let format = a.output.format;
    if !matches!(format, Format::Text | Format::Json | Format::Sarif) {
        anyhow::bail!("with several images the report format is text, json or sarif");
    }
    if a.output.baseline.is_some() || a.output.write_baseline.is_some() {
        anyhow::bail!("--baseline and --write-baseline take one image at a time");
    }
    let mut all = a.images.clone();
    if let Some(f) = &a.many.images_from {
        all.extend(read_list(f)?);
    }
    if all.len() > MAX_IMAGES {
        anyhow::bail!(
            "{} images: more than {MAX_IMAGES} in one run (use --shard)",
            all.len()
        );
    }
    let refs = select(all, shard_of(&a.many)?);
    let ImageRun {
        facts,
        config,
        targets,
        node_fleet,
        mut opts,
        fail_on,
    } = run;
    // Pools of unknown GPUs judge nothing: every image's verdict says so (GL120).
    let unknown_pools = node_fleet
        .as_ref()
        .map(|f| rules::runconfig::gl120_gpu_pool_unknown::findings(&f.pools))
        .unwrap_or_default();
    // Bars of images scanned side by side would overwrite each other.
    opts.progress = crate::progress::Progress::hidden();
    let shared = Arc::new(crate::cache::SharedLayers::new());
    opts.shared = Some(shared.clone());
    let started = std::time::Instant::now();
    let jobs = a.many.jobs.map_or(DEFAULT_JOBS, usize::from);
    let scanned = crate::parallel::map_indexed(refs.len(), jobs, |i| {
        scan_one(&refs[i], &opts, &facts, &config, &targets, &unknown_pools)
    });
    let entries: Vec<ImageEntry> = scanned
        .into_iter()
        .zip(&refs)
        .map(|(e, r)| {
            e.unwrap_or_else(|| unreadable(r, "the scan stopped on an internal error (a bug)"))
        })
        .collect();
    let sweep = Sweep::new(targets.iter().map(|t| t.name.clone()).collect(), entries);
    if a.many.stats {
        eprintln!("{}", stats_line(&sweep, &shared.stats(), started.elapsed()));
    }
    emit_sweep(
        &sweep,
        format,
        a.output.output_file.as_deref(),
        color,
        a.source.quiet,
    )?;
    Ok(sweep_exit(
        &sweep,
        fail_on.threshold(),
        a.source.allow_partial,
    ))
}

/// `images N  layers: walked W, from the cache C, shared S  read B MB of F files  T s`.
fn stats_line(sweep: &Sweep, s: &crate::cache::SharedStats, took: std::time::Duration) -> String {
    let read = crate::walk::read_stats();
    format!(
        "images {}  layers: walked {}, from the cache {}, shared in the run {}  \
         read {:.1} MB of {} files  {:.2} s",
        sweep.images.len(),
        s.walked,
        s.disk_hits,
        s.shared_hits,
        read.file_bytes as f64 / 1e6,
        read.files,
        took.as_secs_f64()
    )
}

/// One image scanned and judged; an image that cannot be opened is a GL000 entry.
fn scan_one(
    reference: &str,
    opts: &crate::scan::ScanOptions,
    facts: &crate::matrix::Facts,
    config: &crate::config::Config,
    targets: &[Target],
    unknown_pools: &[Finding],
) -> ImageEntry {
    let inv = match crate::scan::scan(reference, opts) {
        Ok(inv) => inv,
        Err(e) => return unreadable(reference, &format!("{e:#}")),
    };
    let ctx = rules::context::ImageContext {
        inventory: &inv,
        facts,
        target: None,
    };
    let reqs = rules::requirements::compute(&ctx);
    let mut findings = rules::check_image(&inv, facts, targets);
    findings.extend_from_slice(unknown_pools);
    for e in &inv.errors {
        findings.push(
            rules::image::gl000_unreadable_input::image_partly_unreadable(e, opts.allow_partial),
        );
    }
    let mut entry = ImageEntry::new(reference.to_string(), inv.image.digest.clone(), inv.partial);
    entry.findings = crate::suppress::apply_config(findings, config);
    entry.requirements = serde_json::to_value(&reqs).unwrap_or_default();
    entry.remedy = remedy(&entry, &inv, facts, targets);
    entry
}

/// The one change that makes a failing image run on every target (`None` when it fails
/// none, or no single change does it).
pub(super) fn remedy(
    entry: &ImageEntry,
    inv: &crate::inventory::Inventory,
    facts: &crate::matrix::Facts,
    targets: &[Target],
) -> Option<crate::report::sweep::ImageRemedy> {
    let failing: Vec<&[crate::fix::Fix]> =
        entry.failing_on(None).map(|f| f.fixes.as_slice()).collect();
    let torch = inv
        .python_packages
        .iter()
        .find(|p| p.name == "torch")
        .map(|t| crate::fix::suggest::torch::Installed {
            version: Some(t.version.as_str()),
            cuda: t.cuda,
        });
    let nvcc = inv
        .cuda_toolkits
        .iter()
        .find(|t| t.default)
        .or(inv.cuda_toolkits.first())
        .and_then(|t| t.version);
    let (summary, fix) =
        crate::fix::suggest::fleet::image_fix(facts, targets, torch, nvcc, &failing)?;
    Some(crate::report::sweep::ImageRemedy {
        image: entry.reference.clone(),
        summary,
        fix: Some(fix),
    })
}

fn unreadable(reference: &str, why: &str) -> ImageEntry {
    let mut entry = ImageEntry::new(reference.to_string(), None, true);
    entry.findings = vec![rules::image::gl000_unreadable_input::image_unreadable(why)];
    entry
}

fn emit_sweep(
    sweep: &Sweep,
    format: Format,
    output_file: Option<&Path>,
    color: ColorChoice,
    quiet: bool,
) -> anyhow::Result<()> {
    let to_terminal = output_file.is_none() && report::stdout_is_terminal();
    let text = match format {
        Format::Json => sweep.render_json(),
        Format::Sarif => sweep.render_sarif(),
        _ => sweep.render_text(Style {
            color: report::use_color(color, to_terminal),
            quiet,
        }),
    };
    match output_file {
        Some(p) => std::fs::write(p, text).with_context(|| format!("writing {}", p.display())),
        None => print(&text),
    }
}

/// The worst over all images: 2 when one could not be read (completely) and partial results
/// were not allowed, else 1 when a finding is at or above `fail_on`, else 0.
fn sweep_exit(sweep: &Sweep, fail_on: Option<Severity>, allow_partial: bool) -> i32 {
    let incomplete: Vec<&ImageEntry> = sweep.incomplete().collect();
    if !incomplete.is_empty() && !allow_partial {
        for i in &incomplete {
            eprintln!(
                "gpulint: error: {}: the image could not be read (completely), see GL000",
                report::escape::field(&i.reference)
            );
        }
        eprintln!(
            "gpulint: error: {} of {} without a verdict; use --allow-partial for a \
             best-effort result",
            incomplete.len(),
            crate::vocab::count(sweep.images.len(), "image", "images")
        );
        return exit::USAGE_OR_INPUT;
    }
    if sweep.fails(fail_on) {
        exit::FINDINGS
    } else {
        exit::OK
    }
}

/// `gpulint report merge`: shard reports as one.
pub(super) fn merge(a: MergeArgs, color: ColorChoice) -> anyhow::Result<i32> {
    let mut parts = Vec::new();
    for p in &a.reports {
        let text = crate::io_util::read_regular_string(p, MAX_LIST_BYTES)
            .with_context(|| format!("reading report {}", p.display()))?;
        let sweep = Sweep::from_json(&text).map_err(|e| {
            anyhow::anyhow!("report {}: {}", p.display(), report::escape::field(&e))
        })?;
        parts.push(sweep);
    }
    let sweep =
        Sweep::merge(parts).map_err(|e| anyhow::anyhow!(report::escape::field(&e).into_owned()))?;
    let format = match a.format {
        MergeFormat::Json => Format::Json,
        MergeFormat::Sarif => Format::Sarif,
        MergeFormat::Text => Format::Text,
    };
    emit_sweep(&sweep, format, a.output_file.as_deref(), color, false)?;
    let fail_on = a.fail_on.unwrap_or(FailOn::At(Severity::Error));
    Ok(sweep_exit(&sweep, fail_on.threshold(), a.allow_partial))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_skip_comments_and_blank_lines_and_refuse_control_characters() {
        let got = parse_list("# base images\n\n  a:1  \nb@sha256:00\n#c\n", "list").unwrap();
        assert_eq!(got, vec!["a:1".to_string(), "b@sha256:00".to_string()]);
        let err = parse_list("a\nb\x1b[31m\n", "list")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("list:2:"), "{err}");
    }

    #[test]
    fn shards_partition_the_list_without_repeats() {
        let list: Vec<String> = ["a", "b", "a", "c", "d", "e", "b"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let whole = select(list.clone(), None);
        assert_eq!(whole, vec!["a", "b", "c", "d", "e"]);
        for count in 1..=6u32 {
            let mut union: Vec<String> = (0..count)
                .flat_map(|index| select(list.clone(), Some(Shard { index, count })))
                .collect();
            union.sort();
            assert_eq!(union, whole, "{count} shards");
        }
        assert_eq!(
            select(list, Some(Shard { index: 1, count: 2 })),
            vec!["b", "d"]
        );
        assert!("2/2".parse::<Shard>().is_err());
        assert!("0/0".parse::<Shard>().is_err());
        assert_eq!("1/3".parse::<Shard>(), Ok(Shard { index: 1, count: 3 }));
    }
}
