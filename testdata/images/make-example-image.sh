#!/usr/bin/env bash
# Builds testdata/images/example.tar: the bundled example image of the README's quick start.
#
#   testdata/images/make-example-image.sh [OUT]        (default: testdata/images/example.tar)
#
# A `docker save`-style docker-archive (legacy layout: <id>/layer.tar, <config>.json,
# manifest.json, repositories; layers uncompressed, as docker stores them) with 3 layers:
#
#   1. base:   os-release, a glibc 2.35 banner file, python3.11, ld.so.conf
#   2. venv:   /opt/venv with torch 2.3.0 (+cu121 in torch/version.py), the nvidia cuda-runtime
#              wheel (libcudart.so.12) and a CUDA extension myext/_C.so: a real nvcc-built
#              library with SASS for sm_75 only (testdata/fatbin/cuda-binaries/v02_sm75_only);
#              plus a stray libcuda.so.1 that the next layer deletes
#   3. app:    /opt/app/train.py and a whiteout of that libcuda.so.1
#
# and a config with CUDA_VERSION=12.1.1, NVIDIA_REQUIRE_CUDA (brand alternatives),
# LD_LIBRARY_PATH. Deterministic: fixed mtimes and owners, sorted entries, so rerunning it
# gives the same bytes (checked by `cmp` in the integration tests' example test).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
OUT=${1:-testdata/images/example.tar}
EXT=testdata/fatbin/cuda-binaries/v02_sm75_only/libv02_sm75_only.so
MTIME=@1700000000

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Deterministic tar of the contents of DIR into OUT; member names without a "./" prefix,
# as docker writes them.
dtar() { # dir out
  local members
  mapfile -t members < <(cd "$1" && ls -A | LC_ALL=C sort)
  LC_ALL=C tar -C "$1" --sort=name --mtime="$MTIME" --owner=0 --group=0 --numeric-owner \
    --format=gnu --blocking-factor=1 --mode='u+rwX,go+rX,go-w' -cf "$2" -- "${members[@]}"
}

# ---- layer 1: base ----
b=$tmp/l1
mkdir -p "$b/etc/ld.so.conf.d" "$b/usr/lib/x86_64-linux-gnu" "$b/usr/bin" "$b/tmp"
cat >"$b/etc/os-release" <<'EOF'
PRETTY_NAME="Ubuntu 22.04.4 LTS"
NAME="Ubuntu"
VERSION_ID="22.04"
ID=ubuntu
EOF
printf 'include /etc/ld.so.conf.d/*.conf\n' >"$b/etc/ld.so.conf"
printf '/usr/local/lib\n' >"$b/etc/ld.so.conf.d/libc.conf"
printf '/usr/local/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu\n' \
  >"$b/etc/ld.so.conf.d/x86_64-linux-gnu.conf"
# Not a real libc: the banner gpulint reads the glibc release from.
printf 'GNU C Library (Ubuntu GLIBC 2.35-0ubuntu3.7) stable release version 2.35.\n' \
  >"$b/usr/lib/x86_64-linux-gnu/libc.so.6"
printf '#!/bin/sh\necho "Python 3.11.9 (example image placeholder)"\n' >"$b/usr/bin/python3.11"
chmod 755 "$b/usr/bin/python3.11"
ln -s python3.11 "$b/usr/bin/python3"

# ---- layer 2: the virtualenv ----
v=$tmp/l2
sp=opt/venv/lib/python3.11/site-packages
mkdir -p "$v/opt/venv/bin" "$v/$sp" "$v/usr/lib/x86_64-linux-gnu"
cat >"$v/opt/venv/pyvenv.cfg" <<'EOF'
home = /usr/bin
include-system-site-packages = false
version = 3.11.9
executable = /usr/bin/python3.11
EOF
ln -s /usr/bin/python3.11 "$v/opt/venv/bin/python"
ln -s python "$v/opt/venv/bin/python3"

distinfo() { # name version requires... ; writes METADATA, WHEEL, RECORD, INSTALLER
  local name=$1 version=$2 tag=$3; shift 3
  local d="$v/$sp/${name//-/_}-$version.dist-info"
  mkdir -p "$d"
  {
    printf 'Metadata-Version: 2.1\nName: %s\nVersion: %s\n' "$name" "$version"
    printf 'Requires-Python: >=3.8.0\n'
    for r in "$@"; do printf 'Requires-Dist: %s\n' "$r"; done
  } >"$d/METADATA"
  printf 'Wheel-Version: 1.0\nGenerator: bdist_wheel (0.43.0)\nRoot-Is-Purelib: false\nTag: %s\n' \
    "$tag" >"$d/WHEEL"
  printf 'pip\n' >"$d/INSTALLER"
  : >"$d/RECORD"
}

distinfo torch 2.3.0 cp311-cp311-manylinux1_x86_64 \
  'filelock' 'typing-extensions>=4.8.0' \
  'nvidia-cuda-runtime-cu12==12.1.105; platform_system == "Linux" and platform_machine == "x86_64"'
mkdir -p "$v/$sp/torch"
printf '__version__ = "2.3.0"\n' >"$v/$sp/torch/__init__.py"
cat >"$v/$sp/torch/version.py" <<'EOF'
from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']
__version__ = '2.3.0+cu121'
debug = False
cuda: Optional[str] = '12.1'
git_version = '97ff6cfd9c86c5c09d7ce775ab64ec5c99230f5d'
hip: Optional[str] = None
EOF

