//! `docker run` (and `podman run`, `nvidia-docker run`, `docker create`) argument lists
//! read into a [`RunSpec`].

use super::*;

/// Options of `docker run` that take no value.
pub(super) const BOOL_LONG: &[&str] = &[
    "--rm",
    "--privileged",
    "--init",
    "--read-only",
    "--detach",
    "--interactive",
    "--tty",
    "--publish-all",
    "--no-healthcheck",
    "--oom-kill-disable",
    "--disable-content-trust",
    "--quiet",
    "--help",
    "--sig-proxy",
    "--replace",
    "--use-api-socket",
];

/// One word with a position.
#[derive(Debug, Clone)]
pub struct PWord {
    pub text: String,
    pub pos: Pos,
}

/// Parse the words after `docker run` (options, image, command).
pub fn parse_docker_run(file: &str, engine: &str, pos: Pos, args: &[PWord]) -> RunSpec {
    let mut rs = RunSpec::new(RunKind::DockerRun, file, pos, "", engine);
    let mut i = 0;
    while i < args.len() {
        let w = &args[i];
        let t = w.text.as_str();
        if t == "--" {
            i += 1;
            break;
        }
        if !t.starts_with('-') || t == "-" {
            break;
        }
        let (name, inline): (String, Option<String>) = if t.starts_with("--") {
            match t.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(v.to_string())),
                None => (t.to_string(), None),
            }
        } else {
            let chars: Vec<char> = t[1..].chars().collect();
            if chars.iter().all(|c| "ditPq".contains(*c)) {
                // -it, -d, -dit
                i += 1;
                continue;
            }
            // -e X=1, -eX=1, -v a:b
            let f = format!("-{}", chars.first().copied().unwrap_or(' '));
            let rest: String = chars.iter().skip(1).collect();
            let rest = rest.strip_prefix('=').map(String::from).unwrap_or(rest);
            (f, if rest.is_empty() { None } else { Some(rest) })
        };
        let takes_value = name.starts_with("--") && !BOOL_LONG.contains(&name.as_str())
            || !name.starts_with("--");
        let (val, vpos) = match inline {
            Some(v) => (Some(v), w.pos),
            None if takes_value => {
                i += 1;
                match args.get(i) {
                    Some(v) => (Some(v.text.clone()), v.pos),
                    None => (None, w.pos),
                }
            }
            None => (None, w.pos),
        };
        let val_s = val.clone().unwrap_or_default();
        match name.as_str() {
            "--gpus" => rs.gpus = Some(parse_gpus_flag(&val_s, w.pos)),
            "--runtime" => rs.runtime = Some((val_s, w.pos)),
            "-e" | "--env" => {
                let (k, v) = match val_s.split_once('=') {
                    Some((k, v)) => (k.to_string(), v.to_string()),
                    None => (val_s.clone(), String::new()),
                };
                rs.env.push((k, v, vpos));
            }
            "-v" | "--volume" => {
                rs.mounts.extend(Mount::from_short_syntax(&val_s, vpos));
            }
            "--mount" => {
                let mut m = Mount {
                    host: String::new(),
                    container: String::new(),
                    read_only: false,
                    pos: vpos,
                };
                let mut is_bind = false;
                for kv in val_s.split(',') {
                    match kv.split_once('=') {
                        Some(("type", t)) => {
                            is_bind = t == "bind";
                            if t == "tmpfs" {
                                m.host = "tmpfs".into();
                            }
                        }
                        Some(("source" | "src", s)) => m.host = s.to_string(),
                        Some(("target" | "destination" | "dst", s)) => m.container = s.to_string(),
                        Some(("readonly" | "ro", v)) => m.read_only = v != "false",
                        None if kv == "readonly" || kv == "ro" => m.read_only = true,
                        _ => {}
                    }
                }
                if m.container == "/dev/shm" {
                    rs.shm_volume = true;
                }
                if is_bind {
                    rs.mounts.push(m);
                }
            }
            "--tmpfs" if val_s.starts_with("/dev/shm") => rs.shm_volume = true,
            "--device" => {
                let d = val_s.split(':').next().unwrap_or("").to_string();
                rs.devices.push((d, vpos));
            }
            "--shm-size" => {
                if let Some(b) = parse_size(&val_s) {
                    rs.shm_size = Some((b, w.pos));
                }
            }
            "--ipc" => rs.ipc_host = val_s == "host",
            "--privileged" => rs.privileged = true,
            "--name" => rs.name = val_s,
            _ => {}
        }
        i += 1;
    }
    if let Some(img) = args.get(i) {
        rs.image = Some(RunImage::written(img.text.clone()));
        rs.image_pos = img.pos;
        if rs.name.is_empty() {
            rs.name = img.text.clone();
        }
        rs.command = args[i + 1..].iter().map(|w| w.text.clone()).collect();
    }
    rs
}

/// If `argv` is a container start (`docker run`, `docker container run`, `podman run`,
/// `nvidia-docker run`, `docker create`), the engine and where its arguments start.
pub fn run_invocation(argv: &[&str]) -> Option<(String, usize)> {
    let mut i = 0;
    while argv
        .get(i)
        .map(|s| *s == "sudo" || *s == "exec" || *s == "time")
        .unwrap_or(false)
    {
        i += 1;
    }
    let eng = argv
        .get(i)?
        .rsplit(['/', '\\'])
        .next()?
        .trim_end_matches(".exe");
    let engine = match eng {
        "docker" | "podman" | "nvidia-docker" | "nerdctl" => eng.to_string(),
        _ => return None,
    };
    let mut j = i + 1;
    // Global options: `docker --context x run`, `-H host`.
    while let Some(s) = argv.get(j) {
        if *s == "--context" || *s == "-H" || *s == "--host" || *s == "-c" || *s == "--config" {
            j += 2;
        } else if s.starts_with('-') {
            j += 1;
        } else {
            break;
        }
    }
    match argv.get(j).copied() {
        Some("run") | Some("create") => Some((engine, j + 1)),
        Some("container") if matches!(argv.get(j + 1).copied(), Some("run") | Some("create")) => {
            Some((engine, j + 2))
        }
        _ => None,
    }
}
