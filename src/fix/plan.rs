//! What a run-configuration fix will edit, as the rule that knows the container sees it: the
//! places (line and column from the parsers) and the change. The rule has the parsed spec but
//! not the text; [`crate::fix::runconfig_edit::attach`] has the text and turns a plan into
//! exact [`super::TextEdit`]s, or into none when the text is not what the plan expects (then
//! the fix stays advice). Kept apart from the editing code so that [`crate::finding`] can
//! carry a plan without depending on the parsers.

use super::Applicability;

/// A place in the linted file: 1-based line and 1-based byte column, as the parsers give it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct At {
    pub line: u32,
    pub col: u32,
}

/// The YAML mapping an addition goes into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum YamlMap {
    /// The block value of the key `key` at this place (a compose service's key).
    ValueOf { at: At, key: String },
    /// The Kubernetes container whose `name: <name>` entry is at this place (the parsers find
    /// it by text, so the name is checked: `- name: app` must not be `- name: app-proxy`).
    Container { at: At, name: String },
    /// The pod spec holding that container (the mapping with its `containers:` list).
    PodOf { at: At, name: String },
}

/// What an addition puts at the end of the path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum YamlLeaf {
    /// Entries of the innermost mapping (`shm_size: 8gb`); each line relative to its indent.
    Entries(Vec<String>),
    /// An item of the sequence the last key of the path names; its lines relative to the
    /// item's content (the first line gets the `- `).
    Item(Vec<String>),
}

/// One planned change of the linted file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlannedEdit {
    /// `docker run` (the command whose first word is at `command`): `flags` added after its
    /// `run` word.
    RunFlags { command: At, flags: String },
    /// `docker run`: its `--runtime=nvidia` / `--runtime nvidia` option replaced by `with`, or
    /// dropped when `with` is empty.
    RunRuntime { command: At, with: String },
    /// `nvidia-docker run`: the wrapper becomes `docker`, and `flags` (when not empty) follow
    /// `run`.
    NvidiaDocker { command: At, flags: String },
    /// YAML: `path` (keys, created where missing) under `map`, then `leaf`.
    YamlAdd {
        map: YamlMap,
        path: Vec<String>,
        leaf: YamlLeaf,
    },
    /// YAML: the line holding only `key: value` at this place is deleted.
    YamlDrop { at: At, key: String, value: String },
    /// Compose: the `runtime: nvidia` line at `runtime` of the service keyed at `service`
    /// gives way to a device reservation with `reservation` as its item: the line is replaced
    /// by the `deploy:` block, or dropped and the item added to the service's own `deploy:`.
    ComposeRuntimeToReservation {
        runtime: At,
        service: YamlMap,
        reservation: Vec<String>,
    },
    /// Kubernetes: the `nvidia.com/gpu: N` request at this place gets its limit (the same N
    /// under the container's `resources.limits`).
    K8sLimitFromRequest { request: At },
}

/// The edits a rule plans for one finding, and how safe they are once made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub edits: Vec<PlannedEdit>,
    pub applicability: Applicability,
}

impl Plan {
    pub fn new(applicability: Applicability, edits: Vec<PlannedEdit>) -> Plan {
        Plan {
            edits,
            applicability,
        }
    }

    /// One plan for two findings merged into one: both sets of edits, as safe as the less
    /// safe; none when either could not be planned (the merged finding would not go away).
    /// An edit planned twice is made once (the editor drops repeated edits).
    pub fn merged(a: Option<Plan>, b: Option<&Plan>) -> Option<Plan> {
        let (mut a, b) = (a?, b?);
        a.edits.extend(b.edits.iter().cloned());
        a.applicability = least_safe(a.applicability, b.applicability);
        Some(a)
    }
}

/// The plan of a compose GPU reservation (`item`: the device entry) under the service keyed
/// at `service` (`name`).
pub fn compose_reservation(service: At, name: &str, item: &[&str]) -> PlannedEdit {
    PlannedEdit::YamlAdd {
        map: YamlMap::ValueOf {
            at: service,
            key: name.to_string(),
        },
        path: ["deploy", "resources", "reservations", "devices"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        leaf: YamlLeaf::Item(item.iter().map(|s| s.to_string()).collect()),
    }
}

/// A plan of one edit.
pub fn one(applicability: Applicability, e: PlannedEdit) -> Option<Plan> {
    Some(Plan::new(applicability, vec![e]))
}

/// The less safe of two applicabilities (safe < unsafe < manual).
pub fn least_safe(a: Applicability, b: Applicability) -> Applicability {
    let rank = |x: Applicability| match x {
        Applicability::Safe => 0,
        Applicability::Unsafe => 1,
        Applicability::Manual => 2,
    };
    if rank(a) >= rank(b) {
        a
    } else {
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_plans_keep_every_edit_and_the_lesser_safety() {
        let at = |line| At { line, col: 1 };
        let drop = |line| PlannedEdit::YamlDrop {
            at: at(line),
            key: "runtime".into(),
            value: "nvidia".into(),
        };
        let a = Plan::new(Applicability::Safe, vec![drop(3)]);
        let b = Plan::new(Applicability::Unsafe, vec![drop(3), drop(7)]);
        let m = Plan::merged(Some(a.clone()), Some(&b)).unwrap();
        assert_eq!(m.edits, vec![drop(3), drop(3), drop(7)]);
        assert_eq!(m.applicability, Applicability::Unsafe);
        // A member that could not be planned: the merged finding cannot be fixed whole.
        assert_eq!(Plan::merged(Some(a.clone()), None), None);
        assert_eq!(Plan::merged(None, Some(&a)), None);
        assert_eq!(
            least_safe(Applicability::Manual, Applicability::Safe),
            Applicability::Manual
        );
    }
}
