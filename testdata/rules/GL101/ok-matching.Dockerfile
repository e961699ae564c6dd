FROM nvidia/cuda:12.1.1-cudnn8-runtime-ubuntu22.04
RUN pip install torch==2.3.1 --index-url https://download.pytorch.org/whl/cu121
