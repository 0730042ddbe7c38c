// The race detector's ground truth on the GPU: small kernels whose names give the verdict
// (`race_*`: a data race under the PTX model; `ok_*`: none). `./suite` launches each once, in
// turn, on fresh zeroed buffers; `wmfix race` then must report races in exactly the race_
// kernels (scripts/race_suite.py checks race.json against fences.json's function names).
// Threads that wait spin on volatile (written out: wmfix does not instrument accesses inside
// macros) or atomic reads, so each run shows the message it waits
// for: the verdicts do not depend on timing.
#include <cstdio>
#include <cstring>

__device__ void spin_volatile(int *f) {
  while (*(volatile int *)(f) == 0) {
  }
}
__device__ void spin_atomic(int *f) {
  while (atomicAdd(f, 0) == 0) {
  }
}
__device__ void lock(int *l) {
  while (atomicCAS(l, 0, 1) != 0) {
  }
}

// ---- message passing: block 0 writes d then the flag, block 1 waits for the flag, reads d
__global__ void ok_mp_fences(int *d, int *f, int *g, int *out) {
  if (threadIdx.x) return;
  if (blockIdx.x == 0) { d[0] = 1; __threadfence(); *(volatile int *)(f) = 1; }
  else { spin_volatile(f); __threadfence(); out[0] = d[0]; }
}
__global__ void race_mp_no_fences(int *d, int *f, int *g, int *out) {
  if (threadIdx.x) return;
  if (blockIdx.x == 0) { d[0] = 1; *(volatile int *)(f) = 1; }
  else { spin_volatile(f); out[0] = d[0]; }
}
__global__ void race_mp_no_writer_fence(int *d, int *f, int *g, int *out) {
  if (threadIdx.x) return;
  if (blockIdx.x == 0) { d[0] = 1; *(volatile int *)(f) = 1; }
  else { spin_volatile(f); __threadfence(); out[0] = d[0]; }
}
__global__ void race_mp_no_reader_fence(int *d, int *f, int *g, int *out) {
  if (threadIdx.x) return;
  if (blockIdx.x == 0) { d[0] = 1; __threadfence(); *(volatile int *)(f) = 1; }
  else { spin_volatile(f); out[0] = d[0]; }
}
__global__ void race_mp_block_fences_across_blocks(int *d, int *f, int *g, int *out) {
  if (threadIdx.x) return;
  if (blockIdx.x == 0) { d[0] = 1; __threadfence_block(); *(volatile int *)(f) = 1; }
  else { spin_volatile(f); __threadfence_block(); out[0] = d[0]; }
}
__global__ void race_mp_block_writer_fence(int *d, int *f, int *g, int *out) {
  if (threadIdx.x) return;
  if (blockIdx.x == 0) { d[0] = 1; __threadfence_block(); *(volatile int *)(f) = 1; }
  else { spin_volatile(f); __threadfence(); out[0] = d[0]; }
}
__global__ void ok_mp_block_fences_one_block(int *d, int *f, int *g, int *out) {
  // Two warps of one block: block-scope fences are enough.
  if (threadIdx.x == 0) { d[0] = 1; __threadfence_block(); *(volatile int *)(f) = 1; }
  if (threadIdx.x == 32) { spin_volatile(f); __threadfence_block(); out[0] = d[0]; }
}
__global__ void ok_mp_system_fences(int *d, int *f, int *g, int *out) {
  if (threadIdx.x) return;
  if (blockIdx.x == 0) { d[0] = 1; __threadfence_system(); *(volatile int *)(f) = 1; }
  else { spin_volatile(f); __threadfence_system(); out[0] = d[0]; }
}
__global__ void race_mp_weak_flag_store(int *d, int *f, int *g, int *out) {
  // The flag is stored plainly: it races with the volatile reads, and nothing synchronises.
  if (threadIdx.x) return;
  if (blockIdx.x == 0) { d[0] = 1; __threadfence(); f[0] = 1; }
  else { spin_volatile(f); __threadfence(); out[0] = d[0]; }
}
__global__ void ok_mp_atomic_flag(int *d, int *f, int *g, int *out) {
  if (threadIdx.x) return;
  if (blockIdx.x == 0) { d[0] = 1; __threadfence(); atomicExch(f, 1); }
  else { spin_atomic(f); __threadfence(); out[0] = d[0]; }
}
__global__ void race_mp_block_atomics_across_blocks(int *d, int *f, int *g, int *out) {
  if (threadIdx.x) return;
  if (blockIdx.x == 0) { d[0] = 1; __threadfence(); atomicExch_block(f, 1); }
  else { while (atomicAdd_block(f, 0) == 0) {} __threadfence(); out[0] = d[0]; }
}
__global__ void ok_transitive(int *d, int *f, int *g, int *out) {
  // block 0 -> block 1 -> block 2, each message fenced: block 2 may read block 0's data.
  if (threadIdx.x) return;
  if (blockIdx.x == 0) { d[0] = 1; __threadfence(); *(volatile int *)(f) = 1; }
  if (blockIdx.x == 1) { spin_volatile(f); __threadfence(); *(volatile int *)(g) = 1; }
  if (blockIdx.x == 2) { spin_volatile(g); __threadfence(); out[0] = d[0]; }
}
__global__ void ok_one_word(int *d, int *f, int *g, int *out) {
  // Flag and data in one word, written and read atomically: nothing to order.
  if (threadIdx.x) return;
  if (blockIdx.x == 0) atomicExch(f, (1 << 16) | 42);
  else { int v; while ((v = atomicAdd(f, 0)) == 0) {} out[0] = v & 0xffff; }
}

