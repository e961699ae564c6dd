FROM nvidia/cuda:12.4.1-devel-ubuntu22.04
ENV LD_LIBRARY_PATH=/usr/local/cuda/lib64/stubs:$LD_LIBRARY_PATH
CMD ["python3", "serve.py"]
