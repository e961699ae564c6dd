#!/bin/sh
docker run --gpus all --shm-size 8g -v /usr/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu nvcr.io/nvidia/pytorch:24.05-py3 python train.py
