// Overhead of wmfix instrumentation: each kernel exists twice, as written and as the rewriter
// would instrument it (WMFIX_KERNEL_ENTRY, wmfix_* ids, a WMFIX_FENCE after each global access).
// Both run from the same inputs, must give bit-identical results, and are timed alternately
// (CUDA events, median of 100 launches each). The first configuration, no-str- with
// WMFIX_FENCES=none, is the one that must cost only a few percent; the others are for
// information. Usage: overhead_bench [--reps N]. Exit status: 0 results identical (whatever the
// timings), 1 a result differed, 2 a CUDA error.
#define WMFIX_NUM_FENCES 8
#define WMFIX_FENCE_SCOPE 1
// The host library linked in (it is compiled at the end of this file), so that the bench,
// built with one nvcc command (scripts/gpu/evidence.sh), never runs without stress.
#define WMFIX_HOST_LINKED 1
#include "../wmfix.cuh"
#line 15

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "cuda_check.cuh"

// ---- 1. grid-stride axpy: ids read in the loop ---------------------------------------------------
__global__ void axpy_base(const float* x, float* y, float a, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    y[i] = a * x[i] + y[i];
}

__global__ void axpy_wm(const float* x, float* y, float a, size_t n) {
  WMFIX_KERNEL_ENTRY();
  for (size_t i = wmfix_blockIdx().x * (size_t)blockDim.x + wmfix_threadIdx().x; i < n;
       i += (size_t)wmfix_gridDim().x * blockDim.x) {
    y[i] = a * WMFIX_AFTER(0, x[i]) + WMFIX_AFTER(1, y[i]);
    WMFIX_FENCE(2);
  }
}

// ---- 2. one element per thread: many blocks, so the entry cost shows -----------------------------
__global__ void scale_base(const float* x, float* y, size_t n) {
  const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) y[i] = 3.0f * x[i] - y[i];
}

__global__ void scale_wm(const float* x, float* y, size_t n) {
  WMFIX_KERNEL_ENTRY();
  const size_t i = wmfix_blockIdx().x * (size_t)blockDim.x + wmfix_threadIdx().x;
  if (i < n) {
    const float xv = x[i];
    WMFIX_FENCE(3);
    const float yv = y[i];
    WMFIX_FENCE(4);
    y[i] = 3.0f * xv - yv;
    WMFIX_FENCE(5);
  }
}

// ---- 3. tiled transpose: 2-D grid and blocks, shared memory, barrier -----------------------------
constexpr int kTile = 32, kRows = 8;

__global__ void transpose_base(const float* in, float* out, int w) {
  __shared__ float tile[kTile][kTile + 1];
  int x = blockIdx.x * kTile + threadIdx.x, y = blockIdx.y * kTile + threadIdx.y;
  for (int j = 0; j < kTile; j += kRows) tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y + j) * w + x];
  __syncthreads();
  x = blockIdx.y * kTile + threadIdx.x, y = blockIdx.x * kTile + threadIdx.y;
  for (int j = 0; j < kTile; j += kRows) out[(size_t)(y + j) * w + x] = tile[threadIdx.x][threadIdx.y + j];
}

__global__ void transpose_wm(const float* in, float* out, int w) {
  WMFIX_KERNEL_ENTRY();
  __shared__ float tile[kTile][kTile + 1];
  int x = wmfix_blockIdx().x * kTile + wmfix_threadIdx().x, y = wmfix_blockIdx().y * kTile + wmfix_threadIdx().y;
  for (int j = 0; j < kTile; j += kRows) tile[wmfix_threadIdx().y + j][wmfix_threadIdx().x] = WMFIX_AFTER(6, in[(size_t)(y + j) * w + x]);
  __syncthreads();
  x = wmfix_blockIdx().y * kTile + wmfix_threadIdx().x, y = wmfix_blockIdx().x * kTile + wmfix_threadIdx().y;
  for (int j = 0; j < kTile; j += kRows) {
    out[(size_t)(y + j) * w + x] = tile[wmfix_threadIdx().x][wmfix_threadIdx().y + j];
    WMFIX_FENCE(7);
  }
}

// ---- host side -----------------------------------------------------------------------------------

struct Bench {
  const char* name;
  std::function<void(bool instrumented)> launch;  // one launch (on stream 0)
  std::function<void()> reset;                   // inputs back to their initial values
  float* result;
  size_t n;
};

static float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

static float time_one(const std::function<void()>& f, cudaEvent_t e0, cudaEvent_t e1) {
  CUDA_CHECK(cudaEventRecord(e0, 0));
  f();
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaEventRecord(e1, 0));
  CUDA_CHECK(cudaEventSynchronize(e1));
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
  return ms;
}

__global__ void fill(float* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 0x9e3779b9U ^ seed;
    h ^= h >> 15;
    h *= 0x2c1b3c6dU;
    h ^= h >> 12;
    p[i] = (float)(h & 0xffff) / 65536.0f - 0.5f;
  }
}

