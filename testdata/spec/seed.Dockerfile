# Seed case: a CUDA 11.8 base with a torch built for CUDA 12.1 (GL101), plus the unquoted
# specifier redirect (GL108) and a stub libcuda on LD_LIBRARY_PATH (GL106).
ARG CUDA=11.8.0
FROM nvidia/cuda:${CUDA}-runtime-ubuntu22.04
RUN pip install torch==2.3.0+cu121 \
      numba>=0.57.1
ENV LD_LIBRARY_PATH=/usr/local/cuda/lib64/stubs:${LD_LIBRARY_PATH}
