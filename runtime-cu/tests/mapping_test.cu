// GPU test of the wmfix id mapping and stressing blocks, written as instrumented code looks.
//
// For each of the 8 environments and several 1-, 2- and 3-D shapes it launches a recording
// kernel many times through wmfix_launch (and, for the first shape, through cudaLaunchKernelEx
// with wmfix_launch_ex: with PDL the same checks, a cooperative config launched as given with
// builtin ids); every application thread records its physical and
// virtual ids, and the host proves, per launch:
//   - the virtual (block, thread) ids are a bijection onto the original grid x block;
//   - threads of one physical block share a virtual block, threads of one physical warp share a
//     virtual warp and keep their lane, the partial last warp keeps its place;
//   - wmfix_gridDim() is the original grid, also when read from a __noinline__ device function;
//   - `-` environments keep the identity (application blocks in their original order, threads
//     unmoved); no-str- launches the original grid unchanged;
//   - stressing blocks: 15%..50% of the application blocks (at least 1), none in no-str;
//   - nothing is written outside the application's buffers (canaries around them and a
//     bystander buffer that no kernel should write).
// Then it checks that the same seed gives the same mappings, that stressing ends when the
// application ends (not at WMFIX_STRESS_MAX_US), and that it ends at WMFIX_STRESS_MAX_US when
// application threads never report (they leave through `exit`).
//
// Usage: mapping_test [--launches N] [--env ENV] [--no-termination]
//   (defaults: 200 launches, all 8 environments, with the termination tests)
// The environment is set with setenv + wmfix::reset_for_tests() between environments.
// Exit status: 0 all checks passed, 1 a check failed, 2 a CUDA error.
#define WMFIX_NUM_FENCES 4
#define WMFIX_FENCE_SCOPE 1
#include "../wmfix.cuh"
#line 25

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cuda_check.cuh"

struct Rec {
  unsigned pblock, plin, lane;  // physical block (linear), physical thread (linear), %laneid
  unsigned vb[3], vt[3], vg[3];
};

enum { kErrRange = 0, kErrBlockBijection = 1, kErrFunctionView = 2, kNumErr = 3 };

// Reading the ids from another (not inlined) function must give the same answer.
__device__ __noinline__ uint3 ids_from_function(uint3* vb, dim3* vg) {
  *vb = wmfix_blockIdx();
  *vg = wmfix_gridDim();
  return wmfix_threadIdx();
}

__global__ void record_kernel(Rec* recs, unsigned* hits, unsigned long long n_slots, unsigned* app_flag,
                              unsigned* errors) {
  WMFIX_KERNEL_ENTRY();
  __shared__ unsigned seen[1024];
  const uint3 vb = wmfix_blockIdx();
  const uint3 vt = wmfix_threadIdx();
  const dim3 vg = wmfix_gridDim();
  const unsigned nthreads = blockDim.x * blockDim.y * blockDim.z;
  const unsigned plin = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned pblock = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const bool in_range = vt.x < blockDim.x && vt.y < blockDim.y && vt.z < blockDim.z && vb.x < vg.x &&
                        vb.y < vg.y && vb.z < vg.z;
  const unsigned vtlin = vt.x + blockDim.x * (vt.y + blockDim.y * vt.z);

  // Barriers still work, and the block's virtual thread ids are a bijection of the block.
  seen[plin] = 0;
  __syncthreads();
  if (in_range) atomicAdd(&seen[vtlin], 1U);
  __syncthreads();
  if (seen[plin] != 1) atomicAdd(&errors[kErrBlockBijection], 1U);
  WMFIX_FENCE(0);

  uint3 fb;
  dim3 fg;
  const uint3 ft = ids_from_function(&fb, &fg);
  if (ft.x != vt.x || ft.y != vt.y || ft.z != vt.z || fb.x != vb.x || fb.y != vb.y || fb.z != vb.z ||
      fg.x != vg.x || fg.y != vg.y || fg.z != vg.z)
    atomicAdd(&errors[kErrFunctionView], 1U);

  const unsigned long long vblin = vb.x + (unsigned long long)vg.x * (vb.y + (unsigned long long)vg.y * vb.z);
  const unsigned long long slot = vblin * nthreads + vtlin;
  if (!in_range || slot >= n_slots) {
    atomicAdd(&errors[kErrRange], 1U);
    return;
  }
  atomicAdd(&hits[slot], 1U);
  Rec r;
  r.pblock = pblock;
  r.plin = plin;
  asm("mov.u32 %0, %%laneid;" : "=r"(r.lane));
  r.vb[0] = vb.x, r.vb[1] = vb.y, r.vb[2] = vb.z;
  r.vt[0] = vt.x, r.vt[1] = vt.y, r.vt[2] = vt.z;
  r.vg[0] = vg.x, r.vg[1] = vg.y, r.vg[2] = vg.z;
  recs[slot] = WMFIX_AFTER(1, r);
  app_flag[pblock] = 1;
  WMFIX_FENCE_AT(2, app_flag[pblock]);  // aim-str records it; the canaries check it is not touched
}

