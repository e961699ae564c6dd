#!/bin/sh
docker run --device /dev/nvidia0 --device /dev/nvidiactl --shm-size 8g nvcr.io/nvidia/pytorch:24.05-py3 python train.py
