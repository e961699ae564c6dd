//! A blocking client for one repository of one registry: GET with the auth dance (anonymous
//! first; on 401, basic or a bearer token per the challenge, then once more), retries with
//! backoff on resets, 429 and 5xx (a silent download once; a small request never: it has a
//! total bound), fail-fast on refused connections and DNS
//! errors. HTTPS with verified certificates unless the host is loopback or listed with
//! `--insecure-registry`. The Authorization header is never logged nor kept across
//! redirects (blob storage often redirects to another host). Credentials go only to the
//! registry host itself and to the token realm its own first challenge names: a 401 from a
//! host a redirect led to is refused, never answered with the registry's credentials.

use super::auth::{self, Challenge, Credentials, FoundCredentials};
use super::reference::{is_loopback, RegistryRef};
use crate::source::error::{LiveError, LiveErrorKind};
use crate::source::options::SourceOptions;
use base64::Engine;
use std::io::Read;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

const RETRIES: u32 = 3;
/// A download whose connection went silent is tried once more, not [`RETRIES`] times.
const TIMEOUT_RETRIES: u32 = 1;
const BACKOFF: Duration = Duration::from_millis(250);
/// A connection that is not established by then is dropped.
const CONNECT: Duration = Duration::from_secs(10);
/// A download connection silent this long (no response, or no byte of the body) is dropped.
const SILENCE: Duration = Duration::from_secs(15);
/// The whole of one small request (manifest, config, token), body included, and not
/// retried when it runs out: a registry that accepts connections and never answers, or
/// trickles a manifest byte by byte, fails the scan in this time.
pub(crate) const SMALL_REQUEST: Duration = Duration::from_secs(30);

pub(crate) struct Client {
    agent: ureq::Agent,
    /// `https://host:port` or `http://host:port`.
    base: String,
    registry: String,
    repository: String,
    insecure: Vec<String>,
    creds: Option<FoundCredentials>,
    /// Why credentials could not be looked up, for the 401 message.
    creds_error: Option<String>,
    authorization: Mutex<Option<String>>,
    /// The token realm the registry host named in its first bearer challenge: the only
    /// other place its credentials are sent.
    realm: Mutex<Option<String>>,
    downloads: Arc<Semaphore>,
    /// When everything for this image must be done (`--timeout`).
    deadline: Instant,
    timeout: Duration,
}

fn err(kind: LiveErrorKind, msg: impl Into<String>) -> LiveError {
    LiveError::new(kind, msg)
}

/// A transport error that is a timeout (connect, silence, or the request's total bound).
fn is_timeout(t: &ureq::Transport) -> bool {
    use std::error::Error;
    let mut cur: Option<&(dyn Error + 'static)> = t.source();
    while let Some(e) = cur {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            if matches!(
                io.kind(),
                std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
            ) {
                return true;
            }
        }
        cur = e.source();
    }
    t.to_string().contains("timed out")
}

/// An error reading a response body that is a timeout.
pub(crate) fn is_io_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
    ) || e.to_string().contains("timed out")
}

impl Client {
    pub(crate) fn new(r: &RegistryRef, opts: &SourceOptions) -> Client {
        let host = r.api_host().to_string();
        let insecure = opts.insecure_registries.clone();
        let plain = is_loopback(&host) || insecure.iter().any(|h| h == &host || h == &r.registry);
        let base = format!("{}://{host}", if plain { "http" } else { "https" });
        let (creds, creds_error) = match auth::lookup(&r.registry, &r.repository, opts) {
            Ok(c) => (c, None),
            Err(e) => (None, Some(format!("{e:#}"))),
        };
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(CONNECT)
            .timeout_read(SILENCE)
            .timeout_write(SILENCE)
            .redirects(5)
            .redirect_auth_headers(ureq::RedirectAuthHeaders::Never)
            .try_proxy_from_env(true)
            .user_agent(concat!("gpulint/", env!("CARGO_PKG_VERSION")))
            .build();
        Client {
            agent,
            base,
            registry: r.registry.clone(),
            repository: r.repository.clone(),
            insecure,
            creds,
            creds_error,
            authorization: Mutex::new(None),
            realm: Mutex::new(None),
            downloads: Arc::new(Semaphore::new(opts.parallel_downloads())),
            deadline: opts.deadline(),
            timeout: opts
                .timeout
                .unwrap_or(crate::source::options::DEFAULT_TIMEOUT),
        }
    }

    pub(crate) fn registry(&self) -> &str {
        &self.registry
    }

    pub(crate) fn download_permit(&self) -> Permit {
        Semaphore::acquire(&self.downloads)
    }

