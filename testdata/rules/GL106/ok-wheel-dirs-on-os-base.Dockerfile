# The pip CUDA wheels' own library directories (PyTorch's RPATH order) on a base without CUDA.
FROM opensuse/leap:15.6
RUN pip install torch==2.7.1 --index-url https://download.pytorch.org/whl/cu118
ENV LD_LIBRARY_PATH="/usr/local/lib64/python3.11/site-packages/torch/lib:/usr/local/lib/python3.11/site-packages/nvidia/cublas/lib:/usr/local/lib/python3.11/site-packages/nvidia/cudnn/lib"
