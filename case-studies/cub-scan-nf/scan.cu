// cub-scan-nf: cub-scan without its fences. A single-pass inclusive prefix sum whose blocks
// pass the running total from tile to tile through a flag/value handshake in global memory
// (message passing), in the style of the chained scan of the CUB library (Sorensen &
// Donaldson, PLDI 2016, Tab. 4), written for wmfix.
// Each block takes the next tile from a global counter, scans it in shared memory, waits for
// the inclusive prefix of the tile before it, and publishes its own: value first, then flag.
// No fences (cub-scan has __threadfence() between the value store and the flag store, and
// between seeing the flag and loading the value): a block may see its predecessor's flag and
// still read a stale value, a weak-memory bug. Otherwise the program is cub-scan's.
//
// Usage: scan [blocks] [threads-per-block] [elements]. The elements are cut into one tile per
// block. Exit status 0 when every GPU element equals the CPU reference, 1 when one differs,
// 3 on a CUDA error, 64 on a bad command line.
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

// out[i] = in[0] + ... + in[i], modulo 2^32 (unsigned, so exact in any order). Tiles are handed
// out in order by *next_tile, not by blockIdx: a block only ever waits for a tile that a running
// block has already taken, so the chain cannot deadlock whatever order blocks are scheduled in.
// *next_tile, flag[] and prefix[] (gridDim.x entries each) are 0 at launch.
__global__ void scan(const unsigned *in, unsigned *out, int n, unsigned *next_tile,
                     volatile unsigned *flag, volatile unsigned *prefix) {
  __shared__ unsigned s[kMaxThreads];
  __shared__ int s_tile;
  __shared__ unsigned s_before;
  int t = threadIdx.x;
  int nt = blockDim.x;
  int tiles = gridDim.x;
  if (t == 0) s_tile = atomicAdd(next_tile, 1u);
  __syncthreads();
  int tile = s_tile;
  if (tile >= tiles) return;  // a block beyond the grid's tiles: nothing to do, no one waits

  // This tile is in[begin, end); the last tiles may be empty, they still publish.
  int per_tile = n / tiles + (n % tiles != 0);
  long long b = (long long)tile * per_tile;
  int begin = b < n ? int(b) : n;
  int end = n - begin < per_tile ? n : begin + per_tile;

  // Scan the tile blockDim.x elements at a time (Hillis-Steele in shared memory); out gets the
  // prefix within the tile, carry the tile's running total (the same in every thread).
  unsigned carry = 0;
  for (int base = begin; base < end; base += nt) {
    int i = base + t;
    s[t] = i < end ? in[i] : 0u;
    __syncthreads();
    for (int d = 1; d < nt; d *= 2) {
      unsigned x = t >= d ? s[t - d] : 0u;
      __syncthreads();
      s[t] += x;
      __syncthreads();
    }
    if (i < end) out[i] = carry + s[t];
    carry += s[nt - 1];
    __syncthreads();  // everyone has read s before the next chunk overwrites it
  }

  // Look back one tile: wait for the predecessor's inclusive prefix, then publish ours.
  if (t == 0) {
    unsigned before = 0;
    if (tile > 0) {
      while (flag[tile - 1] == 0) {
      }
      // No fence here: the load of the value may be satisfied before the flag was seen.
      before = prefix[tile - 1];
    }
    prefix[tile] = before + carry;
    // No fence here: the flag may become visible before the value it announces.
    flag[tile] = 1;
    s_before = before;
  }
  __syncthreads();
  unsigned before = s_before;
  for (int i = begin + t; i < end; i += nt) out[i] += before;
}

int main(int argc, char **argv) {
  int blocks = argc > 1 ? atoi(argv[1]) : 256;
  int threads = argc > 2 ? atoi(argv[2]) : 256;
  int n = argc > 3 ? atoi(argv[3]) : 1 << 20;
  // The tile loops' indices must not overflow an int: n + threads <= INT_MAX.
  if (argc > 4 || blocks < 1 || threads < 1 || threads > kMaxThreads || n < 1 ||
      n > INT_MAX - threads) {
    fprintf(stderr, "usage: scan [blocks] [threads <= %d] [elements]\n", kMaxThreads);
    return 64;
  }
  // Unsigned values: sums wrap modulo 2^32 on the GPU and on the CPU alike, so every prefix is
  // exact and must equal the reference exactly.
  std::vector<unsigned> in(n), expect(n), got(n);
  unsigned run = 0;
  for (int i = 0; i < n; i++) {
    in[i] = unsigned(i) * 2654435761u >> 24;  // 0..255, scrambled
    run += in[i];
    expect[i] = run;
  }
  unsigned *din, *dout, *dnext, *dflag, *dprefix;
  CHECK(cudaMalloc(&din, n * sizeof(unsigned)));
  CHECK(cudaMalloc(&dout, n * sizeof(unsigned)));
  CHECK(cudaMalloc(&dnext, sizeof(unsigned)));
  CHECK(cudaMalloc(&dflag, blocks * sizeof(unsigned)));
  CHECK(cudaMalloc(&dprefix, blocks * sizeof(unsigned)));
  CHECK(cudaMemcpy(din, in.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(dout, 0, n * sizeof(unsigned)));
  CHECK(cudaMemset(dnext, 0, sizeof(unsigned)));
  CHECK(cudaMemset(dflag, 0, blocks * sizeof(unsigned)));
  CHECK(cudaMemset(dprefix, 0, blocks * sizeof(unsigned)));

  // The program's own timing of its GPU work, read by `wmfix cost`: CUDA events on the default
  // stream, like the launches, from the first launch to the last.
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  CHECK(cudaEventRecord(start));
  scan<<<blocks, threads>>>(din, dout, n, dnext, dflag, dprefix);
  CHECK(cudaGetLastError());
  CHECK(cudaEventRecord(stop));
  CHECK(cudaEventSynchronize(stop));
  float gpu_ms = 0;
  CHECK(cudaEventElapsedTime(&gpu_ms, start, stop));
  printf("wmfix-time-ms: %.4f\n", gpu_ms);
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(got.data(), dout, n * sizeof(unsigned), cudaMemcpyDeviceToHost));

  int wrong = 0, first = -1;
  for (int i = 0; i < n; i++) {
    if (got[i] != expect[i]) {
      if (first < 0) first = i;
      wrong++;
    }
  }
  if (first >= 0)
    printf("first wrong element %d: gpu=%u cpu=%u\n", first, got[first], expect[first]);
  printf("cub-scan-nf blocks=%d threads=%d n=%d wrong=%d last: gpu=%u cpu=%u %s\n", blocks,
         threads, n, wrong, got[n - 1], expect[n - 1], wrong ? "FAIL" : "PASS");
  CHECK(cudaFree(din));
  CHECK(cudaFree(dout));
  CHECK(cudaFree(dnext));
  CHECK(cudaFree(dflag));
  CHECK(cudaFree(dprefix));
  return wrong ? 1 : 0;
}
