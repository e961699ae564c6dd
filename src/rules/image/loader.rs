//! The image side of the one loader model ([`crate::loader`]): the inventory as a read-only
//! filesystem (directory links and the CUDA libraries it found), and a binary's search order
//! from its DT_RPATH / DT_RUNPATH, the image's LD_LIBRARY_PATH and ld.so.conf.

use crate::inventory::{Binary, CudaLibrary, Inventory};
use crate::loader::{self, LdSoConf, LoadRequest, LoaderFs, SearchDir};

/// The inventory seen by the loader: symlinked directories, and the CUDA libraries (with
/// their link aliases) as the only files — the only ones the image rules resolve.
pub struct InventoryFs<'a>(pub &'a Inventory);

impl LoaderFs for InventoryFs<'_> {
    fn read_link(&self, path: &str) -> Option<String> {
        let real = self.0.loader.dir_links.get(path.trim_start_matches('/'))?;
        Some(format!("/{real}"))
    }
    fn is_file(&self, path: &str) -> bool {
        self.library(path).is_some()
    }
    fn list_dir(&self, _dir: &str) -> Vec<String> {
        Vec::new()
    }
    fn ld_conf(&self, _path: &str) -> Option<LdSoConf> {
        // Already expanded into `inventory.loader.ld_so_conf` when the inventory was built.
        None
    }
}

impl<'a> InventoryFs<'a> {
    /// The CUDA library at `path` (its real path or one of its link aliases).
    pub fn library(&self, path: &str) -> Option<&'a CudaLibrary> {
        let p = path.trim_start_matches('/');
        self.0
            .cuda_libraries
            .iter()
            .find(|l| l.path.as_str() == p || l.aliases.iter().any(|a| a.as_str() == p))
    }
}

/// The loader's search order for `b` in an image with this inventory.
pub fn search_order(inv: &Inventory, b: &Binary) -> Vec<SearchDir> {
    let origin = b.path.parent().unwrap_or_default().to_string();
    loader::search_order(&LoadRequest {
        origin: &origin,
        rpath: &b.rpath,
        runpath: &b.runpath,
        ld_library_path: inv.image.env.get("LD_LIBRARY_PATH").map(String::as_str),
        ld_so_conf: &inv.loader.ld_so_conf,
        machine: &b.machine,
    })
}

/// The CUDA library a NEEDED name resolves to, searching `dirs` in order.
pub fn resolve<'a>(
    inv: &'a Inventory,
    dirs: &[SearchDir],
    needed: &str,
) -> Option<(&'a CudaLibrary, SearchDir)> {
    let fs = InventoryFs(inv);
    let found = loader::find(&fs, dirs, needed)?;
    Some((fs.library(&found.real)?, found.dir))
}
