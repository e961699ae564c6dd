//! `docker buildx bake` files (`docker-bake.hcl`, `docker-bake.json`): the (Dockerfile, build
//! args) pairs a bake builds. Each `target`'s context, dockerfile, `args` and stage `target`,
//! with `inherits` merged, `matrix` expanded (one target per combination) and `variable`
//! defaults substituted into `${…}`. A subset of HCL: attributes, blocks, strings with
//! interpolation, lists, objects; anything else (functions, operators, heredocs) is an
//! unknown value, never guessed. Bake files are untrusted input: nesting is bounded.
//!
//! Bake's file format: <https://docs.docker.com/build/bake/reference/>.

use crate::runconfig::build::SpecError;
use crate::runconfig::dockerfile::Pos;
use crate::runconfig::expand::{ExpandLimit, ExpansionBudget, MAX_WORD};
use crate::runconfig::runspec::LineIndex;
use std::collections::HashMap;
use std::rc::Rc;

mod hcl;
mod json;
mod targets;
use hcl::*;
use json::*;
pub use targets::*;

/// A value as written: a string (raw, with its `${…}`, and the offset of its first
/// character), a bare word (a variable, number or bool), a list, an object, or something we
/// do not evaluate. Text is shared, not copied, by the targets that inherit it (a long value
/// inherited by thousands of targets was copied into each).
#[derive(Debug, Clone, PartialEq)]
enum V {
    Str(Rc<str>, usize),
    Word(Rc<str>, usize),
    List(Vec<V>),
    Obj(Vec<(String, V)>),
    Other,
}

#[derive(Debug)]
struct Block {
    kind: String,
    labels: Vec<String>,
    attrs: Vec<(String, V)>,
    off: usize,
}

/// One target of the bake (a matrix combination is a target of its own).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BakeTarget {
    pub name: String,
    /// The target block.
    pub pos: Pos,
    /// Relative to the bake file's directory (`.` when not given).
    pub context: String,
    /// Relative to the context (`Dockerfile` when not given).
    pub dockerfile: String,
    /// `args` after substitution, each at its value; values we cannot evaluate are left out.
    pub args: Vec<(String, String, Pos)>,
    /// The stage to build (`target = "runtime"`).
    pub target: Option<String>,
}

const MAX_DEPTH: usize = 32;

/// A bake file read: its targets, and where it went past an expansion bound (GL100; the
/// value is left out, as a value we cannot evaluate is).
#[derive(Debug, Default)]
pub struct Bake {
    pub targets: Vec<BakeTarget>,
    pub errors: Vec<SpecError>,
}

/// The targets of a bake file: HCL, or JSON when `json`.
pub fn parse(text: &str, json: bool) -> Bake {
    let blocks = if json {
        parse_json_blocks(text)
    } else {
        parse_hcl_blocks(text)
    };
    targets(&blocks, text)
}

