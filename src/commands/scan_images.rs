//! `--scan-images`: the image checks (GL0xx) on the images run configurations name.
//!
//! Only images that exist independently of the files read: `docker run` / compose / k8s
//! images. A Dockerfile's final stage is what a build would produce, and a compose service
//! with `build:` names its build result, so neither is scanned. Each reference is scanned
//! once per command; a reference that cannot be opened or read becomes a GL000 error naming it
//! (the verdict is incomplete: fail closed), a warning with `--allow-partial`.
//!
//! Targets: the command's (`--gpu/--driver/--host/--fleet`, config); without them, a
//! Kubernetes `nodeSelector` `nvidia.com/gpu.product` resolved through the GPU matrix. With
//! neither, only the target-independent image checks run.

use crate::finding::{Finding, Location};
use crate::gpu_target::Target;
use crate::inventory::Inventory;
use crate::rules::image::gl000_unreadable_input as gl000;
use crate::runconfig::loc;
use crate::runconfig::runspec::RunSpec;
use crate::scan::ScanOptions;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// How to open images, and what was scanned already (reference → inventory or error).
pub struct ImageScan {
    pub options: ScanOptions,
    done: Mutex<BTreeMap<String, Result<Arc<Inventory>, String>>>,
}

impl ImageScan {
    pub fn new(mut options: ScanOptions) -> ImageScan {
        // The images a set of configurations names often share base layers: each read once.
        options.shared = Some(Arc::new(crate::cache::SharedLayers::new()));
        ImageScan {
            options,
            done: Mutex::new(BTreeMap::new()),
        }
    }

    fn allow_partial(&self) -> bool {
        self.options.allow_partial
    }

    fn scan(&self, reference: &str) -> Result<Arc<Inventory>, String> {
        let mut done = self.done.lock().unwrap_or_else(|e| e.into_inner());
        done.entry(reference.to_string())
            .or_insert_with(|| {
                crate::scan::scan(reference, &self.options)
                    .map(Arc::new)
                    .map_err(|e| format!("{e:#}"))
            })
            .clone()
    }
}

/// The target a `nvidia.com/gpu.product` label names (`NVIDIA-A100-SXM4-80GB`): that GPU,
/// driver unknown. `None` when the GPU matrix does not know the model.
pub(crate) fn product_target(matrix: &crate::matrix::Matrix, product: &str) -> Option<Target> {
    let model = matrix.gpu(product)?;
    let mut ts = crate::gpu_target::cli::targets_from_flags(
        matrix,
        std::slice::from_ref(&model.name),
        None,
        None,
    )
    .ok()?;
    let mut t = ts.pop()?;
    t.name = format!("{} (nodeSelector nvidia.com/gpu.product={product})", t.name);
    Some(t)
}

/// Whether `image` is a reference we can open: no unresolved `$VAR`, not empty.
fn scannable(image: &str) -> bool {
    !image.trim().is_empty() && !image.contains('$')
}

/// Image findings for every scannable image in `specs` (empty unless `--scan-images`).
pub(crate) fn findings(
    specs: &[RunSpec],
    scan: Option<&ImageScan>,
    command_targets: &[Target],
    facts: &crate::matrix::Facts,
) -> Vec<Finding> {
    let Some(scan) = scan else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for rs in specs {
        let Some(image) = rs.image_text().map(str::trim) else {
            continue;
        };
        if rs.build || !scannable(image) {
            continue;
        }
        let at = loc(&rs.file, rs.image_pos);
        let inv = match scan.scan(image) {
            Ok(inv) => inv,
            Err(e) => {
                out.push(gl000::named_image_unreadable(
                    image,
                    &e,
                    at,
                    scan.allow_partial(),
                ));
                continue;
            }
        };
        let targets: Vec<Target> = if !command_targets.is_empty() {
            command_targets.to_vec()
        } else {
            rs.gpu_product
                .as_deref()
                .and_then(|p| product_target(facts.matrix(), p))
                .into_iter()
                .collect()
        };
        for e in &inv.errors {
            out.push(gl000::named_image_partly_unreadable(
                image,
                e,
                &at,
                scan.allow_partial(),
            ));
        }
        for f in crate::rules::check_image(&inv, facts, &targets) {
            out.push(relocate(f, image, &at));
        }
    }
    out
}

/// An image finding placed at the config line that names the image; the path inside the
/// image stays in the location (and the message), the layer too.
fn relocate(mut f: Finding, image: &str, at: &Location) -> Finding {
    let inner = f.location.take().unwrap_or_default();
    let what = match &inner.path {
        Some(p) if !f.message.contains(p.as_str()) => {
            format!("image {image}, /{}", p.trim_start_matches('/'))
        }
        _ => format!("image {image}"),
    };
    f.message = format!("{what}: {}", f.message);
    f.location = Some(Location {
        layer: inner.layer,
        path: inner.path,
        ..at.clone()
    });
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gfd_product_labels_resolve() {
        let m = crate::matrix::Matrix::embedded().unwrap();
        let t = product_target(&m, "NVIDIA-A100-SXM4-80GB").unwrap();
        assert_eq!(t.capabilities(), vec!["8.0".parse().unwrap()]);
        assert!(t.driver.is_none());
        let t = product_target(&m, "Tesla-T4").unwrap();
        assert_eq!(t.capabilities(), vec!["7.5".parse().unwrap()]);
        assert!(product_target(&m, "Some-Unknown-Board").is_none());
    }

    #[test]
    fn unresolved_references_are_skipped() {
        assert!(!scannable("${IMAGE}"));
        assert!(!scannable(""));
        assert!(scannable("oci:/tmp/x:latest"));
    }
}
