// CUB comparator for examples/scan_bench.rs: the same five scans on the same
// inputs (the same stateless generator), with CUB's DeviceScan:
//   u32 sum          InclusiveSum
//   f32 max          InclusiveScan with a max functor
//   affine f32       InclusiveScan with the composition of x -> a*x + b maps
//   stats            InclusiveScan over {u32 count; f64 sum; f32 max}
//   segmented sum    InclusiveSumByKey, keys = segment numbers
//   scan and reduce by key   ExclusiveSumByKey then ReduceByKey (per-key
//                    sums and their count) on the same keys, timed together
// at 2^16, 2^20, 2^24 and 2^28 elements. Each scan is timed as the median of
// 25 calls bracketed by CUDA events (3 warm-ups, temporary storage allocated
// once, outside the timing), with a device-to-device copy of the input
// timed the same way.
//
// For each case and size it appends "case log2 ms copy_ms checksum" to
// <dir>/cub-results.txt (checksum: sum of out[i] * (2i + 1) over the u32
// outputs, 0 for the others) and writes the outputs at 1024 sampled
// indices to <dir>/cub-<case>-<log2>.bin, so that scan_bench can check its
// own outputs against CUB's.
//
// Build and run on the GPU machine (gpu-bin/run-all does):
//   nvcc -O3 -arch=sm_90 -o scan_bench_cub cub/scan_bench.cu && ./scan_bench_cub <dir>
#include <cub/cub.cuh>
#include <cuda/std/functional>
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

// The generator of scan_bench.rs: element i's 64 random bits for a case.
__host__ __device__ inline uint64_t mix(uint64_t seed, uint64_t i) {
  uint64_t z = seed + (i + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static const uint64_t kSeed = 0x5ca9b3e7ull;
static const uint32_t kMeanSegment = 1000;

// A 24-bit integer in [-2^23, 2^23), exact as a float.
__host__ __device__ inline float signed24(uint64_t bits) { return (float)((int)(bits & 0xffffff) - 8388608); }

struct Affine {
  float a, b;
};
struct Stats {
  unsigned count;
  double sum;
  float max;
};

struct MaxOp {
  __device__ float operator()(float x, float y) const { return fmaxf(x, y); }
};
// x then y: v -> y.a * (x.a * v + x.b) + y.b.
struct ComposeOp {
  __device__ Affine operator()(const Affine& x, const Affine& y) const { return Affine{x.a * y.a, y.a * x.b + y.b}; }
};
struct StatsOp {
  __device__ Stats operator()(const Stats& x, const Stats& y) const {
    return Stats{x.count + y.count, x.sum + y.sum, fmaxf(x.max, y.max)};
  }
};

__global__ void generate_u32(uint32_t* out, uint64_t seed, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    out[i] = (uint32_t)(mix(seed, i) >> 32);
}
__global__ void generate_f32(float* out, uint64_t seed, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    out[i] = signed24(mix(seed, i) >> 40);
}
// a and b uniform in [-1, 1): a stable recurrence, values stay near 1.
__global__ void generate_affine(Affine* out, uint64_t seed, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const uint64_t x = mix(seed, i);
    out[i] = Affine{signed24(x >> 40) * (1.0f / 8388608.0f), signed24(x) * (1.0f / 8388608.0f)};
  }
}
__global__ void generate_stats(Stats* out, uint64_t seed, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const uint64_t x = mix(seed, i);
    out[i] = Stats{(unsigned)(x & 3), (double)(x >> 40) * (1.0 / 16777216.0), signed24(x >> 8)};
  }
}
// Keys: 1 where a segment starts (element 0 and where the low word is a
// multiple of kMeanSegment); an inclusive sum turns them into segment numbers.
__global__ void generate_heads(uint32_t* values, uint32_t* heads, uint64_t seed, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const uint64_t x = mix(seed, i);
    values[i] = (uint32_t)(x >> 32);
    heads[i] = (i == 0 || (uint32_t)x % kMeanSegment == 0) ? 1u : 0u;
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

// The 1024 sampled indices of scan_bench.rs: k * (n - 1) / 1023.
static std::vector<size_t> sample_indices(size_t n) {
  std::vector<size_t> v;
  for (size_t k = 0; k < 1024; ++k) v.push_back(k * (n - 1) / 1023);
  return v;
}

static std::string dir;
static FILE* results;

template <class T>
static void report(const char* name, int log_n, float ms, float copy_ms, const T* d_out, size_t n, bool checksum) {
  uint64_t sum = 0;
  if (checksum) {
    std::vector<uint32_t> out(n);
    CHECK(cudaMemcpy(out.data(), d_out, n * 4, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; ++i) sum += (uint64_t)out[i] * (2 * i + 1);
  }
  const std::string path = dir + "/cub-" + name + "-" + std::to_string(log_n) + ".bin";
  FILE* f = std::fopen(path.c_str(), "wb");
  for (size_t i : sample_indices(n)) {
    T value;
    CHECK(cudaMemcpy(&value, d_out + i, sizeof(T), cudaMemcpyDeviceToHost));
    std::fwrite(&value, sizeof(T), 1, f);
  }
  std::fclose(f);
  std::fprintf(results, "%s %d %.6f %.6f 0x%016llx\n", name, log_n, ms, copy_ms, (unsigned long long)sum);
  std::fflush(results);
  std::printf("cub %-14s 2^%d: %9.4f ms, copy %9.4f ms, %5.1f%% of copy\n", name, log_n, ms, copy_ms, 100.0 * copy_ms / ms);
}

template <class T, class Generate, class Scan>
static void run(const char* name, int case_index, int log_n, Generate generate, Scan scan) {
  const size_t n = size_t(1) << log_n;
  T *d_in, *d_out, *d_copy;
  CHECK(cudaMalloc(&d_in, n * sizeof(T)));
  CHECK(cudaMalloc(&d_out, n * sizeof(T)));
  CHECK(cudaMalloc(&d_copy, n * sizeof(T)));
  generate<<<1024, 256>>>(d_in, kSeed + case_index, n);
  CHECK(cudaGetLastError());
  size_t temp_bytes = 0;
  CHECK(scan((void*)nullptr, temp_bytes, d_in, d_out, n));
  void* d_temp;
  CHECK(cudaMalloc(&d_temp, temp_bytes));
  const float copy_ms = median_ms([&] { cudaMemcpyAsync(d_copy, d_in, n * sizeof(T), cudaMemcpyDeviceToDevice); });
  const float ms = median_ms([&] { scan(d_temp, temp_bytes, d_in, d_out, n); });
  CHECK(cudaDeviceSynchronize());
  report(name, log_n, ms, copy_ms, d_out, n, sizeof(T) == 4 && std::string(name) == "u32-sum");
  CHECK(cudaFree(d_temp));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));
  CHECK(cudaFree(d_copy));
}

