//! The image pipeline: reference → source (local transport, daemon or registry) → layer walk
//! (each layer from the cache when seen before) → inventory.

use crate::cache::{scan_layers_shared, LayerCache, SharedLayers};
use crate::detect::Detectors;
use crate::inventory::{build, ImageMeta, Inventory};
use crate::progress::Progress;
use crate::source::{Image, Platform, SourceArgs, SourceOptions};
use crate::walk::{walk_layer, FileTree, LayerTree, ScanIssue, WalkOptions};

/// Bumped whenever what a layer walk records changes in a way detector versions don't show;
/// part of the cache key.
const ANALYZER_REVISION: u32 = 4;

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
    /// The layers of a run over many images (`gpulint image A B …`): each read once per run.
    pub shared: Option<std::sync::Arc<SharedLayers>>,
}

impl ScanOptions {
    /// Options from the command line's source flags.
    pub fn from_args(a: &SourceArgs) -> anyhow::Result<ScanOptions> {
        let progress = a.progress();
        Ok(ScanOptions {
            platform: a.platform.clone(),
            source: a.source_options(&progress),
            cache: LayerCache::from_flags(a.no_cache, a.cache_dir.as_deref())?
                .map(|c| c.verifying_blobs(a.verify_blobs)),
            progress,
            walk: WalkOptions::default(),
            allow_partial: a.allow_partial,
            shared: None,
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

/// Open an image from any transport (the source's one dispatcher, with these options).
pub fn open(reference: &str, opts: &ScanOptions) -> anyhow::Result<Image> {
    crate::source::open_image(reference, opts.platform.as_ref(), &opts.source)
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
    let walk = opts.walk.for_one_image();
    let (layers, _stats) = scan_layers_shared(
        image,
        opts.cache.as_ref(),
        opts.shared.as_deref(),
        &analyzer_version_of(detectors),
        opts.walk.jobs(),
        &opts.progress,
        |layer, i| walk_layer(layer, i, detectors, &walk),
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
    let (mut errors, mut partial) = issues_of(&layers);
    let tree = FileTree::squash_refs_named(&layers, |i| image.layers[i].display_name(i));
    partial |= !tree.errors.is_empty();
    errors.extend(tree.errors.iter().cloned());
    WalkResult {
        layers,
        tree,
        errors,
        partial,
    }
}

/// Open, walk and inventory an image. Errors are unusable input (exit 2); problems inside
/// the image are recorded in `Inventory::errors` and the result marked partial. An image or
/// root read whole with no file in it at all (`dir:` of an empty directory) is unusable input
/// too: judging it would say "no findings" about nothing.
pub fn scan(reference: &str, opts: &ScanOptions) -> anyhow::Result<Inventory> {
    let image = open(reference, opts)?;
    let layers = walk_layers(&image, &crate::detect::detectors(), opts);
    let (mut errors, mut partial) = issues_of(&layers);
    let mut tree = FileTree::squash_named(layers, |i| image.layers[i].display_name(i));
    // Entries the runtime's unpack fails on leave the image incomplete, like a bad layer.
    partial |= !tree.errors.is_empty();
    errors.append(&mut tree.errors);
    let holds_a_file = tree
        .nodes
        .values()
        .any(|n| !matches!(n.kind, crate::walk::NodeKind::Dir { .. }));
    if !partial && !holds_a_file {
        anyhow::bail!(
            "{reference}: no file in it at all (an empty directory or layers without files): \
             not an image or root filesystem to judge"
        );
    }
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
