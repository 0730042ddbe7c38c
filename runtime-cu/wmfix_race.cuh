// wmfix race: what a race build adds at the end of wmfix.cuh. The application's fences,
// barriers and atomics are recorded in the trace (wmfix.cuh's race::record) and then done:
// CUDA's names become macros for recording wrappers, so the code after the runtime (the
// application and the headers it includes) calls them. The runtime's own code, above, does not.
// Wrappers are in the global namespace so that `::atomicAdd(...)` still names one.
#ifndef WMFIX_RACE_CUH_INCLUDED
#define WMFIX_RACE_CUH_INCLUDED

#if defined(__CUDA_ARCH__)
namespace wmfix {
namespace {  // beside the recorder in wmfix.cuh (per TU)
namespace race {

template <class T>
__device__ __forceinline__ unsigned long long value_bits(T v) {
  return ::wmfix::race::bits(v);
}

// An atomic that wrote `next(old, operand)`: its values when they are integers (reads-from by
// value needs exact values), else only that it happened (`next` is not even instantiated: a
// float2's atomicAdd has no `+`).
template <class P, class T, class V, class F>
__device__ __forceinline__ void rmw_at(unsigned char scope, P p, T old, V v, F next, true_type) {
  ::wmfix::race::record(kRmw, scope | kValue, (const volatile void*)p, ::wmfix::race::value_bits(old),
                        ::wmfix::race::value_bits(next(old, v)), kNoSite);
}
template <class P, class T, class V, class F>
__device__ __forceinline__ void rmw_at(unsigned char scope, P p, T, V, F, false_type) {
  ::wmfix::race::record(kRmw, scope, (const volatile void*)p, 0, 0, kNoSite);
}
template <class P, class T, class V, class F>
__device__ __forceinline__ void rmw(unsigned char scope, P p, T old, V v, F next) {
  if (!__isGlobal((const void*)p)) return;
  ::wmfix::race::rmw_at(scope, p, old, v, next, bool_constant<is_integral<T>::value>());
}

template <class P, class T>
__device__ __forceinline__ void cas_failed(unsigned char scope, P p, T old) {
  if (!__isGlobal((const void*)p)) return;
  ::wmfix::race::record(kCasFailed, scope | kValue, (const volatile void*)p, ::wmfix::race::value_bits(old), 0, kNoSite);
}

__device__ __forceinline__ void fence(unsigned char scope) { record(kFence, scope, nullptr, 0, 0, kNoSite); }
// An acquire's fence after the access at `p` (libcu++'s): with the address, so that the site
// after the operation still names the access (src/race/trace.rs).
__device__ __forceinline__ void fence_after(unsigned char scope, const volatile void* p) {
  record(kFence, scope, p, 0, 0, kNoSite);
}
__device__ __forceinline__ void barrier() { record(kBarrier, 0, nullptr, 0, 0, kNoSite); }

}  // namespace race
}  // namespace
}  // namespace wmfix
#endif  // __CUDA_ARCH__

// libcu++'s cuda::atomic_ref and cuda::atomic_thread_fence, which the rewriter names
// WMFIX_ATOMIC_REF and WMFIX_ATOMIC_THREAD_FENCE in device code: recorded with their scope and
// order (an acquiring load or read-modify-write as the access then a fence of its scope, a
// releasing one as a fence then the access, as PTX's patterns read them). Included here, before
// the macros below rename CUDA's functions, and only where libcu++ is there (C++17: CCCL 3).
#if defined(__has_include) && __cplusplus >= 201703L
#if __has_include(<cuda/atomic>)
#include <cuda/atomic>
#define WMFIX_LIBCUXX_TRACED 1
namespace wmfix_libcuxx {
// The trace's scope (0 block, 1 device, 2 system) of a cuda::thread_scope.
__host__ __device__ constexpr unsigned char trace_scope(::cuda::thread_scope s) {
  return s == ::cuda::thread_scope_system ? 2 : s == ::cuda::thread_scope_device ? 1 : 0;
}
__host__ __device__ constexpr bool acquires(::cuda::memory_order o) {
  return o == ::cuda::memory_order_consume || o == ::cuda::memory_order_acquire ||
         o == ::cuda::memory_order_acq_rel || o == ::cuda::memory_order_seq_cst;
}
__host__ __device__ constexpr bool releases(::cuda::memory_order o) {
  return o == ::cuda::memory_order_release || o == ::cuda::memory_order_acq_rel ||
         o == ::cuda::memory_order_seq_cst;
}

__host__ __device__ inline void atomic_thread_fence(::cuda::memory_order o,
                                                    ::cuda::thread_scope s = ::cuda::thread_scope_system) {
#if defined(__CUDA_ARCH__)
  if (o != ::cuda::memory_order_relaxed && s != ::cuda::thread_scope_thread) ::wmfix::race::fence(trace_scope(s));
#endif
  ::cuda::atomic_thread_fence(o, s);
}

// The trace's record kinds and flags (src/race/format.rs), here for the host pass too.
enum : unsigned char { kRmw = 2, kCasFailed = 5, kLoad = 6, kStore = 7 };
enum : unsigned char { kStrong = 4, kValue = 8, kScoped = 16 };

// The operations of libcu++'s atomic types, recorded: Base is ::cuda::atomic_ref<T, S> or
// ::cuda::atomic<T, S>, D the wrapper, whose at() is the word's address. The operations are const
// as atomic_ref's are; an atomic's own are called on it as it is (a const atomic is only read).
template <class D, class Base, class T, ::cuda::thread_scope S>
struct traced : Base {
  typedef Base base;
  using Base::Base;
  static constexpr unsigned char scope = trace_scope(S);

