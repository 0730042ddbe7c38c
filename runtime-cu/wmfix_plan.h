// wmfix runtime, host library: settings from the environment, fence lists and per-launch plans
// (included by wmfix_host.cpp, and by runtime-cu/tests/host_test.cu, which checks them on the
// CPU). Plain C++ (the library is built by a host compiler, without CUDA's headers).
#ifndef WMFIX_PLAN_H_INCLUDED
#define WMFIX_PLAN_H_INCLUDED

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "wmfix_common.cuh"
#include "wmfix_profile.h"

namespace wmfix {
namespace host {

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

// A grid's dimensions (dim3 without CUDA's headers; converts from anything with x, y, z).
struct Grid {
  unsigned x, y, z;
  Grid(unsigned gx, unsigned gy = 1, unsigned gz = 1) : x(gx), y(gy), z(gz) {}
  template <class D, class = decltype(D().z)>
  Grid(const D& d) : x(d.x), y(d.y), z(d.z) {}
};

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
inline bool plan_launch(const Settings& s, Grid grid, unsigned long long launch_index, const ScratchInfo& sc,
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

// ---- fence masks -----------------------------------------------------------------------------------

// A TU's fence masks from the settings: (num + 31) / 32 words each, bit set = the fence (or its
// placement at the top of a loop body) is off. Exits with status 3 on a bad list or an id the
// TU's WMFIX_NUM_FENCES does not have.
inline void fence_masks(const Settings& s, unsigned num, std::vector<unsigned>* off, std::vector<unsigned>* in_loop_off) {
  std::vector<bool> on, in_loop;
  std::string err;
  if (!parse_fence_list(s.fences, num, &on, &err)) fatal(err);
  if (!parse_fence_list(s.fences_in_loop, num, &in_loop, &err, "WMFIX_FENCES_IN_LOOP")) fatal(err);
  off->assign((num + 31) / 32, 0);
  in_loop_off->assign((num + 31) / 32, 0);
  for (unsigned i = 0; i < num; ++i) {
    if (!on[i]) (*off)[i / 32] |= 1U << (i % 32);
    if (!in_loop[i]) (*in_loop_off)[i / 32] |= 1U << (i % 32);
  }
}

// ---- coverage ----------------------------------------------------------------------------------------

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


}  // namespace host
}  // namespace wmfix

#endif  // WMFIX_PLAN_H_INCLUDED
