FROM nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04
RUN pip install torch==2.3.1 --index-url https://download.pytorch.org/whl/cu118
