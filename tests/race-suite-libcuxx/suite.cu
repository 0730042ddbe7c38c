// libcu++'s cuda::atomic_ref, cuda::atomic and cuda::atomic_thread_fence in the race detector's
// ground truth: kernels whose names give the verdict under the PTX model (`race_*`: a data race,
// `ok_*`: none),
// each launched once by `./suite` on fresh zeroed buffers, thread 0 of blocks 0 and 1 taking
// part. Block 0 writes d then publishes; block 1 waits and reads d, or both take a lock.
// scripts/race_suite.py checks race.json against these names. Written for wmfix.
#include <cuda/atomic>
#include <cuda/std/atomic>
#include <cstdio>

// Aliases at file scope name the types too (the rewriter renames them there as well).
using device_ref = cuda::atomic_ref<int, cuda::thread_scope_device>;
using block_ref = cuda::atomic_ref<int, cuda::thread_scope_block>;

// A wait on an atomic of block scope across blocks is bounded: such a load may be served from
// the waiting block's own SM and never see the other block's store (the kernel would hang; the
// race is there whether or not the wait ends in time).
constexpr int kSpins = 1 << 20;

// ---- message passing through an atomic_ref flag
__global__ void ok_ref_release_acquire(int *d, int *f, int *out) {
  if (threadIdx.x != 0) return;
  cuda::atomic_ref<int, cuda::thread_scope_device> flag(f[0]);
  if (blockIdx.x == 0) {
    d[0] = 1;
    flag.store(1, cuda::memory_order_release);
  } else {
    while (flag.load(cuda::memory_order_acquire) == 0) {
    }
    out[0] = d[0];
  }
}
__global__ void race_ref_relaxed(int *d, int *f, int *out) {
  if (threadIdx.x != 0) return;
  cuda::atomic_ref<int, cuda::thread_scope_device> flag(f[0]);
  if (blockIdx.x == 0) {
    d[0] = 1;
    flag.store(1, cuda::memory_order_relaxed);
  } else {
    while (flag.load(cuda::memory_order_relaxed) == 0) {
    }
    out[0] = d[0];
  }
}
__global__ void race_ref_block_scope_across_blocks(int *d, int *f, int *out) {
  if (threadIdx.x != 0) return;
  cuda::atomic_ref<int, cuda::thread_scope_block> flag(f[0]);
  if (blockIdx.x == 0) {
    d[0] = 1;
    flag.store(1, cuda::memory_order_release);
  } else {
    for (int n = 0; n < kSpins && flag.load(cuda::memory_order_acquire) == 0; ++n) {
    }
    out[0] = d[0];
  }
}
__global__ void ok_ref_seq_cst_by_default(int *d, int *f, int *out) {
  if (threadIdx.x != 0) return;
  cuda::atomic_ref<int, cuda::thread_scope_device> flag(f[0]);
  if (blockIdx.x == 0) {
    d[0] = 1;
    flag = 1;
  } else {
    while (flag == 0) {
    }
    out[0] = d[0];
  }
}

// ---- relaxed atomic_ref accesses ordered by atomic_thread_fence
__global__ void ok_ref_relaxed_with_fences(int *d, int *f, int *out) {
  if (threadIdx.x != 0) return;
  cuda::atomic_ref<int, cuda::thread_scope_device> flag(f[0]);
  if (blockIdx.x == 0) {
    d[0] = 1;
    cuda::atomic_thread_fence(cuda::memory_order_release, cuda::thread_scope_device);
    flag.store(1, cuda::memory_order_relaxed);
  } else {
    while (flag.load(cuda::memory_order_relaxed) == 0) {
    }
    cuda::atomic_thread_fence(cuda::memory_order_acquire, cuda::thread_scope_device);
    out[0] = d[0];
  }
}
__global__ void race_ref_fences_of_block_scope(int *d, int *f, int *out) {
  if (threadIdx.x != 0) return;
  cuda::atomic_ref<int, cuda::thread_scope_device> flag(f[0]);
  if (blockIdx.x == 0) {
    d[0] = 1;
    cuda::atomic_thread_fence(cuda::memory_order_release, cuda::thread_scope_block);
    flag.store(1, cuda::memory_order_relaxed);
  } else {
    while (flag.load(cuda::memory_order_relaxed) == 0) {
    }
    cuda::atomic_thread_fence(cuda::memory_order_acquire, cuda::thread_scope_block);
    out[0] = d[0];
  }
}
__global__ void race_ref_relaxed_fences(int *d, int *f, int *out) {
  if (threadIdx.x != 0) return;
  cuda::atomic_ref<int, cuda::thread_scope_device> flag(f[0]);
  if (blockIdx.x == 0) {
    d[0] = 1;
    cuda::atomic_thread_fence(cuda::memory_order_relaxed, cuda::thread_scope_device);
    flag.store(1, cuda::memory_order_relaxed);
  } else {
    while (flag.load(cuda::memory_order_relaxed) == 0) {
    }
    cuda::atomic_thread_fence(cuda::memory_order_relaxed, cuda::thread_scope_device);
    out[0] = d[0];
  }
}