/// Bake's default file names (`docker buildx bake` reads these without `-f`).
pub fn is_bake_name(name: &str) -> Option<bool> {
    let n = name.to_ascii_lowercase();
    if !n.starts_with("docker-bake") {
        return None;
    }
    if n.ends_with(".hcl") {
        Some(false)
    } else if n.ends_with(".json") {
        Some(true)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `inherits` fan-out over a long chain (8 parents per level, 12 levels: 8^12 visits
    /// without a bound) and a self-cycle cost a bounded number of visits, and still merge.
    #[test]
    fn inherits_fan_out_and_cycles_are_bounded() {
        let mut text = String::new();
        for level in 0..12 {
            let parent = format!("\"t{}\"", level + 1);
            let parents = vec![parent; 8].join(", ");
            text.push_str(&format!(
                "target \"t{level}\" {{\n  inherits = [{parents}, \"t{level}\"]\n}}\n"
            ));
        }
        text.push_str("target \"t12\" {\n  args = { DEEP = \"1\" }\n}\n");
        let blocks = parse_hcl_blocks(&text);
        let mut visits = 0;
        let attrs = resolved(&target_index(&blocks), "t0", &mut Vec::new(), &mut visits);
        assert!(visits <= MAX_INHERIT_VISITS, "{visits}");
        assert!(
            matches!(attr(&attrs, "args"), Some(V::Obj(f)) if f.iter().any(|(k, _)| k == "DEEP")),
            "{attrs:?}"
        );
    }

    /// Variables that double at each step (`V2 = "${V1}${V1}"`, 64 steps in 2.8 KB) grew to
    /// 2^64 bytes: the first value past 1 MiB is a located error and is left out, and what
    /// refers to it is unknown, never expanded further.
    #[test]
    fn doubling_variables_stop_at_the_word_bound() {
        let mut text = String::from("variable \"V0\" { default = \"a\" }\n");
        for i in 1..=64 {
            text += &format!(
                "variable \"V{i}\" {{ default = \"${{V{p}}}${{V{p}}}\" }}\n",
                p = i - 1
            );
        }
        text += "target \"t\" {\n  args = {\n    A = \"${V64}\"\n    B = \"${V20}\"\n  }\n}\n";
        let bake = parse(&text, false);
        assert_eq!(bake.errors.len(), 1, "{:?}", bake.errors);
        // V21 (line 22) is 2 MiB: the first past the bound, at its value.
        assert_eq!(bake.errors[0].pos, Pos { line: 22, col: 29 });
        assert!(
            bake.errors[0].message.contains("exceeds 1 MiB"),
            "{:?}",
            bake.errors
        );
        let args = &bake.targets[0].args;
        assert_eq!(args.len(), 1, "A is unknown, B is 1 MiB: {:?}", args.len());
        assert_eq!((args[0].0.as_str(), args[0].1.len()), ("B", 1 << 20));
    }

    /// Values each under 1 MiB, copied into many targets (a matrix): the file's expansions
    /// stop at the shared budget, reported once, and the values past it are left out.
    #[test]
    fn copies_into_many_targets_share_one_budget() {
        let mut text = String::from("variable \"V0\" { default = \"aaaaaaaa\" }\n");
        for i in 1..=17 {
            text += &format!(
                "variable \"V{i}\" {{ default = \"${{V{p}}}${{V{p}}}\" }}\n",
                p = i - 1
            );
        }
        let vals: Vec<String> = (0..100).map(|i| format!("\"{i}\"")).collect();
        text += &format!(
            "target \"t\" {{\n  matrix = {{ i = [{}] }}\n  args = {{ A = \"${{V17}}\" }}\n}}\n",
            vals.join(", ")
        );
        let bake = parse(&text, false);
        assert_eq!(bake.targets.len(), 100);
        assert_eq!(bake.errors.len(), 1, "{:?}", bake.errors);
        assert!(
            bake.errors[0].message.contains("in all"),
            "{:?}",
            bake.errors
        );
        assert_eq!(bake.errors[0].pos.line, 21);
        let kept: usize = bake
            .targets
            .iter()
            .flat_map(|t| &t.args)
            .map(|a| a.1.len())
            .sum();
        assert!(kept <= crate::runconfig::expand::MAX_FILE, "{kept}");
        // The first targets have the value; the budget ends about 31 MiB in (the variables
        // took 2 MiB of it).
        assert_eq!(bake.targets[0].args[0].1.len(), 1 << 20);
        assert!(bake.targets[99].args.is_empty());
    }

    /// Many variables and targets: each name is looked up, not searched for among all the
    /// blocks (a scan per reference made a long file quadratic: 20 000 variables and targets
    /// took over 2 minutes here).
    #[test]
    fn many_variables_and_targets_resolve_by_lookup() {
        let n = 20_000;
        let mut text = String::from("variable \"V0\" { default = \"1\" }\n");
        for i in 1..n {
            text += &format!("variable \"V{i}\" {{ default = V{} }}\n", i - 1);
        }
        text += &format!("target \"base\" {{\n  args = {{ A = V{} }}\n}}\n", n - 1);
        for i in 0..n {
            text += &format!(
                "target \"t{i}\" {{\n  inherits = [\"base\"]\n  dockerfile-inline = \"FROM x\"\n}}\n"
            );
        }
        let t = std::time::Instant::now();
        let bake = parse(&text, false);
        // A hang guard, not a measurement.
        assert!(t.elapsed() < std::time::Duration::from_secs(20));
        assert!(bake.errors.is_empty(), "{:?}", bake.errors);
        assert_eq!(bake.targets.len(), 1);
        assert_eq!(bake.targets[0].args[0].1, "1");
    }

    /// JSON strings are placed by lookup: an escaped string (`\u0041`) is not found as
    /// re-encoded text, and each such miss searched the rest of the file (60 000 of them in
    /// 2 MB: over 100 s here).
    #[test]
    fn json_strings_are_placed_in_linear_time() {
        let vars: Vec<String> = (0..60_000)
            .map(|i| format!("\"V{i:06}\": {{\"default\": \"\\u0041x\"}}"))
            .collect();
        let text = format!(
            "{{\"variable\": {{{}}},\n \"target\": {{\"t\": {{\"args\": {{\"A\": \"${{V059999}}\"}}}}}}}}",
            vars.join(", ")
        );
        let t = std::time::Instant::now();
        let bake = parse(&text, true);
        // A hang guard, not a measurement.
        assert!(t.elapsed() < std::time::Duration::from_secs(20));
        let a = &bake.targets[0].args[0];
        assert_eq!((a.0.as_str(), a.1.as_str(), a.2.line), ("A", "Ax", 2));
    }

    /// A target setting many args over a parent's many args merges them by key in one pass
    /// (a search of the merged args per arg made 50 000 over 50 000 take minutes), and the
    /// parent's text is shared by the targets that inherit it, not copied into each.
    #[test]
    fn inherited_args_merge_in_linear_time() {
        let args = |p: &str| -> String {
            (0..50_000)
                .map(|i| format!("    {p}{i} = \"{i}\"\n"))
                .collect()
        };
        let text = format!(
            "target \"base\" {{\n  args = {{\n{}    BIG = \"{}\"\n  }}\n}}\n\
             target \"app\" {{\n  inherits = [\"base\"]\n  args = {{\n{}    A7 = \"x\"\n  }}\n}}\n",
            args("A"),
            "b".repeat(1 << 20),
            args("B"),
        );
        let t = std::time::Instant::now();
        let bake = parse(&text, false);
        // A hang guard, not a measurement.
        assert!(t.elapsed() < std::time::Duration::from_secs(30));
        let app = bake.targets.iter().find(|t| t.name == "app").unwrap();
        assert_eq!(app.args.len(), 100_001);
        // Set again by the target: its value, after the parent's others.
        assert_eq!(
            app.args.last().map(|a| (a.0.as_str(), a.1.as_str())),
            Some(("A7", "x"))
        );
        assert!(!app.args.iter().any(|a| a.0 == "A7" && a.1 == "7"));
    }

    /// A matrix whose product is huge yields at most MAX_TARGETS targets, built lazily.
    #[test]
    fn a_huge_matrix_is_bounded() {
        let vals = |n: usize| {
            (0..n)
                .map(|i| format!("\"{i}\""))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let text = format!(
            "target \"m\" {{\n  dockerfile = \"Dockerfile\"\n  matrix = {{\n    a = [{}]\n    b = [{}]\n    c = [{}]\n  }}\n  args = {{ A = \"${{a}}\" }}\n}}\ntarget \"n\" {{\n  args = {{ B = \"1\" }}\n}}\n",
            vals(300),
            vals(300),
            vals(300)
        );
        let t = parse(&text, false).targets;
        assert_eq!(t.len(), MAX_TARGETS);
        let m = parse_hcl_blocks(&text);
        let c = combinations(attr(&m[0].attrs, "matrix"), &mut Default::default());
        assert!(c.unwrap().len() <= MAX_TARGETS);
    }

    #[test]
    fn targets_variables_inherits_and_matrix() {
        let hcl = r#"
# comment
variable "CUDA" {
  default = "12.4.1"
}
group "default" {
  targets = ["base", "app"]
}
target "base" {
  context = "docker"
  args = {
    CUDA_VERSION = "${CUDA}"
    PY = 3.11
  }
}
target "app" {
  inherits = ["base"]
  dockerfile = "Dockerfile.gpu"
  target = "runtime"
  name = "app-${torch}"
  matrix = {
    torch = ["2.3.0", "2.5.1"]
  }
  args = {
    TORCH = "${torch}"
    TAG = "${upper(CUDA)}" // a function: not evaluated
  }
}
"#;
        let t = parse(hcl, false).targets;
        let names: Vec<&str> = t.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, vec!["base", "app-2.3.0", "app-2.5.1"]);
        assert_eq!(
            (t[0].context.as_str(), t[0].dockerfile.as_str()),
            ("docker", "Dockerfile")
        );
        let args = |t: &BakeTarget| -> Vec<(String, String, u32)> {
            t.args
                .iter()
                .map(|(k, v, p)| (k.clone(), v.clone(), p.line))
                .collect()
        };
        assert_eq!(
            args(&t[0]),
            vec![
                ("CUDA_VERSION".into(), "12.4.1".into(), 12),
                ("PY".into(), "3.11".into(), 13)
            ]
        );
        // Inherited context and args, its own dockerfile and stage; the matrix value is
        // placed in the matrix.
        assert_eq!(t[2].context, "docker");
        assert_eq!(t[2].dockerfile, "Dockerfile.gpu");
        assert_eq!(t[2].target.as_deref(), Some("runtime"));
        let a = args(&t[2]);
        assert!(a.contains(&("TORCH".into(), "2.5.1".into(), 22)), "{a:?}");
        assert!(
            a.contains(&("CUDA_VERSION".into(), "12.4.1".into(), 12)),
            "{a:?}"
        );
        assert!(!a.iter().any(|x| x.0 == "TAG"), "{a:?}");
    }

    #[test]
    fn json_form_and_hostile_input() {
        let j = r#"{"variable": {"CUDA": {"default": "11.3.1"}},
 "target": {"gpu": {"context": ".", "dockerfile": "Dockerfile",
   "args": {"CUDA_VERSION": "${CUDA}"}}}}"#;
        let t = parse(j, true).targets;
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].args[0].0, "CUDA_VERSION");
        assert_eq!(t[0].args[0].1, "11.3.1");
        assert_eq!(t[0].args[0].2.line, 3);
        // Deep nesting, unterminated strings and blocks: no panic, bounded.
        let deep = format!("target \"x\" {{ args = {}", "[".repeat(10_000));
        let _ = parse(&deep, false);
        let _ = parse("target \"x\" { context = \"unterminated\n", false);
        let _ = parse("}}}} = = \"\" target", false);
        assert!(parse("not json", true).targets.is_empty());
        // Token soup (a fixed pseudo-random sequence): parsing ends, without a panic.
        let toks = [
            "target", "\"t\"", "{", "}", "[", "]", "=", ",", "\n", "args", "matrix", "name",
            "\"${x}\"", "\"$${\"", "x", "# c\n", "/*", "*/", "inherits", "\"", ":", "(", ")", "${",
            "variable", "default",
        ];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..2000 {
            let mut t = String::new();
            for _ in 0..40 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                t.push_str(toks[(seed % toks.len() as u64) as usize]);
                t.push(' ');
            }
            let _ = parse(&t, false);
        }
    }
}