// ---- store and load buffering
__global__ void race_sb_weak(int *d, int *f, int *g, int *out) {
  if (threadIdx.x) return;
  if (blockIdx.x == 0) { d[0] = 1; out[0] = g[0]; }
  else { g[0] = 1; out[1] = d[0]; }
}
__global__ void ok_sb_volatile(int *d, int *f, int *g, int *out) {
  // Reordering may show, but every access is strong: no data race.
  if (threadIdx.x) return;
  if (blockIdx.x == 0) { *(volatile int *)(d) = 1; out[0] = *(volatile int *)(g); }
  else { *(volatile int *)(g) = 1; out[1] = *(volatile int *)(d); }
}
__global__ void race_lb_weak(int *d, int *f, int *g, int *out) {
  if (threadIdx.x) return;
  if (blockIdx.x == 0) { out[0] = d[0]; g[0] = 1; }
  else { out[1] = g[0]; d[0] = 1; }
}
__global__ void ok_lb_fenced_flag(int *d, int *f, int *g, int *out) {
  if (threadIdx.x) return;
  if (blockIdx.x == 0) { out[0] = d[0]; __threadfence(); *(volatile int *)(f) = 1; }
  else { spin_volatile(f); __threadfence(); d[0] = 1; }
}
__global__ void race_lb_no_fences(int *d, int *f, int *g, int *out) {
  if (threadIdx.x) return;
  if (blockIdx.x == 0) { out[0] = d[0]; *(volatile int *)(f) = 1; }
  else { spin_volatile(f); d[0] = 1; }
}

// ---- spin locks (block 0 takes the lock first: block 1 waits for its flag)
__global__ void ok_lock(int *d, int *f, int *g, int *out) {
  if (threadIdx.x) return;
  if (blockIdx.x == 1) spin_volatile(g);
  lock(f); __threadfence();
  d[0] = d[0] + 1;
  __threadfence(); atomicExch(f, 0);
  if (blockIdx.x == 0) *(volatile int *)(g) = 1;
}
__global__ void race_lock_no_acquire_fence(int *d, int *f, int *g, int *out) {
  if (threadIdx.x) return;
  if (blockIdx.x == 1) spin_volatile(g);
  lock(f);
  d[0] = d[0] + 1;
  __threadfence(); atomicExch(f, 0);
  if (blockIdx.x == 0) *(volatile int *)(g) = 1;
}
__global__ void race_lock_no_release_fence(int *d, int *f, int *g, int *out) {
  if (threadIdx.x) return;
  if (blockIdx.x == 1) spin_volatile(g);
  lock(f); __threadfence();
  d[0] = d[0] + 1;
  atomicExch(f, 0);
  if (blockIdx.x == 0) *(volatile int *)(g) = 1;
}
__global__ void ok_lock_volatile_unlock(int *d, int *f, int *g, int *out) {
  if (threadIdx.x) return;
  if (blockIdx.x == 1) spin_volatile(g);
  lock(f); __threadfence();
  d[0] = d[0] + 1;
  __threadfence(); *(volatile int *)(f) = 0;
  if (blockIdx.x == 0) *(volatile int *)(g) = 1;
}

