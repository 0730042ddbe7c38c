// wmfix runtime: host side (included by wmfix.cuh).
//
// One process-wide runtime (C++17 inline functions holding function-local statics, so every TU
// shares one instance): it reads the environment once, keeps a registry of the TUs that include
// wmfix.cuh, and before each launch builds a LaunchTable and uploads it on the launch's stream.
// Nothing here depends on the including TU; per-TU device state lives in wmfix.cuh.
#ifndef WMFIX_HOST_CUH_INCLUDED
#define WMFIX_HOST_CUH_INCLUDED

#include <cuda_runtime.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <pthread.h>
#include <string>
#include <vector>

#include "wmfix_common.cuh"
#include "wmfix_profile.cuh"

namespace wmfix {

// ---- settings ------------------------------------------------------------------------------------

struct Settings {
  std::string env = "no-str-";
  StressKind stress = kNoStress;
  bool rand_threads = false;
  bool keep_block_order = false;  // WMFIX_BLOCK_ORDER=keep: `+` permutes warps, not blocks
  bool active = false;  // anything but no-str-: launches are remapped
  unsigned long long seed = 1;
  std::string profile_path;  // empty: built-in Hopper default
  Profile profile;
  unsigned long long max_us = 100000;
  std::string fences = "all";
  std::string fences_in_loop = "all";  // ids whose placement at the top of a loop body is on
  std::string coverage_path;            // WMFIX_COVERAGE: where the coverage file goes at exit
  std::string race_path;                // WMFIX_RACE_TRACE: where a race build writes its trace at exit
  unsigned long long race_events = 0;  // WMFIX_RACE_EVENTS: the trace buffer's records; 0 (`auto`): race_memory
  double race_memory = 0.25;           // WMFIX_RACE_MEMORY: under `auto`, the share of free device memory the trace takes
  bool verbose = false;
};

constexpr int kExitConfigError = 3;

[[noreturn]] inline void fatal(const std::string& msg) {
  std::fprintf(stderr, "wmfix: error: %s\n", msg.c_str());
  std::fflush(stderr);
  std::exit(kExitConfigError);
}

// WMFIX_ENV value -> stress kind and thread randomisation.
inline bool parse_env_name(const std::string& name, StressKind* stress, bool* rand_threads) {
  static const struct { const char* base; StressKind kind; } kinds[] = {
      {"no-str", kNoStress},         {"sys-str", kSysStress}, {"rand-str", kRandStress},
      {"cache-str", kCacheStress}, {"aim-str", kAimStress}};
  if (name.size() < 2) return false;
  const char sign = name.back();
  if (sign != '+' && sign != '-') return false;
  const std::string base = name.substr(0, name.size() - 1);
  for (const auto& k : kinds) {
    if (base == k.base) {
      *stress = k.kind;
      *rand_threads = sign == '+';
      return true;
    }
  }
  return false;
}

// WMFIX_FENCES: "all", "none", "" (= none) or a comma-separated list of ids and inclusive ranges
// ("0,3,7-9"). Sets enabled[i] for fence i < num. Returns false with *err set on bad input;
// `name` is the variable the message names (WMFIX_FENCES_IN_LOOP has the same syntax).
inline bool parse_fence_list(const std::string& text, unsigned num, std::vector<bool>* enabled, std::string* err,
                             const char* name = "WMFIX_FENCES") {
  const std::string s = trim(text);
  enabled->assign(num, false);
  if (s == "all") {
    enabled->assign(num, true);
    return true;
  }
  if (s == "none" || s.empty()) return true;
  for (std::string item : split(s, ',')) {
    item = trim(item);
    unsigned long long lo = 0, hi = 0;
    const size_t dash = item.find('-');
    bool ok;
    if (dash == std::string::npos) {
      ok = parse_u64(item, &lo);
      hi = lo;
    } else {
      ok = parse_u64(item.substr(0, dash), &lo) && parse_u64(item.substr(dash + 1), &hi) && lo <= hi;
    }
    if (!ok) {
      *err = std::string(name) + "=\"" + text + "\": bad item \"" + item +
             "\" (expected all, none, or a list like 0,3,7-9)";
      return false;
    }
    if (hi >= num) {
      *err = std::string(name) + "=\"" + text + "\": fence id " + std::to_string(hi) + " out of range: this program has " +
             std::to_string(num) + " fence(s), ids 0.." + std::to_string(num - 1);
      return false;
    }
    for (unsigned long long i = lo; i <= hi; ++i) (*enabled)[i] = true;
  }
  return true;
}

// The whole of the file at `path` in *text; false where it cannot be opened or read.
inline bool read_file(const char* path, std::string* text) {
  std::FILE* f = std::fopen(path, "rb");
  if (!f) return false;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text->append(buf, n);
  const bool ok = !std::ferror(f);
  std::fclose(f);
  return ok;
}

inline const char* getenv_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

// Reads every WMFIX_* variable; exits with status 3 on any bad value. WMFIX_FENCES and
// WMFIX_FENCES_IN_LOOP are only checked against each TU's fence count when the TU's mask is built.
inline Settings settings_from_env() {
  Settings s;
  s.env = trim(getenv_or("WMFIX_ENV", "no-str-"));
  if (!parse_env_name(s.env, &s.stress, &s.rand_threads))
    fatal("WMFIX_ENV=\"" + s.env +
          "\" is not one of no-str-, no-str+, sys-str-, sys-str+, rand-str-, rand-str+, cache-str-, cache-str+, "
          "aim-str-, aim-str+");
  s.active = s.stress != kNoStress || s.rand_threads;

  if (const char* seed = std::getenv("WMFIX_SEED"))
    if (!parse_u64(seed, &s.seed)) fatal(std::string("WMFIX_SEED=\"") + seed + "\" is not an unsigned 64-bit integer");

  if (const char* path = std::getenv("WMFIX_PROFILE")) {
    s.profile_path = path;
    std::string text;
    if (!read_file(path, &text)) fatal(std::string("WMFIX_PROFILE=\"") + path + "\": cannot open file");
    std::string err;
    if (!parse_profile_text(text, &s.profile, &err)) fatal(std::string("WMFIX_PROFILE=\"") + path + "\": " + err);
  }

  if (const char* us = std::getenv("WMFIX_STRESS_MAX_US")) {
    unsigned long long v = 0;
    if (!parse_u64(us, &v) || v < 1 || v > 600000000ULL)
      fatal(std::string("WMFIX_STRESS_MAX_US=\"") + us + "\" must be an integer in 1..600000000 (microseconds)");
    s.max_us = v;
  }

  const std::string order = trim(getenv_or("WMFIX_BLOCK_ORDER", "random"));
  if (order != "random" && order != "keep")
    fatal("WMFIX_BLOCK_ORDER=\"" + order + "\" is not `random` or `keep`");
  s.keep_block_order = order == "keep";

  s.coverage_path = trim(getenv_or("WMFIX_COVERAGE", ""));
  s.race_path = trim(getenv_or("WMFIX_RACE_TRACE", ""));
  if (const char* n = std::getenv("WMFIX_RACE_EVENTS")) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(n, &end, 10);
    if (trim(n) == "auto")
      s.race_events = 0;
    else if (end == n || *end != '\0' || v == 0)
      fatal(std::string("WMFIX_RACE_EVENTS must be a positive number or `auto`, not \"") + n + "\"");
    else
      s.race_events = v;
  }
  if (const char* m = std::getenv("WMFIX_RACE_MEMORY")) {
    char* end = nullptr;
    const double v = std::strtod(m, &end);
    if (end == m || *end != '\0' || !(v > 0.0 && v <= 0.9))
      fatal(std::string("WMFIX_RACE_MEMORY must be a share of free device memory in (0, 0.9], not \"") + m + "\"");
    s.race_memory = v;
  }
  s.fences = getenv_or("WMFIX_FENCES", "all");
  s.fences_in_loop = getenv_or("WMFIX_FENCES_IN_LOOP", "all");
  const std::string verbose = trim(getenv_or("WMFIX_VERBOSE", "0"));
  s.verbose = !(verbose.empty() || verbose == "0");
  return s;
}