int main(int argc, char** argv) {
  int reps = 100;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--reps N]\n", argv[0]);
      return 2;
    }
  }
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;

  const size_t n = size_t(1) << 26;  // 256 MiB per array
  const int w = 8192;                // transpose: w x w floats = 256 MiB
  float *x, *y, *y0, *tin, *tout;
  CUDA_CHECK(cudaMalloc(&x, n * 4));
  CUDA_CHECK(cudaMalloc(&y, n * 4));
  CUDA_CHECK(cudaMalloc(&y0, n * 4));
  CUDA_CHECK(cudaMalloc(&tin, (size_t)w * w * 4));
  CUDA_CHECK(cudaMalloc(&tout, (size_t)w * w * 4));
  fill<<<1024, 256>>>(x, n, 1);
  fill<<<1024, 256>>>(y0, n, 2);
  fill<<<1024, 256>>>(tin, (size_t)w * w, 3);
  CUDA_CHECK(cudaDeviceSynchronize());
  auto reset_y = [&] { CUDA_CHECK(cudaMemcpy(y, y0, n * 4, cudaMemcpyDeviceToDevice)); };

  const dim3 gs_grid(sms * 8), gs_block(256);
  const dim3 pt_grid((unsigned)((n + 255) / 256)), pt_block(256);
  const dim3 tr_grid(w / kTile, w / kTile), tr_block(kTile, kRows);
  std::vector<Bench> benches = {
      {"axpy grid-stride", [&](bool wm) {
         if (wm) axpy_wm<<<wmfix_launch(gs_grid, 0), gs_block>>>(x, y, 0.5f, n);
         else axpy_base<<<gs_grid, gs_block>>>(x, y, 0.5f, n);
       }, reset_y, y, n},
      {"scale 1 elem/thread", [&](bool wm) {
         if (wm) scale_wm<<<wmfix_launch(pt_grid, 0), pt_block>>>(x, y, n);
         else scale_base<<<pt_grid, pt_block>>>(x, y, n);
       }, reset_y, y, n},
      {"transpose 2-D", [&](bool wm) {
         if (wm) transpose_wm<<<wmfix_launch(tr_grid, 0), tr_block>>>(tin, tout, w);
         else transpose_base<<<tr_grid, tr_block>>>(tin, tout, w);
       }, [] {}, tout, (size_t)w * w},
  };

  struct Config {
    const char* env;
    const char* fences;
    bool required;
  };
  const Config configs[] = {
      {"no-str-", "none", true},    // the requirement: within a few percent
      {"no-str-", "all", false},    // what enabled fences cost
      {"no-str+", "none", false},   // what randomised ids cost
      {"sys-str-", "none", false},  // stressing blocks (time includes them)
  };

  cudaEvent_t e0, e1;
  CUDA_CHECK(cudaEventCreate(&e0));
  CUDA_CHECK(cudaEventCreate(&e1));
  std::printf("overhead_bench on %s (%d SMs), median of %d launches each, alternating\n\n", prop.name, sms, reps);
  std::printf("%-9s %-7s %-20s %12s %12s %8s %s\n", "env", "fences", "kernel", "base ms", "wmfix ms", "ratio", "verdict");
  bool results_ok = true;
  std::vector<float> ref(n), got(n);
  for (const Config& c : configs) {
    setenv("WMFIX_ENV", c.env, 1);
    setenv("WMFIX_FENCES", c.fences, 1);
    wmfix::reset_for_tests();
    for (Bench& b : benches) {
      // Same function: bit-identical results from the same inputs.
      b.reset();
      b.launch(false);
      CUDA_CHECK(cudaDeviceSynchronize());
      CUDA_CHECK(cudaMemcpy(ref.data(), b.result, b.n * 4, cudaMemcpyDeviceToHost));
      b.reset();
      b.launch(true);
      CUDA_CHECK(cudaGetLastError());
      CUDA_CHECK(cudaDeviceSynchronize());
      CUDA_CHECK(cudaMemcpy(got.data(), b.result, b.n * 4, cudaMemcpyDeviceToHost));
      const bool same = std::memcmp(ref.data(), got.data(), b.n * 4) == 0;
      results_ok = results_ok && same;

      for (int i = 0; i < 5; ++i) b.launch(false), b.launch(true);  // warm-up
      std::vector<float> tb, tw;
      for (int i = 0; i < reps; ++i) {
        tb.push_back(time_one([&] { b.launch(false); }, e0, e1));
        tw.push_back(time_one([&] { b.launch(true); }, e0, e1));
      }
      const float mb = median(tb), mw = median(tw), ratio = mw / mb;
      std::string verdict = same ? "" : "RESULT DIFFERS ";
      if (c.required) verdict += ratio <= 1.05f ? "ok (<= 5%)" : "ABOVE 5%";
      std::printf("%-9s %-7s %-20s %12.4f %12.4f %8.3f %s\n", c.env, c.fences, b.name, mb, mw, ratio, verdict.c_str());
    }
  }

  // Host cost of wmfix_launch in no-str- (no kernel launched).
  setenv("WMFIX_ENV", "no-str-", 1);
  wmfix::reset_for_tests();
  { dim3 g = wmfix_launch(gs_grid, 0); (void)g; }
  const int calls = 200000;
  const auto t0 = std::chrono::steady_clock::now();
  unsigned sink = 0;
  for (int i = 0; i < calls; ++i) {
    dim3 g = wmfix_launch(gs_grid, 0);
    sink += g.x;
  }
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / calls;
  std::printf("\nhost: wmfix_launch in no-str- costs %.0f ns per call (%u)\n", ns, sink & 1);
  std::printf("overhead_bench: results %s\n", results_ok ? "identical (PASS)" : "DIFFER (FAIL)");
  return results_ok ? 0 : 1;
}

// The host library (what `wmfix build` compiles into libwmfix_host.so), linked in.
#include "../wmfix_host.cpp"