  __host__ __device__ T load(::cuda::memory_order o = ::cuda::memory_order_seq_cst) const {
    before(o);
    T v = self().load(o);
    access(kLoad, v);
    after(o);
    return v;
  }
  __host__ __device__ void store(T v, ::cuda::memory_order o = ::cuda::memory_order_seq_cst) const {
    before(o);
    self().store(v, o);
    access(kStore, v);
    after(o);
  }
  __host__ __device__ operator T() const { return load(); }
  __host__ __device__ T operator=(T v) const {
    store(v);
    return v;
  }
// V: T, or for a pointer's fetch_add and fetch_sub its difference type.
#define WMFIX_LIBCUXX_RMW(name, NEXT)                                                               \
  template <class V>                                                                                \
  __host__ __device__ T name(V v, ::cuda::memory_order o = ::cuda::memory_order_seq_cst) const {    \
    before(o);                                                                                      \
    T old = self().name(v, o);                                                                      \
    rmw(old, NEXT);                                                                                 \
    after(o);                                                                                       \
    return old;                                                                                     \
  }
  WMFIX_LIBCUXX_RMW(exchange, T(v))
  WMFIX_LIBCUXX_RMW(fetch_add, old + v)
  WMFIX_LIBCUXX_RMW(fetch_sub, old - v)
  WMFIX_LIBCUXX_RMW(fetch_and, old & v)
  WMFIX_LIBCUXX_RMW(fetch_or, old | v)
  WMFIX_LIBCUXX_RMW(fetch_xor, old ^ v)
  WMFIX_LIBCUXX_RMW(fetch_min, v < old ? v : old)
  WMFIX_LIBCUXX_RMW(fetch_max, old < v ? v : old)
#undef WMFIX_LIBCUXX_RMW
  __host__ __device__ T operator++() const { return fetch_add(1) + 1; }
  __host__ __device__ T operator++(int) const { return fetch_add(1); }
  __host__ __device__ T operator--() const { return fetch_sub(1) - 1; }
  __host__ __device__ T operator--(int) const { return fetch_sub(1); }
  template <class V>
  __host__ __device__ T operator+=(V v) const {
    return fetch_add(v) + v;
  }
  template <class V>
  __host__ __device__ T operator-=(V v) const {
    return fetch_sub(v) - v;
  }
  // An integer's bitwise ones (libcu++'s own would not be recorded).
  __host__ __device__ T operator&=(T v) const { return fetch_and(v) & v; }
  __host__ __device__ T operator|=(T v) const { return fetch_or(v) | v; }
  __host__ __device__ T operator^=(T v) const { return fetch_xor(v) ^ v; }
#define WMFIX_LIBCUXX_CAS(name)                                                                       \
  __host__ __device__ bool name(T& expected, T desired,                                                \
                                ::cuda::memory_order o = ::cuda::memory_order_seq_cst) const {          \
    before(o);                                                                                        \
    const T want = expected;                                                                          \
    return cas(want, expected, desired, o, self().name(expected, desired, o));                        \
  }                                                                                                   \
  __host__ __device__ bool name(T& expected, T desired, ::cuda::memory_order success,                  \
                                ::cuda::memory_order failure) const {                                 \
    before(success);                                                                                  \
    const T want = expected;                                                                          \
    return cas(want, expected, desired, success, self().name(expected, desired, success, failure));    \
  }
  WMFIX_LIBCUXX_CAS(compare_exchange_strong)
  WMFIX_LIBCUXX_CAS(compare_exchange_weak)
#undef WMFIX_LIBCUXX_CAS

