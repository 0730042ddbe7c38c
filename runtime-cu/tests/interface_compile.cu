// Compile-only test: every form in which the rewriter uses the wmfix interface must compile
// (with -Werror all-warnings, with and without -rdc). Built by compile_test.sh; never run.
#define WMFIX_NUM_FENCES 40
#define WMFIX_FENCE_SCOPE 1
#include "../wmfix.cuh"
#line 1
// An instrumented header repeats the prologue: identical redefinitions and a second include.
#define WMFIX_NUM_FENCES 40
#define WMFIX_FENCE_SCOPE 1
#include "../wmfix.cuh"
#line 10

#include <type_traits>

// Ids in #define bodies, as the rewriter leaves them.
#define GLOBAL_ID (wmfix_blockIdx().x * blockDim.x + wmfix_threadIdx().x)
#define NUM_THREADS (wmfix_gridDim().x * blockDim.x)

static_assert(std::is_same<decltype(wmfix_threadIdx()), uint3>::value, "threadIdx type");
static_assert(std::is_same<decltype(wmfix_blockIdx()), uint3>::value, "blockIdx type");
static_assert(std::is_same<decltype(wmfix_gridDim()), dim3>::value, "gridDim type");

struct Bits {
  unsigned a : 3;
  unsigned b : 5;
};
struct Pair {
  int x, y;
};

template <class A, class B>
__device__ A first(A a, B) {
  return a;
}

__device__ void returns_void(const int* p) { (void)p; }
__device__ void relays_void(const int* p) { return WMFIX_AFTER_RETURN(27, returns_void(p)); }

__host__ __device__ int hd_function(int* p) {
  p[0] = 1;
  WMFIX_FENCE(0);
  p[1] = 2, WMFIX_FENCE_EXPR(1), p[2] = 3;
  return (int)(wmfix_threadIdx().x + wmfix_blockIdx().y + wmfix_gridDim().z);
}

__device__ int device_function(const int* p, int i, volatile int* v, const Bits& bits) {
  static_assert(std::is_same<decltype(WMFIX_AFTER(2, p[i])), int>::value, "prvalue copy of const int lvalue");
  static_assert(std::is_same<decltype(WMFIX_AFTER(2, *v)), int>::value, "volatile read");
  int arr[4] = {1, 2, 3, 4};
  static_assert(std::is_same<decltype(WMFIX_AFTER(3, arr)), int*>::value, "array decays");
  const int* q = WMFIX_AFTER(3, arr);
  const int carr[2] = {5, 6};
  static_assert(std::is_same<decltype(WMFIX_AFTER(3, carr)), const int*>::value, "const array decays");
  const unsigned b = WMFIX_AFTER(4, bits.a) + WMFIX_AFTER(5, bits.b);
  const int t = WMFIX_AFTER(6, first<int, long>(p[0], 2L));  // a comma inside template arguments
  const Pair pr = WMFIX_AFTER(7, Pair{p[0], p[1]});
  // A returned value, which may be void: the same types as WMFIX_AFTER's.
  static_assert(std::is_same<decltype(WMFIX_AFTER_RETURN(2, p[i])), int>::value, "return: prvalue copy");
  static_assert(std::is_same<decltype(WMFIX_AFTER_RETURN(3, arr)), int*>::value, "return: array decays");
  static_assert(std::is_same<decltype(WMFIX_AFTER_RETURN(7, Pair{p[0], p[1]})), Pair>::value, "return: class");
  static_assert(std::is_same<decltype(WMFIX_AFTER_RETURN(4, bits.a)), unsigned>::value, "return: bit-field");
  static_assert(std::is_same<decltype(WMFIX_AFTER_RETURN(27, returns_void(q))), void>::value, "return: void");
  switch (WMFIX_AFTER(8, p[i])) {
    case 0: return WMFIX_AFTER(9, p[i + 1]);
    default: break;
  }
  for (int k = 0; k < 3; ++k, WMFIX_FENCE_EXPR(10)) q += k;
  // Fences that name their access's address for aim-str: lvalues of every kind (const,
  // volatile, a bit-field, which has no address, an array row, a template argument list with a
  // comma), and pointers.
  int sum = p[i];
  WMFIX_FENCE_AT(18, p[i]);
  sum += *v;
  WMFIX_FENCE_AT(19, *v);
  sum += (int)bits.a;
  WMFIX_FENCE_AT(20, bits.a);
  sum += first<int, long>(p[0], 2L);
  WMFIX_FENCE_AT(21, p[first<int, long>(0, 2L)]);
  atomicAdd((int*)v, 1);
  WMFIX_FENCE_PTR(22, (int*)v);
  if (i > 0) WMFIX_FENCE_AT(23, q[1]);
  else WMFIX_FENCE_PTR(24, &p[0]);
  // After a statement of several accesses, the same forms fence whatever memory the named one
  // is in (a bit-field and a template argument list with a comma too).
  sum += *v + p[i];
  WMFIX_FENCE_AIM(28, *v);
  sum += (int)bits.b + p[0];
  WMFIX_FENCE_AIM(29, bits.b);
  sum += p[first<int, long>(0, 2L)] + p[1];
  WMFIX_FENCE_AIM(30, p[first<int, long>(0, 2L)]);
  atomicAdd((int*)v, p[i]);
  WMFIX_FENCE_AIM_PTR(31, (int*)v);
  if (i > 1) WMFIX_FENCE_AIM(32, q[1]);
  else WMFIX_FENCE_AIM_PTR(33, &p[0]);
  // Where every place is named: fenced when one of them may be global (a bit-field has no
  // address and counts as possibly global; a comma in a template argument list).
  sum += p[first<int, long>(0, 2L)] + (int)bits.b + *v;
  WMFIX_FENCE_AIM_IF(34, WMFIX_GLOBAL(bits.b) || WMFIX_GLOBAL(*v), p[first<int, long>(0, 2L)]);
  if (i > 2) WMFIX_FENCE_AIM_IF(35, WMFIX_GLOBAL(p[1]), q[1]);
  // A loop condition's fence: guarded at the top of the body, plain after the loop.
  while (atomicCAS((int*)v, 0, 1) != 0) {
    if (WMFIX_IN_LOOP(25)) WMFIX_FENCE_PTR(25, (int*)v);
  }
  WMFIX_FENCE_PTR(25, (int*)v);
  while (p[i] == 0) {
    if (WMFIX_IN_LOOP(26)) WMFIX_FENCE(26);
  }
  WMFIX_FENCE(26);
  return q[0] + (int)b + t + pr.x + (int)GLOBAL_ID + sum;
}

