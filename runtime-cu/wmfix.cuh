// wmfix runtime header: included by every file that the wmfix rewriter instruments.
//
// Instrumented files start with
//   #define WMFIX_NUM_FENCES 12   // fences in the whole program, ids 0..N-1
//   #define WMFIX_FENCE_SCOPE 1   // 0 block, 1 device (default), 2 system
//   #include "../wmfix/wmfix.cuh"
//   #line 1
// and use WMFIX_FENCE, WMFIX_FENCE_AT, WMFIX_FENCE_PTR, WMFIX_FENCE_EXPR, WMFIX_AFTER, WMFIX_IN_LOOP,
// WMFIX_KERNEL_ENTRY, wmfix_threadIdx(),
// wmfix_blockIdx(), wmfix_gridDim() and wmfix_launch(). README.md in this folder describes the
// interface, the environment variables and the limits. After Sorensen & Donaldson, "Exposing
// Errors Related to Weak Memory in GPU Applications", PLDI 2016.
//
// C++11 and later, and no standard-library header: this file becomes part of the user's code,
// whose globals may be named like anything in std (`using namespace std; float *array;`), and
// every header it pulled in cost each instrumented file's compile. Every name it declares is in
// namespace wmfix or starts with wmfix_/WMFIX_.
//
// Layout of the runtime:
//   wmfix_common.cuh  launch table, TU constants and keyed bijections (device and host library)
//   wmfix_stress.cuh  the stressing blocks' loops
//   wmfix_glue.cuh    the host side of a TU: loading the host library, TU registration,
//                     wmfix_launch/wmfix_launch_ex
//   wmfix_abi.h       the C interface between the glue and the host library
//   wmfix.cuh         (this file) per-TU device state, the macros and the id functions
//   wmfix_host.cpp    the host library (environment, profiles, plans, trace and coverage
//                     copy-out), built once per toolkit by `wmfix build`, never included here
//
// Device state (the fence mask and the constants saying how this process runs) has internal
// linkage in whole-program mode (one copy per TU, i.e. per device module) and is shared by all
// TUs under -rdc; each TU registers an upload function with the glue at static-initialisation
// time. The per-block state written at kernel entry is one __shared__ variable per block (shared
// by all TUs under -rdc, so that device functions of another TU see the same mapping).

#ifndef WMFIX_NUM_FENCES
#define WMFIX_NUM_FENCES 1
#endif
#ifndef WMFIX_FENCE_SCOPE
#define WMFIX_FENCE_SCOPE 1
#endif

#ifndef WMFIX_CUH_INCLUDED
#define WMFIX_CUH_INCLUDED

#if !defined(__CUDACC__)
#error "wmfix.cuh must be compiled as CUDA (nvcc)"
#endif
#if __cplusplus < 201103L
#error "wmfix.cuh needs C++11 or later"
#endif
#if WMFIX_NUM_FENCES < 1
#error "WMFIX_NUM_FENCES must be at least 1"
#endif
#if WMFIX_FENCE_SCOPE != 0 && WMFIX_FENCE_SCOPE != 1 && WMFIX_FENCE_SCOPE != 2
#error "WMFIX_FENCE_SCOPE must be 0 (block), 1 (device) or 2 (system)"
#endif

#include <cuda_runtime.h>  // nvcc includes it in every .cu file already

#include "wmfix_common.cuh"
#include "wmfix_glue.cuh"
#include "wmfix_stress.cuh"

// A function with statements besides `return` can be constexpr from C++14 on.
#if __cplusplus >= 201402L
#define WMFIX_CONSTEXPR14 constexpr
#else
#define WMFIX_CONSTEXPR14
#endif

// -rdc shares the device state between TUs through inline variables, a C++17 feature that nvcc
// and gcc accept in C++11 and C++14 with a warning (which -Werror would turn into an error).
#if defined(__CUDACC_RDC__) && __cplusplus < 201703L
#define WMFIX_INLINE_VARIABLES_BEGIN \
  _Pragma("nv_diag_suppress 3033") _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wc++17-extensions\"")
#define WMFIX_INLINE_VARIABLES_END _Pragma("nv_diag_default 3033") _Pragma("GCC diagnostic pop")
#else
#define WMFIX_INLINE_VARIABLES_BEGIN
#define WMFIX_INLINE_VARIABLES_END
#endif

