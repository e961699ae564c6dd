//! A report over many images (`gpulint image A B …`, `--images-from`, `--shard`, and
//! `gpulint report merge`): one verdict per image and per image × target (a fleet pool, a
//! GPU/driver pair), in text, JSON and SARIF.
//!
//! The JSON form is the shared report (`docs/schema/report.schema.json`, schema_version 2)
//! with `subject` `images`, `details.images[]` (one [`ImageEntry`] each) and every finding
//! naming its image (`image`). It is also the input of `report merge`, so a report can be
//! read back, merged and written again: images sorted by reference, an image met twice (the
//! same digest) kept once with its other references as `aliases`. Merging the shares of a
//! list gives the bytes a single run over the list gives.

use super::{escape, paths, Report, Style};
use crate::finding::{Finding, Location, Severity};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::fmt::Write;

/// `subject` of a report over many images: what `report merge` recognises.
pub const SUBJECT: &str = "images";

/// One image's (or one image × target's) outcome. `unknown`: the image could not be read
/// (completely), so it neither passes nor fails. Ordered from best to worst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Ok,
    Info,
    Warning,
    Unknown,
    Error,
}

impl Verdict {
    fn of(s: Severity) -> Verdict {
        match s {
            Severity::Info => Verdict::Info,
            Severity::Warning => Verdict::Warning,
            Severity::Error => Verdict::Error,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Info => "info",
            Verdict::Warning => "warning",
            Verdict::Unknown => "unknown",
            Verdict::Error => "error",
        }
    }
}

/// An image's verdict on one target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cell {
    pub target: String,
    pub verdict: Verdict,
}

/// One image of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageEntry {
    /// The reference as given.
    pub reference: String,
    /// The image's digest, when it could be read: what makes two references one image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// Other references of the run with the same digest (reported once, here).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    /// The worst over its findings; `unknown` when it was read incompletely and nothing
    /// worse was found.
    pub verdict: Verdict,
    /// Read incompletely or not at all (GL000).
    pub partial: bool,
    /// The verdict per target of the run, in the run's target order.
    pub targets: Vec<Cell>,
    /// What the image needs (CUDA, compute capabilities), when it could be read.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub requirements: Value,
    #[serde(skip)]
    pub findings: Vec<Finding>,
    /// The one change that makes it run on every target, when it fails one (computed by the
    /// command, which has the tables; reported in `details.remedies.images`).
    #[serde(skip)]
    pub remedy: Option<ImageRemedy>,
}

/// What would make one image run on every pool of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageRemedy {
    pub image: String,
    /// The change in one line, or why there is none.
    pub summary: String,
    /// `None`: no single change makes it run on every pool.
    pub fix: Option<crate::fix::Fix>,
}

/// What would make every image that fails one pool run there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PoolRemedy {
    pub pool: String,
    /// The images that fail there, by reference.
    pub images: Vec<String>,
    /// `None`: no single change makes all of them run there.
    pub fix: Option<crate::fix::Fix>,
}

/// The report's closing lines: one per pool with a failing image, one per failing image.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Remedies {
    pub pools: Vec<PoolRemedy>,
    pub images: Vec<ImageRemedy>,
}

/// Said of an image or pool for which no single change is known to work.
pub const NO_SINGLE_CHANGE: &str = "no single change";

impl Remedies {
    /// Each failing pool's line from its failing findings' fixes, and each failing image's
    /// own line (or [`NO_SINGLE_CHANGE`] where the command gave none).
    fn of(targets: &[String], images: &[ImageEntry]) -> Remedies {
        let failing = |i: &ImageEntry| i.targets.iter().any(|c| c.verdict == Verdict::Error);
        let pools = targets
            .iter()
            .filter_map(|t| {
                let on_pool: Vec<&ImageEntry> = images
                    .iter()
                    .filter(|i| {
                        i.targets
                            .iter()
                            .any(|c| c.target == *t && c.verdict == Verdict::Error)
                    })
                    .collect();
                if on_pool.is_empty() {
                    return None;
                }
                let fixes: Vec<&[crate::fix::Fix]> = on_pool
                    .iter()
                    .flat_map(|i| i.failing_on(Some(t)))
                    .map(|f| f.fixes.as_slice())
                    .collect();
                Some(PoolRemedy {
                    pool: t.clone(),
                    images: on_pool.iter().map(|i| i.reference.clone()).collect(),
                    fix: crate::fix::suggest::fleet::common_fix(&fixes),
                })
            })
            .collect();
        let images = images
            .iter()
            .filter(|i| failing(i))
            .map(|i| {
                i.remedy.clone().unwrap_or_else(|| ImageRemedy {
                    image: i.reference.clone(),
                    summary: NO_SINGLE_CHANGE.to_string(),
                    fix: None,
                })
            })
            .collect();
        Remedies { pools, images }
    }

