# args: --gpu H100 --driver 550.54.15
FROM nvidia/cuda:12.4.1-devel-ubuntu22.04
ENV TORCH_CUDA_ARCH_LIST="7.0;7.5;8.0"
RUN pip install --no-build-isolation flash-attn==2.5.8