namespace wmfix {

// The few type traits the runtime needs, as <type_traits> has them (which it does not include).
template <bool B> struct bool_constant { static const bool value = B; };
typedef bool_constant<true> true_type;
typedef bool_constant<false> false_type;
template <class T> struct is_volatile : false_type {};
template <class T> struct is_volatile<volatile T> : true_type {};
template <class T> struct is_array : false_type {};
template <class T> struct is_array<T[]> : true_type {};
template <class T, decltype(sizeof(0)) N> struct is_array<T[N]> : true_type {};
// Of an object type (what an lvalue names): not a class, union or array.
template <class T> struct is_scalar : bool_constant<!__is_class(T) && !__is_union(T) && !is_array<T>::value> {};
template <class T> struct is_integral : false_type {};
template <class T> struct is_integral<const T> : is_integral<T> {};
template <class T> struct is_integral<volatile T> : is_integral<T> {};
template <class T> struct is_integral<const volatile T> : is_integral<T> {};
#define WMFIX_INTEGRAL(T) \
  template <> struct is_integral<T> : true_type {};
WMFIX_INTEGRAL(bool) WMFIX_INTEGRAL(char) WMFIX_INTEGRAL(signed char) WMFIX_INTEGRAL(unsigned char)
WMFIX_INTEGRAL(wchar_t) WMFIX_INTEGRAL(char16_t) WMFIX_INTEGRAL(char32_t) WMFIX_INTEGRAL(short)
WMFIX_INTEGRAL(unsigned short) WMFIX_INTEGRAL(int) WMFIX_INTEGRAL(unsigned) WMFIX_INTEGRAL(long)
WMFIX_INTEGRAL(unsigned long) WMFIX_INTEGRAL(long long) WMFIX_INTEGRAL(unsigned long long)
#undef WMFIX_INTEGRAL

// As std::is_constant_evaluated: true while a constant expression is evaluated, however deep
// the call; called through a constexpr function, so that a non-constexpr caller gets no warning.
__host__ __device__ __forceinline__ constexpr bool constant_evaluated() { return __builtin_is_constant_evaluated(); }

constexpr unsigned kFenceWords = (WMFIX_NUM_FENCES + 31) / 32;
// aim-str: the address slots this program's fence ids fill.
constexpr unsigned kAimSites = WMFIX_NUM_FENCES < kAimSlots ? WMFIX_NUM_FENCES : kAimSlots;
// Coverage filter words (two bits a fence id); a block keeps its own filter in shared memory up
// to 4,096 fences, beyond that only the device's.
constexpr unsigned kCoverWords = (WMFIX_NUM_FENCES + 15) / 16;
constexpr bool kBlockCover = kCoverWords <= 256;

// What a block's threads need after entry, in active environments: warp 0 writes it at
// WMFIX_KERNEL_ENTRY, a barrier publishes it.
struct BlockState {
  unsigned long long gridid;  // %gridid of the launch that wrote it: the state is valid for this
                              // block only if it matches (a block that did not run the entry,
                              // e.g. of an uninstrumented kernel, falls back to builtin ids)
  unsigned vblock[3];
  unsigned grid[3];
  unsigned recip[2];        // reciprocals of blockDim.x and .y (see div_small)
  unsigned stress;          // 1: stressing block number vblock[0], ticket vblock[1]
  unsigned exited;          // application threads of the block that have left the kernel
  unsigned stop;            // stressing block: time to stop
  unsigned aim_seen[kAimSlots / 32];  // aim-str: fence ids whose address this block recorded
  unsigned cover[kBlockCover ? kCoverWords : 1];  // coverage: this block's filter
  unsigned char vwarp[32];  // virtual warp of each physical warp
};

// n / d for n, d <= 1024 without a division: recip = 2^21 / d + 1 makes (n * recip) >> 21 exact
// (the error n * (recip * d - 2^21) <= 1024 * 1024 stays below 2^21).
__host__ __device__ __forceinline__ unsigned small_recip(unsigned d) { return (1U << 21) / d + 1; }
__host__ __device__ __forceinline__ unsigned div_small(unsigned n, unsigned recip) { return (n * recip) >> 21; }

#if defined(__CUDACC_RDC__)
WMFIX_INLINE_VARIABLES_BEGIN
inline __shared__ BlockState block_state;  // one per block for all TUs (weak symbol)
WMFIX_INLINE_VARIABLES_END
#else
static __shared__ BlockState block_state;  // whole-program mode: a kernel sees only its own TU
#endif

// The process constants and the fence mask (bit set = fence disabled). Zero-initialised means
// no-str- with every fence enabled, which is also what kernels see if nothing was uploaded.
// Whole-program mode: one copy per TU (each TU is its own device module), internal linkage.
// -rdc: one copy for the linked program (weak symbols), which is all -rdc needs. (Per-TU static
// __constant__ variables failed there with nvcc 13.0: when a TU without device code launched a
// kernel of another TU, nvlink sized the constant bank for one TU only, and copies to the other
// TUs' variables failed with cudaErrorInvalidValue.)
#if defined(__CUDACC_RDC__)
WMFIX_INLINE_VARIABLES_BEGIN
inline __constant__ TuConst tu_const;
inline __constant__ unsigned fence_off[kFenceWords];
inline __constant__ unsigned fence_in_loop_off[kFenceWords];
inline __device__ unsigned cover_seen[kCoverWords];  // coverage: the device's filter
WMFIX_INLINE_VARIABLES_END
#endif

namespace {  // per-TU state and everything that reads it: internal linkage

#if !defined(__CUDACC_RDC__)
__constant__ TuConst tu_const;
__constant__ unsigned fence_off[kFenceWords];
__constant__ unsigned fence_in_loop_off[kFenceWords];  // bit set: the in-body placement is off
__device__ unsigned cover_seen[kCoverWords];            // coverage: the device's filter
#endif

// Uploads this TU's constants and fence masks (made by the host library from WMFIX_FENCES and
// WMFIX_FENCES_IN_LOOP for this TU's fence count); called at the first launch on each device.
int tu_upload(const void* c, const unsigned* off, const unsigned* in_loop_off, void* stream) {
  const cudaStream_t st = static_cast<cudaStream_t>(stream);
  const unsigned long long words = sizeof(unsigned) * kFenceWords;
  cudaError_t e = cudaMemcpyToSymbolAsync(tu_const, c, sizeof(TuConst), 0, cudaMemcpyHostToDevice, st);
  if (e == cudaSuccess) e = cudaMemcpyToSymbolAsync(fence_off, off, words, 0, cudaMemcpyHostToDevice, st);
  if (e == cudaSuccess) e = cudaMemcpyToSymbolAsync(fence_in_loop_off, in_loop_off, words, 0, cudaMemcpyHostToDevice, st);
  return static_cast<int>(e);
}

wmfix_tu tu_node = {&tu_upload, WMFIX_NUM_FENCES, nullptr};
__attribute__((unused)) const bool tu_registered = ::wmfix::glue::register_tu(&tu_node);

#if defined(WMFIX_RACE) && defined(__CUDA_ARCH__)
// A race build (wmfix race): each instrumented global access, atomic, fence and barrier takes a
// slot of the trace (wmfix_host.cuh's RaceRecord) in the order the device hands them out.
namespace race {
// kAccess: a load or a store as fences.json says of its site; kLoad, kStore: said here.
// kSite: a fence site that names no access (after a call, a loop, a value), where it sits.
enum : unsigned char { kAccess = 1, kRmw = 2, kFence = 3, kBarrier = 4, kCasFailed = 5, kLoad = 6, kStore = 7, kSite = 8 };
enum : unsigned char { kStrong = 4, kValue = 8 };
constexpr unsigned kNoSite = ~0U;

__device__ __forceinline__ void record(unsigned char kind, unsigned char flags, const volatile void* addr,
                                       unsigned long long a, unsigned long long b, unsigned site) {
  const RaceLog& log = tu_const.race;
  if (log.records == nullptr) return;
  const unsigned long long i = atomicAdd(log.count, 1ULL);
  if (i >= log.capacity) return;
  unsigned long long gid;
  asm("mov.u64 %0, %%gridid;" : "=l"(gid));
  RaceRecord* r = log.records + i;
  r->addr = (unsigned long long)addr;
  r->a = a;
  r->b = b;
  r->launch = (unsigned)gid;
  r->block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  r->site = site;
  r->thread = (unsigned short)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
  r->flags = flags;
  r->kind = kind;
}

template <class T>
__device__ __forceinline__ unsigned long long bits(const T& v) {
  unsigned long long out = 0;
  __builtin_memcpy(&out, &v, sizeof(T) < 8 ? sizeof(T) : 8);
  return out;
}

template <class T> struct plain { typedef T type; };
template <class T> struct plain<volatile T> { typedef T type; };
template <class T> struct plain<const volatile T> { typedef T type; };
template <class T> struct plain<const T> { typedef T type; };

// An access through an lvalue of type T: strong when T is volatile (relaxed, system scope, as
// PTX reads volatile); a strong scalar's value is read again for reads-from. Only global memory
// is recorded: shared memory of two blocks has the same generic addresses.
template <class T>
__device__ __forceinline__ void access_at(unsigned site, T& x, const void* p, unsigned char kind, true_type) {
  const typename plain<T>::type v = x;  // a strong scalar of at most 8 bytes: its value
  ::wmfix::race::record(kind, kStrong | kValue, p, ::wmfix::race::bits(v), 0, site);
}
template <class T>
__device__ __forceinline__ void access_at(unsigned site, T&, const void* p, unsigned char kind, false_type) {
  ::wmfix::race::record(kind, is_volatile<T>::value ? kStrong : 0, p, 0, 0, site);
}
template <class T>
__device__ __forceinline__ void access_ref(unsigned site, T& x, unsigned char kind = kAccess) {
  const void* p = (const void*)__builtin_addressof(x);
  if (!__isGlobal(p)) return;
  typedef typename plain<T>::type U;
  ::wmfix::race::access_at(site, x, p, kind,
                           bool_constant<is_volatile<T>::value && is_scalar<U>::value && sizeof(U) <= 8>());
}

// The same with the value the access read (WMFIX_AFTER).
template <class T, class V>
__device__ __forceinline__ void access_read(unsigned site, T& x, const V& read) {
  const void* p = (const void*)__builtin_addressof(x);
  if (!__isGlobal(p)) return;
  if (is_volatile<T>::value && sizeof(V) <= 8)
    ::wmfix::race::record(kAccess, kStrong | kValue, p, ::wmfix::race::bits(read), 0, site);
  else
    ::wmfix::race::record(kAccess, is_volatile<T>::value ? kStrong : 0, p, 0, 0, site);
}
template <class T, class V>
__device__ __forceinline__ void access_read(unsigned, const T&&, const V&) {}

// A bit-field or a prvalue has no address: nothing to record (as address_of).
template <class T>
__device__ __forceinline__ void access_ref(unsigned, const T&&, unsigned char = kAccess) {}
__device__ __forceinline__ void access_ref(unsigned, ...) {}

// Through a pointer: what it points at; anything else names no access.
template <class T>
__device__ __forceinline__ void access_ptr(unsigned site, T* p) {
  if (p != nullptr) ::wmfix::race::access_ref(site, *p);
}
template <class P>
__device__ __forceinline__ void access_ptr(unsigned, const P&) {}
}  // namespace race
#define WMFIX_RACE_ACCESS(id, ...) ::wmfix::race::access_ref((id), __VA_ARGS__)
#define WMFIX_RACE_ACCESS_PTR(id, ...) ::wmfix::race::access_ptr((id), __VA_ARGS__)
#endif

__device__ __forceinline__ void scope_fence() {
#if WMFIX_FENCE_SCOPE == 0
  __threadfence_block();
#elif WMFIX_FENCE_SCOPE == 1
  __threadfence();
#else
  __threadfence_system();
#endif
}

template <unsigned Id>
__host__ __device__ __forceinline__ void fence_if() {
#if defined(__CUDA_ARCH__)
  static_assert(Id < WMFIX_NUM_FENCES, "wmfix: fence id >= WMFIX_NUM_FENCES");
  if (!((fence_off[Id / 32] >> (Id % 32)) & 1U)) {
#if defined(WMFIX_RACE)
    race::record(race::kFence, WMFIX_FENCE_SCOPE, nullptr, 0, 0, Id);
#endif
    scope_fence();
  }
#endif
}

// A loop condition's fence has two placements, the top of the body and after the loop; the
// first is guarded by WMFIX_IN_LOOP(id), so the reducer can try the one after the loop alone.
template <unsigned Id>
__device__ __forceinline__ bool in_loop_on() {
  return !((fence_in_loop_off[Id / 32] >> (Id % 32)) & 1U);
}

// WMFIX_AFTER: the argument is evaluated (once) and read before the fence, and its value is
// returned as a prvalue; an lvalue of class type is returned as the same lvalue (`return *this`
// in a function returning a reference, as in libcu++ and CUB), since copying it would change
// what the expression means.
template <class T> struct unref { typedef T type; };
template <class T> struct unref<T&> { typedef T type; };
// gcc refuses built-in traits in a function signature (it cannot mangle them): behind a struct.
template <class T> struct is_object { static const bool value = __is_class(T) || __is_union(T); };
template <class T, bool Class>
struct after_type { typedef T type; };
template <class T>
struct after_type<T&, true> { typedef T& type; };
template <class T>
struct after_type<T&, false> : after_type<T, false> {};
template <class T>
struct after_type<const T, false> : after_type<T, false> {};
template <class T>
struct after_type<volatile T, false> : after_type<T, false> {};
template <class T>
struct after_type<const volatile T, false> : after_type<T, false> {};
// An array decays to a pointer to its (cv-qualified) elements, as a prvalue of it would.
template <class T, decltype(sizeof(0)) N>
struct after_type<T[N], false> { typedef T* type; };
template <class T, decltype(sizeof(0)) N>
struct after_type<const T[N], false> { typedef const T* type; };
template <class T, decltype(sizeof(0)) N>
struct after_type<volatile T[N], false> { typedef volatile T* type; };
template <class T, decltype(sizeof(0)) N>
struct after_type<const volatile T[N], false> { typedef const volatile T* type; };
template <class T>
struct after_result : after_type<T, is_object<typename unref<T>::type>::value> {};


__device__ __forceinline__ unsigned long long grid_id() {
  unsigned long long g;
  asm("mov.u64 %0, %%gridid;" : "=l"(g));  // not volatile: constant for the whole launch
  return g;
}

__device__ __forceinline__ bool block_state_valid() { return block_state.gridid == grid_id(); }

__device__ __forceinline__ unsigned linear_tid() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

constexpr unsigned long long kStressBlock = 1;  // entry token: this block stressed; return now

// Warp 0 fills in the block's state: lane 0 the block fields, lane i the virtual warp of warp i
// (all lanes compute the block's mapping, which costs a warp no more than one lane).
__device__ __forceinline__ void setup_block(LaunchTable* t, BlockState& s, unsigned lane) {
  const unsigned nthreads = blockDim.x * blockDim.y * blockDim.z;
  const bool ours = t && gridDim.x == t->phys_blocks && gridDim.y == 1 && gridDim.z == 1;
  unsigned v = 0, sidx = 0;
  if (!ours) {  // not launched through wmfix_launch (or not remappable): builtin ids
    if (lane == 0) {
      s.vblock[0] = blockIdx.x, s.vblock[1] = blockIdx.y, s.vblock[2] = blockIdx.z;
      s.grid[0] = gridDim.x, s.grid[1] = gridDim.y, s.grid[2] = gridDim.z;
    }
  } else if (!map_block(*t, blockIdx.x, &v, &sidx)) {
    if (lane == 0) {
      s.vblock[0] = sidx;
      s.vblock[1] = atomicAdd(&t->stress_tickets, 1U);
      s.stress = 1;
      s.stop = 0;
      s.gridid = grid_id();
    }
    return;
  } else if (lane == 0) {
    const unsigned gx = t->grid[0], gy = t->grid[1];
    if (gy == 1 && t->grid[2] == 1) s.vblock[0] = v, s.vblock[1] = 0, s.vblock[2] = 0;
    else s.vblock[0] = v % gx, s.vblock[1] = (v / gx) % gy, s.vblock[2] = v / (gx * gy);
    s.grid[0] = gx, s.grid[1] = gy, s.grid[2] = t->grid[2];
  }
  if (lane < kAimSlots / 32) s.aim_seen[lane] = 0;
  if (kBlockCover)
    for (unsigned w = lane; w < kCoverWords; w += 32) s.cover[w] = 0;
  if (lane == 0) {
    s.recip[0] = small_recip(blockDim.x), s.recip[1] = small_recip(blockDim.y);
    s.stress = 0;
    s.exited = 0;
    s.gridid = grid_id();
  }
  if (lane < (nthreads + 31) / 32) {
    unsigned vw = lane;
    if (ours && t->rand_warps) {
      unsigned k[4];
      warp_keys(t->warp_key, v, k);
      vw = map_warp(lane, nthreads, k);
    }
    s.vwarp[lane] = (unsigned char)vw;
  }
}

// Entry in an active environment: classify this physical block, run the stress loop or record
// the block's mapping. Returns 0 (no counting), kStressBlock, or the address of the launch's
// counters of finished application blocks. All threads of the block are here (the entry is the
// kernel's first statement), so the barrier is safe. Not inlined: one copy a TU rather than one
// a kernel (the stress loops are most of the runtime's device code, and inlined into every
// kernel they were most of what the runtime cost each compiled file); it runs once a block.
__device__ __noinline__ unsigned long long enter_active() {
  LaunchTable* t = tu_const.table;
  BlockState& s = block_state;
  const unsigned tid = linear_tid();
  if (tid < 32) setup_block(t, s, tid);
  __syncthreads();
  if (s.stress) {
    run_stress(t, s.vblock[0], s.vblock[1], &s.stop, kAimSites);
    return kStressBlock;
  }
  const bool ours = t && gridDim.x == t->phys_blocks && gridDim.y == 1 && gridDim.z == 1;
  return ours ? (unsigned long long)t->done : 0ULL;
}

// ---- aim-str: where the application's instrumented accesses land ----------------------------

__device__ __forceinline__ bool aiming() { return tu_const.aim != nullptr; }

// The address of the lvalue an access names (a bit-field has none: null).
template <class T>
__device__ __forceinline__ const volatile void* address_of(T& x) {
  return (const volatile void*)__builtin_addressof(x);
}
template <class T>
__device__ __forceinline__ const volatile void* address_of(const T&&) {
  return nullptr;
}
__device__ __forceinline__ const volatile void* address_of(...) { return nullptr; }

// The word a libcu++ atomic_ref refers to (WMFIX_ATOMIC_WORD): a race build's wrapper keeps it
// (its overload in wmfix_race.cuh); libcu++'s own atomic_ref does not say (null: unknown).
template <class A>
__host__ __device__ __forceinline__ decltype(nullptr) atomic_word(const A&) {
  return nullptr;
}

struct DeviceOr {
  __device__ unsigned operator()(unsigned* w, unsigned bits) const { return atomicOr(w, bits); }
};

// Coverage of fence site `id` (only while recording it). Inline: a call at each of thousands
// of fence sites in unrolled library code (CUTLASS's GEMM: 30,840 calls in its PTX) made ptxas
// save registers around every one, and the compile took four times as long.
__device__ __forceinline__ void cover(unsigned id, bool global) {
  cover_site(kBlockCover && block_state_valid() ? block_state.cover : nullptr, cover_seen, tu_const.coverage, id,
             global, DeviceOr());
}

// A fence site after an access at `p` (null: the space is not known, as after a call or a
// bit-field): fenced, and counted as global, only when the access may be on global memory. The
// fences are for ordering global accesses across blocks; no other block sees a shared or local
// access.
__device__ __forceinline__ bool may_be_global(const volatile void* p) {
  return p == nullptr || __isGlobal((const void*)p);
}

// Fenced, and counted (as run on global memory), only when an access of the site may be on
// global memory. A site on shared or local memory is not counted at all: where the compiler
// knows the space (register arrays, shared tiles) the whole site then folds away, where a count
// of it kept the coverage code at every such site (CUTLASS's basic_gemm compiled in 53.6 s with
// it, 19.0 s without, 11.8 s as written; results/2026-11-29-compile-time).
template <unsigned Id>
__device__ __forceinline__ void fence_global(bool global) {
  if (!global) return;
  if (tu_const.coverage != nullptr) cover(Id, true);
  fence_if<Id>();
}

// After an access at `p` (null: none named), fenced when `global`.
template <unsigned Id>
__device__ __forceinline__ void fence_at_if(const volatile void* p, bool global) {
#if defined(WMFIX_RACE) && defined(__CUDA_ARCH__)
  if (p == nullptr) race::record(race::kSite, 0, nullptr, 0, 0, Id);
#endif
  ::wmfix::fence_global<Id>(global);
}

template <unsigned Id>
__device__ __forceinline__ void fence_at(const volatile void* p) {
  ::wmfix::fence_at_if<Id>(p, ::wmfix::may_be_global(p));
}

// A fence site after a statement of several accesses (`s[i] = g[i]`, s a pointer the program
// points at shared memory): the access the fence names may be shared while another is global,
// so whether it fences does not depend on the named one; counted as global.
template <unsigned Id>
__device__ __forceinline__ void fence_any() {
  ::wmfix::fence_global<Id>(true);
}

// constexpr: a wrapped value in a constexpr function (libcu++'s <chrono>) must stay a constant
// expression; constant evaluation fences nothing.
template <unsigned Id, class T>
__host__ __device__ __forceinline__ WMFIX_CONSTEXPR14 typename after_result<T>::type after_ref(T&& value) {
  typename after_result<T>::type read = static_cast<T&&>(value);
#if defined(__CUDA_ARCH__)
  if (!::wmfix::constant_evaluated()) {
#if defined(WMFIX_RACE)
    ::wmfix::race::access_read(Id, static_cast<T&&>(value), read);
#endif
    ::wmfix::fence_at<Id>(::wmfix::address_of(static_cast<T&&>(value)));
  }
#endif
  return read;
}

// WMFIX_AFTER_IF: WMFIX_AFTER where the rewriter named every place the value accesses:
// fenced when one of them may be global (`global`), or the value is an lvalue that may be.
template <unsigned Id, class T>
__host__ __device__ __forceinline__ WMFIX_CONSTEXPR14 typename after_result<T>::type after_ref_if(bool global,
                                                                                              T&& value) {
  typename after_result<T>::type read = static_cast<T&&>(value);
#if defined(__CUDA_ARCH__)
  if (!::wmfix::constant_evaluated()) {
#if defined(WMFIX_RACE)
    ::wmfix::race::access_read(Id, static_cast<T&&>(value), read);
#endif
    const volatile void* const p = ::wmfix::address_of(static_cast<T&&>(value));
    ::wmfix::fence_at_if<Id>(p, global || (p != nullptr && __isGlobal((const void*)p)));
  }
#endif
  return read;
}

// WMFIX_AFTER_RETURN: WMFIX_AFTER of a returned value, which may be void (`return f(a[i]);` in
// a function returning void): a void operand of the comma with a void_value is that void_value,
// any other the comma below hands on unchanged.
struct void_value {};
template <class T>
__host__ __device__ __forceinline__ constexpr T&& operator,(T&& value, void_value) {
  return static_cast<T&&>(value);
}
template <unsigned Id>
__host__ __device__ __forceinline__ WMFIX_CONSTEXPR14 void after_return(void_value) {
#if defined(__CUDA_ARCH__)
  if (!::wmfix::constant_evaluated()) ::wmfix::fence_at<Id>(nullptr);
#endif
}
template <unsigned Id, class T>
__host__ __device__ __forceinline__ WMFIX_CONSTEXPR14 typename after_result<T>::type after_return(T&& value) {
  return ::wmfix::after_ref<Id>(static_cast<T&&>(value));
}
template <unsigned Id>
__host__ __device__ __forceinline__ WMFIX_CONSTEXPR14 void after_return_if(bool global, void_value) {
#if defined(__CUDA_ARCH__)
  if (!::wmfix::constant_evaluated()) ::wmfix::fence_at_if<Id>(nullptr, global);
#endif
}
template <unsigned Id, class T>
__host__ __device__ __forceinline__ WMFIX_CONSTEXPR14 typename after_result<T>::type after_return_if(bool global,
                                                                                                 T&& value) {
  return ::wmfix::after_ref_if<Id>(global, static_cast<T&&>(value));
}

// Records where fence `id`'s access went, for the stressing blocks to aim at (aim-str only):
// the first time a block runs the access (one lane; later runs and other lanes only test a
// shared bit), so a hot loop does not hammer the slot. Other blocks and later launches
// overwrite it. Only global memory counts, and only in blocks whose mapping this launch wrote.
// Inline, with the test for global memory first: for an object the compiler keeps in registers
// (CUTLASS's Matrix and Array members) __isGlobal folds to false and the address goes nowhere;
// out of line, the address forced such objects into memory and each site was a call (CUTLASS's
// basic_gemm instrumented: past 25 minutes in cicc; results/2026-11-29-compile-time).
__device__ __forceinline__ void aim_at(unsigned id, const volatile void* p) {
  if (!aiming() || p == nullptr || !__isGlobal((const void*)p) || !block_state_valid()) return;
  const unsigned k = id % kAimSlots, bit = 1U << (k % 32);
  unsigned* const seen = &block_state.aim_seen[k / 32];
  if ((*(volatile unsigned*)seen & bit) || (atomicOr(seen, bit) & bit)) return;
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(tu_const.aim + k),
               "l"((unsigned long long)p));
}

__device__ __forceinline__ unsigned long long kernel_entry() { return tu_const.active ? enter_active() : 0ULL; }

// At an application thread's exit: the block's last thread to leave counts the block. One
// shared atomic per group of converged threads, one global atomic per block.
__device__ __forceinline__ void count_exit(unsigned* done) {
  const unsigned active = __activemask();
  unsigned lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  if (lane != (unsigned)(__ffs(active) - 1)) return;
  const unsigned n = __popc(active);
  if (atomicAdd(&block_state.exited, n) + n == blockDim.x * blockDim.y * blockDim.z)
    atomicAdd(done + (blockIdx.x % kDoneStripes) * kDoneStride, 1U);
}

// Declared by WMFIX_KERNEL_ENTRY in every kernel: its destructor runs at every return of an
// application thread, which is how stressing blocks learn that the application has finished.
class ExitGuard {
 public:
  __device__ explicit ExitGuard(unsigned long long token) : token_(token) {}
  ExitGuard(const ExitGuard&) = delete;
  ExitGuard& operator=(const ExitGuard&) = delete;
  __device__ bool stress_block() const { return token_ == kStressBlock; }
  __device__ ~ExitGuard() {
    if (token_ > kStressBlock) count_exit(reinterpret_cast<unsigned*>(token_));
  }

