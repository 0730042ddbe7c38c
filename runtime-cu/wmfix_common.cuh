// wmfix runtime: pieces shared by the device side (wmfix.cuh) and the host library
// (wmfix_host.cpp, which a host compiler builds without CUDA's headers).
//
// Everything here has external linkage and touches no per-translation-unit state, so it is
// identical in every TU. The per-launch table below is what the host builds for each launch and
// what the kernel's blocks read once, at WMFIX_KERNEL_ENTRY. C++11, no #include.
#ifndef WMFIX_COMMON_CUH_INCLUDED
#define WMFIX_COMMON_CUH_INCLUDED

#if defined(__CUDACC__)
#define WMFIX_HD __host__ __device__ __forceinline__
#define WMFIX_HD_INLINE __host__ __device__ inline
#else  // the host library, compiled as plain C++
#define WMFIX_HD inline
#define WMFIX_HD_INLINE inline
#endif

namespace wmfix {

constexpr unsigned kMaxSpread = 64;    // sys-str: most locations stressed at once
constexpr unsigned kMaxSeqLen = 32;    // sys-str: longest access sequence (one bit per access)
constexpr unsigned kMaxVariants = 8;   // profiles: most (sequence, spread) variants, one per launch
// Finished application blocks are counted in kDoneStripes counters kDoneStride words apart (one
// 128-byte line each): one counter would serialise an atomic per block in one L2 slice.
constexpr unsigned kDoneStripes = 32;
constexpr unsigned kDoneStride = 32;
constexpr unsigned kDoneWords = kDoneStripes * kDoneStride;

enum StressKind : unsigned { kNoStress = 0, kSysStress = 1, kRandStress = 2, kCacheStress = 3, kAimStress = 4 };

// aim-str: addresses recorded by the application's instrumented accesses (WMFIX_FENCE_AT), one
// slot per fence id (modulo kAimSlots), and the page size whose offsets the stress copies.
// cudaMalloc maps device memory in 2 MiB pages, so an offset within a page is the same in the
// virtual and the physical address: the L2 set and slice bits below 21 are the sampled ones.
constexpr unsigned kAimSlots = 256;
constexpr unsigned kAimPageWords = (2U << 20) / 4;

// Coverage (WMFIX_COVERAGE): two bits a fence id in the filters, `executed` and `global` (on
// global memory, or on memory whose space is not known), and two host bytes a fence id.
// One execution of fence `id`'s site sets its bits in the block's filter (when there is one),
// then in the device's, and writes the host bytes only when the device had not seen them, so a
// hot loop costs a shared-memory test and the host gets one write a site. Returns whether it
// wrote. `Or` is an atomic or returning the old word (atomicOr; a plain one in the host model of
// runtime-cu/tests/host_test.cu).
template <class Or>
WMFIX_HD_INLINE bool cover_site(unsigned* block_bits, unsigned* device_bits, unsigned char* host,
                                           unsigned id, bool global, Or atomic_or) {
  const unsigned bits = (global ? 3U : 1U) << (2 * (id % 16));
  if (block_bits) {
    unsigned* w = block_bits + id / 16;
    if ((*(volatile unsigned*)w & bits) == bits || (atomic_or(w, bits) & bits) == bits) return false;
  }
  if ((atomic_or(device_bits + id / 16, bits) & bits) == bits) return false;
  ((volatile unsigned char*)host)[2 * id] = 1;
  if (global) ((volatile unsigned char*)host)[2 * id + 1] = 1;
  return true;
}

// Written by the host before every launch in an active environment (one cudaMemcpyAsync on the
// launch's stream), read by the launch's blocks. The ticket counter sits alone in the first
// 128-byte line because stressing blocks add to it while others read the rest.
struct alignas(128) LaunchTable {
  unsigned stress_tickets;  // stressing blocks that have started (zeroed per launch)
  unsigned pad_[31];
  unsigned* done;           // kDoneWords counters of finished application blocks (zeroed per
                            // launch; null when the launch has no stressing block)

