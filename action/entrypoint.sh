#!/usr/bin/env bash
# The GitHub Action's step (action.yml): runs gpulint once for SARIF, then (cached, cheap)
# for annotations, and records the exit code in $GITHUB_OUTPUT instead of failing, so the
# SARIF upload still runs; the action's last step exits with it.
#
# Inputs come as INPUT_* variables (see action.yml); GPULINT names the binary (default:
# gpulint on PATH). `target` and `args` are split into words like a shell command line without
# being evaluated (action/split-words.sh): `--gpu "RTX 4090"` is two words, `$(…)` stays text.
# Tested by tests/integration/packaging.rs with the locally built binary.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=action/split-words.sh
. "$here/split-words.sh"

bin=${GPULINT:-gpulint}
command=${INPUT_COMMAND:-lint}
fail_on=${INPUT_FAIL_ON:-error}
sarif=${INPUT_SARIF_FILE:-gpulint.sarif}
annotations=${INPUT_ANNOTATIONS:-true}
out=${GITHUB_OUTPUT:-/dev/null}

# Workflow-command data: %, CR and LF are escaped so that input cannot end the command early.
escape_data() {
  local s=${1//'%'/%25}
  s=${s//$'\r'/%0D}
  printf '%s' "${s//$'\n'/%0A}"
}

# An error in the inputs: reported as exit code 2 (the last step fails with it).
input_error() {
  echo "::error title=gpulint::$(escape_data "$1")"
  echo "exit-code=2" >>"$out"
  exit 0
}

case $command in
  lint | image | dockerfile | compose | k8s | run) ;;
  *) input_error "unknown command '$command' (lint, image, dockerfile, compose, k8s, run)" ;;
esac

# split_input ARRAY INPUT NAME: the words of INPUT into the array ARRAY (an error names NAME).
split_input() {
  local -n into=$1
  gpulint_split_words "$2" || input_error "$3: $gpulint_split_error"
  IFS=$gpulint_us
  set -f
  into=($gpulint_words)
  set +f
  unset IFS
}
split_input targets "${INPUT_TARGET:-}" target
split_input extra "${INPUT_ARGS:-}" args

case $command in
  image)
    # One image per run: the SARIF category and the verdict are per image.
    if [[ ${#targets[@]} -ne 1 ]]; then
      input_error "command image checks one image, and target names ${#targets[@]}; use a job matrix for several images"
    fi
    args=(image "${targets[0]}")
    ;;
  run)
    # A directory stands for the scripts and Markdown files in it (gpulint run --file DIR).
    [[ ${#targets[@]} -gt 0 ]] || targets=(.)
    args=(run)
    for t in "${targets[@]}"; do
      args+=(--file "$t")
    done
    ;;
  *)
    # No target: gpulint's own default (lint: this directory; dockerfile: ./Dockerfile;
    # compose: the compose file lookup).
    args=("$command" ${targets[@]+"${targets[@]}"})
    ;;
esac
args+=(${extra[@]+"${extra[@]}"} --fail-on "$fail_on")

printf 'gpulint'
printf ' %q' "${args[@]}"
printf '\n'
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
  *) echo "::error title=gpulint::$(escape_data "gpulint could not check ${targets[*]:-the default target} (exit $code); see the log above")" ;;
esac
exit 0