 private:
  unsigned long long token_;  // 0, kStressBlock, or the launch's block counters
};

}  // namespace

}  // namespace wmfix

// ---- what instrumented code uses -------------------------------------------------------------

// WMFIX_FENCE_AT(id, lvalue) and WMFIX_FENCE_PTR(id, pointer): WMFIX_FENCE(id), and under
// aim-str the address of the access it follows, recorded for the stressing blocks. The address
// expression is evaluated only then, after the fence, and never read or written through.
// A fence in a constexpr function that a constant expression calls (a static_assert in device
// code) must not be evaluated there: constant evaluation fences nothing.
#if defined(__CUDA_ARCH__)
#define WMFIX_CONSTANT_EVALUATED() ::wmfix::constant_evaluated()
#define WMFIX_FENCE(id) (WMFIX_CONSTANT_EVALUATED() ? (void)0 : ::wmfix::fence_at<(id)>(nullptr))
#define WMFIX_FENCE_EXPR(id) WMFIX_FENCE(id)
#define WMFIX_FENCE_AT(id, ...)                                                    \
  do {                                                                             \
    if (!WMFIX_CONSTANT_EVALUATED()) {                                             \
      const volatile void* const wmfix_at_ = ::wmfix::address_of(__VA_ARGS__);   \
      WMFIX_RACE_ACCESS((id), __VA_ARGS__);                                        \
      ::wmfix::fence_at<(id)>(wmfix_at_);                                          \
      ::wmfix::aim_at((id), wmfix_at_);                                            \
    }                                                                              \
  } while (0)
