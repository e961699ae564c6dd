FROM nvidia/cuda:12.4.1-devel-ubuntu22.04
<<<<<<< HEAD
RUN cmake -B build -DCMAKE_CUDA_ARCHITECTURES=80 . && cmake --build build
=======
RUN cmake -B build . && cmake --build build
>>>>>>> master
