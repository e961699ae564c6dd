//! Command-line interface: raw arguments → validated options → library calls. Only `main`
//! turns outcomes into exit codes (see `exit`).

use crate::finding::FailOn;
use crate::report::{ColorChoice, Format};
use crate::selection::RuleSelection;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "gpulint",
    version,
    about = "Catch GPU container breakage before it ships",
    long_about = "gpulint reads container images, Dockerfiles and run configurations statically and \
tells whether they will run on a GPU host: CUDA runtime vs driver, GPU code (SASS/PTX) vs compute \
capability, baked-in driver libraries, conflicting CUDA stacks, missing GPU requests.\n\n\
Exit codes: 0 = nothing at or above --fail-on, 1 = findings at or above it, 2 = usage or input error."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Colour: auto = only on a terminal (NO_COLOR turns it off, FORCE_COLOR on).
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the CUDA/GPU payload of an image: toolkits, libraries, driver files, Python
    /// packages, and the SASS/PTX targets of every CUDA binary.
    Inventory(InventoryArgs),
    /// Check an image against GPU targets (or print its requirements when no target is given).
    Image(ImageArgs),
    /// Print a rule's explanation and fix.
    Explain(ExplainArgs),
    /// List every rule with its code, name and the severities it reports (default first).
    Rules(RulesArgs),
    /// Detect this host's driver and GPUs (a host profile with --format json), or diagnose it
    /// with --check.
    Host(HostCmdArgs),
    /// Lint Dockerfiles (default ./Dockerfile).
    Dockerfile(SpecCmd<DockerfileArgs>),
    /// Lint compose files (default: compose.yaml / docker-compose.yml lookup, as Docker does).
    Compose(SpecCmd<ComposeArgs>),
    /// Lint Kubernetes manifests (multi-document YAML, Helm-rendered output).
    K8s(SpecCmd<K8sArgs>),
    /// Lint `docker run` / `podman run` lines: `gpulint run -- docker run ...` or `--file script.sh`.
    Run(SpecCmd<RunArgs>),
    /// Find and lint every Dockerfile, compose file, manifest and script in a repository.
    Lint(SpecCmd<LintArgs>),
    /// List every GPU gpulint knows: compute capability, architecture, and the first CUDA
    /// release and driver that support it.
    Gpus(GpusArgs),
    /// Manage the layer-result cache.
    Cache(CacheArgs),
    /// Derive the GPU node pools of a cluster from `kubectl get nodes -o json` (GPU Feature
    /// Discovery labels), print them, and optionally pin them in a fleet file.
    Fleet(FleetArgs),
    /// Work on written reports: `report merge` combines the shares of a run over many images.
    Report(ReportArgs),
}

