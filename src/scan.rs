//! The image pipeline: reference → source → layer walk → inventory.

use crate::inventory::Inventory;
use crate::inventory::{build, ImageMeta};
use crate::source::{open_image, Platform};
use crate::walk::{walk_image, WalkOptions};

/// Open, walk and inventory an image. Errors are unusable input (exit 2); problems inside
/// the image are recorded in `Inventory::errors` and the result marked partial.
pub fn scan_image(reference: &str, platform: Option<&Platform>) -> anyhow::Result<Inventory> {
    let image = open_image(reference, platform)?;
    let detectors = crate::detect::detectors();
    let walked = walk_image(&image, &detectors, &WalkOptions::default());
    let mut inv = build(&ImageMeta::from(&image), &walked.tree, walked.errors);
    inv.partial |= walked.partial;
    Ok(inv)
}
