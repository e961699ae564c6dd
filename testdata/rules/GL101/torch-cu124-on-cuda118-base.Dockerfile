FROM nvidia/cuda:11.8.0-cudnn8-runtime-ubuntu22.04
RUN pip install torch==2.4.1 --index-url https://download.pytorch.org/whl/cu124
