// module-state: a one-pass sum whose last block (by a ticket from a module-scope __device__
// counter) adds up the blocks' partial sums, with the fences it needs. The counter starts at 0
// when the program is loaded and no block resets it: correct once a process, as most programs
// run, and wrong when the same process runs main again (wmfix's warm runs), since every ticket
// is then past the last one. Written for wmfix (issue 44.3): warm runs of such a program must
// not count as errors of the program.
//
// Usage: ticket [blocks] [threads-per-block] [elements]. Exit status 0 when the GPU total equals
// the CPU reference, 1 when it differs, 3 on a CUDA error.
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                              \
  do {                                                                           \
    cudaError_t err_ = (call);                                                   \
    if (err_ != cudaSuccess) {                                                   \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err_)); \
      exit(3);                                                                   \
    }                                                                            \
  } while (0)

__device__ unsigned tickets = 0;  // never reset: the program runs once a process

__global__ void sum(const unsigned *in, int n, unsigned *partial, unsigned *total) {
  __shared__ unsigned cache[1024];
  __shared__ bool last;
  int t = threadIdx.x;
  unsigned s = 0;
  for (int i = t + blockIdx.x * blockDim.x; i < n; i += blockDim.x * gridDim.x) s += in[i];
  cache[t] = s;
  __syncthreads();
  for (int i = blockDim.x / 2; i != 0; i /= 2) {
    if (t < i) cache[t] += cache[t + i];
    __syncthreads();
  }
  if (t == 0) {
    partial[blockIdx.x] = cache[0];
    __threadfence();
    last = atomicAdd(&tickets, 1) == gridDim.x - 1;
  }
  __syncthreads();
  if (last && t == 0) {
    __threadfence();
    unsigned all = 0;
    for (int b = 0; b < (int)gridDim.x; ++b) all += ((volatile unsigned *)partial)[b];
    *total = all;
  }
}

int main(int argc, char **argv) {
  int blocks = argc > 1 ? atoi(argv[1]) : 128;
  int threads = argc > 2 ? atoi(argv[2]) : 256;
  int n = argc > 3 ? atoi(argv[3]) : 1 << 18;
  std::vector<unsigned> host(n);
  unsigned want = 0;
  for (int i = 0; i < n; ++i) want += host[i] = (unsigned)(i * 2654435761u >> 7);
  unsigned *in, *partial, *total;
  CHECK(cudaMalloc(&in, n * sizeof(unsigned)));
  CHECK(cudaMalloc(&partial, blocks * sizeof(unsigned)));
  CHECK(cudaMalloc(&total, sizeof(unsigned)));
  CHECK(cudaMemcpy(in, host.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(total, 0, sizeof(unsigned)));
  sum<<<blocks, threads>>>(in, n, partial, total);
  CHECK(cudaGetLastError());
  unsigned got = 0;
  CHECK(cudaMemcpy(&got, total, sizeof(unsigned), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(in));
  CHECK(cudaFree(partial));
  CHECK(cudaFree(total));
  if (got != want) {
    printf("wrong total: %u, expected %u\n", got, want);
    return 1;
  }
  printf("ok: %u\n", got);
  return 0;
}