    pub fn is_empty(&self) -> bool {
        self.pools.is_empty() && self.images.is_empty()
    }

    /// The closing "What would make it work" block; empty when nothing fails. `one_image`:
    /// the report of a single image, whose lines speak of "it".
    pub fn text(&self, one_image: bool) -> String {
        let mut out = String::new();
        if self.is_empty() {
            return out;
        }
        out.push_str("\nWhat would make it work\n");
        for p in &self.pools {
            let change = match &p.fix {
                // A bare list ("9.0+PTX") does not say what to do with it.
                Some(f) if f.kind == crate::fix::FixKind::ArchList => {
                    format!("rebuild the CUDA code for {}", f.replacement)
                }
                Some(f) => f.replacement.clone(),
                None => NO_SINGLE_CHANGE.to_string(),
            };
            let (whom, count) = if one_image {
                ("it", String::new())
            } else {
                (
                    "every failing image",
                    format!(
                        " ({})",
                        crate::vocab::count(p.images.len(), "image", "images")
                    ),
                )
            };
            let _ = writeln!(
                out,
                "  to make {whom} run on {}{count}: {}",
                escape::field(&p.pool),
                escape::field(&change)
            );
        }
        for i in &self.images {
            let whom = if one_image {
                "it".into()
            } else {
                escape::field(&i.image)
            };
            let _ = writeln!(
                out,
                "  to make {whom} run on every pool: {}",
                escape::field(&i.summary)
            );
        }
        out
    }
}

impl ImageEntry {
    /// An entry before judging: verdicts are filled in by [`Sweep::new`].
    pub fn new(reference: String, digest: Option<String>, partial: bool) -> ImageEntry {
        ImageEntry {
            reference,
            digest,
            aliases: Vec::new(),
            verdict: Verdict::Unknown,
            partial,
            targets: Vec::new(),
            requirements: Value::Null,
            findings: Vec::new(),
            remedy: None,
        }
    }

    /// The error findings that fail `target` (None: any target), GL000 aside.
    pub fn failing_on<'a>(&'a self, target: Option<&'a str>) -> impl Iterator<Item = &'a Finding> {
        self.findings.iter().filter(move |f| {
            f.rule != "GL000"
                && f.severity == Severity::Error
                && (target.is_none() || f.target.is_none() || f.target.as_deref() == target)
        })
    }

    /// Whether no verdict can rest on it: read incompletely, or not at all.
    fn incomplete(&self) -> bool {
        self.partial || self.findings.iter().any(|f| f.rule == "GL000")
    }

    /// The worst finding that applies to `target` (None: every finding), GL000 aside: an
    /// image that could not be read is `unknown`, not failed, unless something else failed.
    fn judge(&self, target: Option<&str>) -> Verdict {
        let worst = self
            .findings
            .iter()
            .filter(|f| f.rule != "GL000")
            .filter(|f| target.is_none() || f.target.is_none() || f.target.as_deref() == target)
            .map(|f| Verdict::of(f.severity))
            .max()
            .unwrap_or(Verdict::Ok);
        if self.incomplete() {
            worst.max(Verdict::Unknown)
        } else {
            worst
        }
    }
}

/// The report of a run over many images.
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    /// The targets every image was judged against, in order (the same for every share).
    pub targets: Vec<String>,
    pub images: Vec<ImageEntry>,
    /// What would make the failing images run: empty when no image fails a target.
    pub remedies: Remedies,
}

impl Sweep {
    /// Images sorted by reference (then digest), one entry per digest, findings sorted,
    /// verdicts computed: the same whatever order or shares the images came in.
    pub fn new(targets: Vec<String>, mut images: Vec<ImageEntry>) -> Sweep {
        images.sort_by(|a, b| (&a.reference, &a.digest).cmp(&(&b.reference, &b.digest)));
        let mut kept: Vec<ImageEntry> = Vec::new();
        // One entry per digest; an image without one (not read) is one per reference.
        let mut index: HashMap<(bool, String), usize> = HashMap::new();
        for image in images {
            let key = match &image.digest {
                Some(d) => (true, d.clone()),
                None => (false, image.reference.clone()),
            };
            match index.get(&key).map(|&i| &mut kept[i]) {
                Some(k) => {
                    if k.reference != image.reference {
                        k.aliases.push(image.reference);
                    }
                    k.aliases.extend(image.aliases);
                }
                None => {
                    index.insert(key, kept.len());
                    kept.push(image);
                }
            }
        }
        for image in &mut kept {
            let own = image.reference.clone();
            image.aliases.retain(|a| *a != own);
            image.aliases.sort();
            image.aliases.dedup();
            image
                .findings
                .sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
            image.findings.dedup();
            image.targets = targets
                .iter()
                .map(|t| Cell {
                    target: t.clone(),
                    verdict: image.judge(Some(t)),
                })
                .collect();
            image.verdict = image.judge(None);
        }
        let remedies = Remedies::of(&targets, &kept);
        Sweep {
            targets,
            images: kept,
            remedies,
        }
    }

