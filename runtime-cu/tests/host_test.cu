// Host-only unit tests of the wmfix runtime (no GPU needed): the bijections, the per-launch plan
// (stress-block counts, placement, order), the environment and profile parsers, and the exit
// status 3 on bad configuration. Usage: host_test [path/to/profiles/hopper-default.toml]
#define WMFIX_NUM_FENCES 12
#define WMFIX_FENCE_SCOPE 1
#include "../wmfix.cuh"
#include "../wmfix_plan.h"
#line 7

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

static int g_failures = 0;
static int g_checks = 0;

#define CHECK(cond, ...)                                      \
  do {                                                        \
    ++g_checks;                                               \
    if (!(cond)) {                                            \
      ++g_failures;                                           \
      std::printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      std::printf(__VA_ARGS__);                               \
      std::printf("\n");                                      \
    }                                                         \
  } while (0)

static bool is_bijection(unsigned n, const std::function<unsigned(unsigned)>& f) {
  std::vector<char> seen(n, 0);
  for (unsigned x = 0; x < n; ++x) {
    const unsigned y = f(x);
    if (y >= n || seen[y]) return false;
    seen[y] = 1;
  }
  return true;
}

static void test_permute() {
  wmfix::host::Rng rng(42);
  unsigned non_identity = 0, sizes = 0;
  for (unsigned n = 1; n <= 3000; ++n) {
    unsigned k[4] = {rng.next32(), rng.next32(), rng.next32(), rng.next32()};
    CHECK(is_bijection(n, [&](unsigned x) { return wmfix::permute(x, n, k); }), "n=%u", n);
    if (n >= 3) {
      ++sizes;
      for (unsigned x = 0; x < n; ++x)
        if (wmfix::permute(x, n, k) != x) {
          ++non_identity;
          break;
        }
    }
  }
  CHECK(non_identity == sizes, "%u of %u permutations were the identity", sizes - non_identity, sizes);
  for (unsigned n : {65535U, 65536U, 65537U, (1U << 20) + 3U}) {
    unsigned k[4] = {rng.next32(), rng.next32(), rng.next32(), rng.next32()};
    CHECK(is_bijection(n, [&](unsigned x) { return wmfix::permute(x, n, k); }), "n=%u", n);
  }
  // Largest domain: spot-check that values stay in range and cycle walking ends.
  const unsigned big = 0x7fffffffU;
  unsigned k[4] = {1, 2, 3, 4};
  for (unsigned x = big - 1000; x < big; ++x) CHECK(wmfix::permute(x, big, k) < big, "x=%u", x);
  // Position spread of a random bijection: first element lands roughly uniformly.
  const unsigned n = 64;
  std::vector<unsigned> where(n, 0);
  for (int trial = 0; trial < 64000; ++trial) {
    unsigned kk[4] = {rng.next32(), rng.next32(), rng.next32(), rng.next32()};
    where[wmfix::permute(0, n, kk)]++;
  }
  for (unsigned i = 0; i < n; ++i) CHECK(where[i] > 700 && where[i] < 1300, "slot %u got %u of 64000", i, where[i]);
}

static void test_map_warp() {
  wmfix::host::Rng rng(7);
  for (unsigned nthreads = 1; nthreads <= 1024; ++nthreads) {
    unsigned k[4];
    wmfix::warp_keys(rng.next32(), rng.next32(), k);
    const unsigned warps = (nthreads + 31) / 32, full = nthreads / 32;
    CHECK(is_bijection(warps, [&](unsigned w) { return wmfix::map_warp(w, nthreads, k); }), "nthreads=%u", nthreads);
    if (full < warps) CHECK(wmfix::map_warp(full, nthreads, k) == full, "partial warp moved, nthreads=%u", nthreads);
  }
}

static void test_div_small() {
  unsigned bad = 0;
  for (unsigned d = 1; d <= 1024; ++d) {
    const unsigned r = wmfix::small_recip(d);
    for (unsigned n = 0; n < 1024; ++n) bad += wmfix::div_small(n, r) != n / d;
  }
  CHECK(bad == 0, "%u wrong quotients", bad);
}

static const char* kEnvs[] = {"no-str-",    "no-str+",    "sys-str-", "sys-str+", "rand-str-",
                              "rand-str+",  "cache-str-", "cache-str+", "aim-str-", "aim-str+"};

static wmfix::host::Settings settings_for(const char* env) {
  wmfix::host::Settings s;
  s.env = env;
  CHECK(wmfix::host::parse_env_name(env, &s.stress, &s.rand_threads), "%s", env);
  s.active = s.stress != wmfix::kNoStress || s.rand_threads;
  return s;
}

