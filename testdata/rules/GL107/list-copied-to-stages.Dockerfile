# args: --gpu T4 --gpu H100
# One list written before each kernel build: one finding naming the other lines.
FROM nvidia/cuda:12.4.1-devel-ubuntu22.04 AS builder
FROM builder AS kernels-a
RUN TORCH_CUDA_ARCH_LIST="8.0;8.6+PTX" python setup.py build
FROM builder AS kernels-b
RUN TORCH_CUDA_ARCH_LIST="8.0;8.6+PTX" python setup.py build
FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04
COPY --from=kernels-a /build /a
COPY --from=kernels-b /build /b