// Application threads leave through `exit`, skipping the exit guard: stressing blocks never see
// the application finish and must stop at WMFIX_STRESS_MAX_US.
__global__ void exit_kernel(unsigned* out) {
  WMFIX_KERNEL_ENTRY();
  out[wmfix_blockIdx().x * blockDim.x + wmfix_threadIdx().x] = 1;
  WMFIX_FENCE(3);
  asm volatile("exit;");
}

// ---- host side ----------------------------------------------------------------------------------

struct Shape {
  const char* name;
  dim3 grid, block;
};

static const Shape kShapes[] = {
    {"1D g37 b128", dim3(37), dim3(128)},
    {"1D g100 b48", dim3(100), dim3(48)},
    {"2D g5x7 b16x8", dim3(5, 7), dim3(16, 8)},
    {"3D g3x4x5 b7x5x3", dim3(3, 4, 5), dim3(7, 5, 3)},
    {"1D g1 b1024", dim3(1), dim3(1024)},
    {"2D g150x2 b100", dim3(150, 2), dim3(100)},
    {"1D g2 b33", dim3(2), dim3(33)},
};

static const char* kEnvs[] = {"no-str-",   "no-str+",    "sys-str-",   "sys-str+", "rand-str-",
                              "rand-str+", "cache-str-", "cache-str+", "aim-str-", "aim-str+"};

constexpr unsigned kGuard = 4096;  // canary words before and after each buffer
constexpr unsigned kCanary = 0xA5A5A5A5U;

// A device buffer with canary zones on both sides.
template <class T>
struct Guarded {
  size_t n = 0;
  size_t words = 0;
  unsigned* base = nullptr;
  T* data() const { return reinterpret_cast<T*>(base + kGuard); }
  void alloc(size_t count) {
    n = count;
    words = kGuard * 2 + (count * sizeof(T) + 3) / 4;
    CUDA_CHECK(cudaMalloc(&base, words * 4));
    CUDA_CHECK(cudaMemset(base, 0xA5, words * 4));
  }
  bool canaries_intact() const {
    std::vector<unsigned> head(kGuard), tail(kGuard);
    CUDA_CHECK(cudaMemcpy(head.data(), base, kGuard * 4, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(tail.data(), base + words - kGuard, kGuard * 4, cudaMemcpyDeviceToHost));
    for (unsigned i = 0; i < kGuard; ++i)
      if (head[i] != kCanary || tail[i] != kCanary) return false;
    return true;
  }
};

struct EnvFlags {
  bool stress, rand;
};

static EnvFlags flags_of(const std::string& env) {
  return EnvFlags{env.compare(0, 6, "no-str") != 0, env.back() == '+'};
}

struct Stats {
  unsigned long long launches = 0, threads = 0;
  unsigned smin = ~0U, smax = 0;
  double ms_total = 0, ms_max = 0;
  unsigned block_moved = 0, block_eligible = 0, warp_moved = 0, warp_eligible = 0;
  std::vector<std::string> failures;
  void fail(const std::string& msg) {
    if (failures.size() < 5) failures.push_back(msg);
    else if (failures.size() == 5) failures.push_back("(more failures not shown)");
  }
};

struct Buffers {
  Guarded<Rec> recs;
  Guarded<unsigned> hits, app_flag, errors;
  std::vector<Rec> h_recs;
  std::vector<unsigned> h_hits, h_flag, h_err;