    pub fn findings(&self) -> impl Iterator<Item = (&ImageEntry, &Finding)> {
        self.images
            .iter()
            .flat_map(|i| i.findings.iter().map(move |f| (i, f)))
    }

    fn count(&self, s: Severity) -> usize {
        self.findings().filter(|(_, f)| f.severity == s).count()
    }

    /// Whether some finding is at or above `fail_on` (None never fails).
    pub fn fails(&self, fail_on: Option<Severity>) -> bool {
        fail_on.is_some_and(|t| self.findings().any(|(_, f)| f.severity >= t))
    }

    /// The images that could not be read (completely).
    pub fn incomplete(&self) -> impl Iterator<Item = &ImageEntry> {
        self.images.iter().filter(|i| i.incomplete())
    }

    /// The report of one image, for the reporters of a single image (text, SARIF).
    fn image_report(&self, image: &ImageEntry) -> Report {
        let mut r = Report::new(format!(
            "image {}",
            paths::shown_reference(&image.reference)
        ));
        r.artifact = Some(paths::shown_reference(&image.reference));
        r.artifact_file = Some(paths::image_file(&image.reference));
        // An image read incompletely passes no target: none may read "ok".
        if !image.incomplete() {
            r.targets = self.targets.clone();
        }
        r.findings = image.findings.clone();
        r
    }

    pub fn render_json(&self) -> String {
        let findings: Vec<Value> = self
            .findings()
            .map(|(i, f)| {
                let mut v = serde_json::to_value(f).unwrap_or(Value::Null);
                if let Value::Object(m) = &mut v {
                    m.insert("image".into(), json!(i.reference));
                }
                v
            })
            .collect();
        let mut details = json!({"images": self.images});
        // Only when something fails: a clean run's report stays as it was.
        if !self.remedies.is_empty() {
            details["remedies"] = json!(self.remedies);
        }
        let v = json!({
            "schema_version": super::json::SCHEMA_VERSION,
            "tool": {"name": "gpulint", "version": env!("CARGO_PKG_VERSION")},
            "subject": SUBJECT,
            "targets": self.targets,
            "details": details,
            "findings": findings,
            "summary": {
                "error": self.count(Severity::Error),
                "warning": self.count(Severity::Warning),
                "info": self.count(Severity::Info),
            }
        });
        let mut s = serde_json::to_string_pretty(&v).unwrap_or_else(|_| "{}".into());
        s.push('\n');
        escape::json_text(s)
    }

    /// One SARIF run: every image's results, each located in its image; the verdicts per
    /// image and target in the run's `properties.images`.
    pub fn render_sarif(&self) -> String {
        let mut log: Value =
            serde_json::from_str(&super::sarif::render(&Report::new(SUBJECT))).unwrap_or_default();
        let mut results = Vec::new();
        // Images without findings add no result.
        for image in self.images.iter().filter(|i| !i.findings.is_empty()) {
            let one: Value = serde_json::from_str(&super::sarif::render(&self.image_report(image)))
                .unwrap_or_default();
            if let Some(rs) = one["runs"][0]["results"].as_array() {
                for r in rs {
                    let mut r = r.clone();
                    r["properties"]["image"] = json!(image.reference);
                    results.push(r);
                }
            }
        }
        log["runs"][0]["results"] = Value::Array(results);
        log["runs"][0]["properties"] = json!({"images": self.images});
        if !self.remedies.is_empty() {
            log["runs"][0]["properties"]["remedies"] = json!(self.remedies);
        }
        let mut s = serde_json::to_string_pretty(&log).unwrap_or_else(|_| "{}".into());
        s.push('\n');
        escape::json_text(s)
    }

