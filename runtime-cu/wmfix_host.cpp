// wmfix runtime, host library: the process-wide runtime of an instrumented program. `wmfix build`
// compiles it once per toolkit (a shared library in wmfix's cache, src/app/host_lib.rs); the
// glue in every instrumented TU (wmfix_glue.cuh) loads it at the first launch and calls it
// through wmfix_abi.h. It reads the environment once, keeps track of the TUs that registered,
// and before each launch builds a LaunchTable and uploads it on the launch's stream.
//
// It makes no CUDA call of its own and includes no CUDA header: every call goes through the
// table of the program's CUDA runtime that the glue hands over (a second CUDA runtime in the
// process would have its own error state and default streams). Plain C++17.
#include <dlfcn.h>

#include <mutex>
#include <string>
#include <vector>

#include "wmfix_abi.h"
#include "wmfix_common.cuh"
#include "wmfix_plan.h"

namespace wmfix {
namespace host {
namespace {

const wmfix_cuda* cu = nullptr;          // the program's CUDA runtime
wmfix_tu* const* tu_registry = nullptr;  // the glue's list of TUs, newest first

// The registered TUs, oldest first (the order they registered in).
std::vector<const wmfix_tu*> registered_tus() {
  std::vector<const wmfix_tu*> out;
  for (const wmfix_tu* t = __atomic_load_n(tu_registry, __ATOMIC_ACQUIRE); t; t = t->next) out.push_back(t);
  std::reverse(out.begin(), out.end());
  return out;
}

// ---- runtime state -------------------------------------------------------------------------------

struct DeviceState {
  unsigned generation = 0;  // runtime generation whose TU constants are on this device
  size_t uploaded = 0;      // registered TUs whose constants are on it (this generation)
  ScratchInfo scratch;
  LaunchTable* table = nullptr;
  void* last_kernel = nullptr;  // an event recorded after each remapped launch
  bool have_last = false;
  void* setup_stream = nullptr;  // wmfix's own, for set-up during a program's stream capture
};

// WMFIX_COVERAGE: which fence sites ran, and which of them on global memory (or on memory of
// unknown space), over the whole process. Kernels write two bytes a fence id (executed, global)
// into host memory mapped for the device; the file is written at exit, with no CUDA call, so a
// program that resets its device first still has its coverage written.
struct Coverage {
  std::string path;
  unsigned fences = 0;
  unsigned char* host = nullptr;    // 2 * fences bytes
  unsigned char* device = nullptr;  // the same memory, as the device sees it
};

// The race trace's buffer and where it goes at exit.
struct RaceTrace {
  std::string path;
  RaceLog device{};  // records and counter in the memory of the device first launched on
  bool written = false;  // written before a cudaDeviceReset: no second buffer, no second file
  std::string header;    // the file's header line, blank-padded to kRaceHeaderWidth
  unsigned long long unrecorded_launches = 0;  // launches after the file was written
};

constexpr size_t kRaceHeaderWidth = 160;

struct Runtime {
  std::mutex mu;
  Coverage coverage;
  RaceTrace race;
  bool parsed = false;
  Settings settings;
  std::string described;  // describe(settings), for describe_settings
  std::string warm_run;   // WMFIX_WARM_RUN of the run under way (warm runs: src/run/warm.rs)
  unsigned generation = 1;
  unsigned long long launches = 0;
  std::vector<DeviceState> devices;
  wmfix_launch_info last{};
  bool warned_capture = false;
};

Runtime& runtime() {
  static Runtime r;
  return r;
}

void parse_settings(Runtime& rt) {
  if (rt.parsed) return;
  rt.settings = settings_from_env();
  rt.described = describe(rt.settings);
  rt.parsed = true;
}

bool cuda_ok(int e, const char* what) {
  if (e == 0) return true;
  std::fprintf(stderr, "wmfix: warning: %s failed: %s; this launch runs unchanged\n", what, cu->error_string(e));
  return false;
}

// ---- coverage and the race trace at exit -------------------------------------------------------------

void write_coverage() {
  const Coverage& c = runtime().coverage;
  if (!c.host) return;
  if (FILE* f = std::fopen(c.path.c_str(), "w")) {
    const std::string text = coverage_text(c.host, c.fences);
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
}

// The header line at the start of the trace file, blank-padded to its fixed width.
bool put_race_header(FILE* f, std::string header) {
  header.resize(kRaceHeaderWidth - 1, ' ');
  header += "\n";
  return std::fseek(f, 0, SEEK_SET) == 0 && std::fwrite(header.data(), 1, header.size(), f) == header.size();
}

// Launches after the trace was written (a cudaDeviceReset, then more kernels) recorded nothing:
// the header says how many, so that their events count as not checked.
void note_unrecorded_launches(const RaceTrace& r) {
  if (r.unrecorded_launches == 0 || r.header.empty()) return;
  FILE* f = std::fopen(r.path.c_str(), "r+b");
  const std::string h = r.header + " unrecorded_launches=" + std::to_string(r.unrecorded_launches);
  if (!f || !put_race_header(f, h) || std::fclose(f) != 0)
    std::fprintf(stderr, "wmfix: warning: cannot mark the race trace %s as missing %llu launch(es)\n", r.path.c_str(),
                 r.unrecorded_launches);
}

// The trace file: a header line, then the written records in slot order, copied from the
// device in chunks while its context is still there and written as they come (a trace can take
// a quarter of the device's memory). The header goes last, over a blank line of its width:
// handed = slots handed out (past the buffer's end they were dropped), records = records in the
// file, lost = the copy or the write failed (a cudaDeviceReset, a kernel fault, a full disk).
void write_race_trace() {
  RaceTrace& r = runtime().race;
  if (r.written) return note_unrecorded_launches(r);
  if (!r.device.records) return;
  r.written = true;
  FILE* f = std::fopen(r.path.c_str(), "wb");
  if (!f) {
    std::fprintf(stderr, "wmfix: warning: cannot write the race trace %s\n", r.path.c_str());
    return;
  }
  const std::string blank = std::string(kRaceHeaderWidth - 1, ' ') + "\n";
  bool written = std::fwrite(blank.data(), 1, blank.size(), f) == blank.size();
  unsigned long long handed = 0;
  bool copied = cu->copy_to_host(&handed, r.device.count, sizeof handed) == 0;
  const unsigned long long n = std::min(handed, r.device.capacity);
  const unsigned long long chunk = 1ULL << 20;
  std::vector<RaceRecord> buf;
  unsigned long long records = 0;
  for (unsigned long long i = 0; copied && written && i < n; i += chunk) {
    const unsigned long long m = std::min(chunk, n - i);
    buf.resize(m);
    copied = cu->copy_to_host(buf.data(), r.device.records + i, m * sizeof(RaceRecord)) == 0;
    size_t kept = 0;
    for (unsigned long long j = 0; copied && j < m; ++j)
      if (buf[j].kind != 0) buf[kept++] = buf[j];
    written = copied && std::fwrite(buf.data(), sizeof(RaceRecord), kept, f) == kept;
    records += kept;
  }
  if (!copied)
    std::fprintf(stderr, "wmfix: warning: the race trace could not be copied from the device at exit (a cudaDeviceReset or a kernel fault?)\n");
  else if (!written)
    std::fprintf(stderr, "wmfix: warning: the race trace %s could not be written whole (disk full?)\n", r.path.c_str());
  const unsigned long long dropped = handed > r.device.capacity ? handed - r.device.capacity : 0;
  r.header = "wmfix-race-trace 1 capacity=" + std::to_string(r.device.capacity) +
             " dropped=" + std::to_string(dropped) + " handed=" + std::to_string(handed) +
             " records=" + std::to_string(records) + (copied && written ? "" : " lost=1");
  const bool ok = put_race_header(f, r.header);
  if (std::fclose(f) != 0 || !ok)
    std::fprintf(stderr, "wmfix: warning: cannot write the race trace %s\n", r.path.c_str());
}

// The coverage buffer, made at the first launch when WMFIX_COVERAGE names a file. Coverage is
// recorded in the active environments only (no-str- stays native: no per-block filter there).
void start_coverage(Runtime& rt, unsigned max_fences) {
  const Settings& s = rt.settings;
  Coverage& c = rt.coverage;
  if (c.host || s.coverage_path.empty() || !s.active || max_fences == 0) return;
  const size_t bytes = 2 * (size_t)max_fences;
  unsigned char* h = static_cast<unsigned char*>(std::calloc(bytes, 1));
  void* dptr = nullptr;
  if (!h) return;
  if (!cuda_ok(cu->host_register_mapped(h, bytes, &dptr), "cudaHostRegister(coverage)")) {
    std::free(h);
    return;
  }
  c.path = s.coverage_path;
  c.fences = max_fences;
  c.host = h;
  c.device = static_cast<unsigned char*>(dptr);
  std::atexit(write_coverage);
}

// The trace buffer of a race build, made at the first launch when WMFIX_RACE_TRACE names a
// file: WMFIX_RACE_EVENTS records, or under `auto` (the default) WMFIX_RACE_MEMORY of the
// device's free memory, so that a program's whole trace fits without a flag. Device memory:
// records written into mapped host memory crossed PCIe one field at a time and pinning a 4 GB
// buffer took about a second a run; only the slots handed out are copied.
void start_race(Runtime& rt) {
  const Settings& s = rt.settings;
  RaceTrace& r = rt.race;
  if (r.device.records || r.written || s.race_path.empty()) return;
  unsigned long long events = s.race_events;
  if (events == 0) {
    unsigned long long free_bytes = 0, total_bytes = 0;
    if (!cuda_ok(cu->mem_get_info(&free_bytes, &total_bytes), "cudaMemGetInfo(race trace)")) return;
    events = static_cast<unsigned long long>(static_cast<double>(free_bytes) * s.race_memory) / sizeof(RaceRecord);
  }
  const unsigned long long bytes = events * sizeof(RaceRecord);
  void* records = nullptr;
  void* count = nullptr;
  if (!cuda_ok(cu->malloc(&records, bytes), "cudaMalloc(race trace)")) return;
  if (!cuda_ok(cu->memset(records, 0, bytes), "cudaMemset(race trace)") ||
      !cuda_ok(cu->malloc(&count, sizeof(unsigned long long)), "cudaMalloc(race counter)") ||
      !cuda_ok(cu->memset(count, 0, sizeof(unsigned long long)), "cudaMemset(race counter)")) {
    cu->free(records);
    return;
  }
  r.path = s.race_path;
  r.device = RaceLog{static_cast<RaceRecord*>(records), events, static_cast<unsigned long long*>(count)};
  std::atexit(write_race_trace);
}

bool is_capturing(void* stream) {
  int capturing = 0;
  if (cu->stream_capturing(stream, &capturing) != 0) return true;  // assume the worst
  return capturing != 0;
}

// Uploads the constants of the registered TUs from `from` on. A TU registered after its device
// was set up (a library loaded later) gets them at the next launch; without them its extra
// blocks would run application code and its fence switches would be ignored.
bool upload_tus(const Settings& s, DeviceState& d, size_t from, void* stream) {
  // Accesses record addresses only under aim-str (a scratchpad kept from an earlier aim-str
  // generation keeps its slots).
  const TuConst c{s.active ? 1U : 0U, s.rand_threads ? 1U : 0U, d.table,
                  s.stress == kAimStress ? d.scratch.aim : nullptr, runtime().coverage.device, runtime().race.device};
  const std::vector<const wmfix_tu*> tus = registered_tus();
  std::vector<unsigned> off, in_loop_off;
  for (size_t i = from; i < tus.size(); ++i) {
    fence_masks(s, tus[i]->fences, &off, &in_loop_off);
    if (!cuda_ok(tus[i]->upload(&c, off.data(), in_loop_off.data(), stream), "uploading wmfix constants")) return false;
  }
  d.uploaded = tus.size();
  return true;
}

// First launch on a device (per generation): scratchpad, launch table, event, and every TU's
// constants and fence mask. Synchronises `stream` so that kernels on any stream see them.
bool init_device(Runtime& rt, DeviceState& d, int dev, void* stream) {
  const Settings& s = rt.settings;
  unsigned max_fences = 0;
  for (const wmfix_tu* t : registered_tus()) max_fences = std::max(max_fences, t->fences);
  start_coverage(rt, max_fences);
  start_race(rt);
  if (s.active) {
    if (!d.table) {
      void* table = nullptr;
      if (!cuda_ok(cu->malloc(&table, sizeof(LaunchTable)), "cudaMalloc(launch table)")) return false;
      d.table = static_cast<LaunchTable*>(table);
      cu->memset_async(d.table, 0, sizeof(LaunchTable), stream);  // phys_blocks 0: matches no grid
    }
    if (!d.last_kernel && !cuda_ok(cu->event_create(&d.last_kernel), "cudaEventCreate")) return false;
    if (s.stress == kAimStress && d.scratch.scratch && !d.scratch.aim) {
      // A scratchpad from an earlier generation (wmfix::reset_for_tests) is too small for
      // aim-str's pages: the device is idle here, so make a new one.
      cu->free(d.scratch.scratch);
      d.scratch.scratch = nullptr;
    }
    if (s.stress != kNoStress && !d.scratch.scratch) {
      int l2 = 0;
      cu->device_attribute(WMFIX_ATTR_L2_BYTES, dev, &l2);
      const size_t l2_bytes = l2 > 0 ? (size_t)l2 : (size_t)4 << 20;
      size_t bytes = std::max(l2_bytes, (size_t)4 << 20);
      // aim-str: many 2 MiB pages, so that an aimed offset lands in many slices, plus one
      // page of slack to start at a page boundary.
      const size_t page = (size_t)kAimPageWords * 4;
      if (s.stress == kAimStress) bytes = std::max(4 * l2_bytes, (size_t)64 << 20) + page;
      void* p = nullptr;
      if (!d.scratch.done) {
        void* done = nullptr;
        if (!cuda_ok(cu->malloc(&done, kDoneWords * 4), "cudaMalloc(block counters)")) return false;
        d.scratch.done = static_cast<unsigned*>(done);
      }
      if (!cuda_ok(cu->malloc(&p, bytes), "cudaMalloc(stress scratchpad)")) return false;
      cu->memset_async(p, 0, bytes, stream);
      if (s.stress == kAimStress) {
        void* slots = nullptr;
        if (!cuda_ok(cu->malloc(&slots, kAimSlots * 8), "cudaMalloc(aim slots)")) return false;
        cu->memset_async(slots, 0, kAimSlots * 8, stream);
        d.scratch.aim = static_cast<unsigned long long*>(slots);
        const size_t skip = (page - (uintptr_t)p % page) % page;
        d.scratch.aim_base = (unsigned)(skip / 4);
        d.scratch.aim_pages = (unsigned)((bytes - skip) / page);
      }
      d.scratch.scratch = static_cast<unsigned*>(p);
      d.scratch.scratch_words = (unsigned)(bytes / 4);
      d.scratch.cache_words = (unsigned)(l2_bytes / 4);
      int sms = 0, per_sm = 0;
      cu->device_attribute(WMFIX_ATTR_SMS, dev, &sms);
      cu->device_attribute(WMFIX_ATTR_THREADS_PER_SM, dev, &per_sm);
      d.scratch.cap_threads = (unsigned)std::max(1, sms * per_sm);
    }
  }
  if (!upload_tus(s, d, 0, stream)) return false;
  if (!is_capturing(stream) && !cuda_ok(cu->stream_synchronize(stream), "cudaStreamSynchronize")) return false;
  d.have_last = false;
  d.generation = rt.generation;
  if (s.verbose)
    std::fprintf(stderr, "wmfix: device %d: %s; %zu TU(s)\n", dev, rt.described.c_str(), registered_tus().size());
  return true;
}

// Warm runs: one process runs the program's main once a run (src/run/warm.rs), each run with its
// own WMFIX_WARM_RUN. A new one restarts the runtime as a fresh process starts it: the settings
// read again, the launch counter from 0, every TU's constants uploaded again.
void start_warm_run(Runtime& rt) {
  const char* run = std::getenv("WMFIX_WARM_RUN");
  if (!run || rt.warm_run == run) return;
  if (!rt.warm_run.empty()) {
    rt.parsed = false;
    rt.generation++;
    rt.launches = 0;
    rt.last = wmfix_launch_info{};
  }
  rt.warm_run = run;
}

void copy3(const unsigned* from, unsigned* to) { to[0] = from[0], to[1] = from[1], to[2] = from[2]; }

// ---- the functions the glue calls ------------------------------------------------------------------

// Relaxes this thread's stream-capture mode while it lives, where `on`: set-up calls (cudaMalloc,
// a stream's creation) are refused in a global capture, and would end the program's capture.
struct RelaxedCapture {
  int mode = 2;  // cudaStreamCaptureModeRelaxed; declared before `on`, which reads it
  bool on;
  explicit RelaxedCapture(bool relax) : on(relax && cu->exchange_capture_mode(&mode) == 0) {}
  ~RelaxedCapture() {
    if (on) cu->exchange_capture_mode(&mode);
  }
};

// The stream set-up work goes on (in *out): the launch's own, which is null for the legacy
// default stream, unless that stream is capturing (a CUDA graph being recorded), where the work
// would become nodes of the program's graph: then a stream of wmfix's own that does not
// synchronise with the capturing one. False when that stream cannot be made.
bool setup_stream(DeviceState& d, void* stream, bool capturing, void** out) {
  *out = stream;
  if (!capturing) return true;
  if (!d.setup_stream && !cuda_ok(cu->stream_create(&d.setup_stream), "cudaStreamCreate(set-up)")) return false;
  *out = d.setup_stream;
  return true;
}

int launch(const unsigned grid[3], void* stream, int remappable, unsigned launched[3]) {
  Runtime& rt = runtime();
  std::lock_guard<std::mutex> lock(rt.mu);
  copy3(grid, launched);
  start_warm_run(rt);
  parse_settings(rt);
  int dev = 0;
  if (!cuda_ok(cu->get_device(&dev), "cudaGetDevice")) return -1;
  if ((size_t)dev >= rt.devices.size()) rt.devices.resize(dev + 1);
  DeviceState& d = rt.devices[dev];
  const bool capturing = is_capturing(stream);
  {
    const RelaxedCapture relaxed(capturing);
    void* setup = nullptr;
    if (!setup_stream(d, stream, capturing, &setup)) return -1;
    if (d.generation != rt.generation && !init_device(rt, d, dev, setup)) return -1;
    if (rt.race.written) rt.race.unrecorded_launches++;
    if (d.uploaded < registered_tus().size()) {
      if (!upload_tus(rt.settings, d, d.uploaded, setup)) return -1;
      if (!is_capturing(setup) && !cuda_ok(cu->stream_synchronize(setup), "cudaStreamSynchronize")) return -1;
    }
  }
  if (capturing && rt.settings.active && !rt.warned_capture) {
    rt.warned_capture = true;
    std::fprintf(stderr,
                 "wmfix: warning: a launch inside a stream capture (a CUDA graph): graph launches get no stressing "
                 "blocks and no remapped ids, and may read the mapping of a later direct launch of the same grid\n");
  }
  if (capturing) return -1;  // a graph replays what it captured: no per-launch table
  const Settings& s = rt.settings;
  if (!s.active) return -1;  // no-str-: nothing per launch

  LaunchTable t{};
  const unsigned long long index = rt.launches++;
  t.launch_index = index;
  const bool remap = remappable && plan_launch(s, Grid(grid[0], grid[1], grid[2]), index, d.scratch, &t);
  if (d.have_last && !cuda_ok(cu->stream_wait_event(stream, d.last_kernel), "cudaStreamWaitEvent"))
    return -1;
  if (t.done && !cuda_ok(cu->memset_async(t.done, 0, kDoneWords * 4, stream), "cudaMemsetAsync(block counters)"))
    return -1;
  // Pageable source: the copy is staged before cudaMemcpyAsync returns, so `t` may go away.
  if (!cuda_ok(cu->copy_to_device_async(d.table, &t, sizeof t, stream), "uploading the launch table")) return -1;

  if (remap) launched[0] = t.phys_blocks, launched[1] = 1, launched[2] = 1;
  wmfix_launch_info& last = rt.last;
  last.launch_index = index;
  copy3(grid, last.grid);
  copy3(launched, last.launched);
  last.app_blocks = t.app_blocks;
  last.stress_blocks = t.stress_blocks;
  last.remapped = remap;
  if (s.verbose) {
    const bool several = t.stress_blocks > 0 && s.profile.variants.size() > 1 && (s.stress == kSysStress || s.stress == kAimStress);
    std::fprintf(stderr, "wmfix: launch %llu: grid (%u,%u,%u) -> (%u,%u,%u): %u application + %u stressing blocks%s%s\n",
                 index, grid[0], grid[1], grid[2], launched[0], launched[1], launched[2], t.app_blocks, t.stress_blocks,
                 several ? ", profile variant " : "", several ? std::to_string(variant_of(s, index)).c_str() : "");
  }
  return dev;
}

// After the kernel is enqueued: the next launch's upload waits for it.
void launched_on(int dev, void* stream) {
  Runtime& rt = runtime();
  std::lock_guard<std::mutex> lock(rt.mu);
  if ((size_t)dev >= rt.devices.size()) return;
  DeviceState& d = rt.devices[dev];
  if (d.last_kernel && cu->event_record(d.last_kernel, stream) == 0) d.have_last = true;
}

void reset_for_tests() {
  cu->device_synchronize();
  Runtime& rt = runtime();
  std::lock_guard<std::mutex> lock(rt.mu);
  rt.parsed = false;
  rt.generation++;
  rt.launches = 0;
  rt.last = wmfix_launch_info{};
}

void last_launch(wmfix_launch_info* out) {
  Runtime& rt = runtime();
  std::lock_guard<std::mutex> lock(rt.mu);
  *out = rt.last;
}

const char* describe_settings() {
  Runtime& rt = runtime();
  std::lock_guard<std::mutex> lock(rt.mu);
  parse_settings(rt);
  return rt.described.c_str();
}

void before_device_reset() {
  Runtime& rt = runtime();
  std::lock_guard<std::mutex> lock(rt.mu);
  write_race_trace();
  rt.race.device = RaceLog{};  // freed by the reset: later launches record nothing
}

// A warm process's health after a run (src/run/warm.rs asks through runtime-cu/warm/wmfix_warm.c,
// which this library tells where to ask): 1 after a sticky CUDA error (a kernel fault, which only
// a new context clears), else 0, with the device's free and total memory (a run that left
// through exit() before its cudaFree leaves its allocations behind). A non-sticky error is
// cleared: a fresh process starts with none.
int warm_health(unsigned long long* free_bytes, unsigned long long* total_bytes) {
  *free_bytes = *total_bytes = 0;
  if (cu->device_synchronize() != 0) {
    cu->get_last_error();
    if (cu->device_synchronize() != 0) return 1;
  }
  cu->get_last_error();
  cu->mem_get_info(free_bytes, total_bytes);
  return 0;
}

// In a warm process (its server preloaded, exporting wmfix_warm_health): hands it warm_health.
void offer_warm_health() {
  typedef void (*offer_fn)(int (*)(unsigned long long*, unsigned long long*));
  if (!std::getenv("WMFIX_WARM_RUN")) return;
  const offer_fn offer = (offer_fn)dlsym(RTLD_DEFAULT, "wmfix_warm_health");
  if (offer) offer(&warm_health);
}

const wmfix_host kHost = {WMFIX_ABI_VERSION, &launch, &launched_on, &reset_for_tests, &last_launch,
                          &describe_settings, &before_device_reset};

}  // namespace
}  // namespace host
}  // namespace wmfix

extern "C" __attribute__((visibility("default"))) const wmfix_host* wmfix_host_open(unsigned abi, const wmfix_cuda* cuda,
                                                                                    wmfix_tu* const* registry) {
  if (abi != WMFIX_ABI_VERSION || cuda == nullptr || registry == nullptr) return nullptr;
  // The first caller's table and registry serve the process (several shared libraries with
  // instrumented code share one glue as long as inline functions merge, README "Limits").
  if (wmfix::host::cu == nullptr) {
    wmfix::host::cu = cuda;
    wmfix::host::tu_registry = registry;
    wmfix::host::offer_warm_health();
  }
  return &wmfix::host::kHost;
}
