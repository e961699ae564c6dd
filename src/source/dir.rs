//! `dir:PATH`: a plain root filesystem (an unpacked image, a virtualenv, `/` of a host) as
//! one [`LayerContent::Dir`] layer. There is no config: env and entrypoint stay empty.

use super::{display_path, Image, ImageConfigFacts, Layer, LayerContent, Platform, SourceError};
use std::path::Path;

pub fn open_dir(path: &Path, platform: Option<&Platform>) -> Result<Image, SourceError> {
    let meta = std::fs::metadata(path).map_err(|e| SourceError::io(path, e))?;
    if !meta.is_dir() {
        return Err(SourceError::NotAnImage {
            path: path.to_path_buf(),
            reason: "dir: expects a directory".into(),
        });
    }
    Ok(Image {
        reference: format!("dir:{}", display_path(path)),
        platform: platform.cloned().unwrap_or_else(Platform::host),
        digest: None,
        config: ImageConfigFacts::default(),
        layers: vec![Layer {
            digest: None,
            diff_id: None,
            media_type: None,
            size: None,
            content: LayerContent::Dir(path.to_path_buf()),
        }],
    })
}