// ---- last-block tickets over 4 blocks: partial sums in d, the ticket in f
__global__ void ok_ticket(int *d, int *f, int *g, int *out) {
  if (threadIdx.x) return;
  d[blockIdx.x] = blockIdx.x + 1; __threadfence();
  if (atomicInc((unsigned *)f, gridDim.x - 1) == gridDim.x - 1) {
    __threadfence();
    int s = 0;
    for (int i = 0; i < gridDim.x; ++i) s += d[i];
    out[0] = s;
  }
}
__global__ void race_ticket_no_fence(int *d, int *f, int *g, int *out) {
  if (threadIdx.x) return;
  d[blockIdx.x] = blockIdx.x + 1;
  if (atomicInc((unsigned *)f, gridDim.x - 1) == gridDim.x - 1) {
    __threadfence();
    int s = 0;
    for (int i = 0; i < gridDim.x; ++i) s += d[i];
    out[0] = s;
  }
}
__global__ void ok_ticket_barrier_reader(int *d, int *f, int *g, int *out) {
  // threadFenceReduction's reader: the ticket, a barrier, volatile loads by every thread.
  __shared__ bool last;
  if (threadIdx.x == 0) {
    d[blockIdx.x] = blockIdx.x + 1; __threadfence();
    last = atomicInc((unsigned *)f, gridDim.x - 1) == gridDim.x - 1;
  }
  __syncthreads();
  if (last && threadIdx.x < gridDim.x) out[threadIdx.x] = *(volatile int *)(d + threadIdx.x);
}
__global__ void race_ticket_relaxed_reader(int *d, int *f, int *g, int *out) {
  if (threadIdx.x) return;
  d[blockIdx.x] = blockIdx.x + 1; __threadfence();
  if (atomicInc((unsigned *)f, gridDim.x - 1) == gridDim.x - 1) {
    int s = 0;
    for (int i = 0; i < gridDim.x; ++i) s += d[i];
    out[0] = s;
  }
}

// ---- barriers and warps
__global__ void race_warps_no_barrier(int *d, int *f, int *g, int *out) {
  if (threadIdx.x == 0) d[0] = 1;
  if (threadIdx.x == 32) out[0] = d[0];
}
__global__ void ok_warps_barrier(int *d, int *f, int *g, int *out) {
  if (threadIdx.x == 0) d[0] = 1;
  __syncthreads();
  if (threadIdx.x == 32) { out[0] = d[0]; d[0] = 2; }
  __syncthreads();
  if (threadIdx.x == 0) out[1] = d[0];
}
__global__ void race_barrier_is_not_grid_wide(int *d, int *f, int *g, int *out) {
  if (blockIdx.x == 0 && threadIdx.x == 0) d[0] = 1;
  __syncthreads();
  if (blockIdx.x == 1 && threadIdx.x == 0) out[0] = d[0];
}
__global__ void ok_barrier_spreads_an_acquire(int *d, int *f, int *g, int *out) {
  if (blockIdx.x == 0) {
    if (threadIdx.x == 0) { d[0] = 1; __threadfence(); *(volatile int *)(f) = 1; }
    return;
  }
  if (threadIdx.x == 0) { spin_volatile(f); __threadfence(); }
  __syncthreads();
  if (threadIdx.x == 7) out[0] = d[0];
}

// ---- plain conflicts
__global__ void ok_read_read(int *d, int *f, int *g, int *out) {
  if (threadIdx.x == 0) out[blockIdx.x] = d[0];
}
__global__ void race_write_write(int *d, int *f, int *g, int *out) {
  if (threadIdx.x == 0) d[0] = blockIdx.x;
}
__global__ void race_strong_and_weak(int *d, int *f, int *g, int *out) {
  if (threadIdx.x) return;
  if (blockIdx.x == 0) *(volatile int *)(d) = 1;
  else out[0] = d[0];
}
__global__ void ok_device_atomics(int *d, int *f, int *g, int *out) {
  atomicAdd(d, 1);
}
__global__ void ok_boundary_write(int *d, int *f, int *g, int *out) {
  if (threadIdx.x == 0 && blockIdx.x == 0) d[0] = 5;
}
__global__ void ok_boundary_read(int *d, int *f, int *g, int *out) {
  // A later launch on the same stream: ordered after ok_boundary_write.
  if (threadIdx.x == 0 && blockIdx.x == 1) { out[0] = d[0]; d[0] = 6; }
}

