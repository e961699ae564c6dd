# A supported CUDA by default; build-arg-eol.run.sh builds it with an end-of-life one.
ARG CUDA_VERSION=12.4.1
FROM nvidia/cuda:${CUDA_VERSION}-runtime-ubuntu22.04
CMD ["nvidia-smi"]
