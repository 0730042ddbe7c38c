// ra-gemm-lock: a tiled matrix product split over K, for wmfix race (issue 46's applications).
// Each block computes one 16x16 tile of C over one slice of K (shared-memory tiles), then adds
// it into C under that tile's lock in global memory: thread 0 takes the lock by atomicCAS, the
// block adds, thread 0 releases it by a volatile store of 0, with a fence after the take and
// before the release. Built with -DRACY those fences are __threadfence_block: too small a scope
// for the blocks of the other slices, which take the same lock. Written for wmfix.
//
// Usage: gemm [size=256] [slices=4]. Exit status 0 when C equals the CPU product, 1 when not,
// 3 on a CUDA error.
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                \
  do {                                                                             \
    cudaError_t err_ = (call);                                                     \
    if (err_ != cudaSuccess) {                                                     \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err_)); \
      exit(3);                                                                     \
    }                                                                              \
  } while (0)

constexpr int kTile = 16;

__device__ void tile_fence() {
#ifdef RACY
  __threadfence_block();
#else
  __threadfence();
#endif
}

// C (n x n) += A (n x n) x B (n x n) over K slice blockIdx.z; grid (n/16, n/16, slices).
__global__ void gemm(const int *a, const int *b, int *c, int *locks, int n) {
  __shared__ int as[kTile][kTile], bs[kTile][kTile];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * kTile + ty, col = blockIdx.x * kTile + tx;
  const int span = n / gridDim.z, k0 = blockIdx.z * span;
  int sum = 0;
  for (int k = k0; k < k0 + span; k += kTile) {
    as[ty][tx] = a[row * n + k + tx];
    bs[ty][tx] = b[(k + ty) * n + col];
    __syncthreads();
    for (int j = 0; j < kTile; ++j) sum += as[ty][j] * bs[j][tx];
    __syncthreads();
  }
  int *lock = &locks[blockIdx.y * gridDim.x + blockIdx.x];
  if (tx == 0 && ty == 0) {
    while (atomicCAS(lock, 0, 1) != 0) __nanosleep(64);
    tile_fence();
  }
  __syncthreads();
  c[row * n + col] += sum;
  __syncthreads();
  if (tx == 0 && ty == 0) {
    tile_fence();
    *(volatile int *)lock = 0;
  }
}

int main(int argc, char **argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 256;
  const int slices = argc > 2 ? atoi(argv[2]) : 4;
  if (n % kTile != 0 || (n / slices) % kTile != 0) {
    fprintf(stderr, "size must be a multiple of 16, and of 16 x slices\n");
    return 3;
  }
  std::vector<int> a((size_t)n * n), b((size_t)n * n), c((size_t)n * n, 0);
  srand(3);
  for (auto &x : a) x = rand() % 16 - 8;
  for (auto &x : b) x = rand() % 16 - 8;
  int *d_a, *d_b, *d_c, *d_locks;
  const int tiles = (n / kTile) * (n / kTile);
  CHECK(cudaMalloc(&d_a, sizeof(int) * a.size()));
  CHECK(cudaMalloc(&d_b, sizeof(int) * b.size()));
  CHECK(cudaMalloc(&d_c, sizeof(int) * c.size()));
  CHECK(cudaMalloc(&d_locks, sizeof(int) * tiles));
  CHECK(cudaMemcpy(d_a, a.data(), sizeof(int) * a.size(), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_b, b.data(), sizeof(int) * b.size(), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(d_c, 0, sizeof(int) * c.size()));
  CHECK(cudaMemset(d_locks, 0, sizeof(int) * tiles));
  gemm<<<dim3(n / kTile, n / kTile, slices), dim3(kTile, kTile)>>>(d_a, d_b, d_c, d_locks, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(c.data(), d_c, sizeof(int) * c.size(), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      int want = 0;
      for (int k = 0; k < n; ++k) want += a[(size_t)i * n + k] * b[(size_t)k * n + j];
      wrong += c[(size_t)i * n + j] != want;
    }
  printf("gemm: %d x %d in %d slices, %d elements wrong\n", n, n, slices, wrong);
  return wrong == 0 ? 0 : 1;
}
