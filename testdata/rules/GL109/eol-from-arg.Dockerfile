# The CUDA release is chosen by the ARG default: that is the line to change.
ARG CUDA_VERSION=11.3.1
ARG UBUNTU_VERSION=20.04
FROM nvidia/cuda:${CUDA_VERSION}-cudnn8-devel-ubuntu${UBUNTU_VERSION}
RUN apt-get update
