// wmfix runtime: the host side of an instrumented translation unit (included by wmfix.cuh).
//
// All the host work (the environment, chip profiles, per-launch plans, the launch lock, coverage
// and race traces) is in the host library, wmfix_host.cpp, which `wmfix build` compiles once per
// toolkit; this glue loads it with dlopen at the first launch and hands it a table of the
// program's CUDA runtime (wmfix_abi.h), through which the library makes every CUDA call. What
// stays here is small and C++11: TU registration, the table, wmfix_launch and wmfix_launch_ex
// and the objects they return.
//
// Where the library is: WMFIX_HOST_LIB (wmfix sets it for every run it starts; a library that
// cannot be loaded then stops the program with exit status 3), else WMFIX_HOST_LIBRARY, the
// path `wmfix build` wrote into wmfix_site.h. A program that finds neither runs on, after one
// warning, as no-str- with every fence on: no stress, no WMFIX_* variable read.
//
// Built with -DWMFIX_HOST_LINKED, the program links wmfix_host.cpp itself (runtime-cu's tests).
#ifndef WMFIX_GLUE_CUH_INCLUDED
#define WMFIX_GLUE_CUH_INCLUDED

#include <cuda_runtime.h>
// C headers, for dlopen, getenv and a message on stderr (stdio.h and stdlib.h come with
// cuda_runtime.h already); no C++ standard-library header.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "wmfix_abi.h"
#include "wmfix_common.cuh"
#include "wmfix_site.h"

#if defined(WMFIX_HOST_LINKED)
extern "C" const struct wmfix_host* wmfix_host_open(unsigned abi, const struct wmfix_cuda* cuda,
                                                      struct wmfix_tu* const* registry);
#endif

namespace wmfix {
namespace glue {

// ---- the program's CUDA runtime, as the library calls it -------------------------------------

inline int cu_get_device(int* dev) { return (int)cudaGetDevice(dev); }
inline int cu_device_attribute(int what, int dev, int* value) {
  const cudaDeviceAttr attr = what == WMFIX_ATTR_L2_BYTES ? cudaDevAttrL2CacheSize
                              : what == WMFIX_ATTR_SMS    ? cudaDevAttrMultiProcessorCount
                                                          : cudaDevAttrMaxThreadsPerMultiProcessor;
  return (int)cudaDeviceGetAttribute(value, attr, dev);
}
inline int cu_malloc(void** p, unsigned long long bytes) { return (int)cudaMalloc(p, (size_t)bytes); }
inline int cu_free(void* p) { return (int)cudaFree(p); }
inline int cu_memset(void* p, int v, unsigned long long bytes) { return (int)cudaMemset(p, v, (size_t)bytes); }
inline int cu_memset_async(void* p, int v, unsigned long long bytes, void* stream) {
  return (int)cudaMemsetAsync(p, v, (size_t)bytes, (cudaStream_t)stream);
}
inline int cu_copy_to_device_async(void* dst, const void* src, unsigned long long bytes, void* stream) {
  return (int)cudaMemcpyAsync(dst, src, (size_t)bytes, cudaMemcpyHostToDevice, (cudaStream_t)stream);
}
inline int cu_copy_to_host(void* dst, const void* src, unsigned long long bytes) {
  return (int)cudaMemcpy(dst, src, (size_t)bytes, cudaMemcpyDeviceToHost);
}
inline int cu_stream_wait_event(void* stream, void* event) {
  return (int)cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)event, 0);
}
inline int cu_stream_synchronize(void* stream) { return (int)cudaStreamSynchronize((cudaStream_t)stream); }
inline int cu_stream_capturing(void* stream, int* capturing) {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  const cudaError_t e = cudaStreamIsCapturing((cudaStream_t)stream, &st);
  *capturing = st != cudaStreamCaptureStatusNone;
  return (int)e;
}
inline int cu_event_create(void** event) {
  cudaEvent_t e = nullptr;
  const cudaError_t r = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
  *event = (void*)e;
  return (int)r;
}
inline int cu_event_record(void* event, void* stream) {
  return (int)cudaEventRecord((cudaEvent_t)event, (cudaStream_t)stream);
}
inline int cu_host_register_mapped(void* p, unsigned long long bytes, void** device) {
  cudaError_t e = cudaHostRegister(p, (size_t)bytes, cudaHostRegisterMapped | cudaHostRegisterPortable);
  if (e == cudaSuccess) e = cudaHostGetDevicePointer(device, p, 0);
  return (int)e;
}
inline int cu_mem_get_info(unsigned long long* free_bytes, unsigned long long* total_bytes) {
  size_t f = 0, t = 0;
  const cudaError_t e = cudaMemGetInfo(&f, &t);
  *free_bytes = f;
  *total_bytes = t;
  return (int)e;
}
inline int cu_device_synchronize() { return (int)cudaDeviceSynchronize(); }
inline int cu_get_last_error() { return (int)cudaGetLastError(); }
inline const char* cu_error_string(int e) { return cudaGetErrorString((cudaError_t)e); }
inline int cu_stream_create(void** stream) {
  cudaStream_t st = nullptr;
  const cudaError_t e = cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
  *stream = (void*)st;
  return (int)e;
}
inline int cu_exchange_capture_mode(int* mode) {
  cudaStreamCaptureMode m = (cudaStreamCaptureMode)*mode;
  const cudaError_t e = cudaThreadExchangeStreamCaptureMode(&m);
  *mode = (int)m;
  return (int)e;
}

