#!/usr/bin/env bash
# Times `gpulint inventory --format json` (the real CLI, release build, no cache) on a multi-GB
# image against the bare cost of decompressing its layers, in the same run, and prints both and
# the ratio. Not a test; run by hand or in a perf job:
#
#   ci/bench-inventory.sh [MIB]     # default 2400 MiB of layer content
#
# The image (an OCI layout with gzip layers: ~120k small text files, a few hundred ELF copies,
# big incompressible files) is generated once and cached under target/bench-image-MIB.
set -euo pipefail
cd "$(dirname "$0")/.."
MIB="${1:-2400}"
TARGET="${CARGO_TARGET_DIR:-target}"
IMG="$TARGET/bench-image-$MIB"

cargo build --release --quiet --bin gpulint --example walk_bench
BIN="$TARGET/release/examples/walk_bench"
GPULINT="$TARGET/release/gpulint"

if [ ! -f "$IMG/index.json" ]; then
  echo "== generating $IMG (once)"
  rm -rf "$IMG"
  "$BIN" generate "$IMG" "$MIB"
fi
du -sh "$IMG/blobs" | awk '{print "image blobs on disk: " $1}'

secs() { awk -F= '/^seconds=/{print $2}'; }

# Warm the page cache so both runs read from memory, not disk.
cat "$IMG"/blobs/sha256/* >/dev/null

echo "== gzip -dc of every layer (external reference, $(nproc) at a time)"
start=$(date +%s.%N)
ls -S "$IMG"/blobs/sha256/ | while read -r b; do
  f="$IMG/blobs/sha256/$b"
  if [ "$(head -c2 "$f" | od -An -tx1 | tr -d ' ')" = "1f8b" ]; then echo "$f"; fi
done | xargs -P "$(nproc)" -I{} sh -c 'gzip -dc "{}" >/dev/null'
end=$(date +%s.%N)
GZ=$(awk -v a="$start" -v b="$end" 'BEGIN{print b-a}')
printf 'seconds=%.3f\n' "$GZ"

echo "== bare decompression + tar read (rust, same threads as the walk)"
OUT=$("$BIN" decompress "oci:$IMG:bench"); echo "$OUT"
BARE=$(echo "$OUT" | secs)

echo "== gpulint inventory --format json (the CLI: open, walk with every detector, digest checks, inventory)"
start=$(date +%s.%N)
CI=true "$GPULINT" inventory --format json --no-cache "oci:$IMG:bench" >"$IMG.inventory.json"
end=$(date +%s.%N)
CLI=$(awk -v a="$start" -v b="$end" 'BEGIN{print b-a}')
printf 'seconds=%.3f  (inventory: %s bytes of JSON, %s binaries)\n' "$CLI" \
  "$(stat -c %s "$IMG.inventory.json")" \
  "$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["binaries"]))' "$IMG.inventory.json" 2>/dev/null || echo '?')"

printf '\nbare decompression: %6.2fs   gpulint inventory: %6.2fs   ratio inventory/bare: %.2f   (gzip -dc: %.2fs)\n' \
  "$BARE" "$CLI" "$(awk -v w="$CLI" -v b="$BARE" 'BEGIN{print w/b}')" "$GZ"
