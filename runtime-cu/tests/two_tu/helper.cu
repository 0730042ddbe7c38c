// -rdc only: a device function in a third TU that reads the virtual ids of the calling kernel.
#define WMFIX_NUM_FENCES 3
#define WMFIX_FENCE_SCOPE 1
#include "../../wmfix.cuh"
#line 1
#include "two_tu.cuh"

__device__ void helper_ids(uint3* block, uint3* thread, dim3* grid) {
  *block = wmfix_blockIdx();
  *thread = wmfix_threadIdx();
  *grid = wmfix_gridDim();
  WMFIX_FENCE(1);
}