  // Device buffers for G blocks of nthreads threads each.
  void alloc(unsigned long long G, unsigned long long nthreads) {
    recs.alloc(G * nthreads);
    hits.alloc(G * nthreads);
    app_flag.alloc(2 * G + 2);
    errors.alloc(kNumErr);
  }
  void free() {
    CUDA_CHECK(cudaFree(recs.base));
    CUDA_CHECK(cudaFree(hits.base));
    CUDA_CHECK(cudaFree(app_flag.base));
    CUDA_CHECK(cudaFree(errors.base));
  }
};

struct LaunchResult {
  wmfix::LaunchInfo info;
  dim3 launched;
  float ms = 0;
};

// How the kernel is launched: as the rewriter emits `<<<...>>>`, or cudaLaunchKernelEx through
// wmfix_launch_ex with programmatic dependent launch (remapped) or cooperative (kept as given).
enum Via { kChevron, kLaunchEx, kLaunchExCooperative };

static void launch_ex(const Shape& sh, Buffers& b, unsigned long long n_slots, cudaStream_t stream, Via via) {
  cudaLaunchAttribute attr[1];
  if (via == kLaunchEx) {
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
  } else {
    attr[0].id = cudaLaunchAttributeCooperative;
    attr[0].val.cooperative = 1;
  }
  cudaLaunchConfig_t config{};
  config.gridDim = sh.grid;
  config.blockDim = sh.block;
  config.stream = stream;
  config.attrs = attr;
  config.numAttrs = 1;
  CUDA_CHECK(cudaLaunchKernelEx(wmfix_launch_ex(&config), record_kernel, b.recs.data(), b.hits.data(), n_slots,
                                b.app_flag.data(), b.errors.data()));
}

static LaunchResult launch_record(const Shape& sh, Buffers& b, cudaStream_t stream, Via via = kChevron) {
  const unsigned long long G = (unsigned long long)sh.grid.x * sh.grid.y * sh.grid.z;
  const unsigned long long nthreads = (unsigned long long)sh.block.x * sh.block.y * sh.block.z;
  const unsigned long long n_slots = G * nthreads;
  CUDA_CHECK(cudaMemsetAsync(b.hits.data(), 0, n_slots * 4, stream));
  CUDA_CHECK(cudaMemsetAsync(b.recs.data(), 0xFF, n_slots * sizeof(Rec), stream));
  CUDA_CHECK(cudaMemsetAsync(b.app_flag.data(), 0, b.app_flag.n * 4, stream));
  CUDA_CHECK(cudaMemsetAsync(b.errors.data(), 0, kNumErr * 4, stream));
  cudaEvent_t e0, e1;
  CUDA_CHECK(cudaEventCreate(&e0));
  CUDA_CHECK(cudaEventCreate(&e1));
  LaunchResult r;
  {
    // As the rewriter emits it: k<<<g, b, smem, st>>> -> k<<<wmfix_launch(g, st), b, smem, st>>>.
    CUDA_CHECK(cudaEventRecord(e0, stream));
    if (via == kChevron)
      record_kernel<<<wmfix_launch(sh.grid, stream), sh.block, 0, stream>>>(b.recs.data(), b.hits.data(), n_slots,
                                                                            b.app_flag.data(), b.errors.data());
    else
      launch_ex(sh, b, n_slots, stream, via);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaEventRecord(e1, stream));
  }
  CUDA_CHECK(cudaEventSynchronize(e1));
  CUDA_CHECK(cudaEventElapsedTime(&r.ms, e0, e1));
  CUDA_CHECK(cudaEventDestroy(e0));
  CUDA_CHECK(cudaEventDestroy(e1));
  r.info = wmfix::last_launch();
  r.launched = r.info.remapped ? r.info.launched : sh.grid;
  b.h_recs.resize(n_slots);
  b.h_hits.resize(n_slots);
  b.h_flag.resize(b.app_flag.n);
  b.h_err.resize(kNumErr);
  CUDA_CHECK(cudaMemcpy(b.h_recs.data(), b.recs.data(), n_slots * sizeof(Rec), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(b.h_hits.data(), b.hits.data(), n_slots * 4, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(b.h_flag.data(), b.app_flag.data(), b.app_flag.n * 4, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(b.h_err.data(), b.errors.data(), kNumErr * 4, cudaMemcpyDeviceToHost));
  return r;
}

static std::string fmt(const char* f, unsigned long long a = 0, unsigned long long b = 0, unsigned long long c = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a, b, c);
  return buf;
}

// All the per-launch properties; failures go to st.
static void check_launch(const std::string& env, const Shape& sh, Buffers& b, const LaunchResult& r, Stats& st) {
  const EnvFlags ef = flags_of(env);
  const unsigned long long G = (unsigned long long)sh.grid.x * sh.grid.y * sh.grid.z;
  const unsigned nthreads = sh.block.x * sh.block.y * sh.block.z;
  const unsigned full = nthreads / 32;
  const unsigned long long n_slots = G * nthreads;
  const unsigned long long P = (unsigned long long)r.launched.x * r.launched.y * r.launched.z;
  const std::string at = fmt("launch %llu: ", r.info.launch_index);

  if (b.h_err[kErrRange]) st.fail(at + fmt("%llu threads got out-of-range virtual ids", b.h_err[kErrRange]));
  if (b.h_err[kErrBlockBijection]) st.fail(at + fmt("%llu threads: block's virtual thread ids not a bijection", b.h_err[kErrBlockBijection]));
  if (b.h_err[kErrFunctionView]) st.fail(at + fmt("%llu threads saw other ids from a device function", b.h_err[kErrFunctionView]));

  // Physical grid and stressing-block count.
  if (!ef.stress && !ef.rand) {
    if (r.launched.x != sh.grid.x || r.launched.y != sh.grid.y || r.launched.z != sh.grid.z)
      st.fail(at + "no-str- changed the grid");
  } else if (!r.info.remapped || r.launched.y != 1 || r.launched.z != 1) {
    st.fail(at + "launch was not remapped to a 1-D grid");
  }
  if (P < G) {
    st.fail(at + fmt("physical grid %llu smaller than the application grid %llu", P, G));
    return;
  }
  const unsigned long long S = P - G;
  st.smin = std::min<unsigned>(st.smin, (unsigned)S);
  st.smax = std::max<unsigned>(st.smax, (unsigned)S);
  if (ef.stress) {
    const unsigned long long lo = std::max<unsigned long long>(1, (15 * G + 99) / 100);
    const unsigned long long hi = std::max<unsigned long long>(lo, G / 2);
    if (S < lo || S > hi) st.fail(at + fmt("%llu stressing blocks, expected %llu..%llu", S, lo, hi));
  } else if (S != 0) {
    st.fail(at + fmt("%llu stressing blocks without stress", S));
  }

  // Bijection onto grid x block.
  for (unsigned long long s = 0; s < n_slots; ++s)
    if (b.h_hits[s] != 1) {
      st.fail(at + fmt("virtual thread %llu recorded %llu times", s, b.h_hits[s]));
      return;
    }

  // Per-thread properties; block and warp consistency.
  std::vector<long long> block_of(P, -1), warp_of(P * ((nthreads + 31) / 32), -1);
  bool ok = true;
  for (unsigned long long s = 0; s < n_slots && ok; ++s) {
    const Rec& x = b.h_recs[s];
    const unsigned long long vblin = s / nthreads;
    const unsigned vtlin = (unsigned)(s % nthreads);
    const unsigned pw = x.plin / 32, vw = vtlin / 32;
    std::string why;
    if (x.vg[0] != sh.grid.x || x.vg[1] != sh.grid.y || x.vg[2] != sh.grid.z) why = "wmfix_gridDim() is not the original grid";
    else if (x.pblock >= P || x.plin >= nthreads) why = "physical ids out of range";
    else if (x.lane != x.plin % 32) why = "%laneid differs from the linear thread id mod 32";
    else if (vtlin % 32 != x.plin % 32) why = "lane changed";
    else if (pw == full && vw != full) why = "the partial warp moved";
    else if (!ef.rand && vtlin != x.plin) why = "thread moved in a `-` environment";
    else if (!ef.stress && !ef.rand && x.pblock != vblin) why = "block moved in no-str-";
    else if (block_of[x.pblock] >= 0 && block_of[x.pblock] != (long long)vblin) why = "one physical block, two virtual blocks";
    else if (warp_of[x.pblock * ((nthreads + 31) / 32) + pw] >= 0 &&
             warp_of[x.pblock * ((nthreads + 31) / 32) + pw] != (long long)(vblin * 64 + vw))
      why = "one physical warp, two virtual warps";
    if (!why.empty()) {
      st.fail(at + fmt("virtual thread %llu (physical block %llu, thread %llu): ", s, x.pblock, x.plin) + why);
      ok = false;
      break;
    }
    block_of[x.pblock] = (long long)vblin;
    warp_of[x.pblock * ((nthreads + 31) / 32) + pw] = (long long)(vblin * 64 + vw);
  }
  if (!ok) return;

  // Application blocks = flagged physical blocks; their order; how much randomisation moved.
  unsigned long long apps = 0;
  bool block_identity = true;
  for (unsigned long long p = 0; p < P; ++p) {
    const bool flagged = b.h_flag[p] == 1;
    if (flagged != (block_of[p] >= 0)) {
      st.fail(at + fmt("physical block %llu: app flag %llu but recorded %llu", p, flagged, block_of[p] >= 0));
      return;
    }
    if (!flagged) continue;
    if (block_of[p] != (long long)apps) block_identity = false;
    ++apps;
  }
  for (unsigned long long p = P; p < b.h_flag.size(); ++p)
    if (b.h_flag[p] != 0) st.fail(at + fmt("flag written past the physical grid at %llu", p));
  if (apps != G) st.fail(at + fmt("%llu application blocks, expected %llu", apps, G));
  if (!ef.rand && !block_identity) st.fail(at + "application blocks out of their original order in a `-` environment");
  if (ef.rand && G >= 3) {
    st.block_eligible++;
    st.block_moved += !block_identity;
  }
  if (ef.rand && full >= 2) {
    bool moved = false;
    for (unsigned long long s = 0; s < n_slots && !moved; ++s) moved = (s % nthreads) / 32 != b.h_recs[s].plin / 32;
    st.warp_eligible++;
    st.warp_moved += moved;
  }
  st.threads += n_slots;
}

// A cooperative launch through wmfix_launch_ex: not remapped, every thread once with builtin ids.
static void check_kept(const Shape& sh, Buffers& b, const LaunchResult& r, Stats& st) {
  st.smin = 0;
  if (r.info.remapped) st.fail(fmt("launch %llu: a cooperative launch was remapped", r.info.launch_index));
  const unsigned nthreads = sh.block.x * sh.block.y * sh.block.z;
  unsigned long long bad = 0;
  for (unsigned long long slot = 0; slot < b.h_recs.size(); ++slot) {
    const Rec& rec = b.h_recs[slot];
    bad += b.h_hits[slot] != 1 || rec.pblock != slot / nthreads || rec.plin != slot % nthreads;
  }
  if (bad) st.fail(fmt("%llu threads of a cooperative launch not at their builtin ids", bad));
  if (b.h_err[kErrRange] || b.h_err[kErrBlockBijection] || b.h_err[kErrFunctionView])
    st.fail("a cooperative launch's threads reported errors");
  st.threads += b.h_recs.size();
}

static bool same_records(const Buffers& a_recs_flags, const std::vector<Rec>& recs, const std::vector<unsigned>& flags) {
  return a_recs_flags.h_recs.size() == recs.size() &&
         std::memcmp(a_recs_flags.h_recs.data(), recs.data(), recs.size() * sizeof(Rec)) == 0 &&
         a_recs_flags.h_flag == flags;
}

struct Row {
  std::string env, shape;
  Stats st;
  unsigned long long G;
};

static void set_env(const std::string& env) {
  setenv("WMFIX_ENV", env.c_str(), 1);
  wmfix::reset_for_tests();
}

int main(int argc, char** argv) {
  unsigned launches = 200;
  bool termination = true;
  std::vector<std::string> envs(std::begin(kEnvs), std::end(kEnvs));
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--launches") && i + 1 < argc) launches = (unsigned)std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--env") && i + 1 < argc) envs = {argv[++i]};
    else if (!std::strcmp(argv[i], "--no-termination")) termination = false;
    else {
      std::fprintf(stderr, "usage: %s [--launches N] [--env ENV] [--no-termination]\n", argv[0]);
      return 2;
    }
  }
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  std::printf("mapping_test on %s (%d SMs, L2 %d KiB), %u launches per environment and shape\n", prop.name,
              prop.multiProcessorCount, prop.l2CacheSize / 1024, launches);
  unsetenv("WMFIX_STRESS_MAX_US");
  unsetenv("WMFIX_FENCES");
  unsetenv("WMFIX_SEED");

  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  // Memory that no kernel writes: stressing blocks must leave it alone.
  Guarded<unsigned> bystander;
  bystander.alloc(1 << 20);

  std::vector<Row> rows;
  bool all_ok = true;
  for (const std::string& env : envs) {
    set_env(env);
    std::printf("  %s: %s\n", env.c_str(), wmfix::settings_text());
    std::fflush(stdout);
    for (size_t si = 0; si < sizeof kShapes / sizeof kShapes[0]; ++si) {
      const Shape& sh = kShapes[si];
      const unsigned long long G = (unsigned long long)sh.grid.x * sh.grid.y * sh.grid.z;
      const unsigned long long nthreads = (unsigned long long)sh.block.x * sh.block.y * sh.block.z;
      Buffers b;
      b.alloc(G, nthreads);
      Row row{env, sh.name, Stats{}, G};
      std::vector<std::vector<Rec>> first_recs;
      std::vector<std::vector<unsigned>> first_flags;
      for (unsigned i = 0; i < launches; ++i) {
        const LaunchResult r = launch_record(sh, b, stream);
        row.st.launches++;
        row.st.ms_total += r.ms;
        row.st.ms_max = std::max(row.st.ms_max, (double)r.ms);
        check_launch(env, sh, b, r, row.st);
        if (si == 0 && i < 3) {
          first_recs.push_back(b.h_recs);
          first_flags.push_back(b.h_flag);
        }
      }
      if (!b.recs.canaries_intact() || !b.hits.canaries_intact() || !b.app_flag.canaries_intact() ||
          !b.errors.canaries_intact())
        row.st.fail("canary around an application buffer overwritten");
      if (si == 0) {  // same seed, same launch sequence: same mappings and stress placement
        set_env(env);
        for (unsigned i = 0; i < first_recs.size(); ++i) {
          launch_record(sh, b, stream);
          if (!same_records(b, first_recs[i], first_flags[i]))
            row.st.fail(fmt("launch %llu differs after reset with the same seed", i));
        }
      }
      if (row.st.ms_max > 1000) row.st.fail(fmt("a launch took %llu ms", (unsigned long long)row.st.ms_max));
      b.free();
      all_ok = all_ok && row.st.failures.empty();
      rows.push_back(row);
    }
    {
      // The same checks through cudaLaunchKernelEx with PDL; a cooperative config keeps its grid.
      const Shape& sh = kShapes[0];
      const unsigned long long G = (unsigned long long)sh.grid.x * sh.grid.y * sh.grid.z;
      const unsigned long long nthreads = (unsigned long long)sh.block.x * sh.block.y * sh.block.z;
      Buffers b;
      b.alloc(G, nthreads);
      Row pdl{env, std::string(sh.name) + " Ex", Stats{}, G};
      Row coop{env, std::string(sh.name) + " Ex coop", Stats{}, G};
      for (unsigned i = 0; i < 20; ++i) {
        const LaunchResult r = launch_record(sh, b, stream, kLaunchEx);
        pdl.st.launches++;
        check_launch(env, sh, b, r, pdl.st);
      }
      for (unsigned i = 0; i < 5; ++i) {
        const LaunchResult r = launch_record(sh, b, stream, kLaunchExCooperative);
        coop.st.launches++;
        check_kept(sh, b, r, coop.st);
      }
      b.free();
      all_ok = all_ok && pdl.st.failures.empty() && coop.st.failures.empty();
      rows.push_back(pdl);
      rows.push_back(coop);
    }
    std::vector<unsigned> h(bystander.words);
    CUDA_CHECK(cudaMemcpy(h.data(), bystander.base, bystander.words * 4, cudaMemcpyDeviceToHost));
    if (std::count(h.begin(), h.end(), kCanary) != (long)h.size()) {
      rows.back().st.fail("bystander buffer (written by no kernel) overwritten");
      all_ok = false;
    }
  }

  // Termination: ends with the application (a 5 s bound is never reached) ...
  struct TermRow {
    std::string env, what;
    double ms_min, ms_max;
    bool ok;
  };
  std::vector<TermRow> term;
  unsigned* out = nullptr;
  CUDA_CHECK(cudaMalloc(&out, 1 << 20));
  for (const std::string& env : envs) {
    if (!termination || !flags_of(env).stress) continue;
    setenv("WMFIX_STRESS_MAX_US", "5000000", 1);
    set_env(env);
    Buffers b;
    const Shape& sh = kShapes[0];
    b.recs.alloc(37 * 128);
    b.hits.alloc(37 * 128);
    b.app_flag.alloc(2 * 37 + 2);
    b.errors.alloc(kNumErr);
    double lo = 1e30, hi = 0;
    for (int i = 0; i < 20; ++i) {
      const LaunchResult r = launch_record(sh, b, stream);
      lo = std::min(lo, (double)r.ms);
      hi = std::max(hi, (double)r.ms);
    }
    term.push_back({env, "ends with the app (bound 5 s)", lo, hi, hi < 250});
    // ... and at the bound when the application never reports (20 ms bound).
    setenv("WMFIX_STRESS_MAX_US", "20000", 1);
    set_env(env);
    lo = 1e30, hi = 0;
    for (int i = 0; i < 5; ++i) {
      cudaEvent_t e0, e1;
      CUDA_CHECK(cudaEventCreate(&e0));
      CUDA_CHECK(cudaEventCreate(&e1));
      CUDA_CHECK(cudaEventRecord(e0, stream));
      exit_kernel<<<wmfix_launch(dim3(100), stream), 256, 0, stream>>>(out);
      CUDA_CHECK(cudaGetLastError());
      CUDA_CHECK(cudaEventRecord(e1, stream));
      CUDA_CHECK(cudaEventSynchronize(e1));
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
      lo = std::min(lo, (double)ms);
      hi = std::max(hi, (double)ms);
      CUDA_CHECK(cudaEventDestroy(e0));
      CUDA_CHECK(cudaEventDestroy(e1));
    }
    term.push_back({env, "ends at the bound (20 ms)", lo, hi, lo >= 19.0 && hi < 1000});
    unsetenv("WMFIX_STRESS_MAX_US");
    CUDA_CHECK(cudaFree(b.recs.base));
    CUDA_CHECK(cudaFree(b.hits.base));
    CUDA_CHECK(cudaFree(b.app_flag.base));
    CUDA_CHECK(cudaFree(b.errors.base));
  }
  CUDA_CHECK(cudaDeviceSynchronize());

  std::printf("\n%-11s %-19s %8s %10s %15s %9s %9s %13s %s\n", "env", "shape", "launches", "threads", "stress blocks",
              "ms avg", "ms max", "moved b/w %", "verdict");
  for (const Row& r : rows) {
    char sbuf[64], mbuf[32] = "-";
    std::snprintf(sbuf, sizeof sbuf, "%u..%u (%.0f-%.0f%%)", r.st.smin, r.st.smax, 100.0 * r.st.smin / r.G,
                  100.0 * r.st.smax / r.G);
    if (r.st.block_eligible || r.st.warp_eligible)
      std::snprintf(mbuf, sizeof mbuf, "%s/%s",
                    r.st.block_eligible ? std::to_string(100 * r.st.block_moved / r.st.block_eligible).c_str() : "-",
                    r.st.warp_eligible ? std::to_string(100 * r.st.warp_moved / r.st.warp_eligible).c_str() : "-");
    std::printf("%-11s %-19s %8llu %10llu %15s %9.3f %9.3f %13s %s\n", r.env.c_str(), r.shape.c_str(), r.st.launches,
                r.st.threads, sbuf, r.st.ms_total / std::max(1ULL, r.st.launches), r.st.ms_max, mbuf,
                r.st.failures.empty() ? "PASS" : "FAIL");
    for (const std::string& f : r.st.failures) std::printf("    %s\n", f.c_str());
    // Randomisation that never moves anything is broken too.
    if ((r.st.block_eligible && r.st.block_moved * 2 < r.st.block_eligible) ||
        (r.st.warp_eligible && r.st.warp_moved * 2 < r.st.warp_eligible)) {
      std::printf("    randomisation moved blocks/warps in too few launches\n");
      all_ok = false;
    }
  }
  std::printf("\n%-11s %-32s %10s %10s %s\n", "env", "stress termination", "ms min", "ms max", "verdict");
  for (const TermRow& t : term) {
    std::printf("%-11s %-32s %10.3f %10.3f %s\n", t.env.c_str(), t.what.c_str(), t.ms_min, t.ms_max, t.ok ? "PASS" : "FAIL");
    all_ok = all_ok && t.ok;
  }
  std::printf("\nmapping_test: %s\n", all_ok ? "PASS" : "FAIL");
  return all_ok ? 0 : 1;
}
