//! Registry credentials, found the way Docker and podman find them, and the
//! `WWW-Authenticate` challenge parser. Credentials never appear in `Debug` output or error
//! messages: errors name the file and the registry only.
//!
//! Files, first match wins: `--authfile` (else `REGISTRY_AUTH_FILE`), podman's
//! `$XDG_RUNTIME_DIR/containers/auth.json`, then Docker's `config.json`. Inside one file:
//! `credHelpers[registry]`, then `credsStore`, then `auths` (`auth` = base64 user:pass,
//! `username`/`password`, or `identitytoken`). Keys may carry a scheme or a path
//! (`https://index.docker.io/v1/`, `host/namespace`); the most specific key wins.

use super::reference::DOCKER_HUB;
use crate::source::options::SourceOptions;
use crate::vocab::reference::is_docker_hub;
use base64::Engine;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

#[derive(Clone, PartialEq, Eq)]
pub(crate) enum Credentials {
    Basic {
        username: String,
        password: String,
    },
    /// An OAuth2 refresh token (`identitytoken`, or a helper's `<token>` user).
    IdentityToken(String),
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credentials::Basic { .. } => f.write_str("Credentials::Basic(<redacted>)"),
            Credentials::IdentityToken(_) => f.write_str("Credentials::IdentityToken(<redacted>)"),
        }
    }
}

/// Credentials plus where they came from (for messages).
#[derive(Debug, Clone)]
pub(crate) struct FoundCredentials {
    pub creds: Credentials,
    pub source: String,
}

#[derive(Deserialize, Default)]
struct ConfigFile {
    #[serde(default)]
    auths: BTreeMap<String, AuthEntry>,
    #[serde(default, rename = "credsStore")]
    creds_store: Option<String>,
    #[serde(default, rename = "credHelpers")]
    cred_helpers: BTreeMap<String, String>,
}

#[derive(Deserialize, Default)]
struct AuthEntry {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default)]
    identitytoken: Option<String>,
}

/// `REGISTRY_AUTH_FILE`, when set and not empty (empty means unset, as in podman).
fn env_authfile() -> Option<std::ffi::OsString> {
    std::env::var_os("REGISTRY_AUTH_FILE").filter(|v| !v.is_empty())
}

/// The files consulted, in order.
pub(crate) fn auth_files(opts: &SourceOptions) -> Vec<PathBuf> {
    let mut files = Vec::new();
    if let Some(f) = opts
        .authfile
        .clone()
        .or_else(|| env_authfile().map(PathBuf::from))
    {
        files.push(f);
    }
    if let Some(rt) = std::env::var_os("XDG_RUNTIME_DIR").filter(|v| !v.is_empty()) {
        files.push(PathBuf::from(rt).join("containers").join("auth.json"));
    }
    if let Some(d) = opts.docker_config_dir() {
        files.push(d.join("config.json"));
    }
    files
}

