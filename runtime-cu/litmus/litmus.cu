// wmfix litmus engine: MP, LB and SB over global memory, many instances per launch, with
// stressing blocks in the same launch (Sorensen & Donaldson, PLDI 2016, Sec. 3). Compiled at run time by `wmfix tune`
// and `wmfix litmus` (nvcc -cubin for the device's architecture) and launched through the
// driver API; the host side is src/litmus/engine.rs, which mirrors `LitmusArgs` field by field.
//
// Accesses: the test's loads and stores are inline PTX `ld.relaxed.gpu` / `st.relaxed.gpu`
// with a "memory" clobber, so neither the compiler nor ptxas may merge, drop or reorder them,
// while the hardware may (relaxed accesses to different locations are unordered in the PTX
// model).
//
// Stress: the stressing blocks run the application runtime's own stress code
// (wmfix_stress.cuh, compiled in beside this file): the same loop over the profile's access
// sequence, the same accesses (`ld.volatile`, `st.relaxed.gpu`), the same polling (warp 0 every
// 64 accesses, a shared stop flag) and the same deadline, so that a tune measures the stress
// the applications get. It lives in a function of its own (`litmus_stress`, never inlined), so
// the kernel's own machine code holds only the test threads' accesses (tests/nvcc_compile.rs
// reads them there).
//
// One launch: test blocks (256 threads) hold 2 * instances threads; role 0 threads fill the
// first half of the test blocks and role 1 the second half, so the two threads of an instance
// are always in different blocks. Which instance a thread runs is an odd-multiplier affine
// bijection drawn per launch, per role. With `dual` (the peer's layout) the test blocks hold
// `instances` threads, each running role 0 of one instance and then role 1 of another, whose
// role 0 runs `add1` blocks on (run_dual). Stressing blocks are spread evenly among the test
// blocks with a random rotation. Outcomes are counted on the GPU by `litmus_eval`, which also
// resets the locations for the next launch.

#include <cstdint>

#include "wmfix_stress.cuh"

#define LITMUS_BLOCK 256

// Counters after the runtime's kDoneWords counters of finished (test) blocks.
#define LITMUS_STARTED (wmfix::kDoneWords)       // stressing blocks that have started
#define LITMUS_ARRIVED (wmfix::kDoneWords + 1)   // test blocks at the grid barrier
#define LITMUS_COUNTERS (wmfix::kDoneWords + 2)

struct LitmusArgs {
    unsigned *mem;                // instance regions: instance i at mem + i * stride
    unsigned *results;            // r0 + 1, r1 + 1 per instance (0: not run)
    unsigned *barrier;            // per-instance arrival counter (sync incantation)
    unsigned *scratch;            // stress scratchpad, disjoint from mem
    const unsigned *locs;         // stressed scratchpad locations (words)
    unsigned *done;               // LITMUS_COUNTERS counters, zero at launch
    unsigned long long *hist;     // [ndist][4] outcomes (index r0 * 2 + r1), then missing
    unsigned long long max_ns;    // stressing blocks stop after this long, whatever happens
    unsigned test;                // 0 MP, 1 LB, 2 SB
    unsigned instances;           // a power of two, a multiple of LITMUS_BLOCK
    unsigned stride;              // words between instances' x
    unsigned d0;                  // instance i uses distance d0 + i % ndist
    unsigned ndist;
    unsigned test_blocks;         // 2 * instances / LITMUS_BLOCK (1 * with dual)
    unsigned stress_blocks;
    unsigned nlocs;               // 0 (no stress) to wmfix::kMaxSpread
    unsigned seq_bits;            // the stressing sequence: bit k set = access k is a store
    unsigned seq_len;
    unsigned sync;                // 1: both threads meet before the test (bounded spin)
    unsigned mul0, add0, mul1, add1;  // per-role instance permutation (mul odd)
    unsigned rot;                 // rotation of the stressing blocks' positions
    unsigned pack;                // 0: instance i at mem + i * stride, y = x + d. Else dense:
                                  // x_i at 2 * pack * i, y_i at 2 * pack * perm(i) + pack
    unsigned permy;               // dense layout: odd multiplier of perm (mod instances)
    unsigned prestress;           // stores by each test thread to a stressed location first
    unsigned banks;               // conflicting shared-memory accesses by each test thread first
    unsigned grid_barrier;        // 1: all test blocks meet before the test (bounded spin)
    unsigned dual;                // 1: one thread per instance (run_dual); add1 is the shift
};
static_assert(sizeof(LitmusArgs) == 152, "src/litmus/engine.rs mirrors this layout");