typedef void (*Kernel)(int *, int *, int *, int *);
struct Case {
  const char *name;
  Kernel k;
  int blocks, threads;
  bool fresh;  // zero the buffers first (not between the two launches of ok_boundary_*)
};

int main() {
  const Case cases[] = {
      {"ok_mp_fences", ok_mp_fences, 2, 32, true},
      {"race_mp_no_fences", race_mp_no_fences, 2, 32, true},
      {"race_mp_no_writer_fence", race_mp_no_writer_fence, 2, 32, true},
      {"race_mp_no_reader_fence", race_mp_no_reader_fence, 2, 32, true},
      {"race_mp_block_fences_across_blocks", race_mp_block_fences_across_blocks, 2, 32, true},
      {"race_mp_block_writer_fence", race_mp_block_writer_fence, 2, 32, true},
      {"ok_mp_block_fences_one_block", ok_mp_block_fences_one_block, 1, 64, true},
      {"ok_mp_system_fences", ok_mp_system_fences, 2, 32, true},
      {"race_mp_weak_flag_store", race_mp_weak_flag_store, 2, 32, true},
      {"ok_mp_atomic_flag", ok_mp_atomic_flag, 2, 32, true},
      {"race_mp_block_atomics_across_blocks", race_mp_block_atomics_across_blocks, 2, 32, true},
      {"ok_transitive", ok_transitive, 3, 32, true},
      {"ok_one_word", ok_one_word, 2, 32, true},
      {"race_sb_weak", race_sb_weak, 2, 32, true},
      {"ok_sb_volatile", ok_sb_volatile, 2, 32, true},
      {"race_lb_weak", race_lb_weak, 2, 32, true},
      {"ok_lb_fenced_flag", ok_lb_fenced_flag, 2, 32, true},
      {"race_lb_no_fences", race_lb_no_fences, 2, 32, true},
      {"ok_lock", ok_lock, 2, 32, true},
      {"race_lock_no_acquire_fence", race_lock_no_acquire_fence, 2, 32, true},
      {"race_lock_no_release_fence", race_lock_no_release_fence, 2, 32, true},
      {"ok_lock_volatile_unlock", ok_lock_volatile_unlock, 2, 32, true},
      {"ok_ticket", ok_ticket, 4, 32, true},
      {"race_ticket_no_fence", race_ticket_no_fence, 4, 32, true},
      {"ok_ticket_barrier_reader", ok_ticket_barrier_reader, 4, 32, true},
      {"race_ticket_relaxed_reader", race_ticket_relaxed_reader, 4, 32, true},
      {"race_warps_no_barrier", race_warps_no_barrier, 1, 64, true},
      {"ok_warps_barrier", ok_warps_barrier, 1, 64, true},
      {"race_barrier_is_not_grid_wide", race_barrier_is_not_grid_wide, 2, 32, true},
      {"ok_barrier_spreads_an_acquire", ok_barrier_spreads_an_acquire, 2, 32, true},
      {"ok_read_read", ok_read_read, 2, 32, true},
      {"race_write_write", race_write_write, 2, 32, true},
      {"race_strong_and_weak", race_strong_and_weak, 2, 32, true},
      {"ok_device_atomics", ok_device_atomics, 4, 64, true},
      {"ok_boundary_write", ok_boundary_write, 2, 32, true},
      {"ok_boundary_read", ok_boundary_read, 2, 32, false},
  };
  const size_t words = 64;
  int *buf[4];
  for (int i = 0; i < 4; ++i)
    if (cudaMalloc(&buf[i], words * sizeof(int)) != cudaSuccess) return 3;
  for (const Case &c : cases) {
    if (c.fresh)
      for (int i = 0; i < 4; ++i) cudaMemset(buf[i], 0, words * sizeof(int));
    c.k<<<c.blocks, c.threads>>>(buf[0], buf[1], buf[2], buf[3]);
    const cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
      std::fprintf(stderr, "%s: %s\n", c.name, cudaGetErrorString(e));
      return 3;
    }
  }
  std::printf("%zu kernels ran\n", sizeof cases / sizeof cases[0]);
  return 0;
}
