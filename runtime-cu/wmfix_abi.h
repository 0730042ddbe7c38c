/* wmfix runtime: the C interface between what instrumented code includes (wmfix.cuh's glue,
 * wmfix_glue.cuh) and the host library (wmfix_host.cpp, built once per toolkit by `wmfix build`
 * and loaded with dlopen at the first launch).
 *
 * The library makes no CUDA call of its own: every call goes through `wmfix_cuda`, a table of
 * the program's CUDA runtime that the glue hands over, so device memory, streams, events and
 * the error state are the program's (which links cudart statically by default: a second
 * runtime in the library would be a second instance in the process). Only plain C types cross,
 * so the library needs no CUDA header and the glue no C++ standard library.
 *
 * Plain C, no #include: this file is part of every instrumented translation unit. */
#ifndef WMFIX_ABI_H_INCLUDED
#define WMFIX_ABI_H_INCLUDED

/* Bumped whenever a struct below changes: a library of another version refuses to open. */
#define WMFIX_ABI_VERSION 3
/* The symbol the library exports (a wmfix_host_open_fn). */
#define WMFIX_HOST_OPEN_SYMBOL "wmfix_host_open"

#ifdef __cplusplus
extern "C" {
#endif

/* Device attributes the library asks for (wmfix_cuda.device_attribute's `what`). */
enum { WMFIX_ATTR_L2_BYTES = 0, WMFIX_ATTR_SMS = 1, WMFIX_ATTR_THREADS_PER_SM = 2 };

/* The program's CUDA runtime, as the library calls it. Each returns a cudaError_t as an int
 * (0: success); streams and events are cudaStream_t and cudaEvent_t as void*. */
struct wmfix_cuda {
  int (*get_device)(int* dev);
  int (*device_attribute)(int what, int dev, int* value);
  int (*malloc)(void** p, unsigned long long bytes);
  int (*free)(void* p);
  int (*memset)(void* p, int value, unsigned long long bytes);
  int (*memset_async)(void* p, int value, unsigned long long bytes, void* stream);
  int (*copy_to_device_async)(void* dst, const void* src, unsigned long long bytes, void* stream);
  int (*copy_to_host)(void* dst, const void* src, unsigned long long bytes);
  int (*stream_wait_event)(void* stream, void* event);
  int (*stream_synchronize)(void* stream);
  int (*stream_capturing)(void* stream, int* capturing);
  int (*event_create)(void** event);
  int (*event_record)(void* event, void* stream);
  /* Pins `bytes` at `p` mapped for every device; *device: the address kernels use. */
  int (*host_register_mapped)(void* p, unsigned long long bytes, void** device);
  int (*mem_get_info)(unsigned long long* free_bytes, unsigned long long* total_bytes);
  int (*device_synchronize)(void);
  const char* (*error_string)(int error);
  /* A stream that does not synchronise with the legacy default stream. */
  int (*stream_create)(void** stream);
  /* cudaThreadExchangeStreamCaptureMode: *mode (a cudaStreamCaptureMode) in, the old one out. */
  int (*exchange_capture_mode)(int* mode);
  /* cudaGetLastError: the error it returns, which it clears. */
  int (*get_last_error)(void);
};

/* One instrumented translation unit (one per TU, static storage in the TU), linked newest first
 * by the glue as TUs register (static initialisation, or a library loaded later). */
struct wmfix_tu {
  /* Uploads the TU's constants: `tu_const` is a wmfix::TuConst (wmfix_common.cuh); the fence
   * masks have (fences + 31) / 32 words, bit set = fence (or its in-body placement) off. */
  int (*upload)(const void* tu_const, const unsigned* fence_off, const unsigned* in_loop_off, void* stream);
  unsigned fences; /* the TU's WMFIX_NUM_FENCES */
  struct wmfix_tu* next;
};

/* A launch as the library planned it (wmfix::last_launch). */
struct wmfix_launch_info {
  unsigned long long launch_index;
  unsigned grid[3];     /* as the program asked for it */
  unsigned launched[3]; /* what wmfix_launch returned */
  unsigned app_blocks;
  unsigned stress_blocks;
  int remapped;
};

/* What the library does for the glue. */
struct wmfix_host {
  unsigned abi; /* WMFIX_ABI_VERSION */
  /* Before a launch of `grid` on `stream`: reads the environment at the first launch (exit 3 on
   * a bad value), sets the device up, uploads the TUs' constants and the launch table; writes
   * the grid to launch into `launched`. Returns the device whose event `launched_on` must record
   * once the kernel is enqueued, or -1. `remappable` 0: the grid stays (cooperative, clustered). */
  int (*launch)(const unsigned grid[3], void* stream, int remappable, unsigned launched[3]);
  void (*launched_on)(int dev, void* stream);
  /* Tests: waits for the device; the next launch starts over as in a fresh process. */
  void (*reset_for_tests)(void);
  void (*last_launch)(struct wmfix_launch_info* out);
  /* The settings in force, in words (read from the environment if not yet). */
  const char* (*describe_settings)(void);
  /* A race build, before the program's cudaDeviceReset: the trace is written first. */
  void (*before_device_reset)(void);
};

/* `registry`: where the glue keeps its newest wmfix_tu (read at every launch). Returns null when
 * `abi` is not the library's version. */
typedef const struct wmfix_host* (*wmfix_host_open_fn)(unsigned abi, const struct wmfix_cuda* cuda,
                                                        struct wmfix_tu* const* registry);

#ifdef __cplusplus
}
#endif

#endif /* WMFIX_ABI_H_INCLUDED */