// Every physical block is an application block (virtual ids a bijection onto [0, G)) or a
// stressing block (indices a bijection onto [0, S)); S in range; `-` keeps application order.
static void check_plan(const char* env, dim3 grid, unsigned long long index, bool keep_order = false) {
  wmfix::host::Settings s = settings_for(env);
  s.keep_block_order = keep_order;
  wmfix::host::ScratchInfo sc;
  static unsigned fake_scratch;
  sc.scratch = &fake_scratch;
  sc.scratch_words = 12u << 20;
  sc.cache_words = 12u << 20;
  sc.aim_pages = 30;
  wmfix::LaunchTable t;
  CHECK(wmfix::host::plan_launch(s, grid, index, sc, &t), "%s", env);
  const unsigned G = grid.x * grid.y * grid.z;
  CHECK(t.app_blocks == G && t.phys_blocks == G + t.stress_blocks, "%s G=%u", env, G);
  if (s.stress == wmfix::kNoStress) {
    CHECK(t.stress_blocks == 0, "%s", env);
  } else {
    unsigned long long lo, hi;
    wmfix::host::stress_block_range(G, &lo, &hi);
    CHECK(t.stress_blocks >= lo && t.stress_blocks <= hi, "%s G=%u S=%u", env, G, t.stress_blocks);
    CHECK(t.stress_blocks >= 1 && (G < 2 || 2ULL * t.stress_blocks <= G) && (100ULL * t.stress_blocks + 99 >= 15ULL * G),
          "%s G=%u S=%u", env, G, t.stress_blocks);
  }
  std::vector<char> app_seen(G, 0), stress_seen(t.stress_blocks, 0);
  long long last_v = -1;
  bool ordered = true;
  for (unsigned p = 0; p < t.phys_blocks; ++p) {
    unsigned v = ~0U, sidx = ~0U;
    if (wmfix::map_block(t, p, &v, &sidx)) {
      CHECK(v < G && !app_seen[v], "%s p=%u v=%u", env, p, v);
      if (v < G) app_seen[v] = 1;
      ordered = ordered && (long long)v == last_v + 1;
      last_v = v;
    } else {
      CHECK(sidx < t.stress_blocks && !stress_seen[sidx], "%s p=%u sidx=%u", env, p, sidx);
      if (sidx < t.stress_blocks) stress_seen[sidx] = 1;
    }
  }
  if (!s.rand_threads || keep_order) CHECK(ordered, "%s: application blocks out of order", env);
  if (keep_order) CHECK(t.rand_warps == 1 || !s.rand_threads, "%s: warps no longer permuted", env);
  if (s.stress == wmfix::kSysStress)
    for (unsigned i = 0; i < t.spread; ++i) CHECK(t.locs[i] % s.profile.patch_size == 0, "%s loc %u", env, t.locs[i]);
  if (s.stress == wmfix::kAimStress) {  // `spread` distinct pages of the scratchpad
    for (unsigned i = 0; i < t.spread; ++i) {
      CHECK(t.locs[i] < sc.aim_pages, "%s page %u", env, t.locs[i]);
      for (unsigned j = 0; j < i; ++j) CHECK(t.locs[i] != t.locs[j], "%s: page %u twice", env, t.locs[i]);
    }
    CHECK(t.aim_pages == sc.aim_pages, "%s: aim pages", env);
  }
  // Same seed and launch index: same plan, byte for byte.
  wmfix::LaunchTable again;
  wmfix::host::plan_launch(s, grid, index, sc, &again);
  CHECK(std::memcmp(&t, &again, sizeof t) == 0, "%s: plan not deterministic", env);
}

