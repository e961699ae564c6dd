//! Package installs read from shell commands: pip / pip3 / `python -m pip` / `uv pip` (with
//! index URLs, find-links, requirement and constraint files), conda / mamba / micromamba, and
//! apt / yum / dnf / microdnf / zypper / apk. Also the unquoted `pip install x>=1` redirect.

use super::dockerfile::Pos;
use super::shell::{self, Vars};

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
    /// `(name, version spec, position)`: `("pytorch-cuda", "12.1", …)`.
    pub pkgs: Vec<(String, String, Pos)>,
    pub channels: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct OsInstall {
    pub tool: String,
    pub pos: Pos,
    /// `(name, version, position)`: `("libnccl2", Some("2.21.5-1+cuda12.4"), …)`.
    pub pkgs: Vec<(String, Option<String>, Pos)>,
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

const PIP_VALUE_OPTS: &[&str] = &[
    "-i",
    "--index-url",
    "--extra-index-url",
    "-f",
    "--find-links",
    "-r",
    "--requirement",
    "-c",
    "--constraint",
    "-t",
    "--target",
    "--prefix",
    "--root",
    "--src",
    "--trusted-host",
    "--platform",
    "--python-version",
    "--implementation",
    "--abi",
    "--only-binary",
    "--no-binary",
    "--progress-bar",
    "--cache-dir",
    "--log",
    "--proxy",
    "--retries",
    "--timeout",
    "--exists-action",
    "--global-option",
    "--config-settings",
    "-C",
    "--upgrade-strategy",
    "--python",
    "-p",
    "--torch-backend",
    "--index-strategy",
    "--index",
    "--default-index",
    "--extra-index",
    "--keyring-provider",
    "--resolution",
    "--prerelease",
    "--override",
    "--build-constraint",
    "--report",
    "--root-user-action",
    "--use-feature",
    "--use-deprecated",
    "--editable",
    "-e",
];

/// Where the `install` subcommand's arguments start, if this command is a pip install.
fn pip_install_args(c: &LCmd) -> Option<(String, usize)> {
    let w: Vec<&str> = c.words.iter().map(|w| w.text.as_str()).collect();
    let name = c.name();
    let is_pip = |s: &str| {
        let b = s.rsplit('/').next().unwrap_or(s);
        b == "pip" || b.starts_with("pip3") || b == "pip2"
    };
    let mut i = 0;
    // `conda run -n env pip install`, `sudo pip install`, `micromamba run …`.
    let mut tool;
    loop {
        let cur = w.get(i)?;
        let b = cur.rsplit('/').next().unwrap_or(cur);
        if b == "sudo" || b == "env" || b == "nice" {
            i += 1;
            while w
                .get(i)
                .map(|s| s.starts_with('-') || s.contains('='))
                .unwrap_or(false)
            {
                i += 1;
            }
            continue;
        }
        if matches!(b, "conda" | "mamba" | "micromamba") && w.get(i + 1) == Some(&"run") {
            i += 2;
            while let Some(s) = w.get(i) {
                if *s == "-n" || *s == "--name" || *s == "-p" || *s == "--prefix" {
                    i += 2;
                } else if s.starts_with('-') {
                    i += 1;
                } else {
                    break;
                }
            }
            continue;
        }
        break;
    }
    let _ = name;
    let cur = w.get(i)?;
    let b = cur.rsplit('/').next().unwrap_or(cur);
    if is_pip(b) {
        tool = "pip".to_string();
        i += 1;
    } else if b.starts_with("python") {
        // python -m pip install
        let m = w.iter().position(|s| *s == "-m")?;
        if !w.get(m + 1).map(|s| is_pip(s)).unwrap_or(false) {
            return None;
        }
        tool = "python -m pip".into();
        i = m + 2;
    } else if b == "uv" && w.get(i + 1) == Some(&"pip") {
        tool = "uv pip".into();
        i += 2;
    } else if b == "mim" {
        tool = "mim".into();
        i += 1;
    } else {
        return None;
    }
    // Global options before `install`.
    while let Some(s) = w.get(i) {
        if *s == "install" || *s == "sync" {
            if *s == "sync" {
                tool.push_str(" sync");
            }
            return Some((tool, i + 1));
        }
        if s.starts_with('-') {
            i += 1;
            continue;
        }
        return None;
    }
    None
}

/// A pip install in this command, if any. `read_file` reads requirement files (relative paths
/// against the build context); `None` when unavailable.
pub fn pip_install(c: &LCmd, read_file: &dyn Fn(&str) -> Option<String>) -> Option<PipInstall> {
    let (tool, start) = pip_install_args(c)?;
    let mut p = PipInstall {
        tool,
        pos: c.pos,
        index_url: c
            .var("PIP_INDEX_URL")
            .or_else(|| c.var("UV_INDEX_URL"))
            .or_else(|| c.var("UV_DEFAULT_INDEX")),
        torch_backend: c.var("UV_TORCH_BACKEND"),
        ..Default::default()
    };
    for v in [
        c.var("PIP_EXTRA_INDEX_URL"),
        c.var("UV_EXTRA_INDEX_URL"),
        c.var("UV_INDEX"),
    ]
    .into_iter()
    .flatten()
    {
        p.extra_index_urls
            .extend(v.split_whitespace().map(String::from));
    }
    if let Some(v) = c.var("PIP_FIND_LINKS") {
        p.find_links.extend(v.split_whitespace().map(String::from));
    }
    let words = &c.words[start.min(c.words.len())..];
    // Requirements of local projects being installed (`pip install -e .`).
    let mut project: Vec<Req> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        let t = w.text.as_str();
        if t.starts_with('-') {
            let (opt, inline) = match t.split_once('=') {
                Some((o, v)) if o.starts_with("--") => (o, Some(v.to_string())),
                _ => {
                    // `-rrequirements.txt`, `-ihttps://…`
                    if t.len() > 2
                        && !t.starts_with("--")
                        && matches!(t.get(..2), Some("-r" | "-c" | "-i" | "-f"))
                    {
                        (&t[..2], Some(t[2..].to_string()))
                    } else {
                        (t, None)
                    }
                }
            };
            let takes = PIP_VALUE_OPTS.contains(&opt);
            let (val, vpos) = if takes && inline.is_none() {
                i += 1;
                match words.get(i) {
                    Some(v) => (Some(v.text.clone()), v.pos),
                    None => (None, w.pos),
                }
            } else {
                (inline, w.pos)
            };
            if let Some(v) = val {
                if matches!(opt, "-e" | "--editable") {
                    if let Some((dir, extras)) = local_project(&v) {
                        project.extend(project_requirements(dir, &extras, read_file, vpos));
                    }
                }
                match opt {
                    "-i" | "--index-url" | "--default-index" => p.index_url = Some(v),
                    "--extra-index-url" | "--index" | "--extra-index" => p.extra_index_urls.push(v),
                    "-f" | "--find-links" => p.find_links.push(v),
                    "-r" | "--requirement" => {
                        if let Some(text) = read_file(&v) {
                            read_requirements(&text, vpos, &mut p, read_file, 0);
                        }
                        p.req_files.push((v, vpos));
                    }
                    "-c" | "--constraint" => p.constraint_files.push((v, vpos)),
                    "--torch-backend" => p.torch_backend = Some(v),
                    _ => {}
                }
            } else if opt == "--no-deps" || opt == "--no-dependencies" {
                p.no_deps = true;
            } else if opt == "--dry-run" {
                // pip >= 22.2 / uv: resolves and reports, installs nothing.
                return None;
            }
            i += 1;
            continue;
        }
        if let Some((dir, extras)) = local_project(t).filter(|_| !w.unresolved) {
            project.extend(project_requirements(dir, &extras, read_file, w.pos));
        } else if let Some(r) = parse_req(t, w.pos, w.unresolved) {
            p.reqs.push(r);
        }
        i += 1;
    }
    // What the project being installed depends on is installed with it (not with --no-deps).
    if !p.no_deps {
        p.reqs.extend(project);
    }
    Some(p)
}