    /// Each image's text report, then the verdicts as a table image × target.
    pub fn render_text(&self, style: Style) -> String {
        let mut out = String::new();
        if !style.quiet {
            let _ = writeln!(
                out,
                "{}\n",
                crate::vocab::count(self.images.len(), "image", "images")
            );
        }
        for image in &self.images {
            out.push_str(&super::text::render(&self.image_report(image), style));
            if !style.quiet {
                out.push('\n');
            }
        }
        if !style.quiet {
            out.push_str(&self.table());
            out.push_str(&self.remedies.text(false));
        }
        out
    }

    /// `image  verdict  target…` with one row per image, columns aligned.
    fn table(&self) -> String {
        let mut head = vec!["image".to_string(), "verdict".to_string()];
        head.extend(self.targets.iter().map(|t| escape::field(t).into_owned()));
        let mut rows = vec![head];
        for image in &self.images {
            let mut row = vec![
                escape::field(&image.reference).into_owned(),
                image.verdict.as_str().to_string(),
            ];
            row.extend(image.targets.iter().map(|c| c.verdict.as_str().to_string()));
            rows.push(row);
        }
        let widths: Vec<usize> = (0..rows[0].len())
            .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
            .collect();
        let mut out = String::new();
        for row in rows {
            let cells: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!("{c:<w$}"))
                .collect();
            let _ = writeln!(out, "{}", cells.join("  ").trim_end());
        }
        out
    }

    /// A report written by [`Sweep::render_json`], read back.
    pub fn from_json(text: &str) -> Result<Sweep, String> {
        let v: Value =
            serde_json::from_str(text).map_err(|e| format!("not a JSON report ({e})"))?;
        if v["schema_version"] != json!(super::json::SCHEMA_VERSION) {
            return Err(format!(
                "schema_version {} is not {} (written by another gpulint version?)",
                v["schema_version"],
                super::json::SCHEMA_VERSION
            ));
        }
        if v["subject"] != json!(SUBJECT) {
            return Err(
                "not a report over many images (`gpulint image` with several images, \
                 --images-from or --shard, and --format json writes one)"
                    .into(),
            );
        }
        let targets: Vec<String> =
            serde_json::from_value(v["targets"].clone()).map_err(|e| format!("targets: {e}"))?;
        let mut images: Vec<ImageEntry> = serde_json::from_value(v["details"]["images"].clone())
            .map_err(|e| format!("details.images: {e}"))?;
        let findings = v["findings"].as_array().ok_or("findings: not a list")?;
        let mut by_reference: HashMap<String, usize> = HashMap::new();
        for (i, image) in images.iter().enumerate() {
            by_reference.entry(image.reference.clone()).or_insert(i);
        }
        for (n, f) in findings.iter().enumerate() {
            let image = f["image"]
                .as_str()
                .ok_or_else(|| format!("findings[{n}]: no image"))?;
            let finding = finding_from_json(f).map_err(|e| format!("findings[{n}]: {e}"))?;
            let i = *by_reference.get(image).ok_or_else(|| {
                format!("findings[{n}]: image {image:?} is not in details.images")
            })?;
            images[i].findings.push(finding);
        }
        // The image lines were computed with the tables; the pool lines are recomputed.
        let remedies: Vec<ImageRemedy> = match v["details"].get("remedies") {
            Some(r) => serde_json::from_value(r["images"].clone())
                .map_err(|e| format!("details.remedies.images: {e}"))?,
            None => Vec::new(),
        };
        // A line without a change is what a missing one reads as.
        for r in remedies.into_iter().filter(|r| r.fix.is_some()) {
            if let Some(&i) = by_reference.get(&r.image) {
                images[i].remedy = Some(r);
            }
        }
        Ok(Sweep::new(targets, images))
    }

    /// Several reports as one: every image once, in the order [`Sweep::new`] gives. The
    /// reports must have judged the same targets.
    pub fn merge(parts: Vec<Sweep>) -> Result<Sweep, String> {
        let mut targets: Option<Vec<String>> = None;
        let mut images = Vec::new();
        for (n, p) in parts.into_iter().enumerate() {
            match &targets {
                Some(t) if *t != p.targets => {
                    return Err(format!(
                        "report {} judged other targets ({}) than the first ({}): \
                         shares of one run use one fleet",
                        n + 1,
                        p.targets.join(", "),
                        t.join(", ")
                    ))
                }
                Some(_) => {}
                None => targets = Some(p.targets.clone()),
            }
            images.extend(p.images);
        }
        Ok(Sweep::new(targets.unwrap_or_default(), images))
    }
}