int main(int argc, char** argv) {
  dir = argc > 1 ? argv[1] : ".";
  results = std::fopen((dir + "/cub-results.txt").c_str(), "w");
  if (!results) {
    std::fprintf(stderr, "cannot write to %s\n", dir.c_str());
    return 1;
  }
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("cub scan_bench on %s (CUB %d.%d.%d)\n", prop.name, CUB_MAJOR_VERSION, CUB_MINOR_VERSION, CUB_SUBMINOR_VERSION);
  for (int log_n : {16, 20, 24, 28}) {
    run<uint32_t>("u32-sum", 0, log_n, generate_u32, [](void* t, size_t& b, const uint32_t* in, uint32_t* out, size_t n) {
      return cub::DeviceScan::InclusiveSum(t, b, in, out, (int)n);
    });
    run<float>("f32-max", 1, log_n, generate_f32, [](void* t, size_t& b, const float* in, float* out, size_t n) {
      return cub::DeviceScan::InclusiveScan(t, b, in, out, MaxOp{}, (int)n);
    });
    run<Affine>("affine", 2, log_n, generate_affine, [](void* t, size_t& b, const Affine* in, Affine* out, size_t n) {
      return cub::DeviceScan::InclusiveScan(t, b, in, out, ComposeOp{}, (int)n);
    });
    run<Stats>("stats", 3, log_n, generate_stats, [](void* t, size_t& b, const Stats* in, Stats* out, size_t n) {
      return cub::DeviceScan::InclusiveScan(t, b, in, out, StatsOp{}, (int)n);
    });
    // Segmented: keys are segment numbers (an inclusive sum of the heads).
    {
      const size_t n = size_t(1) << log_n;
      uint32_t *d_values, *d_keys, *d_out, *d_copy;
      CHECK(cudaMalloc(&d_values, n * 4));
      CHECK(cudaMalloc(&d_keys, n * 4));
      CHECK(cudaMalloc(&d_out, n * 4));
      CHECK(cudaMalloc(&d_copy, n * 4));
      generate_heads<<<1024, 256>>>(d_values, d_out, kSeed + 4, n);
      CHECK(cudaGetLastError());
      size_t temp_bytes = 0;
      CHECK(cub::DeviceScan::InclusiveSum(nullptr, temp_bytes, d_out, d_keys, (int)n));
      void* d_temp;
      CHECK(cudaMalloc(&d_temp, temp_bytes));
      CHECK(cub::DeviceScan::InclusiveSum(d_temp, temp_bytes, d_out, d_keys, (int)n));
      CHECK(cudaFree(d_temp));
      temp_bytes = 0;
      CHECK(cub::DeviceScan::InclusiveSumByKey(nullptr, temp_bytes, d_keys, d_values, d_out, (int)n));
      CHECK(cudaMalloc(&d_temp, temp_bytes));
      const float copy_ms = median_ms([&] { cudaMemcpyAsync(d_copy, d_values, n * 4, cudaMemcpyDeviceToDevice); });
      const float ms = median_ms([&] { cub::DeviceScan::InclusiveSumByKey(d_temp, temp_bytes, d_keys, d_values, d_out, (int)n); });
      CHECK(cudaDeviceSynchronize());
      report("segmented-sum", log_n, ms, copy_ms, d_out, n, true);
      CHECK(cudaFree(d_temp));
      // Per-segment totals beside an exclusive scan by key (scan_bench's
      // "keys excl. counted totals"): ExclusiveSumByKey, then ReduceByKey
      // (unique keys, sums and their count), timed together.
      uint32_t *d_unique, *d_sums;
      uint64_t* d_runs;
      CHECK(cudaMalloc(&d_unique, n * 4));
      CHECK(cudaMalloc(&d_sums, n * 4));
      CHECK(cudaMalloc(&d_runs, 8));
      size_t scan_bytes = 0, reduce_bytes = 0;
      CHECK(cub::DeviceScan::ExclusiveSumByKey(nullptr, scan_bytes, d_keys, d_values, d_out, (int)n));
      CHECK(cub::DeviceReduce::ReduceByKey(nullptr, reduce_bytes, d_keys, d_unique, d_values, d_sums, d_runs,
                                           cuda::std::plus<>{}, (int64_t)n));
      void *d_scan_temp, *d_reduce_temp;
      CHECK(cudaMalloc(&d_scan_temp, scan_bytes));
      CHECK(cudaMalloc(&d_reduce_temp, reduce_bytes));
      auto scan_by_key = [&] {
        cub::DeviceScan::ExclusiveSumByKey(d_scan_temp, scan_bytes, d_keys, d_values, d_out, (int)n);
      };
      auto reduce_by_key = [&] {
        cub::DeviceReduce::ReduceByKey(d_reduce_temp, reduce_bytes, d_keys, d_unique, d_values, d_sums, d_runs,
                                       cuda::std::plus<>{}, (int64_t)n);
      };
      const float scan_ms = median_ms(scan_by_key);
      const float reduce_ms = median_ms(reduce_by_key);
      const float both_ms = median_ms([&] {
        scan_by_key();
        reduce_by_key();
      });
      CHECK(cudaDeviceSynchronize());
      uint64_t runs = 0;
      CHECK(cudaMemcpy(&runs, d_runs, 8, cudaMemcpyDeviceToHost));
      std::fprintf(results, "scan-and-reduce-by-key %d %.6f %.6f 0x%016llx\n", log_n, both_ms, copy_ms,
                   (unsigned long long)runs);
      std::fflush(results);
      std::printf("cub exclusive-sum-by-key 2^%d: %9.4f ms; reduce-by-key %9.4f ms (%llu runs); both %9.4f ms, %5.1f%% of copy\n",
                  log_n, scan_ms, reduce_ms, (unsigned long long)runs, both_ms, 100.0 * copy_ms / both_ms);
      CHECK(cudaFree(d_scan_temp));
      CHECK(cudaFree(d_reduce_temp));
      CHECK(cudaFree(d_unique));
      CHECK(cudaFree(d_sums));
      CHECK(cudaFree(d_runs));
      CHECK(cudaFree(d_values));
      CHECK(cudaFree(d_keys));
      CHECK(cudaFree(d_out));
      CHECK(cudaFree(d_copy));
    }
  }
  std::fclose(results);
  return 0;
}