static void test_plans() {
  const dim3 shapes[] = {dim3(1), dim3(2), dim3(3), dim3(7), dim3(37), dim3(100), dim3(5, 7), dim3(3, 4, 5),
                         dim3(64), dim3(65), dim3(1000), dim3(300, 2), dim3(257, 3, 2), dim3(100000)};
  for (const char* env : kEnvs) {
    if (!std::strcmp(env, "no-str-")) continue;  // never planned: launches are not remapped
    for (const dim3& g : shapes)
      for (unsigned long long i = 0; i < 20; ++i) {
        check_plan(env, g, i);
        check_plan(env, g, i, true);  // WMFIX_BLOCK_ORDER=keep
      }
  }
  // S covers its whole range over many launches, and successive launches differ.
  const wmfix::host::Settings s = settings_for("sys-str-");
  unsigned smin = ~0U, smax = 0;
  wmfix::host::ScratchInfo sc;
  for (unsigned long long i = 0; i < 2000; ++i) {
    wmfix::LaunchTable t;
    wmfix::host::plan_launch(s, dim3(100), i, sc, &t);
    smin = std::min(smin, t.stress_blocks);
    smax = std::max(smax, t.stress_blocks);
  }
  CHECK(smin == 15 && smax == 50, "S over 2000 launches of 100 blocks: %u..%u", smin, smax);
  wmfix::LaunchTable a, b;
  wmfix::host::Settings s2 = settings_for("sys-str+");
  wmfix::host::plan_launch(s2, dim3(100), 0, sc, &a);
  wmfix::host::plan_launch(s2, dim3(100), 1, sc, &b);
  CHECK(std::memcmp(a.block_keys, b.block_keys, sizeof a.block_keys) != 0, "launches 0 and 1 have the same keys");
  s2.seed = 2;
  wmfix::host::plan_launch(s2, dim3(100), 0, sc, &b);
  CHECK(std::memcmp(a.block_keys, b.block_keys, sizeof a.block_keys) != 0, "seeds 1 and 2 have the same keys");
  // Ungridable launches are left alone.
  wmfix::LaunchTable t;
  CHECK(!wmfix::host::plan_launch(s, dim3(65535, 65535, 2), 0, sc, &t) && t.phys_blocks == 0, "huge grid remapped");
}

static void test_parsers(const char* profile_path) {
  wmfix::StressKind k;
  bool r;
  for (const char* e : kEnvs) CHECK(wmfix::host::parse_env_name(e, &k, &r), "%s", e);
  CHECK(wmfix::host::parse_env_name("cache-str+", &k, &r) && k == wmfix::kCacheStress && r, "cache-str+");
  CHECK(wmfix::host::parse_env_name("aim-str-", &k, &r) && k == wmfix::kAimStress && !r, "aim-str-");
  CHECK(wmfix::host::parse_env_name("no-str-", &k, &r) && k == wmfix::kNoStress && !r, "no-str-");
  for (const char* e : {"", "sys-str", "sys-str*", "SYS-STR+", "str+", "+", "no-str--"})
    CHECK(!wmfix::host::parse_env_name(e, &k, &r), "accepted \"%s\"", e);

  std::vector<bool> on;
  std::string err;
  CHECK(wmfix::host::parse_fence_list("all", 12, &on, &err) && on == std::vector<bool>(12, true), "all");
  CHECK(wmfix::host::parse_fence_list("none", 12, &on, &err) && on == std::vector<bool>(12, false), "none");
  CHECK(wmfix::host::parse_fence_list("", 12, &on, &err) && on == std::vector<bool>(12, false), "empty");
  CHECK(wmfix::host::parse_fence_list(" 0, 3,7-9 ", 12, &on, &err), "list");
  CHECK(on == std::vector<bool>({1, 0, 0, 1, 0, 0, 0, 1, 1, 1, 0, 0}), "list contents");
  CHECK(wmfix::host::parse_fence_list("0-11", 12, &on, &err) && on == std::vector<bool>(12, true), "full range");
  for (const char* bad : {"12", "3-2", "a", "1,,2", "-1", "1-", "0-12", "1;2", "all,1"}) {
    err.clear();
    CHECK(!wmfix::host::parse_fence_list(bad, 12, &on, &err) && !err.empty(), "accepted \"%s\"", bad);
  }
  wmfix::host::parse_fence_list("12", 12, &on, &err);
  CHECK(err.find("out of range") != std::string::npos, "message: %s", err.c_str());
  // WMFIX_FENCES_IN_LOOP has the same syntax; its messages name it.
  CHECK(wmfix::host::parse_fence_list("3,5", 12, &on, &err, "WMFIX_FENCES_IN_LOOP") && on[3] && on[5] && !on[4],
        "in-loop list");
  err.clear();
  CHECK(!wmfix::host::parse_fence_list("x", 12, &on, &err, "WMFIX_FENCES_IN_LOOP") &&
            err.rfind("WMFIX_FENCES_IN_LOOP=", 0) == 0,
        "in-loop message: %s", err.c_str());

  unsigned long long v;
  CHECK(wmfix::host::parse_u64("18446744073709551615", &v) && v == ~0ULL, "max u64");
  CHECK(wmfix::host::parse_u64("0x10", &v) && v == 16, "hex");
  for (const char* bad : {"", "-1", "+1", "1x", "18446744073709551616", "one"})
    CHECK(!wmfix::host::parse_u64(bad, &v), "accepted \"%s\"", bad);

  wmfix::host::Profile p;
  CHECK(wmfix::host::parse_profile_text("# c\n\npatch_size = 32  # x\nsequence = \"ld3 st ld\"\nspread=8\nname=\"a # b\"\n", &p, &err),
        "%s", err.c_str());
  const wmfix::host::Variant& pv = p.variants[0];
  CHECK(p.variants.size() == 1 && p.patch_size == 32 && pv.spread == 8 && pv.seq_len == 5 && pv.seq_bits == 0x8,
        "profile values %zu %u %u %u %x", p.variants.size(), p.patch_size, pv.spread, pv.seq_len, pv.seq_bits);
  for (const char* bad : {"patch = 3", "patch_size = \"3\"", "patch_size = 0", "spread = 65", "sequence = ld st",
                          "sequence = \"ld xx\"", "sequence = \"\"", "sequence = \"ld33\"", "[chip]", "spread = -1"}) {
    wmfix::host::Profile q;
    err.clear();
    CHECK(!wmfix::host::parse_profile_text(bad, &q, &err) && !err.empty(), "accepted \"%s\"", bad);
  }
  if (profile_path) {  // the shipped profile says what the built-in default says
    std::ifstream in(profile_path);
    std::stringstream text;
    text << in.rdbuf();
    wmfix::host::Profile q, def;
    CHECK(in && wmfix::host::parse_profile_text(text.str(), &q, &err), "%s: %s", profile_path, err.c_str());
    CHECK(q.patch_size == def.patch_size && q.variants.size() == 1 && q.variants[0].seq_bits == def.variants[0].seq_bits &&
              q.variants[0].seq_len == def.variants[0].seq_len && q.variants[0].spread == def.variants[0].spread,
          "%s differs from the built-in default", profile_path);
  }
}

