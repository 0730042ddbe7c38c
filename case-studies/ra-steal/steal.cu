// ra-steal: work stealing between blocks, for wmfix race (issue 46's applications). Each block
// owns a queue of tasks (a range of indices, head and tail words in global memory) under a spin
// lock; a block pops from its own queue and, when it is empty, steals from the others'. A task
// is a slice of an array the block's threads sum; the result and a count of how often the task
// ran go to global memory. Built with -DRACY the locks are taken with atomicCAS_block and
// released with atomicExch_block, with __threadfence_block around the critical section: scopes
// of one block, for queues every block uses. Written for wmfix.
//
// Usage: steal [blocks=128] [tasks=4096] [task-size=256]. Exit status 0 when every task ran
// once with the right sum, 1 when not, 3 on a CUDA error.
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

struct Queue {
  int lock;
  int head;  // next task to take
  int tail;  // one past the last task
};

__device__ void take(Queue *q) {
#ifdef RACY
  while (atomicCAS_block(&q->lock, 0, 1) != 0) __nanosleep(64);
  __threadfence_block();
#else
  while (atomicCAS(&q->lock, 0, 1) != 0) __nanosleep(64);
  __threadfence();
#endif
}

__device__ void give(Queue *q) {
#ifdef RACY
  __threadfence_block();
  atomicExch_block(&q->lock, 0);
#else
  __threadfence();
  atomicExch(&q->lock, 0);
#endif
}

// The next task for block `me`: its own queue first, then the others' from the next one on;
// -1 when every queue is empty (no task is ever added).
__device__ int next_task(Queue *queues, int nqueues, int me) {
  for (int k = 0; k < nqueues; ++k) {
    Queue *q = &queues[(me + k) % nqueues];
    take(q);
    int t = -1;
    if (q->head < q->tail) t = q->head++;
    give(q);
    if (t >= 0) return t;
  }
  return -1;
}

__global__ void work(Queue *queues, const int *data, int size, long long *sums, int *runs) {
  __shared__ int task;
  __shared__ long long partial[256];
  for (;;) {
    if (threadIdx.x == 0) task = next_task(queues, gridDim.x, blockIdx.x);
    __syncthreads();
    const int t = task;
    if (t < 0) return;
    long long s = 0;
    for (int i = threadIdx.x; i < size; i += blockDim.x) s += data[(size_t)t * size + i];
    partial[threadIdx.x] = s;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
      if ((int)threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      sums[t] = partial[0];
      atomicAdd(&runs[t], 1);
    }
    __syncthreads();
  }
}

int main(int argc, char **argv) {
  const int blocks = argc > 1 ? atoi(argv[1]) : 128;
  const int tasks = argc > 2 ? atoi(argv[2]) : 4096;
  const int size = argc > 3 ? atoi(argv[3]) : 256;
  std::vector<int> data((size_t)tasks * size);
  srand(5);
  for (auto &x : data) x = rand() % 1000;
  // Uneven queues: the first eighth of the blocks hold every task, so the rest must steal.
  const int owners = blocks / 8 > 0 ? blocks / 8 : 1;
  std::vector<Queue> queues(blocks, Queue{0, 0, 0});
  for (int b = 0; b < owners; ++b) {
    queues[b].head = (int)((long long)tasks * b / owners);
    queues[b].tail = (int)((long long)tasks * (b + 1) / owners);
  }
  Queue *d_queues;
  int *d_data, *d_runs;
  long long *d_sums;
  CHECK(cudaMalloc(&d_queues, sizeof(Queue) * blocks));
  CHECK(cudaMalloc(&d_data, sizeof(int) * data.size()));
  CHECK(cudaMalloc(&d_sums, sizeof(long long) * tasks));
  CHECK(cudaMalloc(&d_runs, sizeof(int) * tasks));
  CHECK(cudaMemcpy(d_queues, queues.data(), sizeof(Queue) * blocks, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_data, data.data(), sizeof(int) * data.size(), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(d_sums, 0, sizeof(long long) * tasks));
  CHECK(cudaMemset(d_runs, 0, sizeof(int) * tasks));
  work<<<blocks, 256>>>(d_queues, d_data, size, d_sums, d_runs);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::vector<long long> sums(tasks);
  std::vector<int> runs(tasks);
  CHECK(cudaMemcpy(sums.data(), d_sums, sizeof(long long) * tasks, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(runs.data(), d_runs, sizeof(int) * tasks, cudaMemcpyDeviceToHost));
  int wrong = 0, not_once = 0;
  for (int t = 0; t < tasks; ++t) {
    long long want = 0;
    for (int i = 0; i < size; ++i) want += data[(size_t)t * size + i];
    wrong += sums[t] != want;
    not_once += runs[t] != 1;
  }
  printf("steal: %d blocks, %d tasks, %d sums wrong, %d tasks not run exactly once\n", blocks,
         tasks, wrong, not_once);
  return wrong == 0 && not_once == 0 ? 0 : 1;
}
