//! Where a Kubernetes workload can be scheduled: its `nodeSelector`, required node affinity,
//! tolerations and NVIDIA resource requests, judged against a node as the scheduler's filters
//! judge them (NodeAffinity, TaintToleration, NodeResourcesFit for extended resources).
//! Preferred affinity and `PreferNoSchedule` taints only rank nodes, so they are ignored.
//! Capacity is what the node offers in all (allocatable), not what is free now.

use super::nodes::{Node, Taint};
use serde::Serialize;
use std::collections::BTreeMap;

/// A pod's scheduling constraints.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Scheduling {
    pub node_selector: Vec<(String, String)>,
    /// `requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms`: any term, each of
    /// whose requirements all hold. Empty = no required affinity.
    pub required_terms: Vec<Vec<Requirement>>,
    pub tolerations: Vec<Toleration>,
    /// NVIDIA extended resources the pod needs on one node: the larger of its containers'
    /// sum and its largest init container.
    pub resources: BTreeMap<String, u64>,
    /// `spec.nodeName`: the node a (running) pod is bound to.
    pub node_name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Requirement {
    pub key: String,
    pub operator: Operator,
    pub values: Vec<String>,
    /// A `matchFields` requirement: on the node's `metadata.name`, not a label.
    pub field: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Operator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
    Gt,
    Lt,
}

