__global__ void k(int *out) { out[threadIdx.x] = threadIdx.x * 2; }
extern "C" void launch(int *out) { k<<<1, 32>>>(out); }
