// ct-octree: octree partitioning of particles driven by work-stealing deques, after Cederman and
// Tsigas ("On dynamic load balancing on graphics processors", GH 2008; GPU Gems 3 ch. 37) and
// Tab. 4 of Sorensen & Donaldson, PLDI 2016. Written for wmfix from the paper's description.
//
// Every block owns a non-blocking deque in global memory (Arora, Blumofe and Plaxton's deque):
// its owner pushes and pops tasks at the tail, thieves take them from the head with a CAS on a
// 64-bit (tag, top) word. A task partitions a range of particles of one octree node into its 8
// octants (the whole block cooperates); children with more than `threshold` particles become new
// tasks pushed on the block's own deque, the others become leaves. A global counter of outstanding
// tasks ends the run. There are no fences: a thief may see the new tail before the task it
// guards, or the partitioned particles after the task that names them, and the owner's pop may
// race with a steal on the last task (a store-load pattern): weak-memory bugs. Tasks and
// particles are loaded with __ldcg (cached in L2 only, as plain loads were on the paper's Kepler
// and Maxwell GPUs), so that stale L1 lines play no part.
//
// Usage: octree [particles] [blocks] [threads-per-block] [threshold]. Exit status 0 when every
// particle is in exactly one leaf whose box contains it, 1 when not, 3 on a CUDA error, 64 on a
// bad command line.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
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
constexpr int kMaxDepth = 16;  // a node at this depth is a leaf, however many particles it has
// A block gives up after this many of its SM's cycles (about a second): a lost task or a broken
// deque then makes the post-condition fail instead of hanging the program.
constexpr long long kGiveUpCycles = 2000000000LL;

// Bits of *status (0 = all well).
constexpr int kGaveUp = 1;          // a block ran out of time
constexpr int kDequeOverflow = 2;   // a push found its deque full (never in a correct run)
constexpr int kLeafOverflow = 4;    // more leaves than particles
constexpr int kBadTask = 8;         // a popped or stolen task had impossible fields

// A task: partition particles [start, start + count) of a node at `depth` whose box is the cube
// of centre (cx, cy, cz) and half-size h. Its particles are in buffer depth % 2; the partition
// writes them, grouped by octant, to the same range of the other buffer.
struct Task {
  int4 range;  // start, count, depth, unused
  float4 box;  // cx, cy, cz, h
};

// A leaf: particles [start, start + count) of buffer `buf`, inside the cube (cx, cy, cz, h).
struct Leaf {
  int start, count, depth, buf;
  float cx, cy, cz, h;
};

struct Octree {
  // Deque of block b: slots [b * cap, (b + 1) * cap) of q_range and q_box, tail[b] (the next free
  // slot, written by the owner only) and head[b] = (tag << 32) | top (the oldest task; the tag
  // changes at every reset of an emptied deque, so a thief's CAS cannot succeed across a reset).
  int4 *q_range;
  float4 *q_box;
  volatile int *tail;
  unsigned long long *head;
  int cap;
  float4 *buf0, *buf1;  // particles: x, y, z and the particle's id (as int bits in w)
  int n, threshold;
  Leaf *leaves;
  int *leaf_count;
  volatile int *pending;  // tasks pushed (or, for the root, planted) and not yet finished
  int *status;
  int *stats;  // [0] tasks run, [1] tasks stolen
};

__device__ unsigned long long load_head(unsigned long long *head) {
  return *(volatile unsigned long long *)head;
}

// Owner only. Returns false when the deque is full.
__device__ bool dq_push(const Octree &o, int b, const Task &t) {
  int tl = o.tail[b];
  if (tl >= o.cap) return false;
  __stcg(&o.q_range[b * o.cap + tl], t.range);
  __stcg(&o.q_box[b * o.cap + tl], t.box);
  o.tail[b] = tl + 1;
  return true;
}