/// A finding as the JSON report writes it.
#[derive(Deserialize)]
struct FindingJson {
    rule: String,
    severity: Severity,
    message: String,
    #[serde(default)]
    target: Option<String>,
    #[serde(default)]
    location: Option<Location>,
    #[serde(default)]
    help: Option<String>,
    #[serde(default)]
    fixes: Vec<crate::fix::Fix>,
}

fn finding_from_json(v: &Value) -> Result<Finding, String> {
    let f: FindingJson = serde_json::from_value(v.clone()).map_err(|e| e.to_string())?;
    let meta = crate::rules::find(&f.rule)
        .filter(|m| m.code == f.rule.as_str())
        .ok_or_else(|| format!("unknown rule {:?}", f.rule))?;
    let mut finding = meta.finding(f.message).with_severity(f.severity);
    finding.target = f.target;
    finding.location = f.location;
    finding.help = f.help;
    finding.fixes = f.fixes;
    Ok(finding)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(code: &str, sev: Severity, target: Option<&str>) -> Finding {
        let mut f = crate::rules::find(code)
            .unwrap()
            .finding(format!("{code} message"))
            .with_severity(sev);
        f.target = target.map(str::to_string);
        f
    }

    fn entry(reference: &str, digest: Option<&str>, findings: Vec<Finding>) -> ImageEntry {
        let mut e = ImageEntry::new(reference.into(), digest.map(str::to_string), false);
        e.findings = findings;
        e
    }

    #[test]
    fn verdicts_per_target_and_unknown_for_what_could_not_be_read() {
        let targets = vec!["t4".to_string(), "h100".to_string()];
        let s = Sweep::new(
            targets,
            vec![
                entry(
                    "b",
                    Some("sha256:b"),
                    vec![finding("GL001", Severity::Error, Some("h100"))],
                ),
                entry(
                    "a",
                    Some("sha256:a"),
                    vec![finding("GL003", Severity::Warning, None)],
                ),
                entry(
                    "c",
                    None,
                    vec![crate::rules::image::gl000_unreadable_input::image_unreadable("x")],
                ),
            ],
        );
        let got: Vec<(&str, Verdict, Vec<Verdict>)> = s
            .images
            .iter()
            .map(|i| {
                (
                    i.reference.as_str(),
                    i.verdict,
                    i.targets.iter().map(|c| c.verdict).collect(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    "a",
                    Verdict::Warning,
                    vec![Verdict::Warning, Verdict::Warning]
                ),
                ("b", Verdict::Error, vec![Verdict::Ok, Verdict::Error]),
                // Never "ok": nothing was judged.
                (
                    "c",
                    Verdict::Unknown,
                    vec![Verdict::Unknown, Verdict::Unknown]
                ),
            ]
        );
    }

    #[test]
    fn one_digest_is_one_image_and_json_reads_back_to_itself() {
        let f = || vec![finding("GL001", Severity::Error, Some("t4"))];
        let s = Sweep::new(
            vec!["t4".into()],
            vec![
                entry("repo:v2", Some("sha256:d"), f()),
                entry("repo:latest", Some("sha256:d"), f()),
                entry("repo:latest", Some("sha256:d"), f()),
            ],
        );
        assert_eq!(s.images.len(), 1);
        assert_eq!(s.images[0].reference, "repo:latest");
        assert_eq!(s.images[0].aliases, vec!["repo:v2".to_string()]);
        let json = s.render_json();
        let back = Sweep::from_json(&json).unwrap();
        assert_eq!(back, s);
        assert_eq!(back.render_json(), json);
        // Merging a report with itself changes nothing.
        let twice = Sweep::merge(vec![back.clone(), back]).unwrap();
        assert_eq!(twice.render_json(), json);
    }

    #[test]
    fn merge_refuses_reports_of_other_targets_and_other_reports() {
        let a = Sweep::new(vec!["t4".into()], vec![]);
        let b = Sweep::new(vec!["h100".into()], vec![]);
        assert!(Sweep::merge(vec![a, b])
            .unwrap_err()
            .contains("other targets"));
        let single = r#"{"schema_version": 2, "subject": "image x", "targets": []}"#;
        assert!(Sweep::from_json(single)
            .unwrap_err()
            .contains("not a report over many images"));
        let unknown_rule = Sweep::new(
            vec![],
            vec![entry(
                "x",
                Some("sha256:x"),
                vec![finding("GL001", Severity::Error, None)],
            )],
        )
        .render_json()
        .replace("\"GL001\"", "\"GL999\"");
        assert!(Sweep::from_json(&unknown_rule)
            .unwrap_err()
            .contains("unknown rule"));
    }
}
