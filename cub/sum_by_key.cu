// CUB comparator for examples/segmented_bench.rs: cub::DeviceScan::
// InclusiveSumByKey over the same u32 values and segments (keys = segment
// numbers), from the same stateless generator. Prints the median of 25
// timed calls (CUDA events, 3 warm-ups, temp storage allocated once), the
// copy time measured in the same run, and a checksum of the output to
// compare with gpu-scan's.
//
// Build and run on the GPU machine (gpu-bin/run-all does):
//   nvcc -O3 -arch=sm_90 -o sum_by_key cub/sum_by_key.cu && ./sum_by_key
#include <cub/cub.cuh>
#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <vector>

#define CHECK(x)                                                                   \
  do {                                                                             \
    cudaError_t e = (x);                                                           \
    if (e != cudaSuccess) {                                                        \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); \
      return 1;                                                                    \
    }                                                                              \
  } while (0)

// The generator of segmented_bench.rs: element i's 64 random bits.
static uint64_t mix(uint64_t seed, uint64_t i) {
  uint64_t z = seed + (i + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static const uint64_t kSeed = 0x5e65ca7ull;
static const uint32_t kMeanSegment = 1000;

template <class F>
static float median_ms(F f) {
  cudaEvent_t start, end;
  cudaEventCreate(&start);
  cudaEventCreate(&end);
  for (int i = 0; i < 3; ++i) f();
  std::vector<float> samples;
  for (int i = 0; i < 25; ++i) {
    cudaEventRecord(start);
    f();
    cudaEventRecord(end);
    cudaEventSynchronize(end);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, end);
    samples.push_back(ms);
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("cub sum_by_key on %s\n", prop.name);
  for (int log_n : {24, 28}) {
    const size_t n = size_t(1) << log_n;
    std::vector<uint32_t> values(n), keys(n);
    uint32_t key = 0;
    for (size_t i = 0; i < n; ++i) {
      const uint64_t x = mix(kSeed, i);
      values[i] = uint32_t(x >> 32);
      if (i > 0 && uint32_t(x) % kMeanSegment == 0) ++key;
      keys[i] = key;
    }
    uint32_t *d_values, *d_keys, *d_out;
    CHECK(cudaMalloc(&d_values, n * 4));
    CHECK(cudaMalloc(&d_keys, n * 4));
    CHECK(cudaMalloc(&d_out, n * 4));
    CHECK(cudaMemcpy(d_values, values.data(), n * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_keys, keys.data(), n * 4, cudaMemcpyHostToDevice));
    size_t temp_bytes = 0;
    CHECK(cub::DeviceScan::InclusiveSumByKey(nullptr, temp_bytes, d_keys, d_values, d_out, (int)n));
    void* d_temp;
    CHECK(cudaMalloc(&d_temp, temp_bytes));
    const float copy = median_ms([&] { cudaMemcpyAsync(d_out, d_values, n * 4, cudaMemcpyDeviceToDevice); });
    const float ms = median_ms([&] { cub::DeviceScan::InclusiveSumByKey(d_temp, temp_bytes, d_keys, d_values, d_out, (int)n); });
    CHECK(cudaGetLastError());
    std::vector<uint32_t> out(n);
    CHECK(cudaMemcpy(out.data(), d_out, n * 4, cudaMemcpyDeviceToHost));
    uint64_t sum = 0;
    for (size_t i = 0; i < n; ++i) sum += uint64_t(out[i]) * (2 * i + 1);
    const double copy_gbs = 8.0 * n / (copy * 1e6);
    const double gbs = 12.0 * n / (ms * 1e6);  // key + value in, value out
    std::printf("%-44s %6s %9.4f %8.0f %6.1f%% %8d\n", "cub InclusiveSumByKey (u32 keys)", log_n == 24 ? "2^24" : "2^28", ms, gbs,
                100.0 * gbs / copy_gbs, 12);
    std::printf("copy 2^%d %.4f ms\n", log_n, copy);
    std::printf("cub checksum 2^%d = 0x%016llx\n", log_n, (unsigned long long)sum);
    cudaFree(d_values);
    cudaFree(d_keys);
    cudaFree(d_out);
    cudaFree(d_temp);
  }
  return 0;
}
