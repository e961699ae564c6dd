//! Compose files → [`RunSpec`]s, the way `docker compose` reads them: default file lookup
//! (`compose.yaml` … `docker-compose.yml`, plus the matching `.override` file), several `-f`
//! files merged in order, YAML anchors and `<<` merge keys, `${VAR:-default}` interpolation
//! from `.env` and the environment, and `extends` (same file or another).

use super::build::SpecError;
use super::dockerfile::Pos;
use super::expand::{ExpandLimit, ExpansionBudget};
use super::runspec::{parse_gpus_flag, parse_size, GpuRequest, Mount, RunImage, RunKind, RunSpec};
use super::shell::{self, Var, Vars};
use super::yamlloc::scalar as s;
use super::yamlloc::YamlText;
use std::path::{Path, PathBuf};
use yaml_serde::{Mapping, Value};

pub const DEFAULT_FILES: &[&str] = &[
    "compose.yaml",
    "compose.yml",
    "docker-compose.yaml",
    "docker-compose.yml",
];

/// The files `docker compose` reads in `dir` without `-f`.
pub fn default_files(dir: &Path) -> Vec<PathBuf> {
    for f in DEFAULT_FILES {
        let p = dir.join(f);
        if p.is_file() {
            let stem = f.rsplit_once('.').map(|x| x.0).unwrap_or(f);
            let mut v = vec![p];
            for ext in ["yaml", "yml"] {
                let o = dir.join(format!("{stem}.override.{ext}"));
                if o.is_file() {
                    v.push(o);
                    break;
                }
            }
            return v;
        }
    }
    Vec::new()
}

/// `.env` next to the first file, then the process environment (which wins, as in Docker).
fn load_vars(project_dir: &Path) -> Vars {
    let mut v = Vars::new();
    let env_file = project_dir.join(".env");
    if let Ok(t) = crate::io_util::read_regular_string(&env_file, crate::io_util::MAX_CONFIG_FILE) {
        for l in t.lines() {
            let l = l.trim();
            if l.is_empty() || l.starts_with('#') {
                continue;
            }
            let l = l.strip_prefix("export ").unwrap_or(l);
            if let Some((k, val)) = l.split_once('=') {
                let val = val.trim().trim_matches(['"', '\'']);
                v.insert(k.trim().to_string(), Var::Set(val.to_string()));
            }
        }
    }
    for (k, val) in std::env::vars() {
        if v.contains_key(&k) {
            v.insert(k, Var::Set(val));
        }
    }
    v
}

