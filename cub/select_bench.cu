// CUB comparator for examples/select_bench.rs: the same compactions on the
// same inputs (the same stateless generator), with CUB's
//   select-if     DeviceSelect::If, u32, keep the even ones (about half), 2^28
//   flagged       DeviceSelect::Flagged, u32, flag = bit 32 of the hash, 2^28
//   partition     DevicePartition::If, u32, the even ones first, 2^28
//   three         DevicePartition::If three ways, u32, x % 3 == 0 first,
//                 then x % 3 == 1, then the rest, to three outputs, 2^28
//   unique        DeviceSelect::Unique, u32 runs of mean length 8, 2^28
//   rle           DeviceRunLengthEncode::Encode over the same runs (64-bit
//                 lengths), 2^28
//   ntr           DeviceRunLengthEncode::NonTrivialRuns over the same runs
//                 (64-bit offsets and lengths), 2^28
//   rbk           DeviceReduce::ReduceByKey, u32 sums by u32 keys in runs of
//                 mean length 1000, 2^28
//   struct        DeviceSelect::If over a 24-byte struct {u32 count; f64 sum;
//                 f32 max}, keep an even count, 2^26
// Each is timed as the median of 25 calls bracketed by CUDA events (3
// warm-ups, temporary storage allocated once, outside the timing), with a
// device-to-device copy of the input timed the same way.
//
// Appends "case log2 ms copy_ms count" to <dir>/cub-select.txt.
//
// Build and run on the GPU machine:
//   nvcc -O3 -arch=sm_90 -o select_cub cub/select_bench.cu && ./select_cub <dir>
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

// splitmix64 of i: element i's 64 random bits (select_bench.rs: `bits`).
static uint64_t bits(uint64_t i) {
  uint64_t z = i + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

struct Stats {
  uint32_t count;
  double sum;
  float max;
};
static_assert(sizeof(Stats) == 24, "the Rust struct's layout");

struct Even {
  __device__ __forceinline__ bool operator()(const uint32_t x) const { return x % 2 == 0; }
};
struct Third {
  __device__ __forceinline__ bool operator()(const uint32_t x) const { return x % 3 == 0; }
};
struct OneMore {
  __device__ __forceinline__ bool operator()(const uint32_t x) const { return x % 3 == 1; }
};
struct EvenCount {
  __device__ __forceinline__ bool operator()(const Stats& s) const { return s.count % 2 == 0; }
};

template <class F>
static float median_ms(F f) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) f();
  std::vector<float> times;
  for (int i = 0; i < 25; ++i) {
    CHECK(cudaEventRecord(a));
    f();
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  return times[times.size() / 2];
}

static FILE* results;