// Profiles with several stress variants: arrays of sequences and spreads, and what is refused.
static void test_profile_variants() {
  std::string err;
  wmfix::host::Profile p;
  CHECK(wmfix::host::parse_profile_text(
            "patch_size = 64\nsequence = [\"st st st st\", \"ld st st ld\"]  # two\nspread = [5, 2]\n", &p, &err),
        "%s", err.c_str());
  CHECK(p.variants.size() == 2 && p.variants[0].sequence == "st st st st" && p.variants[0].seq_bits == 0xf &&
            p.variants[0].seq_len == 4 && p.variants[0].spread == 5 && p.variants[1].sequence == "ld st st ld" &&
            p.variants[1].seq_bits == 0x6 && p.variants[1].seq_len == 4 && p.variants[1].spread == 2,
        "two variants: %zu", p.variants.size());
  // One value (or a 1-element array) applies to every variant, whichever key comes first.
  wmfix::host::Profile q;
  CHECK(wmfix::host::parse_profile_text("sequence = \"ld2\"\nspread = [1, 3, 64,]\n", &q, &err), "%s", err.c_str());
  CHECK(q.variants.size() == 3 && q.variants[0].spread == 1 && q.variants[1].spread == 3 && q.variants[2].spread == 64,
        "spreads: %zu", q.variants.size());
  for (const wmfix::host::Variant& v : q.variants) CHECK(v.seq_len == 2 && v.seq_bits == 0 && v.sequence == "ld2", "ld2");
  wmfix::host::Profile r;
  CHECK(wmfix::host::parse_profile_text("spread = [7]\nsequence = [\"st\", \"ld st\"]\n", &r, &err), "%s", err.c_str());
  CHECK(r.variants.size() == 2 && r.variants[0].seq_bits == 1 && r.variants[0].seq_len == 1 &&
            r.variants[1].seq_bits == 2 && r.variants[1].seq_len == 2 && r.variants[0].spread == 7 &&
            r.variants[1].spread == 7,
        "sequences: %zu", r.variants.size());
  wmfix::host::Profile eight;
  CHECK(wmfix::host::parse_profile_text("spread = [1, 2, 3, 4, 5, 6, 7, 8]", &eight, &err) && eight.variants.size() == 8,
        "eight variants: %s", err.c_str());
  const char* bad[][2] = {
      {"sequence = [\"st\", \"ld\"]\nspread = [1, 2, 3]", "line 2: sequence has 2 values but spread has 3"},
      {"\n\nspread = [1, 2]\nsequence = [\"st\", \"ld\", \"st\"]", "line 4: sequence has 3 values but spread has 2"},
      {"spread = []", "line 1: spread: empty array"},
      {"sequence = [ ]  # none", "line 1: sequence: empty array"},
      {"spread = [1, 2, 3, 4, 5, 6, 7, 8, 9]", "line 1: spread: 9 values: at most 8 variants"},
      {"spread = [1, x]", "line 1: spread[1] must be an integer"},
      {"spread = [1, \"2\"]", "line 1: spread[1] must be an integer"},
      {"spread = [1, 65]", "line 1: spread[1] must be in 1..64"},
      {"spread = [1,,2]", "line 1: spread: element 1 of the array is empty"},
      {"sequence = [\"st\", ld]", "line 1: sequence[1] must be a quoted string"},
      {"sequence = [\"st\", \"xx\"]", "line 1: sequence[1]: unknown access \"xx\""},
      {"sequence = [\"st\", \"ld\"", "line 1: sequence: unclosed ["},
      {"spread = [1, 2] 3", "line 1: spread: unexpected text after ]: \" 3\""},
      {"patch_size = [64]", "line 1: patch_size must be an integer (one for the chip, not an array)"},
      // Scalars keep their messages.
      {"spread = 65", "line 1: spread must be in 1..64"},
      {"sequence = \"ld xx\"", "line 1: sequence: unknown access \"xx\""},
      {"sequence = ld st", "line 1: sequence must be a quoted string"},
  };
  for (const auto& b : bad) {
    wmfix::host::Profile x;
    err.clear();
    CHECK(!wmfix::host::parse_profile_text(b[0], &x, &err) && err.find(b[1]) != std::string::npos,
          "\"%s\": got \"%s\", want \"%s\"", b[0], err.c_str(), b[1]);
  }
  // The settings line shows every variant; one variant reads as before.
  wmfix::host::Settings s;
  CHECK(wmfix::host::describe(s).find(" (patch_size=64 sequence=\"ld st st ld\" spread=2) stress_max_us=100000") !=
            std::string::npos,
        "%s", wmfix::host::describe(s).c_str());
  s.profile = p;
  CHECK(wmfix::host::describe(s).find("(patch_size=64 2 variants, one per launch: [0] sequence=\"st st st st\" spread=5, "
                                "[1] sequence=\"ld st st ld\" spread=2) ") != std::string::npos,
        "%s", wmfix::host::describe(s).c_str());
}

