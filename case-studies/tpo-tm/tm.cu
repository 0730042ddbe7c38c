// tpo-tm: dynamic task management with per-block task queues, work donation and work stealing,
// after Tzeng, Patney and Owens, "Task management for irregular-parallel workloads on the GPU"
// (HPG 2010), and Tab. 4 of Sorensen & Donaldson, PLDI 2016. Written for wmfix from the
// paper's description. Each queue is guarded by a custom mutex (atomicCAS / atomicExch) with no
// fences, so the tasks and indices written in one critical section may not be visible in the
// next: a task may be read before it was written, popped twice, or overwritten and lost, a
// weak-memory bug.
//
// Usage: tm [blocks] [threads-per-block] [depth] [roots-per-block]. Exit status 0 when every
// task of the task trees was executed exactly once, 1 otherwise, 3 on a CUDA error, 64 on a bad
// command line.
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
constexpr int kStealTries = 4;         // victims a block without work tries per iteration
constexpr int kSpinCap = 1 << 20;      // attempts before lock() gives up (never, natively)
constexpr int kMaxIdle = 1 << 16;      // iterations without a task before a block gives up
constexpr int kMaxIters = 1 << 20;     // iterations of a block, in all
constexpr long long kMaxCycles = 1LL << 34;  // clock cycles of a block, in all (about 9 s)

// A block's queue: slots [head, tail) of its row of the slot array hold tasks. Indices only
// grow (no wrap-around), so each slot is written once and read once. The mutex and the
// indices share one 16-byte group; each queue has a 128-byte line of its own.
struct alignas(128) Queue {
  int lock;
  int head;  // next slot to take
  int tail;  // next slot to fill
};

// One task per slot, each slot on a 128-byte line of its own (README: why).
struct alignas(128) Slot {
  int task;
};

// Task ids: root tree r (of blocks * roots) has tree_size = 2^(depth+1) - 1 tasks; its node
// with heap index k (root 1, children of k: 2k and 2k+1) is task r * tree_size + k - 1. A
// task on level < depth spawns its two children.
struct Work {
  int depth;
  int tree_size;
  int total;      // tasks in all trees
  int capacity;   // slots per queue
  int threshold;  // children are donated when the own queue holds at least this many tasks
};

struct Counters {
  int outstanding;    // tasks spawned (or seeded) and not yet executed
  int invalid;        // taken slots that held no valid task id
  int dropped;        // spawned tasks that found no queue with room
  int corrupt;        // queues found with head/tail out of range
  int lock_timeouts;  // lock() calls that gave up
  int gave_up;        // blocks that stopped on an iteration cap
};

__device__ bool try_lock(int *mutex) {
  return atomicCAS(mutex, 0, 1) == 0;
}

// Spins on try_lock, at most kSpinCap times; false (counted) when it gave up.
__device__ bool lock(int *mutex, Counters *ctr) {
  for (int spins = 0; spins < kSpinCap; spins++) {
    if (try_lock(mutex)) return true;
  }
  atomicAdd(&ctr->lock_timeouts, 1);
  return false;
}

__device__ void unlock(int *mutex) {
  atomicExch(mutex, 0);
}

// With q's lock held: moves up to max tasks from the front of q (whose slots are row) to out;
// takes half of the tasks (rounded up) when half is set. Returns how many it took.
__device__ int take(Queue *q, const Slot *row, int capacity, int max, bool half, int *out,
                    Counters *ctr) {
  int head = q->head;
  int tail = q->tail;
  if (head < 0 || head > tail || tail > capacity) {
    atomicAdd(&ctr->corrupt, 1);
    return 0;
  }
  int n = half ? (tail - head + 1) / 2 : tail - head;
  n = min(n, max);
  for (int i = 0; i < n; i++) out[i] = row[head + i].task;
  q->head = head + n;
  return n;
}

// With q's lock held: appends tasks[0..n) to q when it has room for all of them (and, when
// only_if_short is set, when it holds fewer than threshold tasks). Returns whether it did.
__device__ bool put(Queue *q, Slot *row, const Work &w, const int *tasks, int n,
                    bool only_if_short, Counters *ctr) {
  int head = q->head;
  int tail = q->tail;
  if (head < 0 || head > tail || tail > w.capacity) {
    atomicAdd(&ctr->corrupt, 1);
    return false;
  }
  if (tail > w.capacity - n || (only_if_short && tail - head >= w.threshold)) return false;
  for (int i = 0; i < n; i++) row[tail + i].task = tasks[i];
  q->tail = tail + n;
  return true;
}