/// A local project directory a pip install builds (`.`, `./server`, `/app`, `.[export]`) and
/// the extras asked for; not a wheel or archive file.
fn local_project(t: &str) -> Option<(&str, Vec<String>)> {
    let (dir, extras) = match t.split_once('[') {
        Some((d, e)) => (
            d,
            e.trim_end_matches(']')
                .split(',')
                .map(|x| x.trim().to_ascii_lowercase())
                .filter(|x| !x.is_empty())
                .collect(),
        ),
        None => (t, Vec::new()),
    };
    let archive = [".whl", ".tar.gz", ".zip", ".tgz"]
        .iter()
        .any(|x| dir.ends_with(x));
    let local = dir == "." || dir == ".." || dir.starts_with("./") || dir.starts_with('/');
    (local && !archive && !dir.contains("://")).then_some((dir, extras))
}

/// The requirements a local project declares, as its install pulls them in: pyproject.toml
/// `[project] dependencies` (and `optional-dependencies` of the extras asked for, or the
/// files `[tool.setuptools.dynamic]` names), else setup.cfg `install_requires`, else the
/// string literals of setup.py's `install_requires=[…]`. Files are read from the build
/// context through `read_file`; a project we cannot read adds nothing.
fn project_requirements(
    dir: &str,
    extras: &[String],
    read_file: &dyn Fn(&str) -> Option<String>,
    pos: Pos,
) -> Vec<Req> {
    let d = dir.trim_start_matches("./").trim_end_matches('/');
    let path = |f: &str| match d {
        "" | "." => f.to_string(),
        _ => format!("{d}/{f}"),
    };
    let mut specs: Vec<String> = Vec::new();
    let mut files: Vec<String> = Vec::new();
    if let Some(v) = read_file(&path("pyproject.toml")).and_then(|t| t.parse::<toml::Table>().ok())
    {
        let strings = |x: Option<&toml::Value>| -> Vec<String> {
            x.and_then(|a| a.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default()
        };
        let project = v.get("project");
        specs.extend(strings(project.and_then(|p| p.get("dependencies"))));
        if let Some(opt) = project
            .and_then(|p| p.get("optional-dependencies"))
            .and_then(|o| o.as_table())
        {
            for (k, deps) in opt {
                if extras.iter().any(|e| *e == k.to_ascii_lowercase()) {
                    specs.extend(strings(Some(deps)));
                }
            }
        }
        let dynamic = v
            .get("tool")
            .and_then(|t| t.get("setuptools"))
            .and_then(|t| t.get("dynamic"))
            .and_then(|t| t.get("dependencies"))
            .and_then(|t| t.get("file"));
        match dynamic {
            Some(toml::Value::String(f)) => files.push(f.clone()),
            Some(a) => files.extend(strings(Some(a))),
            None => {}
        }
    } else if let Some(cfg) = read_file(&path("setup.cfg")) {
        // `install_requires =` and its indented continuation lines.
        let mut on = false;
        for l in cfg.lines() {
            if let Some(r) = l.trim_start().strip_prefix("install_requires") {
                on = true;
                specs.extend(
                    r.trim_start_matches([' ', '='])
                        .split(';')
                        .next()
                        .filter(|x| !x.trim().is_empty())
                        .map(|x| x.trim().to_string()),
                );
                continue;
            }
            if on && l.starts_with([' ', '\t']) && !l.trim().is_empty() {
                specs.push(l.trim().to_string());
            } else if on {
                on = false;
            }
        }
    }
    if specs.is_empty() && files.is_empty() {
        if let Some(py) = read_file(&path("setup.py")) {
            specs.extend(setup_py_requires(&py));
        }
    }
    let mut p = PipInstall::default();
    for f in files {
        if let Some(t) = read_file(&path(&f)) {
            read_requirements(&t, pos, &mut p, read_file, 1);
        }
    }
    p.reqs
        .into_iter()
        .chain(specs.iter().filter_map(|s| parse_req(s, pos, false)))
        .collect()
}

/// The string literals of `install_requires=[…]` in a setup.py (a list written out; one
/// built at run time is not evaluated).
fn setup_py_requires(py: &str) -> Vec<String> {
    let Some(at) = py.find("install_requires") else {
        return Vec::new();
    };
    let rest = py[at + "install_requires".len()..].trim_start();
    let Some(list) = rest
        .strip_prefix('=')
        .map(str::trim_start)
        .and_then(|r| r.strip_prefix('['))
    else {
        return Vec::new();
    };
    let body = &list[..list.find(']').unwrap_or(list.len())];
    let mut out = Vec::new();
    let mut it = body.char_indices();
    while let Some((i, c)) = it.next() {
        if c == '"' || c == '\'' {
            let end = body[i + 1..].find(c).map(|e| i + 1 + e);
            if let Some(e) = end {
                out.push(body[i + 1..e].to_string());
                while it.next().is_some_and(|(j, _)| j < e) {}
            }
        } else if c == '#' {
            // A comment to the end of its line.
            while it.next().is_some_and(|(_, x)| x != '\n') {}
        }
    }
    out
}

fn read_requirements(
    text: &str,
    pos: Pos,
    p: &mut PipInstall,
    read_file: &dyn Fn(&str) -> Option<String>,
    depth: u32,
) {
    for line in text.lines() {
        let l = line.split(" #").next().unwrap_or(line).trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let mut parts = l.split_whitespace();
        let first = parts.next().unwrap_or("");
        let second = parts.next().map(String::from);
        match first {
            "-i" | "--index-url" => p.index_url = second,
            "--extra-index-url" => p.extra_index_urls.extend(second),
            "-f" | "--find-links" => p.find_links.extend(second),
            "-r" | "--requirement" if depth < 4 => {
                if let Some(t) = second.as_deref().and_then(read_file) {
                    read_requirements(&t, pos, p, read_file, depth + 1);
                }
            }
            _ if first.starts_with('-') => {}
            _ => {
                if let Some(r) = parse_req(l, pos, false) {
                    p.reqs.push(r);
                }
            }
        }
    }
}

/// conda / mamba / micromamba install or create.
pub fn conda_install(c: &LCmd) -> Option<CondaInstall> {
    let name = c.name();
    if !matches!(name, "conda" | "mamba" | "micromamba") {
        return None;
    }
    let sub = c.words.get(1)?.text.as_str();
    if !matches!(sub, "install" | "create") {
        return None;
    }
    let mut ci = CondaInstall {
        tool: name.to_string(),
        pos: c.pos,
        pkgs: Vec::new(),
        channels: Vec::new(),
    };
    let mut i = 2;
    while i < c.words.len() {
        let t = c.words[i].text.as_str();
        if t == "-c" || t == "--channel" {
            if let Some(v) = c.words.get(i + 1) {
                ci.channels.push(v.text.clone());
            }
            i += 2;
            continue;
        }
        if matches!(t, "-n" | "--name" | "-p" | "--prefix" | "--file" | "-f") {
            i += 2;
            continue;
        }
        if t.starts_with('-') {
            i += 1;
            continue;
        }
        let t = t.split("::").last().unwrap_or(t);
        let end = t.find(['=', '<', '>', '!', ' ']).unwrap_or(t.len());
        let (n, v) = t.split_at(end);
        ci.pkgs.push((
            n.to_ascii_lowercase(),
            v.trim_start_matches(['=', '>', '<']).to_string(),
            c.words[i].pos,
        ));
        i += 1;
    }
    Some(ci)
}

/// apt-get / apt / yum / dnf / microdnf / zypper / apk install.
pub fn os_install(c: &LCmd) -> Option<OsInstall> {
    let w: Vec<&str> = c.words.iter().map(|w| w.text.as_str()).collect();
    let mut i = 0;
    while w
        .get(i)
        .map(|s| *s == "sudo" || *s == "DEBIAN_FRONTEND=noninteractive")
        .unwrap_or(false)
    {
        i += 1;
    }
    let tool = w.get(i)?.rsplit('/').next()?;
    let subs: &[&str] = match tool {
        "apt-get" | "apt" | "aptitude" => &["install"],
        "yum" | "dnf" | "microdnf" | "tdnf" => &["install"],
        "zypper" => &["install", "in"],
        "apk" => &["add"],
        _ => return None,
    };
    let mut j = i + 1;
    while let Some(s) = w.get(j) {
        if subs.contains(s) {
            break;
        }
        if s.starts_with('-') {
            j += 1;
            continue;
        }
        return None;
    }
    if j >= w.len() {
        return None;
    }
    let mut oi = OsInstall {
        tool: tool.to_string(),
        pos: c.pos,
        pkgs: Vec::new(),
    };
    let mut k = j + 1;
    while k < c.words.len() {
        let t = c.words[k].text.as_str();
        if t.starts_with('-') {
            if matches!(t, "-o" | "--option" | "-t" | "--target-release") {
                k += 1;
            }
            k += 1;
            continue;
        }
        let (n, v) = match t.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (t, None),
        };
        oi.pkgs.push((n.to_string(), v, c.words[k].pos));
        k += 1;
    }
    Some(oi)
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
        assert_eq!(
            c.pkgs[1],
            ("pytorch-cuda".into(), "12.1".into(), c.pkgs[1].2)
        );
        let a = os_install(&cmd("apt-get install -y --no-install-recommends libnccl2=2.21.5-1+cuda12.4 cuda-toolkit-12-1")).unwrap();
        assert_eq!(a.pkgs[0].1.as_deref(), Some("2.21.5-1+cuda12.4"));
        assert_eq!(a.pkgs[1].0, "cuda-toolkit-12-1");
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