/// Look credentials up for `registry` (as in the reference: `docker.io`, `host:port`) and
/// `repository`. Unreadable or malformed files are errors only when named explicitly.
pub(crate) fn lookup(
    registry: &str,
    repository: &str,
    opts: &SourceOptions,
) -> anyhow::Result<Option<FoundCredentials>> {
    let explicit = opts.authfile.is_some() || env_authfile().is_some();
    for (i, file) in auth_files(opts).iter().enumerate() {
        let text = match std::fs::read_to_string(file) {
            Ok(t) => t,
            Err(e) if i == 0 && explicit => {
                anyhow::bail!("cannot read auth file {}: {e}", file.display())
            }
            Err(_) => continue,
        };
        let cfg: ConfigFile = match serde_json::from_str(&text) {
            Ok(c) => c,
            // The message of a JSON error can quote the file: say only where it is.
            Err(e) => anyhow::bail!(
                "auth file {} is not valid JSON (line {}, column {})",
                file.display(),
                e.line(),
                e.column()
            ),
        };
        if let Some(found) = lookup_in(&cfg, file, registry, repository)? {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

fn lookup_in(
    cfg: &ConfigFile,
    file: &Path,
    registry: &str,
    repository: &str,
) -> anyhow::Result<Option<FoundCredentials>> {
    let server = helper_server_url(registry);
    if let Some(helper) = best_key(cfg.cred_helpers.keys(), registry, repository)
        .and_then(|k| cfg.cred_helpers.get(k))
    {
        return run_helper(helper, &server).map(|c| {
            c.map(|creds| FoundCredentials {
                creds,
                source: format!(
                    "docker-credential-{helper} (credHelpers in {})",
                    file.display()
                ),
            })
        });
    }
    if let Some(store) = cfg.creds_store.as_deref().filter(|s| !s.is_empty()) {
        if let Some(creds) = run_helper(store, &server)? {
            return Ok(Some(FoundCredentials {
                creds,
                source: format!(
                    "docker-credential-{store} (credsStore in {})",
                    file.display()
                ),
            }));
        }
    }
    let Some(entry) =
        best_key(cfg.auths.keys(), registry, repository).and_then(|k| cfg.auths.get(k))
    else {
        return Ok(None);
    };
    let source = format!("auths in {}", file.display());
    if let Some(tok) = entry.identitytoken.as_deref().filter(|t| !t.is_empty()) {
        return Ok(Some(FoundCredentials {
            creds: Credentials::IdentityToken(tok.to_string()),
            source,
        }));
    }
    if let Some(auth) = entry.auth.as_deref().filter(|a| !a.is_empty()) {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(auth.trim())
            .ok()
            .and_then(|b| String::from_utf8(b).ok());
        let Some((u, p)) = decoded.as_deref().and_then(|d| d.split_once(':')) else {
            anyhow::bail!(
                "the `auth` entry for {registry} in {} is not base64 of user:password",
                file.display()
            );
        };
        return Ok(Some(FoundCredentials {
            creds: Credentials::Basic {
                username: u.to_string(),
                password: p.to_string(),
            },
            source,
        }));
    }
    if let (Some(u), Some(p)) = (&entry.username, &entry.password) {
        return Ok(Some(FoundCredentials {
            creds: Credentials::Basic {
                username: u.clone(),
                password: p.clone(),
            },
            source,
        }));
    }
    Ok(None)
}

/// Docker Hub's credentials live under its legacy v1 URL.
fn helper_server_url(registry: &str) -> String {
    if registry == DOCKER_HUB {
        "https://index.docker.io/v1/".to_string()
    } else {
        registry.to_string()
    }
}

/// A config key without scheme and trailing slash, Docker Hub's aliases folded.
fn normalize_key(k: &str) -> String {
    let k = k
        .strip_prefix("https://")
        .or_else(|| k.strip_prefix("http://"))
        .unwrap_or(k);
    let k = k.trim_end_matches('/');
    // `host/v1/` and `host/v2/` are API paths, not namespaces (`index.docker.io/v1/` is
    // Docker Hub's legacy key).
    let k = k
        .strip_suffix("/v1")
        .or_else(|| k.strip_suffix("/v2"))
        .unwrap_or(k);
    if is_docker_hub(k) {
        return DOCKER_HUB.to_string();
    }
    k.to_string()
}

/// The most specific key matching `registry/repository`.
fn best_key<'a>(
    keys: impl Iterator<Item = &'a String>,
    registry: &str,
    repository: &str,
) -> Option<&'a String> {
    let full = format!("{registry}/{repository}");
    keys.filter_map(|k| {
        let n = normalize_key(k);
        let matches = n == registry || full == n || full.starts_with(&format!("{n}/"));
        matches.then_some((n.len(), k))
    })
    .max_by_key(|(len, _)| *len)
    .map(|(_, k)| k)
}

/// Run `docker-credential-<name> get`. Not installed or "not found": no credentials.
fn run_helper(name: &str, server: &str) -> anyhow::Result<Option<Credentials>> {
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        anyhow::bail!("credential helper name {name:?} is not a plain name");
    }
    let prog = format!("docker-credential-{name}");
    let mut child = match Command::new(&prog)
        .arg("get")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => anyhow::bail!("running {prog}: {e}"),
    };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(server.as_bytes());
    }
    let out = child.wait_with_output()?;
    if !out.status.success() {
        let msg = String::from_utf8_lossy(&out.stdout);
        if msg.contains("credentials not found") {
            return Ok(None);
        }
        // The helper's own message names no secret; keep it short anyway.
        anyhow::bail!(
            "{prog} get failed: {}",
            msg.trim().chars().take(200).collect::<String>()
        );
    }
    #[derive(Deserialize)]
    struct HelperOut {
        #[serde(rename = "Username", default)]
        username: String,
        #[serde(rename = "Secret", default)]
        secret: String,
    }
    let h: HelperOut = serde_json::from_slice(&out.stdout)
        .map_err(|_| anyhow::anyhow!("{prog} get printed something that is not its JSON answer"))?;
    if h.secret.is_empty() {
        return Ok(None);
    }
    Ok(Some(if h.username == "<token>" {
        Credentials::IdentityToken(h.secret)
    } else {
        Credentials::Basic {
            username: h.username,
            password: h.secret,
        }
    }))
}

