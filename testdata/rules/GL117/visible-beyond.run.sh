#!/bin/sh
# args: --gpu H100 --driver 550.54.15
docker run --gpus '"device=0"' -e CUDA_VISIBLE_DEVICES=1 --shm-size 8g nvcr.io/nvidia/pytorch:24.05-py3 python train.py
