#!/bin/sh
docker run --gpus all pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime python -c "import torch; torch.utils.data.DataLoader(ds, num_workers=8)"
