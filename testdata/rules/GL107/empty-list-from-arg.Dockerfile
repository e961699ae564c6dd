# The list comes from an ARG left empty: torch treats an empty TORCH_CUDA_ARCH_LIST as unset.
FROM pytorch/pytorch:2.3.0-cuda12.1-cudnn8-devel
ENV FORCE_CUDA="1"
ARG CUDA_ARCH=""
ENV TORCH_CUDA_ARCH_LIST=${CUDA_ARCH}
RUN pip install --no-cache-dir -e .