// Constant-initialised: no guard, valid during static initialisation.
inline const wmfix_cuda* cuda_table() {
  static const wmfix_cuda table = {
      &cu_get_device,          &cu_device_attribute, &cu_malloc,          &cu_free,
      &cu_memset,              &cu_memset_async,     &cu_copy_to_device_async, &cu_copy_to_host,
      &cu_stream_wait_event,   &cu_stream_synchronize, &cu_stream_capturing, &cu_event_create,
      &cu_event_record,        &cu_host_register_mapped, &cu_mem_get_info,  &cu_device_synchronize,
      &cu_error_string,        &cu_stream_create,    &cu_exchange_capture_mode, &cu_get_last_error};
  return &table;
}

// ---- registry of translation units ---------------------------------------------------------------

// The newest registered TU; zero-initialised before any static initialiser runs. Shared by every
// TU (and every shared library with default visibility) as an inline function's static.
inline wmfix_tu** registry() {
  static wmfix_tu* head = nullptr;
  return &head;
}

// Runs in each TU's static initialisation, and for a library loaded later (dlopen) perhaps while
// another thread launches: a lock-free push; the host library reads the list at each launch.
inline bool register_tu(wmfix_tu* tu) {
  wmfix_tu* old = __atomic_load_n(registry(), __ATOMIC_ACQUIRE);
  do {
    tu->next = old;
  } while (!__atomic_compare_exchange_n(registry(), &old, tu, true, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE));
  return true;
}

// ---- loading the host library ----------------------------------------------------------------------

inline const wmfix_host* fail_open(const char* from_env, const char* path, const char* why) {
  if (from_env) {  // wmfix's own runs: a missing library must not pass for a run without stress
    fprintf(stderr, "wmfix: error: WMFIX_HOST_LIB=\"%s\": cannot load the wmfix host library: %s\n", from_env, why);
    fflush(stderr);
    exit(3);
  }
  fprintf(stderr,
          "wmfix: warning: no wmfix host library (%s%s%s): this program runs with every fence on and no stress, "
          "and reads no WMFIX_* variable; set WMFIX_HOST_LIB to the library `wmfix build` made\n",
          path, *path ? ": " : "", why);
  return nullptr;
}

inline const wmfix_host* open_host() {
#if defined(WMFIX_HOST_LINKED)
  return wmfix_host_open(WMFIX_ABI_VERSION, cuda_table(), registry());
#else
  const char* env = getenv("WMFIX_HOST_LIB");
  if (env && !*env) env = nullptr;
  const char* path = env ? env : WMFIX_HOST_LIBRARY;
  if (!*path) return fail_open(env, "", "WMFIX_HOST_LIB is not set and this build names no library");
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    return fail_open(env, path, why ? why : "dlopen failed");
  }
  const wmfix_host_open_fn open = (wmfix_host_open_fn)dlsym(lib, WMFIX_HOST_OPEN_SYMBOL);
  if (!open) return fail_open(env, path, "it has no " WMFIX_HOST_OPEN_SYMBOL);
  const wmfix_host* h = open(WMFIX_ABI_VERSION, cuda_table(), registry());
  if (!h) return fail_open(env, path, "it was built for another version of wmfix.cuh (rebuild with wmfix build)");
  return h;
#endif
}

// The library, loaded at the first call (thread-safe: a function-local static); null when it
// could not be loaded.
inline const wmfix_host* host() {
  static const wmfix_host* const h = open_host();
  return h;
}

}  // namespace glue

// ---- what the rewriter's launches use ---------------------------------------------------------------

// The grid handed to `<<<...>>>`. It lives until the end of the launch statement, so its
// destructor runs after the kernel has been enqueued and records an event behind it: the next
// launch's upload waits on that event, whatever stream it is on, so a table is never overwritten
// while a kernel that reads it may still run.
class LaunchGrid {
 public:
  // `remappable` false: the grid must stay as given (a cooperative or clustered launch through
  // cudaLaunchKernelEx). The launch still uploads a table, one that matches no grid, so the
  // kernel runs with builtin ids rather than the previous launch's mapping.
  LaunchGrid(dim3 g, cudaStream_t stream, bool remappable) : grid_(g), stream_(stream), dev_(-1) {
    if (const wmfix_host* h = glue::host()) {
      const unsigned in[3] = {g.x, g.y, g.z};
      unsigned out[3] = {g.x, g.y, g.z};
      dev_ = h->launch(in, (void*)stream, remappable ? 1 : 0, out);
      grid_ = dim3(out[0], out[1], out[2]);
    }
  }
  explicit LaunchGrid(dim3 g) : grid_(g), stream_(nullptr), dev_(-1) {}
  LaunchGrid(LaunchGrid&& o) : grid_(o.grid_), stream_(o.stream_), dev_(o.dev_) { o.dev_ = -1; }
  LaunchGrid(const LaunchGrid&) = delete;
  LaunchGrid& operator=(const LaunchGrid&) = delete;
  operator dim3() const { return grid_; }
  ~LaunchGrid() {
    if (dev_ >= 0) glue::host()->launched_on(dev_, (void*)stream_);
  }