#define WMFIX_FENCE_PTR(id, ...)                                                   \
  do {                                                                             \
    if (!WMFIX_CONSTANT_EVALUATED()) {                                             \
      const volatile void* const wmfix_at_ = (const volatile void*)(__VA_ARGS__); \
      WMFIX_RACE_ACCESS_PTR((id), __VA_ARGS__);                                    \
      ::wmfix::fence_at<(id)>(wmfix_at_);                                          \
      ::wmfix::aim_at((id), wmfix_at_);                                            \
    }                                                                              \
  } while (0)
// WMFIX_FENCE_AIM(id, lvalue) and WMFIX_FENCE_AIM_PTR(id, pointer): the same after a statement of
// several accesses, fencing whatever memory the named one is on (fence_any).
#define WMFIX_FENCE_AIM(id, ...)                                                   \
  do {                                                                             \
    if (!WMFIX_CONSTANT_EVALUATED()) {                                             \
      const volatile void* const wmfix_at_ = ::wmfix::address_of(__VA_ARGS__);   \
      WMFIX_RACE_ACCESS((id), __VA_ARGS__);                                        \
      ::wmfix::fence_any<(id)>();                                                  \
      ::wmfix::aim_at((id), wmfix_at_);                                            \
    }                                                                              \
  } while (0)