// Each block is a worker that owns queue blockIdx.x. Thread 0 does the queue work; every thread
// executes one task of the batch. A block stops when no task is outstanding, or on a cap.
__global__ void run_tasks(Queue *queues, Slot *slots, int *executed, Counters *ctr, Work w) {
  __shared__ int batch[kMaxThreads];
  __shared__ int spawned[2 * kMaxThreads];
  __shared__ int nbatch;     // tasks in batch
  __shared__ int nspawned;   // children in spawned
  __shared__ int stop_take;  // set by thread 0 before the first barrier of an iteration
  __shared__ int stop_put;   // set by thread 0 before the last one
  int nq = gridDim.x;
  int me = blockIdx.x;
  Queue *own = &queues[me];
  Slot *own_row = slots + (size_t)me * w.capacity;
  int victim = me;  // thread 0's round-robin cursors
  int donee = me;
  int idle = 0;
  long long start = clock64();
  for (int iter = 0; iter < kMaxIters; iter++) {
    // Take: from the own queue, else steal half of another queue's tasks.
    if (threadIdx.x == 0) {
      nbatch = 0;
      nspawned = 0;
      stop_take = 0;
      if (atomicAdd(&ctr->outstanding, 0) <= 0) {
        stop_take = 1;
      } else if (!lock(&own->lock, ctr)) {
        stop_take = 1;
      } else {
        int got = take(own, own_row, w.capacity, blockDim.x, false, batch, ctr);
        unlock(&own->lock);
        for (int k = 0; got == 0 && k < kStealTries && nq > 1; k++) {
          victim = (victim + 1) % nq;
          if (victim == me) victim = (victim + 1) % nq;
          Queue *v = &queues[victim];
          if (try_lock(&v->lock)) {
            got = take(v, slots + (size_t)victim * w.capacity, w.capacity, blockDim.x, true,
                       batch, ctr);
            unlock(&v->lock);
          }
        }
        nbatch = got;
      }
    }
    __syncthreads();
    if (stop_take) break;

    // Execute: record the task, spawn its children.
    if (threadIdx.x < nbatch) {
      int task = batch[threadIdx.x];
      if (task < 0 || task >= w.total) {
        atomicAdd(&ctr->invalid, 1);
      } else {
        atomicAdd(&executed[task], 1);
        int tree = task / w.tree_size;
        int node = task % w.tree_size + 1;
        if (31 - __clz(node) < w.depth) {
          int first = tree * w.tree_size + 2 * node - 1;  // the id of node 2k
          int at = atomicAdd(&nspawned, 2);
          spawned[at] = first;
          spawned[at + 1] = first + 1;
        }
      }
    }
    __syncthreads();

    // Put: count the children before they can be taken, then push them to the own queue, or
    // donate them when it is long (or full), trying the other queues in turn.
    if (threadIdx.x == 0) {
      stop_put = 0;
      if (nbatch == 0) {
        if (++idle >= kMaxIdle) {
          atomicAdd(&ctr->gave_up, 1);
          stop_put = 1;
        }
      } else {
        idle = 0;
        int n = nspawned;
        atomicAdd(&ctr->outstanding, n - nbatch);
        bool done = n == 0;
        if (!done && lock(&own->lock, ctr)) {
          done = put(own, own_row, w, spawned, n, true, ctr);
          unlock(&own->lock);
        }
        for (int k = 0; !done && k < nq - 1; k++) {
          donee = (donee + 1) % nq;
          if (donee == me) donee = (donee + 1) % nq;
          Queue *d = &queues[donee];
          if (lock(&d->lock, ctr)) {
            done = put(d, slots + (size_t)donee * w.capacity, w, spawned, n, false, ctr);
            unlock(&d->lock);
          }
        }
        if (!done && lock(&own->lock, ctr)) {
          done = put(own, own_row, w, spawned, n, false, ctr);
          unlock(&own->lock);
        }
        if (!done) {  // never when the queues are right: the capacity leaves room (main)
          atomicAdd(&ctr->dropped, n);
          atomicAdd(&ctr->outstanding, -n);
        }
      }
      if (!stop_put && clock64() - start > kMaxCycles) {
        atomicAdd(&ctr->gave_up, 1);
        stop_put = 1;
      }
    }
    __syncthreads();
    if (stop_put) break;
    if (iter == kMaxIters - 1 && threadIdx.x == 0) atomicAdd(&ctr->gave_up, 1);
  }
}