inline std::string describe(const Settings& s) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "env=%s seed=%llu fences=%s profile=%s (patch_size=%u ", s.env.c_str(), s.seed,
                s.fences.c_str(), s.profile_path.empty() ? "<hopper default>" : s.profile_path.c_str(),
                s.profile.patch_size);
  return buf + describe_variants(s.profile) + ") stress_max_us=" + std::to_string(s.max_us) +
         (s.keep_block_order ? " block_order=keep" : "");
}

// ---- per-launch plan -----------------------------------------------------------------------------

// SplitMix64 stream: all randomness of one launch comes from (seed, launch index).
struct Rng {
  unsigned long long state;
  explicit Rng(unsigned long long seed) : state(seed) {}
  unsigned long long next() { return mix64(state += 0x9e3779b97f4a7c15ULL); }
  unsigned next32() { return (unsigned)(next() >> 32); }
  // Uniform in [0, n) for n <= 2^32 (multiply-shift; bias below 2^-32).
  unsigned long long below(unsigned long long n) { return (unsigned long long)(((__uint128_t)next() * n) >> 64); }
};

// What the scratchpad of the launch's device looks like (0 when it has none).
struct ScratchInfo {
  unsigned* scratch = nullptr;
  unsigned scratch_words = 0;
  unsigned cache_words = 0;
  unsigned cap_threads = 0;  // SMs x max resident threads per SM
  unsigned* done = nullptr;  // kDoneWords counters of finished application blocks
  unsigned long long* aim = nullptr;  // aim-str: kAimSlots recorded addresses
  unsigned aim_base = 0;              // aim-str: words from scratch to its first 2 MiB boundary
  unsigned aim_pages = 0;             // aim-str: whole 2 MiB pages from there
};

