#!/usr/bin/env bash
# Benchmark: `gpulint inventory` (the real CLI) of a multi-GB image in the local registry,
# twice with the same --cache-dir: cold (every layer fetched, digest-checked and walked) then
# warm (manifest and config only, every layer from the cache); prints both times and the ratio.
#
#   ci/bench-registry.sh [GB]        default 2 (GB of layer content, in 4 layers)
#
# Env: GPULINT_SERVICES_ENV=DIR/env to use services already started by
# `ci/services.sh start DIR` (else they are started in a temp dir and stopped after);
# BENCH_PROFILE=release|debug (default release).
set -euo pipefail
cd "$(dirname "$0")/.."
gb=${1:-2}
profile=${BENCH_PROFILE:-release}

tmp=$(mktemp -d /tmp/gl-bench.XXXX)
cleanup() {
  if [[ -z ${GPULINT_SERVICES_ENV:-} ]]; then bash ci/services.sh stop "$tmp/svc" || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

if [[ -n ${GPULINT_SERVICES_ENV:-} ]]; then
  envfile=$GPULINT_SERVICES_ENV
else
  bash ci/services.sh start "$tmp/svc"
  envfile=$tmp/svc/env
fi
reg=$(sed -n 's/^GPULINT_REGISTRY=//p' "$envfile")

echo "bench: building gpulint ($profile)" >&2
if [[ $profile == release ]]; then
  cargo build -q --release --bin gpulint
else
  cargo build -q --bin gpulint
fi
target=${CARGO_TARGET_DIR:-target}
bin=$target/$profile/gpulint

# An OCI layout with 4 layers of incompressible content, gzip -1 (what registries serve).
echo "bench: building a ${gb} GB image" >&2
oci=$tmp/oci
mkdir -p "$oci/blobs/sha256"
printf '{"imageLayoutVersion":"1.0.0"}' >"$oci/oci-layout"
per_layer_mb=$(( gb * 1024 / 4 ))
layers_json=""
diff_ids=""
for i in 1 2 3 4; do
  root=$tmp/root$i
  mkdir -p "$root/usr/local/cuda/lib64"
  for j in 1 2 3 4; do
    head -c $(( per_layer_mb / 4 ))M /dev/urandom >"$root/usr/local/cuda/lib64/libbig$i-$j.so"
  done
  tar -C "$root" --sort=name --mtime=@0 --owner=0 --group=0 -cf "$tmp/layer$i.tar" .
  rm -rf "$root"
  diff=$(sha256sum "$tmp/layer$i.tar" | cut -d' ' -f1)
  gzip -1 -c "$tmp/layer$i.tar" >"$tmp/layer$i.tgz"
  rm -f "$tmp/layer$i.tar"
  dig=$(sha256sum "$tmp/layer$i.tgz" | cut -d' ' -f1)
  size=$(stat -c %s "$tmp/layer$i.tgz")
  mv "$tmp/layer$i.tgz" "$oci/blobs/sha256/$dig"
  layers_json+="${layers_json:+,}{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"digest\":\"sha256:$dig\",\"size\":$size}"
  diff_ids+="${diff_ids:+,}\"sha256:$diff\""
done
blob() { # json -> prints "digest size", stores it
  local f=$tmp/blob.json d
  printf '%s' "$1" >"$f"
  d=$(sha256sum "$f" | cut -d' ' -f1)
  mv "$f" "$oci/blobs/sha256/$d"
  echo "$d $(stat -c %s "$oci/blobs/sha256/$d")"
}
read -r cd cs < <(blob "{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":{\"Env\":[\"CUDA_VERSION=12.4.1\"]},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[$diff_ids]}}")
read -r md ms < <(blob "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":\"sha256:$cd\",\"size\":$cs},\"layers\":[$layers_json]}")
printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"org.opencontainers.image.ref.name":"v1"}}]}' "$md" "$ms" >"$oci/index.json"

echo "bench: pushing to $reg" >&2
skopeo copy -q --dest-tls-verify=false "oci:$oci:v1" "docker://$reg/bench/big:v1"
rm -rf "$oci"

ref=docker://$reg/bench/big:v1
cache=$tmp/cache
scan() { CI=true "$bin" inventory --format json -q --cache-dir "$cache" "$ref" >"$1"; }
t0=$(date +%s.%N); scan "$tmp/cold.json"; t1=$(date +%s.%N)
scan "$tmp/warm.json"; t2=$(date +%s.%N)
# Same inventory both times (the cache is a cache, not a different answer).
cmp -s "$tmp/cold.json" "$tmp/warm.json" || { echo "bench-registry: cold and warm inventories differ" >&2; exit 1; }
echo "bench: cache: $(find "$cache" -type f | wc -l) file(s), $(du -sh "$cache" | cut -f1)" >&2
awk -v a="$t0" -v b="$t1" -v c="$t2" -v gb="$gb" 'BEGIN {
  cold = b - a; warm = c - b
  printf "bench-registry: %s GB image: cold %.2f s, warm %.3f s, cold/warm %.0fx\n", gb, cold, warm, cold / warm
}'
