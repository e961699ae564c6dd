#!/bin/sh
# `bert` is built by the project's build.sh (`docker build -t bert .`): a local image.
docker run --gpus all --ipc=host -v "$PWD":/workspace bert python run_pretraining.py
