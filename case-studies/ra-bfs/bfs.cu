// ra-bfs: breadth-first search, one launch a level, for wmfix race (issue 46's applications).
// Each thread of a level's launch takes a frontier vertex and claims its unvisited neighbours
// with a compare-and-swap on their distance, appending each claimed one to the next frontier
// through an atomic tail. Built with -DRACY the claim and the append use block-scope atomics
// (atomicCAS_block, atomicAdd_block) on words every block uses: they order nothing between
// blocks, so two blocks may both claim a vertex or take one slot. Written for wmfix.
//
// Usage: bfs [vertices=65536] [edges-per-vertex=8]. Exit status 0 when every distance equals the
// CPU reference and the frontiers held each vertex once, 1 when not, 3 on a CUDA error.
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#define CHECK(call)                                                                \
  do {                                                                             \
    cudaError_t err_ = (call);                                                     \
    if (err_ != cudaSuccess) {                                                     \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err_)); \
      exit(3);                                                                     \
    }                                                                              \
  } while (0)

__global__ void expand(const int *row, const int *col, int *dist, const int *front, int nfront,
                       int *next, int *next_len, int level) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= nfront) return;
  int u = front[i];
  for (int e = row[u]; e < row[u + 1]; ++e) {
    int v = col[e];
#ifdef RACY
    if (atomicCAS_block(&dist[v], -1, level + 1) == -1) next[atomicAdd_block(next_len, 1)] = v;
#else
    if (atomicCAS(&dist[v], -1, level + 1) == -1) next[atomicAdd(next_len, 1)] = v;
#endif
  }
}

int main(int argc, char **argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 65536;
  const int degree = argc > 2 ? atoi(argv[2]) : 8;
  std::vector<int> row(n + 1), col((size_t)n * degree);
  srand(7);
  for (int u = 0; u < n; ++u) {
    row[u] = u * degree;
    for (int k = 0; k < degree; ++k) col[(size_t)u * degree + k] = rand() % n;
  }
  row[n] = n * degree;
  // The CPU reference.
  std::vector<int> want(n, -1), queue{0};
  want[0] = 0;
  for (size_t q = 0; q < queue.size(); ++q)
    for (int e = row[queue[q]]; e < row[queue[q] + 1]; ++e)
      if (want[col[e]] < 0) want[col[e]] = want[queue[q]] + 1, queue.push_back(col[e]);

  int *d_row, *d_col, *d_dist, *d_front, *d_next, *d_len;
  CHECK(cudaMalloc(&d_row, sizeof(int) * (n + 1)));
  CHECK(cudaMalloc(&d_col, sizeof(int) * col.size()));
  CHECK(cudaMalloc(&d_dist, sizeof(int) * n));
  // Frontiers hold at most n vertices, more when a vertex is claimed twice (the racy build).
  CHECK(cudaMalloc(&d_front, sizeof(int) * 2 * n));
  CHECK(cudaMalloc(&d_next, sizeof(int) * 2 * n));
  CHECK(cudaMalloc(&d_len, sizeof(int)));
  CHECK(cudaMemcpy(d_row, row.data(), sizeof(int) * (n + 1), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_col, col.data(), sizeof(int) * col.size(), cudaMemcpyHostToDevice));
  std::vector<int> dist(n, -1);
  dist[0] = 0;
  CHECK(cudaMemcpy(d_dist, dist.data(), sizeof(int) * n, cudaMemcpyHostToDevice));
  const int source = 0;
  CHECK(cudaMemcpy(d_front, &source, sizeof(int), cudaMemcpyHostToDevice));
  int nfront = 1, visited = 1;
  for (int level = 0; nfront > 0; ++level) {
    CHECK(cudaMemset(d_len, 0, sizeof(int)));
    const int threads = 256, blocks = (nfront + threads - 1) / threads;
    expand<<<blocks, threads>>>(d_row, d_col, d_dist, d_front, nfront, d_next, d_len, level);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(&nfront, d_len, sizeof(int), cudaMemcpyDeviceToHost));
    if (nfront > n) nfront = n;  // slots past the end were never written
    visited += nfront;
    std::swap(d_front, d_next);
  }
  CHECK(cudaMemcpy(dist.data(), d_dist, sizeof(int) * n, cudaMemcpyDeviceToHost));
  int wrong = 0, reached = 0;
  for (int v = 0; v < n; ++v) wrong += dist[v] != want[v], reached += want[v] >= 0;
  printf("bfs: %d vertices, %d reached, %d distances wrong, %d frontier entries (want %d)\n", n,
         reached, wrong, visited, reached);
  return wrong == 0 && visited == reached ? 0 : 1;
}