#define WMFIX_FENCE_AIM_PTR(id, ...)                                               \
  do {                                                                             \
    if (!WMFIX_CONSTANT_EVALUATED()) {                                             \
      const volatile void* const wmfix_at_ = (const volatile void*)(__VA_ARGS__); \
      WMFIX_RACE_ACCESS_PTR((id), __VA_ARGS__);                                    \
      ::wmfix::fence_any<(id)>();                                                  \
      ::wmfix::aim_at((id), wmfix_at_);                                            \
    }                                                                              \
  } while (0)
// WMFIX_FENCE_AIM_IF(id, others, lvalue): WMFIX_FENCE_AIM where the rewriter named every place
// the statement accesses: `others` is WMFIX_GLOBAL(b[j]) || ... of the places but the named
// one, and the fence is made when one of them, or the named one, may be global.
#define WMFIX_FENCE_AIM_IF(id, others, ...)                                         \
  do {                                                                             \
    if (!WMFIX_CONSTANT_EVALUATED()) {                                             \
      const volatile void* const wmfix_at_ = ::wmfix::address_of(__VA_ARGS__);   \
      WMFIX_RACE_ACCESS((id), __VA_ARGS__);                                        \
      ::wmfix::fence_global<(id)>(::wmfix::may_be_global(wmfix_at_) || (others));  \
      ::wmfix::aim_at((id), wmfix_at_);                                            \
    }                                                                              \
  } while (0)
