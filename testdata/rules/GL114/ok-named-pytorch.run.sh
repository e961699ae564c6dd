#!/bin/sh
# A project's own image named after PyTorch; what it runs names no PyTorch/NCCL workload.
docker build -t pytorch-notebook .
docker run --gpus all -p 8888:8888 pytorch-notebook jupyter lab --ip 0.0.0.0
