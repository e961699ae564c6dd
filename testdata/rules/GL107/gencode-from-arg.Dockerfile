# args: --gpu T4 --gpu H100
# One image per GPU generation, chosen by CUDA_COMPUTE_CAP: its default builds for 8.x only.
FROM nvidia/cuda:12.4.1-devel-ubuntu22.04
ARG CUDA_COMPUTE_CAP=80
RUN if [ ${CUDA_COMPUTE_CAP} -lt 90 ]; then \
      nvprune --generate-code code=sm_${CUDA_COMPUTE_CAP} /usr/local/cuda/lib64/libcublas_static.a -o /usr/local/cuda/lib64/libcublas_static.a; \
    else \
      nvprune --generate-code code=sm_90 /usr/local/cuda/lib64/libcublas_static.a -o /usr/local/cuda/lib64/libcublas_static.a; \
    fi
