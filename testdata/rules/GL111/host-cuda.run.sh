#!/bin/sh
docker run --gpus all --shm-size 8g -v /usr/local/cuda:/usr/local/cuda nvcr.io/nvidia/pytorch:24.05-py3 python train.py