 private:
  __host__ __device__ Base& self() const { return const_cast<Base&>(static_cast<const Base&>(*this)); }
  __host__ __device__ const volatile void* at() const { return static_cast<const D*>(this)->at(); }
  __host__ __device__ bool global() const {
#if defined(__CUDA_ARCH__)
    return __isGlobal((const void*)at());
#else
    return false;
#endif
  }
  __host__ __device__ void before(::cuda::memory_order o) const {
#if defined(__CUDA_ARCH__)
    if (releases(o) && global()) ::wmfix::race::fence(scope);
#endif
  }
  __host__ __device__ void after(::cuda::memory_order o) const {
#if defined(__CUDA_ARCH__)
    if (acquires(o) && global()) ::wmfix::race::fence_after(scope, at());
#endif
  }
  __host__ __device__ void access(unsigned char kind, T v) const {
    (void)kind, (void)v;
#if defined(__CUDA_ARCH__)
    if (global())
      ::wmfix::race::record(kind, kStrong | kValue | kScoped | scope, at(),
                            ::wmfix::race::bits(v), 0, ::wmfix::race::kNoSite);
#endif
  }
  __host__ __device__ void rmw(T old, T next) const {
    (void)old, (void)next;
#if defined(__CUDA_ARCH__)
    if (global())
      ::wmfix::race::record(kRmw, scope | kValue, at(), ::wmfix::race::bits(old),
                            ::wmfix::race::bits(next), ::wmfix::race::kNoSite);
#endif
  }
  // A compare-and-swap read `want` where it succeeded, else what `expected` holds now.
  __host__ __device__ bool cas(T want, const T& expected, T desired, ::cuda::memory_order o, bool done) const {
#if defined(__CUDA_ARCH__)
    if (global()) {
      if (done)
        ::wmfix::race::record(kRmw, scope | kValue, at(), ::wmfix::race::bits(want),
                              ::wmfix::race::bits(desired), ::wmfix::race::kNoSite);
      else
        ::wmfix::race::record(kCasFailed, scope | kValue, at(),
                              ::wmfix::race::bits(expected), 0, ::wmfix::race::kNoSite);
    }
#endif
    (void)want, (void)expected, (void)desired;
    if (done) after(o);
    return done;
  }
};

// A reference's wrapper (the word is the one it was bound to), and an atomic object's (the word
// is the object itself).
template <class D, class Base, class T, ::cuda::thread_scope S>
struct bound : traced<D, Base, T, S> {
  __host__ __device__ explicit bound(T& r) : traced<D, Base, T, S>(r), at_(&r) {}
  using traced<D, Base, T, S>::operator=;
  __host__ __device__ const volatile void* at() const { return at_; }
  __host__ __device__ T* word() const { return at_; }

 private:
  T* at_;
};
template <class D, class Base, class T, ::cuda::thread_scope S>
struct object : traced<D, Base, T, S> {
  using traced<D, Base, T, S>::traced;
  object() = default;
  using traced<D, Base, T, S>::operator=;
  __host__ __device__ const volatile void* at() const { return this; }
};

template <class T, ::cuda::thread_scope S = ::cuda::thread_scope_system>
struct atomic_ref : bound<atomic_ref<T, S>, ::cuda::atomic_ref<T, S>, T, S> {
  __host__ __device__ explicit atomic_ref(T& r) : atomic_ref::bound(r) {}
  using atomic_ref::bound::operator=;
};
template <class T, ::cuda::thread_scope S = ::cuda::thread_scope_system>
struct atomic : object<atomic<T, S>, ::cuda::atomic<T, S>, T, S> {
  using atomic::object::object;
  using atomic::object::operator=;
};
// cuda::std's: system scope.
template <class T>
struct std_atomic_ref : bound<std_atomic_ref<T>, ::cuda::std::atomic_ref<T>, T, ::cuda::thread_scope_system> {
  __host__ __device__ explicit std_atomic_ref(T& r) : std_atomic_ref::bound(r) {}
  using std_atomic_ref::bound::operator=;
};
template <class T>
struct std_atomic : object<std_atomic<T>, ::cuda::std::atomic<T>, T, ::cuda::thread_scope_system> {
  using std_atomic::object::object;
  using std_atomic::object::operator=;
};
}  // namespace wmfix_libcuxx
namespace wmfix {
namespace {
// WMFIX_ATOMIC_WORD of a traced reference: the word it refers to (wmfix.cuh's is null).
template <class D, class Base, class T, ::cuda::thread_scope S>
__host__ __device__ __forceinline__ T* atomic_word(const ::wmfix_libcuxx::bound<D, Base, T, S>& r) {
  return r.word();
}
}  // namespace
}  // namespace wmfix
#define WMFIX_ATOMIC_REF ::wmfix_libcuxx::atomic_ref
#define WMFIX_ATOMIC ::wmfix_libcuxx::atomic
#define WMFIX_STD_ATOMIC_REF ::wmfix_libcuxx::std_atomic_ref
#define WMFIX_STD_ATOMIC ::wmfix_libcuxx::std_atomic
#define WMFIX_ATOMIC_THREAD_FENCE ::wmfix_libcuxx::atomic_thread_fence
#endif
#endif

