// CUB comparator for examples/stages_bench.rs: scans through a load and a
// store stage, on the same inputs (the same stateless generator), with
// CUB's DeviceScan over Thrust's transform iterators (the stage applied as
// CUB loads and stores each element):
//   widen         u8 -> u32, InclusiveSum (5 bytes moved per element)
//   sum           u32 InclusiveSum on the widened input (8 bytes: what a
//                 user without a load stage runs after a widening pass)
//   affine_state  u32 x -> the map {a: x | 1, b: x >> 3} over wrapping u32,
//                 InclusiveScan by composition, b stored (8 bytes)
//   affine        the same maps built first, scanned and stored whole
//                 (16 bytes)
// at 2^24 and 2^28 elements. Each scan is timed as the median of 25 calls
// bracketed by CUDA events (3 warm-ups, temporary storage allocated once),
// with a device-to-device copy of n u32 timed the same way.
//
// For each case and size it appends "case log2 ms copy_ms checksum" to
// <dir>/cub-stages.txt (checksum: the sum of out[i] * (2i + 1) over the u32
// outputs, wrapping; of out[i].b for the affine maps).
//
//   nvcc -O3 -arch=sm_90 -o stages_cub cub/stages_bench.cu && ./stages_cub <dir>
#include <cub/cub.cuh>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/transform_output_iterator.h>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>
#include <algorithm>

#define CHECK(x)                                                                      \
  do {                                                                                \
    cudaError_t e = (x);                                                              \
    if (e != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

// examples/common/splitmix.rs: splitmix64 of an index.
__host__ __device__ inline uint64_t bits(uint64_t i) {
  uint64_t z = i + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

struct AffineU32 {
  uint32_t a, b;
};
struct Widen {
  __host__ __device__ uint32_t operator()(uint8_t x) const { return x; }
};
struct ToAffine {
  __host__ __device__ AffineU32 operator()(uint32_t x) const { return AffineU32{x | 1u, x >> 3}; }
};
struct TakeB {
  __host__ __device__ uint32_t operator()(const AffineU32& m) const { return m.b; }
};
// x then y: v -> y.a * (x.a * v + x.b) + y.b.
struct Compose {
  __host__ __device__ AffineU32 operator()(const AffineU32& x, const AffineU32& y) const {
    return AffineU32{x.a * y.a, y.a * x.b + y.b};
  }
};

// The inputs of stages_bench.rs: bytes bits(i) >> 56, words bits(i) >> 32.
__global__ void generate(uint8_t* bytes, uint32_t* words, uint32_t* widened, AffineU32* maps, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const uint64_t x = bits(i);
    bytes[i] = (uint8_t)(x >> 56);
    widened[i] = (uint32_t)(x >> 56);
    words[i] = (uint32_t)(x >> 32);
    maps[i] = ToAffine{}((uint32_t)(x >> 32));
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
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

static uint64_t checksum(const std::vector<uint32_t>& v) {
  uint64_t s = 0;
  for (size_t i = 0; i < v.size(); ++i) s += (uint64_t)v[i] * (2 * i + 1);
  return s;
}

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : ".";
  FILE* results = std::fopen((dir + "/cub-stages.txt").c_str(), "w");
  if (!results) return 1;
  for (int log2 : {24, 28}) {
    const size_t n = (size_t)1 << log2;
    uint8_t* bytes;
    uint32_t *words, *widened, *out, *copy;
    AffineU32 *maps, *maps_out;
    CHECK(cudaMalloc(&bytes, n));
    CHECK(cudaMalloc(&words, n * 4));
    CHECK(cudaMalloc(&widened, n * 4));
    CHECK(cudaMalloc(&out, n * 4));
    CHECK(cudaMalloc(&copy, n * 4));
    CHECK(cudaMalloc(&maps, n * 8));
    CHECK(cudaMalloc(&maps_out, n * 8));
    generate<<<1024, 256>>>(bytes, words, widened, maps, n);
    CHECK(cudaDeviceSynchronize());
    const float copy_ms = median_ms([&] { CHECK(cudaMemcpyAsync(copy, words, n * 4, cudaMemcpyDeviceToDevice)); });
    auto widen_in = thrust::make_transform_iterator(bytes, Widen{});
    auto affine_in = thrust::make_transform_iterator(words, ToAffine{});
    auto state_out = thrust::make_transform_output_iterator(out, TakeB{});
    size_t temp_bytes = 0, need = 0;
    CHECK(cub::DeviceScan::InclusiveSum(nullptr, need, widen_in, out, n));
    temp_bytes = std::max(temp_bytes, need);
    CHECK(cub::DeviceScan::InclusiveSum(nullptr, need, widened, out, n));
    temp_bytes = std::max(temp_bytes, need);
    CHECK(cub::DeviceScan::InclusiveScan(nullptr, need, affine_in, state_out, Compose{}, n));
    temp_bytes = std::max(temp_bytes, need);
    CHECK(cub::DeviceScan::InclusiveScan(nullptr, need, maps, maps_out, Compose{}, n));
    temp_bytes = std::max(temp_bytes, need);
    void* temp;
    CHECK(cudaMalloc(&temp, temp_bytes));
    std::vector<uint32_t> host(n);
    auto report = [&](const char* name, float ms, uint64_t sum) {
      std::fprintf(results, "%s %d %.6f %.6f %llu\n", name, log2, ms, copy_ms, (unsigned long long)sum);
      std::printf("%-13s 2^%d  %8.4f ms  copy %8.4f ms\n", name, log2, ms, copy_ms);
    };
    auto words_sum = [&] {
      CHECK(cudaMemcpy(host.data(), out, n * 4, cudaMemcpyDeviceToHost));
      return checksum(host);
    };
    float ms = median_ms([&] { size_t t = temp_bytes; CHECK(cub::DeviceScan::InclusiveSum(temp, t, widen_in, out, n)); });
    report("widen", ms, words_sum());
    ms = median_ms([&] { size_t t = temp_bytes; CHECK(cub::DeviceScan::InclusiveSum(temp, t, widened, out, n)); });
    report("sum", ms, words_sum());
    ms = median_ms([&] { size_t t = temp_bytes; CHECK(cub::DeviceScan::InclusiveScan(temp, t, affine_in, state_out, Compose{}, n)); });
    report("affine_state", ms, words_sum());
    ms = median_ms([&] { size_t t = temp_bytes; CHECK(cub::DeviceScan::InclusiveScan(temp, t, maps, maps_out, Compose{}, n)); });
    {
      std::vector<AffineU32> m(n);
      CHECK(cudaMemcpy(m.data(), maps_out, n * 8, cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < n; ++i) host[i] = m[i].b;
    }
    report("affine", ms, checksum(host));
    CHECK(cudaFree(temp));
    for (void* p : {(void*)bytes, (void*)words, (void*)widened, (void*)out, (void*)copy, (void*)maps, (void*)maps_out}) CHECK(cudaFree(p));
  }
  std::fclose(results);
  return 0;
}
