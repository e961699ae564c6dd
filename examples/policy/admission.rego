# Admission gate over a gpulint sweep (issue 31): admit a workload only when every image it
# runs was scanned and passes on the pools it can land on.
#
# data.gpulint.report: the JSON report of `gpulint image --images-from … --fleet fleet.toml
#   --format json` or of `gpulint report merge` (subject "images", schema_version 2): one entry
#   per image in details.images, with its verdict per fleet pool.
# data.gpulint.pool_label (optional): the nodeSelector label that names a fleet pool; default
#   "gpulint.dev/pool". A workload that selects no pool may land on any pool, so it must pass
#   on every one.
# input: an AdmissionReview (input.request.object, OPA/kube-mgmt) or Gatekeeper's review
#   (input.review.object): a Pod, or a workload with a pod template (Deployment, Job, …).
#
# Images are matched as the manifest writes them: list them in the sweep the same way. Tested
# with the regorus engine in tests/integration/policy.rs on real gpulint output. Rego v1.
package gpulint.admission

report := data.gpulint.report

pool_label := object.get(object.get(data, "gpulint", {}), "pool_label", "gpulint.dev/pool")

workload := input.request.object if {
	input.request.object
} else := input.review.object

pod_spec := workload.spec.template.spec if {
	workload.spec.template.spec
} else := workload.spec

images contains c.image if {
	some c in pod_spec.containers
}

images contains c.image if {
	some c in pod_spec.initContainers
}

# The pools the workload can land on: the one its nodeSelector names, else all of them.
judged_pools := {t | some t in report.targets}

selected_pool := pod_spec.nodeSelector[pool_label]

pools := {selected_pool} if {
	selected_pool
} else := judged_pools

# The sweep's entry for an image: by the reference it was scanned as, or by another reference
# with the same digest.
entry_for(image) := e if {
	some e in report.details.images
	e.reference == image
}

entry_for(image) := e if {
	some e in report.details.images
	image in e.aliases
}

deny contains msg if {
	report.schema_version != 2
	msg := sprintf("the gpulint report has schema_version %v; this policy reads 2", [report.schema_version])
}

deny contains msg if {
	report.subject != "images"
	msg := "data.gpulint.report is not a report over many images (gpulint image --images-from … --format json)"
}

deny contains msg if {
	count(pools) == 0
	msg := "the gpulint report judged no pool (run the sweep with --fleet)"
}

deny contains msg if {
	some image in images
	not entry_for(image)
	msg := sprintf("image %s was not scanned by the gpulint sweep", [image])
}

deny contains msg if {
	some image in images
	e := entry_for(image)
	some pool in pools
	not pool in {c.target | some c in e.targets}
	msg := sprintf("image %s was not judged on pool %s", [image, pool])
}

# "unknown" (the image could not be read completely) is no pass either.
deny contains msg if {
	some image in images
	e := entry_for(image)
	some c in e.targets
	c.target in pools
	c.verdict in {"error", "unknown"}
	codes := {f.rule |
		some f in report.findings
		f.image == e.reference
		f.severity == "error"
		object.get(f, "target", c.target) == c.target
	}
	msg := sprintf("image %s: %s on pool %s (%s)", [image, c.verdict, c.target, concat(", ", sort(codes))])
}

# Gatekeeper's ConstraintTemplate entry point.
violation contains {"msg": msg} if {
	some msg in deny
}

default allow := false

allow if count(deny) == 0