#if defined(__CUDA_ARCH__)
// name: CUDA's function; scope: 0 block, 1 device, 2 system; NEXT: the value written, from
// `o` (the old value) and `v` (the operand), in a function object (C++11: no generic lambda).
#define WMFIX_RACE_RMW(name, scope, NEXT)                                                         \
  struct wmfix_race_next_##name {                                                                 \
    template <class T, class V>                                                                   \
    __device__ T operator()(T o, V v) const {                                                     \
      return NEXT;                                                                                \
    }                                                                                             \
  };                                                                                              \
  template <class P, class V>                                                                     \
  __device__ __forceinline__ auto wmfix_race_##name(P p, V v)->decltype(name(p, v)) {            \
    auto old = name(p, v);                                                                        \
    ::wmfix::race::rmw((scope), p, old, v, wmfix_race_next_##name());                             \
    return old;                                                                                   \
  }
#define WMFIX_RACE_RMW_SCOPES(name, NEXT) \
  WMFIX_RACE_RMW(name, 1, NEXT)           \
  WMFIX_RACE_RMW(name##_block, 0, NEXT)   \
  WMFIX_RACE_RMW(name##_system, 2, NEXT)

WMFIX_RACE_RMW_SCOPES(atomicAdd, o + v)
WMFIX_RACE_RMW_SCOPES(atomicSub, o - v)
WMFIX_RACE_RMW_SCOPES(atomicExch, v)
WMFIX_RACE_RMW_SCOPES(atomicMin, v < o ? v : o)
WMFIX_RACE_RMW_SCOPES(atomicMax, v > o ? v : o)
WMFIX_RACE_RMW_SCOPES(atomicInc, o >= v ? 0 : o + 1)
WMFIX_RACE_RMW_SCOPES(atomicDec, (o == 0 || o > v) ? v : o - 1)
WMFIX_RACE_RMW_SCOPES(atomicAnd, o & v)
WMFIX_RACE_RMW_SCOPES(atomicOr, o | v)
WMFIX_RACE_RMW_SCOPES(atomicXor, o ^ v)

// A compare-and-swap that succeeded wrote its operand.
struct wmfix_race_next_cas {
  template <class T, class V>
  __device__ T operator()(T, V v) const {
    return v;
  }
};
#define WMFIX_RACE_CAS(name, scope)                                                       \
  template <class P, class C, class V>                                                    \
  __device__ __forceinline__ auto wmfix_race_##name(P p, C c, V v)->decltype(name(p, c, v)) { \
    auto old = name(p, c, v);                                                             \
    if (old == c)                                                                         \
      ::wmfix::race::rmw((scope), p, old, v, wmfix_race_next_cas());                      \
    else                                                                                  \
      ::wmfix::race::cas_failed((scope), p, old);                                         \
    return old;                                                                           \
  }
WMFIX_RACE_CAS(atomicCAS, 1)
WMFIX_RACE_CAS(atomicCAS_block, 0)
WMFIX_RACE_CAS(atomicCAS_system, 2)

__device__ __forceinline__ void wmfix_race_threadfence_block() { ::wmfix::race::fence(0); __threadfence_block(); }
__device__ __forceinline__ void wmfix_race_threadfence() { ::wmfix::race::fence(1); __threadfence(); }
__device__ __forceinline__ void wmfix_race_threadfence_system() { ::wmfix::race::fence(2); __threadfence_system(); }
__device__ __forceinline__ void wmfix_race_syncthreads() { ::wmfix::race::barrier(); __syncthreads(); }
__device__ __forceinline__ int wmfix_race_syncthreads_count(int p) { ::wmfix::race::barrier(); return __syncthreads_count(p); }
__device__ __forceinline__ int wmfix_race_syncthreads_and(int p) { ::wmfix::race::barrier(); return __syncthreads_and(p); }
__device__ __forceinline__ int wmfix_race_syncthreads_or(int p) { ::wmfix::race::barrier(); return __syncthreads_or(p); }

#define atomicAdd(...) wmfix_race_atomicAdd(__VA_ARGS__)
#define atomicAdd_block(...) wmfix_race_atomicAdd_block(__VA_ARGS__)
#define atomicAdd_system(...) wmfix_race_atomicAdd_system(__VA_ARGS__)
#define atomicSub(...) wmfix_race_atomicSub(__VA_ARGS__)
#define atomicSub_block(...) wmfix_race_atomicSub_block(__VA_ARGS__)
#define atomicSub_system(...) wmfix_race_atomicSub_system(__VA_ARGS__)
#define atomicExch(...) wmfix_race_atomicExch(__VA_ARGS__)
#define atomicExch_block(...) wmfix_race_atomicExch_block(__VA_ARGS__)
#define atomicExch_system(...) wmfix_race_atomicExch_system(__VA_ARGS__)
#define atomicMin(...) wmfix_race_atomicMin(__VA_ARGS__)
#define atomicMin_block(...) wmfix_race_atomicMin_block(__VA_ARGS__)
#define atomicMin_system(...) wmfix_race_atomicMin_system(__VA_ARGS__)
#define atomicMax(...) wmfix_race_atomicMax(__VA_ARGS__)
#define atomicMax_block(...) wmfix_race_atomicMax_block(__VA_ARGS__)
#define atomicMax_system(...) wmfix_race_atomicMax_system(__VA_ARGS__)
#define atomicInc(...) wmfix_race_atomicInc(__VA_ARGS__)
#define atomicInc_block(...) wmfix_race_atomicInc_block(__VA_ARGS__)
#define atomicInc_system(...) wmfix_race_atomicInc_system(__VA_ARGS__)
#define atomicDec(...) wmfix_race_atomicDec(__VA_ARGS__)
#define atomicDec_block(...) wmfix_race_atomicDec_block(__VA_ARGS__)
#define atomicDec_system(...) wmfix_race_atomicDec_system(__VA_ARGS__)
#define atomicAnd(...) wmfix_race_atomicAnd(__VA_ARGS__)
#define atomicAnd_block(...) wmfix_race_atomicAnd_block(__VA_ARGS__)
#define atomicAnd_system(...) wmfix_race_atomicAnd_system(__VA_ARGS__)
#define atomicOr(...) wmfix_race_atomicOr(__VA_ARGS__)
#define atomicOr_block(...) wmfix_race_atomicOr_block(__VA_ARGS__)
#define atomicOr_system(...) wmfix_race_atomicOr_system(__VA_ARGS__)
#define atomicXor(...) wmfix_race_atomicXor(__VA_ARGS__)
#define atomicXor_block(...) wmfix_race_atomicXor_block(__VA_ARGS__)
#define atomicXor_system(...) wmfix_race_atomicXor_system(__VA_ARGS__)
#define atomicCAS(...) wmfix_race_atomicCAS(__VA_ARGS__)
#define atomicCAS_block(...) wmfix_race_atomicCAS_block(__VA_ARGS__)
#define atomicCAS_system(...) wmfix_race_atomicCAS_system(__VA_ARGS__)
#define __threadfence_block() wmfix_race_threadfence_block()
#define __threadfence() wmfix_race_threadfence()
#define __threadfence_system() wmfix_race_threadfence_system()
#define __syncthreads() wmfix_race_syncthreads()
#define __syncthreads_count(p) wmfix_race_syncthreads_count(p)
#define __syncthreads_and(p) wmfix_race_syncthreads_and(p)
#define __syncthreads_or(p) wmfix_race_syncthreads_or(p)
#endif  // __CUDA_ARCH__

// The trace lives in device memory: a cudaDeviceReset in the application would free it before
// the copy at exit, so the trace is written first (once; later records are not kept).
#if !defined(__CUDA_ARCH__)
inline cudaError_t wmfix_race_device_reset() {
  // The host library writes the trace and forgets the buffer (freed by the reset: later
  // launches record nothing).
  if (const wmfix_host* h = ::wmfix::glue::host()) h->before_device_reset();
  return cudaDeviceReset();
}
#define cudaDeviceReset() wmfix_race_device_reset()
#endif

#endif  // WMFIX_RACE_CUH_INCLUDED
