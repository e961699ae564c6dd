FROM nvidia/cuda:10.1-cudnn7-runtime-ubuntu18.04
RUN pip install tensorflow-gpu==1.14.0
