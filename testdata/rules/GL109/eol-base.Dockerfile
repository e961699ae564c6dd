FROM nvidia/cuda:10.2-cudnn7-runtime-ubuntu18.04
CMD ["python3", "app.py"]
