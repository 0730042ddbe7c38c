// Launches a kernel defined in another TU (kern.cu) through wmfix_launch; this TU has no kernel
// of its own. Checks, under every environment, that the launch configuration reached the
// defining TU (virtual ids a bijection, original gridDim, stress blocks in range), with launches
// alternating between two streams without synchronising in between. With -rdc it also checks
// that a device function of a third TU sees the kernel's virtual ids.
// Exit status: 0 pass, 1 fail, 2 CUDA error.
#define WMFIX_NUM_FENCES 3
#define WMFIX_FENCE_SCOPE 1
#include "../../wmfix.cuh"
#line 1
#include "two_tu.cuh"

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../cuda_check.cuh"

int main() {
  const char* envs[] = {"no-str-",   "no-str+",    "sys-str-",   "sys-str+", "rand-str-",
                        "rand-str+", "cache-str-", "cache-str+", "aim-str-", "aim-str+"};
  const dim3 grid(7, 3), block(40, 2);  // 80 threads: two full warps and a partial one
  const unsigned n = 7 * 3 * 80, batch = 16, rounds = 10;
  unsigned *slots, *errors;
  CUDA_CHECK(cudaMalloc(&slots, batch * n * 4));
  CUDA_CHECK(cudaMalloc(&errors, batch * 4 * 4));
  cudaStream_t streams[2];
  CUDA_CHECK(cudaStreamCreateWithFlags(&streams[0], cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithFlags(&streams[1], cudaStreamNonBlocking));
  bool ok = true;
#ifdef __CUDACC_RDC__
  const char* mode = "-rdc=true";
#else
  const char* mode = "-rdc=false";
#endif
  std::vector<unsigned> h_slots(batch * n), h_err(batch * 4);
  for (const char* env : envs) {
    setenv("WMFIX_ENV", env, 1);
    wmfix::reset_for_tests();
    const bool stress = env[0] != 'n';
    unsigned bad = 0, smin = ~0U, smax = 0;
    for (unsigned r = 0; r < rounds; ++r) {
      CUDA_CHECK(cudaMemset(slots, 0, batch * n * 4));
      CUDA_CHECK(cudaMemset(errors, 0, batch * 4 * 4));
      for (unsigned i = 0; i < batch; ++i) {  // no synchronisation between these launches
        cudaStream_t st = streams[i % 2];
        remote_kernel<<<wmfix_launch(grid, st), block, 0, st>>>(slots + i * n, errors + i * 4);
        CUDA_CHECK(cudaGetLastError());
        const wmfix::LaunchInfo li = wmfix::last_launch();
        const unsigned s = li.remapped ? li.stress_blocks : 0;
        smin = s < smin ? s : smin;
        smax = s > smax ? s : smax;
      }
      CUDA_CHECK(cudaDeviceSynchronize());
      CUDA_CHECK(cudaMemcpy(h_slots.data(), slots, batch * n * 4, cudaMemcpyDeviceToHost));
      CUDA_CHECK(cudaMemcpy(h_err.data(), errors, batch * 4 * 4, cudaMemcpyDeviceToHost));
      for (unsigned x : h_slots) bad += x != 1;
      for (unsigned x : h_err) bad += x;
    }
    // 21 application blocks: 15%..50% is 4..10 stressing blocks.
    const bool stress_ok = stress ? (smin >= 4 && smax <= 10) : smax == 0;
    std::printf("two_tu %-10s %-10s %4u launches, bad slots+errors %u, stress blocks %u..%u: %s\n", mode, env,
                rounds * batch, bad, smin, smax, bad == 0 && stress_ok ? "PASS" : "FAIL");
    ok = ok && bad == 0 && stress_ok;
  }
  std::printf("two_tu %s: %s\n", mode, ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
