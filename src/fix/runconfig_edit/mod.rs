//! The edits that carry out run-configuration fixes (GL110 GPU request, GL114 shared memory,
//! GL116 legacy runtime) in compose files, Kubernetes manifests and shell scripts. A rule
//! records a [`crate::fix::plan::Plan`] on its finding (where, from the parsed spec; what; how safe), and
//! [`attach`] turns it into exact [`TextEdit`]s of the linted text once the text is at hand:
//! YAML by indentation ([`yaml`]), `docker run` by the script's words ([`shell`]). A plan the
//! text does not bear out (a flow mapping, a word from a variable, a position that fell back
//! to the service key) gives no edit: the fix stays advice (`manual`).

mod shell;
mod yaml;

use crate::finding::Finding;
use crate::fix::plan::{At, PlannedEdit, YamlLeaf};
use crate::fix::{Applicability, FixKind, TextEdit};

/// Turn the plans of `findings` that point into `file` (`text`) into edits of their
/// run-configuration fix. `markdown`: `text` is a Markdown file whose shell code blocks are
/// the script. The shell of a CI pipeline (read out of its YAML, whose offsets are not the
/// file's) is not edited.
pub fn attach(findings: &mut [Finding], file: &str, text: &str, markdown: bool) {
    let mut script: Option<shell::Script> = None;
    let doc = yaml::Doc::new(text);
    // Line starts once per file: an edit's line and column are found by search, not by
    // counting from the start of the text for each of thousands of edits.
    let starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let shell_ok = markdown || !is_extracted_shell(file);
    for f in findings.iter_mut() {
        let Some(plan) = &f.planned else { continue };
        if f.location.as_ref().and_then(|l| l.file.as_deref()) != Some(file) {
            continue;
        }
        let mut splices = Vec::new();
        let mut ok = true;
        for e in &plan.edits {
            let made = match e {
                PlannedEdit::RunFlags { .. }
                | PlannedEdit::RunRuntime { .. }
                | PlannedEdit::NvidiaDocker { .. } => shell_ok
                    .then(|| {
                        script
                            .get_or_insert_with(|| shell::Script::new(file, text, markdown))
                            .edits(e)
                    })
                    .flatten(),
                _ => yaml_edits(&doc, e),
            };
            match made {
                Some(s) => splices.extend(s),
                None => {
                    ok = false;
                    break;
                }
            }
        }
        // The same edit planned for two merged repeats is made once.
        splices.sort();
        splices.dedup();
        let edits: Option<Vec<TextEdit>> = ok
            .then(|| {
                splices
                    .iter()
                    .map(|(a, b, t)| text_edit(file, text, &starts, *a, *b, t))
                    .collect()
            })
            .flatten()
            .filter(|e: &Vec<TextEdit>| !e.is_empty() && !overlapping(e));
        let applicability = plan.applicability;
        if let Some(fix) = f
            .fixes
            .iter_mut()
            .find(|x| x.kind == FixKind::RunConfig && x.edits.is_empty())
        {
            match edits {
                Some(edits) => {
                    fix.edits = edits;
                    fix.applicability = applicability;
                }
                None => fix.applicability = Applicability::Manual,
            }
        }
    }
}

/// [`TextEdit::with_line_starts`]: the line starts of `text` are at hand.
fn text_edit(
    file: &str,
    text: &str,
    starts: &[usize],
    start: usize,
    end: usize,
    new_text: &str,
) -> Option<TextEdit> {
    TextEdit::with_line_starts(file, text, starts, start, end, new_text)
}

/// Shell read out of another format (Markdown code blocks, CI pipeline steps) handed over as
/// the other format's own text.
fn is_extracted_shell(file: &str) -> bool {
    let lower = file.to_ascii_lowercase();
    [".md", ".markdown", ".yml", ".yaml", ".mdx", ".rst"]
        .iter()
        .any(|s| lower.ends_with(s))
}