__device__ __forceinline__ void st_rlx(unsigned *p, unsigned v) {
    asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ unsigned ld_rlx(const unsigned *p) {
    unsigned v;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

// Physical block b of a grid of test + stress blocks: which kind, and its index in that kind.
// Bresenham spacing puts the stress blocks evenly among the test blocks.
__device__ __forceinline__ bool block_role(const LitmusArgs &a, unsigned b, unsigned *index) {
    unsigned total = a.test_blocks + a.stress_blocks;
    unsigned v = (b + a.rot) % total;
    unsigned long long s = a.stress_blocks;
    unsigned before = (unsigned)((v * s) / total);
    unsigned after = (unsigned)(((v + 1ull) * s) / total);
    if (after > before) {
        *index = before;
        return true;
    }
    *index = v - after;
    return false;
}

// Instance i's two locations. Dense packing (a peer's incantation): neighbouring instances'
// locations share cache lines, and y lies in a permuted instance's slot, so an instance's x and
// y sit in different lines that other instances also use.
__device__ __forceinline__ void locations(const LitmusArgs &a, unsigned i, unsigned d, unsigned **x, unsigned **y) {
    if (a.pack) {
        *x = a.mem + (size_t)i * 2 * a.pack;
        *y = a.mem + (size_t)((i * a.permy) & (a.instances - 1)) * 2 * a.pack + a.pack;
    } else {
        *x = a.mem + (size_t)i * a.stride;
        *y = *x + d;
    }
}

// Pre-stress (a peer's incantation): the test threads themselves store to a stressed scratchpad
// location before their test, so their own memory pipeline is busy when the test starts.
__device__ __forceinline__ void pre_stress(const LitmusArgs &a) {
    if (a.prestress == 0 || a.nlocs == 0) return;
    volatile unsigned *p = a.scratch + a.locs[threadIdx.x % a.nlocs];
    for (unsigned k = 0; k < a.prestress; k++) *p = k;
}

// General bank conflicts (Alglave et al., ASPLOS 2015, Sec. 4.2): every lane of a warp hits the same shared-memory
// bank at a different address, so the accesses serialise, before the test.
__device__ __forceinline__ void bank_conflicts(const LitmusArgs &a) {
    __shared__ unsigned banked[32 * 32];
    if (a.banks == 0) return;
    volatile unsigned *s = banked;
    unsigned lane = threadIdx.x % 32;
    for (unsigned k = 0; k < a.banks; k++) s[lane * 32 + (k % 32)] += 1;
}

// Grid barrier (a peer's incantation): every test block arrives, then waits (bounded) until
// all have, so the test threads of the whole launch start their tests together. All blocks of
// a launch are resident at once (the host caps the grid), so the wait ends. The flag is the
// same for the whole launch, so every thread of a block reaches the barriers or none does.
__device__ __forceinline__ void grid_barrier(const LitmusArgs &a) {
    if (!a.grid_barrier) return;
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned *arrived = a.done + LITMUS_ARRIVED;
        atomicAdd(arrived, 1u);
        for (unsigned spin = 0; spin < (1u << 16); spin++)
            if (ld_rlx(arrived) >= a.test_blocks) break;
    }
    __syncthreads();
}

__device__ __forceinline__ void meet(const LitmusArgs &a, unsigned i) {
    atomicAdd(&a.barrier[i], 1u);
    for (unsigned spin = 0; spin < 4096; spin++)
        if (ld_rlx(&a.barrier[i]) >= 2) break;
}

// Test threads wait (bounded) until every stressing block runs, so the stress overlaps the
// test; all blocks of a launch are resident at once (the host caps the grid), so it ends.
__device__ __forceinline__ void await_stress(const LitmusArgs &a) {
    if (a.stress_blocks == 0) return;
    for (unsigned spin = 0; spin < (1u << 16); spin++)
        if (ld_rlx(&a.done[LITMUS_STARTED]) >= a.stress_blocks) break;
}

// --dual: thread g writes (role 0) instance perm(g) and reads (role 1) instance
// perm(g + add1 * LITMUS_BLOCK), whose writer is that thread, add1 (never 0) blocks on. The
// accesses run in program order, both loads of a role before any result is stored.
__device__ __forceinline__ void run_dual(const LitmusArgs &a, unsigned g) {
    const unsigned mask = a.instances - 1;
    const unsigned i0 = (g * a.mul0 + a.add0) & mask;
    const unsigned i1 = ((g + a.add1 * LITMUS_BLOCK) * a.mul0 + a.add0) & mask;
    unsigned *x0, *y0, *x1, *y1;
    locations(a, i0, a.d0 + i0 % a.ndist, &x0, &y0);
    locations(a, i1, a.d0 + i1 % a.ndist, &x1, &y1);
    await_stress(a);
    pre_stress(a);
    bank_conflicts(a);
    grid_barrier(a);
    unsigned r0, r1;
    switch (a.test) {
    case 0:  // MP: write x0 then y0; read y1 then x1 (both reads are role 1's).
        st_rlx(x0, 1);
        st_rlx(y0, 1);
        r0 = ld_rlx(y1);
        r1 = ld_rlx(x1);
        a.results[2 * i1] = r0 + 1;
        a.results[2 * i1 + 1] = r1 + 1;
        return;
    case 1:  // LB: read x0 then write y0; read y1 then write x1.
        r0 = ld_rlx(x0);
        st_rlx(y0, 1);
        r1 = ld_rlx(y1);
        st_rlx(x1, 1);
        break;
    default:  // SB: write x0 then read y0; write y1 then read x1.
        st_rlx(x0, 1);
        r0 = ld_rlx(y0);
        st_rlx(y1, 1);
        r1 = ld_rlx(x1);
        break;
    }
    a.results[2 * i0] = r0 + 1;
    a.results[2 * i1 + 1] = r1 + 1;
}

__device__ __forceinline__ void run_test(const LitmusArgs &a, unsigned g) {
    if (a.dual) {
        run_dual(a, g);
        return;
    }
    unsigned role = g >= a.instances;
    unsigned k = g & (a.instances - 1);
    unsigned i = role ? (k * a.mul1 + a.add1) & (a.instances - 1)
                      : (k * a.mul0 + a.add0) & (a.instances - 1);
    unsigned *x, *y;
    locations(a, i, a.d0 + i % a.ndist, &x, &y);
    await_stress(a);
    pre_stress(a);
    bank_conflicts(a);
    grid_barrier(a);
    if (a.sync) meet(a, i);
    unsigned r;
    switch (a.test) {
    case 0:  // MP: role 0 writes x then y; role 1 reads y then x.
        if (role == 0) {
            st_rlx(x, 1);
            st_rlx(y, 1);
            return;
        }
        // Both loads issue before either result is stored: a store between them would make the
        // in-order SM wait for the first load's value before issuing the second, so the two
        // could never be reordered (before this, MP counted 929 times fewer weak outcomes
        // unstressed on an H200).
        r = ld_rlx(y);
        {
            unsigned rx = ld_rlx(x);
            a.results[2 * i] = r + 1;
            a.results[2 * i + 1] = rx + 1;
        }
        return;
    case 1:  // LB: role 0 reads x then writes y; role 1 reads y then writes x.
        r = ld_rlx(role ? y : x);
        st_rlx(role ? x : y, 1);
        break;
    default:  // SB: role 0 writes x then reads y; role 1 writes y then reads x.
        st_rlx(role ? y : x, 1);
        r = ld_rlx(role ? x : y);
        break;
    }
    a.results[2 * i + role] = r + 1;
}

// A stressing block: the runtime's sys-str stress (wmfix::run_stress), described by a launch
// table in shared memory that says what the runtime's would: the profile's sequence at the
// launch's locations, until every test block has finished (counted in the runtime's counters)
// or max_ns have passed. Scalars, not the kernel's parameter struct: a reference to that would
// copy it to the stack of every thread.
__device__ __noinline__ void litmus_stress(unsigned *done, const unsigned *locs, unsigned *scratch,
                                           unsigned long long max_ns, unsigned test_blocks, unsigned seq_bits,
                                           unsigned seq_len, unsigned nlocs, unsigned sidx) {
    __shared__ wmfix::LaunchTable table;
    __shared__ unsigned stop;
    if (threadIdx.x == 0) {
        table.done = done;
        table.app_blocks = test_blocks;
        table.stress_kind = wmfix::kSysStress;
        table.seq_bits = seq_bits;
        table.seq_len = seq_len;
        table.spread = nlocs;
        table.scratch = scratch;
        table.scratch_words = 0;
        table.cache_words = 0;
        table.stress_quota_threads = 0xffffffffu;  // every stressing block of a launch stresses
        table.max_ns = max_ns;
        table.rng_seed = 0;
        stop = 0;
        atomicAdd(&done[LITMUS_STARTED], 1u);
    }
    for (unsigned j = threadIdx.x; j < nlocs; j += blockDim.x) table.locs[j] = locs[j];
    __syncthreads();
    table.aim = nullptr;
    wmfix::run_stress(&table, sidx, 0, &stop, 0);
}

extern "C" __global__ void __launch_bounds__(LITMUS_BLOCK) litmus_run(LitmusArgs a) {
    unsigned index;
    if (block_role(a, blockIdx.x, &index)) {
        if (a.nlocs > 0)
            litmus_stress(a.done, a.locs, a.scratch, a.max_ns, a.test_blocks, a.seq_bits, a.seq_len, a.nlocs, index);
        return;
    }
    run_test(a, index * LITMUS_BLOCK + threadIdx.x);
    __syncthreads();
    // Counted as the runtime counts a finished application block, which its stress polls.
    if (threadIdx.x == 0) atomicAdd(a.done + (blockIdx.x % wmfix::kDoneStripes) * wmfix::kDoneStride, 1u);
}

// One thread per instance: count the outcome under its distance, then reset the instance's
// locations, results and barrier, and the launch's counters, for the next launch. An instance
// with a result missing counts in the last slot, never as an outcome. Dynamic shared memory:
// (ndist * 4 + 1) u32.
extern "C" __global__ void litmus_eval(LitmusArgs a) {
    extern __shared__ unsigned counts[];
    unsigned slots = a.ndist * 4 + 1;
    for (unsigned j = threadIdx.x; j < slots; j += blockDim.x) counts[j] = 0;
    __syncthreads();
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < a.instances) {
        unsigned v0 = a.results[2 * i], v1 = a.results[2 * i + 1];
        unsigned d = i % a.ndist;
        unsigned slot = v0 == 0 || v1 == 0 ? slots - 1 : d * 4 + min(v0 - 1, 1u) * 2 + min(v1 - 1, 1u);
        atomicAdd(&counts[slot], 1u);
        unsigned *x, *y;
        locations(a, i, a.d0 + d, &x, &y);
        *x = 0;
        *y = 0;
        a.results[2 * i] = 0;
        a.results[2 * i + 1] = 0;
        a.barrier[i] = 0;
    }
    for (unsigned j = i; j < LITMUS_COUNTERS; j += gridDim.x * blockDim.x) a.done[j] = 0;
    __syncthreads();
    for (unsigned j = threadIdx.x; j < slots; j += blockDim.x)
        if (counts[j]) atomicAdd(&a.hist[j], (unsigned long long)counts[j]);
}
