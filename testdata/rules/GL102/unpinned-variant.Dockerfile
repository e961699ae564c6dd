FROM nvidia/cuda:12.1.1-runtime-ubuntu22.04
RUN pip install torch==2.5.1 torchvision
