// Where a short CUDA process spends its start (issue 29): the driver's init (the device count),
// the primary context, the first kernel (module load), each timed with steady_clock from process start, one
// line a process. Run many at once to see which phase the processes wait for each other in.
#include <chrono>
#include <cstdio>
#include <cuda_runtime.h>

__global__ void touch(int* p) { if (p) *p = 1; }

int main() {
  using clk = std::chrono::steady_clock;
  const auto t0 = clk::now();
  auto ms = [&] { return std::chrono::duration<double, std::milli>(clk::now() - t0).count(); };
  int n = 0;
  cudaGetDeviceCount(&n);  // the driver's init, no context yet
  const double init = ms();
  cudaFree(0);
  const double ctx = ms();
  touch<<<1, 1>>>(nullptr);
  cudaDeviceSynchronize();
  const double kernel = ms();
  printf("init %.1f ms, context %.1f ms, first kernel %.1f ms, total %.1f ms\n", init, ctx - init, kernel - ctx, kernel);
  return 0;
}
