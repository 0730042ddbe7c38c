// CPU test of the host library (wmfix_host.cpp) through a fake CUDA runtime: the library makes
// every CUDA call through the table the glue hands it (wmfix_abi.h), so a table whose "device
// memory" is host memory runs its launch path with no GPU. tests/host_fake_cuda.rs compiles this
// file with the host compiler beside libwmfix_host.so and runs it.
//
// Checked: under a stressing environment a launch on the legacy default stream (null, as
// `k<<<g, b>>>` passes it) and one on a stream of the program's own both get stressing blocks
// and a remapped grid; a launch inside a stream capture keeps its grid; under no-str- nothing
// changes; the warm server's health check reports a sticky error.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "../wmfix_abi.h"

namespace {

int failures = 0;
#define CHECK(cond, ...)                                  \
  do {                                                    \
    if (!(cond)) {                                        \
      std::fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      std::fprintf(stderr, __VA_ARGS__);                  \
      std::fprintf(stderr, "\n");                         \
      failures++;                                         \
    }                                                     \
  } while (0)

int capturing = 0;     // what stream_capturing reports
int sync_error = 0;    // what device_synchronize returns (a sticky error: always)
int last_error = 0;    // what get_last_error returns, once
int streams_made = 0;  // stream_create calls

int get_device(int* dev) { return *dev = 0, 0; }
int device_attribute(int what, int, int* value) {
  *value = what == WMFIX_ATTR_L2_BYTES ? (1 << 20) : what == WMFIX_ATTR_SMS ? 132 : 2048;
  return 0;
}
int malloc_(void** p, unsigned long long bytes) { return (*p = std::calloc(1, bytes ? bytes : 1)) ? 0 : 2; }
int free_(void* p) { return std::free(p), 0; }
int memset_(void* p, int v, unsigned long long n) { return std::memset(p, v, n), 0; }
int memset_async(void* p, int v, unsigned long long n, void*) { return memset_(p, v, n); }
int copy_to_device_async(void* d, const void* s, unsigned long long n, void*) { return std::memcpy(d, s, n), 0; }
int copy_to_host(void* d, const void* s, unsigned long long n) { return std::memcpy(d, s, n), 0; }
int stream_wait_event(void*, void*) { return 0; }
int stream_synchronize(void*) { return 0; }
int stream_capturing(void*, int* c) { return *c = capturing, 0; }
int event_create(void** e) { return *e = (void*)0x1, 0; }
int event_record(void*, void*) { return 0; }
int host_register_mapped(void* p, unsigned long long, void** d) { return *d = p, 0; }
int mem_get_info(unsigned long long* f, unsigned long long* t) { return *f = 7000, *t = 8000, 0; }
int device_synchronize() { return sync_error; }
const char* error_string(int) { return "fake error"; }
int stream_create(void** s) { return streams_made++, *s = (void*)0x2, 0; }
int exchange_capture_mode(int*) { return 0; }
int get_last_error() {
  const int e = last_error;
  last_error = 0;
  return e;
}

const wmfix_cuda kTable = {&get_device,        &device_attribute,     &malloc_,     &free_,
                           &memset_,           &memset_async,         &copy_to_device_async, &copy_to_host,
                           &stream_wait_event, &stream_synchronize,   &stream_capturing,     &event_create,
                           &event_record,      &host_register_mapped, &mem_get_info,         &device_synchronize,
                           &error_string,      &stream_create,        &exchange_capture_mode, &get_last_error};

int upload(const void*, const unsigned*, const unsigned*, void*) { return 0; }
wmfix_tu tu = {&upload, 4, nullptr};
wmfix_tu* registry = &tu;

// The warm server's side of the health check (runtime-cu/warm/wmfix_warm.c exports it).
typedef int (*health_fn)(unsigned long long*, unsigned long long*);
health_fn offered = nullptr;

}  // namespace

extern "C" __attribute__((visibility("default"))) void wmfix_warm_health(health_fn fn) { offered = fn; }

namespace {

// One launch of a 128-block grid on `stream`; returns the grid wmfix gave it.
unsigned launch(const wmfix_host* h, void* stream, int* dev) {
  const unsigned grid[3] = {128, 1, 1};
  unsigned out[3] = {0, 0, 0};
  *dev = h->launch(grid, stream, 1, out);
  if (*dev >= 0) h->launched_on(*dev, stream);
  return out[0];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: host_fake_cuda LIBRARY\n");
    return 2;
  }
  setenv("WMFIX_WARM_RUN", "1", 1);
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 2;
  }
  const wmfix_host_open_fn open = (wmfix_host_open_fn)dlsym(lib, WMFIX_HOST_OPEN_SYMBOL);
  const wmfix_host* h = open ? open(WMFIX_ABI_VERSION, &kTable, &registry) : nullptr;
  if (!h) {
    std::fprintf(stderr, "the library did not open\n");
    return 2;
  }

  setenv("WMFIX_ENV", "sys-str+", 1);
  setenv("WMFIX_SEED", "3", 1);
  setenv("WMFIX_FENCES", "none", 1);
  int dev = -1;
  for (void* stream : {(void*)nullptr, (void*)0x10}) {
    const unsigned g = launch(h, stream, &dev);
    wmfix_launch_info info{};
    h->last_launch(&info);
    CHECK(dev == 0, "stream %p: launch returned %d", stream, dev);
    CHECK(g > 128, "stream %p: grid 128 -> %u: no stressing blocks", stream, g);
    CHECK(info.stress_blocks > 0 && info.app_blocks == 128 && info.remapped,
          "stream %p: %u stressing blocks, %u application blocks, remapped %d", stream, info.stress_blocks,
          info.app_blocks, info.remapped);
  }
  CHECK(streams_made == 0, "a set-up stream was made outside a capture");

  capturing = 1;
  const unsigned captured = launch(h, nullptr, &dev);
  CHECK(captured == 128 && dev == -1, "inside a capture: grid %u, device %d", captured, dev);
  CHECK(streams_made == 1, "inside a capture: %d set-up streams", streams_made);
  capturing = 0;

  h->reset_for_tests();
  setenv("WMFIX_ENV", "no-str-", 1);
  const unsigned plain = launch(h, nullptr, &dev);
  CHECK(plain == 128, "no-str-: grid 128 -> %u", plain);

  CHECK(offered != nullptr, "the warm server was offered no health check");
  if (offered) {
    unsigned long long f = 0, t = 0;
    last_error = 1;
    CHECK(offered(&f, &t) == 0 && f == 7000 && t == 8000 && last_error == 0,
          "a non-sticky error: health %llu of %llu, last error %d", f, t, last_error);
    sync_error = 1;
    CHECK(offered(&f, &t) == 1, "a sticky error was not reported");
    sync_error = 0;
  }

  std::printf("host_fake_cuda: %s\n", failures ? "FAIL" : "PASS");
  return failures ? 1 : 0;
}