// ---- a lock: compare_exchange to take it, store to release it; both blocks add to d
__global__ void ok_ref_lock(int *d, int *f, int *out) {
  if (threadIdx.x != 0) return;
  cuda::atomic_ref<int, cuda::thread_scope_device> lock(f[0]);
  int expected = 0;
  while (!lock.compare_exchange_strong(expected, 1, cuda::memory_order_acquire)) expected = 0;
  d[0] = d[0] + 1;
  lock.store(0, cuda::memory_order_release);
}
__global__ void race_ref_lock_relaxed(int *d, int *f, int *out) {
  if (threadIdx.x != 0) return;
  cuda::atomic_ref<int, cuda::thread_scope_device> lock(f[0]);
  int expected = 0;
  while (!lock.compare_exchange_weak(expected, 1, cuda::memory_order_relaxed)) expected = 0;
  d[0] = d[0] + 1;
  lock.store(0, cuda::memory_order_relaxed);
}
__global__ void race_ref_lock_of_block_scope(int *d, int *f, int *out) {
  if (threadIdx.x != 0) return;
  cuda::atomic_ref<int, cuda::thread_scope_block> lock(f[0]);
  int expected = 0;
  for (int n = 0; n < kSpins && !lock.compare_exchange_strong(expected, 1, cuda::memory_order_acquire); ++n)
    expected = 0;
  d[0] = d[0] + 1;
  lock.store(0, cuda::memory_order_release);
}
// A counter both blocks bump, then read back after the kernel: read-modify-writes, no race.
__global__ void ok_ref_counter(int *d, int *f, int *out) {
  if (threadIdx.x != 0) return;
  cuda::atomic_ref counter(d[0]);
  block_ref mine(f[1 + blockIdx.x]);  // each block its own word: block scope covers it
  mine.fetch_add(1);
  cuda::atomic_ref<int, cuda::thread_scope_device>(f[0]).fetch_add(1);
  device_ref both(f[3]);
  both.fetch_add(1);
  ::cuda::atomic_ref<int, ::cuda::thread_scope_device>{f[4]}.fetch_add(1);
  int *slot = out;  // a pointer's atomic_ref moves it by its difference type
  cuda::atomic_ref<int *, cuda::thread_scope_thread>(slot).fetch_add(1);
  counter.fetch_add(1, cuda::memory_order_relaxed);
  ++counter;
  counter += 2;
}

// ---- cuda::atomic objects in global memory as the flag
__device__ cuda::atomic<int, cuda::thread_scope_device> ready;
__device__ cuda::atomic<int, cuda::thread_scope_block> ready_in_block;
__global__ void ok_atomic_object_release_acquire(int *d, int *f, int *out) {
  if (threadIdx.x != 0) return;
  if (blockIdx.x == 0) {
    d[0] = 1;
    ready.store(1, cuda::memory_order_release);
  } else {
    while (ready.load(cuda::memory_order_acquire) == 0) {
    }
    out[0] = d[0];
    ready = 0;  // for the next launch
  }
}
__global__ void race_atomic_object_of_block_scope(int *d, int *f, int *out) {
  if (threadIdx.x != 0) return;
  if (blockIdx.x == 0) {
    d[0] = 1;
    ready_in_block.store(1, cuda::memory_order_release);
  } else {
    for (int n = 0; n < kSpins && ready_in_block.load(cuda::memory_order_acquire) == 0; ++n) {
    }
    out[0] = d[0];
    ready_in_block.store(0, cuda::memory_order_relaxed);
  }
}

// ---- atomics as members, in arrays, through pointers (the word is the element or member)
struct Box {
  cuda::atomic<int, cuda::thread_scope_device> ready;
  int data;
};
__device__ Box box;
__device__ cuda::atomic<int, cuda::thread_scope_device> flags_arr[2];
__global__ void ok_member_release_acquire(int *d, int *f, int *out) {
  if (threadIdx.x != 0) return;
  if (blockIdx.x == 0) {
    box.data = 1;
    box.ready.store(1, cuda::memory_order_release);
  } else {
    while (box.ready.load(cuda::memory_order_acquire) == 0) {
    }
    out[0] = box.data;
    box.ready.store(0, cuda::memory_order_relaxed);  // for the next launch
  }
}
__global__ void race_array_element_relaxed(int *d, int *f, int *out) {
  if (threadIdx.x != 0) return;
  cuda::atomic<int, cuda::thread_scope_device> *p = &flags_arr[0];
  if (blockIdx.x == 0) {
    d[0] = 1;
    flags_arr[1].store(1, cuda::memory_order_relaxed);
    p->store(1, cuda::memory_order_relaxed);
  } else {
    for (int n = 0; n < kSpins && flags_arr[1].load(cuda::memory_order_relaxed) == 0; ++n) {
    }
    out[0] = d[0];
    flags_arr[1] = 0;
    p->exchange(0, cuda::memory_order_relaxed);
  }
}