// A fold of 100 launch plans (sizes 100..199, seed 7) under `env` with the profile `text`
// (nullptr: the built-in default), pointers left out.
static unsigned long long plan_fold(const char* env, const char* text) {
  wmfix::host::Settings s = settings_for(env);
  s.seed = 7;
  std::string err;
  if (text) CHECK(wmfix::host::parse_profile_text(text, &s.profile, &err), "%s", err.c_str());
  wmfix::host::ScratchInfo sc;
  sc.scratch_words = 12u << 20;
  sc.cache_words = 12u << 20;
  sc.aim_pages = 30;
  sc.cap_threads = 270336;
  unsigned long long h = 0;
  auto fold = [&h](unsigned long long v) { h = wmfix::mix64(h ^ v); };
  for (unsigned long long i = 0; i < 100; ++i) {
    wmfix::LaunchTable t;
    wmfix::host::plan_launch(s, dim3(100 + (unsigned)i), i, sc, &t);
    for (unsigned v : {t.stress_blocks, t.phys_blocks, t.block_keys[0], t.block_keys[1], t.block_keys[2],
                       t.block_keys[3], t.warp_key, t.seg_m, t.seg_r, t.seq_bits, t.seq_len, t.spread,
                       t.stress_quota_threads})
      fold(v);
    fold(t.rng_seed);
    for (unsigned j = 0; j < t.spread; ++j) fold(t.locs[j]);
  }
  return h;
}