// The profile variant launch `launch_index` uses: uniform, from (seed, launch index), drawn
// from a stream of its own so that the launch's other draws do not depend on the profile.
inline unsigned variant_of(const Settings& s, unsigned long long launch_index) {
  const size_t n = s.profile.variants.size();
  if (n <= 1) return 0;
  Rng rng(mix64(mix64(s.seed) ^ 0x76617269616e7473ULL) ^ mix64(0x7a710000ULL + launch_index));
  return (unsigned)rng.below(n);
}

constexpr unsigned long long kMaxPhysBlocks = 0x7fffffffULL;  // gridDim.x limit

// Number of stressing blocks for G application blocks: 15% to 50% of G, at least 1.
inline void stress_block_range(unsigned long long G, unsigned long long* lo, unsigned long long* hi) {
  *lo = std::max<unsigned long long>(1, (15 * G + 99) / 100);
  *hi = std::max<unsigned long long>(*lo, G / 2);
}

// Builds the table for one launch of `grid`. Returns false (and a table that matches no grid) when
// the grid cannot be remapped; the launch then runs unchanged, with builtin ids.
inline bool plan_launch(const Settings& s, dim3 grid, unsigned long long launch_index, const ScratchInfo& sc,
                        LaunchTable* t) {
  *t = LaunchTable{};
  t->launch_index = launch_index;
  const unsigned long long G = (unsigned long long)grid.x * grid.y * grid.z;
  if (G == 0 || G > kMaxPhysBlocks) return false;
  Rng rng(mix64(s.seed) ^ mix64(0x5eed0000ULL + launch_index));

  unsigned long long S = 0;
  if (s.stress != kNoStress) {
    unsigned long long lo, hi;
    stress_block_range(G, &lo, &hi);
    S = lo + rng.below(hi - lo + 1);
    S = std::min(S, kMaxPhysBlocks - G);
  }
  t->app_blocks = (unsigned)G;
  t->stress_blocks = (unsigned)S;
  t->phys_blocks = (unsigned)(G + S);
  t->grid[0] = grid.x;
  t->grid[1] = grid.y;
  t->grid[2] = grid.z;
  t->rand_blocks = s.rand_threads && !s.keep_block_order ? 1 : 0;
  t->rand_warps = s.rand_threads ? 1 : 0;
  for (auto& k : t->block_keys) k = rng.next32();
  t->warp_key = rng.next32();
  if (S > 0) {
    t->seg_m = (unsigned)(G / S);
    t->seg_r = (unsigned)(G % S);
  }

  t->stress_kind = s.stress;
  t->max_ns = s.max_us * 1000ULL;
  t->rng_seed = rng.next();
  t->scratch = sc.scratch;
  t->scratch_words = sc.scratch_words;
  t->cache_words = sc.cache_words;
  t->stress_quota_threads = (unsigned)((unsigned long long)sc.cap_threads * S / (G + S));
  t->done = S > 0 ? sc.done : nullptr;  // without stressing blocks nobody waits for the count
  const Variant& v = s.profile.variants[variant_of(s, launch_index)];
  t->seq_bits = v.seq_bits;
  t->seq_len = v.seq_len;
  t->spread = v.spread;
  t->aim = sc.aim;
  t->aim_base = sc.aim_base;
  t->aim_pages = sc.aim_pages;
  if (s.stress == kAimStress && sc.aim_pages > 0) {
    // `spread` distinct pages (repeats only if there are too few), one per group of threads.
    for (unsigned i = 0; i < t->spread; ++i) {
      unsigned page;
      bool fresh;
      int tries = 0;
      do {
        page = (unsigned)rng.below(sc.aim_pages);
        fresh = true;
        for (unsigned j = 0; j < i; ++j) fresh = fresh && t->locs[j] != page;
      } while (!fresh && ++tries < 64);
      t->locs[i] = page;
    }
  }
  if (s.stress == kSysStress && sc.scratch_words > 0) {
    // `spread` distinct patch-sized regions (repeats only if the scratchpad has too few).
    const unsigned regions = std::max(1U, sc.scratch_words / s.profile.patch_size);
    for (unsigned i = 0; i < t->spread; ++i) {
      unsigned r;
      bool fresh;
      int tries = 0;
      do {
        r = (unsigned)rng.below(regions);
        fresh = true;
        for (unsigned j = 0; j < i; ++j) fresh = fresh && t->locs[j] != r * s.profile.patch_size;
      } while (!fresh && ++tries < 64);
      t->locs[i] = r * s.profile.patch_size;
    }
  }
  return true;
}

