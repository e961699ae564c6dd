# TensorFlow 2.8 is built for CUDA 11.2 and loads the CUDA 11 libraries by major soname.
FROM nvidia/cuda:11.8.0-cudnn8-runtime-ubuntu22.04
RUN pip install tensorflow==2.8.0
