#!/usr/bin/env bash
# Kernel-count fixtures (issue 34): the same build with and without a kernel. No GPU needed:
#   python3 -m venv v && v/bin/pip install nvidia-cuda-nvcc nvidia-nvvm nvidia-cuda-crt \
#     nvidia-cuda-cuobjdump          # 13.x when recorded
#   SP=v/lib/python3.11/site-packages bash build.sh
# nokernel.cu has only a __device__ function and a __constant__ array (like libnppc,
# libcufftw, __nvcc_device_query: a fatbin whose cubin defines no kernel); onekernel.cu has
# one __global__ function. `-compress-all` compresses the cubins too (zstd with nvcc 13).
set -euo pipefail
cd "$(dirname "$0")"
export PATH="$SP/nvidia/cu13/bin:$PATH"
for k in nokernel onekernel; do
  nvcc -shared -Xcompiler -fPIC -cudart none -gencode arch=compute_80,code=sm_80 \
    -o lib${k}_sm80.so $k.cu
  nvcc -shared -Xcompiler -fPIC -cudart none -Xfatbin -compress-all \
    -gencode 'arch=compute_80,code=[sm_80,compute_80]' -o lib${k}_sm80_ptx80_zstd.so $k.cu
done
{
  for f in lib*.so; do
    echo "== cuobjdump -res-usage $f"; cuobjdump -res-usage "$f"
    echo "== cuobjdump --list-elf --list-ptx $f"; cuobjdump --list-elf --list-ptx "$f"
  done
} 2>&1 | sed "s#$PWD/##" > EXPECTED_cuobjdump.txt
