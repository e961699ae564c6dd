//! Package installs read from shell commands: pip / pip3 / `python -m pip` / `uv pip` (with
//! index URLs, find-links, requirement and constraint files), conda / mamba / micromamba, and
//! apt / yum / dnf / microdnf / zypper / apk. Also the unquoted `pip install x>=1` redirect.

use super::dockerfile::Pos;
use super::shell::{self, Vars};
use crate::version::CudaVersion;

mod conda;
mod os;
mod pip;
pub use conda::*;
pub use os::*;
pub use pip::*;

/// A shell word with its file position.
#[derive(Debug, Clone)]
pub struct LWord {
    pub text: String,
    pub raw: String,
    pub pos: Pos,
    pub unresolved: bool,
}

#[derive(Debug, Clone)]
pub struct LRedirect {
    pub op: String,
    pub target: Option<LWord>,
    pub pos: Pos,
}

/// A simple command with positions, and the variables in scope when it ran.
#[derive(Debug, Clone)]
pub struct LCmd {
    pub words: Vec<LWord>,
    pub assigns: Vec<(String, String)>,
    pub redirects: Vec<LRedirect>,
    pub pos: Pos,
    pub vars: Vars,
    /// The instruction (RUN) this command is part of; its own position outside a Dockerfile.
    pub run: Pos,
}

impl LCmd {
    pub fn from_shell(c: &shell::Command, vars: &Vars, at: &dyn Fn(usize) -> Pos) -> LCmd {
        LCmd::from_shell_owned(c.clone(), vars, at)
    }
    /// [`LCmd::from_shell`] taking the command: its words move, rather than being copied
    /// while the parsed script is still held (a RUN of millions of words held both).
    pub fn from_shell_owned(c: shell::Command, vars: &Vars, at: &dyn Fn(usize) -> Pos) -> LCmd {
        let w = |w: shell::Word| LWord {
            pos: at(w.offset),
            text: w.text,
            raw: w.raw,
            unresolved: w.unresolved,
        };
        LCmd {
            words: c.words.into_iter().map(w).collect(),
            assigns: c.assigns,
            redirects: c
                .redirects
                .into_iter()
                .map(|r| LRedirect {
                    op: r.op,
                    target: r.target.map(w),
                    pos: at(r.offset),
                })
                .collect(),
            pos: at(c.offset),
            vars: vars.clone(),
            run: at(c.offset),
        }
    }
    /// The command name without its directory (`/usr/bin/pip3` → `pip3`).
    pub fn name(&self) -> &str {
        self.words
            .first()
            .map(|w| w.text.rsplit('/').next().unwrap_or(&w.text))
            .unwrap_or("")
    }
    /// A variable visible to the command: a prefix assignment, else the environment.
    pub fn var(&self, name: &str) -> Option<String> {
        if let Some((_, v)) = self.assigns.iter().rev().find(|(k, _)| k == name) {
            return Some(v.clone());
        }
        match self.vars.get(name) {
            Some(shell::Var::Set(v)) => Some(v.clone()),
            _ => None,
        }
    }
}

/// One requirement: `torch==2.3.0+cu121`, `numpy`, a wheel URL.
#[derive(Debug, Clone)]
pub struct Req {
    /// Normalized (lower case, `_`/`.` → `-`).
    pub name: String,
    /// The specifier text after the name (`==2.3.0+cu121`, `>=1,<2`), empty when none.
    pub spec: String,
    /// The version of an `==` / `===` pin (without `.*`).
    pub pinned: Option<String>,
    /// The local version label of a pin or wheel (`cu121`, `cpu`).
    pub local: Option<String>,
    /// Direct URL / file (wheel).
    pub url: Option<String>,
    pub pos: Pos,
    pub unresolved: bool,
}

#[derive(Debug, Clone, Default)]
pub struct PipInstall {
    pub tool: String,
    pub pos: Pos,
    pub reqs: Vec<Req>,
    pub index_url: Option<String>,
    pub extra_index_urls: Vec<String>,
    pub find_links: Vec<String>,
    pub req_files: Vec<(String, Pos)>,
    pub constraint_files: Vec<(String, Pos)>,
    /// uv `--torch-backend` / `UV_TORCH_BACKEND`.
    pub torch_backend: Option<String>,
    pub no_deps: bool,
}

