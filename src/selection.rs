//! Which rules run: `select` / `extend-select` / `ignore`, from `.gpulint.toml` and the same
//! flags on the command line (ruff's semantics). Entries are rule codes or code prefixes
//! (`GL1` = every Dockerfile/run-configuration rule, `ALL`); when both a selection and an
//! ignore match a code, the more specific (longer) entry wins and an ignore wins a tie.
//! GL000 (part of the input could not be read) is never dropped by `select`, only by an
//! explicit `ignore`: a narrowed selection must not hide that the verdict is incomplete.
//!
//! Entries may also name a rule (`driver-in-image`); it stands for its code. Also the "did you
//! mean" suggestions for mistyped codes and names.

/// The code that marks unreadable input.
const UNREADABLE: &str = "GL000";

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuleSelection {
    /// `None` = every rule.
    pub select: Option<Vec<String>>,
    pub extend_select: Vec<String>,
    pub ignore: Vec<String>,
}

/// Length of the longest entry that is a prefix of `code` (`ALL` counts as length 0).
fn best_match(entries: &[String], code: &str) -> Option<usize> {
    entries
        .iter()
        .filter_map(|e| {
            if e.eq_ignore_ascii_case("ALL") {
                Some(0)
            } else {
                code.to_ascii_uppercase()
                    .starts_with(&e.to_ascii_uppercase())
                    .then_some(e.len())
            }
        })
        .max()
}

impl RuleSelection {
    pub fn enabled(&self, code: &str) -> bool {
        let selected = match &self.select {
            None => Some(0),
            Some(s) if code == UNREADABLE => best_match(s, code).or(Some(0)),
            Some(s) => best_match(s, code),
        };
        let selected = selected.max(best_match(&self.extend_select, code));
        match (selected, best_match(&self.ignore, code)) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(s), Some(i)) => s > i,
        }
    }

    /// Command-line flags over the configuration: `--select` replaces, `--extend-select` and
    /// `--ignore` add.
    pub fn overlay(&mut self, cli: &RuleSelection) {
        if let Some(s) = &cli.select {
            self.select = Some(s.clone());
            // A command-line selection starts over, as in ruff: the config's extensions go too.
            self.extend_select.clear();
        }
        self.extend_select.extend(cli.extend_select.iter().cloned());
        self.ignore.extend(cli.ignore.iter().cloned());
    }

    pub fn is_default(&self) -> bool {
        *self == RuleSelection::default()
    }
}

/// A rule as selectors may name it: its code and its kebab-case name (`rules::names`).
pub type RuleName = (&'static str, &'static str);

/// A selector as written (a code, a code prefix, `ALL`, or a rule name such as
/// `driver-in-image`) in the form the selection holds (upper-case codes and prefixes); the
/// error echoes the user's spelling and suggests the nearest code or name.
pub fn resolve_selector(entry: &str, known: &[RuleName]) -> Result<String, String> {
    let e = entry.trim().to_ascii_uppercase();
    if e == "ALL" || (!e.is_empty() && known.iter().any(|(code, _)| code.starts_with(&e))) {
        return Ok(e);
    }
    resolve_rule(entry, known)
}

/// One rule, by code or name (no prefixes): its code.
pub fn resolve_rule(entry: &str, known: &[RuleName]) -> Result<String, String> {
    let t = entry.trim();
    known
        .iter()
        .find(|(code, name)| code.eq_ignore_ascii_case(t) || name.eq_ignore_ascii_case(t))
        .map(|(code, _)| code.to_string())
        .ok_or_else(|| unknown_code_message(entry, known))
}

/// "unknown rule "GL1O1" (did you mean GL101?)": the nearest code, or name when a name was
/// meant.
pub fn unknown_code_message(entry: &str, known: &[RuleName]) -> String {
    let candidates = known.iter().flat_map(|(code, name)| [*code, *name]);
    match did_you_mean(entry, candidates) {
        Some(s) => format!("unknown rule {entry:?} (did you mean {s}?)"),
        None => format!("unknown rule {entry:?}; `gpulint rules` lists them"),
    }
}

