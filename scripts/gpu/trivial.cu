// The cheapest CUDA program: create a context and exit. Its run time is the floor of a run.
#include <cuda_runtime.h>
int main() { return cudaFree(0) == cudaSuccess ? 0 : 3; }
