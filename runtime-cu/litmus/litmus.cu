// wmfix litmus engine: MP, LB and SB over global memory, many instances per launch, with
// stressing blocks in the same launch (paper 000, Sec. 3). Compiled at run time by `wmfix tune`
// and `wmfix litmus` (nvcc -cubin for the device's architecture) and launched through the
// driver API; the host side is src/litmus.rs, which mirrors `LitmusArgs` field by field.
//
// Accesses: the test's loads and stores are inline PTX `ld.relaxed.gpu` / `st.relaxed.gpu`
// with a "memory" clobber, so neither the compiler nor ptxas may merge, drop or reorder them,
// while the hardware may (relaxed accesses to different locations are unordered in the PTX
// model). Stressing accesses are `ld.volatile` / `st.volatile`, which are never cached in L1.
//
// One launch: test blocks (256 threads) hold 2 * instances threads; role 0 threads fill the
// first half of the test blocks and role 1 the second half, so the two threads of an instance
// are always in different blocks. Which instance a thread runs is an odd-multiplier affine
// bijection drawn per launch, per role. Stressing blocks are spread evenly among the test
// blocks with a random rotation. Outcomes are counted on the GPU by `litmus_eval`, which also
// resets the locations for the next launch.

#include <cstdint>

#define LITMUS_BLOCK 256

struct LitmusArgs {
    unsigned *mem;                // instance regions: instance i at mem + i * stride
    unsigned *results;            // r0 + 1, r1 + 1 per instance (0: not run)
    unsigned *barrier;            // per-instance arrival counter (sync incantation)
    unsigned *scratch;            // stress scratchpad, disjoint from mem
    const unsigned *locs;         // stressed scratchpad locations (words)
    unsigned *done;               // [0] test blocks finished, [1] stressing blocks started
    unsigned long long *hist;     // [ndist][4] outcomes (index r0 * 2 + r1), then missing
    unsigned test;                // 0 MP, 1 LB, 2 SB
    unsigned instances;           // a power of two, a multiple of LITMUS_BLOCK
    unsigned stride;              // words between instances' x
    unsigned d0;                  // instance i uses distance d0 + i % ndist
    unsigned ndist;
    unsigned test_blocks;         // 2 * instances / LITMUS_BLOCK
    unsigned stress_blocks;
    unsigned nlocs;
    unsigned max_iters;           // bound on a stressing thread's loop
    unsigned sync;                // 1: both threads meet before the test (bounded spin)
    unsigned mul0, add0, mul1, add1;  // per-role instance permutation (mul odd)
    unsigned rot;                 // rotation of the stressing blocks' positions
    unsigned pack;                // 0: instance i at mem + i * stride, y = x + d. Else dense:
                                  // x_i at 2 * pack * i, y_i at 2 * pack * perm(i) + pack
    unsigned permy;               // dense layout: odd multiplier of perm (mod instances)
    unsigned prestress;           // stores by each test thread to a stressed location first
    unsigned banks;               // conflicting shared-memory accesses by each test thread first
    unsigned pad;
};
static_assert(sizeof(LitmusArgs) == 136, "src/litmus/engine.rs mirrors this layout");

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

// General bank conflicts (paper 001, Sec. 4.2): every lane of a warp hits the same shared-memory
// bank at a different address, so the accesses serialise, before the test.
__device__ __forceinline__ void bank_conflicts(const LitmusArgs &a) {
    __shared__ unsigned banked[32 * 32];
    if (a.banks == 0) return;
    volatile unsigned *s = banked;
    unsigned lane = threadIdx.x % 32;
    for (unsigned k = 0; k < a.banks; k++) s[lane * 32 + (k % 32)] += 1;
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
        if (ld_rlx(&a.done[1]) >= a.stress_blocks) break;
}