/// The candidate nearest to `input` by edit distance (case-insensitive), when it is close
/// enough to be a typo: at most a third of the longer string, and at least one edit allowed.
pub fn did_you_mean<'a>(
    input: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let norm = |s: &str| -> Vec<char> {
        s.chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect()
    };
    let a = norm(input);
    if a.is_empty() {
        return None;
    }
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        let b = norm(c);
        let d = edit_distance(&a, &b);
        let limit = (a.len().max(b.len()) / 3).max(1);
        if d <= limit && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

fn edit_distance(a: &[char], b: &[char]) -> usize {
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sel(select: Option<&[&str]>, extend: &[&str], ignore: &[&str]) -> RuleSelection {
        let v = |x: &[&str]| x.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        RuleSelection {
            select: select.map(v),
            extend_select: v(extend),
            ignore: v(ignore),
        }
    }

    #[test]
    fn prefixes_and_specificity() {
        let s = sel(Some(&["GL1"]), &["GL001"], &["GL11", "GL114"]);
        assert!(s.enabled("GL101"));
        assert!(s.enabled("GL001"), "extend-select adds");
        assert!(!s.enabled("GL002"), "not selected");
        assert!(
            !s.enabled("GL114") && !s.enabled("GL110"),
            "ignore more specific"
        );
        assert!(s.enabled("GL000"), "unreadable input is not narrowed away");
        let s = sel(Some(&["GL114"]), &[], &["GL1"]);
        assert!(
            s.enabled("GL114"),
            "the exact selection beats the prefix ignore"
        );
        assert!(!sel(None, &[], &["ALL"]).enabled("GL001"));
        assert!(!sel(None, &[], &["GL000"]).enabled("GL000"));
    }

    #[test]
    fn command_line_select_replaces_the_config() {
        let mut c = sel(Some(&["GL0"]), &["GL101"], &["GL002"]);
        c.overlay(&sel(Some(&["GL1"]), &[], &["GL102"]));
        assert!(!c.enabled("GL001") && c.enabled("GL103") && !c.enabled("GL102"));
        assert!(!c.enabled("GL002"));
    }

    #[test]
    fn suggestions_for_typos_only() {
        let known = ["GL001", "GL101", "GL114"];
        assert_eq!(did_you_mean("GL1O1", known), Some("GL101"));
        assert_eq!(did_you_mean("gl0001", known), Some("GL001"));
        assert_eq!(did_you_mean("XYZ99", known), None);
        let named = [
            ("GL001", "no-kernel-image"),
            ("GL101", "torch-cuda-vs-base"),
            ("GL114", "x"),
        ];
        assert_eq!(resolve_selector("GL1", &named).unwrap(), "GL1");
        assert_eq!(resolve_selector("all", &named).unwrap(), "ALL");
        let e = resolve_selector("GL1O1", &named).unwrap_err();
        assert!(e.contains("did you mean GL101?"), "{e}");
        assert_eq!(did_you_mean("H10O", ["H100", "A100", "T4"]), Some("H100"));
    }

    /// Rule names are accepted wherever codes are, and a misspelt name is echoed as written
    /// with the nearest name suggested.
    #[test]
    fn rule_names_resolve_to_codes() {
        let known = crate::rules::names();
        assert_eq!(
            resolve_selector("driver-in-image", &known).unwrap(),
            "GL103"
        );
        assert_eq!(
            resolve_selector(" Driver-In-Image ", &known).unwrap(),
            "GL103"
        );
        assert_eq!(resolve_rule("no-kernel-image", &known).unwrap(), "GL001");
        assert!(resolve_rule("GL1", &known).is_err(), "a rule, not a prefix");
        let e = resolve_selector("driver-in-imag", &known).unwrap_err();
        assert!(
            e.contains("unknown rule \"driver-in-imag\" (did you mean driver-in-image?)"),
            "{e}"
        );
    }
}
