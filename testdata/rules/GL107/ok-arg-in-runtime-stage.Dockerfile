# args: --gpu H100
# The runtime stage only installs the wheels its builder compiled: its ARG builds nothing.
FROM nvidia/cuda:12.4.1-devel-ubuntu22.04 AS builder
ARG TORCH_CUDA_ARCH_LIST="8.0;9.0"
RUN pip wheel -w /wheels flash-attn==2.5.8

FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04
ARG TORCH_CUDA_ARCH_LIST="7.0;7.5;8.0"
RUN apt-get update && apt-get install -y python3-pip && pip3 install --upgrade pip wheel
COPY --from=builder /wheels /wheels
RUN pip3 install --no-index /wheels/*.whl && rm -r /wheels