template <typename T, int N>
__device__ T templated_device(T* p) {
  WMFIX_FENCE(11);
  return WMFIX_AFTER(12, p[N]);
}

__global__ void plain_kernel(int* p, int n) {
  WMFIX_KERNEL_ENTRY();
  const unsigned i = GLOBAL_ID;
  if (i >= (unsigned)n) return;  // early return: the exit guard runs here too
  p[i] = hd_function(p) + device_function(p, 0, p, Bits{1, 2});
  WMFIX_FENCE(13);
}

template <typename T, int N>
__global__ void __launch_bounds__(256) templated_kernel(T* p) {
  WMFIX_KERNEL_ENTRY();
  __shared__ T tile[256];
  tile[wmfix_threadIdx().x] = WMFIX_AFTER(14, p[GLOBAL_ID]);
  __syncthreads();
  p[GLOBAL_ID] = tile[255 - wmfix_threadIdx().x] + templated_device<T, N>(p);
  WMFIX_FENCE(15);
}

template <typename... Ts>
__global__ void variadic_kernel(int* p, Ts... ts) {
  WMFIX_KERNEL_ENTRY();
  auto id = [&]() { return wmfix_blockIdx().x * blockDim.x + wmfix_threadIdx().x; };
  p[id()] = (int)sizeof...(ts);
  WMFIX_FENCE(16);
}

extern "C" __global__ void c_kernel(int* p) {
  WMFIX_KERNEL_ENTRY();
  if (wmfix_threadIdx().x == 0) p[wmfix_blockIdx().x] = (int)NUM_THREADS;
  WMFIX_FENCE(17);
}

namespace app {
__global__ void ns_kernel(int* p) {
  WMFIX_KERNEL_ENTRY();
  p[wmfix_blockIdx().x + wmfix_gridDim().x * wmfix_blockIdx().y] = (int)wmfix_threadIdx().z;
  WMFIX_FENCE(39);
}
}  // namespace app

template <typename T>
void launch_from_template(T* p, cudaStream_t st) {
  templated_kernel<T, 3><<<wmfix_launch(dim3(4), st), 256, 0, st>>>(p);
}

// cudaLaunchKernelEx (the C++ template, also as ::cudaLaunchKernelEx) and cudaLaunchKernelExC.
void launch_ex(int* p, int n, cudaStream_t st) {
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(4);
  config.blockDim = dim3(256);
  config.stream = st;
  config.attrs = attr;
  config.numAttrs = 1;
  cudaLaunchKernelEx(wmfix_launch_ex(&config), plain_kernel, p, n);
  (void)::cudaLaunchKernelEx(wmfix_launch_ex(&config), templated_kernel<float, 3>, (float*)nullptr);
  cudaLaunchConfig_t* mutable_config = &config;
  void* args[] = {&p, &n};
  cudaLaunchKernelExC(wmfix_launch_ex(mutable_config), (const void*)plain_kernel, args);
}

int main() {
  int* p = nullptr;
  cudaStream_t st = nullptr;
  int n = 1000;
  // Host-side uses of ids (macros used on the host) yield zeros.
  const unsigned host_ids = GLOBAL_ID + wmfix_gridDim().x;
  plain_kernel<<<wmfix_launch((n + 255) / 256, 0), 256>>>(p, n);  // grid given as an int
  plain_kernel<<<wmfix_launch(dim3(4, 2), st), dim3(32, 4), 0, st>>>(p, n);
  launch_from_template(p, st);
  variadic_kernel<float, char><<<wmfix_launch(dim3(2), 0), 64>>>(p, 1.0f, 'c');
  c_kernel<<<wmfix_launch(3, st), 32, 128, st>>>(p);
  app::ns_kernel<<<wmfix_launch(dim3(2, 3, 4), 0), dim3(4, 4, 4)>>>(p);
  int host_arr[2] = {1, 2};
  hd_function(host_arr);
  launch_ex(p, n, st);
  return (int)host_ids;
}