template <class T>
static void report(const char* name, int log_n, float ms, const T* d_in, size_t n, const long long* d_count) {
  T* d_copy;
  CHECK(cudaMalloc(&d_copy, n * sizeof(T)));
  const float copy_ms = median_ms([&] { CHECK(cudaMemcpyAsync(d_copy, d_in, n * sizeof(T), cudaMemcpyDeviceToDevice)); });
  CHECK(cudaFree(d_copy));
  long long count;
  CHECK(cudaMemcpy(&count, d_count, sizeof count, cudaMemcpyDeviceToHost));
  std::fprintf(results, "%s %d %.5f %.5f %lld\n", name, log_n, ms, copy_ms, count);
  std::printf("cub %-10s 2^%d %8.4f ms  copy %8.4f ms  count %lld\n", name, log_n, ms, copy_ms, count);
}

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : ".";
  results = std::fopen((dir + "/cub-select.txt").c_str(), "a");
  if (!results) return 1;
  std::printf("CUB %d.%d.%d\n", CUB_MAJOR_VERSION, CUB_MINOR_VERSION, CUB_SUBMINOR_VERSION);
  long long* d_count;
  CHECK(cudaMalloc(&d_count, sizeof(long long)));
  {
    const int log_n = 28;
    const size_t n = size_t(1) << log_n;
    std::vector<uint32_t> words(n), runs(n), segments(n);
    std::vector<unsigned char> flags(n);
    uint32_t key = 0, segment = 0;
    for (size_t i = 0; i < n; ++i) {
      const uint64_t r = bits(i);
      words[i] = (uint32_t)r;
      flags[i] = (unsigned char)((r >> 32) & 1);
      if (i > 0 && (r >> 40) % 8 == 0) key += 1 + (uint32_t)((r >> 48) % 3);
      runs[i] = key;
      if (i > 0 && (r >> 36) % 1000 == 0) segment += 1;
      segments[i] = segment;
    }
    uint32_t *d_in, *d_runs, *d_out;
    unsigned char* d_flags;
    CHECK(cudaMalloc(&d_in, n * 4));
    CHECK(cudaMalloc(&d_runs, n * 4));
    CHECK(cudaMalloc(&d_out, n * 4));
    CHECK(cudaMalloc(&d_flags, n));
    CHECK(cudaMemcpy(d_in, words.data(), n * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_runs, runs.data(), n * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_flags, flags.data(), n, cudaMemcpyHostToDevice));
    size_t bytes = 0, most = 0;
    CHECK(cub::DeviceSelect::If(nullptr, bytes, d_in, d_out, d_count, (int64_t)n, Even()));
    most = std::max(most, bytes);
    CHECK(cub::DeviceSelect::Flagged(nullptr, bytes, d_in, d_flags, d_out, d_count, (int64_t)n));
    most = std::max(most, bytes);
    CHECK(cub::DevicePartition::If(nullptr, bytes, d_in, d_out, d_count, (int64_t)n, Even()));
    most = std::max(most, bytes);
    CHECK(cub::DeviceSelect::Unique(nullptr, bytes, d_runs, d_out, d_count, (int64_t)n));
    most = std::max(most, bytes);
    long long* d_lengths;
    CHECK(cudaMalloc(&d_lengths, n * sizeof(long long)));
    CHECK(cub::DeviceRunLengthEncode::Encode(nullptr, bytes, d_runs, d_out, d_lengths, d_count, (int64_t)n));
    most = std::max(most, bytes);
    long long* d_offsets;
    CHECK(cudaMalloc(&d_offsets, n * sizeof(long long)));
    CHECK(cub::DeviceRunLengthEncode::NonTrivialRuns(nullptr, bytes, d_runs, d_offsets, d_lengths, d_count, (int64_t)n));
    most = std::max(most, bytes);
    void* temp;
    CHECK(cudaMalloc(&temp, most));
    float ms;
    ms = median_ms([&] { size_t b = most; CHECK(cub::DeviceSelect::If(temp, b, d_in, d_out, d_count, (int64_t)n, Even())); });
    report("select-if", log_n, ms, d_in, n, d_count);
    ms = median_ms([&] { size_t b = most; CHECK(cub::DeviceSelect::Flagged(temp, b, d_in, d_flags, d_out, d_count, (int64_t)n)); });
    report("flagged", log_n, ms, d_in, n, d_count);
    ms = median_ms([&] { size_t b = most; CHECK(cub::DevicePartition::If(temp, b, d_in, d_out, d_count, (int64_t)n, Even())); });
    report("partition", log_n, ms, d_in, n, d_count);
    {
      // Three outputs of n each (the parts' sizes are not known before);
      // the first part's count is reported.
      uint32_t *d_second, *d_rest;
      long long* d_two;
      CHECK(cudaMalloc(&d_second, n * 4));
      CHECK(cudaMalloc(&d_rest, n * 4));
      CHECK(cudaMalloc(&d_two, 2 * sizeof(long long)));
      size_t three_bytes = 0;
      CHECK(cub::DevicePartition::If(nullptr, three_bytes, d_in, d_out, d_second, d_rest, d_two, (int64_t)n, Third(), OneMore()));
      void* three_temp;
      CHECK(cudaMalloc(&three_temp, three_bytes));
      ms = median_ms([&] { size_t b = three_bytes; CHECK(cub::DevicePartition::If(three_temp, b, d_in, d_out, d_second, d_rest, d_two, (int64_t)n, Third(), OneMore())); });
      report("three", log_n, ms, d_in, n, d_two);
      CHECK(cudaFree(three_temp));
      CHECK(cudaFree(d_second));
      CHECK(cudaFree(d_rest));
      CHECK(cudaFree(d_two));
    }
    ms = median_ms([&] { size_t b = most; CHECK(cub::DeviceSelect::Unique(temp, b, d_runs, d_out, d_count, (int64_t)n)); });
    report("unique", log_n, ms, d_runs, n, d_count);
    ms = median_ms([&] { size_t b = most; CHECK(cub::DeviceRunLengthEncode::Encode(temp, b, d_runs, d_out, d_lengths, d_count, (int64_t)n)); });
    report("rle", log_n, ms, d_runs, n, d_count);
    ms = median_ms([&] { size_t b = most; CHECK(cub::DeviceRunLengthEncode::NonTrivialRuns(temp, b, d_runs, d_offsets, d_lengths, d_count, (int64_t)n)); });
    report("ntr", log_n, ms, d_runs, n, d_count);
    CHECK(cudaFree(d_offsets));
    CHECK(cudaFree(d_lengths));
    uint32_t *d_segments, *d_keys_out, *d_sums;
    CHECK(cudaMalloc(&d_segments, n * 4));
    CHECK(cudaMalloc(&d_keys_out, n * 4));
    CHECK(cudaMalloc(&d_sums, n * 4));
    CHECK(cudaMemcpy(d_segments, segments.data(), n * 4, cudaMemcpyHostToDevice));
    size_t rbk_bytes = 0;
    CHECK(cub::DeviceReduce::ReduceByKey(nullptr, rbk_bytes, d_segments, d_keys_out, d_in, d_sums, d_count, cuda::std::plus<>{}, (int64_t)n));
    void* rbk_temp;
    CHECK(cudaMalloc(&rbk_temp, rbk_bytes));
    ms = median_ms([&] { size_t b = rbk_bytes; CHECK(cub::DeviceReduce::ReduceByKey(rbk_temp, b, d_segments, d_keys_out, d_in, d_sums, d_count, cuda::std::plus<>{}, (int64_t)n)); });
    report("rbk", log_n, ms, d_in, n, d_count);
    CHECK(cudaFree(rbk_temp));
    CHECK(cudaFree(d_segments));
    CHECK(cudaFree(d_keys_out));
    CHECK(cudaFree(d_sums));
    CHECK(cudaFree(temp));
    CHECK(cudaFree(d_in));
    CHECK(cudaFree(d_runs));
    CHECK(cudaFree(d_out));
    CHECK(cudaFree(d_flags));
  }
  {
    const int log_n = 26;
    const size_t n = size_t(1) << log_n;
    std::vector<Stats> stats(n);
    for (size_t i = 0; i < n; ++i) {
      const uint64_t r = bits(i);
      stats[i] = Stats{(uint32_t)(r & 0xff), (double)(r >> 11) * 0x1.0p-53, (float)((r >> 40) & 0xffff)};
    }
    Stats *d_in, *d_out;
    CHECK(cudaMalloc(&d_in, n * sizeof(Stats)));
    CHECK(cudaMalloc(&d_out, n * sizeof(Stats)));
    CHECK(cudaMemcpy(d_in, stats.data(), n * sizeof(Stats), cudaMemcpyHostToDevice));
    size_t bytes = 0;
    CHECK(cub::DeviceSelect::If(nullptr, bytes, d_in, d_out, d_count, (int64_t)n, EvenCount()));
    void* temp;
    CHECK(cudaMalloc(&temp, bytes));
    const float ms = median_ms([&] { size_t b = bytes; CHECK(cub::DeviceSelect::If(temp, b, d_in, d_out, d_count, (int64_t)n, EvenCount())); });
    report("struct", log_n, ms, d_in, n, d_count);
    CHECK(cudaFree(temp));
    CHECK(cudaFree(d_in));
    CHECK(cudaFree(d_out));
  }
  std::fclose(results);
  return 0;
}