// ---- registry of translation units ---------------------------------------------------------------

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
struct TuConst {
  unsigned active;          // 1 in every environment but no-str-
  unsigned rand_threads;    // 1 in the `+` environments
  LaunchTable* table;       // this device's launch table
  unsigned long long* aim;  // aim-str: where instrumented accesses record addresses; else null
  unsigned char* coverage;  // WMFIX_COVERAGE: two bytes a fence id, mapped host memory; else null
  RaceLog race;             // WMFIX_RACE_TRACE in a race build; else empty
};

// Uploads one TU's constants (and its fence mask, built from s.fences) on `stream`.
using TuInitFn = cudaError_t (*)(const TuConst& c, const Settings& s, cudaStream_t stream);

inline std::vector<TuInitFn>& tu_registry() {
  static std::vector<TuInitFn> r;
  return r;
}

// ---- runtime state -------------------------------------------------------------------------------

struct LaunchInfo {
  unsigned long long launch_index = 0;
  dim3 grid;                 // as the program asked for it
  dim3 launched;             // what wmfix_launch returned
  unsigned app_blocks = 0;   // G
  unsigned stress_blocks = 0;// S
  bool remapped = false;
};

struct DeviceState {
  unsigned generation = 0;  // runtime generation whose TU constants are on this device
  size_t uploaded = 0;      // registry entries whose constants are on it (this generation)
  ScratchInfo scratch;
  LaunchTable* table = nullptr;
  cudaEvent_t last_kernel = nullptr;  // recorded after each remapped launch
  bool have_last = false;
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

// The coverage file: `executed` and `global` as fence sets (0-3,7), `fences` the ids covered.
inline std::string fence_ranges(const unsigned char* bytes, unsigned n, unsigned which) {
  std::string out;
  for (unsigned i = 0; i < n;) {
    if (!bytes[2 * i + which]) { ++i; continue; }
    unsigned j = i;
    while (j + 1 < n && bytes[2 * (j + 1) + which]) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(i);
    if (j > i) out += '-' + std::to_string(j);
    i = j + 1;
  }
  return out.empty() ? "none" : out;
}

inline std::string coverage_text(const unsigned char* bytes, unsigned n) {
  return "wmfix-coverage 1\nfences " + std::to_string(n) + "\nexecuted " + fence_ranges(bytes, n, 0) +
         "\nglobal " + fence_ranges(bytes, n, 1) + "\n";
}

// The race trace's buffer and where it goes at exit.
struct RaceTrace {
  std::string path;
  RaceLog device{};  // records and counter in the memory of the device first launched on
  bool written = false;  // written before a cudaDeviceReset: no second buffer, no second file
  std::string header;    // the file's header line, blank-padded to kRaceHeaderWidth
  unsigned long long unrecorded_launches = 0;  // launches after the file was written
};

constexpr size_t kRaceHeaderWidth = 160;

// The header line at the start of the trace file, blank-padded to its fixed width.
inline bool put_race_header(FILE* f, std::string header) {
  header.resize(kRaceHeaderWidth - 1, ' ');
  header += "\n";
  return std::fseek(f, 0, SEEK_SET) == 0 && std::fwrite(header.data(), 1, header.size(), f) == header.size();
}

// Launches after the trace was written (a cudaDeviceReset, then more kernels) recorded nothing:
// the header says how many, so that their events count as not checked.
inline void note_unrecorded_launches(const RaceTrace& r) {
  if (r.unrecorded_launches == 0 || r.header.empty()) return;
  FILE* f = std::fopen(r.path.c_str(), "r+b");
  const std::string h = r.header + " unrecorded_launches=" + std::to_string(r.unrecorded_launches);
  if (!f || !put_race_header(f, h) || std::fclose(f) != 0)
    std::fprintf(stderr, "wmfix: warning: cannot mark the race trace %s as missing %llu launch(es)\n", r.path.c_str(),
                 r.unrecorded_launches);
}

// A process-wide lock (pthread's: <mutex> would cost every instrumented file's compile).
struct Mutex {
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
};
class Lock {
 public:
  explicit Lock(Mutex& mu) : mu_(mu) { pthread_mutex_lock(&mu_.m); }
  ~Lock() { pthread_mutex_unlock(&mu_.m); }
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;

