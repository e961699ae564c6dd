# The distribution's CUPTI (Ubuntu 20.04: CUDA 10.1) next to the image's CUDA 12.2.
FROM nvidia/cuda:12.2.2-devel-ubuntu22.04
RUN apt-get update && apt-get install -y --no-install-recommends libcupti-dev git
