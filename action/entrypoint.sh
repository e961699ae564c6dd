#!/usr/bin/env bash
# The GitHub Action's step (action.yml): runs gpulint once for SARIF, then (cached, cheap)
# for annotations, and records the exit code in $GITHUB_OUTPUT instead of failing, so the
# SARIF upload still runs; the action's last step exits with it.
#
# Inputs come as INPUT_* variables (see action.yml); GPULINT names the binary (default:
# gpulint on PATH). Tested by tests/integration/packaging.rs with the locally built binary.
set -uo pipefail

bin=${GPULINT:-gpulint}
command=${INPUT_COMMAND:-lint}
target=${INPUT_TARGET:-.}
fail_on=${INPUT_FAIL_ON:-error}
sarif=${INPUT_SARIF_FILE:-gpulint.sarif}
annotations=${INPUT_ANNOTATIONS:-true}
out=${GITHUB_OUTPUT:-/dev/null}

case $command in
  lint | image | dockerfile | compose | k8s | run) ;;
  *)
    echo "::error title=gpulint::unknown command '$command' (lint, image, dockerfile, compose, k8s, run)"
    echo "exit-code=2" >>"$out"
    exit 0
    ;;
esac

# Extra arguments split like a shell would, without evaluating them.
read -r -a extra <<<"${INPUT_ARGS:-}"

case $command in
  run) args=(run --file "$target") ;;
  *) args=("$command" "$target") ;;
esac
args+=("${extra[@]}" --fail-on "$fail_on")

echo "gpulint ${args[*]}"
"$bin" "${args[@]}" --format sarif -o "$sarif"
code=$?
# An input gpulint could not read (exit 2) is still a report, with GL000 in it: upload and
# annotate it like any other; a usage error writes none.
if [[ -s $sarif && $annotations == true ]]; then
  # The same findings as annotations on the lines they point at (the layer cache makes a
  # second image scan cheap); its exit code is the same and is not needed.
  "$bin" "${args[@]}" --quiet --format github || true
fi
if [[ -s $sarif ]]; then
  echo "sarif-file=$sarif" >>"$out"
fi
echo "exit-code=$code" >>"$out"
case $code in
  0) echo "gpulint: no findings at or above $fail_on" ;;
  1) echo "gpulint: findings at or above $fail_on (exit 1)" ;;
  *) echo "::error title=gpulint::gpulint could not check $target (exit $code); see the log above" ;;
esac
exit 0
