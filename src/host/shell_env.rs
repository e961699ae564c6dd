//! The files that set `LD_LIBRARY_PATH` for later shells and environments: `/etc/environment`,
//! `/etc/profile`, `/etc/profile.d/*.sh`, the system and per-user shell rc files, and each conda
//! environment's `etc/conda/activate.d/*.sh` (run by `conda activate`). Read as text, line by
//! line: a line that assigns LD_LIBRARY_PATH is taken as run (conditions around it are not
//! evaluated), and the value is what it would be in a fresh login shell, where LD_LIBRARY_PATH
//! starts empty.

use super::python::{conda_envs, home_dirs};
use super::reader::{EntryKind, HostReader};

/// One assignment of LD_LIBRARY_PATH in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LdExport {
    /// The host file.
    pub file: String,
    /// 1-based line number.
    pub line_no: u32,
    /// The line as written (trimmed).
    pub line: String,
    /// The absolute directories of the value, in order, after expanding what is known
    /// (`$LD_LIBRARY_PATH` → empty, `$CONDA_PREFIX` → the environment, `$HOME` / `~` → the
    /// home); a part that still names an unknown variable is left out.
    pub dirs: Vec<String>,
    /// For an activate.d script: the conda environment it belongs to (it only runs there).
    pub conda_env: Option<String>,
}

/// Most files of one directory, lines of one file and assignments in all looked at: each
/// assignment is judged against every torch install, so a hostile tree must not multiply them.
const MAX_DIR_FILES: usize = 256;
const MAX_LINES: usize = 20_000;
const MAX_EXPORTS: usize = 256;

/// The invoking user's startup files.
const RC_FILES: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
];

/// The `*.sh` regular files of a directory, by name.
fn sh_files(r: &dyn HostReader, dir: &str) -> Vec<String> {
    r.list_dir(dir)
        .unwrap_or_default()
        .into_iter()
        .filter(|(n, k)| n.ends_with(".sh") && *k != EntryKind::Dir)
        .take(MAX_DIR_FILES)
        .map(|(n, _)| format!("{dir}/{n}"))
        .collect()
}

/// The value assigned to LD_LIBRARY_PATH on a shell line (`export LD_LIBRARY_PATH=…`,
/// `LD_LIBRARY_PATH="…"`, `declare -x …`), unquoted; None for any other line.
pub fn ld_assignment(line: &str) -> Option<String> {
    let t = line.trim();
    if t.starts_with('#') {
        return None;
    }
    let t = t
        .strip_prefix("export ")
        .or_else(|| t.strip_prefix("declare -x "))
        .unwrap_or(t)
        .trim_start();
    let v = t.strip_prefix("LD_LIBRARY_PATH=")?;
    let value = match v.chars().next() {
        Some(q @ ('"' | '\'')) => {
            let rest = &v[1..];
            rest.find(q).map(|e| &rest[..e]).unwrap_or(rest)
        }
        _ => v
            .split(|c: char| c.is_whitespace() || c == ';')
            .next()
            .unwrap_or_default(),
    };
    Some(value.to_string())
}