// Owner only: the newest task. If it is the last one, the owner races with thieves for it
// through the CAS on head; either way the emptied deque is reset (tail 0, top 0, new tag).
__device__ bool dq_pop(const Octree &o, int b, Task &t) {
  int tl = o.tail[b];
  if (tl == 0) return false;
  tl = tl - 1;
  o.tail[b] = tl;
  t.range = __ldcg(&o.q_range[b * o.cap + tl]);
  t.box = __ldcg(&o.q_box[b * o.cap + tl]);
  unsigned long long old = load_head(&o.head[b]);
  int top = (int)(unsigned)(old & 0xffffffffULL);
  if (tl > top) return true;
  o.tail[b] = 0;
  unsigned long long reset = ((old >> 32) + 1) << 32;
  if (tl == top && atomicCAS(&o.head[b], old, reset) == old) return true;
  atomicExch(&o.head[b], reset);
  return false;
}

// Thief: the oldest task of deque v. Reads head, then tail, then the task, then claims it with a
// CAS that moves top on (the tag stays).
__device__ bool dq_steal(const Octree &o, int v, Task &t) {
  unsigned long long old = load_head(&o.head[v]);
  int top = (int)(unsigned)(old & 0xffffffffULL);
  int tl = o.tail[v];
  if (tl <= top) return false;
  t.range = __ldcg(&o.q_range[v * o.cap + top]);
  t.box = __ldcg(&o.q_box[v * o.cap + top]);
  return atomicCAS(&o.head[v], old, old + 1) == old;
}

__device__ bool task_ok(const Octree &o, const Task &t) {
  return t.range.x >= 0 && t.range.y > 0 && t.range.x <= o.n - t.range.y && t.range.z >= 0 &&
         t.range.z < kMaxDepth && t.box.w > 0.0f;
}

__device__ int octant(float4 p, float4 box) {
  return (p.x >= box.x ? 1 : 0) | (p.y >= box.y ? 2 : 0) | (p.z >= box.z ? 4 : 0);
}

__device__ float4 child_box(float4 box, int k) {
  float h = box.w * 0.5f;
  return make_float4(box.x + ((k & 1) ? h : -h), box.y + ((k & 2) ? h : -h),
                     box.z + ((k & 4) ? h : -h), h);
}

__global__ void build_octree(Octree o) {
  __shared__ Task s_task;
  __shared__ int s_state;  // 0 = nothing to do this round, 1 = s_task to run, 2 = stop
  __shared__ int s_cnt[8], s_off[8], s_cur[8];
  const int b = blockIdx.x;
  const int nblocks = gridDim.x;
  unsigned rng = 2654435761u * (unsigned)(b + 1);
  long long t0 = clock64();
  for (;;) {
    if (threadIdx.x == 0) {
      Task t = {};
      int state = 0;
      if (dq_pop(o, b, t)) {
        state = 1;
      } else if (nblocks > 1) {
        rng = rng * 1664525u + 1013904223u;
        int first = (int)((rng >> 8) % (unsigned)nblocks);
        for (int k = 0; k < nblocks && state == 0; k++) {
          int v = (first + k) % nblocks;
          if (v != b && dq_steal(o, v, t)) {
            state = 1;
            atomicAdd(&o.stats[1], 1);
          }
        }
      }
      if (state == 1 && !task_ok(o, t)) {  // garbage read from a deque slot: drop it
        atomicOr(o.status, kBadTask);
        atomicSub((int *)o.pending, 1);
        state = 0;
      }
      if (state == 0 && *o.pending <= 0) state = 2;
      if (state != 2 && clock64() - t0 > kGiveUpCycles) {
        atomicOr(o.status, kGaveUp);
        state = 2;
      }
      if (state == 0) __nanosleep(256);
      s_task = t;
      s_state = state;
    }
    __syncthreads();
    const int state = s_state;
    if (state == 2) break;
    if (state == 1) {
      const Task t = s_task;
      const float4 *src = (t.range.z & 1) ? o.buf1 : o.buf0;
      float4 *dst = (t.range.z & 1) ? o.buf0 : o.buf1;
      const int start = t.range.x, count = t.range.y;
      if (threadIdx.x < 8) s_cnt[threadIdx.x] = 0;
      __syncthreads();
      for (int i = threadIdx.x; i < count; i += blockDim.x) {
        float4 p = __ldcg(&src[start + i]);
        atomicAdd(&s_cnt[octant(p, t.box)], 1);
      }
      __syncthreads();
      if (threadIdx.x == 0) {
        int off = 0;
        for (int k = 0; k < 8; k++) {
          s_off[k] = off;
          s_cur[k] = off;
          off += s_cnt[k];
        }
      }
      __syncthreads();
      for (int i = threadIdx.x; i < count; i += blockDim.x) {
        float4 p = __ldcg(&src[start + i]);
        int pos = atomicAdd(&s_cur[octant(p, t.box)], 1);
        dst[start + pos] = p;
      }
      __syncthreads();
      // Thread 0 makes the children. The pending counter grows by the new tasks before the
      // finished task is taken off it, so it cannot reach 0 while work is left.
      if (threadIdx.x == 0) {
        const int depth = t.range.z + 1;
        int ntasks = 0;
        for (int k = 0; k < 8; k++) {
          if (s_cnt[k] > o.threshold && depth < kMaxDepth) ntasks++;
        }
        if (ntasks > 0) atomicAdd((int *)o.pending, ntasks);
        for (int k = 0; k < 8; k++) {
          const int cnt = s_cnt[k];
          if (cnt == 0) continue;
          const float4 box = child_box(t.box, k);
          const int cstart = start + s_off[k];
          if (cnt > o.threshold && depth < kMaxDepth) {
            Task c;
            c.range = make_int4(cstart, cnt, depth, 0);
            c.box = box;
            if (!dq_push(o, b, c)) {
              atomicOr(o.status, kDequeOverflow);
              atomicSub((int *)o.pending, 1);
            }
          } else {
            const int idx = atomicAdd(o.leaf_count, 1);
            if (idx < o.n) {
              Leaf leaf;
              leaf.start = cstart;
              leaf.count = cnt;
              leaf.depth = depth;
              leaf.buf = depth & 1;
              leaf.cx = box.x;
              leaf.cy = box.y;
              leaf.cz = box.z;
              leaf.h = box.w;
              o.leaves[idx] = leaf;
            } else {
              atomicOr(o.status, kLeafOverflow);
            }
          }
        }
        atomicSub((int *)o.pending, 1);
        atomicAdd(&o.stats[0], 1);
      }
    }
    __syncthreads();  // s_task and s_state are rewritten at the top of the loop
  }
}