/// Interpolate every string, charging what each expands to to the file's `budget`; past an
/// expansion bound, the first offending string (as written) and the bound.
fn interpolate(
    v: &mut Value,
    vars: &Vars,
    budget: &mut ExpansionBudget,
) -> Result<(), (String, ExpandLimit)> {
    match v {
        Value::String(s) if s.contains('$') => {
            let t = s.replace("$$", "\u{1}");
            match shell::try_expand_plain(&t, vars)
                .and_then(|(out, _)| budget.charge(out.len()).map(|()| out))
            {
                Ok(out) => *s = out.replace('\u{1}', "$"),
                Err(l) => return Err((s.clone(), l)),
            }
        }
        Value::Sequence(seq) => {
            for x in seq {
                interpolate(x, vars, budget)?;
            }
        }
        Value::Mapping(m) => {
            for (_, x) in m.iter_mut() {
                interpolate(x, vars, budget)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// Docker's merge: mappings merge key by key, `environment` / `labels` lists become maps,
/// `volumes` / `devices` merge by container path, other lists append, scalars override.
fn merge(base: &mut Value, over: &Value, key: &str) {
    match (base, over) {
        (Value::Mapping(b), Value::Mapping(o)) => {
            for (k, ov) in o {
                let ks = k.as_str().unwrap_or("");
                match b.get_mut(k) {
                    Some(bv) => {
                        if matches!(ks, "environment" | "labels" | "extra_hosts") {
                            *bv = list_to_map(bv);
                            merge(bv, &list_to_map(ov), ks);
                        } else if matches!(ks, "command" | "entrypoint" | "image") {
                            *bv = ov.clone();
                        } else {
                            merge(bv, ov, ks);
                        }
                    }
                    None => {
                        b.insert(k.clone(), ov.clone());
                    }
                }
            }
        }
        (Value::Sequence(b), Value::Sequence(o)) => {
            if matches!(key, "volumes" | "devices") {
                for ov in o {
                    let t = mount_target(ov);
                    if let Some(pos) = b.iter().position(|x| t.is_some() && mount_target(x) == t) {
                        b[pos] = ov.clone();
                    } else {
                        b.push(ov.clone());
                    }
                }
            } else {
                for ov in o {
                    if !b.contains(ov) {
                        b.push(ov.clone());
                    }
                }
            }
        }
        (b, o) => *b = o.clone(),
    }
}

fn mount_target(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => s.split(':').nth(1).map(String::from),
        Value::Mapping(m) => m.get("target").and_then(|x| x.as_str()).map(String::from),
        _ => None,
    }
}

fn list_to_map(v: &Value) -> Value {
    match v {
        Value::Sequence(s) => {
            let mut m = Mapping::new();
            for x in s {
                if let Some(t) = x.as_str() {
                    let (k, val) = t.split_once('=').unwrap_or((t, ""));
                    m.insert(Value::String(k.into()), Value::String(val.into()));
                }
            }
            Value::Mapping(m)
        }
        other => other.clone(),
    }
}

/// A parsed compose file, kept with its text for positions.
pub struct ComposeFile {
    pub path: PathBuf,
    pub display: String,
    pub text: String,
    pub value: Value,
}

pub fn parse_file(
    display: &str,
    path: &Path,
    text: &str,
    vars: &Vars,
) -> Result<ComposeFile, SpecError> {
    if let Some(e) = super::yamlloc::nesting_error(text, 1) {
        return Err(e);
    }
    let mut value: Value = yaml_serde::from_str(text).map_err(|e| SpecError {
        pos: e
            .location()
            .map(|l| Pos {
                line: l.line() as u32,
                col: l.column() as u32,
            })
            .unwrap_or(Pos { line: 1, col: 1 }),
        message: format!("invalid YAML: {e}"),
    })?;
    value.apply_merge().map_err(|e| SpecError {
        pos: Pos { line: 1, col: 1 },
        message: format!("invalid YAML merge key: {e}"),
    })?;
    // Merge keys can nest (an anchor that itself merges): apply until stable.
    for _ in 0..4 {
        let _ = value.apply_merge();
    }
    interpolate(&mut value, vars, &mut ExpansionBudget::per_file()).map_err(|(s, l)| {
        // The line of the first one that begins like the offending string.
        let head: String = s.lines().next().unwrap_or("").chars().take(40).collect();
        let line = text
            .lines()
            .position(|l| !head.is_empty() && l.contains(&head))
            .map_or(1, |i| i as u32 + 1);
        SpecError {
            pos: Pos { line, col: 1 },
            message: format!("interpolation: {l}"),
        }
    })?;
    Ok(ComposeFile {
        path: path.to_path_buf(),
        display: display.to_string(),
        text: text.to_string(),
        value,
    })
}

fn resolve_extends(name: &str, services: &Mapping, dir: &Path, vars: &Vars, depth: u32) -> Value {
    let Some(svc) = services.get(name).cloned() else {
        return Value::Null;
    };
    let Some(ext) = svc.get("extends").cloned() else {
        return svc;
    };
    if depth > 8 {
        return svc;
    }
    let (file, base_name) = match &ext {
        Value::String(s) => (None, s.clone()),
        Value::Mapping(m) => (
            m.get("file").and_then(|f| f.as_str()).map(String::from),
            m.get("service")
                .and_then(|f| f.as_str())
                .unwrap_or("")
                .to_string(),
        ),
        _ => return svc,
    };
    let mut base = match file {
        None => resolve_extends(&base_name, services, dir, vars, depth + 1),
        Some(f) => {
            let p = dir.join(&f);
            // Only a regular file inside the project: `extends.file` must not make the linter
            // read (or echo) files elsewhere, a FIFO or a device.
            let text = crate::io_util::inside(dir, &p)
                .then(|| crate::io_util::read_regular_string(&p, crate::io_util::MAX_CONFIG_FILE))
                .and_then(Result::ok);
            match text.and_then(|t| parse_file(&f, &p, &t, vars).ok()) {
                Some(cf) => {
                    let other = cf
                        .value
                        .get("services")
                        .and_then(|s| s.as_mapping())
                        .cloned()
                        .unwrap_or_default();
                    let d = p.parent().unwrap_or(dir).to_path_buf();
                    resolve_extends(&base_name, &other, &d, vars, depth + 1)
                }
                None => Value::Null,
            }
        }
    };
    let mut own = svc.clone();
    if let Value::Mapping(m) = &mut own {
        m.remove("extends");
    }
    if base.is_null() {
        return own;
    }
    merge(&mut base, &own, "");
    base
}

/// Load and merge compose files into run specs. `is_gpu_build` answers whether a service's
/// `build:` (context dir, dockerfile path) produces a GPU image.
pub fn load(
    files: &[(String, PathBuf)],
    is_gpu_build: &dyn Fn(&Path, &Path) -> Option<bool>,
) -> (Vec<RunSpec>, Vec<(String, SpecError)>) {
    let mut errors = Vec::new();
    let Some(first) = files.first() else {
        return (Vec::new(), errors);
    };
    let project_dir = first.1.parent().map(Path::to_path_buf).unwrap_or_default();
    let vars = load_vars(&project_dir);
    let mut parsed = Vec::new();
    for (disp, p) in files {
        match crate::io_util::read_regular_string(p, crate::io_util::MAX_CONFIG_FILE) {
            Ok(t) => match parse_file(disp, p, &t, &vars) {
                Ok(cf) => parsed.push(cf),
                Err(e) => errors.push((disp.clone(), e)),
            },
            Err(e) => errors.push((
                disp.clone(),
                SpecError {
                    pos: Pos { line: 1, col: 1 },
                    message: format!("cannot read: {e}"),
                },
            )),
        }
    }
    (
        specs_from(&parsed, &project_dir, &vars, is_gpu_build),
        errors,
    )
}

pub fn specs_from(
    parsed: &[ComposeFile],
    project_dir: &Path,
    vars: &Vars,
    is_gpu_build: &dyn Fn(&Path, &Path) -> Option<bool>,
) -> Vec<RunSpec> {
    // Merge `services` of all files in order, resolving `extends` per file first.
    let mut merged = Mapping::new();
    // Service name → (file index, order of its last definition).
    let mut origin: std::collections::HashMap<String, (usize, usize)> = Default::default();
    let mut seq = 0usize;
    for (fi, cf) in parsed.iter().enumerate() {
        let Some(services) = cf.value.get("services").and_then(|s| s.as_mapping()) else {
            continue;
        };
        let dir = cf.path.parent().unwrap_or(project_dir);
        for (k, _) in services {
            let Some(name) = k.as_str() else { continue };
            let svc = resolve_extends(name, services, dir, vars, 0);
            match merged.get_mut(k) {
                Some(b) => merge(b, &svc, ""),
                None => {
                    merged.insert(k.clone(), svc);
                }
            }
            seq += 1;
            origin.insert(name.to_string(), (fi, seq));
        }
    }
    let mut origin: Vec<(String, (usize, usize))> = origin.into_iter().collect();
    origin.sort_by_key(|(_, (_, seq))| *seq);
    // Each file's lines and service keys, indexed once (not once per service).
    let index: Vec<FileIndex<'_>> = parsed.iter().map(FileIndex::new).collect();
    let mut out = Vec::new();
    for (name, (fi, _)) in origin {
        let Some(svc) = merged.get(name.as_str()) else {
            continue;
        };
        let cf = &parsed[fi];
        out.push(service_spec(
            &name,
            svc,
            cf,
            &index[fi],
            project_dir,
            is_gpu_build,
        ));
    }
    // An `image:` that another service builds (`build:` + the same `image:`) is a local build.
    let built: std::collections::HashSet<String> = out
        .iter()
        .filter(|r| r.build)
        .filter_map(|r| r.image_text().map(str::to_string))
        .collect();
    for r in &mut out {
        if r.image_text().is_some_and(|i| built.contains(i)) {
            r.build = true;
        }
    }
    out
}

/// A compose file's lines and where each service's key is.
struct FileIndex<'a> {
    y: YamlText<'a>,
    services: std::collections::HashMap<String, Pos>,
}

impl<'a> FileIndex<'a> {
    fn new(cf: &'a ComposeFile) -> Self {
        let y = YamlText::new(&cf.text, 1);
        let services = y
            .key(y.all(), "services")
            .map(|p| y.child_keys(y.block_of(p.line, y.all())))
            .unwrap_or_default();
        FileIndex { y, services }
    }
}

fn service_spec(
    name: &str,
    svc: &Value,
    cf: &ComposeFile,
    idx: &FileIndex<'_>,
    project_dir: &Path,
    is_gpu_build: &dyn Fn(&Path, &Path) -> Option<bool>,
) -> RunSpec {
    let y = &idx.y;
    let spos = idx
        .services
        .get(name)
        .copied()
        .unwrap_or(Pos { line: 1, col: 1 });
    let blk = y.block_of(spos.line, y.all());
    let at = |key: &str| y.key(blk, key).unwrap_or(spos);
    let find = |needle: &str| y.text(blk, needle).unwrap_or(spos);
    let mut rs = RunSpec::new(RunKind::Compose, &cf.display, spos, name, "compose");
    if let Some(img) = svc.get("image").and_then(s) {
        rs.image_pos = at("image");
        rs.image = Some(RunImage::written(img));
    }
    if let Some(b) = svc.get("build") {
        rs.build = true;
        let (ctx, df) = match b {
            Value::String(c) => (c.clone(), "Dockerfile".to_string()),
            Value::Mapping(m) => (
                m.get("context").and_then(s).unwrap_or_else(|| ".".into()),
                m.get("dockerfile")
                    .and_then(s)
                    .unwrap_or_else(|| "Dockerfile".into()),
            ),
            _ => (".".into(), "Dockerfile".into()),
        };
        // `args:` as a mapping or a `KEY=VALUE` list; a key without a value takes it from
        // the environment, which we do not know.
        let args_blk = y.key(blk, "args").map(|p| y.block_of(p.line, blk));
        let arg_pos = |k: &str| {
            args_blk
                .and_then(|b| y.text(b, k))
                .unwrap_or_else(|| y.key(blk, "args").unwrap_or(spos))
        };
        match b.get("args") {
            Some(Value::Mapping(m)) => {
                for (k, v) in m {
                    if let (Some(k), Some(v)) = (s(k), s(v)) {
                        let p = arg_pos(&k);
                        rs.build_args.push((k, v, p));
                    }
                }
            }
            Some(Value::Sequence(l)) => {
                for kv in l.iter().filter_map(s) {
                    if let Some((k, v)) = kv.split_once('=') {
                        rs.build_args
                            .push((k.to_string(), v.to_string(), arg_pos(k)));
                    }
                }
            }
            _ => {}
        }
        if !ctx.contains("://") {
            let base = cf.path.parent().unwrap_or(project_dir);
            let cdir = base.join(&ctx);
            let dfp = cdir.join(&df);
            rs.built_gpu_image = is_gpu_build(&cdir, &dfp);
            rs.build_files = Some((cdir, dfp));
        }
    }
    if let Some(rt) = svc.get("runtime").and_then(s) {
        rs.runtime = Some((rt, at("runtime")));
    }
    // deploy.resources.reservations.devices
    if let Some(devs) = svc
        .get("deploy")
        .and_then(|d| d.get("resources"))
        .and_then(|r| r.get("reservations"))
        .and_then(|r| r.get("devices"))
        .and_then(|d| d.as_sequence())
    {
        for d in devs {
            let is_gpu = d
                .get("driver")
                .and_then(s)
                .map(|x| x == "nvidia")
                .unwrap_or(false)
                || d.get("capabilities")
                    .and_then(|c| c.as_sequence())
                    .map(|c| c.iter().any(|x| x.as_str() == Some("gpu")))
                    .unwrap_or(false);
            if !is_gpu {
                continue;
            }
            let mut g = GpuRequest {
                all: false,
                count: None,
                ids: Vec::new(),
                pos: at("devices"),
            };
            match d.get("count") {
                Some(Value::String(c)) if c == "all" => g.all = true,
                Some(v) => g.count = s(v).and_then(|c| c.parse().ok()),
                None => {}
            }
            if let Some(ids) = d.get("device_ids").and_then(|x| x.as_sequence()) {
                g.ids = ids.iter().filter_map(s).collect();
            }
            if g.count.is_none() && g.ids.is_empty() {
                // Docker: neither count nor device_ids → all GPUs.
                g.all = true;
            }
            rs.gpus = Some(g);
        }
    }
    match svc.get("gpus") {
        Some(Value::String(v)) => rs.gpus = Some(parse_gpus_flag(v, at("gpus"))),
        Some(Value::Sequence(list)) => {
            let mut g = GpuRequest {
                all: false,
                count: None,
                ids: Vec::new(),
                pos: at("gpus"),
            };
            for d in list {
                if let Some(c) = d.get("count") {
                    if c.as_str() == Some("all") {
                        g.all = true;
                    } else {
                        g.count = s(c).and_then(|c| c.parse().ok());
                    }
                }
                if let Some(ids) = d.get("device_ids").and_then(|x| x.as_sequence()) {
                    g.ids.extend(ids.iter().filter_map(s));
                }
            }
            if g.count.is_none() && g.ids.is_empty() {
                g.all = true;
            }
            rs.gpus = Some(g);
        }
        _ => {}
    }
    match svc.get("environment") {
        Some(Value::Mapping(m)) => {
            for (k, v) in m {
                if let Some(k) = k.as_str() {
                    let val = s(v).unwrap_or_default();
                    rs.env
                        .push((k.to_string(), val, y.key(blk, k).unwrap_or_else(|| find(k))));
                }
            }
        }
        Some(Value::Sequence(l)) => {
            for x in l {
                if let Some(t) = x.as_str() {
                    let (k, v) = t.split_once('=').unwrap_or((t, ""));
                    rs.env.push((k.to_string(), v.to_string(), find(t)));
                }
            }
        }
        _ => {}
    }
    if let Some(vols) = svc.get("volumes").and_then(|v| v.as_sequence()) {
        for v in vols {
            match v {
                Value::String(t) => {
                    rs.mounts.extend(Mount::from_short_syntax(t, find(t)));
                }
                Value::Mapping(m) => {
                    let typ = m.get("type").and_then(s).unwrap_or_default();
                    let src = m.get("source").and_then(s).unwrap_or_default();
                    let tgt = m.get("target").and_then(s).unwrap_or_default();
                    if tgt == "/dev/shm" {
                        rs.shm_volume = true;
                    }
                    if typ == "bind" {
                        rs.mounts.push(Mount {
                            host: src.clone(),
                            container: tgt,
                            read_only: m
                                .get("read_only")
                                .and_then(|x| x.as_bool())
                                .unwrap_or(false),
                            pos: find(&src),
                        });
                    }
                }
                _ => {}
            }
        }
    }
    if let Some(devs) = svc.get("devices").and_then(|v| v.as_sequence()) {
        for d in devs {
            let t = match d {
                Value::String(t) => t.clone(),
                Value::Mapping(m) => m.get("source").and_then(s).unwrap_or_default(),
                _ => continue,
            };
            let host = t.split(':').next().unwrap_or("").to_string();
            rs.devices.push((host, find(&t)));
        }
    }
    if let Some(sz) = svc.get("shm_size").and_then(s) {
        if let Some(b) = parse_size(&sz) {
            rs.shm_size = Some((b, at("shm_size")));
        }
    }
    if let Some(t) = svc.get("tmpfs") {
        let hit = match t {
            Value::String(x) => x.starts_with("/dev/shm"),
            Value::Sequence(l) => l.iter().any(|x| {
                x.as_str()
                    .map(|x| x.starts_with("/dev/shm"))
                    .unwrap_or(false)
            }),
            _ => false,
        };
        rs.shm_volume |= hit;
    }
    // A CPU variant of a GPU service: `deploy` overridden in a service that merges an anchor
    // (`<<: *gpu` then `deploy: {}`), or a `cpu` profile / service name.
    let own_deploy = y.key(blk, "deploy").is_some() && y.key(blk, "<<").is_some();
    let cpu_profile = svc
        .get("profiles")
        .and_then(|p| p.as_sequence())
        .is_some_and(|l| {
            l.iter()
                .filter_map(|x| x.as_str())
                .any(|p| p.to_ascii_lowercase().contains("cpu"))
        });
    let lname = name.to_ascii_lowercase();
    if rs.gpus.is_none() && own_deploy {
        rs.cpu_role = Some("its `deploy` overrides the merged GPU reservation".to_string());
    } else if cpu_profile || lname.ends_with("cpu") || lname.starts_with("cpu") {
        rs.cpu_role = Some("it is a CPU profile".to_string());
    }
    rs.commented_gpu = [
        "driver: nvidia",
        "runtime: nvidia",
        "gpus:",
        "capabilities: [gpu]",
        "/dev/nvidia",
    ]
    .iter()
    .find_map(|n| y.commented(blk, n))
    .map(|p| match y.commented(blk, "deploy:") {
        Some(d) if d.line <= p.line => d,
        _ => p,
    });
    rs.ipc_host = svc
        .get("ipc")
        .and_then(s)
        .map(|x| x == "host")
        .unwrap_or(false);
    rs.privileged = svc
        .get("privileged")
        .and_then(|x| x.as_bool())
        .unwrap_or(false);
    for key in ["entrypoint", "command"] {
        match svc.get(key) {
            Some(Value::String(c)) => rs.command.extend(c.split_whitespace().map(String::from)),
            Some(Value::Sequence(l)) => rs.command.extend(l.iter().filter_map(s)),
            _ => {}
        }
    }
    rs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn specs(files: &[(&str, &str)]) -> Vec<RunSpec> {
        let dir = tempfile::tempdir().unwrap();
        let mut v = Vec::new();
        for (n, t) in files {
            let p = dir.path().join(n);
            std::fs::write(&p, t).unwrap();
            v.push((n.to_string(), p));
        }
        load(&v, &|_, _| None).0
    }

    #[test]
    fn reservations_anchors_and_overrides() {
        let base = "x-gpu: &gpu\n  deploy:\n    resources:\n      reservations:\n        devices:\n          - driver: nvidia\n            count: 2\n            capabilities: [gpu]\nservices:\n  train:\n    <<: *gpu\n    image: ${IMG:-pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime}\n    environment:\n      - CUDA_VISIBLE_DEVICES=0\n    volumes:\n      - /usr/local/cuda:/usr/local/cuda:ro\n";
        let over = "services:\n  train:\n    shm_size: 8gb\n    environment:\n      CUDA_VISIBLE_DEVICES: \"1\"\n";
        let v = specs(&[("compose.yaml", base), ("compose.override.yaml", over)]);
        assert_eq!(v.len(), 1);
        let r = &v[0];
        assert_eq!(r.gpus.as_ref().unwrap().count, Some(2));
        assert_eq!(
            r.image_text(),
            Some("pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime")
        );
        assert_eq!(r.env_value("CUDA_VISIBLE_DEVICES").unwrap().1, "1");
        assert_eq!(r.shm_size.unwrap().0, 8 << 30);
        assert_eq!(r.mounts[0].host, "/usr/local/cuda");
    }

    #[test]
    fn extends_same_file() {
        let t = "services:\n  base:\n    image: nvidia/cuda:12.4.1-base-ubuntu22.04\n    runtime: nvidia\n  app:\n    extends: base\n    command: python train.py\n";
        let v = specs(&[("compose.yaml", t)]);
        let app = v.iter().find(|r| r.name == "app").unwrap();
        assert_eq!(app.runtime.as_ref().unwrap().0, "nvidia");
        assert_eq!(app.pos.line, 5);
        assert_eq!(app.runtime.as_ref().unwrap().1.line, 5);
    }

    /// Strings that each stay under the per-word bound, but together expand past the file's
    /// budget: an error at the first one past it, never an unbounded value tree.
    #[test]
    fn interpolation_is_bounded_per_file() {
        let mut vars = Vars::new();
        vars.insert("V".into(), Var::Set("a".repeat((512 << 10) - 8)));
        let items: String = (0..100)
            .map(|i| format!("      - \"${{V}}${{V}}{i}\"\n"))
            .collect();
        let text = format!("services:\n  a:\n    command:\n{items}");
        let e = parse_file("compose.yaml", Path::new("compose.yaml"), &text, &vars)
            .err()
            .expect("past the budget");
        assert!(e.message.contains("in all"), "{}", e.message);
        // 32 strings of 1 MiB - 14 bytes fit in 32 MiB; the 33rd (line 36) does not.
        assert_eq!(e.pos.line, 36);
    }

    #[test]
    fn bad_yaml_is_located() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("compose.yaml");
        std::fs::write(&p, "services:\n  a:\n   - b\n  c: [\n").unwrap();
        let (_, errs) = load(&[("compose.yaml".into(), p)], &|_, _| None);
        assert_eq!(errs.len(), 1);
        assert!(errs[0].1.pos.line >= 3);
    }
}
