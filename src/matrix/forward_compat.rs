//! Forward compatibility (`forward_compat.toml`): whether a cuda-compat package lets a driver
//! run a CUDA release, by the table's cells and, where no cell says, the branch's type.

use super::rows::{BranchRow, BranchType, CompatPackageRow};
use super::{ForwardCompat, Matrix};
use crate::version::{CudaVersion, DriverVersion};

impl Matrix {
    /// Whether a forward compatibility package lets `driver` run applications built with
    /// `cuda`. This says nothing about the GPU: forward compatibility only works on the GPUs
    /// [`GpuModel::forward_compat_eligible`] accepts.
    ///
    /// Order: a driver that already meets `cuda`'s minimum (or is in the same major with minor
    /// version compatibility) needs no package → `NotNeeded`. Otherwise NVIDIA's table is read
    /// for `cuda-compat-<major>-<minor>`; a driver branch the table does not list is end of
    /// life or a New Feature Branch → `Unsupported`.
    pub fn forward_compat(&self, driver: &DriverVersion, cuda: &CudaVersion) -> ForwardCompat {
        if let Some(req) = self.cuda_min_driver(cuda) {
            if req.linux.as_ref().is_some_and(|d| d <= driver) {
                return ForwardCompat::NotNeeded;
            }
        }
        if let Some(mvc) = self
            .minor_compat
            .iter()
            .find(|r| r.cuda_major == cuda.major)
        {
            let below_max = mvc
                .max_branch_exclusive
                .is_none_or(|max| driver.branch() < max);
            if mvc.linux <= *driver && below_max {
                return ForwardCompat::NotNeeded;
            }
        }
        if *cuda < self.fc_rules.introduced_in {
            return ForwardCompat::Unsupported {
                reason: format!(
                    "forward compatibility starts with CUDA {}",
                    self.fc_rules.introduced_in
                ),
            };
        }
        let branch = driver.branch();
        let pkg = self.fc_packages.iter().find(|p| p.cuda.same_release(cuda));
        let name = format!("cuda-compat-{}-{}", cuda.major, cuda.minor);
        let cell = |cells: fn(&CompatPackageRow) -> &Vec<u32>| {
            pkg.is_some_and(|p| cells(p).contains(&branch))
        };
        // A cell of the package's row decides first; a branch without one is judged by its
        // type: New Feature Branches are never forward compatibility targets.
        if cell(|p| &p.compatible) {
            return ForwardCompat::Supported;
        } else if cell(|p| &p.not_applicable) {
            return ForwardCompat::NotNeeded;
        } else if cell(|p| &p.incompatible) {
            return ForwardCompat::Unsupported {
                reason: format!(
                    "NVIDIA lists {name} as not compatible with driver branch R{branch}"
                ),
            };
        }
        if let Some(b) = self
            .branch_type(branch)
            .filter(|b| b.designation == BranchType::NewFeature)
        {
            if !self.fc_rules.new_feature_branches_supported {
                return ForwardCompat::Unsupported {
                    reason: format!(
                        "driver branch R{branch} is {}{}, and New Feature Branches are not forward compatibility targets",
                        b.designation,
                        b.eol.as_deref().map(|e| format!(" (end of life {e})")).unwrap_or_default()
                    ),
                };
            }
        }
        if pkg.is_none() {
            return ForwardCompat::Unknown;
        }
        if !self.fc_rules.unlisted_branches_supported {
            // `unlisted`: the supported-drivers page of the package's time omits the branch.
            let dropped = pkg.is_some_and(|p| p.unlisted.contains(&branch));
            let why = match self.branch_type(branch) {
                Some(b) if dropped => format!(
                    "{}{}, not on NVIDIA's supported-drivers list when {name} shipped",
                    b.designation,
                    b.eol
                        .as_deref()
                        .map(|e| format!(", end of life {e}"))
                        .unwrap_or_default()
                ),
                Some(b) => format!(
                    "{}{}",
                    b.designation,
                    b.eol
                        .as_deref()
                        .map(|e| format!(", end of life {e}"))
                        .unwrap_or_default()
                ),
                None => "end of life or a New Feature Branch".to_string(),
            };
            ForwardCompat::Unlisted {
                reason: format!(
                    "driver branch R{branch} is not a forward compatibility target ({why})"
                ),
            }
        } else {
            ForwardCompat::Unknown
        }
    }

    /// NVIDIA's designation of a driver branch (R620 → Long Term Support, end of life
    /// September 2029); `None` for a branch no page read designates.
    pub fn branch_type(&self, branch: u32) -> Option<&BranchRow> {
        self.fc_branches.iter().find(|b| b.branch == branch)
    }
}