#else
#define WMFIX_FENCE(id) ((void)0)
#define WMFIX_FENCE_EXPR(id) ((void)0)
#define WMFIX_FENCE_AT(id, ...) ((void)0)
#define WMFIX_FENCE_PTR(id, ...) ((void)0)
#define WMFIX_FENCE_AIM(id, ...) ((void)0)
#define WMFIX_FENCE_AIM_PTR(id, ...) ((void)0)
#define WMFIX_FENCE_AIM_IF(id, others, ...) ((void)0)
#endif
// Whether an lvalue may be on global memory (no address, as a bit-field's: it may); in a host
// pass (a __host__ __device__ function's WMFIX_AFTER_IF), true and unevaluated.
#if defined(__CUDA_ARCH__)
#define WMFIX_GLOBAL(...) ::wmfix::may_be_global(::wmfix::address_of(__VA_ARGS__))
#else
#define WMFIX_GLOBAL(...) true
#endif
// The word of a libcu++ atomic_ref after one of its operations (WMFIX_FENCE_PTR(id,
// WMFIX_ATOMIC_WORD(r))): a typed pointer, whose access a race build records at the site, so
// that the trace names the wrapper's record of the operation (src/race/trace.rs); or null.
#define WMFIX_ATOMIC_WORD(...) ::wmfix::atomic_word(__VA_ARGS__)
#if defined(__CUDA_ARCH__)
#define WMFIX_IN_LOOP(id) (!WMFIX_CONSTANT_EVALUATED() && ::wmfix::in_loop_on<(id)>())
#else
#define WMFIX_IN_LOOP(id) true
#endif
#define WMFIX_AFTER(id, ...) (::wmfix::after_ref<(id)>(__VA_ARGS__))
#define WMFIX_AFTER_RETURN(id, ...) (::wmfix::after_return<(id)>(((__VA_ARGS__), ::wmfix::void_value())))
// The same where every place the value accesses is named: `global` is WMFIX_GLOBAL(a[i]) || ...,
// not evaluated in constant evaluation (it takes addresses).
#define WMFIX_AFTER_IF(id, global, ...) \
  (::wmfix::after_ref_if<(id)>((::wmfix::constant_evaluated() || (global)), __VA_ARGS__))
