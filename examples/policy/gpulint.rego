# Deploy gate over gpulint's JSON report (schema_version 2, docs/schema/report.schema.json).
#
#   gpulint image my/app:1.0 --fleet fleet.toml --format json --fail-on none > report.json
#   opa eval --fail-defined -d examples/policy/gpulint.rego -i report.json 'data.gpulint.deploy.deny[x]'
#
# The same file works in OPA Gatekeeper / conftest / regorus. Tested with the regorus engine
# in tests/integration/policy.rs on the real report for testdata/images/example.tar and
# examples/policy/fleet.toml. Rego v1 syntax (OPA 1.0+; older OPA needs `import rego.v1`).
package gpulint.deploy

# Pools the report judged (one target per fleet pool).
pools := {t | some t in input.targets}

# A pool fails when an error finding names it, or when an error holds for every target
# (a finding without a target, e.g. a broken Dockerfile line or an unreadable layer).
failing_pools contains pool if {
	some f in input.findings
	f.severity == "error"
	pool := f.target
	pool in pools
}

failing_pools contains pool if {
	some f in input.findings
	f.severity == "error"
	not f.target
	some pool in pools
}

# Rule 1: deny the deploy when any fleet pool fails.
deny contains msg if {
	some pool in failing_pools
	codes := {f.rule | some f in input.findings; f.severity == "error"; f.target == pool}
	msg := sprintf("%s fails on pool %s (%s)", [input.subject, pool, concat(", ", codes)])
}

deny contains msg if {
	some f in input.findings
	f.severity == "error"
	not f.target
	msg := sprintf("%s: %s %s", [input.subject, f.rule, f.message])
}

# Rule 2: no verdict is not a pass. A report of another schema version, one made without any
# target, or one over an image that could not be read completely (GL000, --allow-partial)
# cannot clear a deploy.
deny contains msg if {
	input.schema_version != 2
	msg := sprintf("gpulint report schema_version %v is not the one this policy reads (2)", [input.schema_version])
}

deny contains msg if {
	count(pools) == 0
	msg := sprintf("%s: the report judged no target (pass --fleet or --gpu/--driver)", [input.subject])
}

deny contains msg if {
	input.details.partial == true
	msg := sprintf("%s: the image could not be read completely; the verdict is partial", [input.subject])
}

deny contains msg if {
	some f in input.findings
	f.rule == "GL000"
	msg := sprintf("%s: unreadable input: %s", [input.subject, f.message])
}

# Pools that may take the image (for a scheduler or an admission controller's allow-list).
deployable_pools := pools - failing_pools

default allow := false

allow if count(deny) == 0