    fn url(&self, path: &str) -> String {
        format!("{}/v2/{}/{path}", self.base, self.repository)
    }

    /// What is left of the time for this image; an error once it ran out.
    pub(crate) fn time_left(&self, doing: &str) -> Result<Duration, LiveError> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(err(
                LiveErrorKind::Timeout,
                format!(
                    "{}/{}: {doing}: gave up after {} s (--timeout)",
                    self.registry,
                    self.repository,
                    self.timeout.as_secs()
                ),
            ));
        }
        Ok(left)
    }

    /// GET `/v2/<repo>/<path>`, authenticating as needed. `range_from` asks for the bytes
    /// from that offset on (to resume a broken blob download). `total` bounds the whole
    /// request, body included, and a request that runs out of it is not retried; without
    /// it (downloads) a connection silent for [`SILENCE`] is dropped and retried once, and
    /// the reader checks the time left for the image.
    pub(crate) fn get(
        &self,
        path: &str,
        accept: Option<&str>,
        range_from: Option<u64>,
        total: Option<Duration>,
    ) -> Result<ureq::Response, LiveError> {
        let url = self.url(path);
        let mut authed = false;
        let mut attempt = 0;
        let mut timeouts = 0;
        loop {
            let left = self.time_left(&format!("GET {path}"))?;
            let mut req = self.agent.get(&url);
            if let Some(t) = total {
                req = req.timeout(t.min(left));
            }
            if let Some(a) = accept {
                req = req.set("Accept", a);
            }
            if let Some(from) = range_from {
                req = req.set("Range", &format!("bytes={from}-"));
            }
            if let Some(h) = self.current_authorization() {
                req = req.set("Authorization", &h);
            }
            let retryable = match req.call() {
                Ok(resp) => return Ok(resp),
                Err(ureq::Error::Status(401, resp)) if !authed => {
                    authed = true;
                    let from = url_authority(resp.get_url());
                    if !same_authority(&from, url_authority(&self.base).as_str()) {
                        return Err(err(
                            LiveErrorKind::Auth,
                            format!(
                                "{}/{}: GET {path}: redirected to {from}, which asks for \
                                 credentials; gpulint sends them only to {}",
                                self.registry, self.repository, self.registry
                            ),
                        ));
                    }
                    let challenge = resp.header("www-authenticate").map(str::to_string);
                    self.authenticate(challenge.as_deref())?;
                    continue;
                }
                Err(ureq::Error::Status(401, _)) | Err(ureq::Error::Status(403, _)) => {
                    return Err(self.denied());
                }
                Err(ureq::Error::Status(code, resp)) if code == 429 || code >= 500 => {
                    format!("HTTP {code} {}", registry_error_text(resp))
                }
                Err(ureq::Error::Status(code, resp)) => {
                    let kind = if code == 404 {
                        LiveErrorKind::NotFound
                    } else {
                        LiveErrorKind::Protocol
                    };
                    return Err(err(
                        kind,
                        format!(
                            "{}/{}: GET {path}: HTTP {code} {}",
                            self.registry,
                            self.repository,
                            registry_error_text(resp)
                        ),
                    ));
                }
                Err(ureq::Error::Transport(t)) if is_timeout(&t) => {
                    timeouts += 1;
                    if total.is_some() || timeouts > TIMEOUT_RETRIES {
                        return Err(err(
                            LiveErrorKind::Timeout,
                            format!(
                                "{}/{}: GET {path}: no answer in time ({t}), tried {}",
                                self.registry,
                                self.repository,
                                if timeouts == 1 {
                                    "once".to_string()
                                } else {
                                    format!("{timeouts} times")
                                }
                            ),
                        ));
                    }
                    t.to_string()
                }
                Err(ureq::Error::Transport(t)) => match t.kind() {
                    ureq::ErrorKind::Io => t.to_string(),
                    _ => {
                        return Err(err(
                            LiveErrorKind::Unreachable,
                            format!(
                                "registry {} ({}) unreachable: {t}",
                                self.registry, self.base
                            ),
                        ))
                    }
                },
            };
            attempt += 1;
            if attempt > RETRIES {
                return Err(err(
                    LiveErrorKind::Unreachable,
                    format!(
                        "{}/{}: GET {path} failed after {RETRIES} retries: {retryable}",
                        self.registry, self.repository
                    ),
                ));
            }
            std::thread::sleep(BACKOFF * 2u32.pow(attempt - 1));
        }
    }

    fn current_authorization(&self) -> Option<String> {
        self.authorization.lock().ok().and_then(|g| g.clone())
    }

    fn set_authorization(&self, value: String) {
        if let Ok(mut g) = self.authorization.lock() {
            *g = Some(value);
        }
    }

    fn denied(&self) -> LiveError {
        let how = match (&self.creds, &self.creds_error) {
            (Some(c), _) => format!("credentials from {} were refused", c.source),
            (None, Some(e)) => format!("no usable credentials ({e})"),
            (None, None) => "no credentials found (tried --authfile/REGISTRY_AUTH_FILE, \
                 $XDG_RUNTIME_DIR/containers/auth.json, ~/.docker/config.json)"
                .to_string(),
        };
        err(
            LiveErrorKind::Auth,
            format!(
                "registry {} denied access to {}: {how}",
                self.registry, self.repository
            ),
        )
    }

    fn authenticate(&self, challenge: Option<&str>) -> Result<(), LiveError> {
        let Some(ch) = challenge.and_then(auth::parse_challenge) else {
            return Err(self.denied());
        };
        match ch.scheme.as_str() {
            "basic" => match self.creds.as_ref().map(|c| &c.creds) {
                Some(Credentials::Basic { username, password }) => {
                    self.set_authorization(basic_header(username, password));
                    Ok(())
                }
                _ => Err(self.denied()),
            },
            "bearer" => {
                let token = self.fetch_token(&ch)?;
                self.set_authorization(format!("Bearer {token}"));
                Ok(())
            }
            other => Err(err(
                LiveErrorKind::Auth,
                format!(
                    "registry {} asks for unsupported auth scheme {other:?}",
                    self.registry
                ),
            )),
        }
    }

    /// The token flow of the distribution spec: GET the realm with service and scope
    /// (basic credentials if we have them), or POST a refresh token for identity tokens.
    fn fetch_token(&self, ch: &Challenge) -> Result<String, LiveError> {
        let realm = ch.params.get("realm").ok_or_else(|| {
            err(
                LiveErrorKind::Auth,
                format!(
                    "registry {} sent a bearer challenge without realm",
                    self.registry
                ),
            )
        })?;
        let realm_host = realm
            .strip_prefix("https://")
            .map(|r| (true, r))
            .or_else(|| realm.strip_prefix("http://").map(|r| (false, r)));
        let Some((tls, rest)) = realm_host else {
            return Err(err(
                LiveErrorKind::Auth,
                format!(
                    "registry {} sent a token realm that is not an http(s) URL",
                    self.registry
                ),
            ));
        };
        let host = rest.split(['/', '?']).next().unwrap_or("");
        if !tls && !is_loopback(host) && !self.insecure.iter().any(|h| h == host) {
            return Err(err(
                LiveErrorKind::Auth,
                format!("registry {} sent a plain-HTTP token realm ({host}); refusing to send credentials there", self.registry),
            ));
        }
        // Pin the realm of the first challenge; a later one naming another realm gets no
        // credentials.
        if let Ok(mut pinned) = self.realm.lock() {
            match pinned.as_deref() {
                None => *pinned = Some(realm.clone()),
                Some(p) if p == realm => {}
                Some(p) => {
                    return Err(err(
                        LiveErrorKind::Auth,
                        format!(
                            "registry {} changed its token realm from {} to {}; refusing to \
                             send credentials there",
                            self.registry,
                            url_authority(p),
                            url_authority(realm)
                        ),
                    ))
                }
            }
        }
        let scope = format!("repository:{}:pull", self.repository);
        let service = ch.params.get("service").cloned().unwrap_or_default();
        let bound = SMALL_REQUEST.min(self.time_left("fetching a token")?);
        let result = match self.creds.as_ref().map(|c| &c.creds) {
            Some(Credentials::IdentityToken(tok)) => {
                self.agent.post(realm).timeout(bound).send_form(&[
                    ("grant_type", "refresh_token"),
                    ("refresh_token", tok),
                    ("service", &service),
                    ("scope", &scope),
                    ("client_id", "gpulint"),
                ])
            }
            basic => {
                let mut req = self.agent.get(realm).timeout(bound).query("scope", &scope);
                if !service.is_empty() {
                    req = req.query("service", &service);
                }
                if let Some(Credentials::Basic { username, password }) = basic {
                    req = req.set("Authorization", &basic_header(username, password));
                }
                req.call()
            }
        };
        let resp = match result {
            Ok(r) => r,
            Err(ureq::Error::Status(401 | 403, _)) => return Err(self.denied()),
            Err(ureq::Error::Transport(t)) if is_timeout(&t) => {
                return Err(err(
                    LiveErrorKind::Timeout,
                    format!(
                        "registry {}: token endpoint {host}: no answer in time ({t})",
                        self.registry
                    ),
                ))
            }
            Err(e) => {
                return Err(err(
                    LiveErrorKind::Unreachable,
                    format!(
                        "registry {}: token endpoint {host}: {}",
                        self.registry,
                        status_only(&e)
                    ),
                ))
            }
        };
        #[derive(serde::Deserialize)]
        struct Tok {
            token: Option<String>,
            access_token: Option<String>,
        }
        let mut body = Vec::new();
        resp.into_reader()
            .take(1 << 20)
            .read_to_end(&mut body)
            .map_err(|e| {
                err(
                    if is_io_timeout(&e) {
                        LiveErrorKind::Timeout
                    } else {
                        LiveErrorKind::Unreachable
                    },
                    format!("registry {}: reading token: {e}", self.registry),
                )
            })?;
        let t: Tok = serde_json::from_slice(&body).map_err(|_| {
            err(
                LiveErrorKind::Auth,
                format!(
                    "registry {}: token endpoint answered something that is not a token",
                    self.registry
                ),
            )
        })?;
        t.token
            .or(t.access_token)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                err(
                    LiveErrorKind::Auth,
                    format!("registry {}: token endpoint gave no token", self.registry),
                )
            })
    }
}