int main(int argc, char **argv) {
  int blocks = argc > 1 ? atoi(argv[1]) : 128;
  int threads = argc > 2 ? atoi(argv[2]) : 64;
  int depth = argc > 3 ? atoi(argv[3]) : 7;
  int roots = argc > 4 ? atoi(argv[4]) : 2;
  if (blocks < 1 || blocks > 65535 || threads < 1 || threads > kMaxThreads || depth < 0 ||
      depth > 20 || roots < 1 || (long long)blocks * roots * ((2LL << depth) - 1) > (1 << 24)) {
    fprintf(stderr,
            "usage: tm [blocks<=65535, default 128] [threads<=%d, default 64] [depth<=20, "
            "default 7] [roots per block, default 2]; at most 2^24 tasks\n",
            kMaxThreads);
    return 64;
  }
  Work w;
  w.depth = depth;
  w.tree_size = (2 << depth) - 1;
  w.total = blocks * roots * w.tree_size;
  w.threshold = threads;
  // Slots are never reused, and the run fills exactly w.total of them. With this capacity the
  // free slots always exceed blocks * 2 * threads, so some queue has room for any push of at
  // most 2 * threads children, and put never drops a task in a correct run.
  int per_block = (w.total + blocks - 1) / blocks;
  w.capacity = 4 * per_block + 2 * threads;
  if ((long long)blocks * w.capacity > (1 << 24)) {
    fprintf(stderr, "too many slots (%lld of 128 bytes): fewer tasks per block, please\n",
            (long long)blocks * w.capacity);
    return 64;
  }

  size_t nslots = (size_t)blocks * w.capacity;
  Queue *queues;
  Slot *slots;
  int *executed;
  Counters *ctr;
  CHECK(cudaMalloc(&queues, blocks * sizeof(Queue)));
  CHECK(cudaMalloc(&slots, nslots * sizeof(Slot)));
  CHECK(cudaMalloc(&executed, w.total * sizeof(int)));
  CHECK(cudaMalloc(&ctr, sizeof(Counters)));
  // Queue q starts with the roots of trees q * roots .. q * roots + roots - 1.
  std::vector<Queue> hq(blocks);
  std::vector<Slot> seed(roots);
  CHECK(cudaMemset(slots, 0xff, nslots * sizeof(Slot)));  // empty slots hold -1
  for (int q = 0; q < blocks; q++) {
    hq[q].lock = 0;
    hq[q].head = 0;
    hq[q].tail = roots;
    for (int r = 0; r < roots; r++) seed[r].task = (q * roots + r) * w.tree_size;
    CHECK(cudaMemcpy(slots + (size_t)q * w.capacity, seed.data(), roots * sizeof(Slot),
                     cudaMemcpyHostToDevice));
  }
  CHECK(cudaMemcpy(queues, hq.data(), blocks * sizeof(Queue), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(executed, 0, w.total * sizeof(int)));
  Counters c{};
  c.outstanding = blocks * roots;
  CHECK(cudaMemcpy(ctr, &c, sizeof(Counters), cudaMemcpyHostToDevice));

  // The program's own timing of its GPU work, read by `wmfix cost`: CUDA events on the default
  // stream, like the launches, from the first launch to the last.
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  CHECK(cudaEventRecord(start));
  run_tasks<<<blocks, threads>>>(queues, slots, executed, ctr, w);
  CHECK(cudaGetLastError());
  CHECK(cudaEventRecord(stop));
  CHECK(cudaEventSynchronize(stop));
  float gpu_ms = 0;
  CHECK(cudaEventElapsedTime(&gpu_ms, start, stop));
  printf("wmfix-time-ms: %.4f\n", gpu_ms);
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  std::vector<int> count(w.total);
  CHECK(cudaMemcpy(count.data(), executed, w.total * sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&c, ctr, sizeof(Counters), cudaMemcpyDeviceToHost));

  long long runs = 0, missing = 0, repeated = 0;
  for (int t = 0; t < w.total; t++) {
    runs += count[t];
    if (count[t] == 0) missing++;
    if (count[t] > 1) repeated++;
  }
  bool ok = runs == w.total && missing == 0 && repeated == 0 && c.invalid == 0 &&
            c.dropped == 0 && c.corrupt == 0 && c.lock_timeouts == 0 && c.outstanding == 0;
  printf("tpo-tm blocks=%d threads=%d depth=%d roots=%d tasks=%d executed=%lld missing=%lld "
         "repeated=%lld invalid=%d dropped=%d corrupt=%d lock_timeouts=%d outstanding=%d "
         "gave_up=%d %s\n",
         blocks, threads, depth, roots, w.total, runs, missing, repeated, c.invalid, c.dropped,
         c.corrupt, c.lock_timeouts, c.outstanding, c.gave_up, ok ? "PASS" : "FAIL");
  CHECK(cudaFree(queues));
  CHECK(cudaFree(slots));
  CHECK(cudaFree(executed));
  CHECK(cudaFree(ctr));
  return ok ? 0 : 1;
}
