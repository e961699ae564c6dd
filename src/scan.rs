//! The image pipeline: reference → source (local transport, daemon or registry) → layer walk
//! (each layer from the cache when seen before) → inventory.

use crate::cache::{scan_layers, LayerCache};
use crate::detect::Detectors;
use crate::inventory::{build, ImageMeta, Inventory};
use crate::progress::Progress;
use crate::source::live::{open_bare_name, SourceArgs, SourceOptions};
use crate::source::reference::{parse_reference, Transport};
use crate::source::{open_transport, Image, Platform, SourceError};
use crate::walk::{walk_layer, FileTree, LayerTree, ScanIssue, WalkOptions};

/// Bumped whenever what a layer walk records changes in a way detector versions don't show;
/// part of the cache key.
const ANALYZER_REVISION: u32 = 3;

/// How to open and walk an image.
#[derive(Default)]
pub struct ScanOptions {
    pub platform: Option<Platform>,
    pub source: SourceOptions,
    /// None: neither read nor write cached layer results.
    pub cache: Option<LayerCache>,
    pub progress: Progress,
    pub walk: WalkOptions,
    /// `--allow-partial`: an image read incompletely is reported (GL000 warnings), not refused.
    pub allow_partial: bool,
}

impl ScanOptions {
    /// Options from the command line's source flags.
    pub fn from_args(a: &SourceArgs) -> anyhow::Result<ScanOptions> {
        let progress = a.progress();
        Ok(ScanOptions {
            platform: a.platform.clone(),
            source: a.source_options(&progress),
            cache: LayerCache::from_flags(a.no_cache, a.cache_dir.as_deref())?,
            progress,
            walk: WalkOptions::default(),
            allow_partial: a.allow_partial,
        })
    }
}

/// The analyzer version that keys the layer cache: crate version, revision and every
/// detector's name and version.
pub fn analyzer_version() -> String {
    analyzer_version_of(&crate::detect::detectors())
}

fn analyzer_version_of(detectors: &Detectors) -> String {
    let mut s = format!("gpulint-{}-r{ANALYZER_REVISION}", env!("CARGO_PKG_VERSION"));
    for d in detectors.iter() {
        s.push_str(&format!("-{}{}", d.name(), d.version()));
    }
    s
}

/// Whether a reference that is not a path could be an image name (`ubuntu`,
/// `pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime`, `localhost:5000/x@sha256:…`).
fn looks_like_image_name(r: &str) -> bool {
    let archive_like = [".tar", ".tar.gz", ".tgz", ".tar.zst"]
        .iter()
        .any(|e| r.ends_with(e));
    !archive_like && crate::vocab::Reference::parse(r).is_ok()
}

/// Open an image from any transport. Bare names that are not paths go to the local daemon
/// first, then the registry, like Trivy.
pub fn open(reference: &str, opts: &ScanOptions) -> anyhow::Result<Image> {
    let platform = opts.platform.as_ref();
    match parse_reference(reference) {
        Ok(Transport::DockerDaemon { reference }) => {
            crate::source::daemon::open_daemon(&reference, platform, &opts.source)
        }
        Ok(Transport::Registry { reference }) => {
            crate::source::registry::open_registry(&reference, platform, &opts.source)
        }
        Ok(Transport::Auto { path }) if !path.exists() && looks_like_image_name(reference) => {
            open_bare_name(reference, platform, &opts.source)
        }
        Err(SourceError::UnknownTransport { foreign: false, .. })
            if looks_like_image_name(reference) =>
        {
            open_bare_name(reference, platform, &opts.source)
        }
        Ok(t) => Ok(open_transport(t, platform)?),
        Err(e) => Err(e.into()),
    }
}

/// Every layer's tree (in layer order) and the squashed filesystem.
#[derive(Debug, Clone, Default)]
pub struct WalkResult {
    pub layers: Vec<LayerTree>,
    pub tree: FileTree,
    /// All layers' errors, in layer order.
    pub errors: Vec<ScanIssue>,
    /// Some layer could not be read whole, or some entry or file could not be used.
    pub partial: bool,
}

/// Walks every layer of an opened image with `detectors`, in layer order: each layer from
/// the cache when it holds the layer, the others in parallel. The one orchestration the CLI,
/// the tests and the benchmarks all run.
fn walk_layers(image: &Image, detectors: &Detectors, opts: &ScanOptions) -> Vec<LayerTree> {
    let (layers, _stats) = scan_layers(
        image,
        opts.cache.as_ref(),
        &analyzer_version_of(detectors),
        opts.walk.jobs(),
        &opts.progress,
        |layer, i| walk_layer(layer, i, detectors, &opts.walk),
    );
    opts.progress.finish();
    layers
}

fn issues_of(layers: &[LayerTree]) -> (Vec<ScanIssue>, bool) {
    let errors: Vec<ScanIssue> = layers
        .iter()
        .flat_map(|l| l.errors.iter().cloned())
        .collect();
    let partial = layers.iter().any(|l| l.partial) || !errors.is_empty();
    (errors, partial)
}

/// [`scan`]'s walk, keeping every layer's tree beside the squashed one (for tests and
/// benchmarks that look at layers).
pub fn walk_image(image: &Image, detectors: &Detectors, opts: &ScanOptions) -> WalkResult {
    let layers = walk_layers(image, detectors, opts);
    let (errors, partial) = issues_of(&layers);
    let tree = FileTree::squash_refs(&layers);
    WalkResult {
        layers,
        tree,
        errors,
        partial,
    }
}

/// Open, walk and inventory an image. Errors are unusable input (exit 2); problems inside
/// the image are recorded in `Inventory::errors` and the result marked partial.
pub fn scan(reference: &str, opts: &ScanOptions) -> anyhow::Result<Inventory> {
    let image = open(reference, opts)?;
    let layers = walk_layers(&image, &crate::detect::detectors(), opts);
    let (errors, partial) = issues_of(&layers);
    let tree = FileTree::squash(layers);
    let mut inv = build(&ImageMeta::from(&image), &tree, errors);
    inv.partial |= partial;
    Ok(inv)
}

/// Scan with default options (no cache, no progress): for tests and library users.
pub fn scan_image(reference: &str, platform: Option<&Platform>) -> anyhow::Result<Inventory> {
    scan(
        reference,
        &ScanOptions {
            platform: platform.cloned(),
            ..Default::default()
        },
    )
}

#[cfg(test)]
mod tests {
    use super::looks_like_image_name;

    #[test]
    fn image_names_vs_unknown_transports() {
        for ok in [
            "ubuntu",
            "pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime",
            "localhost:5000/x@sha256:0123456789abcdef0123456789abcdef",
            "127.0.0.1:5000/live/oci:v1",
            "nvcr.io/nvidia/pytorch:24.01-py3",
        ] {
            assert!(looks_like_image_name(ok), "{ok}");
        }
        for bad in [
            "foo:/x",
            "bogus-transport:/x/y",
            "bogus:a/b",
            "a/b:c/d",
            "x.tar",
            ":x",
        ] {
            assert!(!looks_like_image_name(bad), "{bad}");
        }
    }
}