/// Removes every `${LD_LIBRARY_PATH…}` (including `${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}`) and
/// `$LD_LIBRARY_PATH`: empty in a fresh shell.
fn drop_self_reference(v: &str) -> String {
    let mut s = v.to_string();
    while let Some(i) = s.find("${LD_LIBRARY_PATH") {
        let mut depth = 0;
        let mut end = s.len();
        for (j, c) in s[i..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i + j + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        s.replace_range(i..end, "");
    }
    s.replace("$LD_LIBRARY_PATH", "")
}

/// The absolute directories of an assigned value, with the known variables expanded.
pub fn value_dirs(value: &str, home: Option<&str>, conda_env: Option<&str>) -> Vec<String> {
    let mut v = drop_self_reference(value);
    if let Some(env) = conda_env {
        v = v
            .replace("${CONDA_PREFIX}", env)
            .replace("$CONDA_PREFIX", env);
    }
    if let Some(h) = home {
        v = v.replace("${HOME}", h).replace("$HOME", h);
    }
    v.split(':')
        .map(|d| match (d.strip_prefix('~'), home) {
            (Some(rest), Some(h)) if rest.is_empty() || rest.starts_with('/') => {
                format!("{h}{rest}")
            }
            _ => d.to_string(),
        })
        .filter(|d| d.starts_with('/') && !d.contains('$'))
        .map(|d| d.trim_end_matches('/').to_string())
        .filter(|d| !d.is_empty())
        .collect()
}

fn scan(
    r: &dyn HostReader,
    file: &str,
    home: Option<&str>,
    conda_env: Option<&str>,
    out: &mut Vec<LdExport>,
) {
    let Some(text) = r.read_string(file) else {
        return;
    };
    for (i, line) in text.lines().enumerate().take(MAX_LINES) {
        if out.len() >= MAX_EXPORTS {
            return;
        }
        let Some(value) = ld_assignment(line) else {
            continue;
        };
        out.push(LdExport {
            file: file.to_string(),
            line_no: i as u32 + 1,
            line: line.trim().to_string(),
            dirs: value_dirs(&value, home, conda_env),
            conda_env: conda_env.map(str::to_string),
        });
    }
}

/// Every LD_LIBRARY_PATH assignment in the files that set up shells and conda environments.
pub fn ld_exports(r: &dyn HostReader) -> Vec<LdExport> {
    let mut out = Vec::new();
    for f in [
        "/etc/environment",
        "/etc/profile",
        "/etc/bash.bashrc",
        "/etc/bashrc",
    ] {
        scan(r, f, None, None, &mut out);
    }
    for f in sh_files(r, "/etc/profile.d") {
        scan(r, &f, None, None, &mut out);
    }
    for h in home_dirs(r) {
        for rc in RC_FILES {
            scan(r, &format!("{h}/{rc}"), Some(&h), None, &mut out);
        }
    }
    for env in conda_envs(r) {
        for f in sh_files(r, &format!("{env}/etc/conda/activate.d")) {
            scan(r, &f, None, Some(&env), &mut out);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assignments_and_their_directories() {
        assert_eq!(
            ld_assignment("export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$LD_LIBRARY_PATH")
                .as_deref(),
            Some("/usr/local/cuda/lib64:$LD_LIBRARY_PATH")
        );
        assert_eq!(
            ld_assignment("LD_LIBRARY_PATH=\"/opt/x/lib\"").as_deref(),
            Some("/opt/x/lib")
        );
        assert_eq!(ld_assignment("# export LD_LIBRARY_PATH=/x"), None);
        assert_eq!(ld_assignment("export PATH=/x:$PATH"), None);
        assert_eq!(
            value_dirs(
                "/usr/local/cuda-12.1/lib64${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}",
                None,
                None
            ),
            vec!["/usr/local/cuda-12.1/lib64"]
        );
        assert_eq!(
            value_dirs(
                "${CONDA_PREFIX}/lib:$LD_LIBRARY_PATH",
                None,
                Some("/opt/conda/envs/ml")
            ),
            vec!["/opt/conda/envs/ml/lib"]
        );
        assert_eq!(
            value_dirs("~/cuda/lib64:$HOME/x:$UNKNOWN/lib", Some("/home/a"), None),
            vec!["/home/a/cuda/lib64", "/home/a/x"]
        );
    }

    /// A file of many assignments yields a bounded number of them.
    #[test]
    fn assignments_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("etc/environment");
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(&f, "LD_LIBRARY_PATH=/x\n".repeat(10_000)).unwrap();
        let r = crate::host::CapturedReader::new(dir.path()).unwrap();
        let e = ld_exports(&r);
        assert_eq!(e.len(), MAX_EXPORTS);
        assert_eq!((e[0].file.as_str(), e[0].line_no), ("/etc/environment", 1));
        assert_eq!(e[0].dirs, vec!["/x"]);
    }
}
