//! `pip install` (`pip3`, `python -m pip`, `uv pip`): requirements, index URLs, find-links,
//! requirement and constraint files and local projects.

use super::*;

pub(super) const PIP_VALUE_OPTS: &[&str] = &[
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
pub(super) fn pip_install_args(c: &LCmd) -> Option<(String, usize)> {
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
pub(super) fn local_project(t: &str) -> Option<(&str, Vec<String>)> {
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
pub(super) fn project_requirements(
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
pub(super) fn setup_py_requires(py: &str) -> Vec<String> {
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

pub(super) fn read_requirements(
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
