#!/bin/sh
# `docker build --build-arg` flows into the Dockerfile it builds (read next to this script).
docker build -f ok-cuda-from-arg.Dockerfile --build-arg CUDA_VERSION=11.3.1 -t app:cuda11 .
