#!/usr/bin/env bash
# The GitHub Action's install step (action.yml): puts a gpulint on PATH.
#
#   1. `version` empty and a gpulint already on PATH: that one.
#   2. Else the released static binary of the version: `version`, else the action's own ref
#      when it is a version tag (uses: gpulint/gpulint@v0.1.0), else the latest release;
#      `gpulint-<version>-<target>.tar.gz` and its `.sha256` from the GitHub release, the
#      checksum verified with sha256sum before anything is unpacked.
#   3. On any failure of 2 (no release, no asset for this OS/CPU, a checksum mismatch, no
#      network), `cargo install` of the action's own source, with a log line saying why.
#
# Environment: INPUT_VERSION, ACTION_REF (github.action_ref), ACTION_REPOSITORY
# (github.action_repository), GITHUB_ACTION_PATH, RUNNER_TEMP, GITHUB_PATH; GPULINT_RELEASES
# overrides the releases URL (https://github.com/OWNER/REPO/releases), which the tests point
# at a file:// directory. Tested by tests/integration/packaging.rs.
set -euo pipefail

version=${INPUT_VERSION:-}
repository=${ACTION_REPOSITORY:-gpulint/gpulint}
releases=${GPULINT_RELEASES:-https://github.com/$repository/releases}
root=${RUNNER_TEMP:-/tmp}/gpulint
action_path=${GITHUB_ACTION_PATH:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
path_file=${GITHUB_PATH:-/dev/null}

if [[ -z $version ]] && command -v gpulint >/dev/null 2>&1; then
  echo "gpulint: using $(command -v gpulint) ($(gpulint --version 2>/dev/null || echo 'version unknown'))"
  exit 0
fi

# A release tag: v, then a semantic version.
is_version_tag() {
  [[ $1 =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]
}

# Why the download did not work, for the log line of the fallback.
reason=
# The download's scratch directory, removed however the script ends.
dir=
trap 'if [[ -n $dir ]]; then rm -rf "$dir"; fi' EXIT
download() {
  local target
  case "$(uname -s)/$(uname -m)" in
    Linux/x86_64 | Linux/amd64) target=x86_64-unknown-linux-musl ;;
    Linux/aarch64 | Linux/arm64) target=aarch64-unknown-linux-musl ;;
    *)
      reason="no released binary for $(uname -s)/$(uname -m)"
      return 1
      ;;
  esac
  if ! command -v curl >/dev/null 2>&1 || ! command -v sha256sum >/dev/null 2>&1; then
    reason="curl or sha256sum is not installed"
    return 1
  fi
  local tag=$version
  if [[ -z $tag ]] && is_version_tag "${ACTION_REF:-}"; then
    tag=$ACTION_REF
  fi
  if [[ -z $tag || $tag == latest ]]; then
    # The latest release's page redirects to .../releases/tag/<tag>.
    local url
    if ! url=$(curl -fsSL --retry 3 -o /dev/null -w '%{url_effective}' "$releases/latest"); then
      reason="cannot find the latest release at $releases/latest"
      return 1
    fi
    tag=${url##*/}
  fi
  [[ $tag == v* ]] || tag=v$tag
  if ! is_version_tag "$tag"; then
    reason="'$tag' is not a release version (vX.Y.Z)"
    return 1
  fi
  local name="gpulint-$tag-$target"
  dir=$(mktemp -d)
  if ! curl -fsSL --retry 3 -o "$dir/$name.tar.gz" "$releases/download/$tag/$name.tar.gz" \
    || ! curl -fsSL --retry 3 -o "$dir/$name.tar.gz.sha256" "$releases/download/$tag/$name.tar.gz.sha256"; then
    reason="cannot download $name.tar.gz and its .sha256 from $releases/download/$tag"
    return 1
  fi
  # The checksum file names the archive; it is checked against the file we downloaded, under
  # the name we chose, whatever name the file says.
  local want got
  want=$(head -c 64 "$dir/$name.tar.gz.sha256")
  got=$(sha256sum "$dir/$name.tar.gz")
  got=${got%% *}
  if [[ ! $want =~ ^[0-9a-f]{64}$ || $want != "$got" ]]; then
    reason="checksum mismatch for $name.tar.gz (expected ${want:-nothing}, got $got)"
    return 1
  fi
  mkdir -p "$root/bin"
  if ! tar -xzf "$dir/$name.tar.gz" -C "$dir" "$name/gpulint" \
    || [[ -L $dir/$name/gpulint || ! -f $dir/$name/gpulint ]]; then
    reason="$name.tar.gz holds no $name/gpulint"
    return 1
  fi
  install -m 0755 "$dir/$name/gpulint" "$root/bin/gpulint"
  local have
  if ! have=$("$root/bin/gpulint" --version 2>&1); then
    reason="the downloaded binary does not run: $have"
    return 1
  fi
  echo "gpulint: installed $have from $releases/download/$tag/$name.tar.gz (sha256 $got)"
}

if download; then
  echo "$root/bin" >>"$path_file"
  exit 0
fi
echo "gpulint: building from source instead of downloading: $reason"
cargo install --locked --path "$action_path" --root "$root"
echo "$root/bin" >>"$path_file"