 private:
  Mutex& mu_;
};

struct Runtime {
  Mutex mu;
  Coverage coverage;
  RaceTrace race;
  unsigned max_fences = 0;  // the largest WMFIX_NUM_FENCES of a registered TU
  bool parsed = false;
  Settings settings;
  std::string warm_run;  // WMFIX_WARM_RUN of the run under way (warm runs: src/run/warm.rs)
  unsigned generation = 1;
  unsigned long long launches = 0;
  std::vector<DeviceState> devices;
  LaunchInfo last;
};

inline Runtime& runtime() {
  static Runtime r;
  return r;
}

// Runs in each TU's static initialisation, and again for a library loaded later (dlopen),
// perhaps while another thread launches: hence the lock.
inline bool register_tu(TuInitFn fn, unsigned fences) {
  Lock lock(runtime().mu);
  tu_registry().push_back(fn);
  runtime().max_fences = std::max(runtime().max_fences, fences);
  return true;
}

inline void write_coverage() {
  const Coverage& c = runtime().coverage;
  if (!c.host) return;
  if (FILE* f = std::fopen(c.path.c_str(), "w")) {
    const std::string text = coverage_text(c.host, c.fences);
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
}


// The trace file: a header line, then the written records in slot order, copied from the
// device in chunks while its context is still there and written as they come (a trace can take
// a quarter of the device's memory). The header goes last, over a blank line of its width:
// handed = slots handed out (past the buffer's end they were dropped), records = records in the
// file, lost = the copy or the write failed (a cudaDeviceReset, a kernel fault, a full disk).
inline void write_race_trace() {
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
  bool copied = cudaMemcpy(&handed, r.device.count, sizeof handed, cudaMemcpyDeviceToHost) == cudaSuccess;
  const unsigned long long n = std::min(handed, r.device.capacity);
  const unsigned long long chunk = 1ULL << 20;
  std::vector<RaceRecord> buf;
  unsigned long long records = 0;
  for (unsigned long long i = 0; copied && written && i < n; i += chunk) {
    const unsigned long long m = std::min(chunk, n - i);
    buf.resize(m);
    copied = cudaMemcpy(buf.data(), r.device.records + i, m * sizeof(RaceRecord), cudaMemcpyDeviceToHost) == cudaSuccess;
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

inline bool cuda_ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "wmfix: warning: %s failed: %s; this launch runs unchanged\n", what, cudaGetErrorString(e));
  return false;
}

// The coverage buffer, made at the first launch when WMFIX_COVERAGE names a file. Coverage is
// recorded in the active environments only (no-str- stays native: no per-block filter there).
inline void start_coverage(Runtime& rt) {
  const Settings& s = rt.settings;
  Coverage& c = rt.coverage;
  if (c.host || s.coverage_path.empty() || !s.active || rt.max_fences == 0) return;
  const size_t bytes = 2 * (size_t)rt.max_fences;
  unsigned char* h = static_cast<unsigned char*>(std::calloc(bytes, 1));
  void* dptr = nullptr;
  if (!h) return;
  if (!cuda_ok(cudaHostRegister(h, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable), "cudaHostRegister(coverage)") ||
      !cuda_ok(cudaHostGetDevicePointer(&dptr, h, 0), "cudaHostGetDevicePointer(coverage)")) {
    std::free(h);
    return;
  }
  c.path = s.coverage_path;
  c.fences = rt.max_fences;
  c.host = h;
  c.device = static_cast<unsigned char*>(dptr);
  std::atexit(write_coverage);
}

// The trace buffer of a race build, made at the first launch when WMFIX_RACE_TRACE names a
// file: WMFIX_RACE_EVENTS records, or under `auto` (the default) WMFIX_RACE_MEMORY of the
// device's free memory, so that a program's whole trace fits without a flag. Device memory:
// records written into mapped host memory crossed PCIe one field at a time and pinning a 4 GB
// buffer took about a second a run; only the slots handed out are copied.
inline void start_race(Runtime& rt) {
  const Settings& s = rt.settings;
  RaceTrace& r = rt.race;
  if (r.device.records || r.written || s.race_path.empty()) return;
  unsigned long long events = s.race_events;
  if (events == 0) {
    size_t free_bytes = 0, total_bytes = 0;
    if (!cuda_ok(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo(race trace)")) return;
    events = static_cast<unsigned long long>(static_cast<double>(free_bytes) * s.race_memory) / sizeof(RaceRecord);
  }
  const size_t bytes = (size_t)events * sizeof(RaceRecord);
  void* records = nullptr;
  unsigned long long* count = nullptr;
  if (!cuda_ok(cudaMalloc(&records, bytes), "cudaMalloc(race trace)")) return;
  if (!cuda_ok(cudaMemset(records, 0, bytes), "cudaMemset(race trace)") ||
      !cuda_ok(cudaMalloc(&count, sizeof *count), "cudaMalloc(race counter)") ||
      !cuda_ok(cudaMemset(count, 0, sizeof *count), "cudaMemset(race counter)")) {
    cudaFree(records);
    return;
  }
  r.path = s.race_path;
  r.device = RaceLog{static_cast<RaceRecord*>(records), events, count};
  std::atexit(write_race_trace);
}

inline bool is_capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &st) != cudaSuccess) return true;  // assume the worst
  return st != cudaStreamCaptureStatusNone;
}

// Uploads the constants of registry entries from `from` on. A TU registered after its device
// was set up (a library loaded later) gets them at the next launch; without them its extra
// blocks would run application code and its fence switches would be ignored.
inline bool upload_tus(const Settings& s, DeviceState& d, size_t from, cudaStream_t stream) {
  // Accesses record addresses only under aim-str (a scratchpad kept from an earlier aim-str
  // generation keeps its slots).
  const TuConst c{s.active ? 1U : 0U, s.rand_threads ? 1U : 0U, d.table,
                  s.stress == kAimStress ? d.scratch.aim : nullptr, runtime().coverage.device, runtime().race.device};
  const std::vector<TuInitFn>& reg = tu_registry();
  for (size_t i = from; i < reg.size(); ++i)
    if (!cuda_ok(reg[i](c, s, stream), "uploading wmfix constants")) return false;
  d.uploaded = reg.size();
  return true;
}

// First launch on a device (per generation): scratchpad, launch table, event, and every TU's
// constants and fence mask. Synchronises `stream` so that kernels on any stream see them.
inline bool init_device(Runtime& rt, DeviceState& d, int dev, cudaStream_t stream) {
  const Settings& s = rt.settings;
  start_coverage(rt);
  start_race(rt);
  if (s.active) {
    if (!d.table) {
      if (!cuda_ok(cudaMalloc(&d.table, sizeof(LaunchTable)), "cudaMalloc(launch table)")) return false;
      cudaMemsetAsync(d.table, 0, sizeof(LaunchTable), stream);  // phys_blocks 0: matches no grid
    }
    if (!d.last_kernel && !cuda_ok(cudaEventCreateWithFlags(&d.last_kernel, cudaEventDisableTiming), "cudaEventCreate"))
      return false;
    if (s.stress == kAimStress && d.scratch.scratch && !d.scratch.aim) {
      // A scratchpad from an earlier generation (wmfix::reset_for_tests) is too small for
      // aim-str's pages: the device is idle here, so make a new one.
      cudaFree(d.scratch.scratch);
      d.scratch.scratch = nullptr;
    }
    if (s.stress != kNoStress && !d.scratch.scratch) {
      int l2 = 0;
      cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev);
      const size_t l2_bytes = l2 > 0 ? (size_t)l2 : (size_t)4 << 20;
      size_t bytes = std::max(l2_bytes, (size_t)4 << 20);
      // aim-str: many 2 MiB pages, so that an aimed offset lands in many slices, plus one
      // page of slack to start at a page boundary.
      const size_t page = (size_t)kAimPageWords * 4;
      if (s.stress == kAimStress) bytes = std::max(4 * l2_bytes, (size_t)64 << 20) + page;
      void* p = nullptr;
      if (!d.scratch.done && !cuda_ok(cudaMalloc(&d.scratch.done, kDoneWords * 4), "cudaMalloc(block counters)"))
        return false;
      if (!cuda_ok(cudaMalloc(&p, bytes), "cudaMalloc(stress scratchpad)")) return false;
      cudaMemsetAsync(p, 0, bytes, stream);
      if (s.stress == kAimStress) {
        void* slots = nullptr;
        if (!cuda_ok(cudaMalloc(&slots, kAimSlots * 8), "cudaMalloc(aim slots)")) return false;
        cudaMemsetAsync(slots, 0, kAimSlots * 8, stream);
        d.scratch.aim = static_cast<unsigned long long*>(slots);
        const size_t skip = (page - (uintptr_t)p % page) % page;
        d.scratch.aim_base = (unsigned)(skip / 4);
        d.scratch.aim_pages = (unsigned)((bytes - skip) / page);
      }
      d.scratch.scratch = static_cast<unsigned*>(p);
      d.scratch.scratch_words = (unsigned)(bytes / 4);
      d.scratch.cache_words = (unsigned)(l2_bytes / 4);
      int sms = 0, per_sm = 0;
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
      cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, dev);
      d.scratch.cap_threads = (unsigned)std::max(1, sms * per_sm);
    }
  }
  if (!upload_tus(s, d, 0, stream)) return false;
  if (!is_capturing(stream) && !cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize")) return false;
  d.have_last = false;
  d.generation = rt.generation;
  if (s.verbose) std::fprintf(stderr, "wmfix: device %d: %s; %zu TU(s)\n", dev, describe(s).c_str(), tu_registry().size());
  return true;
}