  // Mapping physical block ids (1-D grid of phys_blocks = app_blocks + stress_blocks) to roles.
  unsigned phys_blocks;   // P; the kernel only trusts this table when gridDim == (P, 1, 1)
  unsigned app_blocks;    // G = product of the original grid's dimensions
  unsigned stress_blocks; // S
  unsigned grid[3];       // the original grid, what wmfix_gridDim() returns
  unsigned rand_blocks;   // 1: roles and virtual ids come from a keyed bijection of [0, P)
  unsigned rand_warps;    // 1: full warps of each block are permuted
  unsigned block_keys[4]; // Feistel round keys for the block bijection (+ environments); key 0
                          // also places stress blocks within segments (- environments)
  unsigned warp_key;      // mixed with the virtual block id to key each block's warp bijection
  unsigned seg_m, seg_r;  // - environments: G = S*seg_m + seg_r (see map_block)

  // What stressing blocks do.
  unsigned stress_kind;   // StressKind
  unsigned seq_bits;      // sys-str: bit i set = access i of the sequence is a store
  unsigned seq_len;
  unsigned spread;
  unsigned locs[kMaxSpread];  // sys-str: word offsets of the stressed locations; aim-str: pages
  unsigned scratch_words;     // rand-str: range of random locations
  unsigned cache_words;       // cache-str: words swept (the L2 size)
  unsigned stress_quota_threads;  // stressing threads that stress at once: (S / P) x the
                                  // threads the device holds (SMs x max threads per SM)
  unsigned* scratch;          // the scratchpad, disjoint from all application memory
  unsigned long long* aim;    // aim-str: kAimSlots recorded addresses (0: none yet)
  unsigned aim_base;          // aim-str: words from scratch to its first 2 MiB boundary
  unsigned aim_pages;         // aim-str: whole 2 MiB pages of the scratchpad from there
  unsigned long long max_ns;  // stressing blocks stop after this long, whatever happens
  unsigned long long rng_seed;
  unsigned long long launch_index;
};

// ---- hashing and bijections (host and device) -------------------------------------------------

// A good 32-bit integer mixer (lowbias32, Chris Wellons).
WMFIX_HD unsigned mix32(unsigned x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

// SplitMix64 finaliser: used on the host to derive per-launch randomness from the seed.
WMFIX_HD unsigned long long mix64(unsigned long long x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Half the bit width of the smallest power of four >= n (n >= 2): a balanced Feistel network
// over 2*half bits then covers [0, n) with a domain of at most 4n, so cycle walking needs fewer
// than 4 rounds of the network on average.
WMFIX_HD unsigned feistel_half_bits(unsigned n) {
  unsigned bits = 1;
  while (bits < 32 && (1ULL << bits) < n) ++bits;
  return (bits + 1) / 2;
}

// One pass of a 4-round balanced Feistel network: a bijection of [0, 4^half).
WMFIX_HD unsigned feistel4(unsigned x, unsigned half, const unsigned k[4]) {
  const unsigned mask = (half >= 32) ? 0xffffffffU : ((1U << half) - 1U);
  unsigned l = (x >> half) & mask, r = x & mask;
  for (int i = 0; i < 4; ++i) {
    const unsigned nl = r;
    r = l ^ (mix32(r ^ k[i]) & mask);
    l = nl;
  }
  return (l << half) | r;
}

// A keyed bijection of [0, n) (x < n): Feistel network plus cycle walking. Cycle walking
// terminates because x lies on a cycle of the bijection that re-enters [0, n).
WMFIX_HD unsigned permute(unsigned x, unsigned n, const unsigned k[4]) {
  if (n <= 1) return x;
  const unsigned half = feistel_half_bits(n);
  do {
    x = feistel4(x, half, k);
  } while (x >= n);
  return x;
}

// Round keys of the warp bijection of the block with virtual linear id `vblock`.
WMFIX_HD void warp_keys(unsigned warp_key, unsigned vblock, unsigned k[4]) {
  const unsigned base = mix32(warp_key ^ mix32(vblock + 0x9e3779b9U));
  for (int i = 0; i < 4; ++i) k[i] = mix32(base + 0x632be5abU * (unsigned)(i + 1));
}

// Virtual warp of physical warp `w` in a block of `nthreads` threads: only full warps move, the
// partial last warp keeps its place.
WMFIX_HD unsigned map_warp(unsigned w, unsigned nthreads, const unsigned k[4]) {
  const unsigned full = nthreads / 32;
  return w < full ? permute(w, full, k) : w;
}

// Role of physical block p of a launch described by t: returns true for an application block and
// sets *vblock to its virtual linear id; returns false for a stressing block and sets *sidx to its
// index in [0, S).
WMFIX_HD bool map_block(const LaunchTable& t, unsigned p, unsigned* vblock,
                                                   unsigned* sidx) {
  if (t.rand_blocks) {  // roles and ids from one bijection: stress blocks land anywhere
    const unsigned q = permute(p, t.phys_blocks, t.block_keys);
    if (q < t.app_blocks) {
      *vblock = q;
      return true;
    }
    *sidx = q - t.app_blocks;
    return false;
  }
  if (t.stress_blocks == 0) {
    *vblock = p;
    return true;
  }
  // Application blocks keep their order; stress blocks are spread evenly with random jitter:
  // with G = S*m + r (0 <= r < S), the physical grid is S segments, segment j holding one
  // stressing block (j) at a keyed random place among its m + (j < r) application blocks.
  // 32-bit arithmetic throughout (P < 2^31), to keep the entry's register needs small.
  const unsigned m = t.seg_m, r = t.seg_r, big = r * (m + 2);  // the first r segments are longer
  unsigned j, off;
  if (p < big) {
    j = p / (m + 2);
    off = p - j * (m + 2);
  } else {
    j = r + (p - big) / (m + 1);
    off = (p - big) - (j - r) * (m + 1);
  }
  const unsigned apps_here = m + (j < r ? 1U : 0U);
  const unsigned pos = mix32(t.block_keys[0] ^ j) % (apps_here + 1);
  if (off == pos) {
    *sidx = j;
    return false;
  }
  *vblock = j * m + (j < r ? j : r) + off - (off > pos ? 1U : 0U);
  return true;
}

// A race build's trace (wmfix race): one record per instrumented access, atomic, fence and
// barrier, in device memory copied out at exit, slots handed out by a device counter; read by
// src/race/trace.rs. Fields are written before `kind`, which 0 marks as never written.
struct RaceRecord {
  unsigned long long addr;
  unsigned long long a;  // the value read or written; an atomic's old value
  unsigned long long b;  // an atomic's new value
  unsigned launch;       // %gridid's low word
  unsigned block;        // linear hardware block
  unsigned site;         // the fence id after the access, or ~0
  unsigned short thread; // linear hardware thread in its block
  unsigned char kind;    // 1 access, 2 atomic, 3 fence, 4 barrier, 5 failed compare-and-swap,
                         // 6 load, 7 store, 8 a site naming no access
  unsigned char flags;   // bits 0-1 scope (block, device, system), 4 strong, 8 value known
};
static_assert(sizeof(RaceRecord) == 40, "the trace format has 40-byte records");

struct RaceLog {  // no initialisers: it lives in __constant__ memory
  RaceRecord* records;  // null: not recording
  unsigned long long capacity;
  unsigned long long* count;  // device memory
};

// What each TU's device constants hold (see wmfix.cuh); zero-initialised = no-str-, all fences.
// The host library fills it in and hands it to each TU's upload function.
struct TuConst {
  unsigned active;          // 1 in every environment but no-str-
  unsigned rand_threads;    // 1 in the `+` environments
  LaunchTable* table;       // this device's launch table
  unsigned long long* aim;  // aim-str: where instrumented accesses record addresses; else null
  unsigned char* coverage;  // WMFIX_COVERAGE: two bytes a fence id, mapped host memory; else null
  RaceLog race;             // WMFIX_RACE_TRACE in a race build; else empty
};

}  // namespace wmfix

#endif  // WMFIX_COMMON_CUH_INCLUDED