#[derive(Debug, Clone)]
pub struct CondaInstall {
    pub tool: String,
    pub pos: Pos,
    pub pkgs: Vec<CondaPkg>,
    pub channels: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct OsInstall {
    pub tool: String,
    pub pos: Pos,
    pub pkgs: Vec<OsPkg>,
}

/// One package of a conda install: `pytorch-cuda=12.1`.
#[derive(Debug, Clone, PartialEq)]
pub struct CondaPkg {
    /// Lower case: `pytorch-cuda`.
    pub name: String,
    /// The version spec without its leading `=`/`>`/`<`: `12.1`, empty when none.
    pub spec: String,
    pub pos: Pos,
    /// The spec read as a CUDA release (`12.1`, `~12.1`), None when it is none (a range, a
    /// build string): what the CUDA packages (`cudatoolkit`, `cuda-version`, …) pin.
    pub cuda: Option<CudaVersion>,
}

/// One package of an OS package manager's install: `libnccl2=2.21.5-1+cuda12.4`.
#[derive(Debug, Clone, PartialEq)]
pub struct OsPkg {
    /// As written: `libnccl2`.
    pub name: String,
    /// The pinned version: `2.21.5-1+cuda12.4`.
    pub version: Option<String>,
    pub pos: Pos,
    /// The CUDA release the name states: `cuda-toolkit-12-1` → 12.1.
    pub cuda: Option<CudaVersion>,
    /// The CUDA release the pinned version is built for: `2.21.5-1+cuda12.4` → 12.4.
    pub built_for_cuda: Option<CudaVersion>,
}

#[derive(Debug, Clone)]
pub enum Install {
    Pip(PipInstall),
    Conda(CondaInstall),
    Os(OsInstall),
}

pub fn normalize_name(n: &str) -> String {
    n.to_ascii_lowercase().replace(['_', '.'], "-")
}

/// Parse a PEP 508 requirement string as written on a pip command line.
pub fn parse_req(s: &str, pos: Pos, unresolved: bool) -> Option<Req> {
    let s = s.trim();
    if s.is_empty() || s.starts_with('-') {
        return None;
    }
    let s = s.split(';').next().unwrap_or(s).trim();
    if s.contains("://") || s.ends_with(".whl") || s.ends_with(".tar.gz") {
        let (name_part, url) = match s.split_once(" @ ").or_else(|| s.split_once('@')) {
            Some((n, u)) if !n.contains('/') => (Some(n.trim()), u.trim()),
            _ => (None, s),
        };
        let file = url
            .rsplit('/')
            .next()
            .unwrap_or(url)
            .replace("%2B", "+")
            .replace("%2b", "+");
        let (name, ver) = if file.ends_with(".whl") {
            let mut parts = file.split('-');
            (
                parts.next().map(|s| s.to_string()),
                parts.next().map(|s| s.to_string()),
            )
        } else {
            (None, None)
        };
        let name = name_part.map(|s| s.to_string()).or(name)?;
        let local = ver
            .as_deref()
            .and_then(|v| v.split_once('+'))
            .map(|x| x.1.to_string());
        return Some(Req {
            name: normalize_name(&name),
            spec: String::new(),
            pinned: ver.map(|v| v.split('+').next().unwrap_or(&v).to_string()),
            local,
            url: Some(url.to_string()),
            pos,
            unresolved,
        });
    }
    let name_end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'))
        .unwrap_or(s.len());
    let name = &s[..name_end];
    if name.is_empty() || name.starts_with('.') || name.contains('/') {
        return None;
    }
    let mut rest = s[name_end..].trim();
    if rest.starts_with('[') {
        rest = rest.split_once(']').map(|x| x.1).unwrap_or("").trim();
    }
    let spec = rest
        .trim_start_matches('(')
        .trim_end_matches(')')
        .trim()
        .to_string();
    let mut pinned = None;
    let mut local = None;
    for clause in spec.split(',') {
        let c = clause.trim();
        if let Some(v) = c.strip_prefix("===").or_else(|| c.strip_prefix("==")) {
            let v = v.trim().trim_end_matches(".*");
            let (core, loc) = match v.split_once('+') {
                Some((a, b)) => (a, Some(b.to_string())),
                None => (v, None),
            };
            pinned = Some(core.to_string());
            local = loc;
        }
    }
    Some(Req {
        name: normalize_name(name),
        spec,
        pinned,
        local,
        url: None,
        pos,
        unresolved,
    })
}

/// Any install in the command.
pub fn installs(c: &LCmd, read_file: &dyn Fn(&str) -> Option<String>) -> Vec<Install> {
    let mut v = Vec::new();
    if let Some(p) = pip_install(c, read_file) {
        v.push(Install::Pip(p));
    }
    if let Some(p) = conda_install(c) {
        v.push(Install::Conda(p));
    }
    if let Some(p) = os_install(c) {
        v.push(Install::Os(p));
    }
    v
}

/// `pip install numba>=0.57.1`: the shell made `>` a redirect. Returns `(package, target
/// text, position of the redirect)` for each such redirect.
pub fn unquoted_specifiers(c: &LCmd) -> Vec<(String, String, Pos)> {
    let is_installer = pip_install_args(c).is_some() || conda_install(c).is_some();
    if !is_installer {
        return Vec::new();
    }
    let mut out = Vec::new();
    for r in &c.redirects {
        if !(r.op == ">" || r.op == "<" || r.op == ">>") {
            continue;
        }
        let Some(t) = &r.target else { continue };
        let looks_version = t
            .text
            .trim_start_matches(['=', '<', '>'])
            .starts_with(|c: char| c.is_ascii_digit())
            || t.text.starts_with('=');
        if !looks_version {
            continue;
        }
        // The package is the word right before the redirect.
        let pkg = c
            .words
            .iter()
            .rfind(|w| w.pos <= r.pos)
            .map(|w| w.text.clone())
            .unwrap_or_default();
        if pkg.starts_with('-') || pkg.is_empty() {
            continue;
        }
        out.push((pkg, format!("{}{}", r.op, t.text), r.pos));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(s: &str) -> LCmd {
        let mut v = Vars::new();
        let cs = shell::parse_script(s, &mut v);
        LCmd::from_shell(&cs[0], &v, &|o| Pos {
            line: 1,
            col: o as u32 + 1,
        })
    }

    /// A fuzz find (fuzz/README.md): a short option whose second byte is inside a multibyte
    /// character panicked on `&t[..2]`.
    #[test]
    fn a_multibyte_option_is_not_a_short_flag() {
        let p = pip_install(&cmd("pip install -\u{48a}rade diffusers"), &|_| None);
        assert!(p.is_some());
    }

    #[test]
    fn pip_forms() {
        let p = pip_install(
            &cmd("python3 -m pip install --no-cache-dir torch==2.3.0+cu121 'numpy<2' -r req.txt --extra-index-url https://download.pytorch.org/whl/cu121"),
            &|f| (f == "req.txt").then(|| "torchvision==0.18.0\n# c\n".to_string()),
        )
        .unwrap();
        let names: Vec<_> = p.reqs.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, vec!["torch", "numpy", "torchvision"]);
        let t = p.reqs.iter().find(|r| r.name == "torch").unwrap();
        assert_eq!(
            (t.pinned.as_deref(), t.local.as_deref()),
            (Some("2.3.0"), Some("cu121"))
        );
        assert_eq!(t.pos.col, 39);
        assert_eq!(p.extra_index_urls.len(), 1);
        let p = pip_install(
            &cmd("uv pip install --system torch --torch-backend=cu126"),
            &|_| None,
        )
        .unwrap();
        assert_eq!(p.torch_backend.as_deref(), Some("cu126"));
        let p = pip_install(
            &cmd("pip install https://download.pytorch.org/whl/cu118/torch-2.0.1%2Bcu118-cp310-cp310-linux_x86_64.whl"),
            &|_| None,
        )
        .unwrap();
        assert_eq!(p.reqs[0].local.as_deref(), Some("cu118"));
        assert!(pip_install(&cmd("pip download torch"), &|_| None).is_none());
    }

    #[test]
    fn conda_and_apt() {
        let c = conda_install(&cmd(
            "conda install -y -c pytorch -c nvidia pytorch=2.1 pytorch-cuda=12.1",
        ))
        .unwrap();
        let p = &c.pkgs[1];
        assert_eq!((p.name.as_str(), p.spec.as_str()), ("pytorch-cuda", "12.1"));
        assert_eq!(p.cuda, Some(CudaVersion::new(12, 1)));
        assert_eq!(c.pkgs[0].cuda, Some(CudaVersion::new(2, 1)));
        let a = os_install(&cmd("apt-get install -y --no-install-recommends libnccl2=2.21.5-1+cuda12.4 cuda-toolkit-12-1")).unwrap();
        assert_eq!(a.pkgs[0].version.as_deref(), Some("2.21.5-1+cuda12.4"));
        assert_eq!(a.pkgs[0].built_for_cuda, Some(CudaVersion::new(12, 4)));
        assert_eq!(a.pkgs[0].cuda, None);
        assert_eq!(a.pkgs[1].name, "cuda-toolkit-12-1");
        assert_eq!(a.pkgs[1].cuda, Some(CudaVersion::new(12, 1)));
        assert_eq!(a.pkgs[1].built_for_cuda, None);
    }

    #[test]
    fn unquoted_redirects() {
        let u = unquoted_specifiers(&cmd("pip install numba>=0.57.1 --upgrade"));
        assert_eq!(u[0].0, "numba");
        assert_eq!(u[0].1, ">=0.57.1");
        assert!(unquoted_specifiers(&cmd("pip install 'numba>=0.57.1'")).is_empty());
        assert!(unquoted_specifiers(&cmd("pip install x > /dev/null")).is_empty());
    }
}