distinfo nvidia-cuda-runtime-cu12 12.1.105 py3-none-manylinux1_x86_64
mkdir -p "$v/$sp/nvidia/cuda_runtime/lib" "$v/$sp/nvidia/cuda_runtime/include"
: >"$v/$sp/nvidia/__init__.py"
: >"$v/$sp/nvidia/cuda_runtime/__init__.py"
# A stand-in for the 700 KB library (gpulint reads its version from the wheel and file name).
printf 'libcudart.so.12 placeholder (nvidia-cuda-runtime-cu12 12.1.105)\n' \
  >"$v/$sp/nvidia/cuda_runtime/lib/libcudart.so.12"
printf '/* cuda_runtime_api.h placeholder */\n#define CUDART_VERSION 12010\n' \
  >"$v/$sp/nvidia/cuda_runtime/include/cuda_runtime_api.h"

# The CUDA extension: a real nvcc output, SASS sm_75 only, no PTX.
distinfo myext 0.1.0 cp311-cp311-linux_x86_64 'torch==2.3.0'
mkdir -p "$v/$sp/myext"
printf 'from . import _C  # noqa: F401\n' >"$v/$sp/myext/__init__.py"
# Stripped, as wheels ship their extensions: nvcc's static CUDA runtime (13.0 here) is then
# named nowhere, so the image's runtime is the wheel's cudart 12.1 (gpulint reads a static
# runtime from .symtab; testdata/rules/image/cases keeps an unstripped one).
strip -s -o "$v/$sp/myext/_C.so" "$EXT"
chmod 755 "$v/$sp/myext/_C.so"

# A driver library copied in by mistake; layer 3 deletes it again.
printf 'libcuda.so.1 placeholder\n' >"$v/usr/lib/x86_64-linux-gnu/libcuda.so.1"

# ---- layer 3: the app, and the whiteout ----
a=$tmp/l3
mkdir -p "$a/opt/app" "$a/usr/lib/x86_64-linux-gnu"
cat >"$a/opt/app/train.py" <<'EOF'
import torch
import myext

print(torch.__version__, torch.version.cuda, torch.cuda.is_available())
EOF
: >"$a/usr/lib/x86_64-linux-gnu/.wh.libcuda.so.1"

# ---- the archive ----
arch=$tmp/archive
mkdir -p "$arch"
diff_ids=()
ids=()
parent=""
for l in l1 l2 l3; do
  dtar "$tmp/$l" "$tmp/$l.tar"
  d=$(sha256sum "$tmp/$l.tar" | cut -d' ' -f1)
  diff_ids+=("sha256:$d")
  # Legacy layer id: chained over the parent, as docker's v1 ids are.
  id=$(printf '%s %s' "$parent" "$d" | sha256sum | cut -d' ' -f1)
  mkdir -p "$arch/$id"
  mv "$tmp/$l.tar" "$arch/$id/layer.tar"
  printf '1.0' >"$arch/$id/VERSION"
  if [ -n "$parent" ]; then
    printf '{"id":"%s","parent":"%s","created":"2023-11-14T22:13:20Z"}' "$id" "$parent" >"$arch/$id/json"
  else
    printf '{"id":"%s","created":"2023-11-14T22:13:20Z"}' "$id" >"$arch/$id/json"
  fi
  ids+=("$id")
  parent=$id
done

sp_abs=/$sp
cat >"$tmp/config.json" <<EOF
{"architecture":"amd64","os":"linux","created":"2023-11-14T22:13:20Z",
"config":{"Env":["PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
"CUDA_VERSION=12.1.1",
"NVIDIA_REQUIRE_CUDA=cuda>=12.1 brand=tesla,driver>=470,driver<471 brand=tesla,driver>=525,driver<526",
"NVIDIA_VISIBLE_DEVICES=all",
"NVIDIA_DRIVER_CAPABILITIES=compute,utility",
"LD_LIBRARY_PATH=$sp_abs/nvidia/cuda_runtime/lib:/usr/local/nvidia/lib64"],
"Cmd":["python","/opt/app/train.py"],"WorkingDir":"/opt/app",
"Labels":{"org.opencontainers.image.title":"gpulint example","org.opencontainers.image.source":"testdata/images/make-example-image.sh"}},
"rootfs":{"type":"layers","diff_ids":["${diff_ids[0]}","${diff_ids[1]}","${diff_ids[2]}"]},
"history":[{"created":"2023-11-14T22:13:20Z","created_by":"ADD base /"},
{"created":"2023-11-14T22:13:20Z","created_by":"RUN python3.11 -m venv /opt/venv && pip install torch==2.3.0 ./myext"},
{"created":"2023-11-14T22:13:20Z","created_by":"COPY train.py /opt/app/ && RUN rm /usr/lib/x86_64-linux-gnu/libcuda.so.1"}]}
EOF
# Compact (one line), as docker writes it.
tr -d '\n' <"$tmp/config.json" >"$tmp/config.min.json"
cfg=$(sha256sum "$tmp/config.min.json" | cut -d' ' -f1)
mv "$tmp/config.min.json" "$arch/$cfg.json"
printf '[{"Config":"%s.json","RepoTags":["gpulint/example:latest"],"Layers":["%s/layer.tar","%s/layer.tar","%s/layer.tar"]}]' \
  "$cfg" "${ids[0]}" "${ids[1]}" "${ids[2]}" >"$arch/manifest.json"
printf '{"gpulint/example":{"latest":"%s"}}' "${ids[2]}" >"$arch/repositories"

mkdir -p "$(dirname "$OUT")"
case $OUT in /*) ;; *) OUT=$ROOT/$OUT ;; esac
dtar "$arch" "$OUT"
echo "wrote $OUT ($(stat -c %s "$OUT") bytes, sha256 $(sha256sum "$OUT" | cut -d' ' -f1))"
