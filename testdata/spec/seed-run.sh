#!/bin/sh
# Seed cases: host library dir mounted read-only over the container's (GL112), host
# /usr/local/cuda mounted (GL111), and the --gpus flag forgotten (GL110).
docker run --rm \
  -v /usr/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu:ro \
  -v /usr/local/cuda:/usr/local/cuda \
  nvidia/cuda:12.4.1-runtime-ubuntu22.04 nvidia-smi