// ---- cuda::std's atomic and atomic_ref (system scope), references held by `auto`, its fences
__device__ cuda::std::atomic<int> std_ready;
__global__ void ok_std_atomic_release_acquire(int *d, int *f, int *out) {
  if (threadIdx.x != 0) return;
  if (blockIdx.x == 0) {
    d[0] = 1;
    std_ready.store(1, cuda::std::memory_order_release);
  } else {
    while (std_ready.load(cuda::std::memory_order_acquire) == 0) {
    }
    out[0] = d[0];
    std_ready.store(0, cuda::std::memory_order_relaxed);  // for the next launch
  }
}
__global__ void race_std_ref_relaxed(int *d, int *f, int *out) {
  if (threadIdx.x != 0) return;
  if (blockIdx.x == 0) {
    d[0] = 1;
    cuda::std::atomic_ref<int> sent(f[0]);
    sent.store(1, cuda::std::memory_order_relaxed);
  } else {
    auto seen = cuda::std::atomic_ref<int>(f[0]);
    while (seen.load(cuda::std::memory_order_relaxed) == 0) {
    }
    out[0] = d[0];
  }
}
__global__ void ok_std_ref_relaxed_with_std_fences(int *d, int *f, int *out) {
  if (threadIdx.x != 0) return;
  if (blockIdx.x == 0) {
    d[0] = 1;
    cuda::std::atomic_thread_fence(cuda::std::memory_order_seq_cst);
    cuda::std::atomic_ref<int>{f[0]}.store(1, cuda::std::memory_order_relaxed);
  } else {
    auto seen = cuda::atomic_ref<int, cuda::thread_scope_device>(f[0]);
    while (seen.load(cuda::std::memory_order_relaxed) == 0) {
    }
    cuda::std::atomic_thread_fence(cuda::std::memory_order_seq_cst);
    out[0] = d[0];
  }
}
// An atomic passed to a function by reference is no read at the call (its loads are the callee's).
__device__ int peek(const cuda::std::atomic<int> &a) { return a.load(cuda::std::memory_order_acquire); }
__device__ cuda::std::atomic<int> std_flags[2];
__global__ void ok_std_atomic_passed_by_reference(int *d, int *f, int *out) {
  if (threadIdx.x != 0) return;
  if (blockIdx.x == 0) {
    d[0] = 1;
    std_flags[1].store(1, cuda::std::memory_order_release);
  } else {
    while (peek(std_flags[1]) == 0) {
    }
    out[0] = d[0];
    std_flags[1].store(0, cuda::std::memory_order_relaxed);  // for the next launch
  }
}

struct Case {
  const char *name;
  void (*k)(int *, int *, int *);
};

int main() {
  const Case cases[] = {
      {"ok_ref_release_acquire", ok_ref_release_acquire},
      {"race_ref_relaxed", race_ref_relaxed},
      {"race_ref_block_scope_across_blocks", race_ref_block_scope_across_blocks},
      {"ok_ref_seq_cst_by_default", ok_ref_seq_cst_by_default},
      {"ok_ref_relaxed_with_fences", ok_ref_relaxed_with_fences},
      {"race_ref_fences_of_block_scope", race_ref_fences_of_block_scope},
      {"race_ref_relaxed_fences", race_ref_relaxed_fences},
      {"ok_ref_lock", ok_ref_lock},
      {"race_ref_lock_relaxed", race_ref_lock_relaxed},
      {"race_ref_lock_of_block_scope", race_ref_lock_of_block_scope},
      {"ok_atomic_object_release_acquire", ok_atomic_object_release_acquire},
      {"race_atomic_object_of_block_scope", race_atomic_object_of_block_scope},
      {"ok_member_release_acquire", ok_member_release_acquire},
      {"race_array_element_relaxed", race_array_element_relaxed},
      {"ok_std_atomic_release_acquire", ok_std_atomic_release_acquire},
      {"race_std_ref_relaxed", race_std_ref_relaxed},
      {"ok_std_ref_relaxed_with_std_fences", ok_std_ref_relaxed_with_std_fences},
      {"ok_std_atomic_passed_by_reference", ok_std_atomic_passed_by_reference},
      {"ok_ref_counter", ok_ref_counter},  // last: main checks its counter
  };
  const size_t words = 64;
  int *buf[3];
  for (int i = 0; i < 3; ++i)
    if (cudaMalloc(&buf[i], words * sizeof(int)) != cudaSuccess) return 3;
  for (const Case &c : cases) {
    for (int i = 0; i < 3; ++i) cudaMemset(buf[i], 0, words * sizeof(int));
    c.k<<<2, 32>>>(buf[0], buf[1], buf[2]);
    const cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
      std::fprintf(stderr, "%s: %s\n", c.name, cudaGetErrorString(e));
      return 3;
    }
  }
  int d = 0;
  cudaMemcpy(&d, buf[0], sizeof d, cudaMemcpyDeviceToHost);
  std::printf("%zu kernels ran; the last counter %d (4 a block)\n", sizeof cases / sizeof cases[0], d);
  return d == 8 ? 0 : 1;
}