#define WMFIX_AFTER_RETURN_IF(id, global, ...)                                      \
  (::wmfix::after_return_if<(id)>((::wmfix::constant_evaluated() || (global)), \
                                  ((__VA_ARGS__), ::wmfix::void_value())))

// A statement's other accesses (its fence names one): recorded by a race build, else nothing.
// Not while a constant expression is evaluated (a constexpr function's loop: nothing to record).
#if defined(WMFIX_RACE) && defined(__CUDA_ARCH__)
#define WMFIX_RACE_LOAD(id, ...) \
  (WMFIX_CONSTANT_EVALUATED() ? (void)0 : ::wmfix::race::access_ref((id), (__VA_ARGS__), ::wmfix::race::kLoad))
#define WMFIX_RACE_STORE(id, ...) \
  (WMFIX_CONSTANT_EVALUATED() ? (void)0 : ::wmfix::race::access_ref((id), (__VA_ARGS__), ::wmfix::race::kStore))
#else
#define WMFIX_RACE_ACCESS(id, ...) ((void)0)
#define WMFIX_RACE_ACCESS_PTR(id, ...) ((void)0)
#define WMFIX_RACE_LOAD(id, ...) ((void)0)
#define WMFIX_RACE_STORE(id, ...) ((void)0)
#endif

