//! How live sources (daemons and registries) are reached, and the command-line flags every
//! command that opens an image shares.

use crate::progress::Progress;
use crate::source::Platform;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How the live transports reach daemons and registries. `Default` is what a user with no
/// flags gets: environment and `~/.docker` decide.
#[derive(Clone, Default)]
pub struct SourceOptions {
    /// Hosts (`host[:port]`) reached over plain HTTP even though they are not loopback.
    pub insecure_registries: Vec<String>,
    /// A containers-auth.json / docker config file read before `~/.docker/config.json`
    /// (else `REGISTRY_AUTH_FILE`).
    pub authfile: Option<PathBuf>,
    /// Only this daemon (`unix:///path` or `tcp://host:port`), instead of discovery.
    pub docker_host: Option<String>,
    /// Docker's config directory (else `DOCKER_CONFIG`, else `~/.docker`).
    pub docker_config_dir: Option<PathBuf>,
    /// Where daemon exports may park a layer that arrives before anyone asked for it
    /// (else the system temp dir).
    pub spool_dir: Option<PathBuf>,
    /// Layer downloads at once per registry image; 0 means the default (4).
    pub max_parallel_downloads: usize,
    /// Download progress; hidden unless the caller made a visible one.
    pub progress: Progress,
    /// The most time one image may take from a registry or daemon, all requests and
    /// retries together (`--timeout`); None means [`DEFAULT_TIMEOUT`].
    pub timeout: Option<Duration>,
}

/// `--timeout` when not given: enough for a multi-GB CUDA image on a slow link, short
/// enough that a stuck registry fails a CI job instead of hanging it.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

impl SourceOptions {
    pub(crate) fn docker_config_dir(&self) -> Option<PathBuf> {
        self.docker_config_dir
            .clone()
            .or_else(|| std::env::var_os("DOCKER_CONFIG").map(PathBuf::from))
            .or_else(|| home_dir().map(|h| h.join(".docker")))
    }

    /// When reading an image opened now must be over.
    pub(crate) fn deadline(&self) -> Instant {
        let t = self.timeout.unwrap_or(DEFAULT_TIMEOUT);
        Instant::now()
            .checked_add(t)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(365 * 86_400))
    }

    pub(crate) fn parallel_downloads(&self) -> usize {
        if self.max_parallel_downloads == 0 {
            4
        } else {
            self.max_parallel_downloads
        }
    }
}

pub(crate) fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// The flags every command that opens an image shares. The integrator flattens this into
/// the binary's commands (`#[command(flatten)]`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SourceArgs {
    /// Platform to pick from a multi-platform image (os/arch[/variant]); default: this host's.
    #[arg(long, value_name = "OS/ARCH[/VARIANT]")]
    pub platform: Option<Platform>,
    /// Layer-result cache directory (default: $XDG_CACHE_HOME/gpulint or ~/.cache/gpulint).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Neither read nor write the layer-result cache.
    #[arg(long)]
    pub no_cache: bool,
    /// Walk every layer even when the cache holds it, so each blob is re-hashed against its
    /// digest and diff_id (a cache hit does not re-read the blob); refreshes the cache.
    #[arg(long)]
    pub verify_blobs: bool,
    /// Allow plain HTTP to this registry host[:port] (loopback registries need no flag).
    #[arg(long = "insecure-registry", value_name = "HOST[:PORT]")]
    pub insecure_registry: Vec<String>,
    /// Registry credentials file (docker config.json or containers auth.json format); default:
    /// $REGISTRY_AUTH_FILE when set and not empty.
    // Not clap's `env`: it rejects a set-but-empty variable; auth.rs reads it instead.
    #[arg(long, value_name = "FILE")]
    pub authfile: Option<PathBuf>,
    /// Docker/podman API endpoint (unix:///path or tcp://host:port) instead of discovery.
    #[arg(long, value_name = "URL")]
    pub docker_host: Option<String>,
    /// Quiet: only the findings (no progress bars, notes, headings or "ok" lines); errors
    /// still go to stderr.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Best effort: report on what could be read when part of the image cannot be (a truncated
    /// or corrupt layer, a digest mismatch), with a GL000 warning per problem. Without it,
    /// incomplete input is an error (exit 2).
    #[arg(long)]
    pub allow_partial: bool,
    /// Give up on a registry or daemon image after this many seconds, all requests and
    /// retries together (default 600). Each small request (manifest, config, token) also
    /// has 30 s, and a connection that stays silent for 15 s is dropped.
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: Option<u64>,
}

impl SourceArgs {
    /// Progress bars on stderr when it is a terminal, not `--quiet`, and not in CI.
    pub fn progress(&self) -> Progress {
        Progress::auto(self.quiet)
    }

    pub fn source_options(&self, progress: &Progress) -> SourceOptions {
        SourceOptions {
            insecure_registries: self.insecure_registry.clone(),
            authfile: self.authfile.clone(),
            docker_host: self.docker_host.clone(),
            progress: progress.clone(),
            timeout: self.timeout.map(Duration::from_secs),
            ..SourceOptions::default()
        }
    }
}
