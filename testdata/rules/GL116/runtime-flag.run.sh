#!/bin/sh
# GPUs through the legacy runtime: the image's NVIDIA_VISIBLE_DEVICES (all) decides.
docker run --runtime=nvidia --rm \
  nvidia/cuda:12.4.1-base-ubuntu22.04 nvidia-smi
