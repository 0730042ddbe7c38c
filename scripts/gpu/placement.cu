// placement: where the block scheduler puts a grid of ht's shape, to check the premise of ht's
// native pass (README, "Native failures"): no SM may hold two blocks that share buckets. Not part
// of the study (wmfix.toml instruments and runs ht.cu only).
//
// Usage: placement [blocks=128] [threads=256] [buckets=1024] [launches=20]. Prints the device's
// SM count, then per launch the SMs used, the most blocks on one SM and the pairs of blocks that
// share buckets and ran on one SM. Exit status 0, 2 on a CUDA error, 64 on a bad command line.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../../runtime-cu/tests/cuda_check.cuh"
#define CHECK CUDA_CHECK

// Thread 0 records its SM; every block stays about 100 us, so that all are resident together (as
// ht's blocks are while they contend for the locks).
__global__ void where(unsigned *sm) {
  if (threadIdx.x == 0) {
    unsigned id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    sm[blockIdx.x] = id;
  }
  long long t0 = clock64();
  while (clock64() - t0 < 200000) {
  }
}

int main(int argc, char **argv) {
  int blocks = argc > 1 ? atoi(argv[1]) : 128;
  int threads = argc > 2 ? atoi(argv[2]) : 256;
  int buckets = argc > 3 ? atoi(argv[3]) : 1024;
  int launches = argc > 4 ? atoi(argv[4]) : 20;
  if (blocks < 1 || threads < 1 || threads > 1024 || buckets < 1 || launches < 1) {
    fprintf(stderr, "usage: placement [blocks] [threads<=1024] [buckets] [launches]\n");
    return 64;
  }
  int dev, sms;
  cudaDeviceProp prop;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaGetDeviceProperties(&prop, dev));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  printf("device %s, %d SMs; grid %d x %d, %d buckets\n", prop.name, sms, blocks, threads, buckets);
  unsigned *dsm;
  CHECK(cudaMalloc(&dsm, blocks * sizeof(unsigned)));
  std::vector<unsigned> sm(blocks);
  long long bad_launches = 0;
  for (int l = 0; l < launches; l++) {
    where<<<blocks, threads>>>(dsm);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(sm.data(), dsm, blocks * sizeof(unsigned), cudaMemcpyDeviceToHost));
    std::vector<int> per_sm(1024, 0);
    int used = 0, most = 0;
    for (int b = 0; b < blocks; b++) {
      int &c = per_sm[sm[b] % 1024];
      if (c++ == 0) used++;
      if (c > most) most = c;
    }
    // Blocks b < c share buckets when their element ranges overlap modulo the bucket count
    // (ht's bucket of element i is a bijection of i mod buckets for a power-of-two count).
    long long sharing = 0;
    for (int b = 0; b < blocks; b++)
      for (int c = b + 1; c < blocks; c++) {
        if (sm[b] != sm[c]) continue;
        long long d = ((long long)(c - b) * threads) % buckets;
        if (threads >= buckets || d < threads || d > buckets - threads) {
          if (sharing < 4) printf("  launch %d: blocks %d and %d share buckets on SM %u\n", l, b, c, sm[b]);
          sharing++;
        }
      }
    if (sharing > 0) bad_launches++;
    printf("launch %d: %d SMs used, at most %d blocks on one SM, %lld bucket-sharing pairs on one SM\n",
           l, used, most, sharing);
  }
  printf("launches with bucket-sharing blocks on one SM: %lld of %d\n", bad_launches, launches);
  CHECK(cudaFree(dsm));
  return 0;
}
