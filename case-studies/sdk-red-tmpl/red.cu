// sdk-red-tmpl: the shape of the CUDA SDK's threadFenceReduction sample, written for wmfix: the
// block's sum in shared memory by a device function templated on the block size and called with
// explicit template arguments (`reduce_block<kThreads>(smem, ...)`), partial sums in global
// memory, a __threadfence() before the ticket (as shipped: correct), and the last block adding up
// the partial sums. Each thread first loads its elements as a small struct in registers.
//
// What it shows: the shared-memory accesses through `sdata` and the register struct's fields
// are not global memory, yet a static look at a call with explicit template arguments cannot
// tell; the runtime sees each site's address and neither fences nor counts them
// (`wmfix test` prints which sites ran on shared or local memory only; `wmfix reduce` drops them).
//
// Usage: red [blocks] [elements] [launches]. Exit 0 when every launch's total equals the CPU
// reference, 1 when one differs, 3 on a CUDA error, 64 on a bad command line.
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                 \
  do {                                                                              \
    cudaError_t err_ = (call);                                                      \
    if (err_ != cudaSuccess) {                                                      \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err_)); \
      exit(3);                                                                      \
    }                                                                               \
  } while (0)

constexpr unsigned kThreads = 256;

struct Pair {
  unsigned lo, hi;
};

// Four rotations of a value, indexed at run time: an array the compiler keeps in local memory.
struct Lanes {
  unsigned v[4];
};

// The SDK's reduceBlock: sdata is the block's shared memory; the caller names the block size.
template <unsigned blockSize>
__device__ void reduce_block(volatile unsigned *sdata, unsigned sum, unsigned tid) {
  sdata[tid] = sum;
  __syncthreads();
  for (unsigned s = blockSize / 2; s > 32; s /= 2) {
    if (tid < s) sdata[tid] = sum = sum + sdata[tid + s];
    __syncthreads();
  }
  if (tid < 32) {
    for (unsigned s = 32; s > 0; s /= 2) {
      sdata[tid] = sum = sum + sdata[tid + s];
      __syncwarp();
    }
  }
  __syncthreads();
}

__device__ unsigned retirement_count = 0;

template <unsigned blockSize>
__global__ void reduce_sum(const unsigned *in, unsigned n, unsigned *partial, unsigned *total) {
  extern __shared__ unsigned smem[];
  __shared__ bool am_last;
  const unsigned tid = threadIdx.x;
  Pair p;
  p.lo = 0;
  p.hi = 0;
  for (unsigned i = blockIdx.x * blockSize + tid; i < n; i += blockSize * gridDim.x) {
    p.lo += in[i] & 0xffffu;
    p.hi += in[i] >> 16;
  }
  Lanes r;
  for (unsigned j = 0; j < 4; ++j) r.v[j] = p.lo + (p.hi << 16);
  reduce_block<blockSize>(smem, r.v[tid % 4], tid);
  if (tid == 0) {
    partial[blockIdx.x] = smem[0];
    __threadfence();  // the partial sum is visible before the ticket says so
    const unsigned ticket = atomicInc(&retirement_count, gridDim.x);
    am_last = ticket == gridDim.x - 1;
  }
  __syncthreads();
  if (am_last) {
    unsigned sum = 0;
    for (unsigned i = tid; i < gridDim.x; i += blockSize) sum += ((volatile unsigned *)partial)[i];
    reduce_block<blockSize>(smem, sum, tid);
    if (tid == 0) {
      *total = smem[0];
      retirement_count = 0;
    }
  }
}

int main(int argc, char **argv) {
  const int blocks = argc > 1 ? atoi(argv[1]) : 128;
  const int n = argc > 2 ? atoi(argv[2]) : 1 << 16;
  const int launches = argc > 3 ? atoi(argv[3]) : 100;
  if (argc > 4 || blocks < 1 || blocks > 65535 || n < 1 || launches < 1 || launches > 100000) {
    fprintf(stderr, "usage: red [blocks <= 65535] [elements] [launches <= 100000]\n");
    return 64;
  }
  std::vector<unsigned> in(n);
  unsigned expect = 0;
  for (int i = 0; i < n; i++) {
    in[i] = unsigned(i) * 2654435761u >> 20;
    expect += in[i];
  }
  unsigned *din, *dpartial, *dtotal;
  CHECK(cudaMalloc(&din, n * sizeof(unsigned)));
  CHECK(cudaMalloc(&dpartial, blocks * sizeof(unsigned)));
  CHECK(cudaMalloc(&dtotal, launches * sizeof(unsigned)));
  CHECK(cudaMemcpy(din, in.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(dtotal, 0, launches * sizeof(unsigned)));
  for (int k = 0; k < launches; k++) {
    CHECK(cudaMemsetAsync(dpartial, 0, blocks * sizeof(unsigned)));
    reduce_sum<kThreads><<<blocks, kThreads, kThreads * sizeof(unsigned)>>>(din, n, dpartial, dtotal + k);
    CHECK(cudaGetLastError());
  }
  std::vector<unsigned> got(launches);
  CHECK(cudaMemcpy(got.data(), dtotal, launches * sizeof(unsigned), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int k = 0; k < launches; k++) wrong += got[k] != expect;
  if (wrong) {
    printf("FAIL: %d of %d launches wrong (expected %u)\n", wrong, launches, expect);
    return 1;
  }
  printf("PASS: %d launches\n", launches);
  return 0;
}
