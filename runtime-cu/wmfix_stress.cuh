// wmfix runtime: what stressing blocks run (included by wmfix.cuh).
//
// A stressing block never touches application memory: it only accesses the scratchpad that the
// host allocated for it, and reads the launch table. It loops until every application block of
// the launch has finished (the last thread of each block to leave counts it, see count_exit in
// wmfix.cuh), or until max_ns have passed since it started, whichever comes first, so it always
// ends, also when it was scheduled before (or instead of) application blocks.
#ifndef WMFIX_STRESS_CUH_INCLUDED
#define WMFIX_STRESS_CUH_INCLUDED

#include "wmfix_common.cuh"

namespace wmfix {

// Accesses per poll of the termination condition, per thread. Small enough that stressing ends
// soon after the application, large enough that polling costs little.
constexpr unsigned kPollEvery = 64;

__device__ __forceinline__ unsigned long long global_timer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Strong accesses, which go to the L2, where the weak behaviours of inter-block communication
// come from. The loaded value goes to a PTX-local register nobody reads, so the thread never
// waits for it; the load is `ld.volatile` because ptxas deletes an unused `ld.relaxed.gpu` (seen
// in the SASS of nvcc 13.0 for sm_90: every `ld` of a profile was no access at all), and keeps a
// volatile one (tests/nvcc_compile.rs checks the SASS). The litmus kernels that tune the
// profiles load with volatile too.
__device__ __forceinline__ void stress_load(const unsigned* p) {
  asm volatile("{ .reg .u32 wmfix_v; ld.volatile.global.u32 wmfix_v, [%0]; }" ::"l"(p));
}

__device__ __forceinline__ void stress_store(unsigned* p, unsigned v) {
  asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v));
}

__device__ __forceinline__ unsigned load_relaxed(const unsigned* p) {
  unsigned v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}

__device__ __forceinline__ unsigned long long load_relaxed64(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p));
  return v;
}

// Polled every kPollEvery accesses: have all application blocks finished, or is the time up?
// The lanes of warp 0 sum the counters together and raise the block's shared stop flag; the
// other warps only read the flag. Warp 0's answer is warp-uniform, as its next poll's __*_sync
// calls need all its lanes. Little is kept in registers: the stress code must need few, because
// a kernel's register count is the maximum over all its code.
__device__ __forceinline__ bool should_stop(const LaunchTable* t, unsigned long long deadline, volatile unsigned* stop,
                                            unsigned tid) {
  const bool late = global_timer_ns() >= deadline;
  if (tid >= 32) return late || *stop;
  const unsigned nthreads = blockDim.x * blockDim.y * blockDim.z;
  const unsigned lanes = nthreads < 32 ? nthreads : 32;
  const unsigned mask = lanes == 32 ? 0xffffffffU : (1U << lanes) - 1;
  bool finished = false;
  if (t->done) {
    unsigned part = 0;
#pragma unroll 1
    for (unsigned i = tid; i < kDoneStripes; i += lanes) part += load_relaxed(t->done + i * kDoneStride);
    finished = __reduce_add_sync(mask, part) >= t->app_blocks;
  }
  if (finished && tid == 0) *stop = 1;
  return finished || __any_sync(mask, late);
}

// One poll's worth of the profile's sequence at p: bit i of `bits` set, the i-th access stores.
__device__ __forceinline__ void stress_burst(unsigned* p, unsigned bits, unsigned len, unsigned it) {
#pragma unroll 1
  for (unsigned a = 0; a < kPollEvery; a += len)
#pragma unroll 1
    for (unsigned i = 0; i < len; ++i) {
      if ((bits >> i) & 1U) stress_store(p, it);
      else stress_load(p);
    }
}

// sys-str (Sec. 3): the profile's access sequence in a loop, at `spread` patch-aligned locations,
// threads spread evenly over them.
__device__ __forceinline__ void stress_sys(const LaunchTable* t, unsigned gthread, unsigned long long deadline,
                                           volatile unsigned* stop, unsigned tid) {
  unsigned* const p = t->scratch + t->locs[gthread % t->spread];
  const unsigned bits = t->seq_bits, len = t->seq_len;
  for (unsigned it = 0;; ++it) {
    stress_burst(p, bits, len, it);
    if (should_stop(t, deadline, stop, tid)) return;
  }
}

// aim-str: where a stressing thread aims for the next kAimEvery polls. Its page is the one of
// the launch's `spread` scratchpad pages that sys-str would give it a location in; its offset in
// the page is that of an address an instrumented access of the application recorded (a slot
// drawn per warp, a few tries), so the stress falls in the L2 sets and slices that the address's
// offset bits select, wherever the page hashes above them. Nothing recorded yet: the page's first
// word, a random patch-aligned location as in sys-str. `sites` is the number of slots the
// program's fence ids fill (0: never aim).
constexpr unsigned kAimEvery = 16;
constexpr unsigned kAimTries = 4;

