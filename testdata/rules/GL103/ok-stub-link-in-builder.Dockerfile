FROM nvidia/cuda:12.4.1-devel-ubuntu22.04 AS build
RUN ln -s /usr/local/cuda/lib64/stubs/libcuda.so /usr/local/cuda/lib64/stubs/libcuda.so.1 && make
FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04
COPY --from=build /src/app /app