impl Operator {
    pub fn parse(s: &str) -> Option<Operator> {
        Some(match s {
            "In" => Operator::In,
            "NotIn" => Operator::NotIn,
            "Exists" => Operator::Exists,
            "DoesNotExist" => Operator::DoesNotExist,
            "Gt" => Operator::Gt,
            "Lt" => Operator::Lt,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Toleration {
    /// Empty with `Exists`: every taint.
    pub key: String,
    /// `Exists` (any value) rather than `Equal`.
    pub exists: bool,
    pub value: String,
    /// Empty: every effect.
    pub effect: String,
}

impl Toleration {
    fn tolerates(&self, t: &Taint) -> bool {
        if !self.effect.is_empty() && self.effect != t.effect {
            return false;
        }
        if self.key.is_empty() {
            return self.exists;
        }
        self.key == t.key && (self.exists || self.value == t.value)
    }
}

impl Requirement {
    fn holds(&self, node: &Node) -> bool {
        let value = if self.field {
            (self.key == "metadata.name").then_some(node.name.as_str())
        } else {
            node.labels.get(&self.key).map(String::as_str)
        };
        let int = |s: &str| s.trim().parse::<i64>().ok();
        match self.operator {
            Operator::In => value.is_some_and(|v| self.values.iter().any(|x| x == v)),
            Operator::NotIn => value.is_none_or(|v| !self.values.iter().any(|x| x == v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            // One integer value; a label that is not an integer does not match.
            Operator::Gt | Operator::Lt => {
                let (Some(v), [bound]) = (value.and_then(int), self.values.as_slice()) else {
                    return false;
                };
                let Some(bound) = int(bound) else {
                    return false;
                };
                if self.operator == Operator::Gt {
                    v > bound
                } else {
                    v < bound
                }
            }
        }
    }
}

impl std::fmt::Display for Requirement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let op = match self.operator {
            Operator::In => "In",
            Operator::NotIn => "NotIn",
            Operator::Exists => "Exists",
            Operator::DoesNotExist => "DoesNotExist",
            Operator::Gt => "Gt",
            Operator::Lt => "Lt",
        };
        write!(f, "{} {op}", self.key)?;
        if !self.values.is_empty() {
            write!(f, " [{}]", self.values.join(", "))?;
        }
        Ok(())
    }
}

impl Scheduling {
    /// Whether the pod asks for an NVIDIA GPU or MIG device.
    pub fn requests_gpu(&self) -> bool {
        self.resources.values().any(|n| *n > 0)
    }

    /// Why the scheduler would not place the pod on `node`; None when it would.
    pub fn rejects(&self, node: &Node) -> Option<String> {
        for (k, v) in &self.node_selector {
            if node.labels.get(k) != Some(v) {
                return Some(format!("nodeSelector {k}={v}"));
            }
        }
        if !self.required_terms.is_empty()
            && !self
                .required_terms
                .iter()
                .any(|term| !term.is_empty() && term.iter().all(|r| r.holds(node)))
        {
            let first_failing = self
                .required_terms
                .iter()
                .flatten()
                .find(|r| !r.holds(node))
                .map(|r| format!(" ({r})"))
                .unwrap_or_default();
            return Some(format!("required node affinity{first_failing}"));
        }
        // PreferNoSchedule only ranks nodes.
        if let Some(t) = node.taints.iter().find(|t| {
            matches!(t.effect.as_str(), "NoSchedule" | "NoExecute")
                && !self.tolerations.iter().any(|tol| tol.tolerates(t))
        }) {
            return Some(format!("taint {t} not tolerated"));
        }
        for (r, n) in &self.resources {
            let offered = node.resources.get(r).copied().unwrap_or(0);
            if *n > offered {
                return Some(if offered == 0 {
                    format!("requests {r}: {n}, the node offers none")
                } else {
                    format!("requests {r}: {n}, the node offers {offered}")
                });
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(labels: &[(&str, &str)], taints: &[(&str, &str, &str)], res: &[(&str, u64)]) -> Node {
        Node {
            name: "n1".into(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            taints: taints
                .iter()
                .map(|(k, v, e)| Taint {
                    key: k.to_string(),
                    value: v.to_string(),
                    effect: e.to_string(),
                })
                .collect(),
            resources: res.iter().map(|(k, n)| (k.to_string(), *n)).collect(),
        }
    }

    fn req(key: &str, op: Operator, values: &[&str]) -> Requirement {
        Requirement {
            key: key.into(),
            operator: op,
            values: values.iter().map(|s| s.to_string()).collect(),
            field: false,
        }
    }

    /// Each operator as the scheduler reads it, Gt/Lt on GFD's driver-major label (an
    /// integer string): a value that is not an integer never matches.
    #[test]
    fn affinity_operators() {
        let n = node(
            &[
                ("nvidia.com/cuda.driver-version.major", "550"),
                ("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"),
            ],
            &[],
            &[],
        );
        let drv = "nvidia.com/cuda.driver-version.major";
        let prod = "nvidia.com/gpu.product";
        let holds = |r: Requirement| r.holds(&n);
        assert!(holds(req(drv, Operator::Gt, &["535"])));
        assert!(!holds(req(drv, Operator::Gt, &["550"])));
        assert!(holds(req(drv, Operator::Lt, &["570"])));
        assert!(!holds(req(drv, Operator::Lt, &["abc"])));
        assert!(!holds(req(drv, Operator::Gt, &["1", "2"])));
        assert!(!holds(req("absent", Operator::Lt, &["9"])));
        assert!(holds(req(
            prod,
            Operator::In,
            &["x", "NVIDIA-H100-80GB-HBM3"]
        )));
        assert!(!holds(req(
            prod,
            Operator::NotIn,
            &["NVIDIA-H100-80GB-HBM3"]
        )));
        assert!(holds(req("absent", Operator::NotIn, &["x"])));
        assert!(holds(req(prod, Operator::Exists, &[])));
        assert!(holds(req("absent", Operator::DoesNotExist, &[])));
        assert!(!holds(req(prod, Operator::DoesNotExist, &[])));
    }

    /// NoSchedule and NoExecute taints must be tolerated; PreferNoSchedule need not be.
    #[test]
    fn taints_and_tolerations() {
        let tainted = node(&[], &[("nvidia.com/gpu", "present", "NoSchedule")], &[]);
        let soft = node(&[], &[("nvidia.com/gpu", "", "PreferNoSchedule")], &[]);
        let none = Scheduling::default();
        assert!(none.rejects(&tainted).unwrap().contains("taint"));
        assert_eq!(none.rejects(&soft), None);
        let exists = Scheduling {
            tolerations: vec![Toleration {
                key: "nvidia.com/gpu".into(),
                exists: true,
                ..Default::default()
            }],
            ..Default::default()
        };
        assert_eq!(exists.rejects(&tainted), None);
        let wrong_value = Scheduling {
            tolerations: vec![Toleration {
                key: "nvidia.com/gpu".into(),
                value: "absent".into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        assert!(wrong_value.rejects(&tainted).is_some());
        let wrong_effect = Scheduling {
            tolerations: vec![Toleration {
                key: "nvidia.com/gpu".into(),
                exists: true,
                effect: "NoExecute".into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        assert!(wrong_effect.rejects(&tainted).is_some());
        let everything = Scheduling {
            tolerations: vec![Toleration {
                exists: true,
                ..Default::default()
            }],
            ..Default::default()
        };
        assert_eq!(everything.rejects(&tainted), None);
    }

    #[test]
    fn resources_and_terms() {
        let mig = node(&[("a", "1")], &[], &[("nvidia.com/mig-1g.10gb", 7)]);
        let wants = |r: &str, n: u64| Scheduling {
            resources: [(r.to_string(), n)].into_iter().collect(),
            ..Default::default()
        };
        assert_eq!(wants("nvidia.com/mig-1g.10gb", 7).rejects(&mig), None);
        assert!(wants("nvidia.com/mig-1g.10gb", 8).rejects(&mig).is_some());
        assert!(wants("nvidia.com/gpu", 1)
            .rejects(&mig)
            .unwrap()
            .contains("offers none"));
        // Terms are ORed; an empty term matches nothing.
        let terms = Scheduling {
            required_terms: vec![vec![], vec![req("a", Operator::In, &["1"])]],
            ..Default::default()
        };
        assert_eq!(terms.rejects(&mig), None);
        let empty_only = Scheduling {
            required_terms: vec![vec![]],
            ..Default::default()
        };
        assert!(empty_only.rejects(&mig).is_some());
    }
}
