# The stub is on the path of one build step only; the image keeps no stubs on its path.
FROM nvidia/cuda:12.4.1-devel-ubuntu22.04
RUN LD_LIBRARY_PATH=/usr/local/cuda/lib64/stubs:${LD_LIBRARY_PATH} make -C /src
