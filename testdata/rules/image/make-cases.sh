#!/usr/bin/env bash
# The single source of testdata/rules/image/cases/*: small root filesystems, one per image-rule
# case in ../image-cases.toml, made of real nvcc-built ELFs (testdata/fatbin), real CUDA runtime
# skeletons (testdata/cudart) and hand-written package metadata. `gpulint image dir:<case>` is
# run on each by `image_rule_cases` (tests/integration/rule_snapshots.rs), and
# `image_cases_are_generated_by_the_script` regenerates them all into a temporary directory and
# compares with the checked-in trees.
#
#   testdata/rules/image/make-cases.sh [OUT]     (OUT defaults to testdata/rules/image/cases)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
OUT="${1:-$HERE/cases}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
cd "$HERE"
FB=../../fatbin
CUDART=../../cudart
X86=usr/lib/x86_64-linux-gnu
SP=usr/local/lib/python3.12/site-packages

mk() { mkdir -p "$(dirname "$1")"; cat > "$1"; }
cp_to() { mkdir -p "$(dirname "$2")"; cp "$1" "$2"; chmod 0644 "$2"; }
# case NAME: start NAME afresh (only this one is deleted) and print its directory.
case_dir() { rm -rf "${OUT:?}/$1"; mkdir -p "$OUT/$1"; printf '%s' "$OUT/$1"; }
# A pip-installed distribution: METADATA (+ Requires-Dist lines) and WHEEL with one tag.
dist() { # ROOT SITE NAME VERSION TAG [REQUIRES...]
  local root=$1 site=$2 name=$3 version=$4 tag=$5; shift 5
  local d="$root/$site/${name//-/_}-$version.dist-info"
  {
    printf 'Metadata-Version: 2.1\nName: %s\nVersion: %s\n' "$name" "$version"
    for r in "$@"; do printf 'Requires-Dist: %s\n' "$r"; done
  } | mk "$d/METADATA"
  printf 'Wheel-Version: 1.0\nGenerator: bdist_wheel (0.43.0)\nRoot-Is-Purelib: false\nTag: %s\n' "$tag" | mk "$d/WHEEL"
}

# --- GL000: an ELF whose header is cut short: the scan says where, and fails closed ---
C=$(case_dir gl000-malformed-elf)
head -c 40 $FB/cuda-binaries/v01_sm80_sm90_ptx90/libv01_sm80_sm90_ptx90.so | mk $C/opt/app/libk.so
head -c 200 $FB/cuda-binaries/v01_sm80_sm90_ptx90/libv01_sm80_sm90_ptx90.so | mk $C/opt/app/libcut.so

# --- GL003: PTX built by nvcc 13.5 (PTX ISA 9.5, newer than every release in our tables) ---
C=$(case_dir gl003-ptx-newer-than-every-known-release)
cp_to $FB/nvcc-13.5/libv20_ptx90_nvcc135.so $C/opt/app/libk.so

# --- the same nvcc 13.5 build with sm_90 SASS beside the PTX: runs on 9.0 without JIT ---
C=$(case_dir sm90-sass-beside-ptx-isa-9.5)
cp_to $FB/nvcc-13.5/libv21_sm90_ptx90_nvcc135.so $C/opt/app/libk.so

# --- GL003: PTX ISA 9.0 (nvcc 13.0) JIT-compiled on Blackwell by a CUDA 12.8 driver ---
C=$(case_dir gl003-ptx-isa-9.0-on-cuda-12.8-driver)
cp_to $FB/cuda-binaries/v01_sm80_sm90_ptx90/libv01_sm80_sm90_ptx90.so $C/opt/app/libk.so

# --- GL004: the driver's libcuda baked into the image, with its soname link ---
C=$(case_dir gl004-libcuda-in-image)
printf 'not the real driver: its file name is what gpulint reads\n' | mk $C/$X86/libcuda.so.535.104.05
ln -s libcuda.so.535.104.05 $C/$X86/libcuda.so.1
printf 'not the real driver\n' | mk $C/$X86/libnvidia-ml.so.535.104.05

# --- GL005: cuda-compat 13.0 on a GeForce GPU, where forward compatibility is unsupported ---
C=$(case_dir gl005-cuda-compat-on-geforce)
gzip -dc $CUDART/nvidia-cuda-runtime-13.0.96-x86_64-libcudart.so.13.skel.gz | mk $C/usr/local/cuda-13.0/lib64/libcudart.so.13.0.96
ln -s libcudart.so.13.0.96 $C/usr/local/cuda-13.0/lib64/libcudart.so.13
printf 'not the real driver\n' | mk $C/usr/local/cuda-13.0/compat/libcuda.so.580.65.06
ln -s libcuda.so.580.65.06 $C/usr/local/cuda-13.0/compat/libcuda.so.1
ln -s cuda-13.0 $C/usr/local/cuda
printf '/usr/local/cuda/compat\n' | mk $C/etc/ld.so.conf.d/00-cuda-compat.conf

# --- GL007: a wheel built for CPython 3.11 installed into Python 3.12's site-packages ---
C=$(case_dir gl007-cp311-wheel-in-python-3.12)
printf '#!/bin/sh\n' | mk $C/usr/local/bin/python3.12
chmod 0755 $C/usr/local/bin/python3.12
dist $C $SP numpy 2.1.3 cp311-cp311-manylinux_2_17_x86_64

# --- GL008: torchvision built for another torch release than the one installed ---
C=$(case_dir gl008-torchvision-for-another-torch)
printf '#!/bin/sh\n' | mk $C/usr/local/bin/python3.12
chmod 0755 $C/usr/local/bin/python3.12
dist $C $SP torch 2.8.0 cp312-cp312-manylinux_2_28_x86_64 'sympy>=1.13.3'
dist $C $SP torchvision 0.20.0 cp312-cp312-manylinux_2_28_x86_64 'torch==2.5.0'