// Upper bound on the number of tasks of a correct run: the tasks of one depth are nodes with
// more than `threshold` particles each and disjoint ranges, and there are at most 8^depth nodes.
static long long task_bound(int n, int threshold) {
  long long total = 0, level = 1;
  for (int d = 0; d < kMaxDepth; d++) {
    long long byCount = n / (threshold + 1);
    total += level < byCount ? level : byCount;
    if (level < (1LL << 40)) level *= 8;
  }
  return total < 1 ? 1 : total;
}

struct Lcg {
  uint64_t s;
  // A multiple of 2^-24 in [0, 1).
  float next() {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return float((s >> 40) & 0xffffff) / 16777216.0f;
  }
};

// One build of the octree from a fresh state (poisoned slots and buffers, the root planted in
// deque 0) and its post-condition; `line` gets what it found, ending PASS or FAIL.
static bool build_and_check(Octree &o, int *tail, int *counters, const std::vector<float4> &parts,
                            int n, int blocks, int threads, int threshold, long long cap,
                            float *total_ms, std::string *line) {
  // Poison: a stale read of a deque slot or of the other buffer gives fields that fail the checks
  // (bytes 0xff: id -1, coordinates NaN, negative ranges).
  CHECK(cudaMemset(o.q_range, 0xff, cap * blocks * sizeof(int4)));
  CHECK(cudaMemset(o.q_box, 0xff, cap * blocks * sizeof(float4)));
  CHECK(cudaMemset(o.buf1, 0xff, n * sizeof(float4)));
  CHECK(cudaMemset(o.leaves, 0xff, n * sizeof(Leaf)));
  CHECK(cudaMemset(tail, 0, blocks * sizeof(int)));
  CHECK(cudaMemset(o.head, 0, blocks * sizeof(unsigned long long)));
  CHECK(cudaMemcpy(o.buf0, parts.data(), n * sizeof(float4), cudaMemcpyHostToDevice));
  // The root task (all particles, the cube [-1, 1)^3) is planted in deque 0.
  Task root;
  root.range = make_int4(0, n, 0, 0);
  root.box = make_float4(0.0f, 0.0f, 0.0f, 1.0f);
  int one = 1;
  int initial[5] = {0, 1, 0, 0, 0};
  CHECK(cudaMemcpy(o.q_range, &root.range, sizeof(int4), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(o.q_box, &root.box, sizeof(float4), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(tail, &one, sizeof(int), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(counters, initial, sizeof initial, cudaMemcpyHostToDevice));

  // The program's own timing of its GPU work, read by `wmfix cost`: CUDA events on the default
  // stream, like the launches, from the first launch to the last.
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  CHECK(cudaEventRecord(start));
  build_octree<<<blocks, threads>>>(o);
  CHECK(cudaGetLastError());
  CHECK(cudaEventRecord(stop));
  CHECK(cudaEventSynchronize(stop));
  float gpu_ms = 0;
  CHECK(cudaEventElapsedTime(&gpu_ms, start, stop));
  *total_ms += gpu_ms;
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  CHECK(cudaDeviceSynchronize());

  int result[5];
  CHECK(cudaMemcpy(result, counters, sizeof result, cudaMemcpyDeviceToHost));
  int nleaves = result[0] < n ? result[0] : n;
  std::vector<Leaf> leaves(nleaves > 0 ? nleaves : 1);
  std::vector<float4> b0(n), b1(n);
  if (nleaves > 0)
    CHECK(cudaMemcpy(leaves.data(), o.leaves, nleaves * sizeof(Leaf), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(b0.data(), o.buf0, n * sizeof(float4), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(b1.data(), o.buf1, n * sizeof(float4), cudaMemcpyDeviceToHost));

  // Post-condition: the leaves cover every slot once and hold every particle once, unchanged, in
  // a leaf whose box [c - h, c + h) contains it.
  std::vector<int> seen(n, 0), covered(n, 0);
  long long bad_leaves = 0, bad_particles = 0, outside = 0;
  int max_depth = 0;
  for (int l = 0; l < nleaves; l++) {
    const Leaf &lf = leaves[l];
    if (lf.start < 0 || lf.count < 1 || lf.start > n - lf.count || (lf.buf != 0 && lf.buf != 1)) {
      bad_leaves++;
      continue;
    }
    if (lf.depth > max_depth) max_depth = lf.depth;
    const std::vector<float4> &buf = lf.buf ? b1 : b0;
    for (int i = lf.start; i < lf.start + lf.count; i++) {
      covered[i]++;
      float4 p = buf[i];
      int id;
      memcpy(&id, &p.w, sizeof id);
      if (id < 0 || id >= n || memcmp(&p, &parts[id], sizeof p) != 0) {
        bad_particles++;
        continue;
      }
      seen[id]++;
      if (!(p.x >= lf.cx - lf.h && p.x < lf.cx + lf.h && p.y >= lf.cy - lf.h &&
            p.y < lf.cy + lf.h && p.z >= lf.cz - lf.h && p.z < lf.cz + lf.h))
        outside++;
    }
  }
  long long missing = 0, duplicated = 0, uncovered = 0, overlapped = 0;
  for (int i = 0; i < n; i++) {
    missing += seen[i] == 0;
    duplicated += seen[i] > 1;
    uncovered += covered[i] == 0;
    overlapped += covered[i] > 1;
  }
  bool ok = result[2] == 0 && result[1] == 0 && bad_leaves == 0 && bad_particles == 0 &&
            outside == 0 && missing == 0 && duplicated == 0 && uncovered == 0 && overlapped == 0;
  char text[512];
  snprintf(text, sizeof text,
           "ct-octree particles=%d blocks=%d threads=%d threshold=%d tasks=%d stolen=%d "
           "leaves=%d depth=%d status=%d pending=%d missing=%lld duplicated=%lld bad=%lld "
           "outside=%lld uncovered=%lld overlapped=%lld %s",
           n, blocks, threads, threshold, result[3], result[4], result[0], max_depth, result[2],
           result[1], missing, duplicated, bad_particles + bad_leaves, outside, uncovered,
           overlapped, ok ? "PASS" : "FAIL");
  *line = text;
  return ok;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 16384;
  int blocks = argc > 2 ? atoi(argv[2]) : 64;
  int threads = argc > 3 ? atoi(argv[3]) : 128;
  int threshold = argc > 4 ? atoi(argv[4]) : 16;
  int builds = argc > 5 ? atoi(argv[5]) : 1;
  if (n < 1 || n > (1 << 24) || blocks < 1 || blocks > 65535 || threads < 32 ||
      threads > kMaxThreads || threshold < 1 || threshold >= n || builds < 1 || builds > 100000) {
    fprintf(stderr,
            "usage: octree [particles <= 2^24] [blocks <= 65535] [threads: 32..%d] "
            "[threshold: 1..particles-1] [builds a run: 1..100000]\n",
            kMaxThreads);
    return 64;
  }
  long long cap = task_bound(n, threshold);
  if (cap * blocks * (long long)(sizeof(int4) + sizeof(float4)) > (1LL << 30)) {
    fprintf(stderr, "deques would need more than 1 GiB: fewer blocks or particles\n");
    return 64;
  }

  // Half the particles uniform in [-1, 1)^3, half in a small cube (a deeper, unbalanced tree).
  std::vector<float4> parts(n);
  Lcg rng{12345};
  for (int i = 0; i < n; i++) {
    float x, y, z;
    if (i % 2 == 0) {
      x = 2.0f * rng.next() - 1.0f;
      y = 2.0f * rng.next() - 1.0f;
      z = 2.0f * rng.next() - 1.0f;
    } else {
      x = 0.5f + 0.125f * (rng.next() - 0.5f);
      y = -0.25f + 0.125f * (rng.next() - 0.5f);
      z = 0.25f + 0.125f * (rng.next() - 0.5f);
    }
    int id = i;
    float w;
    memcpy(&w, &id, sizeof w);
    parts[i] = make_float4(x, y, z, w);
  }

  Octree o;
  o.cap = (int)cap;
  o.n = n;
  o.threshold = threshold;
  int *tail;
  CHECK(cudaMalloc(&o.q_range, cap * blocks * sizeof(int4)));
  CHECK(cudaMalloc(&o.q_box, cap * blocks * sizeof(float4)));
  CHECK(cudaMalloc(&tail, blocks * sizeof(int)));
  CHECK(cudaMalloc(&o.head, blocks * sizeof(unsigned long long)));
  CHECK(cudaMalloc(&o.buf0, n * sizeof(float4)));
  CHECK(cudaMalloc(&o.buf1, n * sizeof(float4)));
  CHECK(cudaMalloc(&o.leaves, n * sizeof(Leaf)));
  int *counters;  // leaf_count, pending, status, stats[2]
  CHECK(cudaMalloc(&counters, 5 * sizeof(int)));
  o.tail = tail;
  o.leaf_count = counters;
  o.pending = counters + 1;
  o.status = counters + 2;
  o.stats = counters + 3;

  // Several builds a run (the fifth argument): each from a fresh state and checked; a rarely
  // shown bug shows in more runs, and runs are what a reduction pays for (process start-up is
  // most of a run).
  float total_ms = 0;
  int failed = 0;
  std::string line, first_failure;
  for (int r = 0; r < builds; r++) {
    if (build_and_check(o, tail, counters, parts, n, blocks, threads, threshold, cap, &total_ms,
                        &line))
      continue;
    failed++;
    if (first_failure.empty()) first_failure = line;
    if (builds > 1) printf("build %d: %s\n", r, line.c_str());
  }
  // The program's own timing of its GPU work, read by `wmfix cost`: all builds' kernels.
  printf("wmfix-time-ms: %.4f\n", total_ms);
  // The last line says what went wrong first (wmfix keeps each erring run's last line).
  if (builds == 1)
    printf("%s\n", line.c_str());
  else if (failed)
    printf("ct-octree builds=%d failed=%d, first: %s\n", builds, failed, first_failure.c_str());
  else
    printf("ct-octree builds=%d, the last: %s\n", builds, line.c_str());
  bool ok = failed == 0;
  CHECK(cudaFree(o.q_range));
  CHECK(cudaFree(o.q_box));
  CHECK(cudaFree(tail));
  CHECK(cudaFree(o.head));
  CHECK(cudaFree(o.buf0));
  CHECK(cudaFree(o.buf1));
  CHECK(cudaFree(o.leaves));
  CHECK(cudaFree(counters));
  return ok ? 0 : 1;
}