/// `host[:port]` of an absolute URL, lowercased, without userinfo or a default port.
fn url_authority(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let auth = rest.split(['/', '?', '#']).next().unwrap_or("");
    let auth = auth.rsplit_once('@').map_or(auth, |(_, h)| h);
    let auth = auth.to_ascii_lowercase();
    let default = match scheme.to_ascii_lowercase().as_str() {
        "https" => ":443",
        "http" => ":80",
        _ => "",
    };
    match auth.strip_suffix(default) {
        Some(h) if !default.is_empty() => h.to_string(),
        _ => auth,
    }
}

fn same_authority(a: &str, b: &str) -> bool {
    !a.is_empty() && a == b
}

fn basic_header(user: &str, pass: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"))
    )
}

/// An error without the request URL's query (which may carry a refresh token in POSTs we
/// never put there, but be safe).
fn status_only(e: &ureq::Error) -> String {
    match e {
        ureq::Error::Status(code, _) => format!("HTTP {code}"),
        ureq::Error::Transport(t) => format!("{:?}: {}", t.kind(), t.message().unwrap_or("")),
    }
}

/// The `errors[].message` of a registry error body, short.
fn registry_error_text(resp: ureq::Response) -> String {
    #[derive(serde::Deserialize)]
    struct Errs {
        errors: Vec<E>,
    }
    #[derive(serde::Deserialize)]
    struct E {
        code: Option<String>,
        message: Option<String>,
    }
    let mut body = Vec::new();
    let _ = resp.into_reader().take(64 * 1024).read_to_end(&mut body);
    match serde_json::from_slice::<Errs>(&body) {
        Ok(e) => e
            .errors
            .iter()
            .map(|e| {
                format!(
                    "{}: {}",
                    e.code.as_deref().unwrap_or("?"),
                    e.message.as_deref().unwrap_or("")
                )
            })
            .collect::<Vec<_>>()
            .join("; "),
        Err(_) => String::from_utf8_lossy(&body).chars().take(200).collect(),
    }
}