__device__ __forceinline__ unsigned* aim_target(const LaunchTable* t, unsigned gthread, unsigned round,
                                                unsigned sites) {
  unsigned* const page = t->scratch + t->aim_base + t->locs[gthread % t->spread] * kAimPageWords;
  unsigned x = mix32((gthread / 32) ^ mix32(round ^ (unsigned)t->rng_seed));
  for (unsigned k = 0; sites > 0 && t->aim && k < kAimTries; ++k, x = mix32(x)) {
    const unsigned long long a = load_relaxed64(t->aim + x % sites);
    if (a != 0) return page + (unsigned)((a >> 2) & (kAimPageWords - 1));
  }
  return page;
}

// aim-str: sys-str's loop, at the locations aim_target picks, picked again every kAimEvery polls
// (so addresses recorded while the stress runs are aimed at too).
__device__ __forceinline__ void stress_aim(const LaunchTable* t, unsigned gthread, unsigned long long deadline,
                                           volatile unsigned* stop, unsigned tid, unsigned sites) {
  const unsigned bits = t->seq_bits, len = t->seq_len;
  for (unsigned it = 0;; ++it) {
    unsigned* const p = aim_target(t, gthread, it / kAimEvery, sites);
    stress_burst(p, bits, len, it);
    if (should_stop(t, deadline, stop, tid)) return;
  }
}

// rand-str (Sec. 4.2): a random load or store at a random scratchpad location per iteration.
__device__ __forceinline__ void stress_rand(const LaunchTable* t, unsigned gthread, unsigned long long deadline,
                                            volatile unsigned* stop, unsigned tid) {
  unsigned x = mix32((unsigned)t->rng_seed ^ mix32(gthread)) | 1U;  // xorshift32 state, never 0
  for (;;) {
    for (unsigned a = 0; a < kPollEvery; ++a) {
      x ^= x << 13;
      x ^= x >> 17;
      x ^= x << 5;
      unsigned* p = t->scratch + __umulhi(x, t->scratch_words);
      if (x & 1U) stress_store(p, x);
      else stress_load(p);
    }
    if (should_stop(t, deadline, stop, tid)) return;
  }
}

// cache-str (Sec. 4.2): each block loads and stores every word of an L2-sized scratchpad in turn.
__device__ __forceinline__ void stress_cache(const LaunchTable* t, unsigned long long deadline, volatile unsigned* stop,
                                             unsigned tid) {
  const unsigned nthreads = blockDim.x * blockDim.y * blockDim.z, words = t->cache_words;
  unsigned i = tid;
  for (unsigned it = 0;; ++it) {
    for (unsigned a = 0; a < kPollEvery; ++a) {
      stress_load(t->scratch + i);
      stress_store(t->scratch + i, it);
      i += nthreads;
      if (i >= words) i = tid;
    }
    if (should_stop(t, deadline, stop, tid)) return;
  }
}

// How many stressing blocks of a launch stress at once: the launch's stress share (S/P) of the
// threads the device holds (computed by the host), at least one. Stressing blocks beyond that
// return at once: since each stresses until the application ends, in grids larger than the
// device they would otherwise pile up until they crowd out the application blocks they wait for.
__device__ __forceinline__ unsigned active_stress_blocks(const LaunchTable* t, unsigned nthreads) {
  return t->stress_quota_threads / nthreads + 1;
}

// Body of a stressing block: number sidx of the launch's stressing blocks, the ticket-th to start;
// `stop` is a shared flag, zero at entry; `aim_sites` the slots aim-str may find addresses in.
__device__ __forceinline__ void run_stress(LaunchTable* t, unsigned sidx, unsigned ticket, volatile unsigned* stop,
                                           unsigned aim_sites) {
  const unsigned nthreads = blockDim.x * blockDim.y * blockDim.z;
  const unsigned tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  if (ticket >= active_stress_blocks(t, nthreads) || !t->scratch) return;
  const unsigned long long deadline = global_timer_ns() + t->max_ns;
  if (should_stop(t, deadline, stop, tid)) return;  // started after the application finished
  const unsigned gthread = sidx * nthreads + tid;  // wraps past 2^32 threads: harmless
  switch (t->stress_kind) {
    case kSysStress: stress_sys(t, gthread, deadline, stop, tid); break;
    case kRandStress: stress_rand(t, gthread, deadline, stop, tid); break;
    case kCacheStress: stress_cache(t, deadline, stop, tid); break;
    case kAimStress: stress_aim(t, gthread, deadline, stop, tid, aim_sites); break;
    default: break;
  }
}

}  // namespace wmfix

#endif  // WMFIX_STRESS_CUH_INCLUDED