// Warm runs: one process runs the program's main once a run (src/run/warm.rs), each run with its
// own WMFIX_WARM_RUN. A new one restarts the runtime as a fresh process starts it: the settings
// read again, the launch counter from 0, every TU's constants uploaded again.
inline void start_warm_run(Runtime& rt) {
  const char* run = std::getenv("WMFIX_WARM_RUN");
  if (!run || rt.warm_run == run) return;
  if (!rt.warm_run.empty()) {
    rt.parsed = false;
    rt.generation++;
    rt.launches = 0;
    rt.last = LaunchInfo{};
  }
  rt.warm_run = run;
}

// The grid handed to `<<<...>>>`. It lives until the end of the launch statement, so its
// destructor runs after the kernel has been enqueued and records an event behind it: the next
// launch's upload waits on that event, whatever stream it is on, so a table is never overwritten
// while a kernel that reads it may still run.
class LaunchGrid {
 public:
  explicit LaunchGrid(dim3 g, cudaStream_t stream = nullptr, int dev = -1) : grid_(g), stream_(stream), dev_(dev) {}
  LaunchGrid(const LaunchGrid&) = delete;
  LaunchGrid& operator=(const LaunchGrid&) = delete;
  operator dim3() const { return grid_; }
  ~LaunchGrid() {
    if (dev_ < 0) return;
    Runtime& rt = runtime();
    Lock lock(rt.mu);
    DeviceState& d = rt.devices[dev_];
    if (d.last_kernel && cudaEventRecord(d.last_kernel, stream_) == cudaSuccess) d.have_last = true;
  }

