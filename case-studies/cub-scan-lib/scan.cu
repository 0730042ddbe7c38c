// cub-scan-lib: an inclusive prefix sum by CUB's own single-pass scan (cub::DeviceScan, which
// chains tiles through CUB's tile state with decoupled look-back), checked against a CPU scan.
// Written for wmfix from CUB's documentation of DeviceScan::InclusiveSum.
//
// Usage: ./scan [elements=2^22] [repeats=4]. Exit 0: every element matches; 1: a wrong
// result; 3: a CUDA error; 64: a bad command line. Prints `wmfix-time-ms: X` (kernel time).
#include <cub/device/device_scan.cuh>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                  \
  do {                                                                               \
    cudaError_t e = (call);                                                          \
    if (e != cudaSuccess) {                                                          \
      std::fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(e),        \
                   __FILE__, __LINE__);                                              \
      std::exit(3);                                                                  \
    }                                                                                \
  } while (0)

int main(int argc, char **argv) {
  long n = argc > 1 ? std::atol(argv[1]) : (1L << 22);
  int repeats = argc > 2 ? std::atoi(argv[2]) : 4;
  if (n <= 0 || n > (1L << 28) || repeats <= 0) {
    std::fprintf(stderr, "usage: %s [elements<=2^28] [repeats>0]\n", argv[0]);
    return 64;
  }
  std::vector<unsigned> in(n), out(n), want(n);
  unsigned seed = 12345, sum = 0;
  for (long i = 0; i < n; i++) {
    seed = seed * 1664525u + 1013904223u;
    in[i] = seed >> 24;  // 0..255; sums wrap modulo 2^32 on both sides
    sum += in[i];
    want[i] = sum;
  }
  unsigned *d_in, *d_out;
  CHECK(cudaMalloc(&d_in, n * sizeof(unsigned)));
  CHECK(cudaMalloc(&d_out, n * sizeof(unsigned)));
  CHECK(cudaMemcpy(d_in, in.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));
  size_t temp_bytes = 0;
  CHECK(cub::DeviceScan::InclusiveSum(nullptr, temp_bytes, d_in, d_out, (int)n));
  void *d_temp;
  CHECK(cudaMalloc(&d_temp, temp_bytes));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  long wrong = 0, first = -1;
  float total_ms = 0;
  for (int r = 0; r < repeats; r++) {
    CHECK(cudaMemset(d_out, 0, n * sizeof(unsigned)));
    CHECK(cudaEventRecord(start));
    CHECK(cub::DeviceScan::InclusiveSum(d_temp, temp_bytes, d_in, d_out, (int)n));
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    total_ms += ms;
    CHECK(cudaMemcpy(out.data(), d_out, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
    for (long i = 0; i < n; i++) {
      if (out[i] != want[i]) {
        if (first < 0) first = i;
        wrong++;
      }
    }
  }
  std::printf("wmfix-time-ms: %.3f\n", total_ms);
  if (wrong > 0) {
    std::printf("wrong: %ld elements over %d scans; first at %ld: %u, want %u\n", wrong,
                repeats, first, out[first], want[first]);
    return 1;
  }
  std::printf("ok: %ld elements, %d scans\n", n, repeats);
  return 0;
}
