// cbe-dot: a dot product whose blocks add their partial sums into one global value under a
// spin lock, in the style of "CUDA by Example" (appendix A1.2) and Fig. 1 of Sorensen &
// Donaldson, PLDI 2016. Written for wmfix; the lock has no fences, so the update of the sum in
// the critical section may become visible after the lock is released: a weak-memory bug.
//
// Usage: dot [blocks] [threads-per-block] [elements]. Exit status 0 when the GPU result equals
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

constexpr int kMaxThreads = 1024;

__device__ void lock(int *mutex) {
  while (atomicCAS(mutex, 0, 1) != 0);
}

__device__ void unlock(int *mutex) {
  atomicExch(mutex, 0);
}

__global__ void dot(int *mutex, const float *a, const float *b, float *c, int n) {
  __shared__ float cache[kMaxThreads];
  int tid = threadIdx.x + blockIdx.x * blockDim.x;
  int cacheIndex = threadIdx.x;
  float temp = 0;
  while (tid < n) {
    temp += a[tid] * b[tid];
    tid += blockDim.x * gridDim.x;
  }
  cache[cacheIndex] = temp;
  __syncthreads();

  // Tree reduction in shared memory; blockDim.x is a power of two.
  for (int i = blockDim.x / 2; i != 0; i /= 2) {
    if (cacheIndex < i) cache[cacheIndex] += cache[cacheIndex + i];
    __syncthreads();
  }

  if (cacheIndex == 0) {
    lock(mutex);
    *c += cache[0];
    unlock(mutex);
  }
}

int main(int argc, char **argv) {
  int blocks = argc > 1 ? atoi(argv[1]) : 256;
  int threads = argc > 2 ? atoi(argv[2]) : 256;
  int n = argc > 3 ? atoi(argv[3]) : 1 << 20;
  if (blocks < 1 || threads < 1 || threads > kMaxThreads || (threads & (threads - 1)) || n < 1) {
    fprintf(stderr, "usage: dot [blocks] [threads: power of two <= %d] [elements]\n", kMaxThreads);
    return 64;
  }
  // Small integers: every partial sum is an integer below 2^24, so float addition is exact
  // in any order and the result must equal the reference exactly.
  std::vector<float> a(n), b(n);
  double expect = 0;
  for (int i = 0; i < n; i++) {
    a[i] = float(i % 4);
    b[i] = float(i % 3);
    expect += double(a[i]) * b[i];
  }
  if (expect >= (1 << 24)) {
    fprintf(stderr, "too many elements for an exact float sum\n");
    return 64;
  }
  float *da, *db, *dc;
  int *mutex;
  CHECK(cudaMalloc(&da, n * sizeof(float)));
  CHECK(cudaMalloc(&db, n * sizeof(float)));
  CHECK(cudaMalloc(&dc, sizeof(float)));
  CHECK(cudaMalloc(&mutex, sizeof(int)));
  CHECK(cudaMemcpy(da, a.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, b.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(dc, 0, sizeof(float)));
  CHECK(cudaMemset(mutex, 0, sizeof(int)));

  // The program's own timing of its GPU work, read by `wmfix cost`: CUDA events on the default
  // stream, like the launches, from the first launch to the last.
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  CHECK(cudaEventRecord(start));
  dot<<<blocks, threads>>>(mutex, da, db, dc, n);
  CHECK(cudaGetLastError());
  CHECK(cudaEventRecord(stop));
  CHECK(cudaEventSynchronize(stop));
  float gpu_ms = 0;
  CHECK(cudaEventElapsedTime(&gpu_ms, start, stop));
  printf("wmfix-time-ms: %.4f\n", gpu_ms);
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  float got = 0;
  CHECK(cudaMemcpy(&got, dc, sizeof(float), cudaMemcpyDeviceToHost));

  bool ok = double(got) == expect;
  printf("cbe-dot blocks=%d threads=%d n=%d gpu=%.1f cpu=%.1f %s\n", blocks, threads, n, got, expect,
         ok ? "PASS" : "FAIL");
  CHECK(cudaFree(da));
  CHECK(cudaFree(db));
  CHECK(cudaFree(dc));
  CHECK(cudaFree(mutex));
  return ok ? 0 : 1;
}
