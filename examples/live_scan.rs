//! Scan an image from a live source with the layer cache, listing layers with the stand-in
//! walker (until the real `walk_layer` lands), and print timings. Used by
//! `ci/bench-registry.sh` and for trying the live sources by hand:
//!
//!     cargo run --example live_scan -- docker://127.0.0.1:5000/a/b:v1
//!     cargo run --example live_scan -- --docker-host unix:///tmp/s/docker.sock docker-daemon:x:1
//!
//! Exit 2 on any source error or a layer that could not be read.

#[path = "../tests/support/listing.rs"]
mod listing;

use clap::Parser;
use gpulint::cache::scan_layers;
use gpulint::source::{open_bare_name, open_daemon, open_registry, SourceArgs};
use std::time::Instant;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    source: SourceArgs,
    /// Layers walked (and downloaded) at once.
    #[arg(long, default_value_t = 4)]
    jobs: usize,
    /// docker-daemon:NAME, docker://REF, or a bare NAME (daemon, then registry).
    reference: String,
}

fn main() {
    let cli = Cli::parse();
    std::process::exit(match run(&cli) {
        Ok(()) => gpulint::exit::OK,
        Err(e) => {
            eprintln!("error: {e:#}");
            gpulint::exit::USAGE_OR_INPUT
        }
    });
}

fn run(cli: &Cli) -> anyhow::Result<()> {
    let start = Instant::now();
    let progress = cli.source.progress();
    let opts = cli.source.source_options(&progress);
    let platform = cli.source.platform.as_ref();
    let r = cli.reference.as_str();
    let image = if let Some(n) = r.strip_prefix("docker-daemon:") {
        open_daemon(n, platform, &opts)?
    } else if r.starts_with("docker://") {
        open_registry(r, platform, &opts)?
    } else {
        open_bare_name(r, platform, &opts)?
    };
    let opened = start.elapsed();
    let cache = cli.source.cache()?;
    let analyzer = concat!("live_scan/", env!("CARGO_PKG_VERSION"));
    let (trees, stats) = scan_layers(
        &image,
        cache.as_ref(),
        analyzer,
        cli.jobs,
        &progress,
        listing::list_layer,
    );
    progress.finish();
    let errors: Vec<&String> = trees.iter().flat_map(|t| &t.errors).collect();
    let files = gpulint::walk::FileTree::squash(trees.clone())
        .files()
        .count();
    println!(
        "{} {} layers={} cache_hits={} walked={} files={} open_s={:.3} total_s={:.3}",
        image.reference,
        image.digest.as_deref().unwrap_or("-"),
        image.layers.len(),
        stats.cache_hits,
        stats.walked,
        files,
        opened.as_secs_f64(),
        start.elapsed().as_secs_f64()
    );
    if !errors.is_empty() {
        anyhow::bail!(
            "{} layer error(s): {}",
            errors.len(),
            errors
                .iter()
                .map(|e| e.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    Ok(())
}
