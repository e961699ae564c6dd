FROM nvidia/cuda:latest
CMD ["nvidia-smi"]
