// Holds a CUDA context open until killed, so that the driver stays initialised between the
// short runs of `wmfix test` (what persistence mode does, without changing the GPU's settings).
// Used by scripts/gpu/*.sh to measure whether it speeds the runs up.
#include <cuda_runtime.h>
#include <unistd.h>
int main() {
    if (cudaFree(0) != cudaSuccess) return 3;
    for (;;) pause();
}