// First statement of every kernel. A stressing block stresses and returns; an application block
// records its mapping and falls through.
#define WMFIX_KERNEL_ENTRY()                                                   \
  ::wmfix::ExitGuard wmfix_exit_guard_(::wmfix::kernel_entry());              \
  if (wmfix_exit_guard_.stress_block()) return

// Virtual ids. In no-str- (and in the host pass) they are the builtins (zeros on the host); the
// fast path is one read of a per-TU __constant__, which the compiler hoists out of loops.
static __host__ __device__ __forceinline__ uint3 wmfix_threadIdx() {
#if defined(__CUDA_ARCH__)
  if (!wmfix::tu_const.rand_threads || !wmfix::block_state_valid()) return threadIdx;
  const unsigned bx = blockDim.x, by = blockDim.y;
  const unsigned lin = threadIdx.x + bx * (threadIdx.y + by * threadIdx.z);
  const wmfix::BlockState& s = wmfix::block_state;
  const unsigned v = ((unsigned)s.vwarp[lin / 32] * 32) | (lin % 32);
  if (by == 1 && blockDim.z == 1) return make_uint3(v, 0, 0);
  const unsigned q = wmfix::div_small(v, s.recip[0]), z = wmfix::div_small(q, s.recip[1]);
  return make_uint3(v - q * bx, q - z * by, z);
#else
  return make_uint3(0, 0, 0);
#endif
}

static __host__ __device__ __forceinline__ uint3 wmfix_blockIdx() {
#if defined(__CUDA_ARCH__)
  if (!wmfix::tu_const.active || !wmfix::block_state_valid()) return blockIdx;
  const wmfix::BlockState& s = wmfix::block_state;
  return make_uint3(s.vblock[0], s.vblock[1], s.vblock[2]);
#else
  return make_uint3(0, 0, 0);
#endif
}

static __host__ __device__ __forceinline__ dim3 wmfix_gridDim() {
#if defined(__CUDA_ARCH__)
  if (!wmfix::tu_const.active || !wmfix::block_state_valid()) return gridDim;
  const wmfix::BlockState& s = wmfix::block_state;
  return dim3(s.grid[0], s.grid[1], s.grid[2]);
#else
  return dim3(0, 0, 0);
#endif
}

#if defined(WMFIX_RACE)
#include "wmfix_race.cuh"
#endif
// libcu++'s names as the rewriter writes them in device code: themselves, unless a race build
// traces them (wmfix_race.cuh).
#if !defined(WMFIX_ATOMIC_REF)
#define WMFIX_ATOMIC_REF ::cuda::atomic_ref
#define WMFIX_ATOMIC ::cuda::atomic
#define WMFIX_STD_ATOMIC_REF ::cuda::std::atomic_ref
#define WMFIX_STD_ATOMIC ::cuda::std::atomic
#define WMFIX_ATOMIC_THREAD_FENCE ::cuda::atomic_thread_fence
#endif

#endif  // WMFIX_CUH_INCLUDED