__device__ void run_test(const LitmusArgs &a, unsigned g) {
    unsigned role = g >= a.instances;
    unsigned k = g & (a.instances - 1);
    unsigned i = role ? (k * a.mul1 + a.add1) & (a.instances - 1)
                      : (k * a.mul0 + a.add0) & (a.instances - 1);
    unsigned *x, *y;
    locations(a, i, a.d0 + i % a.ndist, &x, &y);
    await_stress(a);
    pre_stress(a);
    bank_conflicts(a);
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

// SEQ encodes the stressing loop: 1 << len | bits, bit k set = the k-th access is a store.
template <unsigned SEQ>
__device__ void stress(const LitmusArgs &a) {
    if (a.nlocs == 0) return;
    volatile unsigned *loc = a.scratch + a.locs[threadIdx.x % a.nlocs];
    volatile unsigned *done = a.done;
    if (threadIdx.x == 0) atomicAdd(&a.done[1], 1u);
    unsigned sink = 0;
    for (unsigned it = 0; it < a.max_iters; it++) {
        // Every iteration: with thousands of threads on one or two words, one iteration can
        // take microseconds, so a sparser check keeps launches running long after the test.
        if (*done >= a.test_blocks) break;
#pragma unroll
        for (unsigned k = 0; (2u << k) <= SEQ; k++) {
            if ((SEQ >> k) & 1)
                *loc = it;
            else
                sink += *loc;
        }
    }
    if (sink == 0xFFFFFFFFu) a.scratch[0] = sink;  // keeps the loads
}

template <unsigned SEQ>
__device__ void litmus_body(const LitmusArgs &a) {
    unsigned index;
    if (block_role(a, blockIdx.x, &index)) {
        stress<SEQ>(a);
        return;
    }
    run_test(a, index * LITMUS_BLOCK + threadIdx.x);
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        atomicAdd(a.done, 1u);
    }
}

#define LITMUS_KERNEL(SEQ) \
    extern "C" __global__ void __launch_bounds__(LITMUS_BLOCK) litmus_##SEQ(LitmusArgs a) { \
        litmus_body<SEQ>(a); \
    }

// Every sequence of 1 to 5 accesses: codes 2 to 63.
LITMUS_KERNEL(2) LITMUS_KERNEL(3) LITMUS_KERNEL(4) LITMUS_KERNEL(5) LITMUS_KERNEL(6)
LITMUS_KERNEL(7) LITMUS_KERNEL(8) LITMUS_KERNEL(9) LITMUS_KERNEL(10) LITMUS_KERNEL(11)
LITMUS_KERNEL(12) LITMUS_KERNEL(13) LITMUS_KERNEL(14) LITMUS_KERNEL(15) LITMUS_KERNEL(16)
LITMUS_KERNEL(17) LITMUS_KERNEL(18) LITMUS_KERNEL(19) LITMUS_KERNEL(20) LITMUS_KERNEL(21)
LITMUS_KERNEL(22) LITMUS_KERNEL(23) LITMUS_KERNEL(24) LITMUS_KERNEL(25) LITMUS_KERNEL(26)
LITMUS_KERNEL(27) LITMUS_KERNEL(28) LITMUS_KERNEL(29) LITMUS_KERNEL(30) LITMUS_KERNEL(31)
LITMUS_KERNEL(32) LITMUS_KERNEL(33) LITMUS_KERNEL(34) LITMUS_KERNEL(35) LITMUS_KERNEL(36)
LITMUS_KERNEL(37) LITMUS_KERNEL(38) LITMUS_KERNEL(39) LITMUS_KERNEL(40) LITMUS_KERNEL(41)
LITMUS_KERNEL(42) LITMUS_KERNEL(43) LITMUS_KERNEL(44) LITMUS_KERNEL(45) LITMUS_KERNEL(46)
LITMUS_KERNEL(47) LITMUS_KERNEL(48) LITMUS_KERNEL(49) LITMUS_KERNEL(50) LITMUS_KERNEL(51)
LITMUS_KERNEL(52) LITMUS_KERNEL(53) LITMUS_KERNEL(54) LITMUS_KERNEL(55) LITMUS_KERNEL(56)
LITMUS_KERNEL(57) LITMUS_KERNEL(58) LITMUS_KERNEL(59) LITMUS_KERNEL(60) LITMUS_KERNEL(61)
LITMUS_KERNEL(62) LITMUS_KERNEL(63)

// One thread per instance: count the outcome under its distance, then reset the instance's
// locations, results and barrier for the next launch. An instance with a result missing counts
// in the last slot, never as an outcome. Dynamic shared memory: (ndist * 4 + 1) u32.
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
    if (i == 0) a.done[0] = a.done[1] = 0;
    __syncthreads();
    for (unsigned j = threadIdx.x; j < slots; j += blockDim.x)
        if (counts[j]) atomicAdd(&a.hist[j], (unsigned long long)counts[j]);
}