/// Whether two edits of one fix touch the same bytes (then it is not applied at all).
fn overlapping(edits: &[TextEdit]) -> bool {
    let mut v: Vec<&TextEdit> = edits.iter().collect();
    v.sort_by_key(|e| (e.start, e.end));
    v.windows(2)
        .any(|w| w[1].start < w[0].end || w[1].start == w[0].start)
}

/// The splices of one YAML plan.
fn yaml_edits(doc: &yaml::Doc, e: &PlannedEdit) -> Option<Vec<yaml::Splice>> {
    match e {
        PlannedEdit::YamlAdd { map, path, leaf } => {
            let m = doc.resolve(map)?;
            Some(vec![doc.add(m, path, leaf)?])
        }
        PlannedEdit::YamlDrop { at, key, value } => {
            Some(vec![doc.delete_line(holds(doc, *at, key, value)?)?])
        }
        PlannedEdit::ComposeRuntimeToReservation {
            runtime,
            service,
            reservation,
        } => {
            let line = holds(doc, *runtime, "runtime", "nvidia")?;
            let svc = doc.resolve(service)?;
            let item = YamlLeaf::Item(reservation.clone());
            let rest: Vec<String> = ["resources", "reservations", "devices"]
                .iter()
                .map(|s| s.to_string())
                .collect();
            match doc.has(svc, "deploy") {
                // The service has its own `deploy:`: the reservation joins it.
                Some((deploy, "")) => Some(vec![
                    doc.delete_line(line)?,
                    doc.add_under(svc, deploy, &rest, &item)?,
                ]),
                Some(_) => None,
                None => {
                    let mut path = vec!["deploy".to_string()];
                    path.extend(rest);
                    let lines = doc.render(svc.col, &path, &item);
                    let start = doc.start_of(line)?;
                    let end = start + doc.line(line).len();
                    Some(vec![(start, end, lines.join(doc.eol))])
                }
            }
        }
        PlannedEdit::K8sLimitFromRequest { request } => {
            let col = request.col.checked_sub(1)? as usize;
            let (key, value) = doc.key_at(request.line, col)?;
            let n = value.trim_matches(['"', '\'']);
            if !key.starts_with("nvidia.com/")
                || n.is_empty()
                || !n.chars().all(|c| c.is_ascii_digit())
            {
                return None;
            }
            // requests → resources: the limit goes beside the request.
            let requests = doc.containing(request.line, col);
            let resources_line = parent_key(doc, requests)?;
            let (rkey, _) = doc.key_at(resources_line.0, resources_line.1)?;
            if rkey != "requests" {
                return None;
            }
            let resources = doc.containing(resources_line.0, resources_line.1);
            Some(vec![doc.add(
                resources,
                &["limits".to_string()],
                &YamlLeaf::Entries(vec![format!("{key}: {n}")]),
            )?])
        }
        _ => None,
    }
}

/// The line at `at` when it holds the entry `key: value` (value quoted or not).
fn holds(doc: &yaml::Doc, at: At, key: &str, value: &str) -> Option<u32> {
    let col = at.col.checked_sub(1)? as usize;
    let (k, v) = doc.key_at(at.line, col)?;
    let line = doc.line(at.line);
    (k == key && v.trim_matches(['"', '\'']) == value && line[..col].trim().is_empty())
        .then_some(at.line)
}

/// The key line (and its key's column) whose block value is `map`.
fn parent_key(doc: &yaml::Doc, map: yaml::Map) -> Option<(u32, usize)> {
    let line = (1..map.first).rev().find(|&p| {
        let l = doc.line(p);
        let t = l.trim_start();
        !t.is_empty() && !t.starts_with('#') && l.len() - t.len() < map.col
    })?;
    let l = doc.line(line);
    let ind = l.len() - l.trim_start().len();
    let col = match l[ind..].strip_prefix('-') {
        Some(r) => ind + 1 + (r.len() - r.trim_start().len()),
        None => ind,
    };
    Some((line, col))
}

#[cfg(test)]
mod tests;