/// One `WWW-Authenticate` challenge: scheme (lowercase) and parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    pub scheme: String,
    pub params: BTreeMap<String, String>,
}

/// Parse `Bearer realm="https://auth",service="registry",scope="repository:a:pull"`.
pub fn parse_challenge(header: &str) -> Option<Challenge> {
    let header = header.trim();
    let (scheme, rest) = header.split_once(' ').unwrap_or((header, ""));
    let mut params = BTreeMap::new();
    let mut s = rest.trim();
    while !s.is_empty() {
        let (key, after) = s.split_once('=')?;
        let key = key.trim().to_ascii_lowercase();
        let after = after.trim_start();
        let (value, rest) = if let Some(q) = after.strip_prefix('"') {
            let mut out = String::new();
            let mut chars = q.char_indices();
            let mut end = None;
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, n)) = chars.next() {
                            out.push(n);
                        }
                    }
                    '"' => {
                        end = Some(i + 1);
                        break;
                    }
                    c => out.push(c),
                }
            }
            (out, &q[end?..])
        } else {
            let end = after.find(',').unwrap_or(after.len());
            (after[..end].trim().to_string(), &after[end..])
        };
        params.insert(key, value);
        s = rest.trim_start().trim_start_matches(',').trim_start();
    }
    Some(Challenge {
        scheme: scheme.to_ascii_lowercase(),
        params,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_keys_fold_every_docker_hub_name() {
        for k in [
            "https://index.docker.io/v1/",
            "index.docker.io",
            "registry-1.docker.io",
            "https://registry-1.docker.io/v2/",
            "docker.io",
        ] {
            assert_eq!(normalize_key(k), DOCKER_HUB, "{k}");
        }
        assert_eq!(normalize_key("https://ghcr.io/v2/"), "ghcr.io");
        assert_eq!(normalize_key("ghcr.io/org"), "ghcr.io/org");
    }

    #[test]
    fn challenge() {
        let c = parse_challenge(
            r#"Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/ubuntu:pull""#,
        )
        .unwrap();
        assert_eq!(c.scheme, "bearer");
        assert_eq!(c.params["realm"], "https://auth.docker.io/token");
        assert_eq!(c.params["scope"], "repository:library/ubuntu:pull");
        let b = parse_challenge(r#"Basic realm="Registry Realm""#).unwrap();
        assert_eq!(b.scheme, "basic");
        assert_eq!(b.params["realm"], "Registry Realm");
    }

    fn write(dir: &Path, json: &str) -> SourceOptions {
        std::fs::write(dir.join("config.json"), json).unwrap();
        SourceOptions {
            docker_config_dir: Some(dir.to_path_buf()),
            authfile: Some(dir.join("none.json")),
            ..SourceOptions::default()
        }
    }

    #[test]
    fn config_lookup() {
        let d = tempfile::tempdir().unwrap();
        // user:pass, u2:p2
        let mut o = write(
            d.path(),
            r#"{"auths":{"https://index.docker.io/v1/":{"auth":"dXNlcjpwYXNz"},
                "127.0.0.1:5000":{"username":"u2","password":"p2"},
                "127.0.0.1:5000/team":{"auth":"dXNlcjpwYXNz"}}}"#,
        );
        o.authfile = None;
        let hub = lookup("docker.io", "library/ubuntu", &o).unwrap().unwrap();
        assert_eq!(
            hub.creds,
            Credentials::Basic {
                username: "user".into(),
                password: "pass".into()
            }
        );
        let local = lookup("127.0.0.1:5000", "x/y", &o).unwrap().unwrap();
        assert_eq!(
            local.creds,
            Credentials::Basic {
                username: "u2".into(),
                password: "p2".into()
            }
        );
        let team = lookup("127.0.0.1:5000", "team/y", &o).unwrap().unwrap();
        assert_eq!(
            team.creds,
            Credentials::Basic {
                username: "user".into(),
                password: "pass".into()
            }
        );
        assert!(lookup("ghcr.io", "a/b", &o).unwrap().is_none());
        assert!(
            !format!("{hub:?}").contains("pass"),
            "Debug never shows secrets"
        );
    }

    #[test]
    fn explicit_missing_authfile_is_an_error() {
        let d = tempfile::tempdir().unwrap();
        let o = write(d.path(), "{}");
        assert!(lookup("docker.io", "library/x", &o).is_err());
    }

    #[test]
    fn missing_helper_is_no_credentials() {
        let d = tempfile::tempdir().unwrap();
        let mut o = write(d.path(), r#"{"credsStore":"gpulint-test-absent-helper"}"#);
        o.authfile = None;
        assert!(lookup("docker.io", "library/x", &o).unwrap().is_none());
    }
}
