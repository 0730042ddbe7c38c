// Defines the kernel; main.cu launches it (with and without -rdc).
#define WMFIX_NUM_FENCES 3
#define WMFIX_FENCE_SCOPE 1
#include "../../wmfix.cuh"
#line 1
#include "two_tu.cuh"

__global__ void remote_kernel(unsigned* slots, unsigned* errors) {
  WMFIX_KERNEL_ENTRY();
  const uint3 b = wmfix_blockIdx(), t = wmfix_threadIdx();
  const dim3 g = wmfix_gridDim();
  if (g.x != 7 || g.y != 3 || g.z != 1 || b.x >= g.x || b.y >= g.y || t.x >= blockDim.x || t.y >= blockDim.y) {
    atomicAdd(&errors[0], 1U);
    return;
  }
  const unsigned nthreads = blockDim.x * blockDim.y * blockDim.z;
  const unsigned slot = (b.x + g.x * b.y) * nthreads + t.x + blockDim.x * t.y;
  atomicAdd(&slots[slot], 1U);
  WMFIX_FENCE(0);
  // Same physical warp, same virtual warp.
  const unsigned vwarp = (t.x + blockDim.x * t.y) / 32;
  if (__shfl_sync(__activemask(), vwarp, 0) != vwarp && (threadIdx.x + blockDim.x * threadIdx.y) / 32 < nthreads / 32)
    atomicAdd(&errors[2], 1U);
#ifdef __CUDACC_RDC__
  uint3 hb, ht;
  dim3 hg;
  helper_ids(&hb, &ht, &hg);
  if (hb.x != b.x || hb.y != b.y || hb.z != b.z || ht.x != t.x || ht.y != t.y || ht.z != t.z || hg.x != g.x ||
      hg.y != g.y || hg.z != g.z)
    atomicAdd(&errors[1], 1U);
#endif
  WMFIX_FENCE(2);
}