// Plans with profile variants. One variant, as a scalar or a 1-element array, plans exactly what
// the runtime planned before profiles had variants (the folds below were computed at 1452fab);
// with two, each launch takes one, about as often, from (seed, launch index) alone.
static void test_variant_plans() {
  const char* p5[] = {"patch_size = 32\nsequence = \"st st st st\"\nspread = 5\n",
                      "patch_size = 32\nsequence = [\"st4\"]\nspread = [5]\n"};
  const struct { const char* env; unsigned long long def, p5; } golden[] = {
      {"sys-str+", 0xbbb91cd4d63a3a0cULL, 0xe3f4d7f8be20ef89ULL},
      {"aim-str+", 0x88be19b914714455ULL, 0x95e070ba56d724e8ULL},
      {"rand-str-", 0xe7636e77d27a4847ULL, 0x985e54f6fbad3e5fULL}};
  for (const auto& g : golden) {
    CHECK(plan_fold(g.env, nullptr) == g.def, "%s: default plans changed", g.env);
    CHECK(plan_fold(g.env, "sequence = [\"ld st st ld\"]\nspread = [2]") == g.def, "%s: 1-element arrays", g.env);
    for (const char* text : p5) CHECK(plan_fold(g.env, text) == g.p5, "%s: plans changed for %s", g.env, text);
  }
  wmfix::host::Settings one = settings_for("sys-str+"), two = one;
  std::string err;
  CHECK(wmfix::host::parse_profile_text("sequence = [\"st st st st\", \"ld st st ld\"]\nspread = [5, 2]", &two.profile, &err),
        "%s", err.c_str());
  wmfix::host::ScratchInfo sc;
  static unsigned fake_scratch;
  sc.scratch = &fake_scratch;
  sc.scratch_words = 12u << 20;
  unsigned chosen[2] = {0, 0};
  for (unsigned long long i = 0; i < 1000; ++i) {
    wmfix::LaunchTable t, again, single;
    wmfix::host::plan_launch(two, dim3(100), i, sc, &t);
    const unsigned v = wmfix::host::variant_of(two, i);
    CHECK(v < 2 && t.seq_bits == two.profile.variants[v].seq_bits && t.spread == two.profile.variants[v].spread,
          "launch %llu: variant %u, table %x/%u", i, v, t.seq_bits, t.spread);
    chosen[v & 1]++;
    wmfix::host::plan_launch(two, dim3(100), i, sc, &again);
    CHECK(std::memcmp(&t, &again, sizeof t) == 0, "launch %llu: plan not deterministic", i);
    // The other draws do not depend on the variants.
    wmfix::host::plan_launch(one, dim3(100), i, sc, &single);
    CHECK(t.stress_blocks == single.stress_blocks && t.rng_seed == single.rng_seed &&
              std::memcmp(t.block_keys, single.block_keys, sizeof t.block_keys) == 0,
          "launch %llu: draws differ from a single-variant plan", i);
  }
  CHECK(chosen[0] >= 350 && chosen[0] <= 650 && chosen[0] + chosen[1] == 1000, "variants chosen %u and %u times of 1000",
        chosen[0], chosen[1]);
  std::printf("host_test: 2 variants over 1000 launches: chosen %u and %u times\n", chosen[0], chosen[1]);
  wmfix::host::Settings other = two;
  other.seed = 2;
  unsigned differ = 0;
  for (unsigned long long i = 0; i < 64; ++i) differ += wmfix::host::variant_of(two, i) != wmfix::host::variant_of(other, i);
  CHECK(differ > 0, "seeds 1 and 2 pick the same variants");
  CHECK(wmfix::host::variant_of(one, 5) == 0, "one variant");
}

