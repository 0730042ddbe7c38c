// cub-scan-lib-nf: CUB's own single-pass scan (cub::DeviceScan::InclusiveScan) over a value type
// CUB cannot pack with its status into one word, so its tile state keeps status and aggregate
// apart and orders them with a release: that release is removed from the header prepare.sh
// copies (nf-include/, found first on the include path). Checked against a CPU scan.
// Written for wmfix from CUB's documentation of DeviceScan::InclusiveScan.
//
// Usage: ./scan [elements=2^22] [repeats=4]. Exit 0: every element matches; 1: a wrong
// result; 3: a CUDA error; 64: a bad command line. Prints `wmfix-time-ms: X` (kernel time).
#include <cub/device/device_scan.cuh>
#include <cstdio>
#include <cstdlib>
#include <vector>

#ifndef WMFIX_CUB_SCAN_LIB_NF
#error "nf-include/ is missing: run prepare.sh in case-studies/cub-scan-lib-nf first"
#endif

#define CHECK(call)                                                                  \
  do {                                                                               \
    cudaError_t e = (call);                                                          \
    if (e != cudaSuccess) {                                                          \
      std::fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(e),        \
                   __FILE__, __LINE__);                                              \
      std::exit(3);                                                                  \
    }                                                                                \
  } while (0)

// A struct is not one of CUB's primitive types: ScanTileState<Sum, false>.
struct Sum {
  unsigned v;
};

struct Add {
  __host__ __device__ Sum operator()(const Sum &a, const Sum &b) const { return Sum{a.v + b.v}; }
};

int main(int argc, char **argv) {
  long n = argc > 1 ? std::atol(argv[1]) : (1L << 22);
  int repeats = argc > 2 ? std::atoi(argv[2]) : 4;
  if (n <= 0 || n > (1L << 28) || repeats <= 0) {
    std::fprintf(stderr, "usage: %s [elements<=2^28] [repeats>0]\n", argv[0]);
    return 64;
  }
  std::vector<Sum> in(n), out(n), want(n);
  Sum *d_in, *d_out;
  CHECK(cudaMalloc(&d_in, n * sizeof(Sum)));
  CHECK(cudaMalloc(&d_out, n * sizeof(Sum)));
  size_t temp_bytes = 0;
  CHECK(cub::DeviceScan::InclusiveScan(nullptr, temp_bytes, d_in, d_out, Add{}, (int)n));
  void *d_temp;
  CHECK(cudaMalloc(&d_temp, temp_bytes));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  long wrong = 0, first = -1;
  int first_repeat = -1;
  float total_ms = 0;
  unsigned seed = 12345;
  for (int r = 0; r < repeats; r++) {
    // New inputs each scan: a tile aggregate left in the temporary storage by the scan before
    // is then a wrong value, not the same one.
    unsigned sum = 0;
    for (long i = 0; i < n; i++) {
      seed = seed * 1664525u + 1013904223u;
      in[i].v = seed >> 24;  // 0..255; sums wrap modulo 2^32 on both sides
      sum += in[i].v;
      want[i].v = sum;
    }
    CHECK(cudaMemcpy(d_in, in.data(), n * sizeof(Sum), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(d_out, 0, n * sizeof(Sum)));
    CHECK(cudaEventRecord(start));
    CHECK(cub::DeviceScan::InclusiveScan(d_temp, temp_bytes, d_in, d_out, Add{}, (int)n));
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    total_ms += ms;
    CHECK(cudaMemcpy(out.data(), d_out, n * sizeof(Sum), cudaMemcpyDeviceToHost));
    for (long i = 0; i < n; i++) {
      if (out[i].v != want[i].v) {
        if (first < 0) {
          first = i;
          first_repeat = r;
        }
        wrong++;
      }
    }
    if (first_repeat == r)
      std::printf("scan %d: first wrong at %ld: %u, want %u\n", r, first, out[first].v,
                  want[first].v);
  }
  std::printf("wmfix-time-ms: %.3f\n", total_ms);
  if (wrong > 0) {
    std::printf("wrong: %ld elements over %d scans\n", wrong, repeats);
    return 1;
  }
  std::printf("ok: %ld elements, %d scans\n", n, repeats);
  return 0;
}
