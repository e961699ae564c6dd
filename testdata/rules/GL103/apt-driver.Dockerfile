FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04
RUN apt-get update && apt-get install -y nvidia-driver-550 && rm -rf /var/lib/apt/lists/*