 private:
  dim3 grid_;
  cudaStream_t stream_;
  int dev_;  // >= 0: record the event on stream_ for this device
};

inline LaunchGrid launch(dim3 grid, cudaStream_t stream, bool remappable = true) {
  return LaunchGrid(grid, stream, remappable);
}

// Whether stressing blocks may join a launch of `c`: not when it is cooperative (its grid must be
// resident at once) or clustered (extra and reordered blocks break the cluster shape).
inline bool remappable(const cudaLaunchConfig_t& c) {
  for (unsigned i = 0; c.attrs != nullptr && i < c.numAttrs; ++i) {
    const cudaLaunchAttribute& a = c.attrs[i];
    if (a.id == cudaLaunchAttributeCooperative && a.val.cooperative != 0) return false;
    if (a.id == cudaLaunchAttributeClusterDimension &&
        (a.val.clusterDim.x != 1 || a.val.clusterDim.y != 1 || a.val.clusterDim.z != 1))
      return false;
  }
  return true;
}

// What cudaLaunchKernelEx and cudaLaunchKernelExC get instead of the caller's config: a copy
// whose grid is the one wmfix::launch returns, or, for a launch that is not remappable, the
// caller's config itself. It holds the LaunchGrid, so the event is recorded at the end of the
// launch statement, as for `<<<...>>>`.
class LaunchConfig {
 public:
  explicit LaunchConfig(const cudaLaunchConfig_t* c)
      : given_(c), keep_(c == nullptr || !remappable(*c)), copy_(c ? *c : cudaLaunchConfig_t()), grid_(grid_of(c, keep_)) {
    copy_.gridDim = grid_;
  }
  LaunchConfig(LaunchConfig&& o) : given_(o.given_), keep_(o.keep_), copy_(o.copy_), grid_(static_cast<LaunchGrid&&>(o.grid_)) {}
  LaunchConfig(const LaunchConfig&) = delete;
  LaunchConfig& operator=(const LaunchConfig&) = delete;
  operator const cudaLaunchConfig_t*() const { return keep_ ? given_ : &copy_; }

 private:
  static LaunchGrid grid_of(const cudaLaunchConfig_t* c, bool keep) {
    if (c == nullptr) return LaunchGrid(dim3());  // cudaLaunchKernelEx reports the error
    return LaunchGrid(c->gridDim, c->stream, !keep);
  }

  const cudaLaunchConfig_t* given_;
  bool keep_;
  cudaLaunchConfig_t copy_;
  LaunchGrid grid_;
};

// ---- for tests and tools ---------------------------------------------------------------------------

struct LaunchInfo {
  unsigned long long launch_index;
  dim3 grid;                 // as the program asked for it
  dim3 launched;             // what wmfix_launch returned
  unsigned app_blocks;       // G
  unsigned stress_blocks;    // S
  bool remapped;
};

// The last remapped launch (all zeros without the library).
inline LaunchInfo last_launch() {
  wmfix_launch_info i = {};
  if (const wmfix_host* h = glue::host()) h->last_launch(&i);
  LaunchInfo out = {i.launch_index,  dim3(i.grid[0], i.grid[1], i.grid[2]), dim3(i.launched[0], i.launched[1], i.launched[2]),
                    i.app_blocks,    i.stress_blocks, i.remapped != 0};
  return out;
}

// Waits for the device, then makes the next launch re-read the environment, restart the launch
// counter and re-upload every TU's constants, as in a new process.
inline void reset_for_tests() {
  if (const wmfix_host* h = glue::host()) h->reset_for_tests();
}

// The settings in force, in words ("" without the library).
inline const char* settings_text() {
  const wmfix_host* h = glue::host();
  return h ? h->describe_settings() : "";
}

}  // namespace wmfix

// k<<<g, b, smem, st>>>(...) becomes k<<<wmfix_launch(g, st), b, smem, st>>>(...).
inline wmfix::LaunchGrid wmfix_launch(dim3 grid, cudaStream_t stream) { return wmfix::launch(grid, stream); }
// cudaLaunchKernelEx(cfg, k, args...) becomes cudaLaunchKernelEx(wmfix_launch_ex(cfg), k, args...),
// and the same for cudaLaunchKernelExC.
inline wmfix::LaunchConfig wmfix_launch_ex(const cudaLaunchConfig_t* config) { return wmfix::LaunchConfig(config); }

#endif  // WMFIX_GLUE_CUH_INCLUDED
