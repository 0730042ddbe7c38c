// sdk-red: a one-pass sum whose blocks each write a partial sum to global memory and take a
// ticket from a global counter; the block that draws the last ticket adds up all partial sums.
// The idiom of the CUDA SDK's threadFenceReduction sample (Sorensen & Donaldson, PLDI 2016,
// Tab. 4), written for wmfix. The writer has a __threadfence() between the store of its
// partial sum and its ticket, so the last block sees every partial sum.
//
// Usage: red [blocks] [threads-per-block] [elements]. Exit status 0 when the GPU result equals
// the CPU reference, 1 when it differs, 3 on a CUDA error, 64 on a bad command line.
#include <climits>
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

constexpr int kMaxThreads = 1024;

// Returns, in every thread, the sum of x over the block's threads; blockDim.x is a power of
// two. Every thread of the block must call it.
__device__ unsigned block_sum(unsigned x) {
  __shared__ unsigned cache[kMaxThreads];
  int t = threadIdx.x;
  cache[t] = x;
  __syncthreads();
  for (int i = blockDim.x / 2; i != 0; i /= 2) {
    if (t < i) cache[t] += cache[t + i];
    __syncthreads();
  }
  unsigned sum = cache[0];
  __syncthreads();  // everyone has read cache[0] before the next call overwrites it
  return sum;
}

// partial has gridDim.x entries; *count is 0 at launch and is 0 again when the kernel ends
// (atomicInc wraps to 0 after handing out the last ticket). Sums are unsigned, so they wrap
// modulo 2^32 and are exact in any order.
__global__ void reduce(const unsigned *in, int n, unsigned *partial, unsigned *count,
                       unsigned *total) {
  __shared__ bool last;
  int t = threadIdx.x;
  int blocks = gridDim.x;
  unsigned sum = 0;
  for (int i = t + blockIdx.x * blockDim.x; i < n; i += blockDim.x * blocks) sum += in[i];
  sum = block_sum(sum);

  if (t == 0) {
    partial[blockIdx.x] = sum;
    // Make the partial sum visible to every block before the ticket is taken: the block that
    // draws the last ticket reads it.
    __threadfence();
    unsigned ticket = atomicInc(count, blocks - 1);
    last = ticket == unsigned(blocks - 1);
  }
  __syncthreads();

  if (last) {
    // Volatile loads: read the partial sums from memory, not from a cache line of this SM.
    const volatile unsigned *p = partial;
    sum = 0;
    for (int i = t; i < blocks; i += blockDim.x) sum += p[i];
    sum = block_sum(sum);
    if (t == 0) *total = sum;
  }
}

int main(int argc, char **argv) {
  int blocks = argc > 1 ? atoi(argv[1]) : 256;
  int threads = argc > 2 ? atoi(argv[2]) : 256;
  int n = argc > 3 ? atoi(argv[3]) : 1 << 20;
  // Reductions in one run, each from partial sums reset to 0 (so a stale one shows), each
  // result checked: the SDK sample runs its reduction 100 times in a loop too.
  int launches = argc > 4 ? atoi(argv[4]) : 1;
  // The grid-stride loop's index must not overflow an int: n + blocks * threads <= INT_MAX.
  if (argc > 5 || blocks < 1 || threads < 1 || threads > kMaxThreads || (threads & (threads - 1)) ||
      n < 1 || (long long)blocks * threads > INT_MAX - n || launches < 1 || launches > 1000000) {
    fprintf(stderr,
            "usage: red [blocks] [threads: power of two <= %d] [elements] [launches <= 10^6]\n",
            kMaxThreads);
    return 64;
  }
  // Unsigned values: the sum wraps modulo 2^32 on the GPU and on the CPU alike, so it is exact
  // in any order and the result must equal the reference exactly.
  std::vector<unsigned> in(n);
  unsigned expect = 0;
  for (int i = 0; i < n; i++) {
    in[i] = unsigned(i) * 2654435761u >> 24;  // 0..255, scrambled
    expect += in[i];
  }
  unsigned *din, *dpartial, *dcount, *dtotal;
  CHECK(cudaMalloc(&din, n * sizeof(unsigned)));
  CHECK(cudaMalloc(&dpartial, blocks * sizeof(unsigned)));
  CHECK(cudaMalloc(&dcount, sizeof(unsigned)));
  CHECK(cudaMalloc(&dtotal, launches * sizeof(unsigned)));
  CHECK(cudaMemcpy(din, in.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(dcount, 0, sizeof(unsigned)));
  CHECK(cudaMemset(dtotal, 0, launches * sizeof(unsigned)));

  // The program's own timing of its GPU work, read by `wmfix cost`: CUDA events on the default
  // stream, like the launches, from the first launch to the last.
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  CHECK(cudaEventRecord(start));
  for (int k = 0; k < launches; k++) {
    CHECK(cudaMemsetAsync(dpartial, 0, blocks * sizeof(unsigned)));
    reduce<<<blocks, threads>>>(din, n, dpartial, dcount, dtotal + k);
    CHECK(cudaGetLastError());
  }
  CHECK(cudaEventRecord(stop));
  CHECK(cudaEventSynchronize(stop));
  float gpu_ms = 0;
  CHECK(cudaEventElapsedTime(&gpu_ms, start, stop));
  printf("wmfix-time-ms: %.4f\n", gpu_ms);
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  CHECK(cudaDeviceSynchronize());
  std::vector<unsigned> got(launches);
  CHECK(cudaMemcpy(got.data(), dtotal, launches * sizeof(unsigned), cudaMemcpyDeviceToHost));

  int wrong = 0, first = -1;
  for (int k = 0; k < launches; k++) {
    if (got[k] != expect && wrong++ == 0) first = k;
  }
  bool ok = wrong == 0;
  printf("sdk-red blocks=%d threads=%d n=%d launches=%d wrong=%d cpu=%u", blocks, threads, n,
         launches, wrong, expect);
  if (!ok) printf(" first wrong: launch %d gpu=%u", first, got[first]);
  printf(" %s\n", ok ? "PASS" : "FAIL");
  CHECK(cudaFree(din));
  CHECK(cudaFree(dpartial));
  CHECK(cudaFree(dcount));
  CHECK(cudaFree(dtotal));
  return ok ? 0 : 1;
}
