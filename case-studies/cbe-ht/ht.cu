// cbe-ht: concurrent insertion into a hash table whose buckets are linked lists, each bucket
// protected by its own spin lock, in the style of "CUDA by Example" (appendix A1.3) and Tab. 4
// of Sorensen & Donaldson, PLDI 2016. Written for wmfix. The lock has no fences, so the new
// bucket head written in the critical section may become visible after the lock is released
// (or the next holder may read a stale head): an insertion is overwritten and lost, a
// weak-memory bug.
//
// Usage: ht [blocks] [threads-per-block] [elements] [buckets]. Exit status 0 when every key is
// in the final table exactly once and in its bucket, 1 otherwise, 3 on a CUDA error, 64 on a
// bad command line.
#include <climits>
#include <cstdint>
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

// An entry of the table; entries come from a pool preallocated on the device, one per element.
struct Entry {
  unsigned int key;
  int value;    // the element's index, which is also the entry's index in the pool
  Entry *next;  // next entry of the bucket's list, nullptr at the end
};

// The head of a bucket's list. Each head has a 128-byte line of its own (README: why).
struct alignas(128) Bucket {
  Entry *head;
};

__host__ __device__ int bucket_of(unsigned int key, int buckets) {
  return int(key % unsigned(buckets));
}

// The lock of "CUDA by Example": atomicCAS takes it, atomicExch releases it; no fences.
__device__ bool try_lock(int *mutex) {
  return atomicCAS(mutex, 0, 1) == 0;
}

__device__ void unlock(int *mutex) {
  atomicExch(mutex, 0);
}

// Element i (grid-stride) goes into pool entry i, which is linked at the head of its bucket
// under the bucket's lock.
__global__ void add_to_table(const unsigned int *keys, int n, Bucket *buckets, int nbuckets,
                             Entry *pool, int *locks) {
  int tid = threadIdx.x + blockIdx.x * blockDim.x;
  int stride = blockDim.x * gridDim.x;
  int lane = threadIdx.x % 32;
  while (tid < n) {
    unsigned int key = keys[tid];
    int b = bucket_of(key, nbuckets);
    Entry *entry = &pool[tid];
    entry->key = key;
    entry->value = tid;
    // The lanes of a warp take turns, as in the book, so that two lanes of one warp never spin
    // on each other. A lane leaves the retry loop only once it has inserted its entry, and it
    // releases the lock inside the branch that took it: safe under independent thread
    // scheduling as well.
    for (int i = 0; i < 32; i++) {
      if (lane == i) {
        bool inserted = false;
        while (!inserted) {
          if (try_lock(&locks[b])) {
            entry->next = buckets[b].head;
            buckets[b].head = entry;
            unlock(&locks[b]);
            inserted = true;
          }
        }
      }
    }
    tid += stride;
  }
}

int main(int argc, char **argv) {
  int blocks = argc > 1 ? atoi(argv[1]) : 128;
  int threads = argc > 2 ? atoi(argv[2]) : 256;
  long long grid_threads = (long long)blocks * threads;
  int n = argc > 3 ? atoi(argv[3]) : int(grid_threads > INT_MAX ? 0 : grid_threads);
  int nbuckets = argc > 4 ? atoi(argv[4]) : 1024;
  if (blocks < 1 || threads < 1 || threads > kMaxThreads || n < 1 || nbuckets < 1 ||
      n + grid_threads > INT_MAX) {
    fprintf(stderr,
            "usage: ht [blocks=128] [threads<=%d, default 256] [elements=blocks*threads] "
            "[buckets=1024]\n",
            kMaxThreads);
    return 64;
  }
  // Distinct keys: i * 2654435761 is a bijection modulo 2^32. With a power-of-two bucket count
  // the bucket of element i is (2654435761 * i) mod buckets, a bijection of i mod buckets, so
  // the elements of one block (consecutive indices) land in distinct buckets when
  // threads <= buckets.
  std::vector<unsigned int> keys(n);
  for (int i = 0; i < n; i++) keys[i] = unsigned(i) * 2654435761u;

  unsigned int *dkeys;
  Bucket *dbuckets;
  Entry *dpool;
  int *locks;
  CHECK(cudaMalloc(&dkeys, n * sizeof(unsigned int)));
  CHECK(cudaMalloc(&dbuckets, nbuckets * sizeof(Bucket)));
  CHECK(cudaMalloc(&dpool, n * sizeof(Entry)));
  CHECK(cudaMalloc(&locks, nbuckets * sizeof(int)));
  CHECK(cudaMemcpy(dkeys, keys.data(), n * sizeof(unsigned int), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(dbuckets, 0, nbuckets * sizeof(Bucket)));  // every head nullptr
  CHECK(cudaMemset(dpool, 0, n * sizeof(Entry)));
  CHECK(cudaMemset(locks, 0, nbuckets * sizeof(int)));

  // The program's own timing of its GPU work, read by `wmfix cost`: CUDA events on the default
  // stream, like the launches, from the first launch to the last.
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  CHECK(cudaEventRecord(start));
  add_to_table<<<blocks, threads>>>(dkeys, n, dbuckets, nbuckets, dpool, locks);
  CHECK(cudaGetLastError());
  CHECK(cudaEventRecord(stop));
  CHECK(cudaEventSynchronize(stop));
  float gpu_ms = 0;
  CHECK(cudaEventElapsedTime(&gpu_ms, start, stop));
  printf("wmfix-time-ms: %.4f\n", gpu_ms);
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  std::vector<Bucket> buckets(nbuckets);
  std::vector<Entry> pool(n);
  CHECK(cudaMemcpy(buckets.data(), dbuckets, nbuckets * sizeof(Bucket), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(pool.data(), dpool, n * sizeof(Entry), cudaMemcpyDeviceToHost));

  // Walk every list. Device pointers become pool indices; a pointer outside the pool or a list
  // longer than the pool (a cycle) is "bad". Each element must be found exactly once, in the
  // bucket of its key, with its key and value.
  std::vector<int> seen(n, 0);
  long long found = 0, misplaced = 0, bad = 0;
  uintptr_t base = uintptr_t(dpool);
  for (int b = 0; b < nbuckets; b++) {
    long long steps = 0;
    for (Entry *p = buckets[b].head; p != nullptr; steps++) {
      uintptr_t at = uintptr_t(p);
      if (steps >= n || at < base || (at - base) % sizeof(Entry) != 0 ||
          (at - base) / sizeof(Entry) >= size_t(n)) {
        bad++;
        break;
      }
      size_t i = (at - base) / sizeof(Entry);
      const Entry &e = pool[i];
      if (e.key != keys[i] || e.value != int(i) || bucket_of(e.key, nbuckets) != b) misplaced++;
      seen[i]++;
      found++;
      p = e.next;
    }
  }
  long long missing = 0, duplicated = 0;
  for (int i = 0; i < n; i++) {
    if (seen[i] == 0) missing++;
    if (seen[i] > 1) duplicated++;
  }
  bool ok = found == n && missing == 0 && duplicated == 0 && misplaced == 0 && bad == 0;
  printf("cbe-ht blocks=%d threads=%d n=%d buckets=%d found=%lld missing=%lld duplicated=%lld "
         "misplaced=%lld bad=%lld %s\n",
         blocks, threads, n, nbuckets, found, missing, duplicated, misplaced, bad,
         ok ? "PASS" : "FAIL");
  CHECK(cudaFree(dkeys));
  CHECK(cudaFree(dbuckets));
  CHECK(cudaFree(dpool));
  CHECK(cudaFree(locks));
  return ok ? 0 : 1;
}