// Runs fn in a child process with the given environment; returns its exit status (-1: signal).
static int run_child(const std::vector<std::pair<const char*, const char*>>& env, const std::function<void()>& fn) {
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    for (const char* name : {"WMFIX_ENV", "WMFIX_SEED", "WMFIX_PROFILE", "WMFIX_STRESS_MAX_US", "WMFIX_FENCES",
                             "WMFIX_FENCES_IN_LOOP", "WMFIX_BLOCK_ORDER"})
      unsetenv(name);
    for (auto& kv : env) setenv(kv.first, kv.second, 1);
    if (!freopen("/dev/null", "w", stderr)) std::_Exit(100);
    fn();
    std::_Exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_env_errors() {
  auto read_env = [] { wmfix::host::settings_from_env(); };
  const std::vector<std::vector<std::pair<const char*, const char*>>> bad = {
      {{"WMFIX_ENV", "bogus"}},          {{"WMFIX_ENV", "sys-str"}},           {{"WMFIX_SEED", "abc"}},
      {{"WMFIX_SEED", "-3"}},            {{"WMFIX_PROFILE", "/nonexistent.toml"}}, {{"WMFIX_STRESS_MAX_US", "0"}},
      {{"WMFIX_STRESS_MAX_US", "1e5"}},  {{"WMFIX_BLOCK_ORDER", "sorted"}},  {{"WMFIX_RACE_EVENTS", "0"}},
      {{"WMFIX_RACE_EVENTS", "lots"}},   {{"WMFIX_RACE_MEMORY", "0"}},         {{"WMFIX_RACE_MEMORY", "0.95"}},
      {{"WMFIX_RACE_MEMORY", "a"}},
  };
  for (auto& env : bad) CHECK(run_child(env, read_env) == 3, "%s=%s did not exit with 3", env[0].first, env[0].second);
  CHECK(run_child({}, read_env) == 0, "defaults rejected");
  CHECK(run_child({{"WMFIX_ENV", "cache-str+"}, {"WMFIX_SEED", "0xffffffffffffffff"}, {"WMFIX_STRESS_MAX_US", "5"},
                   {"WMFIX_BLOCK_ORDER", "keep"}},
                  read_env) == 0,
        "good values rejected");
  // Fence ids are checked against this TU's WMFIX_NUM_FENCES (12) when its mask is built, before
  // any CUDA call.
  auto build_mask = [] {
    const wmfix::host::Settings s = wmfix::host::settings_from_env();
    std::vector<unsigned> off, in_loop_off;
    wmfix::host::fence_masks(s, 12, &off, &in_loop_off);
  };
  CHECK(run_child({{"WMFIX_FENCES", "0,12"}}, build_mask) == 3, "fence 12 of 12 accepted");
  CHECK(run_child({{"WMFIX_FENCES", "x"}}, build_mask) == 3, "malformed fence list accepted");
  CHECK(run_child({{"WMFIX_FENCES_IN_LOOP", "12"}}, build_mask) == 3, "in-loop fence 12 of 12 accepted");
  CHECK(run_child({{"WMFIX_FENCES_IN_LOOP", "0,11"}}, build_mask) == 0, "good in-loop list rejected");

  // The masks a TU gets: bit set = off, a word per 32 fences.
  {
    wmfix::host::Settings s;
    s.fences = "0,3,33-39";
    s.fences_in_loop = "none";
    std::vector<unsigned> off, in_loop_off;
    wmfix::host::fence_masks(s, 40, &off, &in_loop_off);
    CHECK(off.size() == 2 && off[0] == ~0x9U && off[1] == 0x1U, "fence mask %x %x", off[0], off.size() > 1 ? off[1] : 0);
    CHECK(in_loop_off.size() == 2 && in_loop_off[0] == ~0U && in_loop_off[1] == 0xffU, "in-loop mask %x %x",
          in_loop_off[0], in_loop_off.size() > 1 ? in_loop_off[1] : 0);
  }

  // A race trace's size: a share of free device memory unless a number of records is given.
  CHECK(run_child({{"WMFIX_RACE_EVENTS", "auto"}, {"WMFIX_RACE_MEMORY", "0.5"}}, read_env) == 0, "auto rejected");
  setenv("WMFIX_RACE_EVENTS", "123", 1);
  setenv("WMFIX_RACE_MEMORY", "0.1", 1);
  const wmfix::host::Settings sized = wmfix::host::settings_from_env();
  CHECK(sized.race_events == 123 && sized.race_memory == 0.1, "race sizes %llu %g", sized.race_events, sized.race_memory);
  unsetenv("WMFIX_RACE_EVENTS");
  unsetenv("WMFIX_RACE_MEMORY");

  unsetenv("WMFIX_ENV");
  const wmfix::host::Settings d = wmfix::host::settings_from_env();
  CHECK(d.env == "no-str-" && !d.active && d.seed == 1 && d.max_us == 100000 && d.fences == "all" &&
            d.fences_in_loop == "all" &&
            d.profile.patch_size == 64 && d.profile.variants.size() == 1 && d.profile.variants[0].seq_len == 4 &&
            d.profile.variants[0].spread == 2 && d.race_events == 0 && d.race_memory == 0.25,
        "defaults");
}

// cudaLaunchKernelEx's configs: stressing blocks join unless the launch is cooperative or clustered.
static void test_launch_configs() {
  cudaLaunchAttribute attrs[2] = {};
  attrs[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attrs[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t c{};
  c.gridDim = dim3(8);
  c.blockDim = dim3(64);
  c.attrs = attrs;
  c.numAttrs = 1;
  CHECK(wmfix::remappable(c), "programmatic dependent launch kept");
  attrs[1].id = cudaLaunchAttributeCooperative;
  attrs[1].val.cooperative = 0;
  c.numAttrs = 2;
  CHECK(wmfix::remappable(c), "cooperative = 0 kept");
  attrs[1].val.cooperative = 1;
  CHECK(!wmfix::remappable(c), "cooperative launch remapped");
  c.numAttrs = 1;
  CHECK(wmfix::remappable(c), "an attribute past numAttrs read");
  attrs[1].id = cudaLaunchAttributeClusterDimension;
  attrs[1].val.clusterDim.x = 1, attrs[1].val.clusterDim.y = 1, attrs[1].val.clusterDim.z = 1;
  c.numAttrs = 2;
  CHECK(wmfix::remappable(c), "cluster 1x1x1 kept");
  attrs[1].val.clusterDim.y = 2;
  CHECK(!wmfix::remappable(c), "cluster 1x2x1 remapped");
  c.attrs = nullptr;
  CHECK(wmfix::remappable(c), "no attributes kept");
  const cudaLaunchConfig_t* none = wmfix_launch_ex(nullptr);
  CHECK(none == nullptr, "a null config changed");
}

// The coverage filters (wmfix_common.cuh's cover_site) with a plain or: what reaches the host,
// a site at a time, as blocks run it; and the file the runtime writes at exit.
struct PlainOr {
  __host__ __device__ unsigned operator()(unsigned* w, unsigned bits) const {
    const unsigned old = *w;
    *w |= bits;
    return old;
  }
};

static void test_coverage() {
  const PlainOr plain_or;
  unsigned block0[4] = {}, block1[4] = {}, device[4] = {};
  unsigned char host[2 * 64] = {};
  // Site 5 on shared memory in block 0: executed, not global; once only.
  CHECK(wmfix::cover_site(block0, device, host, 5, false, plain_or), "first run of site 5");
  CHECK(host[10] == 1 && host[11] == 0, "site 5: executed %d global %d", host[10], host[11]);
  CHECK(!wmfix::cover_site(block0, device, host, 5, false, plain_or), "site 5 again in block 0");
  // Another block: its own filter passes, the device's stops it.
  CHECK(!wmfix::cover_site(block1, device, host, 5, false, plain_or), "site 5 in block 1");
  // The same site on global memory (a pointer that is sometimes global) does reach the host.
  CHECK(wmfix::cover_site(block1, device, host, 5, true, plain_or), "site 5 global");
  CHECK(host[11] == 1, "site 5 global not recorded");
  // No block filter (a block without wmfix's entry): the device's alone.
  CHECK(wmfix::cover_site(nullptr, device, host, 33, true, plain_or), "site 33");
  CHECK(!wmfix::cover_site(nullptr, device, host, 33, true, plain_or), "site 33 again");
  // Sites 16 apart share a word, not bits.
  CHECK(wmfix::cover_site(block0, device, host, 21, true, plain_or), "site 21 after site 5");
  const std::string text = wmfix::host::coverage_text(host, 64);
  CHECK(text == "wmfix-coverage 1\nfences 64\nexecuted 5,21,33\nglobal 5,21,33\n", "%s", text.c_str());
  unsigned char runs[2 * 6] = {1, 1, 1, 0, 1, 1, 0, 0, 1, 0, 0, 0};
  CHECK(wmfix::host::coverage_text(runs, 6) == "wmfix-coverage 1\nfences 6\nexecuted 0-2,4\nglobal 0,2\n", "%s",
        wmfix::host::coverage_text(runs, 6).c_str());
  unsigned char none[4] = {};
  CHECK(wmfix::host::coverage_text(none, 2) == "wmfix-coverage 1\nfences 2\nexecuted none\nglobal none\n", "empty");
}

// split and words read as std::getline and `stream >> word` did before them.
static void test_split_like_streams() {
  const char* texts[] = {"", ",", "a", "a,", ",a", "a,,b", "0,3,7-9", " 1 , 2 ,", "a\n", "a\n\nb\n", "\n",
                         " ld  st\tst\nld ", "st\r\n# x\n", "x,y\nz"};
  for (const char* t : texts) {
    for (char sep : {',', '\n'}) {
      std::vector<std::string> want;
      std::stringstream in(t);
      for (std::string item; std::getline(in, item, sep);) want.push_back(item);
      CHECK(wmfix::host::split(t, sep) == want, "split(\"%s\", %d)", t, sep);
    }
    std::vector<std::string> want;
    std::stringstream in(t);
    for (std::string w; in >> w;) want.push_back(w);
    CHECK(wmfix::host::words(t) == want, "words(\"%s\")", t);
  }
  std::string text;
  CHECK(!wmfix::host::read_file("/nonexistent/wmfix-profile.toml", &text), "read_file of a missing file");
}

int main(int argc, char** argv) {
  test_permute();
  test_map_warp();
  test_div_small();
  test_plans();
  test_parsers(argc > 1 ? argv[1] : nullptr);
  test_profile_variants();
  test_variant_plans();
  test_env_errors();
  test_launch_configs();
  test_coverage();
  test_split_like_streams();
  std::printf("host_test: %d checks, %d failures: %s\n", g_checks, g_failures, g_failures ? "FAIL" : "PASS");
  return g_failures ? 1 : 0;
}