 private:
  dim3 grid_;
  cudaStream_t stream_;
  int dev_;  // >= 0: record the event on stream_ for this device
};

// `remappable` false: the grid must stay as given (a cooperative or clustered launch through
// cudaLaunchKernelEx). The launch still uploads a table, one that matches no grid, so the kernel
// runs with builtin ids rather than the previous launch's mapping, and still records its event.
inline LaunchGrid launch(dim3 grid, cudaStream_t stream, bool remappable = true) {
  Runtime& rt = runtime();
  Lock lock(rt.mu);
  start_warm_run(rt);
  if (!rt.parsed) {
    rt.settings = settings_from_env();
    rt.parsed = true;
  }
  int dev = 0;
  if (!cuda_ok(cudaGetDevice(&dev), "cudaGetDevice")) return LaunchGrid(grid);
  if ((size_t)dev >= rt.devices.size()) rt.devices.resize(dev + 1);
  DeviceState& d = rt.devices[dev];
  if (d.generation != rt.generation && !init_device(rt, d, dev, stream)) return LaunchGrid(grid);
  if (rt.race.written) rt.race.unrecorded_launches++;
  if (d.uploaded < tu_registry().size()) {
    if (!upload_tus(rt.settings, d, d.uploaded, stream)) return LaunchGrid(grid);
    if (!is_capturing(stream) && !cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize")) return LaunchGrid(grid);
  }
  const Settings& s = rt.settings;
  if (!s.active) return LaunchGrid(grid);  // no-str-: nothing per launch

  LaunchTable t{};
  const unsigned long long index = rt.launches++;
  t.launch_index = index;
  const bool remap = remappable && plan_launch(s, grid, index, d.scratch, &t);
  const bool capturing = is_capturing(stream);
  if (d.have_last && !capturing && !cuda_ok(cudaStreamWaitEvent(stream, d.last_kernel, 0), "cudaStreamWaitEvent"))
    return LaunchGrid(grid);
  if (t.done && !cuda_ok(cudaMemsetAsync(t.done, 0, kDoneWords * 4, stream), "cudaMemsetAsync(block counters)"))
    return LaunchGrid(grid);
  // Pageable source: the copy is staged before cudaMemcpyAsync returns, so `t` may go away.
  if (!cuda_ok(cudaMemcpyAsync(d.table, &t, sizeof t, cudaMemcpyHostToDevice, stream), "uploading the launch table"))
    return LaunchGrid(grid);

  const dim3 launched = remap ? dim3(t.phys_blocks, 1, 1) : grid;
  rt.last = LaunchInfo{index, grid, launched, t.app_blocks, t.stress_blocks, remap};
  if (s.verbose) {
    const bool several = t.stress_blocks > 0 && s.profile.variants.size() > 1 && (s.stress == kSysStress || s.stress == kAimStress);
    std::fprintf(stderr, "wmfix: launch %llu: grid (%u,%u,%u) -> (%u,%u,%u): %u application + %u stressing blocks%s%s\n",
                 index, grid.x, grid.y, grid.z, launched.x, launched.y, launched.z, t.app_blocks, t.stress_blocks,
                 several ? ", profile variant " : "", several ? std::to_string(variant_of(s, index)).c_str() : "");
  }
  return LaunchGrid(launched, stream, capturing ? -1 : dev);
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
      : given_(c), keep_(c == nullptr || !remappable(*c)), copy_(c ? *c : cudaLaunchConfig_t{}), grid_(grid_of(c, keep_)) {
    copy_.gridDim = grid_;
  }
  LaunchConfig(const LaunchConfig&) = delete;
  LaunchConfig& operator=(const LaunchConfig&) = delete;
  operator const cudaLaunchConfig_t*() const { return keep_ ? given_ : &copy_; }

 private:
  static LaunchGrid grid_of(const cudaLaunchConfig_t* c, bool keep) {
    if (c == nullptr) return LaunchGrid(dim3());  // cudaLaunchKernelEx reports the error
    return launch(c->gridDim, c->stream, !keep);
  }

  const cudaLaunchConfig_t* given_;
  bool keep_;
  cudaLaunchConfig_t copy_;
  LaunchGrid grid_;
};

// For tests: waits for the device, then makes the next launch re-read the environment, restart
// the launch counter and re-upload every TU's constants, as in a fresh process.
inline void reset_for_tests() {
  cudaDeviceSynchronize();
  Runtime& rt = runtime();
  Lock lock(rt.mu);
  rt.parsed = false;
  rt.generation++;
  rt.launches = 0;
  rt.last = LaunchInfo{};
}

// For tests and tools: the last remapped launch, and the settings in force.
inline LaunchInfo last_launch() {
  Runtime& rt = runtime();
  Lock lock(rt.mu);
  return rt.last;
}

inline Settings current_settings() {
  Runtime& rt = runtime();
  Lock lock(rt.mu);
  if (!rt.parsed) {
    rt.settings = settings_from_env();
    rt.parsed = true;
  }
  return rt.settings;
}

}  // namespace wmfix

// k<<<g, b, smem, st>>>(...) becomes k<<<wmfix_launch(g, st), b, smem, st>>>(...).
inline wmfix::LaunchGrid wmfix_launch(dim3 grid, cudaStream_t stream) { return wmfix::launch(grid, stream); }
// cudaLaunchKernelEx(cfg, k, args...) becomes cudaLaunchKernelEx(wmfix_launch_ex(cfg), k, args...),
// and the same for cudaLaunchKernelExC.
inline wmfix::LaunchConfig wmfix_launch_ex(const cudaLaunchConfig_t* config) { return wmfix::LaunchConfig(config); }

#endif  // WMFIX_HOST_CUH_INCLUDED