#[derive(Debug, Args)]
pub struct FleetArgs {
    /// `kubectl get nodes -o json` output, or - for stdin.
    #[arg(long, value_name = "FILE|-")]
    pub from_nodes: PathBuf,
    /// Write the pools as a fleet file (`--fleet FILE`) to pin them.
    #[arg(long, value_name = "FILE")]
    pub write_fleet: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write the report to this file instead of stdout.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output_file: Option<PathBuf>,
    /// Directory of matrix files overriding the built-in compatibility data.
    #[arg(long)]
    pub matrices: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct GpusArgs {
    #[arg(long, value_enum, default_value_t = InventoryFormat::Text)]
    pub format: InventoryFormat,
    /// Directory of matrix files overriding the built-in compatibility data.
    #[arg(long)]
    pub matrices: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct HostCmdArgs {
    #[command(flatten)]
    pub host: HostArgs,
    /// With --check: exit 1 when a check finds a problem of at least this severity (error,
    /// warning, info, or none; default: the config's, else error).
    #[arg(long, value_parser = parse_fail_on)]
    pub fail_on: Option<FailOn>,
    /// With --check: configuration file (default: .gpulint.toml from the working directory
    /// upward, then the user config): rule enable/disable, severity overrides, fail-on.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Write the report to this file instead of stdout.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output_file: Option<PathBuf>,
    /// Print only the findings.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// With --check: which rules run, over the config's selection.
    #[command(flatten)]
    pub rules: SelectionArgs,
    /// With --check: best effort when a file that is there cannot be read (no permission, a
    /// FIFO, device or directory in its place, past 16 MiB): its GL000 finding is a warning
    /// and the exit code follows --fail-on (the checks that need it say "could not check").
    /// Without it, such a run exits 2, the report still written. Absent files are evidence.
    #[arg(long)]
    pub allow_partial: bool,
}

/// A configuration linter command: its own arguments plus targets and output.
#[derive(Debug, Args)]
pub struct SpecCmd<A: clap::Args> {
    #[command(flatten)]
    pub args: A,
    #[command(flatten)]
    pub targets: TargetArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Also run the image checks on the images that docker run lines, compose services and
    /// Kubernetes workloads name (not images a build would produce), against the targets or
    /// a Kubernetes `nvidia.com/gpu.product` nodeSelector.
    #[arg(long)]
    pub scan_images: bool,
    /// How to open the images for --scan-images.
    #[command(flatten)]
    pub source: crate::source::SourceArgs,
    /// Print the settings FILE is checked with (the configuration that applies, fail-on,
    /// the rules enabled and at what severity) and exit.
    #[arg(long, value_name = "FILE")]
    pub show_settings: Option<PathBuf>,
    #[command(flatten)]
    pub fix: FixArgs,
}

/// `--fix` / `--diff` / `--unsafe-fixes`: apply the fixes that are edits of the linted files.
#[derive(Debug, Args, Default)]
pub struct FixArgs {
    /// Apply the safe fixes that are edits of the linted files (each file rewritten in
    /// place, atomically), then lint again and report what remains.
    #[arg(long)]
    pub fix: bool,
    /// Print the edits --fix would make as a unified diff instead of the report, and write
    /// nothing (the exit code is that of the files as they are).
    #[arg(long, conflicts_with = "fix")]
    pub diff: bool,
    /// With --fix or --diff: also the unsafe fixes (they may change more than the finding
    /// is about, e.g. another torch release).
    #[arg(long)]
    pub unsafe_fixes: bool,
}

#[derive(Debug, Args)]
pub struct CacheArgs {
    #[command(subcommand)]
    pub action: CacheAction,
}

#[derive(Debug, Subcommand)]
pub enum CacheAction {
    /// Remove every cached layer result.
    Clean {
        /// Cache directory (default: $XDG_CACHE_HOME/gpulint or ~/.cache/gpulint).
        #[arg(long)]
        cache_dir: Option<PathBuf>,
    },
}

#[derive(Debug, Args)]
pub struct ImageSourceArgs {
    /// The image: NAME[:TAG] (local daemon, then registry), docker-daemon:NAME[:TAG],
    /// docker://REGISTRY/REPO[:TAG|@DIGEST], docker-archive:PATH[:name:tag|:@N],
    /// oci:DIR[:tag], oci-archive:PATH[:tag], dir:PATH, or a bare path (auto-detected).
    pub image: String,
    #[command(flatten)]
    pub source: crate::source::SourceArgs,
}

#[derive(Debug, Args)]
pub struct InventoryArgs {
    #[command(flatten)]
    pub source: ImageSourceArgs,
    #[arg(long, value_enum, default_value_t = InventoryFormat::Text)]
    pub format: InventoryFormat,
    /// After the scan, print to stderr how many bytes of how many files were read, and how
    /// long it took (ELF files on disk are read by seeking to their headers).
    #[arg(long)]
    pub stats: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum InventoryFormat {
    Text,
    Json,
}

/// What to check against.
#[derive(Debug, Args, Default)]
pub struct TargetArgs {
    /// Target GPU: an nvidia-smi name ("NVIDIA H100 80GB HBM3"), a short name ("H100", "T4",
    /// "RTX 4090"), sm_90 or 9.0. Repeat for several GPUs.
    #[arg(long = "gpu")]
    pub gpus: Vec<String>,
    /// Target driver version, e.g. 535.104.05.
    #[arg(long)]
    pub driver: Option<String>,
    /// A host profile written by `gpulint host --format json`.
    #[arg(long, conflicts_with_all = ["gpus", "driver", "fleet"])]
    pub host: Option<PathBuf>,
    /// A fleet file: named node pools (driver + GPU models); one verdict per pool.
    #[arg(long, conflicts_with_all = ["gpus", "driver"])]
    pub fleet: Option<PathBuf>,
    /// The fleet read from the cluster: `kubectl get nodes -o json` output (a file, or - for
    /// stdin), pools from GPU Feature Discovery labels; Kubernetes workloads are judged
    /// against the pools they can be scheduled onto.
    #[arg(long, value_name = "FILE|-", conflicts_with_all = ["gpus", "driver", "fleet", "host"])]
    pub fleet_from_nodes: Option<PathBuf>,
    /// Directory of matrix files overriding the built-in compatibility data.
    #[arg(long)]
    pub matrices: Option<PathBuf>,
    /// Do not fall back to the local host as target when none is given.
    #[arg(long)]
    pub no_local_host: bool,
}

/// Report format, destination, threshold, configuration and rule selection: the same for
/// every checking command.
#[derive(Debug, Args)]
pub struct OutputArgs {
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write the report to this file instead of stdout.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output_file: Option<PathBuf>,
    /// Exit 1 when a finding has at least this severity: error, warning, info, or none, for
    /// every finding (default: each file's configuration's `fail-on`, else error).
    #[arg(long, value_parser = parse_fail_on)]
    pub fail_on: Option<FailOn>,
    /// Configuration file for every input (default: each file's nearest .gpulint.toml, in
    /// its directory or a parent, else the working directory's, then the user config).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Report only findings not recorded in this baseline file (written by
    /// --write-baseline); recorded findings that are gone are reported as GL198.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Record the findings of this run in FILE as the baseline and exit 0 (2 when some
    /// input could not be read: the file is then not written).
    #[arg(long, value_name = "FILE", conflicts_with = "baseline")]
    pub write_baseline: Option<PathBuf>,
    #[command(flatten)]
    pub rules: SelectionArgs,
}

/// `--select` / `--extend-select` / `--ignore`: the same on every checking command.
#[derive(Debug, Args, Default)]
pub struct SelectionArgs {
    /// Run only these rules: codes, prefixes or names (GL1, GL001, ALL, driver-in-image),
    /// comma-separated or repeated; replaces the config's `select`.
    #[arg(long, value_delimiter = ',', value_name = "RULES")]
    pub select: Option<Vec<String>>,
    /// Add rules to the selection (codes, prefixes or names).
    #[arg(long, value_delimiter = ',', value_name = "RULES")]
    pub extend_select: Vec<String>,
    /// Do not run these rules (codes, prefixes or names).
    #[arg(long, value_delimiter = ',', value_name = "RULES")]
    pub ignore: Vec<String>,
}

impl SelectionArgs {
    /// The command line's rule selection, names resolved to codes; an unknown entry is an
    /// error that echoes it as written.
    pub fn selection(&self) -> Result<RuleSelection, String> {
        let known = crate::rules::names();
        let resolve = |v: &[String]| -> Result<Vec<String>, String> {
            v.iter()
                .map(|s| crate::selection::resolve_selector(s, &known))
                .collect()
        };
        Ok(RuleSelection {
            select: self.select.as_deref().map(resolve).transpose()?,
            extend_select: resolve(&self.extend_select)?,
            ignore: resolve(&self.ignore)?,
        })
    }
}

impl OutputArgs {
    /// The command line's rule selection (see [`SelectionArgs::selection`]).
    pub fn selection(&self) -> Result<RuleSelection, String> {
        self.rules.selection()
    }
}

fn parse_fail_on(s: &str) -> Result<FailOn, String> {
    s.parse()
}

#[derive(Debug, Args)]
pub struct ImageArgs {
    /// The images: NAME[:TAG] (local daemon, then registry), docker-daemon:NAME[:TAG],
    /// docker://REGISTRY/REPO[:TAG|@DIGEST], docker-archive:PATH[:name:tag|:@N],
    /// oci:DIR[:tag], oci-archive:PATH[:tag], dir:PATH, or a bare path (auto-detected).
    /// Several (or --images-from, --shard): one report with a verdict per image.
    #[arg(required_unless_present = "images_from")]
    pub images: Vec<String>,
    #[command(flatten)]
    pub source: crate::source::SourceArgs,
    #[command(flatten)]
    pub many: ManyImagesArgs,
    #[command(flatten)]
    pub targets: TargetArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// A run over many images: where the list comes from, how many at once, which share.
#[derive(Debug, Args, Default)]
pub struct ManyImagesArgs {
    /// Read image references from FILE (`-`: stdin), one a line; blank lines and lines
    /// starting with `#` are skipped. Adds to the references on the command line.
    #[arg(long, value_name = "FILE|-")]
    pub images_from: Option<PathBuf>,
    /// Images scanned at once (default 2); each image's layers are read in parallel too. A
    /// layer that several images share is read once per run.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    pub jobs: Option<u16>,
    /// Check only share INDEX of COUNT of the image list (0-based; image i belongs to share
    /// i mod COUNT, counting the list without repeats), e.g. one Kubernetes Indexed Job pod.
    #[arg(long, value_name = "INDEX/COUNT", conflicts_with = "shard_count")]
    pub shard: Option<Shard>,
    /// As --shard, the index taken from JOB_COMPLETION_INDEX (set in the pods of a
    /// Kubernetes Indexed Job).
    #[arg(long, value_name = "COUNT", value_parser = clap::value_parser!(u32).range(1..))]
    pub shard_count: Option<u32>,
    /// After the run, print to stderr the images, the layers walked and taken from the cache
    /// or from another image of the run, the bytes read, and the time taken.
    #[arg(long)]
    pub stats: bool,
}

/// `--shard INDEX/COUNT`: one deterministic share of an image list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl std::str::FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || {
            format!("invalid shard {s:?}: expected INDEX/COUNT with 0 <= INDEX < COUNT, e.g. 0/4")
        };
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let index: u32 = i.trim().parse().map_err(|_| bad())?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl Shard {
    /// Whether the image at `position` of the list (without repeats) is in this share.
    pub fn holds(self, position: usize) -> bool {
        position as u64 % u64::from(self.count) == u64::from(self.index)
    }
}

/// `gpulint report …`: work on reports already written.
#[derive(Debug, Args)]
pub struct ReportArgs {
    #[command(subcommand)]
    pub action: ReportAction,
}

#[derive(Debug, Subcommand)]
pub enum ReportAction {
    /// Combine the JSON reports of a run over many images split in shares (--shard) into one:
    /// an image scanned twice (same digest) is reported once, images in a stable order.
    Merge(MergeArgs),
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// JSON reports written by `gpulint image --format json` over several images or a share.
    #[arg(required = true)]
    pub reports: Vec<PathBuf>,
    #[arg(long, value_enum, default_value_t = MergeFormat::Json)]
    pub format: MergeFormat,
    /// Write the merged report to this file instead of stdout.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output_file: Option<PathBuf>,
    /// Exit 1 when a finding has at least this severity (error, warning, info or none;
    /// default error).
    #[arg(long, value_parser = parse_fail_on)]
    pub fail_on: Option<FailOn>,
    /// An image that could not be read (completely) does not make the exit code 2.
    #[arg(long)]
    pub allow_partial: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MergeFormat {
    Json,
    Sarif,
    Text,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// A rule code (GL001) or name (no-kernel-image).
    pub rule: String,
}

#[derive(Debug, Args)]
pub struct RulesArgs {
    #[arg(long, value_enum, default_value_t = InventoryFormat::Text)]
    pub format: InventoryFormat,
}

#[derive(Debug, Clone, Default, clap::Args)]
pub struct DockerfileArgs {
    /// Dockerfiles to check (default: ./Dockerfile).
    pub paths: Vec<PathBuf>,
    /// Build argument, as for `docker build` (repeatable).
    #[arg(long = "build-arg", value_name = "KEY=VALUE")]
    pub build_args: Vec<String>,
    /// Check only the stages this target stage needs.
    #[arg(long)]
    pub target: Option<String>,
    /// Build context for files the Dockerfile reads (requirements); default: its directory.
    #[arg(long)]
    pub context: Option<PathBuf>,
}

#[derive(Debug, Clone, Default, clap::Args)]
pub struct ComposeArgs {
    /// Compose files, merged in order (default: compose.yaml / docker-compose.yml lookup).
    #[arg(short = 'f', long = "file")]
    pub files: Vec<PathBuf>,
    /// Positional compose files (same as -f).
    pub paths: Vec<PathBuf>,
}

#[derive(Debug, Clone, Default, clap::Args)]
pub struct K8sArgs {
    /// Manifests (multi-document YAML, Helm-rendered output, `-` for stdin).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
}

#[derive(Debug, Clone, Default, clap::Args)]
pub struct RunArgs {
    /// Shell scripts or Markdown files to search for docker/podman run lines; a directory
    /// stands for the scripts and Markdown files in it (found as `lint` finds files).
    #[arg(long = "file")]
    pub files: Vec<PathBuf>,
    /// A command line: `gpulint run -- docker run --gpus all IMAGE`.
    #[arg(last = true)]
    pub argv: Vec<String>,
}

#[derive(Debug, Clone, Default, clap::Args)]
pub struct LintArgs {
    /// Repository directories or single files (default: the current directory). A path that
    /// does not exist is an error for that path; the others are still linted (exit 2).
    pub paths: Vec<PathBuf>,
    /// Files already found inside named directories (and not excluded by their
    /// configuration's `ignore-paths`), each with the directory it was found in: linted as
    /// found, without the notes a named file gets.
    #[arg(skip)]
    pub found: Vec<(PathBuf, PathBuf)>,
    /// The directories `found` came from, walked whole: a config whose directory lies in one
    /// was checked entirely, so its `[[ignore]]` entries that matched nothing are stale.
    #[arg(skip)]
    pub walked: Vec<PathBuf>,
}

/// `gpulint host [--check] [--root DIR] [--python PATH]... [--format text|json|sarif]`
#[derive(Debug, Clone, Default, clap::Args)]
pub struct HostArgs {
    /// Run the GL2xx diagnosis checks instead of only printing the host profile.
    #[arg(long)]
    pub check: bool,
    /// Read a captured host tree instead of the live machine (layout: testdata/host/README.md).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Python interpreter(s) whose torch to check (default: python3/python on PATH).
    #[arg(long, value_name = "PATH")]
    pub python: Vec<String>,
    /// Directory of matrix files overriding the built-in compatibility data (GPU names,
    /// driver → CUDA, PTX ISA), as for `image`.
    #[arg(long, value_name = "DIR")]
    pub matrices: Option<PathBuf>,
    /// Output format: without --check text or json (the host profile); with --check any
    /// report format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

impl HostArgs {
    /// The reader these arguments select.
    pub fn reader(&self) -> anyhow::Result<Box<dyn crate::host::HostReader>> {
        Ok(match &self.root {
            Some(dir) => Box::new(crate::host::CapturedReader::new(dir)?),
            None => Box::new(crate::host::LiveReader::new()),
        })
    }
}
