// CUB comparator for scan_bench's wide-element sweep (SCAN_BENCH_WIDE=1,
// examples/bench/wide.rs): inclusive scans of the composition of affine maps
// of a vector, v -> a*v + b with b a vector of K lanes and a one lane, in
// wrapping integer arithmetic ((a, b) then (c, d) is (a*c, c*b + d)), for
// elements of 4 to 256 bytes, on the same inputs (the same stateless
// generator), with CUB's DeviceScan::InclusiveScan. Each size runs at 2^24
// elements and at the largest power of two up to 2^28 whose buffers take at
// most 8 GiB each. Timing and output as cub/scan_bench.cu: the median of 25
// calls bracketed by CUDA events (3 warm-ups, temporary storage allocated
// once), a device-to-device copy timed the same way; "case log2 ms copy_ms
// 0x0" appended to <dir>/cub-results.txt and the outputs at the 1024 sampled
// indices written to <dir>/cub-<case>-<log2>.bin.
//
//   nvcc -O3 -arch=sm_90 -o wide_bench_cub cub/wide_bench.cu && ./wide_bench_cub <dir>
#include <cub/cub.cuh>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#define CHECK(x)                                                                        \
  do {                                                                                  \
    cudaError_t e = (x);                                                                \
    if (e != cudaSuccess) {                                                             \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e));   \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

__host__ __device__ inline uint64_t mix(uint64_t seed, uint64_t i) {
  uint64_t z = seed + (i + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static const uint64_t kSeed = 0x5ca9b3e7ull;

template <class Lane, int K>
struct VecAffine {
  Lane a;
  Lane b[K];
};

// x then y.
template <class Lane, int K>
struct ComposeVec {
  __device__ VecAffine<Lane, K> operator()(const VecAffine<Lane, K>& x, const VecAffine<Lane, K>& y) const {
    VecAffine<Lane, K> r;
    r.a = (Lane)((uint32_t)x.a * y.a);  // in uint32_t: u16 products overflow int
#pragma unroll
    for (int j = 0; j < K; ++j) r.b[j] = (Lane)((uint32_t)y.a * x.b[j] + y.b[j]);
    return r;
  }
};

// Lane j of b from element i's random bits (as bench/wide.rs); an odd a.
template <class Lane, int K>
__global__ void generate(VecAffine<Lane, K>* out, uint64_t seed, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const uint64_t x = mix(seed, i);
    VecAffine<Lane, K> v;
    v.a = (Lane)((Lane)x | 1);
    for (int j = 0; j < K; ++j) v.b[j] = (Lane)((uint32_t)(x >> (j % 32)) ^ (uint32_t)j * 0x9e3779b9u);
    out[i] = v;
  }
}

template <class F>
static float median_ms(F f) {
  cudaEvent_t start, end;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&end));
  for (int i = 0; i < 3; ++i) f();
  std::vector<float> samples;
  for (int i = 0; i < 25; ++i) {
    CHECK(cudaEventRecord(start));
    f();
    CHECK(cudaEventRecord(end));
    CHECK(cudaEventSynchronize(end));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, end));
    samples.push_back(ms);
  }
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(end));
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

static std::string dir;
static FILE* results;

template <class Lane, int K>
static void run(int case_index, int log_n) {
  using T = VecAffine<Lane, K>;
  const std::string name = "wide-" + std::to_string(sizeof(T));
  const size_t n = size_t(1) << log_n;
  T *d_in, *d_out, *d_copy;
  CHECK(cudaMalloc(&d_in, n * sizeof(T)));
  CHECK(cudaMalloc(&d_out, n * sizeof(T)));
  CHECK(cudaMalloc(&d_copy, n * sizeof(T)));
  generate<Lane, K><<<1024, 256>>>(d_in, kSeed + case_index, n);
  CHECK(cudaGetLastError());
  size_t temp_bytes = 0;
  CHECK(cub::DeviceScan::InclusiveScan(nullptr, temp_bytes, d_in, d_out, ComposeVec<Lane, K>{}, (int64_t)n));
  void* d_temp;
  CHECK(cudaMalloc(&d_temp, temp_bytes));
  const float copy_ms = median_ms([&] { cudaMemcpyAsync(d_copy, d_in, n * sizeof(T), cudaMemcpyDeviceToDevice); });
  const float ms = median_ms([&] {
    cub::DeviceScan::InclusiveScan(d_temp, temp_bytes, d_in, d_out, ComposeVec<Lane, K>{}, (int64_t)n);
  });
  CHECK(cudaDeviceSynchronize());
  const std::string path = dir + "/cub-" + name + "-" + std::to_string(log_n) + ".bin";
  FILE* f = std::fopen(path.c_str(), "wb");
  for (size_t k = 0; k < 1024; ++k) {
    T value;
    CHECK(cudaMemcpy(&value, d_out + k * (n - 1) / 1023, sizeof(T), cudaMemcpyDeviceToHost));
    std::fwrite(&value, sizeof(T), 1, f);
  }
  std::fclose(f);
  std::fprintf(results, "%s %d %.6f %.6f 0x0\n", name.c_str(), log_n, ms, copy_ms);
  std::fflush(results);
  std::printf("cub %-9s 2^%d: %9.4f ms, copy %9.4f ms, %5.1f%% of copy\n", name.c_str(), log_n, ms, copy_ms,
              100.0 * copy_ms / ms);
  CHECK(cudaFree(d_temp));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));
  CHECK(cudaFree(d_copy));
}

// 2^24 and the largest power of two up to 2^28 whose buffers fit 8 GiB.
template <class Lane, int K>
static void sweep(int case_index) {
  int largest = 28;
  while ((sizeof(VecAffine<Lane, K>) << largest) > (size_t(8) << 30)) --largest;
  run<Lane, K>(case_index, std::min(24, largest));
  if (largest != std::min(24, largest)) run<Lane, K>(case_index, largest);
}

int main(int argc, char** argv) {
  dir = argc > 1 ? argv[1] : ".";
  results = std::fopen((dir + "/cub-results.txt").c_str(), "a");
  if (!results) {
    std::fprintf(stderr, "cannot write to %s\n", dir.c_str());
    return 1;
  }
  // The case indices are bench/wide.rs's generator offsets.
  sweep<uint16_t, 1>(104);
  sweep<uint32_t, 1>(108);
  sweep<uint32_t, 2>(112);
  sweep<uint32_t, 3>(116);
  sweep<uint32_t, 5>(124);
  sweep<uint32_t, 7>(132);
  sweep<uint32_t, 11>(148);
  sweep<uint32_t, 15>(164);
  sweep<uint32_t, 17>(172);
  sweep<uint32_t, 23>(196);
  sweep<uint32_t, 31>(228);
  sweep<uint32_t, 63>(356);
  std::fclose(results);
  return 0;
}
