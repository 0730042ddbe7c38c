// The program's first launch inside a stream capture (as cuda-samples' simpleCudaGraphs does):
// the runtime's set-up (constants uploaded, in active environments its scratchpad) must not run
// on the capturing stream, where it would end the capture or become nodes of the graph. The
// graph, replayed three times, must compute what the kernel computes. Exit 0 on success, 1 on
// a wrong sum, 2 on a CUDA error.
#define WMFIX_NUM_FENCES 2
#include "../wmfix.cuh"
#include "cuda_check.cuh"

__global__ void add_one(int* data, int n) {
  WMFIX_KERNEL_ENTRY();
  const int i = (int)(wmfix_blockIdx().x * blockDim.x + wmfix_threadIdx().x);
  if (i < n) {
    data[i] += 1;
    WMFIX_FENCE_AT(0, data[i]);
  }
}

int main() {
  const int n = 1 << 16, threads = 256, blocks = n / threads, replays = 3;
  int* data = nullptr;
  CUDA_CHECK(cudaMalloc(&data, n * sizeof(int)));
  CUDA_CHECK(cudaMemset(data, 0, n * sizeof(int)));
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));
  cudaGraph_t graph;
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  add_one<<<wmfix_launch(dim3(blocks), stream), threads, 0, stream>>>(data, n);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec;
  CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int r = 0; r < replays; ++r) CUDA_CHECK(cudaGraphLaunch(exec, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  int* host = new int[n];
  CUDA_CHECK(cudaMemcpy(host, data, n * sizeof(int), cudaMemcpyDeviceToHost));
  long long wrong = 0;
  for (int i = 0; i < n; ++i) wrong += host[i] != replays;
  std::printf("capture_test: %lld of %d elements wrong after %d graph launches\n", wrong, n, replays);
  return wrong == 0 ? 0 : 1;
}
