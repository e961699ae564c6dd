#!/bin/sh
# The nvidia-docker wrapper with one GPU chosen by the variable.
nvidia-docker run -e NVIDIA_VISIBLE_DEVICES=1 -it myorg/trainer:1.4 python train.py
