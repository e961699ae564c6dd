#!/usr/bin/env bash
# Rebuild these fixtures with the newest PyPI nvcc (13.5.37 when recorded; PTX ISA 9.5, newer
# than the newest row of matrices/ptx_isa.toml at the time): no GPU needed.
#   pip download --no-deps --only-binary=:all: --platform manylinux2014_x86_64 \
#     nvidia-cuda-nvcc nvidia-nvvm nvidia-cuda-crt nvidia-cuda-runtime   # then unzip into $SP
#   SP=... bash build.sh
set -euo pipefail
cd "$(dirname "$0")"
export PATH="$SP/nvidia/cu13/bin:$PATH"
nvcc -shared -Xcompiler -fPIC -cudart none -gencode arch=compute_90,code=compute_90 \
  -o libv20_ptx90_nvcc135.so k.cu
nvcc -shared -Xcompiler -fPIC -cudart none -gencode 'arch=compute_90,code=[sm_90,compute_90]' \
  -o libv21_sm90_ptx90_nvcc135.so k.cu
