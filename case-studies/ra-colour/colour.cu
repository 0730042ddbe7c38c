// ra-colour: graph colouring in rounds (Jones-Plassmann), for wmfix race (issue 46's
// applications). In a round each worklist vertex whose random weight beats every uncoloured
// neighbour's takes the smallest colour its neighbours do not have; the others are appended to
// the next round's worklist through an atomic tail. Colours are read from the previous round's
// copy, so a round's writes never meet its reads. Built with -DRACY the append uses
// atomicAdd_block on the tail every block uses: two blocks may take one slot and a vertex is
// lost. Written for wmfix.
//
// Usage: colour [vertices=32768] [edges-per-vertex=6]. Exit status 0 when every vertex is
// coloured and no edge joins two vertices of one colour, 1 when not, 3 on a CUDA error.
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

constexpr int kMaxColours = 64;

__global__ void round_kernel(const int *row, const int *col, const unsigned *weight,
                             const int *colour_in, int *colour_out, const int *work, int nwork,
                             int *next, int *next_len) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= nwork) return;
  int v = work[i];
  bool best = true;
  unsigned long long used = 0;
  for (int e = row[v]; e < row[v + 1]; ++e) {
    int w = col[e];
    int c = colour_in[w];
    if (c >= 0) {
      used |= 1ULL << c;
    } else if (w != v && (weight[w] > weight[v] || (weight[w] == weight[v] && w > v))) {
      best = false;
    }
  }
  if (best) {
    int c = 0;
    while (c < kMaxColours - 1 && ((used >> c) & 1ULL)) ++c;
    colour_out[v] = c;
  } else {
#ifdef RACY
    next[atomicAdd_block(next_len, 1)] = v;
#else
    next[atomicAdd(next_len, 1)] = v;
#endif
  }
}

int main(int argc, char **argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 32768;
  const int degree = argc > 2 ? atoi(argv[2]) : 6;
  // An undirected graph: each vertex draws `degree` neighbours, stored both ways.
  std::vector<std::vector<int>> adj(n);
  srand(11);
  for (int u = 0; u < n; ++u)
    for (int k = 0; k < degree; ++k) {
      int w = rand() % n;
      adj[u].push_back(w);
      adj[w].push_back(u);
    }
  std::vector<int> row(n + 1, 0), col;
  for (int u = 0; u < n; ++u) {
    row[u] = (int)col.size();
    col.insert(col.end(), adj[u].begin(), adj[u].end());
  }
  row[n] = (int)col.size();
  std::vector<unsigned> weight(n);
  for (auto &w : weight) w = (unsigned)rand();
  std::vector<int> work(n), colour(n, -1);
  for (int v = 0; v < n; ++v) work[v] = v;

  int *d_row, *d_col, *d_in, *d_out, *d_work, *d_next, *d_len;
  unsigned *d_weight;
  CHECK(cudaMalloc(&d_row, sizeof(int) * (n + 1)));
  CHECK(cudaMalloc(&d_col, sizeof(int) * col.size()));
  CHECK(cudaMalloc(&d_weight, sizeof(unsigned) * n));
  CHECK(cudaMalloc(&d_in, sizeof(int) * n));
  CHECK(cudaMalloc(&d_out, sizeof(int) * n));
  CHECK(cudaMalloc(&d_work, sizeof(int) * n));
  CHECK(cudaMalloc(&d_next, sizeof(int) * n));
  CHECK(cudaMalloc(&d_len, sizeof(int)));
  CHECK(cudaMemcpy(d_row, row.data(), sizeof(int) * (n + 1), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_col, col.data(), sizeof(int) * col.size(), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_weight, weight.data(), sizeof(unsigned) * n, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_out, colour.data(), sizeof(int) * n, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_work, work.data(), sizeof(int) * n, cudaMemcpyHostToDevice));
  int nwork = n, rounds = 0;
  while (nwork > 0 && rounds < 1000) {
    CHECK(cudaMemcpy(d_in, d_out, sizeof(int) * n, cudaMemcpyDeviceToDevice));
    CHECK(cudaMemset(d_len, 0, sizeof(int)));
    const int threads = 256, blocks = (nwork + threads - 1) / threads;
    round_kernel<<<blocks, threads>>>(d_row, d_col, d_weight, d_in, d_out, d_work, nwork, d_next,
                                      d_len);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(&nwork, d_len, sizeof(int), cudaMemcpyDeviceToHost));
    std::swap(d_work, d_next);
    ++rounds;
  }
  CHECK(cudaMemcpy(colour.data(), d_out, sizeof(int) * n, cudaMemcpyDeviceToHost));
  int uncoloured = 0, clashes = 0, colours = 0;
  for (int u = 0; u < n; ++u) {
    uncoloured += colour[u] < 0;
    colours = colour[u] + 1 > colours ? colour[u] + 1 : colours;
    for (int e = row[u]; e < row[u + 1]; ++e) clashes += col[e] != u && colour[col[e]] == colour[u];
  }
  printf("colour: %d vertices in %d rounds, %d colours, %d uncoloured, %d clashing edge ends\n", n,
         rounds, colours, uncoloured, clashes);
  return uncoloured == 0 && clashes == 0 ? 0 : 1;
}