/// A counting semaphore bounding parallel blob downloads.
pub(crate) struct Semaphore {
    free: Mutex<usize>,
    cond: Condvar,
}

/// Held by a blob reader until it is dropped.
pub(crate) struct Permit(Arc<Semaphore>);

impl Semaphore {
    pub(crate) fn new(n: usize) -> Semaphore {
        Semaphore {
            free: Mutex::new(n.max(1)),
            cond: Condvar::new(),
        }
    }

    pub(crate) fn acquire(this: &Arc<Semaphore>) -> Permit {
        let mut free = this.free.lock().unwrap_or_else(|p| p.into_inner());
        while *free == 0 {
            free = this.cond.wait(free).unwrap_or_else(|p| p.into_inner());
        }
        *free -= 1;
        Permit(this.clone())
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut free = self.0.free.lock().unwrap_or_else(|p| p.into_inner());
        *free += 1;
        self.0.cond.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authority_of_urls() {
        assert_eq!(url_authority("https://Reg.Example:443/v2/x"), "reg.example");
        assert_eq!(url_authority("http://127.0.0.1:5000/v2/"), "127.0.0.1:5000");
        assert_eq!(
            url_authority("https://u:p@evil.example/t?x"),
            "evil.example"
        );
        assert!(same_authority("127.0.0.1:5000", "127.0.0.1:5000"));
        assert!(!same_authority("127.0.0.1:5001", "127.0.0.1:5000"));
        assert!(!same_authority("", ""));
    }
}
