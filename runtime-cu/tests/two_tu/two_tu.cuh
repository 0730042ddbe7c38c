// An instrumented header: it carries the prologue too, so wmfix.cuh is included several times
// in one TU and the macros are defined identically more than once.
#define WMFIX_NUM_FENCES 3
#define WMFIX_FENCE_SCOPE 1
#include "../../wmfix.cuh"
#line 5
#pragma once

// Defined in kern.cu, launched from main.cu.
extern __global__ void remote_kernel(unsigned* slots, unsigned* errors);

#ifdef __CUDACC_RDC__
// Defined in helper.cu (-rdc only): reads the virtual ids from another TU.
extern __device__ void helper_ids(uint3* block, uint3* thread, dim3* grid);
#endif
